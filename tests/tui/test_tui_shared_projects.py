"""A received lesson for a project this memory cannot place waits; the Shared tab shows its
project and why it waits, and `a` on it asks for the folder it belongs to here (the CLI's
`share accept --project`) instead of failing with a line about a flag the app has not got.
`remem lessons show` names such a lesson's project as a project, not as a folder."""

from __future__ import annotations

import pytest

from remem.engine.lessons import add_lesson
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, screen_text, settle

pytestmark = pytest.mark.anyio

PEER = "b7e1c0ffee00aa11"  # the demo store's peer
WAITS = "for project 'billing', which this memory has not seen"


def _add_waiting(lid: str = "W1", status: str = "candidate") -> None:
    """A lesson received for the peer's project `billing`, which the demo store has never seen:
    stored with the project's bare name as its folder, so it waits."""
    with Store() as store:
        add_lesson(store, "Run the billing migrations before the tests.", "correction", lesson_id=lid,
                   status=status, origin=PEER, cwd="billing",
                   note="quarantined: test" if status == "quarantined" else None)


def _lesson(lid: str) -> dict:
    with Store() as store:
        return store.one("SELECT status, cwd FROM lessons WHERE id = ?", (lid,)) or {}


def _messages(app) -> str:
    return " | ".join(str(n.message) for n in app._notifications)


async def _open_shared_on(pilot, lid: str) -> None:
    """The Shared tab, with the candidate `lid` selected and the table focused."""
    await pilot.press("5")
    table = pilot.app.query_one("#candidate-table")
    await settle(pilot, lambda: table.row_count == 2)
    table.focus()
    table.move_cursor(row=table.get_row_index(lid))
    await pilot.pause()


async def _answer(pilot, text: str) -> None:
    """Type an answer into the modal that asks for a value, and submit it."""
    pilot.app.screen.query_one("#answer").value = text
    await pilot.press("enter")
    await acted(pilot)


async def test_the_table_and_detail_show_the_project_and_why_it_waits(demo_home):
    _add_waiting()
    app = new_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _open_shared_on(pilot, "W1")
        table = app.query_one("#candidate-table")
        assert str(table.get_row("W1")[4]) == "billing (waits)"
        assert str(table.get_row("L3")[4]) == "every"  # a lesson of every project
        detail = str(app.query_one("#candidate-detail-text").render())
        assert f"project: billing · waits {WAITS}" in detail
        assert "press a" in detail and "--project" not in detail  # no flag the app has not got


def _billing(tmp_path) -> str:
    """The project's folder on this machine: the engine takes a folder that is there (or one
    this memory has seen), never a path to nowhere."""
    folder = tmp_path / "dev" / "billing"
    folder.mkdir(parents=True)
    return str(folder)


async def test_a_asks_for_the_folder_and_accepts_the_lesson_there(demo_home, tmp_path):
    _add_waiting()
    billing = _billing(tmp_path)
    app = new_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _open_shared_on(pilot, "W1")
        await pilot.press("a")
        await acted(pilot)
        shown = " ".join(screen_text(app).replace("█", " ").split())  # the dialog wraps the reason
        assert "Accept W1 for which folder here?" in shown, shown
        assert f"It waits {WAITS}. Give its folder" in shown, shown
        await _answer(pilot, billing)
        assert f"accepted W1: applies in {billing}" in _messages(app)
    assert _lesson("W1") == {"status": "active", "cwd": billing}


async def test_a_known_projects_name_is_taken_for_its_folder(demo_home):
    _add_waiting()
    app = new_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _open_shared_on(pilot, "W1")
        await pilot.press("a")
        await acted(pilot)
        await _answer(pilot, "shop")  # the demo store's /home/dev/shop
    assert _lesson("W1") == {"status": "active", "cwd": "/home/dev/shop"}


@pytest.mark.parametrize("answer, said", [
    ("code/billing", "is a relative path; give the project's full folder path"),
    ("billing", "no project named 'billing'; give its folder path"),
])
async def test_a_folder_that_cannot_be_placed_is_one_line_and_changes_nothing(demo_home, answer, said):
    _add_waiting()
    app = new_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _open_shared_on(pilot, "W1")
        await pilot.press("a")
        await acted(pilot)
        await _answer(pilot, answer)
        errors = [str(n.message) for n in app._notifications if n.severity == "error"]
        assert len(errors) == 1 and said in errors[0] and "\n" not in errors[0], errors
    assert _lesson("W1") == {"status": "candidate", "cwd": "billing"}


async def test_escape_leaves_the_waiting_lesson_as_it_was(demo_home):
    _add_waiting()
    app = new_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _open_shared_on(pilot, "W1")
        await pilot.press("a")
        await acted(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert not _messages(app)
    assert _lesson("W1") == {"status": "candidate", "cwd": "billing"}


async def test_accept_anyway_on_a_quarantined_waiting_lesson_asks_for_the_folder_too(demo_home, tmp_path):
    _add_waiting(status="quarantined")
    billing = _billing(tmp_path)
    app = new_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _open_shared_on(pilot, "W1")
        await pilot.press("A")
        await acted(pilot)
        await _answer(pilot, billing)
    assert _lesson("W1") == {"status": "active", "cwd": billing}


def test_lessons_show_names_the_project_a_waiting_lesson_is_for(demo_home, cli):
    _add_waiting()
    shown = cli("lessons", "show", "W1")
    assert shown.exit_code == 0, shown.output
    assert "for project 'billing' (not placed here)" in shown.stdout
    assert "cwd billing" not in shown.stdout  # a bare name read as a folder
    placed = cli("lessons", "show", "L1")
    assert "cwd /home/dev/shop" in placed.stdout
