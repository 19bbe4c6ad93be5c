"""Gaps between DESIGN.md and the code, closed: peer labels, and the sleep pass names DESIGN uses.

(Hook calls without a session id are in tests/test_hooks.py, beside the other hook tests.)
"""

from __future__ import annotations

import json

import pytest

from remem.engine import lessons, share
from remem.engine.share_sign import ShareError
from tests.conftest import run_remem

PEER = "3f9a0c1d2e4b5a69"
OTHER = "0123456789abcdef"


def _label(store, origin: str = PEER):
    return store.scalar("SELECT label FROM peers WHERE origin = ?", (origin,))


# --------------------------------------------------------------------------- peers.label

def test_trust_with_a_label_stores_it_and_peers_lists_it(store, tmp_path):
    rep = share.trust(store, PEER, label="  my   laptop ", identity_dir=tmp_path / "id")
    assert rep["trusted"] is True and rep["label"] == "my laptop"
    assert _label(store) == "my laptop"
    listed = {p["origin"]: p for p in share.peers(store)}
    assert listed[PEER]["label"] == "my laptop" and listed[PEER]["trusted"] is True


def test_labelling_an_origin_already_trusted_only_replaces_the_label(store, tmp_path, monkeypatch):
    from remem.engine import share_choices

    share.trust(store, PEER, label="laptop", identity_dir=tmp_path / "id")

    def no_activation(*a, **k):
        raise AssertionError("relabelling a trusted origin must not re-run activation")

    monkeypatch.setattr(share_choices, "activate", no_activation)
    rep = share.trust(store, PEER[:6], label="desk", identity_dir=tmp_path / "id")
    assert rep == {"origin": PEER, "trusted": True, "label": "desk", "activated": [], "demoted": []}
    assert _label(store) == "desk"
    # Without --label the label is left alone; "" clears it.
    monkeypatch.undo()
    share.trust(store, PEER, identity_dir=tmp_path / "id")
    assert _label(store) == "desk"
    share.trust(store, PEER, label="", identity_dir=tmp_path / "id")
    assert _label(store) is None


def test_off_and_forget_keep_the_label_and_a_bad_label_is_refused(store, tmp_path):
    share.trust(store, PEER, label="Ana", identity_dir=tmp_path / "id")
    assert share.trust(store, PEER, False, identity_dir=tmp_path / "id")["label"] == "Ana"
    assert share.forget_peer(store, PEER, identity_dir=tmp_path / "id")["label"] == "Ana"
    assert _label(store) == "Ana"
    assert share.forget_peer(store, PEER, label="Ana's desk", identity_dir=tmp_path / "id")["label"] == "Ana's desk"
    for bad in ("evil\x1b[2J", "x" * 65):
        with pytest.raises(ShareError):
            share.trust(store, PEER, label=bad, identity_dir=tmp_path / "id")
    assert _label(store) == "Ana's desk"


def test_candidates_name_their_origin_by_its_label(store, tmp_path):
    share.trust(store, OTHER, False, label="team build box", identity_dir=tmp_path / "id")
    lessons.add_lesson(store, "Run the full test suite before handing back work", "correction",
                       status="candidate", origin=OTHER, origins=[OTHER])
    rows = share.candidates(store, identity_dir=tmp_path / "id")
    assert rows and rows[0]["origin"] == OTHER and rows[0]["origin_label"] == "team build box"


def test_share_trust_label_through_the_cli(home):
    res = run_remem("share", "trust", PEER, "--label", "laptop")
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


# --------------------------------------------------------------------------- sleep pass aliases

@pytest.mark.parametrize("names, passes", [
    (["consolidate"], ["lessons"]),
    (["discover"], ["connect"]),
    (["discover_connections", "consolidate"], ["lessons", "connect"]),
    (["lessons", "consolidate"], ["lessons"]),
])
def test_sleep_accepts_the_pass_names_design_uses(home, names, passes):
    args = ["sleep", "--json", "--dry-run"]
    for name in names:
        args += ["--pass", name]
    res = run_remem(*args)
    assert res.returncode == 0, res.stderr
    assert list(res.json()["passes"]) == passes


def test_sleep_help_and_errors_name_the_aliases(home):
    helped = run_remem("sleep", "--help", env={"COLUMNS": "200"})
    assert "consolidate" in helped.stdout and "discover_connections" in helped.stdout
    bad = run_remem("sleep", "--pass", "bogus")
    assert bad.returncode != 0
    assert "unknown pass 'bogus'" in bad.stderr and "consolidate = lessons" in bad.stderr
