"""A dialog's buttons stay on screen whatever the length of the text it shows: a merge of two
lessons of a few hundred characters, or the forget of an ordinary memory, at 80x24, used to push
the buttons below the dialog's edge (and the forget dialog's focus sat on the hidden Archive
button, so enter archived unseen). The text scrolls in the dialog's body instead."""

from __future__ import annotations

import re
from typing import Any

import pytest

from remem.engine.lessons import add_lesson
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, on_lesson, screen_text, settle

pytestmark = pytest.mark.anyio

WORDS = ("Before running the integration tests, start the local postgres container with docker compose "
         "up -d db and export DATABASE_URL; otherwise every test fails with connection refused. ")


def _text(length: int, start: str = "") -> str:
    return (start + WORDS * (length // len(WORDS) + 1))[:length]


async def _merge_dialog(pilot: Any, lesson_id: str, into: str) -> None:
    await on_lesson(pilot, lesson_id)
    await pilot.press("m")
    await pilot.pause()
    pilot.app.screen.query_one("#answer").value = into
    await pilot.press("enter")
    await pilot.pause()
    assert type(pilot.app.screen).__name__ == "Confirm"


@pytest.mark.parametrize(("size", "length"), [((80, 24), 300), ((120, 36), 2000)])
async def test_the_merge_dialog_shows_its_buttons_for_long_lessons(demo_home, size, length):
    with Store() as store:
        add_lesson(store, _text(length), "error", lesson_id="LA")
        add_lesson(store, _text(length, "Also: "), "error", lesson_id="LB")
    app = new_app()
    async with app.run_test(size=size) as pilot:
        await _merge_dialog(pilot, "LA", "LB")
        assert re.search(r"Merge\s+Cancel", screen_text(app)), screen_text(app)
        body = app.screen.query_one(".body")
        assert body.max_scroll_y > 0  # the text is longer than the dialog: it scrolls
        body.scroll_end(animate=False)
        await pilot.pause()
        shown = screen_text(app)
        assert "cannot be undone." in shown and re.search(r"Merge\s+Cancel", shown), shown
        await pilot.click("#yes")  # a click on a button off the screen would miss it
        await acted(pilot)
    with Store() as store:
        assert store.one("SELECT id FROM lessons WHERE id = 'LA'") is None


async def test_the_forget_dialog_shows_its_buttons_and_focuses_archive_at_80x24(demo_home):
    with Store() as store:
        store.put_episodes([{"id": "ep1", "kind": "error", "title": _text(300), "gist": _text(300, "gist "),
                             "at": "2026-11-20T11:59:00+00:00"}])
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: "ep1" in table.rows)
        table.move_cursor(row=table.get_row_index("ep1"))
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmForget"
        assert re.search(r"Archive\s+Delete for good\s+Cancel", screen_text(app)), screen_text(app)
        assert app.focused is app.screen.query_one("#soft")  # in sight: enter archives, as it says
        app.screen.query_one(".body").scroll_end(animate=False)
        await pilot.pause()
        assert "cannot be undone." in screen_text(app)


@pytest.mark.parametrize("modal", ["Confirm", "ConfirmForget", "AskValue", "EditText"])
async def test_every_dialog_keeps_its_buttons_or_input_on_screen_at_80x24(demo_home, modal):
    from remem.tui.screens import modals

    long = _text(2000)
    dialog, docked = {
        "Confirm": (modals.Confirm("Revoke L1 everywhere?", long, "Revoke"), r"Revoke\s+Cancel"),
        "ConfirmForget": (modals.ConfirmForget("a memory", long), r"Archive\s+Delete for good\s+Cancel"),
        "AskValue": (modals.AskValue("Accept L3 for which folder here?", detail=long),
                     r"Enter to save, Esc to cancel"),
        "EditText": (modals.EditText("Edit lesson L1", long), r"Save \(ctrl\+s\)\s+Cancel"),
    }[modal]
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.push_screen(dialog)
        await pilot.pause()
        await pilot.pause()
        assert re.search(docked, screen_text(app)), screen_text(app)
        if modal == "AskValue":
            assert app.focused is dialog.query_one("#answer")
