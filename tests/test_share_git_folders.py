"""git, a documented transport, carries files, not folders: an origin with no lessons or no
confirmations would arrive without lessons/ or confirm/, never be read whole, and the
confirmations it withdrew would go on counting (docs/SHARING.md, With git)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from remem.engine import share
from remem.engine.share_files import KEEP_FILE
from tests.test_share import GOOD, Mem, folder, mems  # noqa: F401 (fixtures)
from tests.test_share_withdrawals import _confirmed_by_b


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=remem", "-c", "user.email=remem@example.org", *args],
                   cwd=cwd, check=True, capture_output=True)


def _b_rejects(mems: dict[str, Mem], folder: Path) -> tuple[Mem, Mem, Mem]:
    """B had confirmed A's lesson, then rejects it: B's lessons/ and confirm/ hold no document."""
    a, b, c, _ = _confirmed_by_b(mems, folder)
    share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    b.sync(folder)
    return a, b, c


def test_an_origins_emptied_folders_reach_a_git_clone_and_its_withdrawal_counts_there(mems, folder, tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    a, b, c = _b_rejects(mems, folder)
    _git("init", "-q", cwd=folder)
    _git("add", "-A", ".", cwd=folder)
    _git("commit", "-qm", "remem share", cwd=folder)
    clone = tmp_path / "clone"
    _git("clone", "-q", str(folder), str(clone), cwd=tmp_path)
    for sub in ("lessons", "confirm"):
        assert (clone / b.origin / sub / KEEP_FILE).is_file(), sub

    rep = c.sync(clone)
    held = c.by_hash(GOOD)
    assert held["status"] == "candidate" and b.origin not in held["origins"]
    assert not [p for p in rep["receive"]["rejected"] + rep["export"]["problems"] if KEEP_FILE in p["path"]]
    again = b.sync(clone)  # its owner keeps the markers, and says nothing of them
    assert (clone / b.origin / "confirm" / KEEP_FILE).is_file()
    assert not again["export"]["cleaned"] and not again["export"]["problems"]


def test_a_signed_withdrawal_counts_though_the_folders_that_held_nothing_are_gone(mems, folder):
    a, b, c = _b_rejects(mems, folder)
    for sub in ("lessons", "confirm"):  # as a clone of an older remem's folder arrives
        shutil.rmtree(folder / b.origin / sub)
    c.sync(folder)
    held = c.by_hash(GOOD)
    assert held["status"] == "candidate" and b.origin not in held["origins"]


def test_a_withdrawal_waits_while_a_file_of_that_origin_is_being_written(mems, folder):
    a, b, c = _b_rejects(mems, folder)
    shutil.rmtree(folder / b.origin / "lessons")
    # A sync tool writing a file of B's it does not name: a newer confirmation, perhaps.
    (folder / b.origin / "confirm" / ".syncthing.tmp").write_bytes(b"{")
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "active" and b.origin in c.by_hash(GOOD)["origins"]
