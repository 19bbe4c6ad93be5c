"""Kill test: a `remem ingest` and a `remem sleep` SIGKILLed at random points, each time
followed by a run that completes. Every time: PRAGMA integrity_check ok, both FTS indexes in
step with their tables, no episode duplicated or lost against an uninterrupted run of the
same input, and the same lessons. bench/kill.py runs the same cycles more times.

REMEM_KILLS (default 10) sets the number of kills of each command.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from tests import reliability_kit as kit

KILLS = int(os.environ.get("REMEM_KILLS", "10"))
SYNC_KILLS = max(1, KILLS // 3)  # per side of a share sync


def assert_clean(result: dict[str, Any]) -> None:
    where = f"(killed at {result['at']:.2f}s)"
    assert result["integrity"] == "ok", where
    assert result["fts"] == {"episodes_fts": "ok", "lessons_fts": "ok"}, where
    assert result["duplicates"] == 0, where
    assert result["lost"] == 0 and result["extra"] == 0, where
    assert result["lessons_same"], where


@pytest.fixture(scope="module")
def prep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return kit.prepare_kill(tmp_path_factory.mktemp("crash"))


def test_ingest_killed_at_random_points_completes_with_nothing_lost(prep, tmp_path):
    rng = random.Random(3)
    results = [kit.kill_cycle("ingest", prep, tmp_path / "work" / "home", rng, fresh=True)
               for _ in range(KILLS)]
    for result in results:
        assert_clean(result)
    assert any(r["killed"] for r in results)


def test_sleep_killed_at_random_points_completes_like_an_uninterrupted_sleep(prep, tmp_path):
    rng = random.Random(5)
    results = [kit.kill_cycle("sleep", prep, tmp_path / "work" / "home", rng, fresh=True)
               for _ in range(KILLS)]
    for result in results:
        assert_clean(result)
    assert any(r["killed"] for r in results)


@pytest.fixture(scope="module")
def sync_prep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return kit.prepare_sync_kill(tmp_path_factory.mktemp("sync-crash"))


@pytest.mark.parametrize("side", ["export", "receive"])
def test_share_sync_killed_at_random_points_leaves_no_torn_file_and_completes(sync_prep, tmp_path, side):
    rng = random.Random(7 if side == "export" else 9)
    results = [kit.sync_kill_cycle(side, sync_prep, tmp_path / "work", rng) for _ in range(SYNC_KILLS)]
    for result in results:
        assert result["clean"], result
    assert any(r["killed"] for r in results)


KILLED_AS_IT_MAKES_THE_MEMORY = """
import os, sqlite3, sys
real_connect = sqlite3.connect
def connect(path, *args, **kwargs):
    conn = real_connect(path, *args, **kwargs)
    if os.path.basename(str(path)) == "memory.db":
        os._exit(9)  # killed the moment the memory's own file is opened, before anything else
    return conn
sqlite3.connect = connect
from remem.engine.store import Store
Store()
"""


def test_a_first_run_killed_while_making_the_memory_leaves_one_the_next_run_opens(home):
    """A first ingest or hook-spawned ingest killed as it makes memory.db must not leave a
    0-byte file: that is refused as a memory lost (rightly, for a file that was a memory)."""
    import subprocess
    import sys

    from tests.conftest import ROOT, run_remem

    killed = subprocess.run([sys.executable, "-c", KILLED_AS_IT_MAKES_THE_MEMORY], cwd=str(ROOT),
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == 9, killed.stderr
    db = home / "memory.db"
    assert db.exists() and db.stat().st_size > 0
    assert not [p for p in home.iterdir() if p.name.endswith(".new")]  # nothing left beside it
    status = run_remem("status")
    assert status.returncode == 0, status.stderr


def test_what_a_run_killed_while_making_the_memory_left_beside_it_is_cleared_later(home):
    import os
    import time

    from remem.engine.store import Store

    home.mkdir(parents=True, exist_ok=True)
    stale = home / ".memory.db.4242.new"
    stale.write_bytes(b"")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = home / ".memory.db.4243.new"  # another maker's, this minute: not ours to touch
    fresh.write_bytes(b"")
    with Store():
        pass
    assert not stale.exists() and fresh.exists()
