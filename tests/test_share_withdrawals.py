"""A confirmation withdrawn stays withdrawn: the memory that withdraws it leaves a signed
withdrawal (withdrawn/<hash>.json) behind, and a copy of its old confirmation put back into the
folder, older than that withdrawal, counts for no reader: not one that saw the withdrawal, not
one that never did (docs/PROTOCOL.md, Withdrawals)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from remem.engine import clock, lessons, share
from remem.engine.share_sign import file_bytes, verify
from remem.engine.store import Store
from tests.test_share import GOOD, Mem, add, folder, mems  # noqa: F401 (fixtures)


def _confirmed_by_b(mems: dict[str, Mem], folder: Path) -> tuple[Mem, Mem, Mem, Path]:
    """A's lesson GOOD, accepted by B (so B confirms it) and active in C through A and B."""
    a, b, c = mems["A"], mems["B"], mems["C"]
    add(a, GOOD)
    a.sync(folder)
    b.sync(folder)
    share.accept(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    c.trust(a, b)
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "active"
    return a, b, c, folder / b.origin / "confirm" / f"{b.by_hash(GOOD)['hash']}.json"


def test_an_old_confirmation_put_back_does_not_bring_back_a_voucher_that_withdrew(mems, folder):
    a, b, c, confirm = _confirmed_by_b(mems, folder)
    old = confirm.read_bytes()
    share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    withdrawal = folder / b.origin / "withdrawn" / confirm.name
    doc = json.loads(withdrawal.read_bytes())
    assert not confirm.exists() and doc["type"] == "withdraw" and verify(doc, share.identity(b.idir).public_raw)
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "candidate"

    confirm.write_bytes(old)  # someone puts B's old signed confirmation back
    rep = c.sync(folder)["receive"]
    assert c.by_hash(GOOD)["status"] == "candidate" and b.origin not in c.by_hash(GOOD)["origins"]
    [why] = [p["reason"] for p in rep["rejected"] if p["path"] == f"{b.origin}/confirm/{confirm.name}"]
    assert why.startswith(f"a confirmation older than {b.origin}'s withdrawal of it")

    d = mems["M"]  # a memory that never saw the confirmation withdrawn
    d.trust(a, b)
    d.sync(folder)
    assert d.by_hash(GOOD)["status"] == "candidate" and b.origin not in d.by_hash(GOOD)["origins"]

    b.sync(folder)  # B's next sync removes the copy and keeps its withdrawal
    assert not confirm.exists() and withdrawal.exists()


def test_confirming_again_counts_and_takes_the_withdrawal_away(mems, folder):
    a, b, c = mems["A"], mems["B"], mems["C"]
    add(a, GOOD)
    add(c, GOOD)
    for mem in (a, c):
        mem.sync(folder)
    b.trust(a, c)
    b.sync(folder)  # active in B through A and C, so B confirms it
    confirm = folder / b.origin / "confirm" / f"{b.by_hash(GOOD)['hash']}.json"
    withdrawal = folder / b.origin / "withdrawn" / confirm.name
    assert confirm.exists()
    share.trust(b.store, c.origin, False, identity_dir=b.idir)  # back to candidate in B
    b.sync(folder)
    assert not confirm.exists() and withdrawal.exists()
    share.trust(b.store, c.origin, identity_dir=b.idir)  # active again: a new confirmation
    rep = b.sync(folder)
    assert confirm.exists() and not withdrawal.exists() and rep["confirmations"]["written"] == [confirm.name[:32]]
    d = mems["M"]
    d.trust(a, b)
    d.sync(folder)
    assert d.by_hash(GOOD)["status"] == "active"
    before = sorted(p.name for p in (folder / b.origin).rglob("*"))
    b.sync(folder)  # nothing new: nothing written, nothing removed
    assert sorted(p.name for p in (folder / b.origin).rglob("*")) == before


def test_a_withdrawal_someone_else_put_in_our_folder_is_removed_and_counts_for_no_reader(mems, folder):
    _, b, c, confirm = _confirmed_by_b(mems, folder)
    forged = share.identity(mems["M"].idir).sign(
        {"v": 1, "type": "withdraw", "origin": b.origin, "hash": confirm.name[:32], "at": "2099-01-01T00:00:00+00:00"})
    planted = folder / b.origin / "withdrawn" / confirm.name
    planted.parent.mkdir()
    planted.write_text(json.dumps(forged))
    rep = c.sync(folder)["receive"]
    assert c.by_hash(GOOD)["status"] == "active"  # signed by another key: B still confirms it
    assert any(p["path"] == f"{b.origin}/withdrawn/{confirm.name}" for p in rep["rejected"])
    b.sync(folder)
    assert not planted.exists() and confirm.exists()


def test_a_link_planted_as_an_origins_withdrawn_folder_is_never_written_through_and_its_owner_is_told(
        mems, folder, tmp_path):
    _, b, c, confirm = _confirmed_by_b(mems, folder)
    outside = tmp_path / "outside"
    outside.mkdir()
    link = folder / b.origin / "withdrawn"
    link.symlink_to(outside)
    done = share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    assert list(outside.iterdir()) == []  # nothing written through it
    # With no withdrawal written, the confirmation stays (gone without one, a copy of it put
    # back would count again), and the person is told why, with the fix.
    assert confirm.exists() and "is a link" in done["warning"] and "\n" not in done["warning"]
    problems = b.sync(folder)["export"]["problems"]
    assert any(p["path"] == f"{b.origin}/withdrawn" and "is a link" in p["reason"] for p in problems)
    link.unlink()
    b.sync(folder)
    assert not confirm.exists() and (link / confirm.name).exists()
    rep = c.sync(folder)["receive"]
    assert rep["withdrawn"] == [{"id": c.by_hash(GOOD)["id"], "by": b.origin}]


# --------------------------------------------------------------------------- clocks that were off

T0 = "2026-11-30T10:00:00+00:00"


def _at(path: Path) -> datetime:
    return clock.parse(json.loads(path.read_bytes())["at"])


def test_a_withdrawal_is_dated_after_a_confirmation_made_while_the_clock_ran_ahead(mems, folder):
    a, b, c = mems["A"], mems["B"], mems["C"]
    with clock.frozen(T0):
        add(a, GOOD)
        a.sync(folder)
        b.sync(folder)
    with clock.frozen("2026-11-30T13:30:00+00:00"):  # B's clock 3h30 ahead when it accepts
        share.accept(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    confirm = folder / b.origin / "confirm" / f"{b.by_hash(GOOD)['hash']}.json"
    old = confirm.read_bytes()
    c.trust(a, b)
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "active"
    with clock.frozen("2026-11-30T10:27:00+00:00"):  # B's clock right again when it rejects
        share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    withdrawal = folder / b.origin / "withdrawn" / confirm.name
    assert _at(withdrawal) > clock.parse("2026-11-30T13:30:00+00:00")
    confirm.write_bytes(old)  # the sync tool brings the old confirmation back
    rep = c.sync(folder)["receive"]
    assert c.by_hash(GOOD)["status"] == "candidate" and b.origin not in c.by_hash(GOOD)["origins"]
    assert any(p["path"] == f"{b.origin}/confirm/{confirm.name}" for p in rep["rejected"])


def _rejected_while_ahead_then_accepted_again(mems, folder, *, withdrawal_gone: bool) -> tuple[Mem, Mem, Path, bytes]:
    """B accepts A's lesson, rejects it with its clock a month ahead, then (clock right) accepts
    it again; with `withdrawal_gone`, that withdrawal's file left the folder in between."""
    a, b = mems["A"], mems["B"]
    with clock.frozen(T0):
        add(a, GOOD)
        a.sync(folder)
        b.sync(folder)
        share.accept(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    with clock.frozen("2027-01-01T00:00:00+00:00"):
        share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    withdrawal = folder / b.origin / "withdrawn" / f"{b.by_hash(GOOD)['hash']}.json"
    future = withdrawal.read_bytes()
    if withdrawal_gone:  # deleted on another machine, say: only B's memory of it is left
        withdrawal.unlink()
    with clock.frozen("2026-11-30T11:00:00+00:00"):
        lessons.update_lesson(b.store, b.by_hash(GOOD)["id"], status="candidate")  # `lessons restore`
        share.accept(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    assert not withdrawal.exists()
    return a, b, withdrawal, future


@pytest.mark.parametrize("withdrawal_gone", [False, True], ids=["withdrawal-in-folder", "withdrawal-file-gone"])
def test_a_new_confirmation_is_dated_after_a_withdrawal_made_while_the_clock_ran_ahead(mems, folder, withdrawal_gone):
    a, b, withdrawal, future = _rejected_while_ahead_then_accepted_again(mems, folder, withdrawal_gone=withdrawal_gone)
    confirm = folder / b.origin / "confirm" / withdrawal.name
    assert _at(confirm) > clock.parse("2027-01-01T00:00:00+00:00")
    c = mems["C"]
    c.trust(a, b)
    withdrawal.write_bytes(future)  # the sync tool brings the deleted withdrawal back
    rep = c.sync(folder)["receive"]
    assert rep["rejected"] == [] and c.by_hash(GOOD)["status"] == "active"
    assert b.origin in c.by_hash(GOOD)["origins"]


def test_a_confirmation_older_than_a_withdrawal_put_back_is_dated_anew_by_its_owner(mems, folder):
    """A withdrawal dated ahead by a remem that kept no record of it: the reader cannot tell
    which of the two is the old copy, and says so; the owner, who still holds the lesson,
    writes a newer confirmation and removes the withdrawal."""
    a, b, c, confirm = _confirmed_by_b(mems, folder)
    ahead = share.identity(b.idir).sign({"v": 1, "type": "withdraw", "origin": b.origin,
                                         "hash": confirm.name[:32], "at": "2099-01-01T00:00:00+00:00"})
    withdrawal = folder / b.origin / "withdrawn" / confirm.name
    withdrawal.parent.mkdir()
    withdrawal.write_bytes(file_bytes(ahead))
    rep = c.sync(folder)["receive"]
    [why] = [p["reason"] for p in rep["rejected"] if p["path"] == f"{b.origin}/confirm/{confirm.name}"]
    assert "removes the confirmation, or, if it still holds the lesson, writes a newer one" in why
    assert c.by_hash(GOOD)["status"] == "candidate"
    out = b.sync(folder)
    assert out["confirmations"]["written"] == [confirm.name[:32]] and not withdrawal.exists()
    assert _at(confirm) > clock.parse("2099-01-01T00:00:00+00:00")
    withdrawal.write_bytes(file_bytes(ahead))  # and back it comes once more
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "active"


# --------------------------------------------------------------------------- what cannot outrank a withdrawal

def test_a_tampered_copy_of_a_withdrawn_confirmation_does_not_keep_its_voucher(mems, folder):
    _, b, c, confirm = _confirmed_by_b(mems, folder)
    old = confirm.read_bytes()
    share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    confirm.write_bytes(old.replace(b'"at":"2', b'"at":"1', 1))  # one byte changed: no longer verifies
    rep = c.sync(folder)["receive"]
    assert any(p["path"] == f"{b.origin}/confirm/{confirm.name}" and "does not verify" in p["reason"]
               for p in rep["rejected"])
    assert rep["withdrawn"] == [{"id": c.by_hash(GOOD)["id"], "by": b.origin}]
    assert c.by_hash(GOOD)["status"] == "candidate"


def test_a_confirmation_that_does_not_verify_still_holds_when_nothing_withdraws_it(mems, folder):
    _, b, c, confirm = _confirmed_by_b(mems, folder)
    confirm.write_bytes(confirm.read_bytes().replace(b'"at":"2', b'"at":"1', 1))
    rep = c.sync(folder)["receive"]
    assert rep["withdrawn"] == [] and c.by_hash(GOOD)["status"] == "active"


# --------------------------------------------------------------------------- a withdrawal that cannot be written

def test_a_reject_whose_withdrawal_cannot_be_written_keeps_the_confirmation_and_says_so(mems, folder):
    _, b, c, confirm = _confirmed_by_b(mems, folder)
    blocker = folder / b.origin / "withdrawn"
    blocker.write_text("x")  # a plain file where the folder goes
    done = share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    assert done["status"] == "vetoed" and confirm.exists()
    assert done["warning"].startswith("rejected here, but your confirmation of it stays in the share folder")
    assert f"{b.origin}/withdrawn" in done["warning"] and "\n" not in done["warning"]
    blocker.unlink()
    out = b.sync(folder)
    assert out["confirmations"]["withdrawn"] == [confirm.name[:32]] and not confirm.exists()
    assert c.sync(folder)["receive"]["withdrawn"] == [{"id": c.by_hash(GOOD)["id"], "by": b.origin}]


def test_share_reject_prints_the_warning(cli, home, mems, folder):
    a = mems["A"]
    add(a, GOOD)
    a.sync(folder)
    assert cli("share", "sync", "--folder", str(folder)).exit_code == 0
    with Store() as store:
        received = lessons.by_hash(store, lessons.lesson_hash(GOOD, "correction"))
        ours = share.identity().origin
    assert cli("share", "accept", received["id"], "--folder", str(folder)).exit_code == 0
    (folder / ours / "withdrawn").write_text("x")
    result = cli("share", "reject", received["id"], "--folder", str(folder))
    assert result.exit_code == 0, result.output
    assert f"rejected {received['id']}" in result.output
    [line] = [ln for ln in result.output.splitlines() if ln.startswith("warning: ")]
    assert "your confirmation of it stays in the share folder" in line and "remove what is in its place" in line
    assert (folder / ours / "confirm" / f"{received['hash']}.json").exists()
