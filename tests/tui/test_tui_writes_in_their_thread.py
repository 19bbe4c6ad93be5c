"""While a key's write or a sleep run goes on in its thread (here: waiting for the memory another
process holds): one at a time, a sleep run included; a key that asks something first is told
before its dialog opens, so nothing typed is thrown away; the tab shown when a write ends reads
the memory again; what a write or a run raised is said in one line and logged."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import TabbedContent

from remem import paths
from remem.engine import store as store_module
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, slept

pytestmark = pytest.mark.anyio

BUSY = "the memory is busy (another remem process is writing); try again in a moment"


def _said(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


def _errors(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications if n.severity == "error"]


def _overview_counts(app: Any) -> str:
    return str(app.query_one("#overview-counts").render())


async def _veto_l1_waits(pilot: Any) -> None:
    """v on L1 in the Lessons tab: its write waits for the memory in its thread."""
    await pilot.press("3")
    await pilot.pause()
    table = pilot.app.query_one("#lesson-table")
    table.move_cursor(row=table.get_row_index("L1"))
    await pilot.pause()
    await pilot.press("v")
    await pilot.pause()
    assert pilot.app.acting


def _status(lesson_id: str) -> str:
    with Store() as store:
        return store.scalar("SELECT status FROM lessons WHERE id = ?", (lesson_id,))


def _sleep_runs() -> int:
    with Store() as store:
        return store.scalar("SELECT count(*) FROM runs WHERE kind = 'sleep'")


async def test_the_tab_shown_when_a_write_ends_reads_the_memory_again(held):
    """The person moved to the Overview while the veto waited: when it lands, the Overview
    shown says so, not only the next time it is shown."""
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await _veto_l1_waits(pilot)
        await pilot.press("1")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "overview"
        assert "vetoed" not in _overview_counts(app)
        held.execute("COMMIT")
        await acted(pilot)
        assert app.query_one(TabbedContent).active == "overview"
        assert "lessons  active 1 candidate 1 vetoed 1" in _overview_counts(app)


async def test_a_sleep_run_does_not_start_while_a_write_runs(held):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _veto_l1_waits(pilot)
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        sleep_pane = app.query_one("#sleep-pane")
        assert not sleep_pane.sleep_running
        assert "still saving the last change; run sleep once it is done" in _said(app)
        held.execute("COMMIT")
        await acted(pilot)
        assert _status("L1") == "vetoed"
        await pilot.press("r")  # the write is done: now it runs
        await slept(pilot)
        assert sleep_pane.log_lines[-1] == "sleep finished"
    assert _sleep_runs() == 2  # the demo's, and the one run after the write


async def test_a_write_does_not_start_while_a_sleep_run_goes_on(held):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("r")  # the run waits for the memory in its thread
        await pilot.pause()
        sleep_pane = app.query_one("#sleep-pane")
        assert sleep_pane.sleep_running
        await pilot.press("3")
        await pilot.pause()
        await pilot.press("v")
        await pilot.pause()
        assert not app.acting
        assert "sleep is running; try again once it is done" in _said(app)
        held.execute("COMMIT")
        await slept(pilot)
        assert sleep_pane.log_lines[-1] == "sleep finished"
    with Store() as store:
        assert store.scalar("SELECT count(*) FROM lessons WHERE status = 'vetoed'") == 0  # the refused v


# Every key whose write asks something first: (its tab, the key).
ASKING_KEYS = [("2", "f"), ("2", "t"), ("2", "i"), ("2", "c"), ("3", "e"), ("3", "m"), ("5", "R"), ("5", "X")]


@pytest.mark.parametrize(("tab", "key"), ASKING_KEYS)
async def test_a_key_that_asks_first_is_refused_before_its_dialog_opens(held, cli, tmp_path, tab, key):
    """Its dialog opened while a write ran; what was typed in it was thrown away at submit."""
    assert cli("config", "set", "share.folder", str(tmp_path / "sync")).exit_code == 0  # R asks only with one
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _veto_l1_waits(pilot)
        await pilot.press(tab)
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        assert len(app.screen_stack) == 1, f"{type(app.screen).__name__} opened while a write ran"
        assert "still saving the last change; try again once it is done" in _said(app)
        held.execute("COMMIT")
        await acted(pilot)
        await pilot.press(key)  # the write is done: now it asks
        await pilot.pause()
        assert len(app.screen_stack) == 2


async def test_a_key_that_asks_first_is_refused_while_a_sleep_run_goes_on(held):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("3")
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert len(app.screen_stack) == 1, f"{type(app.screen).__name__} opened while sleep ran"
        assert "sleep is running; try again once it is done" in _said(app)
        held.execute("COMMIT")
        await slept(pilot)


async def test_an_unexpected_error_in_a_write_is_said_in_one_line_and_logged_with_its_traceback(
        demo_home, monkeypatch):
    from remem.engine import lifecycle

    def archive(store: Any, memory_id: str) -> None:  # stands in for a bug in the engine
        raise ZeroDivisionError("a bug in archive")

    monkeypatch.setattr(lifecycle, "archive", archive)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("a")
        await acted(pilot)
        assert _errors(app) == [
            f"unexpected error: ZeroDivisionError: a bug in archive (traceback in {paths.log_file()})"]
    [logged] = [line for line in paths.log_file().read_text().splitlines() if " tui.write " in line]
    assert "Traceback (most recent call last)" in logged
    assert 'raise ZeroDivisionError("a bug in archive")' in logged


@pytest.mark.parametrize("what", ["write", "sleep"])
async def test_a_write_or_sleep_run_that_gives_up_on_the_memory_says_so_and_logs_it(held, monkeypatch, what):
    # The lock is held throughout: the write, or the run, gives up after its busy timeout.
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 200)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        if what == "write":
            await pilot.press("2")
            await pilot.pause()
            await pilot.press("a")
            await acted(pilot)
        else:
            await pilot.press("4")
            await pilot.pause()
            await pilot.press("r")
            await slept(pilot)
            assert app.query_one("#sleep-pane").log_lines[-1] == f"sleep stopped: {BUSY}"
        assert _errors(app) == [BUSY]
    logged = paths.log_file().read_text().splitlines()
    assert any(line.endswith(f" tui.{what} {BUSY}") for line in logged), logged
