"""Every screen and modal, as SVG snapshots over the deterministic demo store (80x24 and 120x36)."""

from __future__ import annotations

from tests.tui.conftest import new_app

BIG = (120, 36)


async def _measured(pilot) -> None:
    """The Overview works its measures out in a thread once the rest is drawn: wait for them."""
    measure = pilot.app.screen_stack[0].query_one("#overview-measure")  # under any modal
    for _ in range(100):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if "measuring…" not in str(measure.render()):
            return


async def _quiet(pilot) -> None:
    """No blinking cursor, no pending notifications, the measures in: snapshots must be
    deterministic."""
    await _measured(pilot)
    for widget in pilot.app.screen.query("Input, TextArea"):
        widget.cursor_blink = False
    pilot.app.clear_notifications()
    await pilot.pause()


def test_overview_80x24(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=(80, 24), run_before=_quiet)


def test_overview(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, run_before=_quiet)


def test_episodes(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, press=["2"], run_before=_quiet)


def test_episodes_80x24(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=(80, 24), press=["2"], run_before=_quiet)


def test_episodes_search_shows_score_parts(demo_home, snap_compare):
    async def search(pilot):
        await pilot.press("2", "slash")
        await pilot.press(*"which installer")
        await pilot.press("enter")
        await _quiet(pilot)

    assert snap_compare(new_app(), terminal_size=BIG, run_before=search)


def test_lessons(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, press=["3"], run_before=_quiet)


def test_sleep(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, press=["4"], run_before=_quiet)


def test_shared(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, press=["5"], run_before=_quiet)


def test_help_modal(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, press=["question_mark"], run_before=_quiet)


def _pressing(*keys: str):
    """Press keys, then quiet the screen they opened (modals have their own cursors)."""
    async def run(pilot) -> None:
        await pilot.press(*keys)
        await pilot.pause()
        await _quiet(pilot)

    return run


def test_forget_modal(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, run_before=_pressing("2", "f"))


def test_tag_modal(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, run_before=_pressing("2", "t"))


def test_connect_modal(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, run_before=_pressing("2", "c"))


def test_edit_lesson_modal(demo_home, snap_compare):
    assert snap_compare(new_app(), terminal_size=BIG, run_before=_pressing("3", "e"))


def test_command_palette(demo_home, snap_compare):
    async def palette(pilot):
        await pilot.press("ctrl+p")
        await pilot.press(*"forget")
        await _quiet(pilot)

    assert snap_compare(new_app(), terminal_size=BIG, run_before=palette)
