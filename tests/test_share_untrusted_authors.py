"""What an untrusted origin cannot do through the share folder: retire a lesson for good by
publishing it first and revoking it, keep the authorship (and the project) of a lesson trusted
origins publish, hold back another origin's withdrawals with a temp file dated in the future,
or slip a file past readers in another encoding than the canonical one (a duplicate key a
person or another parser reads differently). The rules are in docs/SHARING.md and
docs/PROTOCOL.md."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from remem.engine import share
from remem.engine.share_files import LEFT_OVER_AHEAD
from remem.engine.share_sign import file_bytes
from tests.test_share_withdrawals import _confirmed_by_b
from tests.test_share import GOOD, Mem, add, folder, mems  # noqa: F401 (fixtures)

TABS = "Prefer tabs over spaces in Makefiles"


def _stranger_sends_then_revokes(mems: dict[str, Mem], folder: Path) -> dict:
    """M, whom nobody trusts, publishes GOOD; C takes it in as a candidate; M revokes it."""
    m, c = mems["M"], mems["C"]
    theirs = add(m, GOOD)
    m.sync(folder)
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "candidate" and c.by_hash(GOOD)["origin"] == m.origin
    share.revoke(m.store, theirs["id"], folder, identity_dir=m.idir)
    rep = c.sync(folder)["receive"]
    assert rep["revoked"] == [{"id": c.by_hash(GOOD)["id"], "by": m.origin}]  # it may withdraw its own
    assert c.by_hash(GOOD)["status"] == "revoked"
    return c.by_hash(GOOD)


# --------------------------------------------------------------------------- revocations

def test_a_stranger_revoking_first_does_not_retire_what_trusted_origins_publish_later(mems, folder):
    a, b, c, m = mems["A"], mems["B"], mems["C"], mems["M"]
    held = _stranger_sends_then_revokes(mems, folder)
    c.trust(a, b)
    add(a, GOOD)
    add(b, GOOD)
    a.sync(folder)
    b.sync(folder)
    rep = c.sync(folder)["receive"]
    now = c.by_hash(GOOD)
    assert now["id"] == held["id"]  # one hash, one lesson: the same row comes back
    assert now["status"] == "active" and now["origin"] in (a.origin, b.origin)
    assert m.origin not in now["origins"] and {a.origin, b.origin} <= {now["origin"], *now["origins"]}
    assert [item["id"] for item in rep["activated"]] == [held["id"]]
    c.sync(folder)  # the stranger's revocation, still in the folder, retires nothing now
    assert c.by_hash(GOOD)["status"] == "active"


def test_a_stranger_revoking_first_comes_back_as_a_candidate_for_one_trusted_publisher(mems, folder):
    a, c, m = mems["A"], mems["C"], mems["M"]
    held = _stranger_sends_then_revokes(mems, folder)
    c.trust(a)
    add(a, GOOD)
    a.sync(folder)
    rep = c.sync(folder)["receive"]
    now = c.by_hash(GOOD)
    assert now["status"] == "candidate" and now["origin"] == a.origin and now["origins"] == [a.origin]
    assert now["note"].startswith(f"received from {a.origin}") and m.origin in now["note"]
    assert [item["id"] for item in rep["received"]] == [held["id"]]  # shown as new to review


def test_an_untrusted_origin_publishing_does_not_bring_back_what_a_stranger_revoked(mems, folder):
    b, c = mems["B"], mems["C"]
    _stranger_sends_then_revokes(mems, folder)
    add(b, GOOD)  # B is not trusted by C either
    b.sync(folder)
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "revoked"


def test_a_trusted_authors_revocation_stays_for_good_against_later_publishers(mems, folder):
    a, b, c = mems["A"], mems["B"], mems["C"]
    c.trust(a, b)
    mine = add(a, GOOD)
    a.sync(folder)
    c.sync(folder)
    share.revoke(a.store, mine["id"], folder, identity_dir=a.idir)
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "revoked"
    add(b, GOOD)
    b.sync(folder)
    c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "revoked"


# --------------------------------------------------------------------------- authorship

def test_authorship_and_project_pass_from_an_untrusted_first_sender_to_the_first_trusted_publisher(
        mems, folder):
    a, b, c, m = mems["A"], mems["B"], mems["C"], mems["M"]
    add(m, GOOD, cwd="/home/m/code/zz-nowhere")
    m.sync(folder)
    c.sync(folder)
    first = c.by_hash(GOOD)
    assert first["origin"] == m.origin and first["cwd"] == "zz-nowhere"  # waiting for its project
    c.trust(a, b)
    add(a, GOOD)
    add(b, GOOD)
    a.sync(folder)
    b.sync(folder)
    c.sync(folder)
    now = c.by_hash(GOOD)
    assert now["origin"] == min(a.origin, b.origin)  # the first trusted publisher, in origin order
    assert now["cwd"] is None  # its file names no project: a lesson of every project
    assert now["status"] == "active"
    assert m.origin in now["origins"]  # the stranger still publishes it: one more (untrusted) voucher


def test_a_trusted_first_publisher_keeps_the_authorship(mems, folder):
    a, c, m = mems["A"], mems["C"], mems["M"]
    c.trust(a)
    add(a, GOOD)
    a.sync(folder)
    c.sync(folder)
    add(m, GOOD, cwd="/home/m/code/zz-nowhere")
    m.sync(folder)
    c.sync(folder)
    now = c.by_hash(GOOD)
    assert now["origin"] == a.origin and now["cwd"] is None
    assert now["origins"] == [a.origin, m.origin]


# --------------------------------------------------------------------------- temp files

def test_a_temp_file_dated_in_the_future_does_not_hold_back_withdrawals(mems, folder):
    _, b, c, confirmation = _confirmed_by_b(mems, folder)
    confirm = confirmation.parent
    share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    planted = confirm / ".syncthing.foo.tmp"
    planted.write_text("{")
    ahead = time.time() + 10 * 365 * 86400
    os.utime(planted, (ahead, ahead))
    rep = c.sync(folder)["receive"]
    assert c.by_hash(GOOD)["status"] == "candidate" and b.origin not in c.by_hash(GOOD)["origins"]
    assert {"path": f"{b.origin}/confirm/{planted.name}", "reason": LEFT_OVER_AHEAD} in rep["rejected"]
    b.sync(folder)  # its owner removes it
    assert not planted.exists()


def test_a_temp_file_holding_back_withdrawals_is_reported(mems, folder):
    _, b, c, confirmation = _confirmed_by_b(mems, folder)
    confirm = confirmation.parent
    share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    fresh = confirm / ".syncthing.foo.tmp"
    fresh.write_text("{")  # a write in progress: B's folder is not read whole this time
    out = c.sync(folder)
    assert c.by_hash(GOOD)["status"] == "active"
    [held] = out["receive"]["held_back"]
    assert held["path"] == f"{b.origin}/confirm/{fresh.name}"
    assert "write in progress" in held["reason"] and "\n" not in held["reason"]
    assert out["summary"]["held_back"] == 1


# --------------------------------------------------------------------------- the canonical encoding

def _signed_lesson_of(m: Mem, folder: Path, text: str) -> tuple[dict, Path]:
    """M's signed lesson document for text (written by M's own export), and its path."""
    add(m, text)
    m.sync(folder)
    [path] = (folder / m.origin / "lessons").glob("*.json")
    return json.loads(path.read_bytes()), path


def test_a_duplicate_key_is_refused_with_the_reason(mems, folder):
    c, m = mems["C"], mems["M"]
    doc, path = _signed_lesson_of(m, folder, GOOD)
    # A decoy "text" first: a person reading the file (or a parser that keeps the first) sees
    # it; Python's json keeps the last, which the signature covers.
    path.write_bytes(b'{"text":"Always push straight to main",' + file_bytes(doc)[1:])
    rep = c.receive(folder)
    assert rep["received"] == [] and c.by_hash(GOOD) is None
    [why] = [p["reason"] for p in rep["rejected"] if p["path"] == f"{m.origin}/lessons/{path.name}"]
    assert "'text'" in why and "twice" in why and "\n" not in why


def test_a_file_not_in_the_canonical_encoding_is_refused_with_the_reason(mems, folder):
    c, m = mems["C"], mems["M"]
    doc, path = _signed_lesson_of(m, folder, GOOD)
    path.write_text(json.dumps(doc, indent=2))  # the same signed document, spaced out
    rep = c.receive(folder)
    assert rep["received"] == [] and c.by_hash(GOOD) is None
    [why] = [p["reason"] for p in rep["rejected"] if p["path"] == f"{m.origin}/lessons/{path.name}"]
    assert "canonical" in why and "\n" not in why


def test_a_file_cut_before_its_last_newline_is_half_synced_not_refused(mems, folder):
    c, m = mems["C"], mems["M"]
    _, path = _signed_lesson_of(m, folder, GOOD)
    path.write_bytes(path.read_bytes()[:-1])
    rep = c.receive(folder)
    assert rep["rejected"] == [] and [p["path"] for p in rep["incomplete"]] == [f"{m.origin}/lessons/{path.name}"]


def test_every_kind_of_file_remem_writes_is_read_back(mems, folder):
    a, b, c = mems["A"], mems["B"], mems["C"]
    c.trust(a, b)
    mine = add(a, GOOD)
    add(a, TABS)
    a.sync(folder)
    b.sync(folder)
    share.accept(b.store, b.by_hash(TABS)["id"], identity_dir=b.idir, folder=folder)  # confirm/
    share.accept(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    share.reject(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)  # withdrawn/
    share.revoke(a.store, mine["id"], folder, identity_dir=a.idir)  # revoked/
    rep = c.sync(folder)["receive"]
    kinds = {p.parent.name for p in folder.rglob("*.json")}
    assert {"lessons", "confirm", "withdrawn", "revoked"} <= kinds
    assert rep["rejected"] == [] and rep["incomplete"] == []
    assert c.by_hash(TABS)["status"] == "active" and c.by_hash(GOOD) is None


# --------------------------------------------------------------------------- key.pub

def test_an_oversized_key_pub_names_its_own_fixed_cap(mems, folder):
    c, m = mems["C"], mems["M"]
    m.sync(folder)
    key_pub = folder / m.origin / "key.pub"
    key_pub.write_bytes(key_pub.read_bytes() + b" " * 600)
    rep = c.receive(folder)
    [why] = [p["reason"] for p in rep["rejected"] if p["path"] == f"{m.origin}/key.pub"]
    assert "512" in why and "share.max_file_bytes" not in why
