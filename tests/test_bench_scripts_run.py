"""Every benchmark in bench/ still runs, at its smallest size.

The figures in docs/BENCHMARKS.md come from these scripts; one that no longer runs (an engine
call whose arguments changed under it) leaves its figures unreproducible without anyone
noticing. Here each runs once on a tiny synthetic memory and must exit 0 and print its table.
Speed is not checked: budgets are the benchmarks' own business, not the tests'.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# (script, smallest arguments). bench/kill.py (crash recovery, ~25 s even at its smallest) is
# covered by tests/test_crash.py; bench/locomo.py needs LoCoMo's data (its parts are tested in
# tests/test_recall.py and tests/test_events.py); bench/lockhold.py needs a memory to copy.
SMALLEST = [
    ("share.py", ["--lessons", "20"]),
    ("sleep.py", ["--episodes", "300", "--new", "20"]),
    ("ingest.py", ["--mb", "1"]),
    ("embed.py", ["--n", "200"]),
    ("lifecycle.py", ["--n", "300"]),
    ("sources.py", ["--events", "100", "--codex-mb", "1"]),
    ("recall.py", ["--sizes", "300", "--queries", "5", "--cold", "1"]),
    ("tui.py", ["--episodes", "300", "--lessons", "20", "--primes", "50", "--runs", "1"]),
    ("hooks.py", ["--runs", "2", "--lessons", "20", "--episodes", "300"]),
    ("proxy.py", ["--requests", "5", "--streams", "1"]),
    ("mcp.py", ["--size", "300", "--queries", "3", "--warmup", "1"]),
    ("compare.py", ["--episodes", "300", "--lessons", "20", "--primes", "50"]),
    ("measure.py", ["--episodes", "300", "--lessons", "20", "--primes", "50", "--days", "30"]),
    ("prime.py", []),
    ("stress.py", ["--workers", "1", "--hooks", "3", "--recalls", "2", "--remembers", "2",
                   "--base-sessions", "2", "--new-sessions", "2"]),
]


def test_every_benchmark_script_is_listed_here_or_said_why_not():
    listed = {script for script, _ in SMALLEST} | {"kill.py", "locomo.py", "lockhold.py", "common.py",
                                                    "synth.py"}
    present = {p.name for p in (ROOT / "bench").glob("*.py")}
    assert present - listed == set(), "a new benchmark: add it to SMALLEST"


@pytest.mark.parametrize("script, args", SMALLEST, ids=[s for s, _ in SMALLEST])
def test_the_benchmark_runs_at_its_smallest_size(script, args, home, tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    run = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], capture_output=True,
                         text=True, timeout=300, cwd=str(ROOT), env=env)
    assert run.returncode == 0, f"{script} exited {run.returncode}: {run.stderr[-2000:]}"
    assert run.stdout.strip(), f"{script} printed nothing"
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
