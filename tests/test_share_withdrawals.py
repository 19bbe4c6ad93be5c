"""A confirmation withdrawn stays withdrawn: the memory that withdraws it leaves a signed
withdrawal (withdrawn/<hash>.json) behind, and a copy of its old confirmation put back into the
folder, older than that withdrawal, counts for no reader: not one that saw the withdrawal, not
one that never did (docs/PROTOCOL.md, Withdrawals)."""

from __future__ import annotations

import json
from pathlib import Path

from remem.engine import share
from remem.engine.share_sign import verify
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


def test_a_link_planted_as_an_origins_withdrawn_folder_holds_back_nothing_and_its_owner_is_told(mems, folder, tmp_path):
    _, b, c, confirm = _confirmed_by_b(mems, folder)
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / b.origin / "withdrawn").symlink_to(outside)
    share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    assert not confirm.exists() and list(outside.iterdir()) == []  # nothing written through it
    rep = c.sync(folder)["receive"]
    assert rep["withdrawn"] == [{"id": c.by_hash(GOOD)["id"], "by": b.origin}]
    problems = b.sync(folder)["export"]["problems"]
    assert any(p["path"] == f"{b.origin}/withdrawn" and "is a link" in p["reason"] for p in problems)
