"""The Claude Code parser over the project's own fixtures (v1 inline sidechains, v2 streamed
records with progress and snapshots, a tool-heavy v2 session); counts checked by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from remem.engine import transcripts
from remem.engine.transcripts import parse_file, parse_lines, project_files

FIX = Path(__file__).parent / "fixtures" / "claude_code"


def roles(session):
    return "".join("I" if t.interrupt else t.role[0] for t in session.turns)


def test_v1_sidechain_records_are_not_the_persons_conversation():
    s = parse_file(FIX / "v1_sidechain.jsonl")
    assert s.id == "11111111-1111-4111-8111-111111111111"
    assert s.source == "claude-code" and s.cwd == "/home/dev/projects/shop"
    # summary, slash-command wrapper, meta line and 4 sidechain records are all left out
    assert roles(s) == "aaauaaauaa"
    assert len(s.turns) == 10
    calls = s.tool_calls()
    assert [c.name for c in calls] == ["Task", "Bash", "Bash", "Bash", "Bash"]
    assert all(c.result is not None for c in calls)
    assert [c.is_error for c in calls] == [False, True, False, False, False]
    assert "yarn" not in json.dumps([t.text for t in s.turns])  # the subagent's words
    assert calls[0].result == "Dependencies: react 18, stripe-js 2"  # list-of-blocks content
    assert s.meta["opening_command"] == "/review the checkout page"
    assert s.malformed_lines == 0 and not s.torn_tail
    assert s.started == "2026-03-01T10:00:07.000Z"


def test_v2_streamed_records_merge_and_harness_lines_drop():
    s = parse_file(FIX / "v2_stream.jsonl")
    assert roles(s) == "uaaIauaua"
    first, read = s.turns[0], s.turns[1]
    assert first.text == "the cart total is wrong when a coupon is applied, fix it"  # reminder stripped
    # five records of msg_v2_a (blank text, thinking, text, two tool uses) are one turn
    assert read.text == "Let me read the cart code."
    assert [c.name for c in read.tool_calls] == ["Read", "Grep"]
    # results came back in the other order and are paired by tool_use_id
    assert read.tool_calls[1].result.startswith("src/cart.ts:41")
    assert read.tool_calls[0].result.startswith("1→export function total")
    edit = s.turns[2].tool_calls[0]
    assert edit.rejected and edit.is_error
    assert transcripts.rejection_reason(edit.result) == "don't touch cart.ts, the bug is in coupon.ts"
    assert s.turns[3].interrupt and s.turns[3].text == ""
    # the message typed while the test was running is kept, in order
    assert s.turns[5].text == "also check rounding"
    texts = " ".join(t.text for t in s.turns)
    for noise in ("Caveat", "Kept model", "/model", "system-reminder", "TodoWrite"):
        assert noise not in texts
    assert s.malformed_lines == 0


def test_v2_tool_heavy_pairs_every_call():
    s = parse_file(FIX / "v2_tools.jsonl")
    assert roles(s) == "u" + "a" * 9 + "u"
    calls = s.tool_calls()
    assert len(calls) == 11 and all(c.result is not None for c in calls)
    assert sum(c.is_error for c in calls) == 7
    assert [c.name for c in s.turns[1].tool_calls] == ["Bash"] * 4
    read = calls[9]
    assert read.name == "Read" and read.result == "File does not exist."  # tool_use_error tags gone


def test_only_top_level_files_of_project_folders(tmp_path):
    proj = tmp_path / "projects" / "-home-dev-shop"
    (proj / "subagents").mkdir(parents=True)
    (proj / "memory").mkdir()
    shutil.copy(FIX / "v2_stream.jsonl", proj / "a.jsonl")
    shutil.copy(FIX / "v2_tools.jsonl", proj / "subagents" / "agent-1.jsonl")
    (proj / "memory" / "x.jsonl").write_text("{}\n")
    (tmp_path / "projects" / "stray.jsonl").write_text("{}\n")
    assert project_files(tmp_path / "projects") == [proj / "a.jsonl"]
    assert project_files(tmp_path / "missing") == []


def test_torn_last_line_is_left_for_next_time():
    good = (FIX / "v2_tools.jsonl").read_bytes()
    torn = good + b'{"type":"user","message":{"role":"user","content":"half'
    s = parse_lines(torn.splitlines(keepends=True), path="x.jsonl")
    assert s.torn_tail and s.malformed_lines == 0
    assert s.meta["complete_bytes"] == len(good)
    assert len(s.turns) == 11
    # a last line that parses but has no newline yet is complete
    s2 = parse_lines(good.rstrip(b"\n").splitlines(keepends=True))
    assert not s2.torn_tail and s2.meta["complete_bytes"] == len(good) - 1 and len(s2.turns) == 11


def test_malformed_middle_lines_are_counted_and_skipped():
    lines = (FIX / "v1_sidechain.jsonl").read_bytes().splitlines(keepends=True)
    bad = lines[:5] + [b"{not json\n", b"[1, 2]\n", b'"text"\n', b"\n"] + lines[5:]
    s = parse_lines(bad)
    assert s.malformed_lines == 3
    assert len(s.turns) == 10 and not s.torn_tail


def test_harness_text_helpers():
    assert transcripts.clean_user_text("<local-command-stdout>x</local-command-stdout>") == ""
    assert transcripts.clean_user_text("fix it<system-reminder>be brief</system-reminder> now") == "fix it now"
    assert transcripts.content_text([{"type": "text", "text": "a"}, {"type": "image"}, "b"]) == "a\nb"
    assert transcripts.is_rejection("The user doesn't want to proceed with this tool use. x")
    assert not transcripts.is_rejection("Permission denied")


def test_session_id_falls_back_to_the_records(tmp_path):
    path = tmp_path / "named.jsonl"
    path.write_text(json.dumps({"type": "user", "sessionId": "abc", "uuid": "u1",
                                "message": {"role": "user", "content": "hi"}}) + "\n")
    assert parse_file(path).id == "abc"


@pytest.mark.parametrize("record", [
    {"type": "assistant", "message": {"id": "m", "model": "<synthetic>", "content": [{"type": "text", "text": "No response requested."}]}},
    {"type": "user", "isMeta": True, "message": {"role": "user", "content": "expanded skill text"}},
    {"type": "user", "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
    {"type": "user", "message": {"role": "user", "content": "<local-command-caveat>Caveat: …</local-command-caveat>"}},
    {"type": "progress", "data": {}},
    {"type": "summary", "summary": "s"},
    {"type": "queue-operation", "operation": "enqueue", "content": "later"},
    {"type": "file-history-snapshot", "snapshot": {}},
    {"type": "system", "subtype": "local_command", "content": "<local-command-stdout>x</local-command-stdout>"},
    {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "subagent prompt"}},
    {"type": "brand-new-type", "message": {"role": "user", "content": "?"}},
])
def test_harness_records_make_no_turns(record):
    s = parse_lines([json.dumps(record) + "\n"])
    assert s.turns == [] and s.malformed_lines == 0


def test_duplicate_uuids_from_a_resumed_session_count_once():
    rec = {"type": "user", "uuid": "same", "message": {"role": "user", "content": "again"}}
    s = parse_lines([json.dumps(rec) + "\n"] * 3)
    assert len(s.turns) == 1


def test_a_resumed_sessions_copy_of_the_earlier_one_is_not_read_twice(tmp_path):
    old_id = "11111111-1111-4111-8111-111111111111"
    new_id = "44444444-4444-4444-8444-444444444444"
    earlier = (FIX / "v1_sidechain.jsonl").read_text()
    (tmp_path / f"{old_id}.jsonl").write_text(earlier)
    later = {"type": "user", "uuid": "fresh", "sessionId": new_id, "timestamp": "2026-03-02T09:00:00.000Z",
             "message": {"role": "user", "content": "now the docs"}}
    (tmp_path / f"{new_id}.jsonl").write_text(earlier + json.dumps(later) + "\n")
    s = parse_file(tmp_path / f"{new_id}.jsonl")
    assert [t.text for t in s.turns] == ["now the docs"]
    assert s.meta["replayed"] > 0 and s.started == "2026-03-02T09:00:00.000Z"
    # without the earlier file beside it, the copy is all there is: it is read
    (tmp_path / f"{old_id}.jsonl").unlink()
    assert len(parse_file(tmp_path / f"{new_id}.jsonl").turns) == 11


def test_lone_surrogate_escapes_are_replaced_so_the_session_can_be_stored():
    # a truncated emoji ("\ud83d" alone) is valid JSON but cannot be encoded as UTF-8
    sid = "11111111-2222-3333-4444-555555555555"
    recs = [
        {"type": "user", "uuid": "u1", "sessionId": sid, "cwd": "/x/app\ud83d",
         "message": {"role": "user", "content": "<command-name>/fix</command-name><command-args>\ud83d</command-args>"}},
        {"type": "user", "uuid": "u2", "sessionId": sid, "message": {"role": "user", "content": "fix the emoji \ud83d parser"}},
        {"type": "assistant", "uuid": "a1", "sessionId": sid, "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "echo \ud83d"}}]}},
        {"type": "user", "uuid": "u3", "sessionId": sid, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "\udc00 out"}]}},
    ]
    lines = [json.dumps(r) + "\n" for r in recs]  # json.dumps writes the lone surrogate as an escape
    assert "\\ud83d" in lines[1]
    for s in (parse_lines(lines), parse_lines([line.encode() for line in lines])):
        stored = json.dumps([t.text for t in s.turns] + [s.cwd, s.meta.get("opening_command"),
                            s.meta.get("commands"), str(s.tool_calls()[0].input), s.tool_calls()[0].result],
                            ensure_ascii=False)
        stored.encode("utf-8")  # raises on a lone surrogate
        assert s.turns[0].text.startswith("fix the emoji ") and s.turns[0].text.endswith(" parser")
