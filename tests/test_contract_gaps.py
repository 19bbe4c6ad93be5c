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
    share.trust(store, PEER, label="Ana", force=True, identity_dir=tmp_path / "id")
    assert share.trust(store, PEER, False, identity_dir=tmp_path / "id")["label"] == "Ana"
    assert share.forget_peer(store, PEER, identity_dir=tmp_path / "id")["label"] == "Ana"
    assert _label(store) == "Ana"
    assert share.forget_peer(store, PEER, label="Ana's desk", identity_dir=tmp_path / "id")["label"] == "Ana's desk"
    for bad in ("evil\x1b[2J", "x" * 65):
        with pytest.raises(ShareError):
            share.trust(store, PEER, label=bad, identity_dir=tmp_path / "id")
    assert _label(store) == "Ana's desk"


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


# --------------------------------------------------------------------------- lessons edit | restore

def _lesson(text: str = "Install packages with uv, never pip.") -> dict:
    from remem.engine.store import Store

    with Store() as store:
        return lessons.add_lesson(store, text, "correction")


def _stored(lesson_id: str) -> dict:
    from remem.engine.store import Store

    with Store() as store:
        return lessons.get_lesson(store, lesson_id)


@pytest.mark.parametrize("editor, why", [
    ("false", "Editing failed"),
    ("/no/such/editor", "No such file or directory"),
])
def test_lessons_edit_with_an_editor_that_cannot_run_is_one_line(home, monkeypatch, editor, why):
    monkeypatch.delenv("VISUAL", raising=False)
    lesson = _lesson()
    res = run_remem("lessons", "edit", lesson["id"][:6], env={"EDITOR": editor})
    assert res.returncode == 1, res.stdout
    assert "Traceback" not in res.stderr and "ClickException" not in res.stderr
    line = res.stderr.strip()
    assert "\n" not in line, line
    assert line.startswith(f"remem: could not run the editor ($EDITOR={editor}: ") and why in line, line
    assert line.endswith('); give the text with --text "…"'), line
    assert _stored(lesson["id"])["text"] == lesson["text"]  # unchanged


def test_restoring_a_lesson_that_is_not_vetoed_says_so_and_changes_nothing(home):
    from remem.engine import render

    lesson = _lesson()
    res = run_remem("lessons", "restore", lesson["id"])
    assert res.returncode == 0, res.stderr  # a no-op, as `veto` of a vetoed lesson is
    assert res.stdout.strip() == f"{lesson['id']} is active, not vetoed: nothing to restore"
    assert "restored" not in res.stdout
    assert _stored(lesson["id"]) == lesson and not render.vetoed_path().exists()
    # A vetoed one is restored, and says so.
    assert run_remem("lessons", "veto", lesson["id"]).returncode == 0
    res = run_remem("lessons", "restore", lesson["id"])
    assert res.returncode == 0 and res.stdout.startswith(f"restored {lesson['id']}"), res.stdout
    assert _stored(lesson["id"])["status"] == "active"
    # An active lesson that a veto of its text keeps from being rendered is a veto to undo.
    render.record_veto({**lesson, "id": "another-id"})
    res = run_remem("lessons", "restore", lesson["id"])
    assert res.returncode == 0 and res.stdout.startswith(f"restored {lesson['id']}"), res.stdout
    assert render._read_json(render.vetoed_path(), {}) == {}


def test_vetoing_a_lesson_that_is_vetoed_already_says_so_and_changes_nothing(home):
    from remem.engine import render

    lesson = _lesson()
    res = run_remem("lessons", "veto", lesson["id"], "--note", "only the old repo")
    assert res.returncode == 0 and res.stdout.startswith(f"vetoed {lesson['id']}"), res.stdout
    vetoed, record = _stored(lesson["id"]), render._read_json(render.vetoed_path(), {})
    res = run_remem("lessons", "veto", lesson["id"][:6], "--note", "another reason")
    assert res.returncode == 0, res.stderr  # a no-op, as `restore` of an active lesson is
    assert res.stdout.strip() == f"{lesson['id']} is vetoed already: nothing to do"
    assert "render" not in res.stdout
    assert _stored(lesson["id"]) == vetoed and render._read_json(render.vetoed_path(), {}) == record
