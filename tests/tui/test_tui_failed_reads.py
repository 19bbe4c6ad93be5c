"""A read that fails leaves the view honest: a row whose detail cannot be read says so in the
detail (never the previous row's detail, as if it were this row's), and it is said again when
the cursor comes back to it after another row was shown; a search that fails leaves the page
n/p act on as it was; and an action that takes the last page's only row puts the cursor on the
last row of the page now shown, not at its top."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, settle

pytestmark = pytest.mark.anyio

DAMAGED = "database disk image is malformed"


def _errors(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications if n.severity == "error"]


def _detail(app: Any, widget_id: str) -> str:
    return str(app.query_one(widget_id).render())


async def test_an_episode_whose_detail_fails_says_so_there_each_time_the_cursor_comes_back(demo_home, monkeypatch):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: table.row_count == 10)
        read = Store.episode

        def episode(self: Store, memory_id: str, *args: Any, **kwargs: Any) -> Any:
            if memory_id == "e02":
                raise sqlite3.DatabaseError(DAMAGED)
            return read(self, memory_id, *args, **kwargs)

        monkeypatch.setattr(Store, "episode", episode)
        table.move_cursor(row=table.get_row_index("e01"))
        await pilot.pause()
        assert "e01" in _detail(app, "#episode-detail-text")
        await pilot.press("down")  # onto e02
        await pilot.pause()
        detail = _detail(app, "#episode-detail-text")
        assert detail.startswith("cannot show this row: ") and DAMAGED in detail, detail
        assert "e01" not in detail and "uv not pip" not in detail  # not the row shown before
        assert len(_errors(app)) == 1
        await pilot.press("down", "up")  # e03 is shown, then e02 fails again: news again
        await pilot.pause()
        assert app.query_one("#episodes-pane").selected_id() == "e02"
        assert _detail(app, "#episode-detail-text").startswith("cannot show this row: ")
        assert len(_errors(app)) == 2, _errors(app)
        # The list read again with the cursor still on it: its detail still says why, not the
        # detail of a row the cursor passed while the table refilled.
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert app.query_one("#episodes-pane").selected_id() == "e02"
        assert _detail(app, "#episode-detail-text").startswith("cannot show this row: ")


async def test_a_lesson_whose_detail_fails_shows_no_other_lessons_detail(demo_home, monkeypatch):
    from remem.engine import browse

    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        table = app.query_one("#lesson-table")
        await settle(pilot, lambda: "L2" in table.rows)
        read = browse.lesson_detail

        def lesson_detail(store: Any, lesson_id: str, *args: Any, **kwargs: Any) -> Any:
            if lesson_id == "L2":
                raise sqlite3.DatabaseError(DAMAGED)
            return read(store, lesson_id, *args, **kwargs)

        monkeypatch.setattr(browse, "lesson_detail", lesson_detail)
        table.move_cursor(row=table.get_row_index("L1"))
        await pilot.pause()
        assert "uv, not pip" in _detail(app, "#lesson-detail-text")
        table.move_cursor(row=table.get_row_index("L2"))
        await pilot.pause()
        detail = _detail(app, "#lesson-detail-text")
        assert detail.startswith("cannot show this row: ") and "uv, not pip" not in detail, detail
        assert len(_errors(app)) == 1 and _errors(app)[0].startswith("lessons: ")


async def test_a_failed_search_leaves_the_page_n_and_p_turn_from(demo_home, monkeypatch):
    from remem.engine import recall

    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        pane, table = app.query_one("#episodes-pane"), app.query_one("#episode-table")
        status = app.query_one("#episode-status")
        await settle(pilot, lambda: table.row_count == 10)
        pane.page_size = 4  # three pages of the demo's ten episodes
        pane.safe_reload()
        table.focus()
        await pilot.press("n")
        await pilot.pause()
        assert pane.page_start == 4 and str(status.render()).startswith("5-8 of 10")

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(recall, "recall", broken)
        await pilot.press("slash", *"uv", "enter")
        await settle(pilot, lambda: _errors(app))
        assert pane.page_start == 4 and pane.query_text == ""
        assert str(status.render()).startswith("5-8 of 10")
        await pilot.press("n")  # from the page shown: the third
        await pilot.pause()
        assert pane.page_start == 8 and str(status.render()).startswith("9-10 of 10")
        await pilot.press("p", "p")
        await pilot.pause()
        assert pane.page_start == 0


async def test_archiving_the_last_pages_only_row_puts_the_cursor_on_the_page_befores_last_row(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        pane, table = app.query_one("#episodes-pane"), app.query_one("#episode-table")
        await settle(pilot, lambda: table.row_count == 10)
        pane.page_size = 3  # the tenth episode alone on the fourth page
        pane.safe_reload()
        table.focus()
        await pilot.press("n", "n", "n")
        await pilot.pause()
        assert pane.page_start == 9 and table.row_count == 1
        await pilot.press("a")
        await acted(pilot)
        assert pane.page_start == 6 and table.row_count == 3
        assert table.cursor_row == 2, table.cursor_row  # the row now nearest the one archived
        # The page before shown this way is no new list: the next reload keeps the cursor.
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert pane.page_start == 6 and table.cursor_row == 2
