"""What a hook says when it gives up: past its budget after choosing a lesson (and `remem doctor`
then calls it failed), a session-end ingest that cannot store the session, a read-only memory
said once. Real store, real bundled model, real hook and ingest processes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.test_hooks import _shown_session, fixture, primes, run_hook, seed
from tests.test_robustness import payload, remem, shown_session, unprivileged
from tests.test_setup import agents_home  # noqa: F401  (fixture)

AN_HOUR = 3600.0


@pytest.fixture
def seeded(store):
    seed(store)
    return store


def _log(home: Path) -> str:
    log = home / "logs" / "remem.log"
    return log.read_text() if log.exists() else ""


# ------------------------------------------------------------------------------ past the budget

def test_a_hook_that_chose_a_lesson_past_its_budget_says_so_in_one_line_budget_started_an_hour_ago(
        seeded, home, capsys):
    """A machine slower than the budget is not one a test can count on: the budget is started an
    hour before the call instead (run's own `start`), so the lesson is always chosen too late."""
    from remem import hooks

    out = hooks.run("prompt", "claude-code", _shown_session(fixture("claude-code", "prompt")),
                    start=time.monotonic() - AN_HOUR)
    assert out == "" and primes(seeded) == []
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1, said
    assert said.startswith("remem hook: prompt (claude-code) skipped: past the hook's budget (1000 ms: "
                           "prime.timeout_ms) when its lesson was chosen; nothing shown"), said
    assert "`remem config set prime.timeout_ms 2000`" in said
    assert said[len("remem hook: "):] in _log(home)

    # The same call within its budget shows the lesson: what was dropped was a real choice.
    shown = hooks.run("prompt", "claude-code", _shown_session(fixture("claude-code", "prompt")))
    assert "docker" in shown and len(primes(seeded)) == 1
    assert capsys.readouterr().err == ""


def test_a_hook_late_at_the_cap_names_no_setting_to_raise(seeded, home, capsys, monkeypatch):
    from remem import config, hooks

    monkeypatch.setenv(config.HOOK_CAP_ENV, "3000")
    config.set_value("prime.timeout_ms", 3000)
    hooks.run("prompt", "claude-code", _shown_session(fixture("claude-code", "prompt")),
              start=time.monotonic() - AN_HOUR)
    said = capsys.readouterr().err
    assert "past the hook's budget (3000 ms: prime.timeout_ms)" in said
    assert "3000 ms is the most a hook may take" in said and "remem config set" not in said


# A hook run by a machine an hour slower than its budget: this install, its budget started an
# hour before the hook runs (the only thing changed).
SLOW_MACHINE = f"""#!{sys.executable}
import time
from remem import hooks
_run = hooks.run
def run(event, agent, payload, *, start=None):
    return _run(event, agent, payload, start=time.monotonic() - {AN_HOUR})
hooks.run = run
from remem.entry import main
main()
"""


def _wire_claude_hooks_to(program: Path) -> None:
    from remem.engine.setup_edit import remem_argv

    ours = " ".join(shlex.quote(a) for a in remem_argv())
    path = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                if hook["command"].startswith(ours + " "):
                    hook["command"] = shlex.quote(str(program)) + hook["command"][len(ours):]
    path.write_text(json.dumps(settings, indent=2))


@pytest.mark.parametrize("timeout_ms, fix", [(1000, "remem config set prime.timeout_ms 2000"),
                                             (60000, "top   (find what keeps this machine busy")])
def test_doctor_calls_a_hook_past_its_budget_failed_on_a_machine_an_hour_slow(
        cli, agents_home, seeded, tmp_path, timeout_ms, fix):
    from remem import config

    config.set_value("prime.timeout_ms", timeout_ms)  # 60000: the cap the tests set (conftest)
    assert cli("setup", "--yes", "--agent", "claude-code").exit_code == 0
    slow = tmp_path / "slow" / "remem"
    slow.parent.mkdir()
    slow.write_text(SLOW_MACHINE)
    slow.chmod(0o755)
    _wire_claude_hooks_to(slow)

    res = cli("doctor", "--json")
    report = json.loads(res.stdout)
    failed = {h["event"]: h["error"] for h in report["hooks"] if not h["ok"]}
    # The stop hook's sample never chooses (stop_hook_active); the others ran out of time.
    assert set(failed) == {"UserPromptSubmit", "PreToolUse"}, report["hooks"]
    assert all("past the hook's budget" in error for error in failed.values()), failed
    named = [p for p in report["problems"] if p["problem"].startswith("claude-code hook ")]
    assert len(named) == 2 and all(p["fix"].startswith(fix) for p in named), named
    assert res.exit_code == 1


# ------------------------------------------------------------------------------ session end

def _wait_until_ended(home: Path) -> None:
    """Until the detached ingest the hook started has exited (bounded; not a timing check)."""
    from tests.real_agents import INGEST_TIMEOUT_S, ingest_pid, running

    deadline = time.monotonic() + INGEST_TIMEOUT_S
    pid = None
    while time.monotonic() < deadline:
        pid = pid or ingest_pid(home)
        if pid is not None and not running(pid):
            return
        time.sleep(0.1)
    if pid is not None and running(pid):
        os.kill(pid, signal.SIGTERM)
    pytest.fail(f"the session-end ingest did not end; log: {_log(home)}")


@pytest.mark.parametrize("damage, said", [
    ("memory.db", "memory.db is not a SQLite database"),
    ("config.toml", "config.toml is not valid TOML"),
])
def test_a_session_end_ingest_that_cannot_store_the_session_leaves_its_line_in_the_log(
        home, tmp_path, damage, said):
    home.mkdir(parents=True, exist_ok=True)
    (home / damage).write_text("[prime" if damage == "config.toml" else "this is not sqlite at all" * 40)
    transcript = tmp_path / "session.jsonl"
    transcript.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n')
    res = run_hook("session-end", {"session_id": "s1", "transcript_path": str(transcript)})
    assert res.returncode == 0 and res.stdout == "" and res.stderr == ""  # fast and quiet, as before
    _wait_until_ended(home)
    lines = _log(home).splitlines()
    started = next(i for i, line in enumerate(lines) if "session-end: ingesting" in line)
    failed = [line for line in lines[started + 1:] if line.startswith("remem: ")]
    assert len(failed) == 1 and said in failed[0], lines


def test_a_session_end_ingest_that_stores_the_session_adds_nothing_to_the_log(home, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n')
    res = run_hook("session-end", {"session_id": "s1", "transcript_path": str(transcript)})
    assert res.returncode == 0 and res.stderr == ""
    _wait_until_ended(home)
    assert not [line for line in _log(home).splitlines() if line.startswith("remem: ")]


# ------------------------------------------------------------------------------ read-only, said once

def test_a_read_only_memory_is_described_by_its_own_line_not_wrapped_again(home):
    from remem.engine.store import Store, StoreReadOnly
    from remem.errors import store_problem
    from remem.hooks import _describe

    with Store() as store:
        store.conn.execute("PRAGMA query_only = ON")  # what a read-only file does to writes
        with pytest.raises(StoreReadOnly) as caught:
            with store.write() as conn:
                conn.execute("INSERT INTO tags (memory_id, tag) VALUES ('a', 'b')")
    exc = caught.value
    assert _describe(exc) == str(exc)
    assert store_problem(exc) == ("readonly", str(exc), exc.fix)
    assert str(exc).count("chmod u+w") == 1


def test_a_hook_on_a_read_only_memory_names_the_chmod_once(home, tmp_path):
    from remem.engine.store import Store

    prefix = unprivileged(tmp_path)
    with Store() as store:
        seed(store)
    (home / "logs").mkdir(exist_ok=True)
    everything = [home, *home.rglob("*")]
    for path in everything:
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        hook, _ = remem("hook", "prompt", prefix=prefix, input=payload(shown_session()))
    finally:
        for path in everything:
            path.chmod(path.stat().st_mode | 0o200)
    line = hook.stderr.strip()
    assert hook.returncode == 0 and hook.stdout == "" and len(line.splitlines()) == 1, line
    assert line.count("read-only") == 1 and line.count("chmod u+w") == 1, line
