"""The copy kept before a schema upgrade, seen from hooks and from several remem at once; and an
import that meets a memory forgotten on one side and recalled on the other."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem import paths
from remem.engine import backup as backup_mod
from remem.engine import store as store_mod
from remem.engine.store import MIGRATIONS, Store
from tests.conftest import ROOT, run_remem

OLD = len(MIGRATIONS) - 1
FIXTURES = Path(__file__).parent / "fixtures" / "hooks"


def _old_memory(n: int = 50) -> Path:
    """The home's memory one schema behind this remem, with n notes in it."""
    with Store(migrate_upto=OLD) as old:
        old.put_episodes([{"kind": "note", "title": f"note {i}", "gist": "x " * 200} for i in range(n)])
        return old.path


def _version(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def _copies() -> list[Path]:
    return sorted(paths.backups_dir().glob(f"pre-upgrade-schema{OLD}-*.db"))


# --------------------------------------------------------------------------- hooks

def test_a_hook_never_upgrades_an_old_memory_it_logs_one_line_and_the_next_command_does(home):
    db = _old_memory()
    payload = json.loads((FIXTURES / "claude-code.prompt.json").read_text())
    res = run_remem("hook", "prompt", "--agent", "claude-code", input=json.dumps(payload))
    assert res.returncode == 0, res.stderr  # fails open
    said = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and "the memory needs an upgrade" in said[0], res.stderr
    assert "any remem command does it" in said[0]
    assert "the memory needs an upgrade" in paths.log_file().read_text()
    assert _version(db) == OLD  # not migrated
    assert not paths.backups_dir().exists() or not list(paths.backups_dir().iterdir())  # nothing copied
    res = run_remem("status")
    assert res.returncode == 0, res.stderr
    assert _version(db) == len(MIGRATIONS) and len(_copies()) == 1


# --------------------------------------------------------------------------- copies cut short

def test_a_copy_cut_short_is_removed_by_the_next_upgrade(home):
    db = _old_memory()
    folder = paths.backups_dir()
    folder.mkdir(parents=True)
    left = folder / f"pre-upgrade-schema{OLD}-20260101-000000.db.k1ll3d.partial"
    left.write_bytes(b"\0" * 100_000)  # as a remem killed mid-copy leaves it
    with Store() as store:
        assert store.scalar("PRAGMA user_version") == len(MIGRATIONS)
    assert not left.exists()
    assert not list(folder.glob("*.partial")) and len(_copies()) == 1
    assert _version(db) == len(MIGRATIONS)


def test_the_rotation_removes_an_hour_old_copy_cut_short_and_leaves_a_fresh_one(home):
    folder = paths.backups_dir()
    folder.mkdir(parents=True)
    old = folder / f"pre-upgrade-schema{OLD}-20260101-000000.db.k1ll3d.partial"
    fresh = folder / f"pre-upgrade-schema{OLD}-20260101-000001.db.wr1t1ng.partial"
    for partial in (old, fresh):
        partial.write_bytes(b"\0" * 1000)
    hour_ago = time.time() - 7200
    os.utime(old, (hour_ago, hour_ago))
    with Store() as store:
        backup_mod.rotated_backup(store, keep=3)
    assert not old.exists() and fresh.exists()


# --------------------------------------------------------------------------- several at once

_OPEN = "import sys; from remem.engine.store import Store; Store(busy_timeout_ms=120_000).close()"


def _waiting_on(lock: Path) -> int:
    """How many processes wait for the flock on `lock` (Linux's /proc/locks marks them ->)."""
    if not lock.exists():
        return 0
    inode = f":{lock.stat().st_ino} "
    return sum(1 for line in Path("/proc/locks").read_text().splitlines()
               if "->" in line and "FLOCK" in line and inode in line + " ")


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads Linux's /proc/locks")
def test_three_remem_opening_an_old_memory_at_once_write_one_copy_and_all_open_it(home):
    db = _old_memory(200)
    # Another writer holds the memory while they start: none can upgrade it yet, so each of
    # them reads the old schema, whatever the order they start in.
    writer = sqlite3.connect(str(db), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN], cwd=str(ROOT), env=dict(os.environ),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    lock = paths.backups_dir() / ".upgrade.lock"
    try:
        deadline = time.monotonic() + 90
        # One holds the upgrade and the two others wait for it, or (the fault this guards
        # against) two or more have each written a copy already.
        while len(_copies()) < 2 and _waiting_on(lock) < 2:
            assert time.monotonic() < deadline, [p.poll() for p in procs]
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs if p.poll() is not None]
            time.sleep(0.05)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    outcomes = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outcomes
    assert len(_copies()) == 1
    assert _version(db) == len(MIGRATIONS)
    assert not list(paths.backups_dir().glob("*.partial"))


# --------------------------------------------------------------------------- the copy's failed writes

_FULL = """
import resource, signal, sys
from remem.entry import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
sys.argv = ["remem", *sys.argv[2:]]
main()
"""


def test_an_upgrade_copy_cut_short_by_a_file_size_limit_faking_a_full_disk_refuses_in_one_line(home):
    # The failed writes of a copy are named once, for a backup and for the copy before an
    # upgrade alike.
    assert backup_mod.WRITE_ERRORS is store_mod.WRITE_ERRORS
    assert "SQLITE_IOERR_TRUNCATE" in store_mod.WRITE_ERRORS
    db = _old_memory(300)
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    limit = 100_000
    assert db.stat().st_size > 2 * limit
    proc = subprocess.run([sys.executable, "-c", _FULL, str(limit), "status"], capture_output=True,
                          text=True, cwd=str(ROOT), env=dict(os.environ), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "only after keeping a copy" in line, line
    assert _version(db) == OLD
    assert not _copies() and not list(paths.backups_dir().glob("*.partial"))


# --------------------------------------------------------------------------- import

def _archived(home_dir: Path, memory_id: str) -> int:
    conn = sqlite3.connect(f"file:{home_dir / 'memory.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT archived FROM episodes WHERE id = ?", (memory_id,)).fetchone()[0]
    finally:
        conn.close()


def _touched(home_dir: Path, memory_id: str) -> str:
    conn = sqlite3.connect(f"file:{home_dir / 'memory.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT last_touched FROM episodes WHERE id = ?", (memory_id,)).fetchone()[0]
    finally:
        conn.close()


def _two_homes_sharing_a_memory(tmp_path: Path, cli) -> tuple[Path, Path, str]:
    a, b = tmp_path / "a", tmp_path / "b"
    res = cli("--home", str(a), "remember", "the deploy script needs the staging token", "--json")
    assert res.exit_code == 0, res.output
    memory_id = json.loads(res.stdout)["id"]
    e0 = tmp_path / "e0.jsonl"
    assert cli("--home", str(a), "export", str(e0)).exit_code == 0
    assert cli("--home", str(b), "import", str(e0)).exit_code == 0
    return a, b, memory_id


def _recall_touches(cli, where: Path, memory_id: str) -> None:
    res = cli("--home", str(where), "recall", "deploy script staging token", "--json")
    assert res.exit_code == 0 and memory_id in res.stdout, res.output


def test_a_forget_elsewhere_wins_over_a_recall_here(home, tmp_path, cli):
    a, b, memory_id = _two_homes_sharing_a_memory(tmp_path, cli)
    assert cli("--home", str(a), "forget", memory_id).exit_code == 0
    e1 = tmp_path / "e1.jsonl"
    assert cli("--home", str(a), "export", str(e1)).exit_code == 0
    _recall_touches(cli, b, memory_id)
    assert _touched(b, memory_id) > _touched(a, memory_id)  # touched here after the forget there
    res = cli("--home", str(b), "import", str(e1), "--json")
    assert res.exit_code == 0, res.output
    assert _archived(b, memory_id) == 1
    assert "kept" not in json.loads(res.stdout)
    assert cli("--home", str(b), "forget", "--undo", memory_id).exit_code == 0  # as documented
    assert _archived(b, memory_id) == 0


def test_a_recall_elsewhere_never_undoes_a_forget_here(home, tmp_path, cli):
    a, b, memory_id = _two_homes_sharing_a_memory(tmp_path, cli)
    assert cli("--home", str(b), "forget", memory_id).exit_code == 0
    _recall_touches(cli, a, memory_id)
    assert _touched(a, memory_id) > _touched(b, memory_id)  # the export's row is the later one
    e1 = tmp_path / "e1.jsonl"
    assert cli("--home", str(a), "export", str(e1)).exit_code == 0
    res = cli("--home", str(b), "import", str(e1))
    assert res.exit_code == 0, res.output
    assert _archived(b, memory_id) == 1
