"""A team shares one folder (several users on one machine, a network drive): every share file
must be readable by whoever may read the folder, while the private key and what lives beside it
stay its owner's alone."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from remem.engine import share
from tests.conftest import ROOT
from tests.test_share import GOOD, Mem, add, folder, mems  # noqa: F401  (fixtures)


@pytest.fixture
def umask():
    """Set the umask for the test (it is per process), and put the runner's back after."""
    before = os.umask(0o022)
    yield lambda value: os.umask(value)
    os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _every_kind_of_share_file(mems: dict[str, Mem], folder: Path) -> tuple[Mem, Mem]:
    """A's key.pub, lesson and revocation; B's confirmation and withdrawal."""
    a, b = mems["A"], mems["B"]
    add(a, GOOD)
    gone = add(a, "Prefer small commits over large ones")
    a.sync(folder)
    b.sync(folder)
    share.accept(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    share.accept(b.store, b.by_hash("Prefer small commits over large ones")["id"], identity_dir=b.idir,
                 folder=folder)
    share.revoke(a.store, gone["id"], folder, identity_dir=a.idir)
    b.sync(folder)  # the revoked lesson retired: B's confirmation of it is withdrawn
    return a, b


@pytest.mark.parametrize("mask, readable", [(0o022, 0o644), (0o007, 0o660)])
def test_share_files_are_readable_by_whoever_reads_the_folder_and_the_private_key_stays_private(
        mems, folder, umask, mask, readable):
    umask(mask)
    a, b = _every_kind_of_share_file(mems, folder)
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert {p.parent.name for p in files} == {a.origin, b.origin, "lessons", "confirm", "revoked", "withdrawn"}
    assert {p.name for p in files if p.parent.name in (a.origin, b.origin)} == {"key.pub"}
    assert {p: _mode(p) for p in files} == {p: readable for p in files}
    for mem in (a, b):
        assert _mode(mem.idir / "ed25519.key") == 0o600
    assert _mode(b.idir / "signed_times.json") == 0o600  # B signed a confirmation and a withdrawal


def test_a_share_file_left_private_is_opened_up_by_its_owners_next_export_and_readers_name_the_fix(
        mems, folder, umask, tmp_path):
    a = mems["A"]
    add(a, GOOD)
    share.export_lessons(a.store, folder, identity_dir=a.idir)
    [lesson] = (folder / a.origin / "lessons").glob("*.json")
    lesson.chmod(0)  # as an older remem left it for every other user: unreadable to them

    said = _receive_without_the_right_to_read_anything(folder, tmp_path)
    reasons = [r["reason"] for r in said["rejected"] if r["path"].endswith(lesson.name)]
    assert reasons and reasons[0].startswith("cannot open (Permission denied): ")
    assert "its owner's next `remem share sync` makes it readable" in reasons[0]
    assert f"`chmod a+r {lesson}`" in reasons[0]

    again = share.export_lessons(a.store, folder, identity_dir=a.idir)
    assert again["unchanged"] == 1 and again["exported"] == []  # the same bytes: only its mode changed
    assert _mode(lesson) == 0o644


def _receive_without_the_right_to_read_anything(folder: Path, tmp_path: Path) -> dict:
    """`remem share receive --json` in a process that file permissions refuse (root may read
    any file; the tests may run as root)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: a chmod 000 file stays readable")
        prefix = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                  "--bounding-set=-dac_override,-dac_read_search"]
        probe = tmp_path / "probe"
        probe.write_text("x")
        probe.chmod(0)
        if subprocess.run([*prefix, "cat", str(probe)], capture_output=True).returncode == 0:
            pytest.skip("cannot drop the right to read any file here")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the private home the `home` fixture set
    proc = subprocess.run([*prefix, sys.executable, "-m", "remem", "share", "receive", "--folder",
                           str(folder), "--json"], capture_output=True, text=True, env=env, cwd=str(ROOT),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
