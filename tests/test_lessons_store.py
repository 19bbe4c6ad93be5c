from remem.engine import lessons


def test_lesson_hash_ignores_case_space_and_trailing_punctuation():
    a = lessons.lesson_hash("Use uv,  not pip.", "correction")
    assert a == lessons.lesson_hash("use uv, not pip", "correction")
    assert a != lessons.lesson_hash("use uv, not pip", "error")


def test_add_get_update_and_alias(store):
    made = lessons.add_lesson(store, "Run tests with pytest -x", "correction", sources=["e1", "e2"])
    assert made["seen"] == 2 and made["sources"] == ["e1", "e2"] and made["status"] == "active"
    changed = lessons.update_lesson(store, made["id"], text="Run the tests with pytest -x")
    assert changed["hash"] == lessons.lesson_hash("Run the tests with pytest -x", "correction")
    hits = store.scalar("SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH 'pytest'")
    assert hits == 1
    with store.write() as conn:
        conn.execute("INSERT INTO aliases (old, new, at) VALUES ('oldid', ?, 'x')", (made["id"],))
    assert lessons.get_lesson(store, "oldid")["id"] == made["id"]
    assert [l["id"] for l in lessons.list_lessons(store)] == [made["id"]]
    lessons.set_status(store, made["id"], "vetoed")
    assert lessons.list_lessons(store) == []
