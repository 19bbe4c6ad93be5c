"""The memory and the files beside it change together: a revoke, a veto or a restore that
stops half-way never leaves the share folder or vetoed.json saying one thing and the memory
another for good.

The memory is held by a second SQLite connection (BEGIN EXCLUSIVE), as another remem process
writing would hold it, and opened here with a short busy timeout, so the write gives up.
"""

from __future__ import annotations

import errno
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from remem import paths
from remem.engine import lessons, render_vetoes, share
from remem.engine.share_sign import ShareError
from remem.engine.store import Store, StoreBusy

TEXT = "Run the full test suite before handing back work"


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@contextmanager
def memory_held_by_another_process() -> Iterator[None]:
    other = sqlite3.connect(paths.db_path(), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.fixture
def author(home: Path) -> Iterator[Store]:
    """This memory (in REMEM_HOME), with a short busy timeout: a held memory refuses fast."""
    with Store(busy_timeout_ms=200) as store:
        yield store


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "share"
    path.mkdir()
    return path


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[tuple[Store, Path]]:
    """Another memory that trusts ours and took our lesson in through the folder."""
    with Store(tmp_path / "peer" / "memory.db") as store:
        yield store, tmp_path / "peer" / "identity"


def peer_status(peer: tuple[Store, Path], folder: Path, text_hash: str) -> str:
    store, idir = peer
    share.sync(store, folder, identity_dir=idir)
    return lessons.by_hash(store, text_hash)["status"]


def shared_lesson(author: Store, folder: Path, peer: tuple[Store, Path]) -> dict:
    mine = lessons.add_lesson(author, TEXT, "correction", strength=1.5)
    share.sync(author, folder)
    peer_store, peer_idir = peer
    share.trust(peer_store, share.identity().origin, force=True, identity_dir=peer_idir)
    assert peer_status(peer, folder, mine["hash"]) == "candidate"
    return mine


# --------------------------------------------------------------------------- revoke

def test_a_revoke_the_busy_memory_refuses_leaves_the_share_folder_as_it_was(author, folder, peer):
    mine = shared_lesson(author, folder, peer)
    before = snapshot(folder)

    with memory_held_by_another_process(), pytest.raises(StoreBusy):
        share.revoke(author, mine["id"], folder)

    # Nothing changed anywhere: no revocation for peers to act on, our export still there.
    assert lessons.get_lesson(author, mine["id"])["status"] == "active"
    assert snapshot(folder) == before
    assert peer_status(peer, folder, mine["hash"]) == "candidate"

    # Tried again with the memory free, it goes through, here and at the peer.
    done = share.revoke(author, mine["id"], folder)
    assert lessons.get_lesson(author, mine["id"])["status"] == "revoked"
    assert Path(done["revocation"]).is_file() and done["export_removed"]
    assert peer_status(peer, folder, mine["hash"]) == "revoked"


def test_a_revoke_the_share_folder_refuses_is_finished_by_the_next_sync(author, folder, peer):
    mine = shared_lesson(author, folder, peer)
    origin = share.identity().origin
    revocation = folder / origin / "revoked" / f"{mine['hash']}.json"
    exported = folder / origin / "lessons" / f"{mine['hash']}.json"
    revocation.mkdir(parents=True)  # a folder where the revocation goes: the write is refused

    with pytest.raises(ShareError) as caught:
        share.revoke(author, mine["id"], folder)

    # Revoked here first; the error says so, and what finishes the rest.
    assert lessons.get_lesson(author, mine["id"])["status"] == "revoked"
    assert f"lesson {mine['id']} is revoked here" in str(caught.value)
    assert "`remem share sync`" in str(caught.value)
    assert exported.is_file()  # not removed before the revocation is out

    revocation.rmdir()
    report = share.sync(author, folder)
    assert [r["id"] for r in report["export"]["revocations"]] == [mine["id"]]
    assert revocation.is_file() and not exported.exists()
    assert peer_status(peer, folder, mine["hash"]) == "revoked"


# --------------------------------------------------------------------------- veto and restore

def test_a_veto_the_memory_or_vetoed_json_refuses_leaves_the_lesson_as_it_was(author):
    lesson = lessons.add_lesson(author, TEXT, "correction", strength=1.5)
    with memory_held_by_another_process(), pytest.raises(StoreBusy):
        render_vetoes.veto_lesson(author, lesson["id"])
    assert not render_vetoes.has_veto(lesson)  # no record written for a veto that did not happen

    vetoed_json = render_vetoes.vetoed_path()
    vetoed_json.mkdir()  # a folder where vetoed.json goes: the record cannot be written
    with pytest.raises(OSError):
        render_vetoes.veto_lesson(author, lesson["id"])

    kept = lessons.get_lesson(author, lesson["id"])
    assert (kept["status"], kept["note"]) == ("active", lesson["note"])

    # With vetoed.json writable again, the veto goes through and its record keeps the status.
    vetoed_json.rmdir()
    assert render_vetoes.veto_lesson(author, lesson["id"])["status"] == "vetoed"
    assert json.loads(vetoed_json.read_text())[lesson["id"]]["was"] == "active"


def test_a_restore_the_memory_or_vetoed_json_refuses_keeps_the_lesson_vetoed(author, monkeypatch):
    lesson = lessons.add_lesson(author, TEXT, "correction", strength=1.5)
    render_vetoes.veto_lesson(author, lesson["id"])
    vetoed = lessons.get_lesson(author, lesson["id"])
    with memory_held_by_another_process(), pytest.raises(StoreBusy):
        render_vetoes.restore_lesson(author, lesson["id"])
    assert render_vetoes.has_veto(lesson)  # the record stays for a restore that did not happen

    def disk_full(path, data, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    # Root writes anywhere, so a full disk stands for what refuses the write.
    with monkeypatch.context() as patched, pytest.raises(OSError):
        patched.setattr(render_vetoes, "write_atomic", disk_full)
        render_vetoes.restore_lesson(author, lesson["id"])

    kept = lessons.get_lesson(author, lesson["id"])
    assert (kept["status"], kept["note"]) == ("vetoed", vetoed["note"])
    assert render_vetoes.has_veto(lesson)
    # Tried again, the restore finds the veto and its record as they were.
    assert render_vetoes.restore_lesson(author, lesson["id"])["status"] == "active"
    assert not render_vetoes.has_veto(lesson)
