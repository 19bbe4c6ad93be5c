"""A NEW memory on a read-only filesystem: the folder cannot be made, and the line says the
mount is read-only (remount it, or point REMEM_HOME elsewhere), as it does for a memory
already there, not "check the path and its permissions". The real case mounts a tmpfs
read-only in a private mount namespace (skipped where the machine does not allow one); the
other fakes the OSError EROFS where the memory's folder is made."""

from __future__ import annotations

import errno
import os
import pathlib
import shlex
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.test_hook_readonly_mount import UNSHARE


def _says_the_mount(line: str, home: pathlib.Path, mount: pathlib.Path) -> None:
    assert f"{home / 'memory.db'} is on a read-only filesystem" in line, line
    assert (f"no chmod helps on a read-only mount: remount {mount} read-write, or point REMEM_HOME at a "
            "folder on a writable filesystem") in line, line
    assert "check the path and its permissions" not in line and "chmod u+w" not in line
    assert f"copy {home}" not in line  # nothing there to copy


def test_a_new_home_whose_folder_meets_a_faked_erofs_names_the_read_only_mount(home, cli, monkeypatch):
    real_mkdir = pathlib.Path.mkdir

    def read_only_mkdir(self, *args, **kwargs):  # noqa: ANN001, ANN202 - Path.mkdir's own signature
        if self == home or home in self.parents:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", read_only_mkdir)
    res = cli("remember", "hi")
    assert res.exit_code == 1
    # (the folder that holds it is writable here: the advice names it, the nearest one there)
    _says_the_mount(res.output, home, home.parent)
    assert not home.exists()


@pytest.mark.skipif(UNSHARE is None, reason="no private mount namespace on this machine (unshare -m)")
def test_a_new_home_on_a_read_only_mount_names_the_mount(home, tmp_path):
    mount = tmp_path / "ro"
    mount.mkdir()
    new = mount / "deeper" / "newhome"
    script = "\n".join([
        "set -e",
        f"mount -t tmpfs none {shlex.quote(str(mount))}",
        f"mount -o remount,ro {shlex.quote(str(mount))}",
        f"{shlex.quote(sys.executable)} -m remem remember hi",
    ])
    res = subprocess.run([*UNSHARE, "sh", "-c", script], capture_output=True, text=True, cwd=str(ROOT),
                         env=dict(os.environ, REMEM_HOME=str(new)), timeout=120)
    assert res.returncode == 1 and res.stdout == "", res.stderr
    _says_the_mount(res.stderr, new, mount)
