"""How a sleep that ends early records its end: stopped by Ctrl-C it is `interrupted`, with the
note that it did not finish; failed, it is `error`, with the failure's one line as its note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.engine import sleep
from remem.engine.store import Store
from remem.errors import RememError
from tests.conftest import ROOT, run_remem


def last_run(store: Store) -> dict:
    row = store.one("SELECT status, finished, summary FROM runs WHERE kind = 'sleep' ORDER BY id DESC LIMIT 1")
    return {**row, "summary": json.loads(row["summary"])}


# `remem sleep` as the person runs it, sent SIGINT (what Ctrl-C sends) by itself as its verify
# pass starts: the signal is real, only its moment is chosen.
SIGINT_AT_VERIFY = """
import os, runpy, signal, sys
from remem.engine import sleep_passes

real = sleep_passes.PASS_FUNCTIONS["verify"]

def verify(ctx):
    os.kill(os.getpid(), signal.SIGINT)
    yield from real(ctx)

sleep_passes.PASS_FUNCTIONS["verify"] = verify
sys.argv = ["remem", "sleep"]
runpy.run_module("remem", run_name="__main__")
"""


def test_a_sleep_stopped_by_sigint_is_recorded_interrupted_with_its_note(home):
    assert run_remem("remember", "Use uv, not pip.", "--kind", "correction").returncode == 0
    child = subprocess.run([sys.executable, "-c", SIGINT_AT_VERIFY], cwd=str(ROOT), capture_output=True,
                           text=True, timeout=300, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert child.returncode == 130 and "sleep interrupted" in child.stderr, child.stderr
    with Store() as store:
        run = last_run(store)
    assert run["status"] == "interrupted" and run["finished"]
    assert run["summary"]["note"] == sleep.STOPPED_NOTE and run["summary"]["note"].startswith("did not finish")
    assert {"redact", "embed", "lessons", "merge"} <= set(run["summary"]["passes"])  # what it finished
    assert "verify" not in run["summary"]["passes"]
    shown = run_remem("morning", "--json").json()["runs"][0]
    assert shown["status"] == "interrupted" and shown["summary"]["note"] == sleep.STOPPED_NOTE
    done = run_remem("sleep", "--json")
    assert done.returncode == 0, done.stderr
    with Store() as store:
        assert [r["status"] for r in sleep.history(store)] == ["ok", "interrupted"]


def test_a_fake_ctrl_c_while_progress_is_shown_records_interrupted_and_lets_the_lock_go(store):
    """Ctrl-C lands in whoever shows the progress (the CLI's bars) as often as in a pass (the
    key press is faked there: a test cannot time it)."""
    def show(event: sleep.Progress) -> None:
        if event.pass_name == "decay":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sleep.run_sleep_collect(store, on_progress=show)
    run = last_run(store)
    assert run["status"] == "interrupted" and run["summary"]["note"] == sleep.STOPPED_NOTE
    assert not sleep.is_running()  # the run is over: another sleep may start now
    assert sleep.run_sleep_collect(store, passes=["decay"])["passes"]["decay"] is not None


def test_a_failed_sleep_is_recorded_error_with_its_one_line(store, home: Path):
    missing = home.parent / "no-such-model"
    (home / "config.toml").write_text(f'[embed]\nmodel = "{missing}"\n')
    with pytest.raises(RememError) as failed:
        sleep.run_sleep_collect(store)
    run = last_run(store)
    assert run["status"] == "error" and run["finished"]
    note = run["summary"]["note"]
    assert note == "failed: " + " ".join(str(failed.value).split()) and str(missing) in note
    assert "\n" not in note

