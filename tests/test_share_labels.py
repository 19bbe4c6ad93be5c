"""Peer labels: the name a person gives an origin (`remem share trust --label`), stored with the
peer and kept through off and forget, shown by `share peers` and beside the candidates it sent;
a label with a control character or over 64 characters is refused, its spaces are collapsed."""

from __future__ import annotations

import pytest

from remem.engine import lessons, share
from remem.engine.share_sign import ShareError
from tests.conftest import run_remem

PEER = "3f9a0c1d2e4b5a69"

OTHER = "0123456789abcdef"


def _label(store, origin: str = PEER):
    return store.scalar("SELECT label FROM peers WHERE origin = ?", (origin,))


def test_trust_with_a_label_stores_it_and_peers_lists_it(store, tmp_path):
    rep = share.trust(store, PEER, label="  my   laptop ", force=True, identity_dir=tmp_path / "id")
    assert rep["trusted"] is True and rep["label"] == "my laptop"
    assert _label(store) == "my laptop"
    listed = {p["origin"]: p for p in share.peers(store)}
    assert listed[PEER]["label"] == "my laptop" and listed[PEER]["trusted"] is True


def test_labelling_an_origin_already_trusted_only_replaces_the_label(store, tmp_path, monkeypatch):
    from remem.engine import share_choices

    share.trust(store, PEER, label="laptop", force=True, identity_dir=tmp_path / "id")

    def no_activation(*a, **k):
        raise AssertionError("relabelling a trusted origin must not re-run activation")

    with monkeypatch.context() as patched:  # undone alone: the private home stays in place
        patched.setattr(share_choices, "activate", no_activation)
        rep = share.trust(store, PEER[:6], label="desk", identity_dir=tmp_path / "id")
    assert rep == {"origin": PEER, "trusted": True, "label": "desk", "activated": [], "demoted": [],
                   "waiting": 0, "waiting_for_project": 0}
    assert _label(store) == "desk"
    # Without --label the label is left alone; "" clears it.
    share.trust(store, PEER, identity_dir=tmp_path / "id")
    assert _label(store) == "desk"
    share.trust(store, PEER, label="", identity_dir=tmp_path / "id")
    assert _label(store) is None


def test_off_and_forget_keep_the_label_and_a_bad_label_is_refused(store, tmp_path):
    share.trust(store, PEER, label="Ana", force=True, identity_dir=tmp_path / "id")
    assert share.trust(store, PEER, False, identity_dir=tmp_path / "id")["label"] == "Ana"
    assert share.forget_peer(store, PEER, identity_dir=tmp_path / "id")["label"] == "Ana"
    assert _label(store) == "Ana"
    assert share.forget_peer(store, PEER, label="Ana's desk", identity_dir=tmp_path / "id")["label"] == "Ana's desk"
    for bad in ("evil\x1b[2J", "x" * 65):
        with pytest.raises(ShareError):
            share.trust(store, PEER, label=bad, identity_dir=tmp_path / "id")
    assert _label(store) == "Ana's desk"


@pytest.mark.parametrize("bad", ["lap\ttop", "lap\ntop", "laptop\r", "lap\x01top", "lap\x7ftop",
                                 "lap\x85top", "lap\u2028top", "lap\u202etop"])
def test_a_peer_label_with_any_control_character_is_refused(store, tmp_path, bad):
    peer = "0123456789abcdef"
    share.trust(store, peer, label="Ana", force=True, identity_dir=tmp_path / "id")
    with pytest.raises(share.ShareError, match="control characters"):
        share.trust(store, peer, label=bad, identity_dir=tmp_path / "id")
    assert share.peers(store)[0]["label"] == "Ana"


def test_a_peer_label_has_its_spaces_collapsed(store, tmp_path):
    peer = "0123456789abcdef"
    rep = share.trust(store, peer, label="  Ana's\u00a0\u00a0 desk ", force=True, identity_dir=tmp_path / "id")
    assert rep["label"] == "Ana's desk"


def test_candidates_name_their_origin_by_its_label(store, tmp_path):
    lessons.add_lesson(store, "Run the full test suite before handing back work", "correction",
                       status="candidate", origin=OTHER, origins=[OTHER])
    share.trust(store, OTHER, False, label="team build box", identity_dir=tmp_path / "id")  # seen: it sent one
    rows = share.candidates(store, identity_dir=tmp_path / "id")
    assert rows and rows[0]["origin"] == OTHER and rows[0]["origin_label"] == "team build box"


def test_share_trust_label_through_the_cli(home):
    res = run_remem("share", "trust", PEER, "--label", "laptop", "--force")  # ahead of its first sync
    assert res.returncode == 0, res.stderr
    assert f"{PEER} (laptop) trusted" in res.stdout
    peers = run_remem("share", "peers", "--json")
    assert peers.returncode == 0, peers.stderr
    assert [(p["origin"], p["label"], p["trusted"]) for p in peers.json()] == [(PEER, "laptop", True)]
    # Again on a trusted origin: only the label changes.
    again = run_remem("share", "trust", PEER, "--label", "desk", "--json")
    assert again.returncode == 0, again.stderr
    assert again.json()["label"] == "desk" and again.json()["trusted"] is True
    table = run_remem("share", "peers", env={"COLUMNS": "200"})
    assert table.returncode == 0 and "label" in table.stdout and "desk" in table.stdout
    assert "--label" in run_remem("share", "trust", "--help", env={"COLUMNS": "200"}).stdout
