"""What the app says where the CLI says it too: a refused edit refused before its dialog opens,
in the app's own terms; the sleep history in `remem sleep`'s words; the Shared tab with a sync
folder set and nothing received; who sent a received lesson, in the Lessons table."""

from __future__ import annotations

import json
import sqlite3

import pytest

from remem import paths
from remem.engine.sleep_describe import describe_pass
from remem.engine.store import Store
from remem.tui.screens.modals import EditText
from tests.tui.conftest import acted, new_app, on_lesson, screen_text, settle

pytestmark = pytest.mark.anyio

CANDIDATE_WORDS = "Use ruff format, not black."


def _messages(app) -> str:  # noqa: ANN001
    return " | ".join(str(n.message) for n in app._notifications)


def _sql(statement: str, params: tuple = ()) -> None:
    """A change made by another process, before the app opens."""
    with sqlite3.connect(paths.db_path()) as conn:
        conn.execute(statement, params)


@pytest.mark.parametrize("status, key", [("candidate", "5, then a"), ("quarantined", "5, then A")])
async def test_e_on_a_received_lesson_waiting_for_a_decision_refuses_before_the_editor_opens(
        demo_home, status, key):
    _sql("UPDATE lessons SET status = ? WHERE id = 'L3'", (status,))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L3")
        await pilot.press("e")
        await acted(pilot)
        # Nothing to type into: what would have been typed is not thrown away at save.
        assert not isinstance(app.screen, EditText)
        said = _messages(app)
        assert f"accept it {'anyway ' if status == 'quarantined' else ''}first in the Shared tab ({key})" in said
        assert "reject it there (x)" in said
        assert "remem share" not in said  # the app's keys, not the CLI's commands
    with Store() as store:
        assert store.scalar("SELECT text FROM lessons WHERE id = 'L3'") == CANDIDATE_WORDS


async def test_e_on_a_received_lesson_held_active_still_opens_the_editor(demo_home):
    # The engine lets a person rewrite a received lesson they hold active (it becomes theirs).
    _sql("UPDATE lessons SET status = 'active' WHERE id = 'L3'")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L3")
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EditText)


def _record_run(passes: dict) -> None:
    _sql("INSERT INTO runs (kind, started, finished, status, summary) VALUES ('sleep', ?, ?, 'ok', ?)",
         ("2026-11-20T11:00:00+00:00", "2026-11-20T11:00:03+00:00", json.dumps({"passes": passes})))


# A run whose upkeep passes come before the lessons pass, as they do in every sleep: the
# history used to list their raw counts first and cut the line before the new lessons.
PASSES = {
    "redact": {"checked": 0, "episodes": 0, "renamed": 0, "lessons": 0},
    "embed": {"episodes": 0, "lessons": 0, "predictions": 4, "space": "m2v", "lessons_reembedded": 0},
    "expire": {"ran": 4, "expired": 0, "decayed": 10, "deleted": 0,
               "by_task": {"expire_short_term": {"expired": 0}, "importance_decay": {"decayed": 10},
                           "active_forgetting": {"decayed": 0, "deleted": 0}, "cleanup_archived": {"deleted": 0}}},
    "decay": {"decayed": 10, "archived": 0},
    "lessons": {"new_episodes": 3, "joined": 1, "created": 2, "pending": 0},
    "merge": {"themes": 0, "aliased": 0},
    "verify": {"open": 2, "confirmed": 0, "failed": 0},
    "predict": {"made": 2},
    "connect": {"memories": 10, "edges": 1},
    "render": {"lessons": 4, "folders": 1, "written": 0, "removed": 0, "no_project_folder": 0, "vetoed": 0},
}


async def _history_row(pilot) -> str:  # noqa: ANN001
    await pilot.press("4")
    table = pilot.app.query_one("#sleep-history")
    await settle(pilot, lambda: "2" in table.rows)
    return str(table.get_cell("2", "what changed"))


async def test_sleep_history_says_what_each_pass_changed_in_the_words_remem_sleep_prints(demo_home):
    _record_run(PASSES)
    app = new_app()
    async with app.run_test(size=(300, 40)) as pilot:  # wide enough for the whole line
        row = await _history_row(pilot)
    # What was learned first, then the other passes that changed something, in pass order;
    # upkeep (strengths eased, predictions looked at, files unchanged) is left out.
    assert row == "; ".join(f"{name}: {describe_pass(name, PASSES[name])}"
                            for name in ("lessons", "predict", "embed", "connect"))
    assert "new_episodes" not in row and "eased" not in row


async def test_sleep_history_at_80_columns_shows_the_new_lessons_and_cuts_the_rest(demo_home):
    _record_run(PASSES)
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        row = await _history_row(pilot)
        shown = screen_text(app)
    assert row.startswith("lessons: read 3 new corrections and errors") and row.endswith("…")
    assert "lessons: read 3 new" in shown


async def test_sleep_history_of_a_run_that_only_did_upkeep_says_nothing_new(demo_home):
    _record_run({name: counts for name, counts in PASSES.items() if name in ("expire", "decay", "verify", "render")})
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        assert await _history_row(pilot) == "nothing new"


async def test_shared_tab_with_a_sync_folder_and_nothing_received_names_the_folder(demo_home, cli, tmp_path):
    folder = tmp_path / "sync"
    assert cli("config", "set", "share.folder", str(folder)).exit_code == 0
    _sql("DELETE FROM lessons WHERE id = 'L3'")  # the one lesson received
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await acted(pilot)
        shown = str(app.query_one("#candidate-detail-text").render())
    assert f"Nothing received yet from {folder}; press y to sync." in shown
    assert "Set a sync folder" not in shown


async def test_shared_tab_without_a_sync_folder_still_says_to_set_one(demo_home):
    _sql("DELETE FROM lessons WHERE id = 'L3'")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await acted(pilot)
        assert "Set a sync folder and press y" in str(app.query_one("#candidate-detail-text").render())


def _lesson_cell(app, lesson_id: str) -> str:  # noqa: ANN001
    return str(app.query_one("#lesson-table").get_cell(lesson_id, "lesson"))


async def test_lessons_table_names_who_sent_a_received_lesson_as_remem_lessons_list_does(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L3")
        assert _lesson_cell(app, "L3") == f"{CANDIDATE_WORDS} (from laptop)"  # the peer's label
        assert _lesson_cell(app, "L1") == "Install packages with uv, not pip."  # ours: no sender


async def test_lessons_table_names_an_unlabelled_sender_by_its_origins_first_8_characters(demo_home):
    _sql("UPDATE peers SET label = NULL")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L3")
        assert _lesson_cell(app, "L3") == f"{CANDIDATE_WORDS} (from b7e1c0ff)"


async def test_a_long_received_lesson_keeps_its_sender_in_sight_at_80_columns(demo_home):
    long_words = ("Format Python with ruff format rather than black, in every project, "
                  "and run it before each commit so reviews never argue about layout.")
    _sql("UPDATE lessons SET text = ? WHERE id = 'L3'", (long_words,))
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await on_lesson(pilot, "L3")
        row = next(line for line in screen_text(app).splitlines() if "candidate" in line)
        assert row.rstrip().endswith("… (from laptop)")
        assert "Format Python with ruff" in row
        # Wider, more of its words, and the sender still at their end.
        await pilot.resize_terminal(120, 36)
        await settle(pilot, lambda: len(_lesson_cell(app, "L3")) == 56)
        wide = _lesson_cell(app, "L3")
        assert wide.endswith("… (from laptop)") and len(wide) == 56


async def test_an_edited_row_keeps_its_sender(demo_home):
    # One row redrawn after an action on it (LessonsPane._redraw_row) says who sent it too.
    _sql("UPDATE lessons SET status = 'active' WHERE id = 'L3'")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L3")
        await pilot.press("v")  # veto: the row is drawn again, alone
        await acted(pilot)
        assert "vetoed" in str(app.query_one("#lesson-table").get_cell("L3", "status"))
        assert _lesson_cell(app, "L3") == f"{CANDIDATE_WORDS} (from laptop)"
