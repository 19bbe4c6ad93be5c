"""Getting around in a small terminal: the keys dialog scrolls, every Episodes column is on
screen at 80x24, pageup/pagedown change the page, the palette's "keys" finds remem's keys, and
1 shows the Overview from every tab."""

from __future__ import annotations

import pytest

from remem.engine.store import Store
from tests.tui.conftest import new_app, screen_text

pytestmark = pytest.mark.anyio


async def test_the_keys_dialog_scrolls_to_its_last_row_at_80x24(demo_home):
    from remem.tui.screens.modals import HelpScreen

    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        dialog = app.screen.query_one("#dialog")
        assert app.focused is dialog
        assert "reload from the database" not in screen_text(app)  # the dialog is taller than 24 rows
        for _ in range(3):
            await pilot.press("pagedown")
        await pilot.press("down", "down", "end")
        await pilot.pause()
        assert dialog.scroll_y == dialog.max_scroll_y > 0
        shown = screen_text(app)
        assert "reload from the database" in shown and "│ quit" in shown
        await pilot.press("home")
        await pilot.pause()
        assert dialog.scroll_y == 0
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


@pytest.mark.parametrize("tab", ["2", "3", "4", "5"])
async def test_1_shows_the_overview_from_every_tab(demo_home, tab):
    """The focus stayed on the table of the tab left, now hidden; it moved on to that tab's
    detail, and that tab came back in front of the Overview."""
    from textual.widgets import TabbedContent

    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(tab)
        await pilot.pause()
        await pilot.press("1")
        await pilot.pause()
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "overview"
        await pilot.press(tab)  # and back again
        await pilot.pause()
        assert app.query_one(TabbedContent).active != "overview"


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (160, 40)])
async def test_every_episodes_column_is_on_screen(demo_home, size):
    """The detail goes under the table below 140 columns; the title takes what the other
    columns leave, so nothing needs scrolling sideways."""
    app = new_app()
    async with app.run_test(size=size) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#episode-table")
        assert table.virtual_size.width <= table.size.width
        header = next(line for line in screen_text(app).splitlines() if line.strip().startswith("kind"))
        for label in ("title", "project", "when", "str", "rec", "tags"):
            assert f" {label} " in f"{header} "
        detail = app.query_one("#episode-detail")
        if size[0] < 140:
            assert detail.region.y > table.region.y and detail.region.width == app.size.width
        else:
            assert detail.region.x >= table.region.right
        row = table.get_row("e03")
        assert str(row[2]) == "shop" and str(row[0]) == "error"


async def test_the_columns_follow_a_resize(demo_home):
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#episode-table")
        narrow = table.columns["title"].width
        await pilot.resize_terminal(120, 36)
        await pilot.pause()
        await pilot.pause()
        assert table.columns["title"].width > narrow
        assert table.virtual_size.width <= table.size.width


async def test_pagedown_and_pageup_change_the_page(demo_home):
    with Store() as store:
        store.put_episodes([{"id": f"bulk{i:03d}", "kind": "note", "title": f"bulk note {i}", "gist": f"bulk note {i}",
                             "at": f"2026-10-{1 + i % 28:02d}T00:00:00+00:00"} for i in range(60)])
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        pane = app.query_one("#episodes-pane")
        assert app.focused is app.query_one("#episode-table")
        await pilot.press("pagedown")
        await pilot.pause()
        assert pane.page_start == 50
        assert str(app.query_one("#episode-status").render()).startswith("51-70 of 70")
        table = app.query_one("#episode-table")
        await pilot.press("pagedown")  # the last page: no page to turn, the table scrolls
        await pilot.pause()
        assert pane.page_start == 50 and table.cursor_row > 0
        await pilot.press("pageup")
        await pilot.pause()
        await pilot.press("pageup")
        await pilot.pause()
        assert pane.page_start == 0


async def test_pagedown_scrolls_search_results(demo_home):
    with Store() as store:
        store.put_episodes([{"id": f"dep{i:03d}", "kind": "note", "title": f"deploy note {i}",
                             "gist": f"deploy with the blue profile, note {i}",
                             "at": f"2026-10-{1 + i % 28:02d}T00:00:00+00:00"} for i in range(60)])
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2", "slash", *"deploy blue profile", "enter")
        await pilot.pause()
        table = app.query_one("#episode-table")
        table.focus()
        await pilot.pause()
        await pilot.press("pagedown")
        await pilot.pause()
        assert table.cursor_row > 0


async def test_typing_keys_in_the_palette_opens_remems_keys(demo_home):
    from remem.tui.screens.modals import HelpScreen

    app = new_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"keys")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert titles.count("Keys") == 1 and "Key panel" in titles  # Textual's own is still there
