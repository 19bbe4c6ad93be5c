"""After an action takes the selected row out of the list (archive, forget, a veto under a
status filter, accept or reject in Shared), the cursor is on the row now in its place, not on
the first row of the page: a key pressed again acts on a row next to the one the person
picked. A new list (a page turned, a filter, a sort) still starts at the top."""

from __future__ import annotations

import pytest

from remem.engine.lessons import get_lesson
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, settle

pytestmark = pytest.mark.anyio


async def test_archive_leaves_the_cursor_on_the_row_that_followed(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: table.row_count == 10)
        order = [str(key.value) for key in table.rows]
        table.move_cursor(row=7)
        await pilot.pause()
        await pilot.press("a")
        await acted(pilot)
        with Store() as store:
            assert store.episode(order[7])["archived"]
        assert table.row_count == 9
        assert table.cursor_row == 7 and app.query_one("#episodes-pane").selected_id() == order[8]
        # the last row archived: the cursor on the new last row
        table.move_cursor(row=8)
        await pilot.pause()
        await pilot.press("a")
        await acted(pilot)
        assert app.query_one("#episodes-pane").selected_id() == order[8]
        assert table.cursor_row == 7


async def test_a_page_turned_starts_at_its_top(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        pane, table = app.query_one("#episodes-pane"), app.query_one("#episode-table")
        await settle(pilot, lambda: table.row_count == 10)
        pane.page_size = 4  # three pages of the demo's ten episodes
        pane.safe_reload()
        await pilot.pause()
        table.move_cursor(row=2)
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert pane.page_start == 4 and table.cursor_row == 0
        table.move_cursor(row=3)
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        assert pane.page_start == 0 and table.cursor_row == 0


async def test_a_veto_under_a_status_filter_leaves_the_cursor_in_place(demo_home):
    with Store() as store:
        from remem.engine.lessons import add_lesson

        for n in range(3):
            add_lesson(store, f"Lesson number {n} about testing.", "correction", lesson_id=f"LX{n}")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        table = app.query_one("#lesson-table")
        app.query_one("#lesson-status").value = "active"
        await settle(pilot, lambda: table.row_count == 5)
        order = [str(key.value) for key in table.rows]
        table.move_cursor(row=2)
        await pilot.pause()
        await pilot.press("v")
        await acted(pilot)
        with Store() as store:
            assert get_lesson(store, order[2])["status"] == "vetoed"
        assert [str(key.value) for key in table.rows] == order[:2] + order[3:]
        assert app.query_one("#lessons-pane").selected_id() == order[3]


async def test_reject_in_shared_leaves_the_cursor_on_the_next_candidate(demo_home):
    with Store() as store:
        from remem.engine.lessons import add_lesson

        for n in range(3):
            add_lesson(store, f"Received lesson {n} about deploys.", "correction", lesson_id=f"C{n}",
                       status="candidate", origin="b7e1c0ffee00aa11")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        table = app.query_one("#candidate-table")
        await settle(pilot, lambda: table.row_count == 4)
        order = [str(key.value) for key in table.rows]
        table.move_cursor(row=1)
        await pilot.pause()
        await pilot.press("x")
        await acted(pilot)
        with Store() as store:
            assert get_lesson(store, order[1])["status"] == "vetoed"
        assert app.query_one("#shared-pane").selected_key("#candidate-table") == order[2]
