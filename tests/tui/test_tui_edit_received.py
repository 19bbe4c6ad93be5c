"""`e` on a received lesson that goes back to waiting for a decision while its editor is open
(another process, the Shared tab): its words are its author's again, so the save is refused
with the reason, in the app's terms, and the lesson keeps its words (docs/SHARING.md, "Editing
a shared lesson"). `e` on one already waiting is refused before the editor opens
(test_tui_followups.py)."""

from __future__ import annotations

import sqlite3

import pytest

from remem import paths
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app

pytestmark = pytest.mark.anyio


async def test_saving_an_edit_of_a_lesson_that_became_a_candidate_is_refused_with_what_to_do_instead(demo_home):
    with sqlite3.connect(paths.db_path()) as conn:
        conn.execute("UPDATE lessons SET status = 'active' WHERE id = 'L3'")  # held active: editable
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one("#lesson-table")
        table.move_cursor(row=table.get_row_index("L3"))  # a lesson from another memory
        await pilot.press("e")
        await pilot.pause()
        with sqlite3.connect(paths.db_path()) as conn:  # meanwhile, back to waiting for a decision
            conn.execute("UPDATE lessons SET status = 'candidate' WHERE id = 'L3'")
        app.screen.query_one("#editor").text = "Use ruff format everywhere."
        await pilot.press("ctrl+s")
        await acted(pilot)
        said = " | ".join(str(n.message) for n in app._notifications)
        assert "accept it first in the Shared tab (5, then a)" in said
    with Store() as store:
        assert store.scalar("SELECT text FROM lessons WHERE id = 'L3'") == "Use ruff format, not black."
