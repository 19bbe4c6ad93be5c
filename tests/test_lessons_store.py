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


def test_new_text_without_a_vector_is_embedded_again_by_the_next_sleep(store):
    from remem.engine import sleep
    from remem.engine.embed import get_embedder

    made = lessons.add_lesson(store, "Run tests with pytest -x", "correction", sources=["e1"])
    sleep.run_sleep_collect(store, passes=["embed"])
    before = store.one("SELECT embedding FROM lessons WHERE id = ?", (made["id"],))["embedding"]
    lessons.update_lesson(store, made["id"], text="Never force-push to main")
    sleep.run_sleep_collect(store, passes=["embed"])
    row = store.one("SELECT space, embedding FROM lessons WHERE id = ?", (made["id"],))
    assert row["space"] == get_embedder().space and row["embedding"] != before


def test_an_ambiguous_or_wildcard_id_prefix_picks_no_lesson(store, cli):
    import pytest

    from remem.errors import NotFound, RememError

    lessons.add_lesson(store, "Use uv not pip.", "correction", lesson_id="abcd11112222")
    lessons.add_lesson(store, "Never force-push to main.", "correction", lesson_id="abcd33334444")
    with pytest.raises(RememError, match="ambiguous id 'abcd': matches abcd11112222 and abcd33334444"):
        lessons.get_lesson(store, "abcd")
    assert lessons.get_lesson(store, "abcd3")["id"] == "abcd33334444"
    for wildcard in ("abc%", "ab_d1"):  # LIKE patterns are no prefixes
        with pytest.raises(NotFound):
            lessons.get_lesson(store, wildcard)
    vetoed = cli("lessons", "veto", "abcd")
    assert vetoed.exit_code == 1 and "give more characters" in vetoed.output
    assert store.scalar("SELECT count(*) FROM lessons WHERE status = 'active'") == 2


def test_an_id_prefix_too_short_says_how_long_it_must_be(store):
    import pytest

    from remem.engine.lessons import add_lesson, get_lesson
    from remem.errors import NotFound

    made = add_lesson(store, "use uv, not pip", "correction", sources=["c1"])
    with pytest.raises(NotFound, match="at least 4 characters"):
        get_lesson(store, made["id"][:2])
    with pytest.raises(NotFound, match="at least 4 characters"):
        store.episode("ab")

