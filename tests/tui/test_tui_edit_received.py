"""`e` on a received lesson still waiting for a decision: its words are its author's, so the
edit is refused with the reason and the lesson keeps its words (docs/SHARING.md, "Editing a
shared lesson")."""

from __future__ import annotations

import pytest

from remem.engine.store import Store
from tests.tui.conftest import acted, new_app

pytestmark = pytest.mark.anyio


async def test_editing_a_candidate_is_refused_with_what_to_do_instead(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one("#lesson-table")
        table.move_cursor(row=table.get_row_index("L3"))  # a candidate from another memory
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#editor").text = "Use ruff format everywhere."
        await pilot.press("ctrl+s")
        await acted(pilot)
        said = " | ".join(str(n.message) for n in app._notifications)
        assert "accept it first (`remem share accept L3`)" in said
    with Store() as store:
        assert store.scalar("SELECT text FROM lessons WHERE id = 'L3'") == "Use ruff format, not black."
