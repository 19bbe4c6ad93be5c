"""Files left behind in an origin's folder: a sync tool's temp file from a sync that did not
finish, a file that is not JSON and never will be. While such a file is fresh it may be a write
in progress, and nothing that origin no longer shows is taken as withdrawn; once it has not
changed for 15 minutes it is no write in progress: readers report it (naming the file and the
fix) and stop waiting for it, and its owner's next sync removes it (docs/SHARING.md)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from remem.engine import lessons, share
from remem.engine.share_files import LEFT_OVER, STALE_NOT_JSON, UNEXPECTED_LEFT_OVER
from remem.engine.share_sign import file_bytes, verify
from tests.test_share import GOOD, Mem, add, folder, mems  # noqa: F401 (fixtures)

HOUR_AGO = time.time() - 3600


def _age(path: Path) -> Path:
    """The file as a leftover: unchanged for an hour."""
    os.utime(path, (HOUR_AGO, HOUR_AGO), follow_symlinks=False)
    return path


def _vouched_by_a_and_b(mems: dict[str, Mem], folder: Path) -> tuple[Mem, Mem, Mem]:
    """C's lesson GOOD held active by A (accepted, so confirmed) and by B through A and C."""
    a, b, c = mems["A"], mems["B"], mems["C"]
    add(c, GOOD)
    c.sync(folder)
    a.sync(folder)
    share.accept(a.store, a.by_hash(GOOD)["id"], identity_dir=a.idir, folder=folder)
    b.trust(a, c)
    b.sync(folder)
    assert b.by_hash(GOOD)["status"] == "active"
    return a, b, c


def _a_withdraws(a: Mem, folder: Path) -> None:
    """A rejects the lesson: its confirmation leaves the folder at once (no export runs)."""
    share.reject(a.store, a.by_hash(GOOD)["id"], identity_dir=a.idir, folder=folder)
    assert not (folder / a.origin / "confirm" / f"{a.by_hash(GOOD)['hash']}.json").exists()


def test_a_left_over_temp_file_without_a_hash_stops_holding_back_withdrawals(mems, folder):
    a, b, _ = _vouched_by_a_and_b(mems, folder)
    temp = folder / a.origin / "confirm" / ".syncthing.leftover.tmp"
    temp.touch()
    _a_withdraws(a, folder)
    rep = b.sync(folder)["receive"]  # fresh: maybe a write in progress, so nothing is withdrawn
    assert rep["withdrawn"] == [] and b.by_hash(GOOD)["status"] == "active"
    _age(temp)
    rep = b.sync(folder)["receive"]
    assert rep["withdrawn"] == [{"id": b.by_hash(GOOD)["id"], "by": a.origin}]
    assert b.by_hash(GOOD)["status"] == "candidate"
    assert {"path": f"{a.origin}/confirm/{temp.name}", "reason": LEFT_OVER} in rep["rejected"]
    assert "next `remem share sync` removes it" in LEFT_OVER


def test_a_left_over_temp_file_naming_a_hash_no_longer_holds_that_hash(mems, folder):
    a, b, _ = _vouched_by_a_and_b(mems, folder)
    text_hash = lessons.lesson_hash(GOOD, "correction")
    temp = folder / a.origin / "confirm" / f".syncthing.{text_hash}.json.tmp"
    temp.touch()
    _age(temp)
    _a_withdraws(a, folder)
    rep = b.sync(folder)["receive"]
    assert rep["withdrawn"] == [{"id": b.by_hash(GOOD)["id"], "by": a.origin}]


def test_the_owner_removes_left_over_temp_files_from_its_own_folders_and_keeps_fresh_ones(mems, folder):
    a = mems["A"]
    add(a, GOOD)
    a.sync(folder)
    base = folder / a.origin
    (base / "revoked").mkdir(exist_ok=True)
    old = [base / ".syncthing.key.pub.tmp", base / "confirm" / ".syncthing.leftover.tmp",
           base / "lessons" / f".{'a' * 32}.json.x1y2.tmp", base / "revoked" / ".~lock.partial"]
    fresh = base / "lessons" / ".syncthing.incoming.tmp"
    kept = base / ".DS_Store"  # says nothing, and is not ours to remove
    for path in (*old, fresh, kept):
        path.touch()
    for path in (*old, kept):
        _age(path)
    rep = share.export_lessons(a.store, folder, identity_dir=a.idir)
    assert sorted(rep["cleaned"]) == sorted(str(p.relative_to(folder)) for p in old)
    assert not any(p.exists() for p in old) and fresh.exists() and kept.exists()


def test_a_file_that_is_not_json_for_good_is_refused_and_holds_back_nothing(mems, folder):
    a, b, _ = _vouched_by_a_and_b(mems, folder)
    garbage = folder / a.origin / "revoked" / f"{'9' * 32}.json"
    garbage.parent.mkdir(exist_ok=True)
    garbage.write_text("garbage")
    _a_withdraws(a, folder)
    rep = b.sync(folder)["receive"]  # fresh: maybe half-synced, read again next time
    assert [Path(p["path"]).name for p in rep["incomplete"]] == [garbage.name] and rep["withdrawn"] == []
    _age(garbage)
    rep = b.sync(folder)["receive"]
    assert rep["incomplete"] == []
    assert {"path": f"{a.origin}/revoked/{garbage.name}", "reason": STALE_NOT_JSON} in rep["rejected"]
    assert rep["withdrawn"] == [{"id": b.by_hash(GOOD)["id"], "by": a.origin}]
    a.sync(folder)  # its owner removes it
    assert not garbage.exists()


def test_a_number_too_long_to_read_is_refused_not_taken_for_a_half_synced_file(mems, folder):
    a, b, _ = _vouched_by_a_and_b(mems, folder)
    huge = folder / a.origin / "lessons" / f"{'8' * 32}.json"
    huge.write_text('{"v": ' + "9" * 5000 + "}")  # whole JSON; Python reads no int that long
    _a_withdraws(a, folder)
    rep = b.sync(folder)["receive"]
    assert rep["incomplete"] == []
    assert {"path": f"{a.origin}/lessons/{huge.name}", "reason": "refused: a number too long to read"} in rep["rejected"]
    assert rep["withdrawn"] == [{"id": b.by_hash(GOOD)["id"], "by": a.origin}]


def test_the_owner_keeps_only_its_own_revocations_in_revoked(mems, folder):
    a, m = mems["A"], mems["M"]
    gone = add(a, GOOD)
    copied = add(a, "Prefer small commits")
    a.sync(folder)
    for lesson in (gone, copied):
        share.revoke(a.store, lesson["id"], folder, identity_dir=a.idir)
    revoked = folder / a.origin / "revoked"
    plain = revoked / f"{copied['hash']}.json"
    copy = revoked / f"{copied['hash']}.sync-conflict-20261130-090000-ABCDEFG.json"
    copy.write_bytes(plain.read_bytes())
    plain.write_text("not json")  # the plain file spoilt, its conflicted copy whole
    # A revocation of ours for a lesson this memory no longer holds (a store restored from an
    # older backup): still ours, kept for good.
    lost = share.identity(a.idir).sign({"v": 1, "type": "revoke", "origin": a.origin, "hash": "7" * 32,
                                        "at": "2026-11-01T00:00:00+00:00"})
    (revoked / f"{'7' * 32}.json").write_bytes(file_bytes(lost))
    planted = share.identity(m.idir).sign({**lost, "origin": m.origin, "hash": "6" * 32})
    (revoked / f"{'6' * 32}.json").write_bytes(file_bytes(planted))
    (revoked / f"{'5' * 32}.json").write_text("garbage")
    rep = share.export_lessons(a.store, folder, identity_dir=a.idir)
    assert sorted(p.name for p in revoked.iterdir()) == sorted(
        [f"{gone['hash']}.json", f"{copied['hash']}.json", f"{'7' * 32}.json"])
    doc = json.loads(plain.read_bytes())
    assert doc["type"] == "revoke" and verify(doc, share.identity(a.idir).public_raw) and rep["problems"] == []
    again = share.export_lessons(a.store, folder, identity_dir=a.idir)
    assert again["cleaned"] == [] and again["revocations"] == []


# --------------------------------------------------------------------------- copies under names of their own

def _copies_named_their_own_way(directory: Path, text_hash: str) -> list[Path]:
    """What iCloud ("<hash> 2.json") and OneDrive ("<hash>-LAPTOP.json") name a copy of
    <hash>.json: names no document has, so no reader opens them."""
    copies = [directory / f"{text_hash} 2.json", directory / f"{text_hash}-LAPTOP.json"]
    for copy in copies:
        copy.write_text("{}")
    return copies


def test_a_left_over_copy_under_a_name_of_its_own_no_longer_holds_its_hash(mems, folder):
    a, b, _ = _vouched_by_a_and_b(mems, folder)
    # Copies of a lesson file of that hash in A's lessons/: while they may be a sync tool's
    # write in progress, A may still stand behind the lesson.
    copies = _copies_named_their_own_way(folder / a.origin / "lessons", a.by_hash(GOOD)["hash"])
    _a_withdraws(a, folder)
    rep = b.sync(folder)["receive"]
    assert rep["withdrawn"] == [] and b.by_hash(GOOD)["status"] == "active"
    for copy in copies:
        _age(copy)
    rep = b.sync(folder)["receive"]  # A has not synced since: the copies are still there
    assert rep["withdrawn"] == [{"id": b.by_hash(GOOD)["id"], "by": a.origin}]
    assert b.by_hash(GOOD)["status"] == "candidate"
    for copy in copies:
        assert {"path": f"{a.origin}/lessons/{copy.name}", "reason": UNEXPECTED_LEFT_OVER} in rep["rejected"]


def test_a_copy_of_a_withdrawn_confirmation_under_a_name_of_its_own_never_holds_it(mems, folder):
    a, b, _ = _vouched_by_a_and_b(mems, folder)
    confirm = folder / a.origin / "confirm" / f"{a.by_hash(GOOD)['hash']}.json"
    copies = _copies_named_their_own_way(confirm.parent, confirm.stem)
    for copy in copies:
        copy.write_bytes(confirm.read_bytes())  # A's own signed confirmation, under another name
    _a_withdraws(a, folder)
    for copy in copies:
        _age(copy)
    for _ in range(2):  # and A's syncs remove them
        assert b.sync(folder)["receive"]["withdrawn"] in ([{"id": b.by_hash(GOOD)["id"], "by": a.origin}], [])
        assert b.by_hash(GOOD)["status"] == "candidate"
        a.sync(folder)
    assert not any(copy.exists() for copy in copies)


def test_the_owner_removes_left_over_files_under_unexpected_names_from_its_own_folders_only(mems, folder):
    a, b, _ = _vouched_by_a_and_b(mems, folder)
    text_hash = a.by_hash(GOOD)["hash"]
    base = folder / a.origin
    (base / "withdrawn").mkdir(exist_ok=True)
    old = [*_copies_named_their_own_way(base / "confirm", text_hash),
           base / "lessons" / "notes.txt", base / "withdrawn" / f"{text_hash} 2.json"]
    for path in old[2:]:
        path.write_text("not ours")
    fresh = base / "confirm" / f"{text_hash} 3.json"  # maybe still being written: kept for now
    fresh.write_text("{}")
    odd_folder = base / "lessons" / "kept by someone"
    odd_folder.mkdir()
    outside = [folder / "README.txt", base / "notes.txt", folder / b.origin / "confirm" / f"{text_hash} 2.json"]
    for path in outside:  # not in a sub-folder of ours: never ours to remove
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    for path in (*old, odd_folder, *outside):
        _age(path)
    out = a.sync(folder)
    assert not any(p.exists() for p in old) and fresh.exists() and odd_folder.is_dir()
    assert all(p.exists() for p in outside)
    assert sorted(out["export"]["cleaned"] + out["confirmations"].get("cleaned", [])) == sorted(
        str(p.relative_to(folder)) for p in old)
    assert {"path": f"{a.origin}/lessons/{odd_folder.name}",
            "reason": "not a file, under a name no document has; left alone (remove it)"} in out["export"]["problems"]
    assert (base / "confirm" / f"{text_hash}.json").exists()  # A still confirms it: its own file stays


def test_our_withdrawal_found_only_under_a_name_of_its_own_takes_the_plain_name(mems, folder):
    a, b, _ = _vouched_by_a_and_b(mems, folder)
    _a_withdraws(a, folder)
    withdrawn = folder / a.origin / "withdrawn"
    plain = withdrawn / f"{a.by_hash(GOOD)['hash']}.json"
    copy = withdrawn / f"{plain.stem} 2.json"
    plain.rename(copy)  # the sync tool kept only its own copy
    _age(copy)
    a.sync(folder)
    assert not copy.exists() and plain.exists()
    doc = json.loads(plain.read_bytes())
    assert doc["type"] == "withdraw" and verify(doc, share.identity(a.idir).public_raw)
