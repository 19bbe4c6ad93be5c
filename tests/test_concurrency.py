"""Concurrent writers with real processes: two sleeps never run at once, a SIGKILLed sleep's
lock is taken over, and hooks racing a write-heavy command still answer."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from tests import reliability_kit as kit


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with 100 ingested transcripts (a sleep over it takes a few seconds)."""
    root = tmp_path_factory.mktemp("conc")
    kit.make_transcripts(root / "t", 100, seed=21)
    home = root / "home"
    res = kit.run(["ingest", str(root / "t"), "--quiet"], kit.env_for(home))
    assert res.returncode == 0, res.stderr
    return home


def fresh_copy(ingested: Path, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    kit.copy_db(ingested, home)
    with sqlite3.connect(str(home / "memory.db")) as conn:  # give the embed pass work too
        conn.execute("UPDATE episodes SET embedding = NULL, space = NULL")
    return home


def test_sleeps_started_together_never_overlap(ingested, tmp_path):
    home = fresh_copy(ingested, tmp_path)
    env = kit.env_for(home)
    procs = [kit.spawn(["sleep", "--quiet"], env) for _ in range(3)]
    outs = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    ok = [o for o in outs if o[0] == 0]
    refused = [o for o in outs if o[0] != 0]
    assert ok, outs
    for code, _out, err in refused:
        assert code == 1 and "another sleep is running" in err and "Traceback" not in err
    conn = sqlite3.connect(str(home / "memory.db"))
    runs = conn.execute("SELECT started, finished FROM runs WHERE kind = 'sleep' ORDER BY started").fetchall()
    assert len(runs) == len(ok)  # a refused sleep leaves no run behind
    for (_s1, f1), (s2, _f2) in zip(runs, runs[1:]):
        assert f1 <= s2  # one after the other, never at once
    assert kit.check_db(home / "memory.db")["ok"]


def test_a_sigkilled_sleep_leaves_its_lock_and_the_next_sleep_takes_it_over(ingested, tmp_path):
    home = fresh_copy(ingested, tmp_path)
    env = kit.env_for(home)
    lock = home / "sleep.lock"
    # Vectors dropped: the embed pass has everything to do, so the sleep is still running
    # when it is killed, however fast the machine.
    with sqlite3.connect(str(home / "memory.db")) as conn:
        conn.execute("UPDATE episodes SET embedding = NULL, space = NULL")
    proc = kit.spawn(["sleep", "--json"], env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (lock.exists() and lock.read_text() == str(proc.pid)):
        time.sleep(0.02)
    assert lock.read_text() == str(proc.pid), "the sleep never took its lock"
    assert kit.kill_after(proc, 0.05)
    assert lock.read_text() == str(proc.pid)  # a stale lock: its process is gone
    done = kit.run(["sleep", "--json"], env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["passes"]["lessons"]["created"] >= 1
    assert lock.read_text() == ""
    assert kit.check_db(home / "memory.db")["ok"]


def test_hooks_answer_while_a_sleep_writes(ingested, tmp_path):
    """Prompt hooks fired during a sleep exit 0 with valid output and never report a lock."""
    home = fresh_copy(ingested, tmp_path)
    env = kit.env_for(home)
    first = kit.run(["sleep", "--quiet"], env)  # lessons for the hooks to find
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(str(home / "memory.db")) as conn:
        conn.execute("UPDATE episodes SET embedding = NULL, space = NULL")
    sleeper = kit.spawn(["sleep", "--quiet"], env)
    answers = []
    for i in range(12):
        payload = {"prompt": kit.PROMPTS[i % len(kit.PROMPTS)], "session_id": f"conc-{i}",
                   "cwd": "/home/dev/code/app1", "hook_event_name": "UserPromptSubmit"}
        answers.append(kit.run(["hook", "prompt"], env, input=json.dumps(payload)))
    assert sleeper.wait(timeout=300) == 0
    for res in answers:
        assert res.returncode == 0
        assert "locked" not in res.stderr.lower() and "busy" not in res.stderr.lower(), res.stderr
        if res.stdout.strip():
            json.loads(res.stdout)
    logs = "".join(p.read_text() for p in (home / "logs").glob("*.log")) if (home / "logs").exists() else ""
    assert "locked" not in logs.lower()


def test_a_backup_completes_while_another_process_keeps_writing(store, home, tmp_path):
    """The copy is one read snapshot: writes meanwhile neither block it nor restart it."""
    import subprocess
    import sys

    from remem.engine.backup import backup

    store.put_episodes([{"kind": "note", "title": f"note {i}", "gist": "words " * 1000} for i in range(1500)])
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "from remem.engine.store import Store\n"
        "s = Store(); n = 0\n"
        "while not os.path.exists(sys.argv[1]):\n"
        "    with s.write() as c:\n"
        "        c.execute(\"INSERT INTO primes (at, event, query) VALUES ('2026-01-01', 'prompt', 'x')\")\n"
        "    n += 1; time.sleep(0.002)\n"
        "print(n)\n"), str(stop)], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        dest = backup(store, tmp_path / "copy.db")
    finally:
        stop.write_text("")
        writes = int(writer.communicate(timeout=60)[0])
    assert writes > 10
    copy = sqlite3.connect(str(dest))
    assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert copy.execute("SELECT count(*) FROM episodes").fetchone()[0] == 1500


def test_a_decay_that_another_process_ran_meanwhile_is_not_applied_twice(store, home, monkeypatch):
    """The decay rules scan outside the write lock, so two may scan at once (a sleep and the
    server's background tasks); only the one that claims the run applies it."""
    from remem.engine import clock, lifecycle
    from remem.engine.store import Store

    store.put_episodes([{"id": "old", "kind": "note", "title": "the staging db is on 5433",
                         "at": "2026-01-01T00:00:00+00:00", "created": "2026-01-01T00:00:00+00:00",
                         "last_touched": "2026-01-01T00:00:00+00:00"}])
    other = Store()
    real_claim = lifecycle._claim

    def racing_claim(s, name, seen, stamp, cfg):
        if s is store:  # the other process scans, claims and applies between our scan and claim
            lifecycle.strength_decay(other, cfg)
        return real_claim(s, name, seen, stamp, cfg)

    monkeypatch.setattr(lifecycle, "_claim", racing_claim)
    with clock.frozen("2026-04-01T00:00:00+00:00"):  # 90 days: two half-lives of 45 days
        result = lifecycle.strength_decay(store)
    other.close()
    assert result["skipped"] == "ran elsewhere meanwhile"
    assert abs(store.episode("old")["strength"] - 0.25) < 1e-6  # decayed once, not to 0.0625
