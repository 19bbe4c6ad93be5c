"""Another process holds the memory's write lock (an ingest, a sleep, a hook): a key that writes
waits for it in a thread of its own, the header says so, the UI goes on answering keys, and `q`
quits at once. The write ran on the UI thread, which froze for the whole busy timeout; a sleep
run waiting for the lock kept `q` from quitting until it gave up."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from remem.engine.store import Store
from tests.tui.conftest import acted, new_app

pytestmark = pytest.mark.anyio


def _archived(eid: str) -> int:
    with Store() as store:
        return store.scalar("SELECT archived FROM episodes WHERE id = ?", (eid,))


async def test_a_write_waits_for_the_memory_while_the_ui_answers_keys(held):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#episode-table")
        table.move_cursor(row=table.get_row_index("e05"))
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        # At once: working; after WAITING_AFTER (which a loaded machine can pass within one
        # pause), what it waits for.
        assert app.acting and app.sub_title in ("working…", "waiting for the memory…")
        for _ in range(400):  # the header says what it waits for once the write takes long
            if app.sub_title.startswith("waiting for the memory"):
                break
            await pilot.pause(0.05)
        assert app.sub_title.startswith("waiting for the memory")
        assert any("waiting for the memory" in str(n.message) for n in app._notifications)
        # The UI answers while the write waits: another tab comes up, a second write is told to wait.
        await pilot.press("3")
        await pilot.pause()
        assert app.query_one("TabbedContent").active == "lessons"
        await pilot.press("v")
        await pilot.pause()
        assert any("still saving the last change" in str(n.message) for n in app._notifications)
        assert app.acting and _archived("e05") == 0
        held.execute("COMMIT")  # the other process is done: the write goes through
        await acted(pilot)
        assert not app.acting and app.sub_title == app.SUB_TITLE
        assert "archived e05" in [str(n.message) for n in app._notifications]
    assert _archived("e05") == 1
    with Store() as store:
        assert store.scalar("SELECT status FROM lessons WHERE id = 'L1'") == "active"  # the refused v


QUIT_WHILE_WAITING = textwrap.dedent("""
    from remem.engine import store as store_module

    store_module.BUSY_TIMEOUT_MS = 600_000  # the write would wait ten minutes for the lock
    from remem.tui.app import RememApp

    async def press(pilot):
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        print("waiting:", pilot.app.acting, flush=True)
        await pilot.press("q")

    RememApp().run(headless=True, size=(120, 36), auto_pilot=press)
    print("quit", flush=True)
""")


def test_q_quits_while_a_write_waits_for_the_memory(held):
    """The process ends with the write still waiting (it never committed: SQLite drops it)."""
    # timeout: only so that a process that never quits fails the test instead of hanging it
    done = subprocess.run([sys.executable, "-c", QUIT_WHILE_WAITING], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["waiting:", "True", "quit"], done.stdout + done.stderr
    held.execute("COMMIT")
    with Store() as store:
        assert store.scalar("SELECT count(*) FROM episodes WHERE archived = 1") == 0


QUIT_WHILE_SLEEP_WAITS = textwrap.dedent("""
    from remem.engine import store as store_module

    store_module.BUSY_TIMEOUT_MS = 600_000  # the sleep would wait ten minutes for the lock
    from remem.tui.app import RememApp

    async def press(pilot):
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        print("sleeping:", pilot.app.query_one("#sleep-pane").sleep_running, flush=True)
        await pilot.press("q")

    RememApp().run(headless=True, size=(120, 36), auto_pilot=press)
    print("quit", flush=True)
""")


def test_q_quits_while_a_sleep_run_waits_for_the_memory(held):
    """The process ends with the run still waiting, and leaves what a killed sleep leaves: the
    memory whole, no run begun, the sleep lock free for the next sleep."""
    from remem.engine import sleep

    # timeout: only so that a process that never quits fails the test instead of hanging it
    done = subprocess.run([sys.executable, "-c", QUIT_WHILE_SLEEP_WAITS], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["sleeping:", "True", "quit"], done.stdout + done.stderr
    held.execute("COMMIT")
    with Store() as store:
        assert store.scalar("PRAGMA integrity_check") == "ok"
        assert store.scalar("SELECT count(*) FROM runs WHERE kind = 'sleep'") == 1  # the demo's own
        sleep.run_sleep_collect(store)
        assert store.scalar("SELECT status FROM runs WHERE kind = 'sleep' ORDER BY id DESC LIMIT 1") == "ok"


async def test_a_slow_write_that_waits_for_nobody_never_says_it_waits_slowness_faked(demo_home, monkeypatch):
    """A first edit loads the embedder and the identity (half a second on a loaded machine):
    the header said "waiting for the memory (another remem process may be writing to it)" when
    no other process held it. Here the edit is held back in its thread until the test lets it
    go (the slowness is faked; the memory is free), and the header is told to speak almost at
    once (WAITING_AFTER; a timer of 0 never fires) once the memory is found held: it says only
    that the app works."""
    import threading

    from remem.engine import lessons
    from remem.tui import app as app_module

    monkeypatch.setattr(app_module, "WAITING_AFTER", 0.001)
    gate = threading.Event()
    real = lessons.edit_text

    def slow(*args, **kwargs):
        gate.wait(120)  # bounded: a test that never lets it go fails instead of hanging
        return real(*args, **kwargs)

    monkeypatch.setattr(lessons, "edit_text", slow)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        from tests.tui.conftest import on_lesson

        await on_lesson(pilot, "L1")
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#editor").text = "Always install Python packages with uv."
        await pilot.press("ctrl+s")
        for _ in range(10):
            await pilot.pause(0.02)
            assert app.acting and app.sub_title == "working…"
        gate.set()
        await acted(pilot)
        said = [str(n.message) for n in app._notifications]
        assert not any("waiting" in line for line in said), said
        assert said[-1] == "lesson saved"
    with Store() as store:
        assert store.scalar("SELECT text FROM lessons WHERE id = 'L1'") == "Always install Python packages with uv."
