"""A memory under a read-only bind mount (`mount --bind H H; mount -o remount,bind,ro H`): the
line names the mount, H, not the filesystem the bind shows (its device is that one's, so a
walk up the folders while the device stays the same ends at `/`). The mount is found in
/proc/self/mountinfo: the parser is tested on its text (always), the whole on a real bind
mount in a private mount namespace (skipped only where the machine allows none)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.errors import mount_point
from tests.conftest import ROOT
from tests.test_hook_readonly_mount import UNSHARE

SAMPLE = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
40 27 0:35 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw
88 40 0:35 /work/home /tmp/work/home ro,relatime shared:1 - tmpfs tmpfs rw
90 27 254:0 /srv/data /mnt/my\\040disk ro,relatime - ext4 /dev/vda rw
91 27 254:0 /a /mnt/a rw,relatime - ext4 /dev/vda rw
92 27 254:0 /b /mnt/a ro,relatime - ext4 /dev/vda rw
93 27 254:0 /c /back\\134slash ro - ext4 /dev/vda rw
"""


def test_a_bind_mount_is_found_by_its_mount_point_not_by_its_device():
    assert mount_point("/tmp/work/home/memory.db", SAMPLE) == "/tmp/work/home"
    assert mount_point("/tmp/work/home", SAMPLE) == "/tmp/work/home"
    assert mount_point("/tmp/work/other/memory.db", SAMPLE) == "/tmp"
    assert mount_point("/home/you/.remem/memory.db", SAMPLE) == "/"


def test_the_mount_table_is_read_as_the_kernel_writes_it():
    assert mount_point("/mnt/my disk/remem/memory.db", SAMPLE) == "/mnt/my disk"  # \040 is a space
    assert mount_point("/back\\slash/memory.db", SAMPLE) == "/back\\slash"  # \134 a backslash
    assert mount_point("/mnt/ab/memory.db", SAMPLE) == "/"  # /mnt/a is no folder above it
    assert mount_point("/mnt/a/memory.db", SAMPLE) == "/mnt/a"  # of two on one point, the last
    assert mount_point("/anything", "") is None
    assert mount_point("/anything", "not a mount table\n\n") is None


def _escaped(path: str) -> str:
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


_NAME = st.text(alphabet=st.sampled_from("ab \t\n\\x-é\x0c\x85\u2028"), min_size=1, max_size=6).filter(lambda n: n not in (".", ".."))


@settings(max_examples=200, deadline=None)
@given(points=st.lists(st.lists(_NAME, min_size=1, max_size=3), min_size=1, max_size=5),
       pick=st.integers(min_value=0), tail=st.lists(_NAME, max_size=2))
def test_the_longest_mount_point_above_a_path_is_found_whatever_its_name_holds(points, pick, tail):
    mounts = ["/" + "/".join(parts) for parts in points]
    table = "27 1 254:0 / / rw - ext4 /dev/vda rw\n" + "".join(
        f"{100 + i} 27 0:{50 + i} / {_escaped(m)} ro,relatime - tmpfs tmpfs rw\n" for i, m in enumerate(mounts))
    inside = mounts[pick % len(mounts)]
    path = "/".join([inside, *tail])
    above = [m for m in mounts if path == m or path.startswith(m + "/")]
    assert mount_point(path, table) == max(above, key=len)


@pytest.mark.skipif(UNSHARE is None, reason="no private mount namespace on this machine (unshare -m)")
def test_a_memory_under_a_read_only_bind_mount_names_that_mount(home, tmp_path):
    from remem.engine.store import Store

    with Store() as store:  # a memory with something in it
        store.conn.execute("SELECT 1")
    quoted, python = shlex.quote(str(home)), shlex.quote(sys.executable)
    script = "\n".join([
        "set -e",
        f"mount --bind {quoted} {quoted}",
        f"mount -o remount,bind,ro {quoted}",
        f"{python} -c 'import sys; from remem.errors import read_only_mount; print(read_only_mount(sys.argv[1]))' "
        f"{shlex.quote(str(home / 'memory.db'))}",
        f"{python} -m remem remember 'We use uv here, not pip' || true",
    ])
    res = subprocess.run([*UNSHARE, "sh", "-c", script], capture_output=True, text=True, cwd=str(ROOT),
                         env=dict(os.environ, REMEM_HOME=str(home)), timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == str(home), res.stdout
    assert f"remount {home} read-write" in res.stderr, res.stderr
    assert "remount / read-write" not in res.stderr and "chmod u+w" not in res.stderr
