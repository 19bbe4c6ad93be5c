"""A hook's time budget: never past the timeout `remem setup` gives the agent, and a wait for a
lock that a signal (the agent's SIGTERM) ends at once. Real store, real lock held by another
process, real hook processes."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import ROOT
from tests.test_hooks import fixture, run_hook, seed, session_in_arm

HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO tags (memory_id, tag) VALUES ('held', 'held')")
print("held", flush=True)
sys.stdin.read()  # until the test closes stdin
conn.execute("ROLLBACK")
"""


@pytest.fixture
def write_lock(store, home):
    """Another process holding the memory's write lock (BEGIN IMMEDIATE) until the test ends."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(home / "memory.db")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    yield holder
    holder.stdin.close()
    holder.wait(timeout=60)


@pytest.fixture
def seeded(store):
    seed(store)
    return store


def _setup_timeouts_ms() -> dict[str, int]:
    """The timeout of every hook `remem setup` writes, in ms, by (agent, event)."""
    from remem.engine import setup_json

    out = {}
    for agent, hooks in (("claude-code", setup_json.claude_hooks()), ("codex", setup_json.codex_hooks()),
                         ("gemini", setup_json.gemini_hooks())):
        for event, group in hooks.items():
            for hook in group["hooks"]:
                out[(agent, event)] = hook["timeout"] if agent == "gemini" else hook["timeout"] * 1000
    return out


def test_every_hook_budget_ends_before_the_timeout_setup_gives_the_agent(home, monkeypatch):
    from remem import config
    from remem.hooks import _budget

    monkeypatch.delenv(config.HOOK_CAP_ENV, raising=False)  # the agents' timeouts, not a test's

    wired = _setup_timeouts_ms()
    session_end = min(ms for (_, event), ms in wired.items() if event == "SessionEnd")
    others = min(ms for (_, event), ms in wired.items() if event != "SessionEnd")
    config.set_value("prime.timeout_ms", 60_000)  # accepted by config; no hook may use it
    for event in ("prompt", "pre-tool", "stop"):
        assert _budget(event)[0] == config.hook_budget_cap_ms(event) < others
    assert _budget("session-end")[0] == config.hook_budget_cap_ms("session-end") < session_end
    # setup writes the very numbers the cap is made from
    from remem.engine import setup_json

    assert (setup_json.HOOK_TIMEOUT_S, setup_json.CODEX_SESSION_END_TIMEOUT_S) == \
        (config.HOOK_TIMEOUT_S, config.CODEX_SESSION_END_TIMEOUT_S)
    config.set_value("prime.timeout_ms", 700)  # below the cap: as configured
    assert _budget("prompt")[0] / 1000 == 0.7


def test_a_budget_above_what_the_agent_waits_is_cut_while_the_memory_stays_locked(seeded, write_lock, home,
                                                                                    monkeypatch):
    from remem import config

    monkeypatch.delenv(config.HOOK_CAP_ENV, raising=False)

    config.set_value("prime.timeout_ms", 60_000)
    payload = fixture("claude-code", "prompt", session_id=session_in_arm(False, "capped"))
    res = run_hook("prompt", payload)
    assert res.returncode == 0 and res.stdout == ""
    cap = config.hook_budget_cap_ms("prompt")
    # the cap is named, not prime.timeout_ms alone (60000 ms was never what the hook waited)
    capped = f"({cap} ms: prime.timeout_ms, capped below the agent's {config.HOOK_TIMEOUT_S} s timeout)"
    assert f"past the hook's budget {capped}" in res.stderr, res.stderr
    assert capped in (home / "logs" / "remem.log").read_text()


def test_a_capped_budget_is_named_when_the_hook_input_never_ends(home, monkeypatch):
    from remem import config

    monkeypatch.delenv(config.HOOK_CAP_ENV, raising=False)
    config.set_value("prime.timeout_ms", 60_000)
    hook = subprocess.Popen([sys.executable, "-m", "remem", "hook", "prompt"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        hook.stdin.write('{"prompt": "run the tests"')  # no closing brace, stdin left open
        hook.stdin.flush()
        hook.wait(timeout=120)  # it gives up on its own, stdin still open
    finally:
        hook.stdin.close()
    out, err = hook.stdout.read(), hook.stderr.read()
    assert hook.returncode == 0 and out == ""
    cap = config.hook_budget_cap_ms("prompt")
    assert (f"the hook input did not end within the hook's budget ({cap} ms: prime.timeout_ms, capped "
            f"below the agent's {config.HOOK_TIMEOUT_S} s timeout): ") in err, err


def test_config_set_says_hooks_use_at_most_the_cap(home, cli, monkeypatch):
    from remem import config

    monkeypatch.delenv(config.HOOK_CAP_ENV, raising=False)
    cap = config.hook_budget_cap_ms()
    res = cli("config", "set", "prime.timeout_ms", "10000")
    assert res.exit_code == 0 and res.stdout.startswith("prime.timeout_ms = 10000"), res.output
    assert res.stderr.count("\n") == 1 and f"hooks use at most {cap} ms of it" in res.stderr, res.stderr
    assert config.get("prime.timeout_ms") == 10000  # set as asked all the same
    at_cap = cli("config", "set", "prime.timeout_ms", str(cap))
    assert at_cap.exit_code == 0 and at_cap.stderr == "", at_cap.stderr
    other = cli("config", "set", "recall.k", "8")
    assert other.exit_code == 0 and other.stderr == ""


class _Signalled(Exception):
    pass


def test_a_signal_ends_the_hook_stores_wait_for_a_lock_before_its_budget_runs_out(seeded, write_lock, home):
    """The hook's store (busy_step_ms) waits for the lock in short SQLite waits: a signal's
    Python handler runs between them, long before the whole wait would have ended. (One long
    SQLite wait held the handler, and so the agent's SIGTERM, off until it ended.)"""
    from remem.engine.store import Store

    budget_s = 30.0
    waiting = threading.Event()
    handled: list[float] = []

    def handler(signum, frame):
        if waiting.is_set():
            handled.append(time.monotonic())
            raise _Signalled()

    stop = threading.Event()

    def keep_signalling() -> None:
        # SIGUSR1 again and again until one lands while the store waits (which one does is
        # not known from outside; the handler ignores those that come before).
        waiting.wait()
        while not stop.is_set() and not handled:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
            stop.wait(0.02)

    previous = signal.signal(signal.SIGUSR1, handler)
    store = Store(home / "memory.db", busy_timeout_ms=int(budget_s * 1000), create=False, busy_step_ms=50)
    sender = threading.Thread(target=keep_signalling)
    sender.start()
    try:
        began = time.monotonic()
        with pytest.raises(_Signalled):
            waiting.set()
            store.conn.execute("BEGIN IMMEDIATE")
        assert write_lock.poll() is None  # the lock was still held: the signal, not the lock, ended it
        assert handled and handled[0] - began < budget_s  # before the wait's own end
    finally:
        stop.set()
        sender.join()
        signal.signal(signal.SIGUSR1, previous)
        store.close()


def test_doctor_names_a_prime_timeout_above_what_the_agents_wait(home, monkeypatch):
    from remem import config
    from remem.engine.doctor import diagnose

    monkeypatch.delenv(config.HOOK_CAP_ENV, raising=False)

    config.set_value("prime.timeout_ms", 8000)
    cap = config.hook_budget_cap_ms()
    found = [p for p in diagnose(run_hooks=False)["problems"] if "prime.timeout_ms" in p["problem"]]
    assert len(found) == 1 and found[0]["fix"] == f"remem config set prime.timeout_ms {cap}"
    assert "8000 ms" in found[0]["problem"] and f"{cap} ms" in found[0]["problem"]

    config.set_value("prime.timeout_ms", cap)
    assert not [p for p in diagnose(run_hooks=False)["problems"] if "prime.timeout_ms" in p["problem"]]


def test_the_test_only_cap_variable_replaces_the_cap_and_nothing_else(home, monkeypatch):
    """REMEM_HOOK_CAP_MS (docs/CONFIG.md, for loaded test machines) sets the cap; anything but
    a whole number leaves the agents' one."""
    from remem import config

    monkeypatch.delenv(config.HOOK_CAP_ENV, raising=False)
    usual = config.hook_budget_cap_ms("prompt")
    monkeypatch.setenv(config.HOOK_CAP_ENV, "60000")
    assert config.hook_budget_cap_ms("prompt") == config.hook_budget_cap_ms("session-end") == 60000
    assert config.hook_budget_ms(30000) == 30000
    for odd in ("", "-5", "1e9", "soon", "²", "0", "000"):
        monkeypatch.setenv(config.HOOK_CAP_ENV, odd)
        assert config.hook_budget_cap_ms("prompt") == usual


def test_a_cap_variable_of_zero_is_ignored_and_the_hook_still_primes(seeded, home, monkeypatch):
    """REMEM_HOOK_CAP_MS=0 once stopped every hook at once, the log blaming its input."""
    from remem import config

    monkeypatch.delenv(config.HOOK_CAP_ENV, raising=False)
    config.set_value("prime.timeout_ms", config.hook_budget_cap_ms())  # all the agents allow
    payload = fixture("claude-code", "prompt", session_id=session_in_arm(False, "zero-cap"))
    res = run_hook("prompt", payload, env={config.HOOK_CAP_ENV: "0"})
    assert res.returncode == 0 and "linux/amd64" in res.stdout, res.stderr
    log = home / "logs" / "remem.log"
    assert "did not end within" not in (log.read_text() if log.exists() else "")


def test_doctor_names_the_cap_variable_when_it_sets_the_cap(home, monkeypatch):
    from remem import config
    from remem.engine.doctor import diagnose

    def budget_problems() -> list[dict[str, str]]:
        return [p for p in diagnose(run_hooks=False)["problems"] if "prime.timeout_ms" in p["problem"]]

    config.set_value("prime.timeout_ms", 1000)
    monkeypatch.setenv(config.HOOK_CAP_ENV, "500")
    (found,) = budget_problems()
    assert config.HOOK_CAP_ENV in found["problem"] and "500 ms" in found["problem"]
    assert found["fix"] == f"unset {config.HOOK_CAP_ENV}"  # not a value config would take
    monkeypatch.setenv(config.HOOK_CAP_ENV, "0")  # ignored: the agents' cap, above 1000
    assert budget_problems() == []

