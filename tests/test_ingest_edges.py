"""Ingest: a file read as the wrong source, copies of one session, folders and files that are
no transcripts. Real store, real bundled model, small fixtures written here or the project's own."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.engine import ingest

FIX = Path(__file__).parent / "fixtures" / "claude_code"
SID = "11111111-1111-4111-8111-111111111111"  # v1_sidechain.jsonl's session
CODEX_ROLLOUT = (Path(__file__).parent / "fixtures" / "codex" / "sessions" / "2026" / "11" / "20"
                 / "rollout-2026-11-20T10-00-00-0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl")


def _transcript(folder: Path, lines: int | None = None) -> Path:
    """v1_sidechain.jsonl (its correction "no, use pnpm …" on line 14) as session SID's file,
    whole or its first `lines` lines (an older copy)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SID}.jsonl"
    text = (FIX / "v1_sidechain.jsonl").read_text()
    path.write_text(text if lines is None else "".join(text.splitlines(keepends=True)[:lines]))
    return path


def _pnpm(store) -> int:
    return store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction' AND title LIKE 'no, use pnpm%'")


# --------------------------------------------------------------------------- 1, 2: the wrong source

def test_a_claude_code_transcript_named_as_codex_is_refused_and_not_recorded(store, tmp_path):
    path = _transcript(tmp_path / "p")
    named = ingest.ingest_paths(store, [path], source="codex")
    assert named["errors"] == [f"{path}: looks like a Claude Code transcript, not a Codex rollout: "
                               "pass --source claude-code"], named
    assert named["files"] == 0 and store.scalar("SELECT count(*) FROM sessions") == 0
    guessed = ingest.ingest_paths(store, [path])  # not hidden: read at the next plain run
    assert guessed["files"] == 1 and guessed["skipped"] == 0 and _pnpm(store) == 1


def test_a_row_stored_under_the_wrong_source_is_read_again_as_what_the_file_holds(store, tmp_path):
    """A store an earlier release left with a Claude Code transcript recorded as a rollout
    (nothing found in it) heals: the guess reads it again, once."""
    from remem.engine.codex import parse_rollout
    from remem.engine.session_episodes import ingest_session

    path = _transcript(tmp_path / "p")
    wrong = parse_rollout(path)
    wrong.path = str(path)
    ingest_session(store, wrong, mtime=path.stat().st_mtime, size=path.stat().st_size, whole=True)
    again = ingest.ingest_paths(store, [path])
    assert again["files"] == 1 and again["skipped"] == 0 and _pnpm(store) == 1, again
    assert store.scalar("SELECT source FROM sessions WHERE path = ?", (str(path),)) == "claude-code"
    assert ingest.ingest_paths(store, [path])["skipped"] == 1


def test_a_rollout_under_another_name_stored_as_one_stays_unchanged(store, tmp_path):
    path = tmp_path / "saved.jsonl"
    shutil.copy(CODEX_ROLLOUT, path)
    assert ingest.ingest_paths(store, [path], source="codex")["files"] == 1
    assert ingest.ingest_paths(store, [path])["skipped"] == 1  # the guess (claude-code) agrees


CHAT_LINES = [{"role": "user", "content": "rename the helper"}, {"role": "assistant", "content": "Renamed."}]
EVENT_LINES = [{"v": 1, "at": "2026-11-29T10:00:00Z", "kind": "note", "text": "the staging database is read-only"}]


@pytest.mark.parametrize("lines, source", [(CHAT_LINES, "chats"), (EVENT_LINES, "events")])
def test_a_jsonl_of_another_source_named_without_source_names_it(store, tmp_path, lines, source):
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = ingest.ingest_paths(store, [path])
    assert len(summary["errors"]) == 1 and summary["errors"][0].endswith(f": pass --source {source}"), summary
    assert summary["files"] == 0 and store.scalar("SELECT count(*) FROM sessions") == 0
    assert ingest.ingest_paths(store, [path])["skipped"] == 0  # said again, never hidden
    assert ingest.ingest_paths(store, [path], source=source)["errors"] == []


def test_json_lines_of_no_known_kind_are_no_transcript(store, tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"cpu": 3}\n{"cpu": 4}\n')
    summary = ingest.ingest_paths(store, [path])
    assert summary["errors"] == [f"{path}: no records found (2 JSON lines that are no records); expected a Claude Code "
                                 "transcript, one JSON object per line (another kind of file: pass "
                                 "--source codex or chats)"]
    assert store.scalar("SELECT count(*) FROM sessions") == 0


# --------------------------------------------------------------------------- 3: copies of one session

def test_an_older_copy_of_a_transcript_does_not_replace_the_live_one(store, tmp_path):
    live = _transcript(tmp_path / "live" / "p")
    old = _transcript(tmp_path / "old" / "p", lines=10)  # written after: newer, but shorter
    assert ingest.ingest_paths(store, [live])["files"] == 1 and _pnpm(store) == 1
    copy = ingest.ingest_paths(store, [old])
    assert copy["files"] == 0 and copy["skipped"] == 1 and _pnpm(store) == 1, copy
    for _ in range(2):  # both named: read in turn, neither replaces the other's findings
        both = ingest.ingest_paths(store, [tmp_path / "live", tmp_path / "old"])
        assert both["files"] == 0 and both["skipped"] == 2 and _pnpm(store) == 1, both
    assert store.scalar("SELECT path FROM sessions WHERE id = ?", (SID,)) == str(live)


def test_the_longer_copy_read_after_the_shorter_one_tells_the_session(store, tmp_path):
    old = _transcript(tmp_path / "old" / "p", lines=10)
    live = _transcript(tmp_path / "live" / "p")
    ingest.ingest_paths(store, [old])
    assert _pnpm(store) == 0
    assert ingest.ingest_paths(store, [live])["files"] == 1 and _pnpm(store) == 1
    assert ingest.ingest_paths(store, [old])["skipped"] == 1 and _pnpm(store) == 1


def test_a_symlinked_transcript_is_one_file(store, tmp_path):
    real = _transcript(tmp_path / "p")
    (tmp_path / "p" / "link.jsonl").symlink_to(real)
    first = ingest.ingest_paths(store, [tmp_path / "p"])
    assert first["files"] == 1 and first["sessions"] == 1, first
    again = ingest.ingest_paths(store, [tmp_path / "p"])
    assert again["files"] == 0 and again["skipped"] == 1, again
    assert store.scalar("SELECT path FROM sessions") == str(real)


# --------------------------------------------------------------------------- 4: praise is no pushback

_WORDS = st.sampled_from(["helper", "parser", "tests", "README", "config", "the API", "it", "this"])
_PRAISE = st.sampled_from([
    "Don't hesitate to refactor {w} if needed. Great work!", "No way, that's brilliant! Commit it.",
    "Never thought {w} would be so easy, thanks!", "Nope, no more changes needed. Ship it.",
    "Revert is not needed, {w} is good.", "No need to revert {w}, the change is good.",
    "Why did you say {w} passes? just curious", "I moved {w} around myself, looks good to me",
    "Nope. Ship it.", "Thanks for {w}! Otherwise LGTM",
])
_PUSHBACK = st.sampled_from([
    ("No way, {w} is wrong.", "no"), ("Revert {w}, the build broke", "undo"),
    ("Why did you say {w} passes? It fails.", "undo"), ("Don't touch {w}", "don't"),
    ("Never rename {w} again", "don't"), ("No, use pnpm for {w} instead", "no"),
    # pushback, then praise for the rest
    ("No, use pnpm for {w}, not npm. Otherwise LGTM", "no"), ("Don't touch {w}. The rest looks good.", "don't"),
    ("Stop adding comments to {w}. Otherwise great work!", "stop"),
    ("no, use pnpm for {w} instead. Then ship it.", "no"), ("You deleted {w}! Put it back, then commit it.", "undo"),
    ("Revert {w}; everything else looks good to me.", "undo"),
])


@given(_PRAISE, _WORDS)
def test_praise_in_pushbacks_words_is_no_correction(template, word):
    from remem.engine.detect_corrections import pushback

    assert pushback(template.format(w=word)) is None


@given(_PUSHBACK, _WORDS)
def test_pushback_beside_the_praise_is_still_read(case, word):
    from remem.engine.detect_corrections import pushback

    template, how = case
    assert pushback(template.format(w=word)) == how


# --------------------------------------------------------------------------- 5, 7: folders

def _as_a_reader_without_dac_override() -> list[str]:
    """The command prefix that runs remem as a user folder permissions apply to: root loses
    its override of them (setpriv), anyone else is such a user already."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: no way to make a folder unreadable")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def _ingest_json(*args: str) -> tuple[int, dict]:
    import subprocess
    import sys

    proc = subprocess.run([*_as_a_reader_without_dac_override(), sys.executable, "-m", "remem", "ingest",
                           "--json", *args], capture_output=True, text=True, timeout=300)
    return proc.returncode, json.loads(proc.stdout)


def test_a_project_folder_that_cannot_be_listed_is_an_error_line(tmp_path):
    home = tmp_path / "claude"
    _transcript(home / "projects" / "pA")
    locked = home / "projects" / "pC"
    locked.mkdir()
    (locked / "x.jsonl").write_text((FIX / "v2_stream.jsonl").read_text())
    locked.chmod(0)
    try:
        code, scanned = _ingest_json(str(home))
        assert code == 0 and scanned["sessions"] == 1, scanned
        line = f"cannot read {locked} (Permission denied); check the path and its permissions"
        assert scanned["errors"] == [line]
        code, named = _ingest_json(str(locked))  # the folder typed, named as typed; the summary kept
        assert code == 1 and named["errors"] == [line] and named["error"] == line
        assert {"files", "skipped", "sessions", "episodes", "by_kind"} <= set(named)
    finally:
        locked.chmod(0o755)


def test_one_project_folder_named_is_read_without_its_subfolders(store, tmp_path):
    app = tmp_path / "a" / "projects" / "app"
    _transcript(app)
    (app / "subagents").mkdir()
    shutil.copy(FIX / "v2_tools.jsonl", app / "subagents" / "agent-x.jsonl")
    (app / "memory").mkdir()
    shutil.copy(FIX / "v2_stream.jsonl", app / "memory" / "notes.jsonl")
    summary = ingest.ingest_paths(store, [app])
    assert summary["files"] == 1 and summary["sessions"] == 1, summary
    # its projects folder, or the Claude home above it, reads each project's top level
    assert ingest.ingest_paths(store, [tmp_path / "a" / "projects"])["skipped"] == 1
    assert ingest.ingest_paths(store, [tmp_path / "a"])["skipped"] == 1


# --------------------------------------------------------------------------- 6: a conversation read again

def _message(at: str, role: str, text: str) -> str:
    return json.dumps({"v": 1, "at": at, "kind": "message", "session": "s1", "role": role, "text": text}) + "\n"


def test_an_events_conversation_read_again_with_nothing_new_is_skipped(store, tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(_message("2026-11-29T10:00:00Z", "user", "rename the helper")
                    + _message("2026-11-29T10:00:05Z", "assistant", "Renamed it.")
                    + _message("2026-11-29T10:00:09Z", "user", "no, that's wrong, keep the old name"))
    first = ingest.ingest_events(store, path)
    assert (first["files"], first["skipped"], first["sessions"]) == (1, 0, 1)
    again = ingest.ingest_events(store, path)
    assert (again["files"], again["skipped"], again["sessions"], again["episodes"]) == (0, 1, 0, 0), again
    with path.open("a") as fh:  # the conversation goes on: read as new
        fh.write(_message("2026-11-29T10:01:00Z", "assistant", "Kept the old name."))
    grown = ingest.ingest_events(store, path)
    assert (grown["files"], grown["skipped"], grown["sessions"]) == (1, 0, 1), grown


# --------------------------------------------------------------------------- 8: no regular file

def test_a_pipe_named_is_an_error_line_not_a_wait(store, tmp_path):
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    line = f"{fifo}: not a regular file (a pipe, a socket, a device or a folder); name a file"
    assert ingest.ingest_paths(store, [fifo])["errors"] == [line]
    assert ingest.ingest_events(store, fifo)["errors"] == [line]


# --------------------------------------------------------------------------- 9: a huge message

def test_the_patterns_read_the_ends_of_a_huge_message():
    """A 60 MB paste is read at its ends (SCAN_EDGE each), where what the person says about it is."""
    from remem.engine import detect
    from remem.engine.detect_common import SCAN_EDGE
    from remem.engine.session import Session, Turn

    paste = "x" * (3 * SCAN_EDGE)

    def said(text: str) -> Session:
        return Session(id="s", source="claude-code", turns=[
            Turn(role="user", text="fix the parser"), Turn(role="assistant", text="Done."),
            Turn(role="user", text=text)])

    middle = said(f"{paste} Surprisingly the old parser was faster. {paste}")
    assert detect.surprises(middle) == [] and detect.corrections(said(f"{paste} use uv instead. {paste}")) == []
    assert len(detect.surprises(said(f"{paste} Surprisingly the old parser was faster."))) == 1
    found = detect.corrections(said(f"No, that's wrong: {paste}"))
    assert [f.extra["how"] for f in found] == ["no"] and found[0].text.startswith("No, that's wrong: x")


# --------------------------------------------------------------------------- 10: bytes and torn lines

def test_a_line_with_a_latin1_byte_keeps_its_record(store, tmp_path):
    path = _transcript(tmp_path / "p")
    data = path.read_bytes().replace("no, use pnpm instead".encode(), "no, use pnpm instead, caf\xe9".encode("latin-1"))
    assert b"caf\xe9" in data
    path.write_bytes(data)
    summary = ingest.ingest_paths(store, [path])
    assert summary["malformed_lines"] == 0 and _pnpm(store) == 1, summary


def test_an_events_file_still_being_written_is_not_refused(store, tmp_path):
    path = tmp_path / "e.jsonl"
    note = json.dumps({"v": 1, "at": "2026-11-29T10:00:00Z", "kind": "note", "text": "staging is read-only"})
    path.write_text(note + "\n" + note.replace("staging", "prod")[:25])
    first = ingest.ingest_events(store, path)
    assert first["errors"] == [] and first["malformed_lines"] == 0 and first["episodes"] == 1, first
    path.write_text(note + "\n" + note.replace("staging", "prod") + "\n")  # finished: read now
    assert ingest.ingest_events(store, path)["episodes"] == 1
