"""Exported chats in OpenAI, Anthropic and Gemini form -> Sessions the detectors read."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import chats, detect

FIXTURES = Path(__file__).parent / "fixtures" / "chats"


def test_openai_conversation() -> None:
    (s,) = chats.parse_chats(FIXTURES / "openai.json")
    assert (s.source, s.cwd, s.meta["format"]) == ("chats", "/home/dev/app", "openai")
    assert s.id.startswith("chatcmpl-conv-7f2a:")  # the given id, namespaced by the content
    assert [t.role for t in s.turns] == ["user", "assistant", "assistant", "user", "assistant"]
    assert "Prefer small diffs" not in " ".join(t.text for t in s.turns)  # system/developer skipped
    mv, grep, sed = s.tool_calls()
    assert mv.input == {"cmd": "git mv settings.py config.py"} and mv.result == "" and not mv.is_error
    assert grep.result.startswith("./app/main.py") and not grep.is_error
    assert sed.is_error  # exit_code 1 in the tool's JSON output
    assert s.turns[0].at == "2026-11-21T09:00:05.000000+00:00"
    assert s.turns[3].text.startswith("No, that's not done")  # the image part skipped


def test_anthropic_conversations_in_jsonl() -> None:
    first, second = chats.parse_chats(FIXTURES / "anthropic.jsonl")
    assert first.meta["format"] == second.meta["format"] == "anthropic"
    assert first.id.startswith("msg-conv-a1:") and second.id.startswith("msg-conv-a2:")
    assert "check the branch" not in " ".join(t.text for t in first.turns)  # thinking skipped
    deploy, make = first.tool_calls()  # server_tool_use is not ours: skipped
    assert deploy.is_error and "unbound variable" in deploy.result
    assert not make.is_error and make.result == "deployed staging@4f1c2a9"
    # Tool results alone are not the person speaking.
    assert [t.text for t in first.user_turns()][-1].startswith("Wrong approach")
    assert [t.text for t in second.turns] == ["What is 2+2?", "4"]


def test_gemini_conversations_key() -> None:
    (s,) = chats.parse_chats(FIXTURES / "gemini.json")
    assert s.id.startswith("gem-conv-1:") and s.meta["format"] == "gemini"
    assert s.started == "2026-11-23T08:00:00.000000+00:00"
    first, second = s.tool_calls()
    assert first.is_error and "permission denied" in first.result  # paired by id
    assert not second.is_error and "CREATE INDEX" in second.result  # paired by name, role function
    assert "Switch role" not in " ".join(t.text for t in s.turns)  # thought parts skipped


def test_chatgpt_export_follows_the_current_branch() -> None:
    (s,) = chats.parse_chats(FIXTURES / "chatgpt-export.json")
    assert s.meta == {"format": "chatgpt-export", "index": 0, "title": "Fix the flaky date test",
                      "given_id": "6750f0a1-0000-8000-9000-000000000001"}
    assert s.started == "2025-11-24T16:00:00.000000+00:00"
    texts = [t.text for t in s.turns]
    assert not any("abandoned branch" in t for t in texts) and texts[0].startswith("Why does")
    (call,) = s.tool_calls()
    assert call.name == "python" and call.is_error and "ValueError" in call.result
    assert s.turns[3].text.startswith("No, don't change the test")  # the image part skipped


def test_claude_export_pairs_results_without_ids() -> None:
    (s,) = chats.parse_chats(FIXTURES / "claude-export.json")
    assert s.meta["format"] == "claude-export" and s.meta["title"] == "Cron in UTC"
    (call,) = s.tool_calls()
    assert call.is_error and call.result == "crontab: command not found"
    assert [t.role for t in s.turns] == ["user", "assistant", "assistant", "user"]


@pytest.mark.parametrize("name", ["openai.json", "anthropic.jsonl", "gemini.json", "chatgpt-export.json",
                                  "claude-export.json"])
def test_detectors_find_a_correction_and_a_failed_call(name: str) -> None:
    s = chats.parse_chats(FIXTURES / name)[0]
    assert detect.corrections(s), [t.text for t in s.turns]
    assert detect.errors(s)


def test_bare_message_list_and_message_lines(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "hi", "at": 1764400000},
            {"role": "assistant", "content": "hello", "timestamp": 1764400005000}]
    one = tmp_path / "bare.json"
    one.write_text(json.dumps(msgs))
    (s,) = chats.parse_chats(one)
    assert [t.text for t in s.turns] == ["hi", "hello"]
    assert s.turns[0].at.startswith("2025-11-29T07:06:40") and s.turns[1].at.startswith("2025-11-29T07:06:45")
    lines = tmp_path / "lines.jsonl"
    lines.write_text("\n".join(json.dumps(m) for m in msgs) + "\nnot json\n")
    (s2,) = chats.parse_chats(lines)
    assert len(s2.turns) == 2 and s2.malformed_lines == 1
    assert s2.id == chats.parse_chats(lines)[0].id  # stable id without one given


def test_a_file_with_no_conversation_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{not json\n[1, 2]\n")
    with pytest.raises(ValueError, match="no conversations found"):
        chats.parse_chats(bad)


def test_ingest_chats_through_the_ingest_command(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    files = [str(p) for p in sorted(FIXTURES.iterdir())]
    first = ingest_paths(store, files, source="chats")
    assert first["errors"] == [] and first["sessions"] == 6
    assert first["by_kind"]["correction"] >= 3 and first["by_kind"]["error"] >= 3
    assert ingest_paths(store, files, source="chats")["episodes"] == 0


@pytest.mark.parametrize("extra, title", [
    ({"title": "T", "name": "N"}, "T"), ({"name": "N"}, "N"), ({"title": 3, "name": "N"}, "N"), ({}, None),
])
def test_a_chat_title_comes_from_title_then_name(extra, title):
    from remem.engine import chats

    conv = {"messages": [{"role": "user", "content": "hello there"}], **extra}
    meta = chats.conversation_to_session(conv, path="x").meta
    assert meta.get("title") == title and ("title" in meta) == (title is not None)


# --------------------------------------------------------------------------- never raises

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=15),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=10,
)
_part_type = st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", "image_url",
                              "input_text", "document", "some_new_block", None])
_part = st.one_of(
    _json,
    st.builds(lambda t, extra: {"type": t, **extra}, _part_type,
              st.dictionaries(st.sampled_from(["text", "id", "name", "input", "tool_use_id", "content",
                                               "is_error", "thinking"]), _json, max_size=4)),
    st.builds(lambda k, v: {k: v}, st.sampled_from(["text", "functionCall", "functionResponse",
                                                    "function_call", "inlineData", "executableCode"]), _json),
)
_message = st.builds(
    lambda role, content, extra: {"role": role, "content": content, "parts": content, **extra},
    st.sampled_from(["user", "assistant", "system", "developer", "tool", "function", "model", "x", "human",
                     None]) | _json,
    st.one_of(st.text(max_size=20), st.lists(_part, max_size=4), _json),
    st.dictionaries(st.sampled_from(["tool_calls", "tool_call_id", "name", "timestamp", "at",
                                     "created_at", "function_call"]), _json, max_size=3),
)
_conversation = st.one_of(
    st.builds(lambda m, sys_: {"messages": m, **({"system": sys_} if sys_ is not None else {})},
              st.lists(_message, max_size=6), st.none() | _json),
    st.builds(lambda m: {"contents": m}, st.lists(_message, max_size=6)),
    st.builds(lambda m: {"chat_messages": [{**x, "sender": x.get("role")} for x in m]},
              st.lists(_message, max_size=4)),
    st.builds(lambda nodes, cur: {"mapping": {str(i): {"id": str(i), "parent": p, "children": ch,
                                                       "message": msg} for i, (p, ch, msg) in enumerate(nodes)},
                                  "current_node": cur},
              st.lists(st.tuples(st.none() | st.sampled_from(["0", "1", "2", "9"]) | _json,
                                 st.lists(st.sampled_from(["0", "1", "2"]), max_size=2) | _json,
                                 st.builds(lambda a, c, r: {"author": a, "content": c, "recipient": r},
                                           _json | st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"])}),
                                           _json | st.fixed_dictionaries({"parts": st.lists(_part, max_size=2)}),
                                           st.sampled_from(["all", "python", None])) | _json),
                       max_size=4),
              st.sampled_from(["0", "1", "2", "3", None])),
    st.lists(_message, max_size=4),
    _json,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_conversation)
def test_unknown_part_types_never_raise(conv) -> None:
    s = chats.conversation_to_session(conv, path="x", index=0)
    if s is not None:
        assert s.meta["format"] in chats._READERS
        assert all(t.role in ("user", "assistant") for t in s.turns)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_conversation.map(json.dumps), st.text(max_size=40)), max_size=6))
def test_malformed_lines_never_raise_beyond_one_valueerror(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    try:
        chats.parse_chats(path)
    except ValueError as exc:
        assert "no conversations found" in str(exc)


def test_lone_surrogates_are_stored_replaced(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "fix it \ud800 please"},
        {"role": "assistant", "content": "Done \udfff.", "tool_calls": [
            {"id": "c1", "function": {"name": "sh", "arguments": json.dumps({"cmd": "x \ud800"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "error: \ud800 broke"},
        {"role": "user", "content": "No, that's wrong \ud800."}]}))
    (s,) = chats.parse_chats(path)
    assert s.turns[0].text == "fix it ? please"
    summary = ingest_paths(store, [str(path)], source="chats")
    assert summary["errors"] == [] and summary["episodes"] >= 2


def test_an_export_with_a_byte_order_mark_is_read(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    path = tmp_path / "export-bom.json"
    conv = {"messages": [{"role": "user", "content": "Add caching."},
                         {"role": "assistant", "content": "Added an LRU cache."},
                         {"role": "user", "content": "No, use redis instead."}]}
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(conv).encode())  # as Windows tools write it
    summary = ingest_paths(store, [str(path)], source="chats")
    assert summary["errors"] == [] and summary["by_kind"] == {"session": 1, "correction": 1}


def test_a_file_with_no_conversation_names_its_path_once(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    (error,) = ingest_paths(store, [str(bad)], source="chats")["errors"]
    assert error.startswith(f"{bad}: no conversations found") and error.count(str(bad)) == 1


def _conv(first: str, reply: str, **extra) -> dict:
    return {**extra, "messages": [{"role": "user", "content": first}, {"role": "assistant", "content": reply}]}


def test_an_export_named_two_ways_is_one_conversation(store, tmp_path: Path, monkeypatch) -> None:
    from remem.engine.ingest import ingest_paths

    monkeypatch.chdir(tmp_path)
    conv = _conv("Please add a retry to the upload job.", "I added three retries. Done.")
    conv["messages"].append({"role": "user", "content": "No, use exponential backoff instead."})
    Path("export.json").write_text(json.dumps([conv]))  # no id: it comes from the content
    first = ingest_paths(store, ["export.json"], source="chats")
    assert first["by_kind"] == {"session": 1, "correction": 1}
    again = ingest_paths(store, [str(tmp_path / "export.json")], source="chats")
    assert again["episodes"] == 0 and again["errors"] == [] and again["skipped"] == 1
    assert store.scalar("SELECT count(DISTINCT session_id) FROM episodes") == 1
    # a copy elsewhere is the same conversation too
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "export.json").write_text(json.dumps([conv]))
    assert ingest_paths(store, ["copy/export.json"], source="chats")["episodes"] == 0


def test_two_exports_reusing_an_id_stay_two_conversations(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([_conv("Set up CI for the billing service.", "Added a workflow.", id=1)]))
    b.write_text(json.dumps([_conv("Write a haiku about autumn.", "Leaves fall softly down.", id=1)]))
    ingest_paths(store, [a], source="chats")
    ingest_paths(store, [b], source="chats")
    titles = sorted(r["title"] for r in store.rows("SELECT title FROM episodes WHERE kind = 'session'"))
    assert titles == ["Set up CI for the billing service.", "Write a haiku about autumn."]
    rerun = ingest_paths(store, [a, b], source="chats")
    assert rerun["files"] == 0 and rerun["skipped"] == 2


def test_a_later_export_of_the_same_conversation_updates_it(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    early = _conv("Add caching to fetch().", "Added an LRU cache.", id="conv-9", create_time=1764400000)
    grown = json.loads(json.dumps(early))
    grown["messages"] += [{"role": "user", "content": "No, use redis instead."},
                          {"role": "assistant", "content": "Switched to redis."}]
    (tmp_path / "jan.json").write_text(json.dumps([early]))
    (tmp_path / "feb.json").write_text(json.dumps([_conv("Unrelated.", "Sure.", id="other"), grown]))
    ingest_paths(store, [tmp_path / "jan.json"], source="chats")
    later = ingest_paths(store, [tmp_path / "feb.json"], source="chats")
    assert later["errors"] == [] and later["by_kind"] == {"session": 1, "correction": 1}
    sessions = store.rows("SELECT session_id, gist FROM episodes WHERE kind = 'session' AND title LIKE 'Add caching%'")
    assert len(sessions) == 1 and "redis" in sessions[0]["gist"]
    assert sessions[0]["session_id"].startswith("conv-9:")  # the given id, namespaced by content


def test_a_rewritten_export_whose_conversations_moved_is_read(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    path = tmp_path / "conversations.json"
    one, two = _conv("First question.", "First answer."), _conv("Second question.", "Second answer.")
    path.write_text(json.dumps([one]))
    ingest_paths(store, [path], source="chats")
    path.write_text(json.dumps([two, one]))  # a new conversation first, as a fresh export lists them
    summary = ingest_paths(store, [path], source="chats")
    assert summary["errors"] == [] and summary["by_kind"] == {"session": 1}
    assert ingest_paths(store, [path], source="chats")["skipped"] == 1


def test_a_grown_export_without_times_is_rewritten_not_appended(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    conv = _conv("Add caching to fetch().", "Added an LRU cache.", id="c1")
    (tmp_path / "a.json").write_text(json.dumps([conv]))
    ingest_paths(store, [tmp_path / "a.json"], source="chats")
    conv["messages"].append({"role": "user", "content": "thanks, that is all"})
    (tmp_path / "b.json").write_text(json.dumps([conv]))
    ingest_paths(store, [tmp_path / "b.json"], source="chats")
    (gist,) = [r["gist"] for r in store.rows("SELECT gist FROM episodes WHERE kind = 'session'")]
    assert gist.count("Asked: Add caching") == 1 and "that is all" in gist


def test_two_conversations_with_the_same_opening_in_one_file_stay_two(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    hello = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]
    lines = [{"messages": hello + [{"role": "user", "content": f"How do I configure {tool}?"},
                                   {"role": "assistant", "content": f"Edit the {tool} config."}]}
             for tool in ("nginx", "postgres")]
    path = tmp_path / "conv.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert ingest_paths(store, [path], source="chats")["episodes"] == 2
    gists = [r["gist"] for r in store.rows("SELECT gist FROM episodes ORDER BY gist")]
    assert any("nginx" in g for g in gists) and any("postgres" in g for g in gists)
    again = ingest_paths(store, [path], source="chats")
    assert again["skipped"] == 1 and again["episodes"] == 0


def test_chats_stored_under_the_old_ids_are_not_stored_again(store, tmp_path: Path) -> None:
    """Before ids came from content, a conversation's id was its given id as it was (or one
    from the path); an export that changes later must update those, not add copies."""
    import os

    from remem.engine.ingest import ingest_paths
    from remem.engine.session_episodes import ingest_session

    conv = _conv("How do I tune postgres autovacuum?", "Lower autovacuum_vacuum_scale_factor.")
    conv["id"] = "conv-aaa"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conv]))
    (old,) = chats.parse_chats(path)
    old.id, old.path = "conv-aaa", f"{path}#0"  # as the earlier release stored it
    st = path.stat()
    ingest_session(store, old, mtime=st.st_mtime, size=st.st_size)
    os.utime(path, (st.st_atime + 60, st.st_mtime + 60))  # downloaded again
    assert ingest_paths(store, [path], source="chats")["episodes"] == 0
    assert [r["session_id"] for r in store.rows("SELECT DISTINCT session_id FROM episodes")] == ["conv-aaa"]


def test_same_opening_conversations_keep_their_ids_when_the_export_changes_order(store, tmp_path: Path) -> None:
    """An export that gains a conversation with the same opening in front used to shift the
    others' ids, so a correction was stored twice (and looked like a repeat to sleep)."""
    from remem.engine.ingest import ingest_paths

    hello = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]

    def conv(ask: str, reply: str, then: str | None = None) -> dict:
        msgs = hello + [{"role": "user", "content": ask}, {"role": "assistant", "content": reply}]
        if then:
            msgs += [{"role": "user", "content": then}, {"role": "assistant", "content": "Done."}]
        return {"messages": msgs}

    nginx = conv("Restart nginx after the config change", "Restarted nginx.",
                 "no, don't restart nginx, use nginx -s reload instead")
    bread = conv("What is a good sourdough recipe?", "Flour, water, salt, starter.")
    taxes = conv("When are taxes due?", "April 15.")
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in (nginx, bread)))
    ingest_paths(store, [path], source="chats")
    path.write_text("".join(json.dumps(c) + "\n" for c in (taxes, nginx, bread)))
    ingest_paths(store, [path], source="chats")
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction'") == 1
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'session'") == 3


def test_an_old_id_reused_by_another_conversation_of_a_file_with_the_same_name_is_not_taken(
        store, tmp_path: Path) -> None:
    """Before ids came from content, `"id": 1` was the id itself; another export named the
    same, whose conversation 1 is a different one, must not take its place."""
    from remem.engine.ingest import ingest_paths
    from remem.engine.session_episodes import ingest_session

    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "chat.json").write_text(json.dumps([_conv("Configure nginx for port 8080", "Done.", id=1)]))
    (old,) = chats.parse_chats(first / "chat.json")
    old.id, old.path = "1", f"{first / 'chat.json'}#0"  # as the earlier release stored it
    st = (first / "chat.json").stat()
    ingest_session(store, old, mtime=st.st_mtime, size=st.st_size)
    (second / "chat.json").write_text(json.dumps([_conv("What is a good sourdough recipe?", "Flour.", id=1)]))
    ingest_paths(store, [second / "chat.json"], source="chats")
    gists = sorted(r["gist"].split("\n")[0] for r in store.rows("SELECT gist FROM episodes WHERE kind = 'session'"))
    assert gists == ["Asked: Configure nginx for port 8080", "Asked: What is a good sourdough recipe?"]


_GEMINI_CLI = [
    {"id": "m1", "timestamp": "2026-01-01T10:00:00.000Z", "type": "user", "content": "install the deps with pip"},
    {"id": "m2", "timestamp": "2026-01-01T10:00:05.000Z", "type": "gemini", "content": "Running pip install",
     "toolCalls": [{"id": "t1", "name": "run_shell_command", "args": {"command": "pip install -r requirements.txt"},
                    "status": "error", "timestamp": "2026-01-01T10:00:06.000Z",
                    "resultDisplay": "bash: pip: command not found"}]},
    {"id": "m0", "timestamp": "2026-01-01T10:00:30.000Z", "type": "info", "content": "Request cancelled."},
    {"id": "m3", "timestamp": "2026-01-01T10:01:00.000Z", "type": "user", "content": [{"text": "no, we use uv here, never pip"}]},
    {"id": "m4", "timestamp": "2026-01-01T10:01:05.000Z", "type": "gemini", "content": "Understood, using uv add."},
]


@pytest.mark.parametrize("shape", ["json", "jsonl"])
def test_gemini_cli_session_files_are_read(store, tmp_path: Path, shape: str) -> None:
    """Gemini CLI's own session record (~/.gemini/tmp/<project>/chats/session-*), as one JSON
    object or as JSONL (a header, then records, one written again as it grew)."""
    from remem.engine.ingest import ingest_paths

    header = {"sessionId": "gem-1", "projectHash": "abc", "startTime": "2026-01-01T10:00:00.000Z"}
    chats_dir = tmp_path / "tmp" / "abc" / "chats"
    chats_dir.mkdir(parents=True)
    if shape == "json":
        path = chats_dir / "session-2026-01-01T10-00-gem1.json"
        path.write_text(json.dumps({**header, "messages": _GEMINI_CLI}))
    else:
        path = chats_dir / "session-2026-01-01T10-00-gem1.jsonl"
        early = {**_GEMINI_CLI[4], "content": "Under"}  # the same record, written twice
        lines = [header, *_GEMINI_CLI[:4], early, _GEMINI_CLI[4]]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (session,) = chats.parse_chats(path)
    assert session.meta["format"] == "gemini-cli" and session.started.startswith("2026-01-01T10:00:00")
    assert [t.text for t in session.turns if t.role == "user"] == ["install the deps with pip",
                                                                    "no, we use uv here, never pip"]
    assert session.turns[-1].text == "Understood, using uv add."
    (call,) = session.tool_calls()
    assert call.is_error and "command not found" in call.result
    summary = ingest_paths(store, [path])  # the source is guessed from where the file lies
    assert summary["by_kind"]["correction"] == 1 and summary["by_kind"]["error"] == 1


def test_the_gemini_session_end_hook_reads_its_transcript_as_chats() -> None:
    from remem.hooks.session_end import ingest_command

    assert ingest_command("/t/session-x.jsonl", "gemini")[-3:] == ["--source", "chats", "--quiet"]
    assert "--source" not in ingest_command("/t/abc.jsonl", "claude-code")


def test_a_refused_gemini_cli_call_is_one_correction_with_the_persons_words(tmp_path: Path) -> None:
    record = {"sessionId": "gem-2", "startTime": "2026-01-01T10:00:00.000Z", "messages": [
        {"id": "m1", "timestamp": "2026-01-01T10:00:00.000Z", "type": "user", "content": "clean the build output"},
        {"id": "m2", "timestamp": "2026-01-01T10:00:05.000Z", "type": "gemini", "content": "I'll remove the build folder.",
         "toolCalls": [{"id": "t1", "name": "run_shell_command", "args": {"command": "rm -rf build"},
                        "status": "cancelled", "timestamp": "2026-01-01T10:00:06.000Z"}]},
        {"id": "m3", "timestamp": "2026-01-01T10:01:00.000Z", "type": "user",
         "content": "no, don't delete it, use make clean instead"},
        {"id": "m4", "timestamp": "2026-01-01T10:01:05.000Z", "type": "gemini", "content": "OK, using make clean."},
    ]}
    path = tmp_path / "session-2026-01-01T10-00-gem2.json"
    path.write_text(json.dumps(record))
    (session,) = chats.parse_chats(path)
    (found,) = detect.corrections(session)
    assert found.extra["how"] == "refused" and found.text == "no, don't delete it, use make clean instead"


def test_jsonl_of_whole_gemini_api_conversations_with_a_session_id_is_still_read(tmp_path: Path) -> None:
    lines = [{"sessionId": f"g{n}", "contents": [{"role": "user", "parts": [{"text": f"question {n}"}]},
                                                 {"role": "model", "parts": [{"text": f"answer {n}"}]}]}
             for n in (1, 2)]
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = chats.parse_chats(path)
    assert [len(s.turns) for s in found] == [2, 2] and {s.meta["format"] for s in found} == {"gemini"}


def test_a_live_gemini_cli_session_torn_mid_line_is_read_again_not_counted(store, tmp_path: Path) -> None:
    """Gemini CLI appends to session-*.jsonl as the session runs: a last line with no newline
    yet is not malformed, and what it becomes is read next time."""
    from remem.engine.ingest import ingest_paths

    header = {"sessionId": "gem-3", "projectHash": "abc", "startTime": "2026-01-01T10:00:00.000Z"}
    path = tmp_path / "session-2026-01-01T10-00-gem3.jsonl"
    complete = "".join(json.dumps(line) + "\n" for line in [header, *_GEMINI_CLI[:4]])
    last = json.dumps(_GEMINI_CLI[4]) + "\n"
    path.write_text(complete + last[:40])  # the writer is half way through the last record
    (session,) = chats.parse_chats(path)
    assert session.malformed_lines == 0 and session.torn_tail
    assert session.meta["complete_bytes"] == len(complete.encode())
    first = ingest_paths(store, [path], source="chats")
    assert first["malformed_lines"] == 0 and first["errors"] == [] and first["sessions"] == 1
    with path.open("a") as fh:
        fh.write(last[40:])  # the record is finished
    again = ingest_paths(store, [path], source="chats")
    assert again["files"] == 1 and again["skipped"] == 0 and again["malformed_lines"] == 0
    assert "Understood, using uv add." in store.scalar("SELECT gist FROM episodes WHERE kind = 'session'")
    assert ingest_paths(store, [path], source="chats")["skipped"] == 1  # complete now: read once


def test_a_broken_line_before_the_last_is_still_counted(tmp_path: Path) -> None:
    header = {"sessionId": "gem-4", "startTime": "2026-01-01T10:00:00.000Z"}
    path = tmp_path / "session-2026-01-01T10-00-gem4.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(_GEMINI_CLI[0]) + "\n{not json\n"
                    + json.dumps(_GEMINI_CLI[4]) + "\n")
    (session,) = chats.parse_chats(path)
    assert session.malformed_lines == 1 and not session.torn_tail


def test_plain_ingest_reads_gemini_cli_sessions_and_nothing_else_there(home: Path, cli) -> None:
    """A Gemini CLI session whose SessionEnd hook never fired is read by the nightly
    `remem ingest` (no paths) as Claude Code's and Codex's are; Gemini's own logs and
    checkpoints in the same folder are not conversations and are not read."""
    from remem import paths

    project = paths.gemini_sessions_dir() / "abc"
    (project / "chats").mkdir(parents=True)
    header = {"sessionId": "gem-1", "projectHash": "abc", "startTime": "2026-01-01T10:00:00.000Z"}
    (project / "chats" / "session-2026-01-01T10-00-gem1.json").write_text(
        json.dumps({**header, "messages": _GEMINI_CLI}))
    (project / "logs.json").write_text(json.dumps([{"sessionId": "gem-1", "message": "hi"}]))
    (project / "checkpoint-x.json").write_text(json.dumps([{"role": "user", "parts": [{"text": "x"}]}]))
    for args in ([], ["--source", "chats"]):
        res = cli("ingest", *args, "--json")
        assert res.exit_code == 0, res.output
        summary = json.loads(res.stdout)
        assert summary["errors"] == [], summary
    first = json.loads(cli("ingest", "--json").stdout)
    assert first["files"] == 0 and first["skipped"] == 1  # the session file, unchanged since
    from remem.engine.store import Store

    with Store() as store:
        kinds = sorted(r["kind"] for r in store.rows("SELECT kind FROM episodes"))
        assert "session" in kinds and "correction" in kinds
        sources = {r["path"] for r in store.rows("SELECT path FROM sessions")}
    assert sources == {f"{project / 'chats' / 'session-2026-01-01T10-00-gem1.json'}#0"}  # one conversation


# Gemini CLI's record of a session with remem's hooks on, as 0.61.0 writes it: a header,
# `$set` updates, the prompt with the BeforeAgent context as a part of its own, the shell
# call's message written twice (before and after its result), a "user" message holding only
# the tool's result, the hand-back, the AfterAgent deny's reason as the next "user" message,
# and the last answer.
GEMINI_SID = "49bec968-5f5b-5d07-80b3-0dfec60c7cbf"
GEMINI_PROMPT = "Install the requests package for this project"
PROMPT_LESSON = "- (correction) Use uv, not pip, to install packages"
STOP_LESSON = "- (correction) Do not use git push --force on main; open a pull request instead"
HAND_BACK = "Installed requests with pip, and pushed it straight to main with git push --force."
FINAL = "Understood: I will open a pull request instead of force-pushing to main."


def _remem_block(lesson: str) -> str:
    from remem.engine.prime import CLOSE_TAG, HEADER, OPEN_TAG

    return f"{OPEN_TAG}\n{HEADER}\n{lesson}\n{CLOSE_TAG}"


def gemini_cli_lines(*, shell_status: str = "success", shell_output: str = "stub pip: would run pip install requests",
                     deny: bool = True) -> list[dict]:
    from remem.hooks.adapters import render

    context = _remem_block(PROMPT_LESSON).replace("<", "&lt;").replace(">", "&gt;")
    reason = json.loads(render("gemini", "stop", _remem_block(STOP_LESSON)))["reason"]
    call = {"id": "run_shell_command_1", "name": "run_shell_command",
            "args": {"command": "pip install requests", "description": "Install requests"}}
    response = {"functionResponse": {"id": "run_shell_command_1", "name": "run_shell_command",
                                     "response": {"output": f"Output: {shell_output}"}}}
    calling = {"id": "g1", "timestamp": "2026-11-30T07:45:59.012Z", "type": "gemini", "content": "",
               "thoughts": [], "model": "gemini-2.5-flash"}

    def touched(at: str) -> dict:
        return {"$set": {"lastUpdated": at}}

    return [
        {"sessionId": GEMINI_SID, "projectHash": "7809ac2a", "startTime": "2026-11-30T07:45:58.133Z",
         "lastUpdated": "2026-11-30T07:45:58.133Z", "kind": "main"},
        {"$set": {"messages": [{"id": "ctx", "timestamp": "2026-11-30T07:45:58.142Z", "type": "user",
                                "content": [{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}],
                  "lastUpdated": "2026-11-30T07:45:58.142Z"}},
        {"id": "u1", "timestamp": "2026-11-30T07:45:58.604Z", "type": "user",
         "content": [{"text": GEMINI_PROMPT}, {"text": f"<hook_context>{context}</hook_context>"}],
         "displayContent": [{"text": GEMINI_PROMPT}]},
        touched("2026-11-30T07:45:58.604Z"),
        calling,
        touched("2026-11-30T07:45:59.012Z"),
        {**calling, "toolCalls": [{**call, "result": [response], "status": shell_status,
                                   "timestamp": "2026-11-30T07:45:59.258Z", "resultDisplay": shell_output}]},
        {"id": "u2", "timestamp": "2026-11-30T07:45:59.272Z", "type": "user", "content": [response]},
        touched("2026-11-30T07:45:59.272Z"),
        {"id": "g2", "timestamp": "2026-11-30T07:45:59.380Z", "type": "gemini", "content": HAND_BACK},
        touched("2026-11-30T07:45:59.380Z"),
        *([{"id": "u3", "timestamp": "2026-11-30T07:46:00.157Z", "type": "user", "content": [{"text": reason}]},
           touched("2026-11-30T07:46:00.157Z")] if deny else []),
        {"id": "g3", "timestamp": "2026-11-30T07:46:00.243Z", "type": "gemini", "content": FINAL},
        touched("2026-11-30T07:46:00.243Z"),
    ]


def gemini_cli_project(tmp_path: Path, lines: list[dict], *, root: str | None = "/home/dev/shop") -> Path:
    """~/.gemini/tmp/<project>/chats/session-*.jsonl, with .project_root beside chats/."""
    chats_dir = tmp_path / "gemini-tmp" / "shop" / "chats"
    chats_dir.mkdir(parents=True)
    if root is not None:
        (chats_dir.parent / ".project_root").write_text(root)
    path = chats_dir / "session-2026-11-30T07-45-49bec968.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def stored_text(store) -> str:
    return " ".join(f"{r['title']} {r['gist']} {r['detail']}" for r in store.rows("SELECT * FROM episodes"))


def test_a_gemini_cli_prompt_is_stored_without_the_hook_context_gemini_cli_added_to_it(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    path = gemini_cli_project(tmp_path, gemini_cli_lines(deny=False))
    (session,) = chats.parse_chats(path)
    assert [t.text for t in session.user_turns()] == [GEMINI_PROMPT]
    assert ingest_paths(store, [path], source="chats")["errors"] == []
    stored = stored_text(store)
    assert GEMINI_PROMPT in stored
    assert "hook_context" not in stored and "remem-memory" not in stored and PROMPT_LESSON[2:] not in stored


def test_the_files_a_gemini_cli_prompt_names_with_at_are_not_the_persons_words(store, tmp_path: Path) -> None:
    """`@src/money.py` makes Gemini CLI append the file's text to the prompt's message, between
    its reference markers; read as the person's, a file's "No, never …" became their correction."""
    from remem.engine.ingest import ingest_paths

    typed = "why does the total come out wrong? @src/money.py"
    file_text = "# No, never use float for money: keep integer cents.\ntotal = 0.1 + 0.2\n"
    lines = gemini_cli_lines(deny=False)
    for line in lines:
        if line.get("id") == "u1":
            line["content"] = [{"text": typed}, {"text": "\n--- Content from referenced files ---"},
                               {"text": "\nContent from @src/money.py:\n"}, {"text": file_text},
                               {"text": "\n--- End of content ---"},
                               {"text": "\n<system_note>\nThe user has explicitly selected the following agent(s): x.\n</system_note>\n"}]
            line["displayContent"] = [{"text": typed}]
    path = gemini_cli_project(tmp_path, lines)
    (session,) = chats.parse_chats(path)
    assert [t.text for t in session.user_turns()] == [typed]
    summary = ingest_paths(store, [path], source="chats")
    assert summary["errors"] == [] and "correction" not in summary["by_kind"], summary
    stored = stored_text(store)
    assert typed in stored and "integer cents" not in stored and "system_note" not in stored


def test_a_gemini_cli_prompt_cut_off_inside_its_file_contents_keeps_only_the_typed_words(tmp_path: Path) -> None:
    """A prompt whose end marker never came (Gemini CLI's ACP path writes none after an
    @-named resource) loses everything from the opening marker on, not the typed words."""
    lines = gemini_cli_lines(deny=False)
    for line in lines:
        if line.get("id") == "u1":
            line["content"] = [{"text": "summarise @notes.md"},
                               {"text": "\n--- Content from referenced context ---"},
                               {"text": "\nContent from @notes.md:\n"}, {"text": "secret plans"}]
    (session,) = chats.parse_chats(gemini_cli_project(tmp_path, lines))
    assert [t.text for t in session.user_turns()] == ["summarise @notes.md"]


# What Gemini CLI adds to a prompt, as one regex: the reference the reader is held to. (A
# reader running this regex lazily to each closing marker is quadratic in the prompt.)
_ADDED_BY_GEMINI_CLI = re.compile(
    r"\n?--- Content from referenced (?:files|context) ---.*?(?:--- End of content ---|\Z)"
    r"|\n?<system_note>.*?</system_note>\n?", re.S)
_PROMPT_PIECES = st.sampled_from([
    "\n", "fix it", "--- Content from referenced files ---", "--- Content from referenced context ---",
    "--- End of content ---", "<system_note>", "</system_note>", "--- Content from"])


@settings(max_examples=1000, deadline=None)
@given(st.lists(_PROMPT_PIECES, min_size=1, max_size=12))
def test_a_gemini_cli_prompt_loses_exactly_the_spans_gemini_cli_added(pieces: list[str]) -> None:
    """Referenced contents to their end marker (or the end), agent notes to their close, each
    span found from left to right: what is left is what the regex above leaves."""
    prompt = "".join(pieces)
    assert chats._persons_words(prompt).strip() == _ADDED_BY_GEMINI_CLI.sub("", prompt).strip()


_READ_USER_TURNS = """
import json, sys
from remem.engine import chats
(session,) = chats.parse_chats(sys.argv[1])
print(json.dumps([t.text for t in session.user_turns()]))
"""


def test_a_gemini_cli_prompt_of_many_unclosed_agent_notes_is_read_in_linear_time(tmp_path: Path) -> None:
    """A megabyte of `<system_note>` openings that nothing closes (a pasted log, say). Not a timing
    assertion: read in linear time it takes well under a second, quadratically hours; the child
    is stopped only when reading it takes a minute."""
    typed = "why is this log so long?\n" + "<system_note>" * 80_000
    lines = gemini_cli_lines(deny=False)
    for line in lines:
        if line.get("id") == "u1":
            line["content"] = [{"text": typed}]
    path = gemini_cli_project(tmp_path, lines)
    try:
        done = subprocess.run([sys.executable, "-c", _READ_USER_TURNS, str(path)],
                              capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("still reading the prompt after a minute")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [typed]


def test_remems_stop_reason_in_a_gemini_cli_record_is_not_the_persons_correction(store, tmp_path: Path) -> None:
    """Gemini CLI sends the AfterAgent deny's reason to the model as the next prompt and records
    it as a "user" message: read as the person's, it was a correction of theirs after the
    hand-back, and remem's own lesson came back to it as a repeat."""
    from remem.engine.ingest import ingest_paths
    from remem.engine.prime import STOP_REASON

    path = gemini_cli_project(tmp_path, gemini_cli_lines())
    (session,) = chats.parse_chats(path)
    assert [t.text for t in session.user_turns()] == [GEMINI_PROMPT]
    summary = ingest_paths(store, [path], source="chats")
    assert summary["errors"] == [] and "correction" not in summary["by_kind"], summary
    stored = stored_text(store)
    assert FINAL in stored and STOP_REASON not in stored and STOP_LESSON[2:] not in stored


def test_an_earlier_releases_stop_reason_the_lessons_block_alone_is_not_the_persons_either(tmp_path: Path) -> None:
    """Before the stop reason opened with what to do, it was the fenced lessons block alone."""
    lines = gemini_cli_lines()
    for line in lines:
        if line.get("id") == "u3":
            line["content"] = [{"text": _remem_block(STOP_LESSON)}]
    (session,) = chats.parse_chats(gemini_cli_project(tmp_path, lines))
    assert [t.text for t in session.user_turns()] == [GEMINI_PROMPT]


def test_a_gemini_cli_message_holding_only_a_tool_result_is_no_hand_back(tmp_path: Path) -> None:
    """The agent went on after its call: the next turn is its hand-back, not an empty one that
    says it stopped there."""
    (session,) = chats.parse_chats(gemini_cli_project(tmp_path, gemini_cli_lines(deny=False)))
    assert [(t.role, t.text, len(t.tool_calls)) for t in session.turns] == [
        ("user", GEMINI_PROMPT, 0), ("assistant", "", 1), ("assistant", HAND_BACK, 0), ("assistant", FINAL, 0)]


def test_a_gemini_cli_session_is_stored_under_its_own_id_the_one_its_hooks_record(store, tmp_path: Path) -> None:
    """`primes` holds the session id the hooks were sent: Gemini CLI's sessionId. Its episodes
    carry the same, so `remem measure` can tell which primed session repeated a lesson."""
    from remem.engine.ingest import ingest_paths

    path = gemini_cli_project(tmp_path, gemini_cli_lines())
    (session,) = chats.parse_chats(path)
    assert session.id == GEMINI_SID
    ingest_paths(store, [path], source="chats")
    assert {r["session_id"] for r in store.rows("SELECT session_id FROM episodes")} == {GEMINI_SID}
    assert [r["id"] for r in store.rows("SELECT id FROM sessions")] == [GEMINI_SID]


def store_as_an_earlier_release_did(store, path: Path, old_id: str, *, upto: int | None = None) -> None:
    """The session of `path` as an earlier release stored it: under `old_id`, with no folder,
    remem's stop reason read as the person's words after the hand-back. `upto`: the record as
    far as it was written when read (a live session)."""
    from remem.engine.prime import STOP_REASON
    from remem.engine.session import Turn
    from remem.engine.session_episodes import ingest_session

    (old,) = chats.parse_chats(path)
    old.id, old.cwd, old.path = old_id, None, f"{path}#0"
    old.turns.insert(3, Turn(role="user", text=f"{STOP_REASON}\n{_remem_block(STOP_LESSON)}"))
    old.turns = old.turns[:upto]
    st = path.stat()
    ingest_session(store, old, mtime=st.st_mtime, size=st.st_size, whole=True)


def failing_gemini_cli_project(tmp_path: Path) -> Path:
    return gemini_cli_project(tmp_path, gemini_cli_lines(shell_status="error",
                                                         shell_output="error: externally-managed-environment"))


def test_a_gemini_cli_session_stored_under_its_older_id_is_taken_over_not_stored_twice(
        store, tmp_path: Path) -> None:
    """Stored by an earlier release as `<sessionId>:<hash>`: reading the file again, unchanged,
    moves it to Gemini CLI's id, keeping what the person and the sleep made of it, and drops
    what was misread (remem's stop reason as a correction)."""
    from remem.engine.ingest import ingest_paths
    from remem.engine.prime import STOP_REASON
    from remem.engine.store import stable_id

    path = failing_gemini_cli_project(tmp_path)
    store_as_an_earlier_release_did(store, path, f"{GEMINI_SID}:48e93e95ff")
    kinds = {r["kind"]: dict(r) for r in store.rows("SELECT * FROM episodes")}
    assert set(kinds) == {"session", "error", "correction"}, kinds
    error = kinds["error"]
    # what the person and the sleep made of it since
    store.conn.execute("UPDATE episodes SET recalls = 3 WHERE id = ?", (error["id"],))
    store.conn.execute("INSERT INTO tags (memory_id, tag) VALUES (?, 'shop-setup')", (error["id"],))
    store.conn.execute("INSERT INTO lessons (id, text, kind, sources, created, updated) VALUES "
                       "('L1', 'Use uv', 'error', ?, '2026-12-01', '2026-12-01')", (json.dumps([error["id"]]),))
    store.conn.commit()
    store.hard_delete([kinds["session"]["id"]])

    summary = ingest_paths(store, [path], source="chats")
    assert summary["files"] == 1 and summary["errors"] == [] and summary["episodes"] == 0, summary
    rows = [dict(r) for r in store.rows("SELECT * FROM episodes")]
    assert [(r["kind"], r["session_id"], r["cwd"]) for r in rows] == [("error", GEMINI_SID, "/home/dev/shop")]
    assert rows[0]["id"] == stable_id(GEMINI_SID, "error", error["title"]) and rows[0]["recalls"] == 3
    assert "shop-setup" in store.tags_of(rows[0]["id"]) and STOP_REASON not in stored_text(store)
    assert json.loads(store.scalar("SELECT sources FROM lessons WHERE id = 'L1'")) == [rows[0]["id"]]
    session_id = stable_id(GEMINI_SID, "session", GEMINI_SID)
    assert store.forgotten([session_id]) == {session_id}  # deleted for good then: not brought back
    assert [r["id"] for r in store.rows("SELECT id FROM sessions")] == [GEMINI_SID]
    assert ingest_paths(store, [path], source="chats")["skipped"] == 1  # taken over once


def test_a_live_gemini_cli_session_stored_under_two_older_ids_is_one_session_after(store, tmp_path: Path) -> None:
    """Read early, a live session's opening was shorter and its older id another: both copies
    become the one session, each episode once."""
    from remem.engine.ingest import ingest_paths

    path = failing_gemini_cli_project(tmp_path)
    store_as_an_earlier_release_did(store, path, f"{GEMINI_SID}:0123456789", upto=2)
    store_as_an_earlier_release_did(store, path, f"{GEMINI_SID}:48e93e95ff")
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind IN ('session', 'error')") == 4
    # recalled in its last reading: that copy is the one kept
    store.conn.execute("UPDATE episodes SET recalls = 2 WHERE session_id = ?", (f"{GEMINI_SID}:48e93e95ff",))
    store.conn.commit()
    ingest_paths(store, [path], source="chats")
    rows = store.rows("SELECT kind, session_id, recalls FROM episodes ORDER BY kind")
    assert [(r["kind"], r["session_id"], r["recalls"]) for r in rows] == [
        ("error", GEMINI_SID, 2), ("session", GEMINI_SID, 2)]
    assert FINAL in store.scalar("SELECT gist FROM episodes WHERE kind = 'session'")


def test_a_gemini_cli_session_takes_its_folder_from_project_root(tmp_path: Path) -> None:
    (session,) = chats.parse_chats(gemini_cli_project(tmp_path / "a", gemini_cli_lines(), root="/home/dev/shop\n"))
    assert session.cwd == "/home/dev/shop"  # so its lessons are this project's
    (unknown,) = chats.parse_chats(gemini_cli_project(tmp_path / "b", gemini_cli_lines(), root=None))
    assert unknown.cwd is None


def test_gemini_cli_set_records_are_updates_not_malformed_lines(tmp_path: Path) -> None:
    """`{"$set": …}` updates the record's metadata, or sets the model's history (here the
    session's opening context): neither is a broken line, nor a turn."""
    (session,) = chats.parse_chats(gemini_cli_project(tmp_path, gemini_cli_lines()))
    assert session.malformed_lines == 0
    assert not any("session_context" in t.text for t in session.turns)


def test_a_gemini_cli_rewind_leaves_the_abandoned_turns_out(tmp_path: Path) -> None:
    """`{"$rewindTo": id}`: the person went back to that prompt; it and what followed are gone
    from the conversation, and what they asked instead follows."""
    lines = [*gemini_cli_lines(deny=False),
             {"$rewindTo": "u1"},
             {"id": "u4", "timestamp": "2026-11-30T07:47:00.000Z", "type": "user",
              "content": [{"text": "Add requests to pyproject.toml with uv add"}]},
             {"id": "g4", "timestamp": "2026-11-30T07:47:05.000Z", "type": "gemini", "content": "Added it."}]
    (session,) = chats.parse_chats(gemini_cli_project(tmp_path, lines))
    assert [t.text for t in session.turns] == ["Add requests to pyproject.toml with uv add", "Added it."]
    assert session.malformed_lines == 0


@pytest.mark.parametrize("shape", ["jsonl", "json"])
def test_a_gemini_cli_session_with_no_message_yet_is_no_error_and_is_read_once_it_grows(
        home: Path, cli, shape: str) -> None:
    """Plain `remem ingest` reads Gemini CLI's folder every night: a session just opened (its
    header alone) must not be an error line, nor fail the run, nor be skipped once it grows."""
    from remem import paths

    chats_dir = paths.gemini_sessions_dir() / "abc" / "chats"
    chats_dir.mkdir(parents=True)
    header = {"sessionId": "gem-9", "projectHash": "abc", "startTime": "2026-01-01T10:00:00.000Z"}
    path = chats_dir / f"session-2026-01-01T10-00-gem9.{shape}"
    path.write_text(json.dumps(header) + "\n" if shape == "jsonl" else json.dumps({**header, "messages": []}))
    res = cli("ingest", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["errors"] == [] and json.loads(res.stdout)["episodes"] == 0
    if shape == "jsonl":
        path.write_text("".join(json.dumps(line) + "\n" for line in [header, *_GEMINI_CLI]))
    else:
        path.write_text(json.dumps({**header, "messages": _GEMINI_CLI}))
    grown = json.loads(cli("ingest", "--json").stdout)
    assert grown["errors"] == [] and grown["sessions"] == 1 and grown["episodes"] > 0


def test_a_resumed_gemini_cli_json_and_its_jsonl_with_one_session_id_stay_two_sessions(store, tmp_path: Path) -> None:
    """Gemini CLI writes a .jsonl beside a .json it resumes, with the same sessionId. Each file
    keeps what it says: neither takes the other's corrections away, and an unchanged pair is
    skipped on the next run, not read again every night."""
    from remem.engine.ingest import ingest_paths

    chats_dir = tmp_path / "tmp" / "abc" / "chats"
    chats_dir.mkdir(parents=True)
    sid = "5f0c3a7e-1111-2222-3333-444455556666"

    def msg(i: int, kind: str, text: str, at: str) -> dict:
        return {"id": f"m{i}", "timestamp": at, "type": kind, "content": text}

    early = [msg(1, "user", "Set up the shop project with a postgres database please", "2026-11-30T07:45:58Z"),
             msg(2, "gemini", "Done, the database is configured.", "2026-11-30T07:46:10Z"),
             msg(3, "user", "No, that's wrong: use sqlite not postgres", "2026-11-30T07:47:00Z"),
             msg(4, "gemini", "Switched to sqlite.", "2026-11-30T07:47:30Z")]
    later = [msg(5, "user", "Now add a test for the cart", "2026-12-01T09:00:00Z"),
             msg(6, "gemini", "Added tests with unittest.", "2026-12-01T09:01:00Z"),
             msg(7, "user", "No, that's wrong: use pytest not unittest", "2026-12-01T09:02:00Z"),
             msg(8, "gemini", "Rewrote them with pytest.", "2026-12-01T09:03:00Z")]
    (chats_dir / "session-2026-11-30T07-45-5f0c3a7e.json").write_text(json.dumps(
        {"sessionId": sid, "projectHash": "abc", "startTime": "2026-11-30T07:45:49Z", "messages": early}))
    header = {"sessionId": sid, "projectHash": "abc", "startTime": "2026-12-01T09:00:00Z"}
    (chats_dir / "session-2026-12-01T09-00-5f0c3a7e.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in [header, *later]))
    first = ingest_paths(store, [chats_dir], source="chats")
    assert first["sessions"] == 2 and first["errors"] == []

    def corrections() -> dict[str, str]:
        return {r["id"]: r["title"] for r in store.rows("SELECT id, title FROM episodes WHERE kind = 'correction'")}

    made = corrections()
    assert any("sqlite" in t for t in made.values()) and any("pytest" in t for t in made.values())
    assert store.scalar("SELECT count(*) FROM sessions") == 2
    assert sid in {r["id"] for r in store.rows("SELECT id FROM sessions")}  # the live one: the hooks' id
    again = ingest_paths(store, [chats_dir], source="chats")
    assert again["skipped"] == 2 and again["files"] == 0
    assert corrections() == made


def test_a_memory_home_where_the_new_file_cannot_be_made_beside_it_still_opens(home: Path, monkeypatch) -> None:
    """Making memory.db beside its place fails (a read-only folder, no room): SQLite then opens
    it in place and says what is wrong, never an unexpected error from the making."""
    import sqlite3

    from remem.engine.store import Store

    real = sqlite3.connect

    def refuse_the_new_file(path, *args, **kwargs):
        if str(path).endswith(".new"):
            raise sqlite3.OperationalError("unable to open database file")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", refuse_the_new_file)
    with Store() as store:
        assert store.scalar("PRAGMA user_version") >= 1


# Gemini CLI's shell tool as it records a command that ran and failed: the tool itself
# succeeded (status "success"), the raw output is resultDisplay, and the exit code is only in
# what the model was sent, after the output.
def gemini_shell_call(output: str, exit_code: int | None, *, call_id: str = "run_shell_command-2") -> dict:
    sent = f"Output: {output}" + (f"\nExit Code: {exit_code}" if exit_code else "") + "\nProcess Group PGID: 4242"
    return {"id": call_id, "name": "run_shell_command", "args": {"command": "npm test"},
            "result": [{"functionResponse": {"id": call_id, "name": "run_shell_command",
                                             "response": {"output": sent}}}],
            "status": "success", "timestamp": "2025-10-03T09:00:09.000Z", "displayName": "Shell",
            "resultDisplay": output}


def gemini_json_session(tmp_path: Path, tool_calls: list[dict]) -> Path:
    chats_dir = tmp_path / "gemini-tmp" / "shopapi" / "chats"
    chats_dir.mkdir(parents=True)
    messages = [
        {"id": "u1", "timestamp": "2025-10-03T09:00:00.000Z", "type": "user", "content": "run npm test"},
        {"id": "g1", "timestamp": "2025-10-03T09:00:05.000Z", "type": "gemini", "content": "",
         "toolCalls": tool_calls},
        {"id": "g2", "timestamp": "2025-10-03T09:00:12.000Z", "type": "gemini", "content": "Ran them."},
    ]
    path = chats_dir / "session-2025-10-03T09-00-7c1e2f3a.json"
    path.write_text(json.dumps({"sessionId": "7c1e2f3a-1111-2222-3333-444455556666", "projectHash": "shopapi",
                                "startTime": "2025-10-03T09:00:00.000Z", "messages": messages}))
    return path


def test_a_gemini_cli_shell_command_that_exited_non_zero_is_an_error(store, tmp_path: Path) -> None:
    """Its status says "success"; "Exit Code: 1" after the output the model got says it failed,
    however long that output was. The text kept is the command's own output."""
    from remem.engine.ingest import ingest_paths

    failing = "> jest\nFAIL src/order.test.js\n" + "  at run (node_modules/jest/x.js)\n" * 200 \
        + "TypeError: Cannot read properties of undefined (reading 'amount')"
    path = gemini_json_session(tmp_path, [gemini_shell_call(failing, 1)])
    (session,) = chats.parse_chats(path)
    (call,) = session.tool_calls()
    assert call.is_error and call.result == failing
    summary = ingest_paths(store, [path], source="chats")
    assert summary["errors"] == [] and summary["by_kind"].get("error") == 1, summary
    (error,) = store.rows("SELECT title FROM episodes WHERE kind = 'error'")
    assert error["title"].startswith("run_shell_command "), error["title"]


def test_a_gemini_cli_shell_command_that_exited_zero_is_no_error(tmp_path: Path) -> None:
    """Gemini CLI adds no Exit Code line for 0; an output that merely mentions one is no failure."""
    path = gemini_json_session(tmp_path, [gemini_shell_call("Exit Code: 1 means a test failed\nTests: 12 passed", None)])
    (session,) = chats.parse_chats(path)
    (call,) = session.tool_calls()
    assert not call.is_error


def _two_turn_gemini_record(messages: list[dict]) -> dict:
    return {"sessionId": "abcd1234-0000-4000-8000-000000000001", "projectHash": "proj",
            "startTime": "2025-10-14T09:00:00.000Z", "messages": messages}


_LIVE_GEMINI = [
    {"id": "u1", "timestamp": "2025-10-14T09:00:01.000Z", "type": "user", "content": "set up the linter"},
    {"id": "g1", "timestamp": "2025-10-14T09:00:05.000Z", "type": "gemini", "content": "I'll add eslint."},
    {"id": "u2", "timestamp": "2025-10-14T09:01:00.000Z", "type": "user",
     "content": "No, use ruff, this is a Python project."},
    {"id": "g2", "timestamp": "2025-10-14T09:01:05.000Z", "type": "gemini", "content": "Added ruff."},
]


def _gemini_json_path(tmp_path: Path) -> Path:
    chats_dir = tmp_path / "gemini-tmp" / "proj" / "chats"
    chats_dir.mkdir(parents=True, exist_ok=True)
    return chats_dir / "session-2025-10-14T09-00-abcd1234.json"


def test_a_gemini_cli_json_read_while_live_is_one_session_once_it_grew(store, tmp_path: Path) -> None:
    """Gemini CLI rewrites its .json record as the session runs: read with its first prompt
    only, then whole, it is one session, not one per opening it had."""
    import os

    from remem.engine.ingest import ingest_paths

    path = _gemini_json_path(tmp_path)
    path.write_text(json.dumps(_two_turn_gemini_record(_LIVE_GEMINI[:1])))
    assert ingest_paths(store, [path], source="chats")["sessions"] == 1
    path.write_text(json.dumps(_two_turn_gemini_record(_LIVE_GEMINI)))
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 5))
    grown = ingest_paths(store, [path], source="chats")
    assert grown["files"] == 1 and grown["errors"] == []
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'session'") == 1
    assert store.scalar("SELECT count(*) FROM sessions") == 1
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction'") == 1
    assert "Added ruff." in store.scalar("SELECT gist FROM episodes WHERE kind = 'session'")


def test_a_gemini_cli_json_stored_under_older_ids_while_live_becomes_one_session(store, tmp_path: Path) -> None:
    """An earlier release stored it as `<sessionId>:<hash of its opening>`, once per opening
    read: the row its file names, and an early reading whose row went. Read again, even
    unchanged, both become the one session, and it is skipped after."""
    from remem.engine.ingest import ingest_paths
    from remem.engine.session_episodes import ingest_session

    path = _gemini_json_path(tmp_path)
    path.write_text(json.dumps(_two_turn_gemini_record(_LIVE_GEMINI)))
    (whole,) = chats.parse_chats(path)
    st = path.stat()
    sid = "abcd1234-0000-4000-8000-000000000001"
    for count, old_id in ((1, f"{sid}:{chats.fingerprint(whole.turns[:1], whole.started)[:10]}"),
                          (4, f"{sid}:{chats.fingerprint(whole.turns, whole.started)[:10]}")):
        (old,) = chats.parse_chats(path)
        old.id, old.path, old.turns = old_id, f"{path}#0", old.turns[:count]
        ingest_session(store, old, mtime=st.st_mtime, size=st.st_size, whole=True)
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'session'") == 2  # the defect, stored
    again = ingest_paths(store, [path], source="chats")
    assert again["files"] == 1 and again["errors"] == [] and again["episodes"] == 0, again
    rows = store.rows("SELECT kind, session_id FROM episodes ORDER BY kind")
    assert [(r["kind"], r["session_id"]) for r in rows] == [("correction", whole.id), ("session", whole.id)]
    assert [r["id"] for r in store.rows("SELECT id FROM sessions")] == [whole.id]
    assert ingest_paths(store, [path], source="chats")["skipped"] == 1


def _chatgpt_msg(mid: str, role: str, text: str, at: float) -> dict:
    return {"id": mid, "author": {"role": role}, "create_time": at,
            "content": {"content_type": "text", "parts": [text]}, "recipient": "all"}


def chatgpt_regenerated(variant: int) -> dict:
    """One ChatGPT conversation as two exports give it: in the second, its first reply was
    regenerated, and the person went on from there (the first branch abandoned)."""
    t0 = 1727950000.0
    mapping = {"r": {"id": "r", "message": None, "parent": None, "children": ["u1"]},
               "u1": {"id": "u1", "parent": "r", "children": ["a1"],
                      "message": _chatgpt_msg("u1", "user", "How do I pin a Python dependency?", t0)},
               "a1": {"id": "a1", "parent": "u1", "children": ["u2"],
                      "message": _chatgpt_msg("a1", "assistant", "Use requirements.txt with ==.", t0 + 5)},
               "u2": {"id": "u2", "parent": "a1", "children": ["a2"],
                      "message": _chatgpt_msg("u2", "user", "No, we use uv, never requirements.txt.", t0 + 30)},
               "a2": {"id": "a2", "parent": "u2", "children": [],
                      "message": _chatgpt_msg("a2", "assistant", "Understood: uv add pkg==1.2.", t0 + 35)}}
    current = "a2"
    if variant == 2:
        mapping["u1"]["children"] = ["a1", "a1b"]
        mapping["a1b"] = {"id": "a1b", "parent": "u1", "children": ["u2b"],
                          "message": _chatgpt_msg("a1b", "assistant", "Run uv add pkg==1.2.", t0 + 60)}
        mapping["u2b"] = {"id": "u2b", "parent": "a1b", "children": ["a2b"],
                          "message": _chatgpt_msg("u2b", "user", "Thanks, that works.", t0 + 90)}
        mapping["a2b"] = {"id": "a2b", "parent": "u2b", "children": [],
                          "message": _chatgpt_msg("a2b", "assistant", "Glad it helped.", t0 + 95)}
        current = "a2b"
    return {"title": "pin dep", "create_time": t0, "update_time": t0 + 99, "mapping": mapping,
            "current_node": current, "id": "67000000-aaaa-bbbb-cccc-000000000001",
            "conversation_id": "67000000-aaaa-bbbb-cccc-000000000001"}


def test_a_chatgpt_conversation_regenerated_between_two_exports_is_one_session(store, tmp_path: Path) -> None:
    """Its id names it, not its opening: the later export updates it, and the correction only
    the abandoned branch held goes (abandoned branches are not read)."""
    import os

    from remem.engine.ingest import ingest_paths

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([chatgpt_regenerated(1)]))
    first = ingest_paths(store, [path])
    assert first["by_kind"] == {"session": 1, "correction": 1}, first
    path.write_text(json.dumps([chatgpt_regenerated(2)]))
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 60))  # downloaded again
    second = ingest_paths(store, [path])
    assert second["errors"] == [] and second["sessions"] == 1
    assert [r["kind"] for r in store.rows("SELECT kind FROM episodes")] == ["session"]
    assert "Glad it helped." in store.scalar("SELECT gist FROM episodes WHERE kind = 'session'")
    assert [r["id"] for r in store.rows("SELECT id FROM sessions")] == ["67000000-aaaa-bbbb-cccc-000000000001"]


def test_two_exports_of_one_conversation_are_not_read_in_turn(store, tmp_path: Path) -> None:
    """Two exports kept side by side (its first reply regenerated between them): each ingest
    read both, each replacing what the other stored. The newer export tells it."""
    import os

    from remem.engine.ingest import ingest_paths

    older, newer = tmp_path / "a" / "conversations.json", tmp_path / "b" / "conversations.json"
    for folder, branch in ((older, 1), (newer, 2)):
        folder.parent.mkdir()
        folder.write_text(json.dumps([chatgpt_regenerated(branch)]))
    os.utime(older, (older.stat().st_atime, newer.stat().st_mtime - 86400))
    ingest_paths(store, [older, newer])
    told = store.rows("SELECT id, kind, gist FROM episodes ORDER BY id")
    for _ in range(2):
        again = ingest_paths(store, [older, newer])
        assert again["episodes"] == 0 and store.rows("SELECT id, kind, gist FROM episodes ORDER BY id") == told
    assert [r["kind"] for r in told] == ["session"]  # the newer export's branch: no correction
    assert store.scalar("SELECT path FROM sessions") == f"{newer}#0"


def test_a_chatgpt_conversation_stored_under_its_older_id_is_taken_over_not_stored_twice(
        store, tmp_path: Path) -> None:
    """Stored by an earlier release as `<id>:<hash of its opening>`; the next export, its first
    reply regenerated, takes that place: one session, and what the person made of it stays."""
    from remem.engine.ingest import ingest_paths
    from remem.engine.session_episodes import ingest_session

    uuid = "67000000-aaaa-bbbb-cccc-000000000001"
    first = tmp_path / "export-1" / "conversations.json"
    first.parent.mkdir()
    first.write_text(json.dumps([chatgpt_regenerated(1)]))
    (old,) = chats.parse_chats(first)
    old.id, old.path = f"{uuid}:{chats.fingerprint(old.turns, old.started)[:10]}", f"{first}#0"
    ingest_session(store, old, mtime=first.stat().st_mtime, size=first.stat().st_size, whole=True)
    session_ep = store.scalar("SELECT id FROM episodes WHERE kind = 'session'")
    store.conn.execute("UPDATE episodes SET recalls = 4 WHERE id = ?", (session_ep,))
    store.conn.commit()
    second = tmp_path / "export-2" / "conversations.json"
    second.parent.mkdir()
    second.write_text(json.dumps([chatgpt_regenerated(2)]))
    summary = ingest_paths(store, [second])
    assert summary["errors"] == [] and summary["episodes"] == 0, summary
    rows = store.rows("SELECT kind, session_id, recalls FROM episodes")
    assert [(r["kind"], r["session_id"], r["recalls"]) for r in rows] == [("session", uuid, 4)]
    assert [r["id"] for r in store.rows("SELECT id FROM sessions")] == [uuid]


def test_a_claude_ai_conversation_is_named_by_its_uuid_and_small_ids_still_by_content(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([
        {"uuid": "3F1C0D2E-AAAA-BBBB-CCCC-000000000001", "name": "T", "created_at": "2025-09-01T10:00:00Z",
         "chat_messages": [{"sender": "human", "text": "hi", "created_at": "2025-09-01T10:00:00Z"}]},
        {"id": 7, "mapping": {"r": {"id": "r", "message": _chatgpt_msg("u", "user", "hi", 1727950000.0),
                                    "parent": None, "children": []}}, "current_node": "r"}]))
    claude_ai, small = chats.parse_chats(path)
    assert claude_ai.id == "3F1C0D2E-AAAA-BBBB-CCCC-000000000001"
    assert small.id.startswith("7:")  # exports that reuse small ids: still namespaced by content


def test_an_empty_conversation_of_an_export_is_not_counted_as_a_session(store, tmp_path: Path) -> None:
    """A Claude.ai export holds conversations never written in: no session episode, and not
    counted in `sessions` either, so the summary adds up."""
    from remem.engine.ingest import ingest_paths

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([
        {"uuid": "3f1c0d2e-aaaa-bbbb-cccc-000000000001", "name": "Terraform state",
         "created_at": "2025-09-01T10:00:00Z", "chat_messages": [
             {"sender": "human", "text": "Help me move my terraform state to S3", "created_at": "2025-09-01T10:00:00Z"},
             {"sender": "assistant", "text": "Use an S3 backend.", "created_at": "2025-09-01T10:00:05Z"}]},
        {"uuid": "3f1c0d2e-aaaa-bbbb-cccc-000000000002", "name": "", "created_at": "2025-09-02T10:00:00Z",
         "chat_messages": []}]))
    summary = ingest_paths(store, [path])
    assert summary["errors"] == [] and summary["sessions"] == summary["by_kind"]["session"] == 1, summary
    assert ingest_paths(store, [path])["skipped"] == 1  # recorded all the same: not read again


def test_a_gemini_cli_json_leaves_an_older_reading_of_its_resumed_jsonl_alone(store, tmp_path: Path) -> None:
    """Gemini CLI resumes a .json into a .jsonl with the same sessionId: the .json takes over
    only its own earlier readings, never one of the .jsonl's (another opening), whose file is
    read after it."""
    from remem.engine.ingest import ingest_paths
    from remem.engine.session_episodes import ingest_session

    path = _gemini_json_path(tmp_path)
    path.write_text(json.dumps(_two_turn_gemini_record(_LIVE_GEMINI)))
    jsonl = path.with_name("session-2025-10-15T08-00-abcd1234.jsonl")
    jsonl.write_text("".join(json.dumps(line) + "\n" for line in [
        {"sessionId": "abcd1234-0000-4000-8000-000000000001", "startTime": "2025-10-15T08:00:00.000Z"},
        {"id": "u9", "timestamp": "2025-10-15T08:00:01.000Z", "type": "user", "content": "now add the CI job"},
        {"id": "g9", "timestamp": "2025-10-15T08:00:05.000Z", "type": "gemini", "content": "Added it."}]))
    (resumed,) = chats.parse_chats(jsonl)
    resumed.id = f"{resumed.id}:{chats.fingerprint(resumed.turns, resumed.started)[:10]}"
    resumed.path = f"{jsonl}#0"
    ingest_session(store, resumed, whole=True)
    store.conn.execute("DELETE FROM sessions")  # its row replaced by a later reading, as live ones are
    store.conn.commit()
    ingest_paths(store, [path], source="chats")
    assert resumed.id in {r["session_id"] for r in store.rows("SELECT session_id FROM episodes")}
