"""Ingest end to end: real store, real bundled model, the project's own fixtures."""

from __future__ import annotations

import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from remem import paths
from remem.engine import ingest, session_episodes
from remem.engine.embed import from_blob, get_embedder
from remem.engine.store import stable_id
from remem.engine.transcripts import parse_file

FIX = Path(__file__).parent / "fixtures" / "claude_code"
PROJECT = "-home-dev-projects-shop"


@pytest.fixture
def projects(home) -> Path:
    folder = paths.claude_projects_dir() / PROJECT
    folder.mkdir(parents=True)
    for name in ("v1_sidechain", "v2_stream", "v2_tools"):
        shutil.copy(FIX / f"{name}.jsonl", folder / f"{name}.jsonl")
    (folder / "subagents").mkdir()
    shutil.copy(FIX / "v2_tools.jsonl", folder / "subagents" / "agent-x.jsonl")
    return folder


def test_ingest_every_project_then_nothing_new(store, projects):
    first = ingest.ingest_paths(store)
    assert first["files"] == 3 and first["skipped"] == 0 and first["sessions"] == 3
    # checked by hand: 3 sessions, 3 corrections, 9 errors, 2 surprises, 6 environment facts
    assert first["by_kind"] == {"session": 3, "correction": 3, "error": 9, "surprise": 2, "environment": 6}
    assert first["episodes"] == 23 and first["malformed_lines"] == 0 and first["errors"] == []
    assert store.scalar("SELECT count(*) FROM episodes") == 23
    again = ingest.ingest_paths(store)
    assert again == {"files": 0, "skipped": 3, "sessions": 0, "episodes": 0, "by_kind": {},
                     "malformed_lines": 0, "errors": [], "reread": 0, "refused_files": 0}
    assert store.scalar("SELECT count(*) FROM episodes") == 23


def test_touched_file_is_reread_without_duplicates(store, projects):
    ingest.ingest_paths(store)
    path = projects / "v2_stream.jsonl"
    os.utime(path, (1_000_000_000, 1_000_000_000))
    summary = ingest.ingest_paths(store)
    assert summary["files"] == 1 and summary["skipped"] == 2 and summary["episodes"] == 0
    assert store.scalar("SELECT count(*) FROM episodes") == 23


def test_growing_file_adds_only_the_new_findings(store, projects):
    path = projects / "v2_tools.jsonl"
    ingest.ingest_paths(store)
    sid = "33333333-3333-4333-8333-333333333333"
    session_ep = stable_id(sid, "session", sid)
    before = store.episode(session_ep)
    store.conn.execute("UPDATE episodes SET strength = 1.7 WHERE id = ?", (session_ep,))
    more = [
        {"type": "assistant", "uuid": "n1", "timestamp": "2026-03-01T11:00:00.000Z", "sessionId": sid,
         "message": {"id": "msg_new", "role": "assistant", "content": [{"type": "text", "text": "OK, I'll wait."}]}},
        {"type": "user", "uuid": "n2", "timestamp": "2026-03-01T11:01:00.000Z", "sessionId": sid,
         "message": {"role": "user", "content": "I said don't touch the lockfile"}},
    ]
    with path.open("a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in more))
    summary = ingest.ingest_paths(store)
    assert summary["files"] == 1 and summary["episodes"] == 1 and summary["by_kind"] == {"correction": 1}
    after = store.episode(session_ep)
    assert after["gist"] != before["gist"] and "I said don't touch the lockfile" in after["gist"]
    assert after["strength"] == 1.7  # rewritten in place, its life kept
    assert store.scalar("SELECT episodes FROM sessions WHERE id = ?", (sid,)) == 16


def test_torn_tail_is_read_again_next_time(store, projects):
    path = projects / "v1_sidechain.jsonl"
    whole = path.read_bytes()
    sid = "11111111-1111-4111-8111-111111111111"
    tail = json.dumps({"type": "user", "uuid": "t1", "sessionId": sid, "timestamp": "2026-03-01T12:00:00.000Z",
                       "message": {"role": "user", "content": "no, run the e2e tests too"}}) + "\n"
    path.write_bytes(whole + tail.encode()[:40])  # the writer is mid-line
    first = ingest.ingest_paths(store)
    assert first["malformed_lines"] == 0 and first["errors"] == []
    row = store.one("SELECT size FROM sessions WHERE id = ?", (sid,))
    assert row["size"] == len(whole)  # only the complete lines are recorded
    # unchanged torn file: read again (its recorded size differs), nothing duplicated
    second = ingest.ingest_paths(store)
    assert second["files"] == 1 and second["episodes"] == 0
    path.write_bytes(whole + tail.encode())  # the line is finished
    third = ingest.ingest_paths(store)
    assert third["by_kind"] == {"correction": 1}
    assert store.one("SELECT size FROM sessions WHERE id = ?", (sid,))["size"] == len(whole) + len(tail.encode())
    assert ingest.ingest_paths(store)["skipped"] == 3


def test_malformed_lines_are_counted_and_the_rest_ingested(store, projects):
    path = projects / "v2_stream.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3] + ["{oops\n", "42\n"] + lines[3:]))
    summary = ingest.ingest_paths(store)
    assert summary["malformed_lines"] == 2
    assert summary["by_kind"]["session"] == 3


def test_correction_is_embedded_from_the_persons_words(store, projects):
    ingest.ingest_paths(store)
    row = store.one("SELECT * FROM episodes WHERE kind = 'correction' AND title LIKE 'no, use pnpm%'")
    assert row["gist"] == "no, use pnpm instead. this repo uses pnpm workspaces"
    emb = get_embedder()
    assert row["space"] == emb.space
    expected = emb.encode([row["gist"]])[0]
    assert float(from_blob(row["embedding"]) @ expected) > 0.999
    session = store.one("SELECT * FROM episodes WHERE kind = 'session' AND session_id LIKE '1111%'")
    assert session["title"] == "shop: /review the checkout page"
    assert "Asked: /review the checkout page" in session["gist"]
    assert "Ended: All 12 tests pass." in session["gist"]
    assert session["source"] == "claude-code" and session["cwd"] == "/home/dev/projects/shop"


def test_offers_are_stored_on_the_session_row(store, projects):
    ingest.ingest_paths(store)
    offers = json.loads(store.scalar(
        "SELECT offers FROM sessions WHERE id = '11111111-1111-4111-8111-111111111111'"))
    assert [(o["kind"], o["answer"], o["waited"]) for o in offers] == [("edit", "corrected", 1), ("run_tests", "approved", 1)]
    assert offers[0]["at"] == "2026-03-01T10:01:24.000000+00:00"  # remem's ISO form


def test_episode_ids_are_stable_across_stores(tmp_path, projects, monkeypatch):
    from remem.engine.store import Store

    ids = []
    for name in ("a", "b"):
        with Store(tmp_path / f"{name}.db") as s:
            ingest.ingest_paths(s)
            ids.append(sorted(r["id"] for r in s.rows("SELECT id FROM episodes")))
    assert ids[0] == ids[1]


def test_ingest_session_directly(store):
    session = parse_file(FIX / "v2_stream.jsonl")
    result = session_episodes.ingest_session(store, session, mtime=1.0, size=2)
    assert result["added"] == 4
    assert result["by_kind"] == {"session": 1, "correction": 1, "error": 1, "surprise": 1}
    assert result["offers"] == {"offers": 1, "waited": 1, "by_answer": {"declined": 1}}
    assert session_episodes.ingest_session(store, session)["added"] == 0
    row = store.one("SELECT path, source, mtime, size, episodes FROM sessions")
    assert row == {"path": str(FIX / "v2_stream.jsonl"), "source": "claude-code", "mtime": None,
                   "size": None, "episodes": 4}


def test_explicit_paths_and_bad_paths(store, projects, tmp_path):
    summary = ingest.ingest_paths(store, [projects / "v2_tools.jsonl", tmp_path / "nope.jsonl"])
    assert summary["files"] == 1 and summary["sessions"] == 1
    assert len(summary["errors"]) == 1 and "nope.jsonl" in summary["errors"][0]
    # a Claude home folder works too, and subagent folders stay unread
    summary = ingest.ingest_paths(store, [paths.claude_home()])
    assert summary["files"] == 2 and summary["skipped"] == 1
    with pytest.raises(ValueError, match="unknown source"):
        ingest.ingest_paths(store, source="slack")


def test_progress_is_reported_per_file(store, projects):
    """Each file is named before it is read (a long one shows while it takes its time), then
    the run ends at total."""
    seen = []
    ingest.ingest_paths(store, progress=lambda done, total, path: seen.append((done, total, Path(path).name)))
    names = [name for *_, name in seen[:3]]
    assert sorted(names) == ["v1_sidechain.jsonl", "v2_stream.jsonl", "v2_tools.jsonl"]
    assert seen == [(0, 3, names[0]), (1, 3, names[1]), (2, 3, names[2]), (3, 3, names[2])]


def test_an_unreadable_file_is_an_error_not_a_crash(store, projects):
    bad = projects / "zz.jsonl"
    bad.write_bytes(b"\xff\xfe\x00garbage\n" * 3)
    summary = ingest.ingest_paths(store)
    assert summary["files"] == 3 and summary["sessions"] == 3
    assert summary["errors"] == [f"{bad}: {NO_RECORDS.format(n=3, s='s')}"]
    assert store.scalar("SELECT count(*) FROM sessions WHERE path = ?", (str(bad),)) == 0


NO_RECORDS = ("no records found ({n} unreadable line{s}); expected a Claude Code transcript, one "
              "JSON object per line (another kind of file: pass --source codex or chats)")


def test_a_file_with_no_readable_line_stores_no_session(store, tmp_path):
    """`echo garbage > g.jsonl`: one line naming the fix, as for a .json with no conversation,
    and no session counted; named as a Codex rollout, it says what a rollout is instead."""
    garbage = tmp_path / "g.jsonl"
    garbage.write_text("garbage\n\n")
    summary = ingest.ingest_paths(store, [garbage])
    assert summary["errors"] == [f"{garbage}: {NO_RECORDS.format(n=1, s='')}"]
    assert summary["files"] == 0 and summary["sessions"] == 0
    assert store.scalar("SELECT count(*) FROM sessions") == 0
    as_codex = ingest.ingest_paths(store, [garbage], source="codex")
    assert as_codex["errors"] == [f"{garbage}: no records found (1 unreadable line); expected a Codex "
                                  "rollout, one JSON object per line (another kind of file: pass "
                                  "--source claude-code or chats)"]
    assert store.scalar("SELECT count(*) FROM sessions") == 0


def test_a_transcript_whose_first_line_is_still_being_written_is_read_once_it_is_done(store, tmp_path):
    sid = "abababab-0000-4000-8000-000000000001"
    path = tmp_path / f"{sid}.jsonl"
    line = json.dumps({"type": "user", "uuid": "u1", "sessionId": sid, "cwd": "/home/dev/shop",
                       "timestamp": "2026-03-01T12:00:00.000Z",
                       "message": {"role": "user", "content": "run the checkout tests"}}) + "\n"
    path.write_text(line[:30])  # the writer is mid-line: no line is complete, none unreadable
    first = ingest.ingest_paths(store, [path])
    assert first["errors"] == [] and first["malformed_lines"] == 0
    assert ingest.ingest_paths(store, [path])["files"] == 1  # unchanged, still read again
    path.write_text(line)
    second = ingest.ingest_paths(store, [path])
    assert second["files"] == 1 and second["errors"] == []
    assert store.one("SELECT size FROM sessions WHERE id = ?", (sid,))["size"] == len(line)
    assert "run the checkout tests" in store.scalar("SELECT gist FROM episodes WHERE session_id = ?", (sid,))


CODEX_ROLLOUT = (Path(__file__).parent / "fixtures" / "codex" / "sessions" / "2026" / "11" / "20"
                 / "rollout-2026-11-20T10-00-00-0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl")


def test_a_source_named_reads_again_a_file_stored_under_a_wrong_guess(store, tmp_path):
    """A Codex rollout not named rollout-*.jsonl was stored by an earlier release as a Claude
    Code transcript (its lines are JSON objects: read, nothing found); `--source codex` reads
    it again as a rollout."""
    from remem.engine.session_episodes import ingest_session
    from remem.engine.transcripts import parse_file

    path = tmp_path / "saved.jsonl"
    shutil.copy(CODEX_ROLLOUT, path)
    wrong = parse_file(path)
    wrong.path = str(path)
    ingest_session(store, wrong, mtime=path.stat().st_mtime, size=path.stat().st_size, whole=True)
    assert store.scalar("SELECT source FROM sessions WHERE path = ?", (str(path),)) == "claude-code"
    named = ingest.ingest_paths(store, [path], source="codex")
    assert named["files"] == 1 and named["skipped"] == 0 and named["episodes"] > 0, named
    assert [r["source"] for r in store.rows("SELECT source FROM sessions WHERE path = ?", (str(path),))] == ["codex"]
    # read as what it was named, it stays so: neither the same source nor a guess reads it again
    assert ingest.ingest_paths(store, [path], source="codex")["skipped"] == 1
    assert ingest.ingest_paths(store, [path])["skipped"] == 1


def test_a_codex_rollout_under_another_name_is_read_as_a_rollout(store, tmp_path):
    """Guessed a Claude Code transcript from its name, a rollout was read as one: nothing
    found, no error, stored as claude-code. What it holds decides: it is read as a rollout."""
    path = tmp_path / "copy-rollout.jsonl"
    shutil.copy(CODEX_ROLLOUT, path)
    guessed = ingest.ingest_paths(store, [path])
    assert guessed["errors"] == [] and guessed["sessions"] == 1 and guessed["episodes"] > 0, guessed
    assert guessed["by_kind"]["session"] == 1
    assert store.scalar("SELECT source FROM sessions WHERE path = ?", (str(path),)) == "codex"
    assert {r["source"] for r in store.rows("SELECT source FROM episodes")} == {"codex"}
    assert ingest.ingest_paths(store, [path])["skipped"] == 1  # unchanged: not read again


def test_a_codex_rollout_named_as_claude_code_is_refused_with_the_source_to_pass(store, tmp_path):
    path = tmp_path / "copy-rollout.jsonl"
    shutil.copy(CODEX_ROLLOUT, path)
    named = ingest.ingest_paths(store, [path], source="claude-code")
    assert named["errors"] == [f"{path}: looks like a Codex rollout, not a Claude Code transcript: "
                               "pass --source codex"], named
    assert named["sessions"] == 0 and store.scalar("SELECT count(*) FROM sessions") == 0


def test_a_claude_code_transcript_with_nothing_said_is_not_taken_for_a_rollout(store, tmp_path):
    path = tmp_path / "summary-only.jsonl"
    path.write_text(json.dumps({"type": "summary", "summary": "Fix the build", "leafUuid": "x"}) + "\n")
    summary = ingest.ingest_paths(store, [path])
    assert summary["errors"] == [] and summary["sessions"] == 0
    assert store.scalar("SELECT source FROM sessions WHERE path = ?", (str(path),)) == "claude-code"


# --------------------------------------------------------------------------- the local model

class _FakeLLM(BaseHTTPRequestHandler):
    requests: list = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _FakeLLM.requests.append((self.path, body))
        reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": "The person fixed the coupon rounding."}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(reply.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_llm_server():
    server = HTTPServer(("127.0.0.1", 0), _FakeLLM)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeLLM.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fake_llm_server_writes_the_gist(store, fake_llm_server):
    from remem import config

    config.set_value("llm.url", fake_llm_server)
    config.set_value("llm.model", "tiny")
    session = parse_file(FIX / "v2_stream.jsonl")
    session_episodes.ingest_session(store, session)
    row = store.one("SELECT gist, detail FROM episodes WHERE kind = 'session'")
    assert row["gist"] == "The person fixed the coupon rounding."
    assert row["detail"].startswith("Asked: the cart total is wrong")  # the mechanical gist kept
    path, body = _FakeLLM.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "tiny"
    session_episodes.ingest_session(store, parse_file(FIX / "v2_stream.jsonl"))  # read again, unchanged
    assert len(_FakeLLM.requests) == 1  # the model is asked only when the session changed


def test_fake_llm_server_complete_and_failing_soft(fake_llm_server):
    from remem.engine import llm

    cfg = {"llm": {"url": fake_llm_server + "/v1", "model": "m", "api_key": "k", "timeout_s": 5}}
    assert llm.complete("hi", system="be brief", cfg=cfg) == "The person fixed the coupon rounding."
    assert _FakeLLM.requests[-1][1]["messages"][0] == {"role": "system", "content": "be brief"}
    assert llm.complete("hi", cfg={"llm": {"url": ""}}) is None
    assert llm.complete("hi", cfg={"llm": {"url": "http://127.0.0.1:9", "timeout_s": 1}}) is None
    assert llm.complete("hi", cfg={"llm": {"url": fake_llm_server + "/nowhere/chat/completions"}}) is not None


def test_no_model_configured_means_the_deterministic_gist(store):
    session = parse_file(FIX / "v2_stream.jsonl")
    session_episodes.ingest_session(store, session)
    assert store.scalar("SELECT gist FROM episodes WHERE kind = 'session'").startswith("Asked: ")


# --------------------------------------------------------------------------- every source at once

def test_plain_ingest_reads_claude_code_codex_and_the_inbox(store, projects, cli):
    from remem.engine import events

    shutil.copytree(Path(__file__).parent / "fixtures" / "codex", paths.codex_home())
    events.append_to_inbox([{"kind": "note", "text": "the staging database is read-only on Fridays"}], name="t")
    summary = ingest.ingest_paths(store)
    assert summary["errors"] == []
    sources = {r["source"]: r["n"] for r in store.rows("SELECT source, count(*) AS n FROM sessions GROUP BY source")}
    assert sources["claude-code"] == 3 and sources["codex"] >= 1
    assert store.scalar("SELECT count(*) FROM episodes WHERE gist LIKE '%read-only on Fridays%'") == 1
    assert summary["by_kind"]["note"] == 1
    again = ingest.ingest_paths(store)
    # every file is unchanged, the Codex rollout whose last line is torn too: nothing is read again
    assert again["episodes"] == 0 and again["files"] == 0 and again["skipped"] >= 7
    # --events FILE goes through the events module and lands in the same summary
    path = Path(paths.home()) / "extra.jsonl"
    path.write_text(json.dumps({"v": 1, "at": "2026-11-28T10:00:00Z", "kind": "surprise",
                                "text": "the CDN caches 404s for an hour"}) + "\n{bad\n")
    result = cli("ingest", "--events", str(path), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["episodes"] == 1 and data["by_kind"] == {"surprise": 1} and data["malformed_lines"] == 1, data
    assert data["files"] == 1 and data["skipped"] == 0  # nothing but the events file was read
    # with a source and its files too, both are read and summed; a source without files would
    # read every session of it, which --events promises not to do: refused (tests/test_ingest_cli.py)
    data = json.loads(cli("ingest", "--events", str(path), "--json", "--source", "claude-code",
                          *sorted(str(p) for p in projects.glob("*.jsonl"))).stdout)
    # the three transcripts and the events file, read before: all four unchanged
    assert data["skipped"] == 4 and data["episodes"] == 0
    refused = cli("ingest", "--events", str(path), "--json", "--source", "claude-code")
    assert refused.exit_code == 1 and "--events FILE reads only that file" in refused.output


def test_a_codex_folder_given_without_a_source_is_read_as_codex(store):
    shutil.copytree(Path(__file__).parent / "fixtures" / "codex", paths.codex_home())
    summary = ingest.ingest_paths(store, [paths.codex_home() / "sessions"])
    assert summary["sessions"] == 3 and summary["errors"] == []
    assert {r["source"] for r in store.rows("SELECT source FROM sessions")} == {"codex"}


def test_a_lone_surrogate_in_a_transcript_does_not_drop_the_file(store, tmp_path):
    sid = "11111111-2222-3333-4444-555555555555"
    path = tmp_path / f"{sid}.jsonl"
    recs = [
        {"type": "user", "uuid": "u1", "sessionId": sid, "timestamp": "2026-01-01T10:00:00Z", "cwd": "/x/app",
         "message": {"role": "user", "content": "fix the emoji parser \ud83d please"}},
        {"type": "assistant", "uuid": "a1", "sessionId": sid, "timestamp": "2026-01-01T10:00:05Z",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
        {"type": "user", "uuid": "u2", "sessionId": sid, "timestamp": "2026-01-01T10:00:10Z",
         "message": {"role": "user", "content": "No, that's wrong \ud83d"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    summary = ingest.ingest_paths(store, [path])
    assert summary["errors"] == []
    assert summary["by_kind"] == {"session": 1, "correction": 1}


def test_a_folder_of_exports_and_a_codex_backup_is_guessed_per_file(store, tmp_path):
    # a folder elsewhere (not CODEX_HOME), no --source: chat exports and nested rollouts
    exports = tmp_path / "exports"
    backup = exports / "codex-backup"
    shutil.copytree(Path(__file__).parent / "fixtures" / "codex" / "sessions", backup)
    shutil.copy(Path(__file__).parent / "fixtures" / "chats" / "openai.json", exports / "conversations.json")
    (exports / "user.json").write_text('{"email": "me@example.com"}')  # beside a ChatGPT export
    summary = ingest.ingest_paths(store, [exports])
    assert summary["errors"] == [] and summary["files"] == 4
    sources = {r["source"]: r["n"] for r in store.rows("SELECT source, count(*) AS n FROM sessions GROUP BY source")}
    assert sources == {"codex": 3, "chats": 1}
    again = ingest.ingest_paths(store, [exports])
    assert again["episodes"] == 0 and again["errors"] == []


def test_a_named_folder_with_nothing_to_read_says_so(store, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello")
    (empty / "settings.json").write_text('{"theme": "dark"}')
    (error,) = ingest.ingest_paths(store, [empty])["errors"]
    assert error.startswith(f"no transcripts found in {empty}") and "\n" not in error
    (error,) = ingest.ingest_paths(store, [empty], source="events")["errors"]
    assert error.startswith(f"no transcripts found in {empty}")


def test_default_places_and_the_source_check_are_the_engines(home):
    from remem import paths
    from remem.engine import ingest_sources

    claude, codex, inbox = paths.claude_projects_dir(), paths.codex_home(), paths.inbox_dir()
    gemini = paths.gemini_sessions_dir()
    assert ingest_sources.default_places() == [claude, codex, gemini, inbox]
    assert ingest_sources.default_places("claude-code") == [claude]
    assert ingest_sources.default_places("codex") == [codex]
    assert ingest_sources.default_places("events") == [inbox]
    assert ingest_sources.default_places("chats") == [gemini]
    with pytest.raises(ValueError, match="unknown source 'slack'"):
        ingest_sources.check_source("slack")
    ingest_sources.check_source(None)
    import remem.commands.ingest as cli_ingest

    assert not hasattr(cli_ingest, "_searched") and not hasattr(cli_ingest, "_fold")


def test_an_events_file_is_added_to_a_summary_given(store, tmp_path):
    from remem.engine import ingest

    events = tmp_path / "e.jsonl"
    events.write_text(json.dumps({"v": 1, "id": "n1", "at": "2026-01-01T00:00:00+00:00", "kind": "episode",
                                  "type": "note", "text": "the staging db is read-only"}) + "\n",
                      encoding="utf-8")
    summary = ingest.ingest_paths(store, [], source="events")
    files = summary["files"]
    same = ingest.ingest_events(store, events, into=summary)
    assert same is summary and summary["files"] == files + 1
    alone = ingest.ingest_events(store, events)
    assert alone is not summary and set(alone) == set(summary)


def _growing_session(tmp_path):
    sid = "33333333-2222-3333-4444-555555555555"
    path = tmp_path / f"{sid}.jsonl"
    recs = [
        {"type": "user", "uuid": "u1", "sessionId": sid, "cwd": "/x/app", "timestamp": "2026-01-01T10:00:00Z",
         "message": {"role": "user", "content": "Add caching"}},
        {"type": "assistant", "uuid": "a1", "sessionId": sid, "timestamp": "2026-01-01T10:00:05Z",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Added an LRU cache."}]}},
        {"type": "user", "uuid": "u2", "sessionId": sid, "timestamp": "2026-01-01T10:00:10Z",
         "message": {"role": "user", "content": "No, use redis instead."}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    more = {"type": "assistant", "uuid": "a2", "sessionId": sid, "timestamp": "2026-01-01T10:01:00Z",
            "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Switched to redis."}]}}
    return path, json.dumps(more) + "\n"


def test_a_hard_deleted_memory_does_not_come_back_when_its_session_is_read_again(store, tmp_path):
    from remem.engine import lifecycle

    path, more = _growing_session(tmp_path)
    assert ingest.ingest_paths(store, [path])["by_kind"] == {"session": 1, "correction": 1}
    correction = store.scalar("SELECT id FROM episodes WHERE kind = 'correction'")
    lifecycle.forget(store, correction, hard=True)
    with path.open("a") as fh:
        fh.write(more)  # the session grew: the file is read again
    summary = ingest.ingest_paths(store, [path])
    assert summary["files"] == 1 and summary["episodes"] == 0
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction'") == 0
    assert "Switched to redis" in store.scalar("SELECT gist FROM episodes WHERE kind = 'session'")


def test_a_session_memory_deleted_by_the_lifecycle_stays_deleted(store, tmp_path):
    path, more = _growing_session(tmp_path)
    ingest.ingest_paths(store, [path])
    session_ep = store.scalar("SELECT id FROM episodes WHERE kind = 'session'")
    store.hard_delete([session_ep])  # as cleanup_archived and active forgetting do
    with path.open("a") as fh:
        fh.write(more)
    assert ingest.ingest_paths(store, [path])["episodes"] == 0
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'session'") == 0


def test_a_named_folder_with_nothing_for_the_source_given_does_not_advise_passing_it(store, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello")
    (error,) = ingest.ingest_paths(store, [empty], source="chats")["errors"]
    assert error == f"no transcripts found in {empty}; it holds no chat export *.json or *.jsonl"
    (error,) = ingest.ingest_paths(store, [empty], source="codex")["errors"]
    assert "--source" not in error and "rollout-*.jsonl" in error
    (error,) = ingest.ingest_paths(store, [empty])["errors"]
    assert error.endswith("(name the files, or pass --source)")  # without it, the advice stands


def _jest_session(folder: Path, sid: str, day: str, result: str) -> Path:
    """A Claude Code session of one failed test run (hand-written, as Claude Code writes it)."""
    def rec(uuid: str, kind: str, at: str, message: dict) -> dict:
        return {"type": kind, "uuid": uuid, "sessionId": sid, "cwd": "/w/shop",
                "timestamp": f"{day}T10:00:0{at}.000Z", "message": message}

    recs = [
        rec("a", "user", "0", {"role": "user", "content": "Run the tests"}),
        rec("b", "assistant", "1", {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npx jest"}}]}),
        rec("c", "user", "2", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": result}]}),
        rec("d", "assistant", "3", {"id": "m2", "role": "assistant", "content": [
            {"type": "text", "text": "Some tests fail."}]}),
    ]
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_the_same_failure_with_other_counts_in_two_sessions_is_one_title_and_one_lesson(store, tmp_path):
    from remem.engine import clock, sleep

    first = _jest_session(tmp_path, "77777777-0000-4000-8000-000000000001", "2026-06-01",
                          "Exit code 1\nTests: 3 failed, 9 passed, 12 total")
    second = _jest_session(tmp_path, "77777777-0000-4000-8000-000000000002", "2026-06-02",
                           "Exit code 1\nTests: 2 failed, 10 passed, 12 total")
    with clock.frozen("2026-06-03T09:00:00+00:00"):
        summary = ingest.ingest_paths(store, [first, second])
        assert summary["by_kind"]["error"] == 2
        titles = {r["title"] for r in store.rows("SELECT title FROM episodes WHERE kind = 'error'")}
        assert titles == {"Bash tests failed: Tests: … failed, … passed, … total"}
        sleep.run_sleep_collect(store)
    lessons = store.rows("SELECT kind, sources FROM lessons")
    assert len(lessons) == 1 and lessons[0]["kind"] == "error" and len(json.loads(lessons[0]["sources"])) == 2


def _codex_rollout(folder: Path, sid: str, cwd: str, script: str, output: str) -> Path:
    def line(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2026-04-14T09:00:00.000Z", "type": kind, "payload": payload})

    path = folder / f"rollout-2026-04-14T09-00-00-{sid}.jsonl"
    path.write_text("\n".join([
        line("session_meta", {"id": sid, "timestamp": "2026-04-14T09:00:00.000Z", "cwd": cwd}),
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go"}]}),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                               "arguments": json.dumps({"command": ["bash", "-lc", script]})}),
        line("response_item", {"type": "function_call_output", "call_id": "c1",
                               "output": f"Exit code: 1\nWall time: 0.3 seconds\nOutput:\n{output}"}),
    ]) + "\n")
    return path


def test_two_unrelated_codex_failures_in_two_projects_teach_nothing(store, tmp_path):
    """Codex's `Exit code: 1` wrapper once titled both; they met in sleep as one error."""
    from remem.engine import clock, sleep

    deploy = _codex_rollout(tmp_path, "0199e000-0000-7000-8000-0000000000e3", "/home/lee/src/deploy",
                            "terraform apply -auto-approve",
                            'Error: Invalid provider configuration\n  Provider "aws" requires explicit configuration.\n')
    blog = _codex_rollout(tmp_path, "0199e000-0000-7000-8000-0000000000e4", "/home/lee/src/blog", "hugo --minify",
                          'Error: template: index.html:4: function "partialCached" not defined\n')
    with clock.frozen("2026-04-16T09:00:00+00:00"):
        ingest.ingest_paths(store, [deploy, blog], source="codex")
        titles = sorted(r["title"] for r in store.rows("SELECT title FROM episodes WHERE kind = 'error'"))
        assert titles == ["shell failed: Error: Invalid provider configuration",
                          'shell failed: Error: template: index.html:…: function "partialCached" not defined']
        sleep.run_sleep_collect(store)
    assert store.rows("SELECT id FROM lessons") == []
