"""A memory.db deleted by hand while its -wal and -shm stay: the next open sets them aside
instead of letting SQLite replay the deleted file's pages onto the new, empty memory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_remem

# A remem killed with the memory open: no close, so no checkpoint, and its last writes stay in
# the -wal it leaves behind. "checkpointed": its first note is in memory.db itself and only the
# later ones (which grow the file, so page 1 is in the log too) in the -wal: replayed onto a new
# file they make a damaged memory. "logged": nothing was checkpointed, so the -wal holds the
# whole memory: replayed, the deleted memory comes back.
_KILLED_WRITER = """
import os, sys
from remem.engine.store import Store
store = Store()
store.put_episodes([{"id": "0ld0ld0ld0ld0000", "kind": "note", "title": "the first kestrel note"}])
if sys.argv[1] == "checkpointed":
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
store.put_episodes([{"id": f"0ld0ld0ld0ld1{n:03d}", "kind": "note", "title": f"kestrel note {n}",
                     "gist": "kestrel " * 400} for n in range(20)])
os._exit(0)
"""

_OPEN_AT = """
import sys, time
from remem.engine.store import Store
start, name = float(sys.argv[1]), sys.argv[2]
while time.time() < start:
    pass
try:
    with Store() as s:
        s.put_episodes([{"id": name, "kind": "note", "title": "written by " + name}])
        print("ok")
except Exception as exc:
    print("FAIL", type(exc).__name__, exc)
"""


def _killed_with_its_log_left(home: Path, how: str = "checkpointed") -> None:
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, how], capture_output=True, text=True,
                          check=False, timeout=60, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert (home / "memory.db-wal").stat().st_size > 0  # the premise: a log with pages in it


def _memory_deleted_by_hand(home: Path, how: str = "checkpointed",
                            keep: tuple[str, ...] = ("-wal", "-shm")) -> dict[str, bytes]:
    """The memory as a person leaves it after `rm memory.db`; returns the log files left."""
    _killed_with_its_log_left(home, how)
    (home / "memory.db").unlink()
    for suffix in ("-wal", "-shm"):
        if suffix not in keep:
            (home / f"memory.db{suffix}").unlink()
    return {suffix: (home / f"memory.db{suffix}").read_bytes() for suffix in keep}


@pytest.mark.parametrize("how, keep", [("checkpointed", ("-wal", "-shm")), ("logged", ("-wal", "-shm")),
                                       ("checkpointed", ("-wal",))])
def test_a_log_left_by_a_deleted_memory_is_set_aside_not_replayed(home: Path, how: str, keep: tuple[str, ...],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from remem.engine.store import MIGRATIONS, Store

    left = _memory_deleted_by_hand(home, how, keep)
    capsys.readouterr()
    with Store() as store:
        assert store.scalar("PRAGMA integrity_check") == "ok"
        assert store.scalar("PRAGMA user_version") == len(MIGRATIONS)
        assert store.scalar("SELECT count(*) FROM episodes") == 0  # none of the deleted memory came back
        store.put_episodes([{"id": "n3wn3wn3wn3wn3w1", "kind": "note", "title": "the new memory's first"}])
    said = capsys.readouterr().err
    assert said.count("\n") == 1
    for suffix, content in left.items():
        kept = list(home.glob(f"memory.db{suffix}.orphaned-*"))
        assert [p.read_bytes() for p in kept] == [content]  # kept aside whole, not deleted
        assert f"memory.db{suffix} to {kept[0].name}" in said
    assert "memory.db was deleted but its write-ahead log was left: moved memory.db-wal to " in said
    with Store() as store:  # reopened: the new memory as written, nothing more moved or said
        assert [r["id"] for r in store.rows("SELECT id FROM episodes")] == ["n3wn3wn3wn3wn3w1"]
    assert capsys.readouterr().err == ""
    assert len(list(home.glob("memory.db-*.orphaned-*"))) == len(keep)


def test_commands_after_a_memory_deleted_by_hand_start_a_new_one_and_say_why(home: Path) -> None:
    _memory_deleted_by_hand(home)
    status = run_remem("status")
    assert status.returncode == 0, status.stderr
    assert "memory.db was deleted but its write-ahead log was left: moved memory.db-wal to " \
           "memory.db-wal.orphaned-" in status.stderr
    assert "damaged" not in status.stderr
    added = run_remem("remember", "the release branch is cut on Tuesdays")
    assert added.returncode == 0, added.stderr
    assert added.stderr == ""  # set aside once: the second command has nothing to say
    found = run_remem("list", "--json")
    assert found.returncode == 0, found.stderr
    assert "kestrel" not in found.stdout and "Tuesdays" in found.stdout


def test_a_log_beside_its_memory_is_left_alone(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The logs this must never touch: one left by a killed remem whose memory.db is still
    there (SQLite's recovery of the last writes), and the live one of a store still open."""
    from remem.engine.store import Store

    _killed_with_its_log_left(home)
    with Store() as store:
        assert store.scalar("SELECT count(*) FROM episodes") == 21  # the killed one's last writes too
        with Store() as other:  # a second open while the first one's log is live
            other.put_episodes([{"id": "0therother0ther1", "kind": "note", "title": "from the other"}])
        assert store.scalar("SELECT count(*) FROM episodes") == 22
    with Store() as store:
        assert store.scalar("SELECT count(*) FROM episodes") == 22
        assert store.scalar("PRAGMA integrity_check") == "ok"
    assert not list(home.glob("*orphaned*"))
    assert "was deleted" not in capsys.readouterr().err


def test_two_processes_opening_a_memory_deleted_by_hand_at_once_both_open_the_new_one(home: Path) -> None:
    from remem.engine.store import Store

    for round_ in range(3):
        for f in home.glob("memory.db*"):
            if not f.name.endswith((".in-use", ".lock")):
                f.unlink()
        _memory_deleted_by_hand(home)
        start = str(time.time() + 1.0)
        procs = [subprocess.Popen([sys.executable, "-c", _OPEN_AT, start, f"round{round_}proc{n}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  env=dict(os.environ))
                 for n in range(2)]
        outs = [p.communicate(timeout=60)[0].strip() for p in procs]
        assert outs == ["ok", "ok"], outs
        # set aside once, by one of them: the other never took the first one's live log
        assert len(list(home.glob("memory.db-wal.orphaned-*"))) == 1
        assert len(list(home.glob("memory.db-shm.orphaned-*"))) == 1
        with Store() as store:
            assert store.scalar("PRAGMA integrity_check") == "ok"
            ids = sorted(r["id"] for r in store.rows("SELECT id FROM episodes"))
            assert ids == [f"round{round_}proc0", f"round{round_}proc1"]


def test_restore_onto_a_memory_deleted_by_hand_does_not_replay_its_log(home: Path, tmp_path: Path) -> None:
    from remem.engine.backup import backup, restore
    from remem.engine.store import Store

    with Store() as store:
        store.put_episodes([{"id": "b4ckb4ckb4ckb4c1", "kind": "note", "title": "kept in the backup"}])
        backup(store, tmp_path / "kept.db")
    for path in home.glob("memory.db*"):
        path.unlink()
    _memory_deleted_by_hand(home, "logged")

    restore(tmp_path / "kept.db")

    with Store() as store:
        assert store.scalar("PRAGMA integrity_check") == "ok"
        titles = [row["title"] for row in store.conn.execute("SELECT title FROM episodes")]
    assert titles == ["kept in the backup"]  # not the deleted memory's 21 notes on top of it
    assert list(home.glob("memory.db-wal.orphaned-*"))
