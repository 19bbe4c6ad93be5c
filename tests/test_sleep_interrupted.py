"""A sleep cut short (the TUI quit while its sleep ran, a killed `remem sleep`) cannot record its
end, so its row stays 'running'. Only a sleep holding sleep.lock can be running: without the
lock such a row is shown as interrupted, and the next sleep records it so."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.engine import sleep
from remem.engine.store import Store, dumps
from tests.conftest import ROOT

# What a sleep of an earlier release recorded when it started: the passes it was to run, as a list.
EARLIER_RELEASE_START = {"passes": ["redact", "embed"], "dry_run": False}


def _left_running(store: Store, started: str = "2026-11-20T04:00:00+00:00",
                  summary: dict[str, Any] | None = None) -> int:
    """A run's row as a sleep whose process ended mid-run leaves it."""
    with store.write() as conn:
        return int(conn.execute(
            "INSERT INTO runs (kind, started, status, summary) VALUES ('sleep', ?, 'running', ?)",
            (started, dumps(summary if summary is not None else EARLIER_RELEASE_START))).lastrowid)


def _shown(store: Store) -> dict[int, dict[str, Any]]:
    return {run["id"]: run for run in sleep.history(store)}


def _stored(store: Store, run_id: int) -> dict[str, Any]:
    row = store.one("SELECT status, finished, summary FROM runs WHERE id = ?", (run_id,))
    return {**row, "summary": json.loads(row["summary"])}


# A child process that starts a real sleep (lock taken, its row recorded), says so, and waits.
SLEEP_THAT_WAITS = """
import sys
from remem.engine.sleep import run_sleep
from remem.engine.store import Store

with Store() as store:
    steps = run_sleep(store, ["decay"])
    next(steps)  # the first pass is starting: the lock is held and the run is recorded
    print("started", flush=True)
    sys.stdin.read()
"""

# A child process that holds sleep.lock as a sleep does, and waits.
LOCK_THAT_WAITS = """
import sys
from remem.engine.sleep import sleep_lock

with sleep_lock():
    print("held", flush=True)
    sys.stdin.read()
"""


def _child(code: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=str(ROOT))
    assert proc.stdout is not None
    said = proc.stdout.readline().strip()  # blocks until the child holds the lock
    assert said in ("started", "held"), f"the child never got there: {said!r}, exit {proc.poll()}"
    return proc


@pytest.fixture
def waiting_sleep(store: Store) -> Iterator[subprocess.Popen[str]]:
    proc = _child(SLEEP_THAT_WAITS)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_a_live_sleep_shows_running_and_once_killed_shows_interrupted(store, waiting_sleep):
    [run] = sleep.history(store)
    assert run["status"] == "running"
    assert sleep.is_running()
    waiting_sleep.send_signal(signal.SIGKILL)  # as `kill -9`, or the TUI's thread when it quits
    waiting_sleep.wait()
    assert not sleep.is_running()
    [run] = sleep.history(store)
    assert run["status"] == "interrupted" and run["finished"] is None
    assert run["summary"]["note"] == sleep.INTERRUPTED_NOTE
    assert run["summary"]["planned"] == ["decay"]
    # Shown so; the row itself waits for the next sleep.
    assert _stored(store, run["id"])["status"] == "running"


def test_the_next_sleep_records_the_killed_run_as_interrupted(store, waiting_sleep):
    [killed] = sleep.history(store)
    waiting_sleep.send_signal(signal.SIGKILL)
    waiting_sleep.wait()
    earlier = _left_running(store, started="2026-11-19T04:00:00+00:00")  # and one of an earlier release
    summary = sleep.run_sleep_collect(store, ["decay"])
    assert "decay" in summary["passes"]
    for run_id in (killed["id"], earlier):
        row = _stored(store, run_id)
        assert row["status"] == "interrupted"
        assert row["finished"] is None  # when its process ended is not known
        assert row["summary"]["note"] == sleep.INTERRUPTED_NOTE and row["summary"]["passes"] == {}
    assert _stored(store, earlier)["summary"]["planned"] == ["redact", "embed"]
    assert _stored(store, killed["id"])["summary"]["planned"] == ["decay"]
    statuses = store.rows("SELECT status FROM runs WHERE kind = 'sleep' ORDER BY id")
    assert [r["status"] for r in statuses] == ["interrupted", "interrupted", "ok"]


def test_a_running_row_while_no_sleep_holds_the_lock_is_shown_interrupted(store):
    older = _left_running(store, started="2026-11-19T04:00:00+00:00")
    newer = _left_running(store, summary={"passes": {}, "planned": ["lessons"], "dry_run": False})
    shown = _shown(store)
    for run_id in (older, newer):
        assert shown[run_id]["status"] == "interrupted"
        assert shown[run_id]["summary"]["note"] == sleep.INTERRUPTED_NOTE
    assert shown[older]["summary"]["planned"] == ["redact", "embed"]
    assert shown[older]["summary"]["passes"] == {}  # as a finished run's: what each pass did


def test_while_a_sleep_holds_the_lock_only_the_newest_running_row_is_running(store):
    older = _left_running(store, started="2026-11-19T04:00:00+00:00")
    newer = _left_running(store)
    holder = _child(LOCK_THAT_WAITS)
    try:
        assert sleep.is_running()
        shown = _shown(store)
        assert shown[newer]["status"] == "running"
        assert shown[older]["status"] == "interrupted"
    finally:
        holder.kill()
        holder.wait()
    assert {run["status"] for run in sleep.history(store)} == {"interrupted"}


def test_remem_morning_json_shows_the_interrupted_run(store, cli):
    run_id = _left_running(store)
    result = cli("morning", "--json")
    assert result.exit_code == 0, result.output
    [run] = json.loads(result.stdout)["runs"]
    assert run["id"] == run_id and run["status"] == "interrupted"
    assert run["summary"]["note"] == sleep.INTERRUPTED_NOTE


def test_a_dry_run_going_on_is_never_shown_as_interrupted(store):
    """A dry run holds no lock: a row it kept 'running' would look like an interrupted run."""
    steps = sleep.run_sleep(store, ["decay"], dry_run=True)
    next(steps)  # under way
    assert [run["status"] for run in sleep.history(store)] == []
    for _ in steps:
        pass
    assert [run["status"] for run in sleep.history(store)] == ["dry-run"]


def test_a_sleep_starting_while_the_lock_is_looked_at_is_not_turned_away(store, monkeypatch):
    """is_running takes the lock for an instant; a sleep starting in that instant waits it out."""
    import fcntl
    import os
    import time

    sleep.lock_path().parent.mkdir(parents=True, exist_ok=True)
    looking = os.open(sleep.lock_path(), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(looking, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a reader, mid-look
    real_sleep = time.sleep

    def look_ends(seconds: float) -> None:  # the sleep's first wait: the reader lets go
        fcntl.flock(looking, fcntl.LOCK_UN)
        real_sleep(0)

    monkeypatch.setattr(time, "sleep", look_ends)
    try:
        with sleep.sleep_lock():
            assert sleep.is_running()
    finally:
        os.close(looking)
    assert not sleep.is_running()


# A child process that runs a real sleep and kills itself (SIGKILL, as `kill -9`) the moment the
# pass named on its command line starts: the passes before it have committed, none after ran.
SLEEP_KILLED_AT = """
import os, signal, sys
from remem.engine.sleep import run_sleep
from remem.engine.store import Store

with Store() as store:
    for event in run_sleep(store):
        if event.pass_name == sys.argv[1] and event.message == "starting":
            os.kill(os.getpid(), signal.SIGKILL)
"""


def _session_with_pushback(folder: Path) -> Path:
    """A Claude Code transcript: the agent hands back after using pip, the person pushes back."""
    sid = "33333333-2222-4333-8444-555555555555"
    records = [("user", "install the dependencies"),
               ("assistant", "Done: I ran pip install -r requirements.txt."),
               ("user", "no, use uv not pip to install packages"),
               ("assistant", "Sorry: uv pip install -r requirements.txt it is.")]
    lines = [json.dumps({"type": role, "sessionId": sid, "uuid": f"u{n}", "cwd": "/home/dev/shop",
                         "timestamp": f"2026-11-20T10:00:{n:02d}.000Z",
                         "message": {"role": role, "content": text} if role == "user" else
                         {"id": f"m{n}", "role": role, "model": "claude-x",
                          "content": [{"type": "text", "text": text}]}})
             for n, (role, text) in enumerate(records)]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_what_a_killed_sleep_learned_is_told_by_the_next_sleeps_report(store, monkeypatch, tmp_path):
    """Killed after its lessons pass committed a lesson: the next sleep learns nothing new (the
    lesson is there), and its morning report still tells the lesson the killed run learned."""
    from remem import paths
    from remem.engine import ingest

    monkeypatch.setenv("REMEM_NOW", "2026-11-20T23:00:00+00:00")
    assert ingest.ingest_paths(store, [_session_with_pushback(tmp_path / "shop")])["by_kind"]["correction"] == 1
    monkeypatch.setenv("REMEM_NOW", "2026-11-21T04:15:00+00:00")
    killed = subprocess.run([sys.executable, "-c", SLEEP_KILLED_AT, "merge"], check=False, cwd=str(ROOT))
    assert killed.returncode == -signal.SIGKILL
    [lesson] = store.rows("SELECT id, text FROM lessons WHERE status = 'active'")
    [killed_run] = sleep.history(store)
    assert killed_run["status"] == "interrupted"
    assert killed_run["summary"]["events"]["learned"] == [lesson["id"]]  # recorded after its pass

    monkeypatch.setenv("REMEM_NOW", "2026-11-21T04:20:00+00:00")
    summary = sleep.run_sleep_collect(store)
    assert summary["events"]["learned"] == []  # this run learned nothing itself
    stored = _stored(store, killed_run["id"])
    assert stored["status"] == "interrupted" and stored["summary"]["note"] == sleep.INTERRUPTED_NOTE
    assert stored["summary"]["events"]["learned"] == [lesson["id"]]
    assert stored["summary"]["passes"]["lessons"]["created"] == 1
    assert "merge" not in stored["summary"]["passes"]  # it never ran
    report = paths.morning_path().read_text()
    learned = report.split("## Learned\n", 1)[1].split("\n## ", 1)[0]
    assert f"- {lesson['text']} (correction, seen 1×, {lesson['id']})" in learned
    assert "2 runs" in report


# --------------------------------------------------------------------------- the TUI

@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_tuis_sleep_tab_shows_an_interrupted_run(store, monkeypatch):
    from tests.tui.conftest import new_app, settle

    monkeypatch.setenv("REMEM_NOW", "2026-11-20T12:00:00+00:00")
    with store.write() as conn:
        conn.execute("INSERT INTO runs (kind, started, finished, status, summary) VALUES ('sleep', "
                     "'2026-11-20T03:00:00+00:00', '2026-11-20T03:00:02+00:00', 'ok', "
                     "'{\"passes\": {\"lessons\": {\"created\": 2}}}')")
    left = _left_running(store)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        table = app.query_one("#sleep-history")
        await settle(pilot, lambda: table.row_count == 2)
        assert table.row_count == 2
        assert str(table.get_row(str(left))[3]) == "interrupted"
        assert "did not finish" in str(table.get_row(str(left))[4])  # not "nothing to do"
