"""Stored text on its way to a terminal: control characters (ESC, BEL, the C1 CSI) kept in a
memory, a lesson, its note, an event title, the morning report or another machine's files are
printed escaped by every command (list, recall, graph, lessons, morning, context, share,
doctor, errors), while JSON keeps the text as stored, with C1 controls escaped too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

HOSTILE = "\u001b]0;owned\u0007\u001b[2J FAILED test \u009b31m"
RAW = ("\u001b", "\u0007", "\u009b")  # what must never reach a terminal as it is


def _no_controls(text: str, where: Any = None) -> None:
    for char in RAW:
        assert char not in text, (where, char, text)


# --------------------------------------------------------------------------- memories

def _remember(cli: Any, text: str, *args: str) -> str:
    out = cli("remember", text, *args, "--json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)["id"]


def test_stored_control_characters_never_reach_the_terminal(home: Path, cli: Any) -> None:
    from remem.commands._out import safe, short

    first = _remember(cli, HOSTILE)
    other = _remember(cli, "the build FAILED again")
    assert cli("connect", first, other, "--type", "related_to").exit_code == 0
    for args in (["list"], ["recall", "FAILED test", "--explain"], ["graph", first], ["recall", "FAILED"]):
        out = cli(*args)
        assert out.exit_code == 0, out.output
        assert "FAILED test" in out.stdout or "FAILED" in out.stdout, out.stdout
        for char in ("\u001b", "\u0007", "\u009b"):
            assert char not in out.stdout, (args, out.stdout)
    rows = json.loads(cli("list", "--json").stdout)  # JSON keeps the text as stored
    assert any(r["title"] == HOSTILE for r in rows)
    assert safe("a\tb\nc\u001b", multiline=True) == "a\tb\nc\\x1b"
    assert short("x\u001b[2Jy") == "x\\x1b[2Jy"


# --------------------------------------------------------------------------- lessons

def _lesson(store: Any, text: str, cwd: str | None = None) -> str:
    from remem.engine import lessons

    return lessons.add_lesson(store, text, "correction", sources=["e1"], cwd=cwd, strength=1.5)["id"]


def test_lessons_show_edit_and_json_escape_stored_control_characters(home: Path, cli: Any, store: Any) -> None:
    lesson_id = _lesson(store, f"first words {HOSTILE}")
    edited = cli("lessons", "edit", lesson_id, "--text", f"Use uv {HOSTILE}")
    assert edited.exit_code == 0, edited.output
    _no_controls(edited.stdout, "edit")
    assert "FAILED test" in edited.stdout and "\\x1b" in edited.stdout
    assert cli("lessons", "veto", lesson_id, "--note", f"why {HOSTILE}").exit_code == 0
    shown = cli("lessons", "show", lesson_id)
    assert shown.exit_code == 0, shown.output
    _no_controls(shown.stdout, "show")
    assert shown.stdout.count("\\x1b]0;owned") == 3  # text, draft (the words before) and note
    as_json = cli("lessons", "show", lesson_id, "--json")
    _no_controls(as_json.stdout, "show --json")
    lesson = json.loads(as_json.stdout)  # JSON keeps the words as stored, escaped
    assert HOSTILE in lesson["text"] and HOSTILE in lesson["note"] and HOSTILE in lesson["draft"]


# --------------------------------------------------------------------------- JSON

def test_json_output_escapes_c1_controls_in_an_event_title(home: Path, cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps({"v": 1, "kind": "note", "at": "2026-11-29T10:00:00Z", "title": HOSTILE,
                                "text": "the build FAILED again on the runner"}) + "\n")
    assert cli("ingest", "--events", str(path)).exit_code == 0
    for args in (["list", "--json"], ["recall", "build FAILED runner", "--json"]):
        out = cli(*args)
        assert out.exit_code == 0, out.output
        _no_controls(out.stdout, args)
        assert "\\u009b" in out.stdout
        assert HOSTILE in _strings(json.loads(out.stdout))  # the title as stored


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [s for item in items for s in _strings(item)]


def test_a_json_error_escapes_c1_controls_too(monkeypatch: Any, capsys: Any) -> None:
    import typer

    from remem import cli as cli_mod

    monkeypatch.setattr(cli_mod, "_json_errors", True)
    with pytest.raises(typer.Exit):
        cli_mod._fail(f"cannot use {HOSTILE}")
    out = capsys.readouterr().out
    _no_controls(out, "error JSON")
    assert json.loads(out) == {"error": f"cannot use {HOSTILE}"}


# --------------------------------------------------------------------------- morning, context, share and doctor

def test_morning_and_context_escape_stored_control_characters(home: Path, cli: Any, store: Any,
                                                             tmp_path: Path) -> None:
    from remem import paths

    project = tmp_path / "shop"
    project.mkdir()
    _lesson(store, f"Build the image with make {HOSTILE}", cwd=str(project))
    out = cli("context", "--project", str(project))
    assert out.exit_code == 0, out.output
    assert "Build the image" in out.stdout
    _no_controls(out.stdout, "context")
    paths.morning_path().parent.mkdir(parents=True, exist_ok=True)
    paths.morning_path().write_text(f"# Morning\n\nlearned:\n\t- {HOSTILE}\n", encoding="utf-8")
    out = cli("morning")
    assert out.exit_code == 0, out.output
    _no_controls(out.stdout, "morning")
    assert "# Morning\n\nlearned:\n\t- \\x1b]0;owned" in out.stdout  # lines and tabs kept


def test_share_and_doctor_lines_escape_what_other_files_said(home: Path, cli: Any, capsys: Any,
                                                            monkeypatch: Any) -> None:
    from remem.commands.share import _print_receive
    from remem.engine import doctor

    _print_receive({
        "quarantined": [{"id": "abc", "origin": f"0123{HOSTILE}", "reasons": [f"secret: {HOSTILE}"]}],
        "rejected": [], "incomplete": [], "received": [],
        "activated": [{"id": "def", "why": f"corroborated {HOSTILE}"}],
        "revoked": [{"id": "ghi", "by": f"peer {HOSTILE}"}],
    })
    said = capsys.readouterr().out
    _no_controls(said, "share receive")
    assert said.count("\\x1b]0;owned") == 4

    def report(**_: Any) -> dict[str, Any]:
        return {"agents": [], "hooks": [], "store": {}, "schedule": {"wired": False, "how": "cron"},
                "problems": [{"problem": f"~/.claude/settings.json says {HOSTILE}", "fix": f"edit {HOSTILE}"}]}

    monkeypatch.setattr(doctor, "diagnose", report)
    out = cli("doctor", "--no-run")
    assert out.exit_code == 1, out.output  # it found a problem
    _no_controls(out.stdout, "doctor")
    assert out.stdout.count("\\x1b]0;owned") == 2
