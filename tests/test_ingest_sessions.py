"""Ingest of Claude Code sessions written here record by record: a session read again (resumed
after its earlier file is gone, findings an older version titled otherwise, findings no detector
finds any more), what a session's episode keeps (every prompt, capped; a local model's gist; the
agent's last reply as plain text), when an error happened (also when its output starts with a
secret), and how a run goes on or stops (a file that cannot be parsed, a locked store, a file
name that is not UTF-8, the plan of the forks query).

Real store in a tmp REMEM_HOME (conftest), small transcripts written here.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from remem import paths
from remem.engine import ingest, session_episodes
from remem.engine.store import stable_id

CWD = "/home/dev/projects/spotter"
OLD = "55604662-cf2a-4331-851a-ec234028f8ca"
NEW = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"


# --------------------------------------------------------------------------- transcripts

def _rec(sid: str, kind: str, uuid: str, at: str, message: dict, **extra) -> str:
    return json.dumps({"type": kind, "sessionId": sid, "uuid": uuid, "timestamp": at, "cwd": CWD,
                       "message": message, **extra}) + "\n"


def _user(sid: str, uuid: str, at: str, content) -> str:
    return _rec(sid, "user", uuid, at, {"role": "user", "content": content})


def _assistant(sid: str, uuid: str, at: str, mid: str, blocks: list) -> str:
    return _rec(sid, "assistant", uuid, at, {"id": mid, "role": "assistant", "model": "claude-x",
                                             "content": blocks})


def _refused_session(sid: str) -> str:
    """The shape of a real short session: an ask, a Bash call refused, an interrupt."""
    refusal = ("The user doesn't want to proceed with this tool use. The tool use was rejected. "
               "STOP what you are doing and wait for the user to tell you how to proceed.")
    return "".join([
        _user(sid, f"{sid[:4]}-u1", "2026-02-10T21:11:56.846Z", "mix phx.server doesnt seem to start"),
        _assistant(sid, f"{sid[:4]}-a1", "2026-02-10T21:12:00.373Z", "m1",
                   [{"type": "text", "text": "Let me try running the server."}]),
        _assistant(sid, f"{sid[:4]}-a2", "2026-02-10T21:12:01.117Z", "m1",
                   [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                     "input": {"command": "mix phx.server 2>&1 | head -80"}}]),
        _user(sid, f"{sid[:4]}-u2", "2026-02-10T21:12:02.480Z",
              [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True, "content": refusal}]),
        _user(sid, f"{sid[:4]}-u3", "2026-02-10T21:12:02.480Z",
              [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
    ])


def _resumed(old_text: str) -> str:
    """A resumed session's file: a copy of the earlier records (their own session id), then
    the new prompt."""
    return old_text + _user(NEW, "new-u1", "2026-02-10T21:20:00.000Z", "try again with the port 4001")


@pytest.fixture
def project(home) -> Path:
    folder = paths.claude_projects_dir() / "-home-dev-projects-spotter"
    folder.mkdir(parents=True)
    return folder


def _episodes(store, sid: str) -> list[dict]:
    return store.rows("SELECT seq, id, kind, title, gist, detail, at FROM episodes WHERE session_id = ? "
                      "ORDER BY kind, title", (sid,))


def _touch(path: Path, when: int = 1_000_000_000) -> None:
    os.utime(path, (when, when))


# --------------------------------------------------------------------------- a resumed session

def test_a_resumed_session_never_takes_the_earlier_findings_once_their_file_is_gone(store, project):
    old = project / f"{OLD}.jsonl"
    old.write_text(_refused_session(OLD))
    new = project / f"{NEW}.jsonl"
    new.write_text(_resumed(old.read_text()))
    ingest.ingest_paths(store)
    assert [e["kind"] for e in _episodes(store, NEW)] == ["session"]
    session_before = _episodes(store, NEW)[0]
    # Claude Code deletes transcripts after 30 days; the resumed one grows.
    old.unlink()
    with new.open("a") as fh:
        fh.write(_assistant(NEW, "new-a1", "2026-02-10T21:20:05.000Z", "m9",
                            [{"type": "text", "text": "Starting it on 4001."}]))
    ingest.ingest_paths(store)
    after = _episodes(store, NEW)
    assert [e["kind"] for e in after] == ["session"], after  # no "refused Bash" under the new session
    assert after[0]["title"] == session_before["title"] == "spotter: try again with the port 4001"
    assert "mix phx.server" not in after[0]["gist"]
    assert [e["kind"] for e in _episodes(store, OLD)] == ["correction", "session"]


def test_a_resumed_session_read_before_its_earlier_one_gives_back_the_copy_once_that_is_read(store, project):
    """Read alone, the resumed file holds the copy's refusal (nothing read it elsewhere); once
    the earlier session is read, reading the resumed one again drops the copy's finding."""
    new = project / f"{NEW}.jsonl"
    new.write_text(_resumed(_refused_session(OLD)))
    ingest.ingest_paths(store, [new])
    assert "correction" in [e["kind"] for e in _episodes(store, NEW)]
    elsewhere = project.parent / "-elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{OLD}.jsonl").write_text(_refused_session(OLD))
    ingest.ingest_paths(store, [elsewhere / f"{OLD}.jsonl"])
    _touch(new)
    ingest.ingest_paths(store, [new])
    assert [e["kind"] for e in _episodes(store, NEW)] == ["session"]
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction'") == 1


# --------------------------------------------------------------------------- a session read again

def _failing_session(sid: str) -> str:
    return "".join([
        _user(sid, "f-u1", "2026-03-01T10:00:00.000Z", "write the config"),
        _assistant(sid, "f-a1", "2026-03-01T10:00:01.000Z", "m1",
                   [{"type": "text", "text": "Writing it."}]),
        _assistant(sid, "f-a2", "2026-03-01T10:00:02.000Z", "m1",
                   [{"type": "tool_use", "id": "toolu_w", "name": "Bash", "input": {"command": "python -c 'import yaml'"}}]),
        _user(sid, "f-u2", "2026-03-01T10:00:09.500Z",
              [{"type": "tool_result", "tool_use_id": "toolu_w", "is_error": True,
                "content": "Exit code 1\nTraceback (most recent call last):\n  File \"<string>\", line 1\n"
                           "ModuleNotFoundError: No module named 'yaml'"}]),
        _assistant(sid, "f-a3", "2026-03-01T10:00:12.000Z", "m2",
                   [{"type": "text", "text": "yaml is missing."}]),
    ])


def _as_an_older_version_titled_it(store, sid: str, kind: str, old_title: str) -> tuple[str, str]:
    """Give the stored finding the title (and so the id) an older title algorithm gave it."""
    row = store.one("SELECT id FROM episodes WHERE session_id = ? AND kind = ?", (sid, kind))
    old_id = stable_id(sid, kind, old_title)
    with store.write() as conn:
        conn.execute("UPDATE episodes SET id = ?, title = ? WHERE id = ?", (old_id, old_title, row["id"]))
        conn.execute("UPDATE tags SET memory_id = ? WHERE memory_id = ?", (old_id, row["id"]))
    return old_id, row["id"]


def test_a_session_read_again_replaces_findings_an_older_version_titled_otherwise(store, project):
    sid = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
    path = project / f"{sid}.jsonl"
    path.write_text(_failing_session(sid))
    ingest.ingest_paths(store)
    old_id, new_id = _as_an_older_version_titled_it(store, sid, "error", "Bash error: ModuleNotFoundError yaml")
    seq = store.scalar("SELECT seq FROM episodes WHERE id = ?", (old_id,))
    # What the person and the sleep made of it: a tag, a connection, a lesson, recalls, archived.
    with store.write() as conn:
        conn.execute("INSERT INTO tags (memory_id, tag) VALUES (?, 'mine')", (old_id,))
        conn.execute("INSERT INTO connections (src, dst, type, origin, created) VALUES (?, ?, 'related_to', "
                     "'explicit', '2026-03-02T00:00:00Z')", (old_id, stable_id(sid, "session", sid)))
        conn.execute("INSERT INTO lessons (id, text, kind, sources, created, updated) VALUES "
                     "('L1', 'Install yaml first.', 'error', ?, '2026-03-02T00:00:00Z', '2026-03-02T00:00:00Z')",
                     (json.dumps([old_id, "other"]),))
        conn.execute("UPDATE episodes SET recalls = 3, archived = 1 WHERE id = ?", (old_id,))
    _touch(path)
    summary = ingest.ingest_paths(store)
    assert summary["episodes"] == 0, summary  # nothing new: the same failure, titled anew
    errors = store.rows("SELECT seq, id, title, recalls, archived FROM episodes WHERE kind = 'error'")
    assert len(errors) == 1, errors
    assert errors[0]["id"] == new_id and errors[0]["seq"] == seq  # in place: the sleep counts it once
    assert errors[0]["recalls"] == 3 and errors[0]["archived"] == 1
    assert "mine" in store.tags_of(new_id) and "error:module_not_found" in store.tags_of(new_id)
    assert store.scalar("SELECT count(*) FROM tags WHERE memory_id = ?", (old_id,)) == 0
    assert store.scalar("SELECT src FROM connections") == new_id
    assert json.loads(store.scalar("SELECT sources FROM lessons WHERE id = 'L1'")) == [new_id, "other"]
    assert store.scalar("SELECT episodes FROM sessions WHERE id = ?", (sid,)) == len(_episodes(store, sid))


def test_a_finding_no_detector_finds_any_more_goes_unless_the_person_touched_it(store, project):
    sid = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
    path = project / f"{sid}.jsonl"
    path.write_text(_failing_session(sid))
    ingest.ingest_paths(store)
    base = {"session_id": sid, "source": "claude-code", "cwd": CWD, "at": "2026-03-01T10:00:03.000000Z",
            "importance": 0.7, "valence": -0.4, "arousal": 0.4}
    # Two corrections an older detector made that today's does not find; the person tagged one.
    store.put_episodes([
        {**base, "id": stable_id(sid, "correction", "yaml again"), "kind": "correction", "title": "yaml again",
         "gist": "yaml again", "tags": ["pushback:again"]},
        {**base, "id": stable_id(sid, "correction", "kept one"), "kind": "correction", "title": "kept one",
         "gist": "kept one", "tags": ["pushback:again", "review-later"]},
        # importance decays by itself: lower is no touch; raised by the person is
        {**base, "id": stable_id(sid, "correction", "faded"), "kind": "correction", "title": "faded",
         "gist": "faded", "importance": 0.41},
        {**base, "id": stable_id(sid, "correction", "raised"), "kind": "correction", "title": "raised",
         "gist": "raised", "importance": 0.95},
        {**base, "id": stable_id(sid, "correction", "linked"), "kind": "correction", "title": "linked",
         "gist": "linked"},
        # made by hand under the same session (its own id): never ingest's to replace
        {**base, "id": "hand-made-note", "kind": "correction", "title": "my note", "gist": "my note"},
    ])
    with store.write() as conn:
        conn.execute("INSERT INTO connections (src, dst, type, origin, created) VALUES ('hand-made-note', ?, "
                     "'related_to', 'explicit', '2026-03-02T00:00:00Z')", (stable_id(sid, "correction", "linked"),))
    _touch(path)
    ingest.ingest_paths(store)
    left = {e["title"] for e in _episodes(store, sid) if e["kind"] == "correction"}
    assert left == {"kept one", "my note", "raised", "linked"}
    assert store.scalar("SELECT count(*) FROM tags WHERE memory_id = ?", (stable_id(sid, "correction", "yaml again"),)) == 0


# --------------------------------------------------------------------------- what a session's episode keeps

def test_every_prompt_is_findable_and_an_opening_command_counts(store, project):
    sid = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
    (project / f"{sid}.jsonl").write_text("".join([
        _user(sid, "d-u0", "2026-03-01T09:00:00.000Z",
              "<command-name>/init</command-name>\n<command-message>init</command-message>\n<command-args></command-args>"),
        _assistant(sid, "d-a0", "2026-03-01T09:00:05.000Z", "m0", [{"type": "text", "text": "CLAUDE.md written."}]),
        _user(sid, "d-u1", "2026-03-01T09:10:00.000Z", "Thanks! Please update CLAUDE.md for current changes"),
        _assistant(sid, "d-a1", "2026-03-01T09:10:05.000Z", "m1", [{"type": "text", "text": "Updated."}]),
        _user(sid, "d-u2", "2026-03-01T09:20:00.000Z",
              "scrolling back in xterm.js still does not work, websearch xterm.js tmux interactions"),
        _assistant(sid, "d-a2", "2026-03-01T09:20:05.000Z", "m2", [{"type": "text", "text": "Looking."}]),
    ]))
    ingest.ingest_paths(store)
    session = store.one("SELECT title, gist, detail FROM episodes WHERE kind = 'session'")
    assert session["title"] == "spotter: /init"
    assert "The person wrote 3 messages." in session["gist"]
    assert "Thanks! Please update CLAUDE.md for current changes" in session["detail"]
    assert "websearch xterm.js tmux interactions" in session["detail"]
    from remem.engine.recall import recall

    found = recall(store, "xterm.js scrolling tmux", k=3, touch=False)
    assert found and found[0]["id"] == stable_id(sid, "session", sid), found


def test_the_prompts_kept_are_capped(store, project):
    sid = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"
    lines = []
    for n in range(80):
        lines.append(_user(sid, f"e-u{n}", f"2026-03-01T09:{n // 60:02d}:{n % 60:02d}.000Z", f"prompt {n} " + "x" * 3000))
        lines.append(_assistant(sid, f"e-a{n}", f"2026-03-01T09:{n // 60:02d}:{n % 60:02d}.500Z", f"m{n}",
                                [{"type": "text", "text": "ok"}]))
    (project / f"{sid}.jsonl").write_text("".join(lines))
    ingest.ingest_paths(store)
    detail = store.scalar("SELECT detail FROM episodes WHERE kind = 'session'")
    assert len(detail) <= 25_000 and "prompt 0 " in detail and detail.rstrip().endswith("more)")


def test_with_a_local_model_the_detail_keeps_the_mechanical_gist_and_the_prompts(store, project, monkeypatch):
    """A gist written by a local model puts the mechanical one in `detail`, the prompts after
    it; reading the unchanged session again asks the model nothing."""
    from remem import config
    from remem.engine import llm
    from remem.engine.transcripts import parse_file

    config.set_value("llm.url", "http://127.0.0.1:9/v1")
    asked: list[str] = []
    monkeypatch.setattr(llm, "complete", lambda prompt, *a, **k: asked.append(prompt) or "The person wrote a config.")
    sid = "77777777-7777-4777-8777-777777777777"
    path = project / f"{sid}.jsonl"
    path.write_text(_failing_session(sid))
    session_episodes.ingest_session(store, parse_file(path), whole=True)
    row = store.one("SELECT gist, detail FROM episodes WHERE kind = 'session'")
    assert row["gist"] == "The person wrote a config."
    assert row["detail"].startswith("Asked: write the config") and row["detail"].endswith("The person wrote:\n- write the config")
    session_episodes.ingest_session(store, parse_file(path), whole=True)
    assert len(asked) == 1


def test_the_session_gist_quotes_the_agents_last_reply_as_plain_text(store, project):
    sid = "cdcdcdcd-cdcd-4dcd-8dcd-cdcdcdcdcdcd"
    reply = "## Beads Created\n\n| Bead ID | Task |\n|---------|------|\n| **sp-1** | `setup` |"
    (project / f"{sid}.jsonl").write_text(
        _user(sid, "p-u1", "2026-03-01T10:00:00.000Z", "plan the beads")
        + _assistant(sid, "p-a1", "2026-03-01T10:00:01.000Z", "m1", [{"type": "text", "text": reply}]))
    ingest.ingest_paths(store)
    gist = store.scalar("SELECT gist FROM episodes WHERE kind = 'session'")
    ended = gist[gist.index("Ended:"):]
    assert "Beads Created" in ended and "`setup`" in ended
    assert "##" not in ended and "|---" not in ended and "**" not in ended


# --------------------------------------------------------------------------- when an error happened

def test_an_error_is_dated_when_the_call_failed(store, project):
    sid = "ffffffff-ffff-4fff-8fff-ffffffffffff"
    (project / f"{sid}.jsonl").write_text(_failing_session(sid))
    ingest.ingest_paths(store)
    from remem.engine import clock

    # the tool result's record, not the reply's first record (10:00:01)
    assert store.scalar("SELECT at FROM episodes WHERE kind = 'error'") == clock.normalise("2026-03-01T10:00:09.500Z")


def test_an_error_whose_output_starts_with_a_secret_keeps_its_failure_time(store, project):
    sid = "efefefef-efef-4fef-8fef-efefefefefef"
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = _failing_session(sid).replace("Exit code 1\\n", f"{key} rejected\\nExit code 1\\n")
    assert key in text
    (project / f"{sid}.jsonl").write_text(text)
    ingest.ingest_paths(store)
    from remem.engine import clock

    row = store.one("SELECT at, detail FROM episodes WHERE kind = 'error'")
    assert key not in row["detail"]
    assert row["at"] == clock.normalise("2026-03-01T10:00:09.500Z")


# --------------------------------------------------------------------------- the forks query

def test_the_forks_query_starts_from_the_tag_index(store, project):
    """Left to itself SQLite scans every session episode and probes its tags (400 ms a
    transcript in a 100k memory); the query ingest runs must start from tags_tag."""
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        sid = "abababab-abab-4bab-8bab-abababababab"
        (project / f"{sid}.jsonl").write_text(_failing_session(sid))
        ingest.ingest_paths(store)
    finally:
        store.conn.set_trace_callback(None)
    forks = [q for q in seen if "forked-from:" in q and "JOIN" in q]
    assert forks, seen
    plan = " | ".join(r[3] for r in store.conn.execute("EXPLAIN QUERY PLAN " + forks[0]).fetchall())
    assert plan.startswith("SEARCH t USING INDEX tags_tag"), plan
    assert "episodes_kind_at" not in plan


# --------------------------------------------------------------------------- a run that stops or goes on

def _hold_the_write_lock() -> sqlite3.Connection:
    other = sqlite3.connect(paths.db_path(), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_locked_store_stops_the_run_at_the_first_file(store, project, monkeypatch):
    for n in range(3):
        sid = f"1111111{n}-1111-4111-8111-111111111111"
        (project / f"{sid}.jsonl").write_text(_failing_session(sid))
    store.conn.execute("PRAGMA busy_timeout = 50")
    store.busy_ms = 50
    other = _hold_the_write_lock()
    try:
        from remem.errors import StoreError

        with pytest.raises(StoreError) as caught:
            ingest.ingest_paths(store)
    finally:
        other.rollback()
        other.close()
    message = str(caught.value)
    assert "\n" not in message and "busy" in message and "file 1 of 3" in message
    assert store.scalar("SELECT count(*) FROM sessions") == 0


def test_a_locked_store_is_one_line_and_exit_1(cli, project, monkeypatch):
    from remem.engine import store as store_mod

    monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_MS", 50)
    sid = "22222222-2222-4222-8222-222222222222"
    (project / f"{sid}.jsonl").write_text(_failing_session(sid))
    with store_mod.Store():
        pass  # the memory exists
    other = _hold_the_write_lock()
    try:
        result = cli("ingest")
    finally:
        other.rollback()
        other.close()
    assert result.exit_code == 1, result.output
    said = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith("remem: ") and "busy" in said[0], result.stderr
    assert "files read" not in result.stdout


def test_a_file_that_cannot_be_parsed_still_lets_the_rest_go_on(store, project):
    sid = "33333333-3333-4333-8333-333333333333"
    (project / f"{sid}.jsonl").write_text(_failing_session(sid))
    bad = project / "not-a-chat.json"
    bad.write_text("[]")
    summary = ingest.ingest_paths(store, [bad, project / f"{sid}.jsonl"])
    assert summary["sessions"] == 1 and len(summary["errors"]) == 1, summary


# --------------------------------------------------------------------------- a file name that is not UTF-8

def test_a_file_name_that_is_not_utf8_is_read(store, home, tmp_path, cli):
    folder = tmp_path / "x"
    folder.mkdir()
    raw = os.fsencode(str(folder)) + b"/caf\xe9.jsonl"
    sid = "55555555-5555-4555-8555-555555555555"
    with open(raw, "w") as fh:
        fh.write(_failing_session(sid).replace(sid, "caf"))
    name = os.fsdecode(raw)
    first = ingest.ingest_paths(store, [name])
    assert first["errors"] == [] and first["sessions"] == 1, first
    assert store.scalar("SELECT path FROM sessions") == f"{folder}/caf\\xe9.jsonl"
    assert ingest.ingest_paths(store, [name])["skipped"] == 1  # the stored name finds it again
    result = cli("ingest", "--json", name)
    assert result.exit_code == 0 and json.loads(result.stdout)["skipped"] == 1
