"""Non-Claude-Code sources: Claude.ai's branches, Go and libpq error titles, Codex's polled
commands, and the one-line messages for a zip, a truncated export and an export's other files."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import chats, codex, detect
from remem.engine.detect_errors import error_class, errors

ROOT_ID = "00000000-0000-4000-8000-000000000000"


def _uuid(n: int) -> str:
    return f"01930000-0000-7000-8000-{n:012d}"


def _msg(n: int, sender: str, minute: int, text: str, parent: str | None) -> dict:
    at = f"2025-03-04T10:{minute:02d}:00.000000Z"
    return {"uuid": _uuid(n), "text": text, "sender": sender, "created_at": at, "updated_at": at,
            "content": [{"type": "text", "text": text}], "attachments": [], "files": [],
            **({"parent_message_uuid": parent} if parent is not None else {})}


def _claude_export(messages: list[dict], **extra) -> dict:
    return {"uuid": "8c1e5f0a-3b7d-4e21-9a55-0c2d7e9f1a11", "name": "Backups",
            "created_at": "2025-03-04T09:59:00.000000Z", "chat_messages": messages, **extra}


EDITED = [  # the second prompt was edited: its first version, and the reply to it, abandoned
    _msg(1, "human", 0, "Write a script that backs up ~/photos to /mnt/backup", ROOT_ID),
    _msg(2, "assistant", 1, "Here is a script using rsync -a --delete.", _uuid(1)),
    _msg(3, "human", 2, "No, that's wrong, never use --delete on backups", _uuid(2)),
    _msg(4, "assistant", 3, "Removed --delete.", _uuid(3)),
    _msg(5, "human", 4, "Thanks, that works. Add a log file too.", _uuid(2)),
    _msg(6, "assistant", 5, "Added logging to ~/backup.log.", _uuid(5)),
]


def _texts(session) -> list[str]:
    return [t.text for t in session.turns]


def test_claude_ai_edited_prompt_is_not_read_as_a_correction(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([_claude_export(EDITED)]))
    (session,) = chats.parse_chats(path)
    assert _texts(session) == [EDITED[0]["text"], EDITED[1]["text"], EDITED[4]["text"], EDITED[5]["text"]]
    assert detect.detect_all(session)["correction"] == []
    summary = ingest_paths(store, [str(path)], source="chats")
    assert summary["errors"] == [] and "correction" not in summary["by_kind"]
    said = " ".join(r["title"] + r["gist"] for r in store.rows("SELECT title, gist FROM episodes"))
    assert "--delete on backups" not in said


def test_claude_ai_regenerated_reply_keeps_the_newest() -> None:
    messages = [_msg(1, "human", 0, "How do I list open ports on macOS?", ROOT_ID),
                _msg(2, "assistant", 1, "Surprisingly, netstat -tulpn does not work there.", _uuid(1)),
                _msg(3, "assistant", 2, "Use lsof -iTCP -sTCP:LISTEN -n -P.", _uuid(1))]
    session = chats.conversation_to_session(_claude_export(messages))
    assert _texts(session) == [messages[0]["text"], messages[2]["text"]]
    assert detect.detect_all(session)["surprise"] == []
    # The leaf the export names wins over the newest.
    named = chats.conversation_to_session(_claude_export(messages, current_leaf_message_uuid=_uuid(2)))
    assert _texts(named) == [messages[0]["text"], messages[1]["text"]]


def test_claude_ai_older_export_without_parents_is_read_as_listed() -> None:
    flat = [{k: v for k, v in m.items() if k != "parent_message_uuid"} for m in EDITED[:4]]
    session = chats.conversation_to_session(_claude_export(flat))
    assert _texts(session) == [m["text"] for m in flat]


@st.composite
def _trees(draw):
    """A Claude.ai conversation tree: each message answers an earlier one (or the root)."""
    count = draw(st.integers(1, 12))
    messages = []
    for n in range(count):
        parent = ROOT_ID if n == 0 else _uuid(draw(st.integers(0, n - 1)) + 1)
        minute = draw(st.integers(0, 59))
        messages.append(_msg(n + 1, draw(st.sampled_from(["human", "assistant"])), minute, f"m{n + 1}", parent))
    order = draw(st.permutations(range(count)))
    return [messages[i] for i in order]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trees())
def test_claude_ai_thread_is_one_path_to_the_newest_leaf(messages: list[dict]) -> None:
    thread = chats._claude_ai_thread(messages)
    assert thread and thread[0]["parent_message_uuid"] == ROOT_ID
    for parent, child in zip(thread, thread[1:]):
        assert child["parent_message_uuid"] == parent["uuid"]
    parents = {m["parent_message_uuid"] for m in messages}
    assert thread[-1]["uuid"] not in parents  # it ends at a leaf
    leaves = [m for m in messages if m["uuid"] not in parents]
    assert thread[-1]["created_at"] == max(m["created_at"] for m in leaves)


GO_A = """--- FAIL: TestParseConfig (0.00s)
    config_test.go:41: missing key "port"
FAIL
FAIL\texample.com/shop/config\t0.004s
FAIL
"""
GO_B = """--- FAIL: TestInvoiceTotal (0.01s)
    invoice_test.go:17: got 99.5, want 100
FAIL
FAIL\texample.com/billing\t0.011s
FAIL
"""


def _failed_session(command: str, output: str):
    from remem.engine.session import Session, ToolCall, Turn

    call = ToolCall(id="c1", name="Bash", input={"command": command}, result=output, is_error=True)
    return Session(id="s", source="claude-code", turns=[Turn(role="user", text="run the tests"),
                                                         Turn(role="assistant", tool_calls=[call])])


def test_go_test_failures_are_titled_by_the_test_that_failed() -> None:
    (a,) = errors(_failed_session("go test ./...", GO_A))
    (b,) = errors(_failed_session("go test ./...", GO_B))
    assert a.title == "Bash tests failed: --- FAIL: TestParseConfig (…)"
    assert b.title == "Bash tests failed: --- FAIL: TestInvoiceTotal (…)"
    # No "--- FAIL:" line: the test file's line, never the bare summary.
    (c,) = errors(_failed_session("go test ./...", GO_A.split("\n", 1)[1]))
    assert c.title == 'Bash tests failed: config_test.go:…: missing key "port"'


def test_libpq_refused_connection_is_a_network_error() -> None:
    out = ('psql: error: connection to server at "localhost" (127.0.0.1), port 5432 failed: '
           "Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?\n")
    assert error_class(out) == "network"
    assert error_class('connection to server at "db" (10.0.0.2), port 5432 failed: FATAL:  '
                       'password authentication failed for user "app"') != "test_failure"
    assert error_class("FAILED tests/test_db.py::test_save - ConnectionRefusedError: [Errno 111] "
                       "Connection refused\n1 failed, 4 passed") == "network"
    assert error_class("FAILED tests/test_math.py::test_add\n2 failed, 9 passed") == "test_failure"


def _rollout(path: Path, outputs: list[tuple[str, str, dict, str]]) -> Path:
    lines = [{"timestamp": "2025-11-22T09:00:00.000Z", "type": "session_meta",
              "payload": {"id": "0199b000-0000-7000-8000-000000000002", "cwd": "/home/dev/web",
                          "timestamp": "2025-11-22T09:00:00.000Z", "source": "cli"}},
             {"timestamp": "2025-11-22T09:00:01.000Z", "type": "response_item",
              "payload": {"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": "run the jest suite"}]}}]
    for n, (cid, name, args, output) in enumerate(outputs):
        at = f"2025-11-22T09:00:{10 + 2 * n:02d}.000Z"
        lines.append({"timestamp": at, "type": "response_item", "payload": {
            "type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": cid}})
        lines.append({"timestamp": at, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": cid, "output": output}})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


RUNNING = ("Chunk ID: 2b7c1a\nWall time: 10.0023 seconds\nProcess running with session ID 3\n"
           "Original token count: 12\nOutput:\n RUNS  src/app.test.js\n")
EXITED = ("Chunk ID: 2b7c1b\nWall time: 7.1 seconds\nProcess exited with code 1\nOriginal token count: 40\n"
          "Output:\n FAIL  src/app.test.js\n  ● adds numbers\n\nTests:       1 failed, 3 passed, 4 total\n")


def test_codex_polled_command_failure_is_the_commands(tmp_path: Path) -> None:
    from remem.engine.session_gist import session_gist

    path = _rollout(tmp_path / "rollout-2025-11-22T09-00-00-0199b000-0000-7000-8000-000000000002.jsonl", [
        ("c1", "exec_command", {"cmd": "npx jest", "yield_time_ms": 10000}, RUNNING),
        ("c2", "write_stdin", {"session_id": 3, "chars": ""}, EXITED)])
    session = codex.parse_rollout(path)
    run, poll = session.tool_calls()
    assert run.is_error and not poll.is_error
    assert run.result.startswith(" RUNS  src/app.test.js\n FAIL  src/app.test.js")
    found = detect.detect_all(session)
    (error,) = found["error"]
    assert error.title == "exec_command tests failed: FAIL src/app.test.js"
    assert "tool:exec_command" in error.tags and error.text.startswith("exec_command: npx jest")
    assert "ran npx jest (failed)" in session_gist(session, found)[1]


def test_codex_polled_command_that_succeeds_fails_nothing(tmp_path: Path) -> None:
    ok = EXITED.replace("code 1", "code 0").replace("FAIL", "PASS").replace("1 failed, 3", "4")
    path = _rollout(tmp_path / "rollout-x.jsonl", [
        ("c1", "exec_command", {"cmd": "npx jest"}, RUNNING),
        ("c2", "write_stdin", {"session_id": 3, "chars": ""}, RUNNING.replace("2b7c1a", "2b7c1c")),
        ("c3", "write_stdin", {"session_id": 3, "chars": ""}, ok)])
    run, *polls = codex.parse_rollout(path).tool_calls()
    assert not run.is_error and not any(p.is_error for p in polls)
    assert run.result.count("RUNS") == 2 and "PASS" in run.result


def test_zip_and_truncated_exports_say_what_to_do(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    whole = json.dumps([_claude_export(EDITED)])
    archive = tmp_path / "data-2025-03-04.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", whole)
    cut = tmp_path / "conversations.json"
    cut.write_text(whole[: len(whole) // 2])
    broken = tmp_path / "broken.json"
    broken.write_text('[{"chat_messages": [,]}]\n')
    summary = ingest_paths(store, [str(archive), str(cut), str(broken)])
    assert summary["errors"] == [
        f"{archive}: a zip archive: unzip it and ingest its conversations.json",
        f"{cut}: not valid JSON: it ends early at byte {len(whole) // 2} (an incomplete download?)",
        f"{broken}: not valid JSON: Expecting value at line 1, column 21 (byte 20)",
    ]
    # The same zip named as a chat export, or with another name.
    renamed = tmp_path / "export.json"
    renamed.write_bytes(archive.read_bytes())
    assert ingest_paths(store, [str(renamed)], source="chats")["errors"] == [
        f"{renamed}: a zip archive: unzip it and ingest its conversations.json"]
    # Nothing was recorded: the file unzipped and named next is read.
    cut.write_text(whole)
    assert ingest_paths(store, [str(cut)])["errors"] == []


def test_unpacked_export_folder_with_source_chats_reads_only_conversations(store, tmp_path: Path) -> None:
    from remem.engine.ingest import ingest_paths

    gpt, claude = tmp_path / "gpt", tmp_path / "claude"
    gpt.mkdir()
    claude.mkdir()
    (gpt / "conversations.json").write_text(json.dumps([{
        "id": "6750f0a1-0000-8000-9000-000000000009", "title": "t", "current_node": "b",
        "mapping": {"a": {"id": "a", "parent": None, "children": ["b"], "message": {
            "id": "a", "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hi"]}}},
            "b": {"id": "b", "parent": "a", "children": [], "message": {
                "id": "b", "author": {"role": "assistant"},
                "content": {"content_type": "text", "parts": ["hello"]}}}}}]))
    (gpt / "user.json").write_text(json.dumps({"id": "user-1", "email": "a@example.com"}))
    (gpt / "message_feedback.json").write_text("[]")
    (gpt / "shared_conversations.json").write_text(json.dumps([{"id": "s", "title": "t"}]))
    (claude / "conversations.json").write_text(json.dumps([_claude_export(EDITED)]))
    (claude / "users.json").write_text(json.dumps([{"uuid": "u", "full_name": "A"}]))
    (claude / "projects.json").write_text(json.dumps([{"uuid": "p", "name": "P", "docs": []}]))
    summary = ingest_paths(store, [str(gpt), str(claude)], source="chats")
    assert summary["errors"] == [] and summary["sessions"] == 2
    # Named one by one, such a file is still an error line.
    (error,) = ingest_paths(store, [str(gpt / "user.json")], source="chats")["errors"]
    assert "no conversations found" in error and "ChatGPT or Claude.ai export" in error


_EXPORT = json.dumps([_claude_export(EDITED), _claude_export(EDITED[:2], name="Zürich ✓")], ensure_ascii=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([None, 1]), st.floats(0.0, 1.0, exclude_max=True))
def test_an_export_cut_anywhere_says_where_it_ends(tmp_path: Path, indent, where: float) -> None:
    data = json.dumps(json.loads(_EXPORT), indent=indent, ensure_ascii=False).encode("utf-8")
    cut = max(1, int(len(data) * where))
    path = tmp_path / "conversations.json"
    path.write_bytes(data[:cut])
    try:
        chats.parse_chats(path)
    except chats.NotAConversation as exc:
        assert str(exc) == f"not valid JSON: it ends early at byte {cut} (an incomplete download?)"
    else:
        raise AssertionError("a cut export read as conversations")


def test_a_truncated_export_in_a_folder_read_as_chats_is_named_not_passed_over(store, tmp_path: Path) -> None:
    """Its companions (users.json) are passed over; the broken conversations.json is not."""
    from remem.engine.ingest import ingest_paths

    whole = json.dumps([_claude_export(EDITED)])
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "conversations.json").write_text(whole[: len(whole) // 2])
    (folder / "users.json").write_text('[{"uuid": "u1", "full_name": "Dev"}]')
    summary = ingest_paths(store, [str(folder)], source="chats")
    assert summary["errors"] == [f"{folder / 'conversations.json'}: not valid JSON: it ends early at byte "
                                 f"{len(whole) // 2} (an incomplete download?)"]


def test_a_test_that_asserts_is_a_test_failure_though_a_connection_was_refused_on_the_way() -> None:
    assert error_class("E   AssertionError: assert 1 == 2\nWARNING client: Connection refused, retrying\n"
                       "1 failed, 40 passed") == "test_failure"
    assert error_class("--- FAIL: TestDialTimeout (0.01s)\n    dial_test.go:40: expected timeout, got dial "
                       "tcp: connection refused\nFAIL") == "test_failure"
    assert error_class("psycopg2.OperationalError: connection to server at \"localhost\" (127.0.0.1), port "
                       "5432 failed: Connection refused\n1 failed, 3 passed") == "network"


def test_a_sync_says_what_it_held_back() -> None:
    from remem.engine.share import summary_changes

    assert summary_changes({"held_back": 2}) == ["held back (still being written) 2"]
    assert summary_changes({"held_back": 0}) == []
