"""Esc in the episode search box clears what was typed even before it was searched, and gives
the keys back to the table: 1-5 and q are keys again, not letters in the box."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input

from tests.tui.conftest import new_app, settle

pytestmark = pytest.mark.anyio


async def test_escape_clears_typed_unsearched_text_and_gives_the_keys_back(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: table.row_count == 10)
        box = app.query_one("#episode-search", Input)
        await pilot.press("slash", *"pip 3")
        await pilot.pause()
        assert box.value == "pip 3" and app.focused is box
        await pilot.press("escape")
        await pilot.pause()
        assert box.value == ""
        assert isinstance(app.focused, DataTable) and app.focused is table
        await pilot.press("3")
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "lessons"


async def test_escape_after_a_search_shows_the_pages_again(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: table.row_count == 10)
        await pilot.press("slash", *"uv", "enter")
        pane = app.query_one("#episodes-pane")
        status = app.query_one("#episode-status")
        await settle(pilot, lambda: "results for" in str(status.render()))
        assert pane.query_text == "uv" and "results for" in str(status.render())
        await pilot.press("escape")
        await settle(pilot, lambda: table.row_count == 10)
        assert pane.query_text == "" and app.query_one("#episode-search", Input).value == ""
        assert table.row_count == 10
