"""A memory on a read-only filesystem: no chmod can make it writable, so the line says the
mount is read-only instead. The real case mounts a tmpfs read-only in a private mount namespace
(`unshare`, skipped where the machine does not allow one); the classification of an OSError
EROFS is tested with one made by hand."""

from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_hooks import seed, session_in_arm


def _unshare() -> list[str] | None:
    """The unshare command that gives a private mount namespace where a tmpfs can be mounted
    (as root, or in a user namespace), or None."""
    if not shutil.which("unshare") or not sys.platform.startswith("linux"):
        return None
    import tempfile

    with tempfile.TemporaryDirectory() as spot:
        for flags in (["-m"], ["-r", "-m"]):
            probe = subprocess.run(["unshare", *flags, "sh", "-c", 'mount -t tmpfs none "$0"', spot],
                                   capture_output=True)
            if probe.returncode == 0:
                return ["unshare", *flags]
    return None


UNSHARE = _unshare()

KEEP_LOG = """
import os, shutil, sqlite3, sys
db = sys.argv[1]
conn = sqlite3.connect(db)
conn.execute("SELECT count(*) FROM lessons").fetchall()
for side in ("-wal", "-shm"):  # as a remem that has the memory open leaves them
    shutil.copy(db + side, db + side + ".kept")
conn.close()
for side in ("-wal", "-shm"):
    os.rename(db + side + ".kept", db + side)
"""


@pytest.mark.skipif(UNSHARE is None, reason="no private mount namespace on this machine (unshare -m)")
@pytest.mark.parametrize("with_log", [True, False], ids=["with its -wal and -shm", "without them"])
def test_a_memory_on_a_read_only_mount_names_the_mount_not_chmod(store, home, tmp_path, with_log, monkeypatch):
    from remem import config

    seed(store, [("We use uv here, not pip: uv pip install, never pip install", "correction", None)])
    config.set_value("prime.timeout_ms", 30000)  # a loaded machine still reaches the write
    monkeypatch.setenv(config.HOOK_CAP_ENV, "60000")
    staged = tmp_path / "staged"
    staged.mkdir()
    with sqlite3.connect(staged / "memory.db") as copy:
        store.conn.backup(copy)
    copy.close()
    shutil.copy(home / "config.toml", staged / "config.toml")
    mount = tmp_path / "ro"
    mount.mkdir()
    memory = mount / "home"
    payload = {"prompt": "pip install fakeredis", "session_id": session_in_arm(False, "ro")}
    script = "\n".join([
        "set -e",
        f"mount -t tmpfs none {shlex.quote(str(mount))}",
        f"cp -a {shlex.quote(str(staged))} {shlex.quote(str(memory))}",
        (f"{shlex.quote(sys.executable)} -c {shlex.quote(KEEP_LOG)} {shlex.quote(str(memory / 'memory.db'))}"
         if with_log else "true"),
        f"mount -o remount,ro {shlex.quote(str(mount))}",
        f"echo {shlex.quote(json.dumps(payload))} | {shlex.quote(sys.executable)} -m remem hook prompt",
    ])
    res = subprocess.run([*UNSHARE, "sh", "-c", script], capture_output=True, text=True, cwd=str(ROOT),
                         env=dict(os.environ, REMEM_HOME=str(memory)), timeout=120)
    assert res.returncode == 0 and res.stdout == "", res.stderr
    # (the hook's line is cut at 500 characters, which this test's long paths can reach)
    assert "is on a read-only filesystem" in res.stderr, res.stderr
    assert f"no chmod helps on a read-only mount: remount {mount} read-write" in res.stderr, res.stderr
    assert "chmod u+w" not in res.stderr and "ls -ld" not in res.stderr


def test_a_faked_erofs_oserror_is_read_only_and_names_the_mount_not_chmod(home):
    from remem import paths
    from remem.errors import store_problem

    home.mkdir(parents=True, exist_ok=True)
    db = paths.db_path()
    kind, line, fix = store_problem(OSError(errno.EROFS, os.strerror(errno.EROFS), str(db)))
    assert kind == "readonly"
    assert str(db) in line and "read-only filesystem" in line and "read-only mount: remount" in line
    assert "chmod u+w" not in line and "chmod" not in fix
    assert fix.startswith("mount -o remount,rw ") and "REMEM_HOME" in fix  # the memory: a home elsewhere

    # another file than the memory: no REMEM_HOME advice
    other = Path(home).parent / "user" / "notes.md"
    kind, line, fix = store_problem(OSError(errno.EROFS, os.strerror(errno.EROFS), str(other)))
    assert kind == "readonly" and str(other) in line and "REMEM_HOME" not in line and "chmod u+w" not in line

    # Only a read-only mount changes the advice: a file someone made read-only is chmod's.
    found = store_problem(sqlite3.OperationalError("attempt to write a readonly database"), db)
    assert found is not None and found[0] == "readonly" and found[2].startswith("chmod u+w")
