"""`remem lessons` as a person runs it: `list` a page at a time (and every status its help names),
`show` and the lesson detail behind it (sources up to a limit, aliases, every prediction, only
the newest prime decisions), `edit` when no editor can run, with secrets in the new words or
text saved in another encoding, and `veto` or `restore` saying so when there is nothing to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.engine import browse
from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.store import Store
from tests.conftest import run_remem


# --------------------------------------------------------------------------- list

def _many_lessons(n: int) -> list[str]:
    with Store() as store:
        return [add_lesson(store, f"Lesson number {i}: prefer tool {i} over the old one.", "correction",
                           sources=[f"s{i}"], strength=1.0 + i / 1000)["id"] for i in range(n)]


def test_lessons_list_shows_a_page_and_says_how_many_more(home):
    """2,055 lessons printed whole took 1.7 s and 810 KB: the table shows 50 unless --limit."""
    ids = _many_lessons(60)
    strongest_first = ids[::-1]
    res = run_remem("lessons", "list", env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert {i for i in ids if i in res.stdout} == set(strongest_first[:50])
    assert res.stdout.rstrip().splitlines()[-1] == "… 10 more; use --limit N (0: every lesson) or --json"
    res = run_remem("lessons", "list", "--limit", "7", env={"COLUMNS": "200"})
    assert {i for i in ids if i in res.stdout} == set(strongest_first[:7]) and "… 53 more" in res.stdout
    res = run_remem("lessons", "list", "--limit", "0", env={"COLUMNS": "200"})
    assert all(i in res.stdout for i in ids) and "more;" not in res.stdout
    # --json stays complete unless --limit is given.
    assert [l["id"] for l in run_remem("lessons", "list", "--json").json()] == strongest_first
    assert [l["id"] for l in run_remem("lessons", "list", "--json", "--limit", "3").json()] == strongest_first[:3]
    bad = run_remem("lessons", "list", "--limit", "-1")
    assert bad.returncode == 1 and bad.stderr.strip() == "remem: --limit must be 0 (every lesson) or more, not -1"


def test_lessons_list_status_help_names_every_status_it_accepts(home):
    """The help said "active, candidate, vetoed, revoked or all" but quarantined was accepted."""
    from remem.engine.store import LESSON_STATUSES

    res = run_remem("lessons", "list", "--help", env={"COLUMNS": "300"})
    assert res.returncode == 0
    helped = " ".join(res.stdout.split())
    assert f"{', '.join(LESSON_STATUSES)} or all." in helped
    for status in (*LESSON_STATUSES, "all"):
        assert run_remem("lessons", "list", "--status", status).returncode == 0, status
    assert "quarantined" in LESSON_STATUSES


# --------------------------------------------------------------------------- show: a lesson's detail

def test_lesson_detail_has_aliases_and_a_sources_limit_and_the_cli_shows_it(store, cli):
    from remem.engine.lessons import merge_into

    store.put_episodes([{"id": f"s{i:03d}", "kind": "correction", "title": f"use uv {i}",
                         "gist": f"use uv {i}", "at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00"}
                        for i in range(230)])
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=[f"s{i:03d}" for i in range(220)])
    other = add_lesson(store, "Install with uv.", "correction", sources=["s225"])
    merge_into(store, lesson["id"], other["id"])
    found = browse.lesson_detail(store, lesson["id"])
    assert len(found["episodes"]) == 50 and [a["old"] for a in found["aliases"]] == [other["id"]]
    assert len(browse.lesson_detail(store, lesson["id"], sources_limit=200)["episodes"]) == 200
    shown = json.loads(cli("lessons", "show", lesson["id"], "--json").stdout)
    assert len(shown["source_episodes"]) == 200 and [a["old"] for a in shown["aliases"]] == [other["id"]]
    assert f"merged into it: {other['id']}" in cli("lessons", "show", lesson["id"]).stdout


def test_lessons_show_lists_every_prediction_oldest_first(store, cli):
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=[])
    with store.write() as conn:
        for i in range(25):
            conn.execute("INSERT INTO predictions (id, lesson_id, text, made) VALUES (?, ?, ?, ?)",
                         (f"P{i:02d}", lesson["id"], f"prediction {i}", f"2026-01-{i + 1:02d}T00:00:00+00:00"))
    assert len(browse.lesson_detail(store, lesson["id"])["predictions"]) == 20  # the TUI's newest 20
    shown = json.loads(cli("lessons", "show", lesson["id"], "--json").stdout)
    assert [p["id"] for p in shown["predictions"]] == [f"P{i:02d}" for i in range(25)]
    assert set(shown["predictions"][0]) == {"id", "text", "made", "resolved", "outcome", "evidence"}


def _primes(store, rows: list[list[str]]) -> None:
    with store.write() as conn:
        conn.executemany(
            "INSERT INTO primes (at, session_id, agent, event, lesson_ids, held_out, query, chars) "
            "VALUES (?, ?, 'claude-code', 'prompt', ?, 0, 'q', 10)",
            [(f"2026-11-01T00:00:00.{i:06d}+00:00", f"s{i}", json.dumps(ids)) for i, ids in enumerate(rows)])


def test_the_lesson_detail_reads_only_the_newest_prime_decisions(store):
    """It scanned every row of `primes` (LIKE '%"id"%', ordered by time) on every cursor move:
    75 ms at 520,000 rows. Now newest first by rowid, at most `primes_window` rows."""
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    other = add_lesson(store, "Never push to main.", "correction", sources=["y"])
    lid = lesson["id"]
    # 10 old decisions that primed it, then 300 that did not, then 30 that did.
    _primes(store, [[lid]] * 10 + [[other["id"]]] * 300 + [[other["id"], lid]] * 30)
    found = browse.lesson_detail(store, lid, primes_window=100)
    assert len(found["primes"]) == browse.PRIMES_SHOWN == 20
    assert [p["session_id"] for p in found["primes"]] == [f"s{i}" for i in range(339, 319, -1)]  # newest first
    assert found["primes_window"] == 100  # older decisions were not read
    assert browse.lesson_detail(store, other["id"], primes_window=20)["primes_window"] == 20
    # The old ones are outside a window of 100: not read, and the detail says how far it looked.
    with store.write() as conn:
        conn.execute("DELETE FROM primes WHERE lesson_ids LIKE ?", (f'%"{other["id"]}", "{lid}"%',))
    found = browse.lesson_detail(store, lid, primes_window=100)
    assert found["primes"] == [] and found["primes_window"] == 100
    everything = browse.lesson_detail(store, lid, primes_window=None)
    assert len(everything["primes"]) == 10 and everything["primes_window"] is None
    # A window holding every decision says so: no match then means never.
    assert browse.lesson_detail(store, lid, primes_window=10_000)["primes_window"] is None
    assert browse.lesson_detail(store, lid)["primes_window"] is None  # the default window, 20,000
    # `%` and `_` in an id are plain characters (instr, not LIKE).
    assert browse.lesson_primes(store, "%")[0] == []


# --------------------------------------------------------------------------- edit

def _lesson(text: str = "Install packages with uv, never pip.") -> dict:
    with Store() as store:
        return add_lesson(store, text, "correction")


def _stored(lesson_id: str) -> dict:
    with Store() as store:
        return get_lesson(store, lesson_id)


def test_lessons_edit_without_an_editor_or_a_terminal_refuses_at_once(home, monkeypatch):
    """No $EDITOR or $VISUAL and stdin not a terminal: click started vim, which flooded the
    output with terminal codes before "could not run the editor"."""
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    with Store() as store:
        lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    res = run_remem("lessons", "edit", lesson["id"], input="", timeout=30)
    assert res.returncode == 1
    assert res.stdout == "" and "\x1b" not in res.stderr
    assert res.stderr == ('remem: could not run the editor (no $VISUAL or $EDITOR set, and no terminal here '
                          'for vi); give the text with --text "…", or set $EDITOR\n')
    with Store() as store:
        assert get_lesson(store, lesson["id"])["text"] == "Use uv, not pip."


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


def _editor(tmp_path: Path, saves: str) -> dict[str, str]:
    """An $EDITOR that saves the file as `saves` (a printf format: octal escapes are bytes)."""
    script = tmp_path / "editor.sh"
    script.write_text(f'#!/bin/sh\nprintf "{saves}" > "$1"\n')
    script.chmod(0o755)
    return {"EDITOR": str(script), "VISUAL": ""}


AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "hunter2hunter2"


@pytest.mark.parametrize("how", ["--text", "$EDITOR"])
def test_secrets_typed_into_an_edit_are_redacted_and_never_rendered(home, tmp_path, how):
    """`remember` redacts a note as it is stored; an edit must too: the sleep's redact pass
    reads each row once, so it never sees an edit, and render writes a lesson's words to agent
    memory (MEMORY.md, the lesson file) and lessons.jsonl."""
    project = home.parent / "user" / ".claude" / "projects" / "-work-shop"
    project.mkdir(parents=True)  # a general lesson is rendered into every project
    lesson = _lesson()
    words = f"Use key {AWS_KEY} and password={PASSWORD} for the beta CI."
    if how == "--text":
        res = run_remem("lessons", "edit", lesson["id"], "--text", words)
    else:
        res = run_remem("lessons", "edit", lesson["id"], env=_editor(tmp_path, words + "\\n"))
    assert res.returncode == 0, res.stderr
    assert _stored(lesson["id"])["text"] == "Use key [secret] and password=[secret] for the beta CI."
    said = [line for line in res.stdout.splitlines() if "[secret]" in line and line.startswith("  ")]
    assert said == ["  a secret in the new words became [secret]: lessons are written to agent memory"], res.stdout
    assert run_remem("sleep", "-q", "--pass", "render").returncode == 0
    written = [*(project / "memory").iterdir(), home / "lessons.jsonl"]
    assert any(lesson["id"] in path.name for path in written)  # rendered, so the check below means something
    for path in written:
        assert AWS_KEY not in path.read_text() and PASSWORD not in path.read_text(), path


def test_an_edit_without_a_secret_says_nothing_of_secrets_even_when_cut(home):
    """Only a replaced secret is told: a text cut to the lesson cap is no redaction."""
    lesson = _lesson()
    res = run_remem("lessons", "edit", lesson["id"], "--text", "Use uv here. " * 400)
    assert res.returncode == 0, res.stderr
    assert "secret" not in res.stdout
    assert "[secret]" not in _stored(lesson["id"])["text"]


def test_an_edit_saved_in_another_encoding_is_kept_and_the_line_names_the_fix(home, tmp_path):
    """Invalid UTF-8 from the editor was "remem: 'utf-8' codec can't decode byte 0xff …" and
    the words were lost with the editor's temp file: now one line naming the fix and the file
    that keeps them, and the lesson unchanged."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    lesson = _lesson()
    res = run_remem("lessons", "edit", lesson["id"],
                    env={**_editor(tmp_path, "Use uv, not pip \\377\\376 here\\n"), "TMPDIR": str(temp)})
    assert res.returncode == 1, res.stdout
    line = res.stderr.strip()
    assert "\n" not in line and "Traceback" not in line and "codec" not in line, res.stderr
    assert line.startswith("remem: the edited text is not UTF-8 (byte 0xff)"), line
    assert "save it as UTF-8" in line and '--text "…"' in line, line
    kept = [p for p in temp.iterdir() if str(p) in line]
    assert len(kept) == 1, (line, list(temp.iterdir()))
    assert kept[0].read_bytes() == b"Use uv, not pip \xff\xfe here\n"  # nothing the person typed is lost
    assert kept[0].stat().st_mode & 0o077 == 0  # the person's words, private to them
    assert _stored(lesson["id"])["text"] == lesson["text"]


def test_an_edit_saved_as_utf8_with_a_byte_order_mark_and_crlf_is_read(home, tmp_path):
    """remem decodes the saved bytes itself now: as click did, a BOM and CRLF line ends go."""
    lesson = _lesson()
    res = run_remem("lessons", "edit", lesson["id"],
                    env=_editor(tmp_path, "\\357\\273\\277Install with uv \\342\\200\\224 never pip.\\r\\n"))
    assert res.returncode == 0, res.stderr
    assert _stored(lesson["id"])["text"] == "Install with uv \u2014 never pip."


# --------------------------------------------------------------------------- veto and restore

def test_restoring_a_lesson_that_is_not_vetoed_says_so_and_changes_nothing(home):
    from remem.engine import render_files, render_vetoes

    lesson = _lesson()
    res = run_remem("lessons", "restore", lesson["id"])
    assert res.returncode == 0, res.stderr  # a no-op, as `veto` of a vetoed lesson is
    assert res.stdout.strip() == f"{lesson['id']} is active, not vetoed: nothing to restore"
    assert "restored" not in res.stdout
    assert _stored(lesson["id"]) == lesson and not render_vetoes.vetoed_path().exists()
    # A vetoed one is restored, and says so.
    assert run_remem("lessons", "veto", lesson["id"]).returncode == 0
    res = run_remem("lessons", "restore", lesson["id"])
    assert res.returncode == 0 and res.stdout.startswith(f"restored {lesson['id']}"), res.stdout
    assert _stored(lesson["id"])["status"] == "active"
    # An active lesson that a veto of its text keeps from being rendered is a veto to undo.
    render_vetoes.record_veto({**lesson, "id": "another-id"})
    res = run_remem("lessons", "restore", lesson["id"])
    assert res.returncode == 0 and res.stdout.startswith(f"restored {lesson['id']}"), res.stdout
    assert render_files._read_json(render_vetoes.vetoed_path(), {}) == {}


def test_vetoing_a_lesson_that_is_vetoed_already_says_so_and_changes_nothing(home):
    from remem.engine import render_files, render_vetoes

    lesson = _lesson()
    res = run_remem("lessons", "veto", lesson["id"], "--note", "only the old repo")
    assert res.returncode == 0 and res.stdout.startswith(f"vetoed {lesson['id']}"), res.stdout
    vetoed, record = _stored(lesson["id"]), render_files._read_json(render_vetoes.vetoed_path(), {})
    res = run_remem("lessons", "veto", lesson["id"][:6], "--note", "another reason")
    assert res.returncode == 0, res.stderr  # a no-op, as `restore` of an active lesson is
    assert res.stdout.strip() == f"{lesson['id']} is vetoed already: nothing to do"
    assert "render" not in res.stdout
    assert _stored(lesson["id"]) == vetoed and render_files._read_json(render_vetoes.vetoed_path(), {}) == record
