"""An edit of a lesson's words reaches its open prediction: the prediction quotes the lesson, and
the morning report's confirmed and failed lists print the prediction's words. A resolved
prediction keeps the words it was resolved with."""

from __future__ import annotations

from remem import paths
from remem.engine import clock, predictions, sleep
from remem.engine.embed import get_embedder, to_blob
from remem.engine.lessons import add_lesson, edit_text
from tests.test_sleep import _at

OLD, NEW = "Use uv, not pip.", "Use uv for every install, never pip."


def test_an_edit_rewords_the_open_prediction_and_the_report_prints_the_new_words(store):
    with clock.frozen(_at(48)):
        lesson = add_lesson(store, OLD, "correction", sources=["c1"])
        sleep.run_sleep_collect(store, passes=["predict"])
        first = store.one("SELECT * FROM predictions")
        assert first["text"] == f"Within 14 days the person will correct this again: {OLD}"
        clock.advance(days=14)
        sleep.run_sleep_collect(store, passes=["embed", "verify", "predict"])  # the first fails; a second is made
        second = store.one("SELECT * FROM predictions WHERE resolved IS NULL")
        assert second["text"] == first["text"] and second["embedding"] is not None

        edit_text(store, lesson["id"], NEW)
        reworded = store.one("SELECT * FROM predictions WHERE id = ?", (second["id"],))
        assert reworded["text"] == f"Within 14 days the person will correct this again: {NEW}"
        assert reworded["embedding"] is None and reworded["space"] is None  # made anew by the next sleep
        resolved = store.one("SELECT * FROM predictions WHERE id = ?", (first["id"],))
        assert resolved["text"] == first["text"] and resolved["outcome"] == "failed"  # history stays

        sleep.run_sleep_collect(store, passes=["embed"])
        embedded = store.one("SELECT * FROM predictions WHERE id = ?", (second["id"],))
        emb = get_embedder()
        assert embedded["space"] == emb.space and embedded["embedding"] == to_blob(emb.encode([embedded["text"]])[0])

        clock.advance(days=14)
        summary = sleep.run_sleep_collect(store)
    assert summary["events"]["failed"] == [second["id"]]
    report = paths.morning_path().read_text()
    failed = report.split("Predictions failed", 1)[1].split("\n## ", 1)[0]
    assert NEW in failed and OLD not in failed


def test_a_prediction_keeps_the_days_it_was_made_with(store):
    lesson = add_lesson(store, OLD, "error", sources=["e1"])
    made = predictions.prediction_text(lesson, 7)
    with store.write() as conn:
        conn.execute("INSERT INTO predictions (id, lesson_id, text, made) VALUES ('p1', ?, ?, ?)",
                     (lesson["id"], made, clock.iso()))
    edit_text(store, lesson["id"], NEW)
    assert store.one("SELECT text FROM predictions")["text"] == f"Within 7 days this error will come again: {NEW}"


def test_a_prediction_not_in_predicts_words_takes_the_days_configured_now(store, home):
    (home / "config.toml").write_text("[sleep]\nprediction_days = 5\n")
    lesson = add_lesson(store, OLD, "surprise", sources=["s1"])
    with store.write() as conn:
        conn.execute("INSERT INTO predictions (id, lesson_id, text, made) VALUES ('p1', ?, ?, ?)",
                     (lesson["id"], f"Soon: {OLD}", clock.iso()))
    edit_text(store, lesson["id"], NEW)
    assert store.one("SELECT text FROM predictions")["text"] == f"Within 5 days this will surprise again: {NEW}"
