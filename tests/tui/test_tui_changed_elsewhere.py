"""`v` and `a` toggle: veto or restore a lesson, archive or restore a memory. They act on what
the row shows. A lesson vetoed (or restored) by `remem lessons veto` while the app was open,
or a memory archived by `remem forget` with "with archived" ticked, was silently toggled back
by the key: the person meant to veto and un-vetoed. Now the change made elsewhere is said, the
view is read again, and nothing else is done."""

from __future__ import annotations

from typing import Any

import pytest

from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, on_lesson, settle

pytestmark = pytest.mark.anyio


def _warnings(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications if n.severity == "warning"]


def _lesson_status(lesson_id: str) -> str:
    with Store() as store:
        return store.scalar("SELECT status FROM lessons WHERE id = ?", (lesson_id,))


def _archived(memory_id: str) -> int:
    with Store() as store:
        return store.scalar("SELECT archived FROM episodes WHERE id = ?", (memory_id,))


async def test_v_on_a_lesson_vetoed_elsewhere_says_so_and_leaves_it_vetoed(demo_home, cli):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L2")
        assert cli("lessons", "veto", "L2").exit_code == 0  # meanwhile, in another terminal
        await pilot.press("v")
        await acted(pilot)
        assert _lesson_status("L2") == "vetoed"  # not restored behind the person's back
        assert _warnings(app) == ["L2 was vetoed meanwhile (elsewhere); the view is reloaded"]
        table = app.query_one("#lesson-table")
        assert table.get_cell("L2", "status").plain == "vetoed"  # the row shows it as it is now
        await pilot.press("v")  # now the key does what the row says: restore
        await acted(pilot)
        assert _lesson_status("L2") == "active"


async def test_v_on_a_lesson_restored_elsewhere_says_so_and_leaves_it_active(demo_home, cli):
    assert cli("lessons", "veto", "L2").exit_code == 0
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L2")
        assert app.query_one("#lesson-table").get_cell("L2", "status").plain == "vetoed"
        assert cli("lessons", "restore", "L2").exit_code == 0
        await pilot.press("v")
        await acted(pilot)
        assert _lesson_status("L2") == "active"
        assert _warnings(app) == ["L2 was restored (it is active now) meanwhile (elsewhere); the view is reloaded"]


@pytest.mark.parametrize("with_archived", [True, False])
async def test_a_on_a_memory_archived_elsewhere_says_so_and_leaves_it_archived(demo_home, cli, with_archived):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        if with_archived:
            await pilot.click("#episode-archived")
        await settle(pilot, lambda: "e05" in table.rows)
        table.move_cursor(row=table.get_row_index("e05"))
        await pilot.pause()
        assert cli("forget", "e05").exit_code == 0  # meanwhile, in another terminal
        await pilot.press("a")
        await acted(pilot)
        assert _archived("e05") == 1  # not restored behind the person's back
        assert _warnings(app) == ["e05 was archived meanwhile (elsewhere); the view is reloaded"]
        if with_archived:
            assert table.get_cell("e05", "title").plain.startswith("(archived)")
        else:
            assert "e05" not in table.rows


async def test_a_on_a_memory_restored_elsewhere_says_so_and_leaves_it_live(demo_home, cli):
    assert cli("forget", "e05").exit_code == 0
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.click("#episode-archived")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: "e05" in table.rows)
        table.move_cursor(row=table.get_row_index("e05"))
        await pilot.pause()
        assert table.get_cell("e05", "title").plain.startswith("(archived)")
        assert cli("forget", "e05", "--undo").exit_code == 0
        await pilot.press("a")
        await acted(pilot)
        assert _archived("e05") == 0
        assert _warnings(app) == ["e05 was restored meanwhile (elsewhere); the view is reloaded"]
        assert not table.get_cell("e05", "title").plain.startswith("(archived)")
