"""`remem lessons edit --json` gives the same keys whatever happened (`changed`, `redacted`,
`cut`, `replaced`, `revoked_words`), and `changed` is true only when the words changed: the
lesson's own text again is nothing to change, and nothing is written for it."""

from __future__ import annotations

import json
from pathlib import Path

from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.store import Store

TEXT = "Install packages with uv, never pip."
EDIT_KEYS = ("changed", "redacted", "cut", "replaced", "revoked_words")


def _lesson() -> dict:
    with Store() as store:
        return add_lesson(store, TEXT, "correction")


def _stored(lesson_id: str) -> dict:
    with Store() as store:
        return get_lesson(store, lesson_id)


def test_an_editor_closed_unsaved_gives_every_key_of_an_edit(cli, home, tmp_path: Path, monkeypatch) -> None:
    lesson = _lesson()
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nexit 0\n")  # saves nothing: click reads that as closed unsaved
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    res = cli("lessons", "edit", lesson["id"], "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {key: out.get(key, "missing") for key in EDIT_KEYS} == {
        "changed": False, "redacted": False, "cut": 0, "replaced": None, "revoked_words": None}
    assert out["text"] == TEXT and "closed unsaved" in out["message"]
    edited = json.loads(cli("lessons", "edit", lesson["id"], "--text", "Install with uv.", "--json").stdout)
    assert set(EDIT_KEYS) <= set(edited) and edited["changed"] is True  # the same keys as an edit


def test_the_lessons_own_text_changes_nothing(cli, home) -> None:
    lesson = _lesson()
    before = _stored(lesson["id"])
    # Its words again, spaced otherwise: the stored text once tidied, so the same words.
    res = cli("lessons", "edit", lesson["id"], "--text", f"  {TEXT.replace(' ', '   ')}\n", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {key: out.get(key, "missing") for key in EDIT_KEYS} == {
        "changed": False, "redacted": False, "cut": 0, "replaced": None, "revoked_words": None}
    assert out["message"] == f"{lesson['id']} says this already: nothing to change"
    after = _stored(lesson["id"])
    # Nothing written: no draft of the same words, no new `updated`.
    assert (after["text"], after["draft"], after["updated"]) == (before["text"], before["draft"], before["updated"])
    plain = cli("lessons", "edit", lesson["id"], "--text", TEXT)
    assert plain.exit_code == 0 and plain.stdout == f"{lesson['id']} says this already: nothing to change\n"
