"""Codex CLI rollouts: real shapes written for the project parse into the expected sessions."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import codex, detect

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
MODERN = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
OLDER = "5f3e2d1c-0b9a-4877-a665-544332211000"
EVENTS_ONLY = "77aa88bb-99cc-4ddd-8eee-ff0011223344"
LEGACY = "11112222-3333-4444-5555-666677778888"


@pytest.fixture
def codex_home(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "user" / ".codex"
    shutil.copytree(FIXTURES, target)
    monkeypatch.setenv("CODEX_HOME", str(target))
    return target


def _by_id(home: Path) -> dict[str, Path]:
    return {codex.parse_rollout(p).id: p for p in codex.find_rollouts(home)}


def test_find_rollouts_lists_sessions_and_archive(codex_home: Path) -> None:
    found = codex.find_rollouts()
    assert len(found) == 4
    assert any("archived_sessions" in str(p) for p in found)
    assert set(_by_id(codex_home)) == {MODERN, OLDER, EVENTS_ONLY, LEGACY}


def test_find_rollouts_in_a_folder_given_directly(codex_home: Path) -> None:
    assert len(codex.find_rollouts(codex_home / "sessions" / "2025")) == 2


def test_plain_ingest_reads_codex_sessions(codex_home: Path, store) -> None:
    from remem.engine.ingest import ingest_paths

    summary = ingest_paths(store)
    assert summary["sessions"] == 4 and summary["errors"] == []


def test_modern_rollout(codex_home: Path) -> None:
    s = codex.parse_rollout(_by_id(codex_home)[MODERN])
    assert (s.source, s.cwd, s.malformed_lines, s.torn_tail) == ("codex", "/home/dev/shop", 0, False)
    assert s.started.startswith("2026-11-20T10:00:00") and s.ended.startswith("2026-11-20T10:01:06")
    assert s.meta["model"] == "gpt-5-codex" and s.meta["tokens"]["total_tokens"] == 9730
    users = [t.text for t in s.user_turns()]
    # Each thing the person typed once (response_item copy, not also the event_msg copy);
    # AGENTS.md, environment context and developer instructions are not the person.
    assert users == [
        "The cart total is wrong when a coupon is applied. Fix it and run the tests.",
        "No, don't run pytest directly here. Always use `make test`, it sets PYTHONPATH.",
    ]
    assert all("environment_context" not in t.text and "AGENTS.md" not in t.text for t in s.turns)
    calls = s.tool_calls()
    assert [c.name for c in calls] == ["shell", "apply_patch", "shell", "shell"]
    rg, patch, pytest_call, make = calls
    assert rg.input["command"][-1] == "rg -n coupon src/cart.py"  # JSON-string arguments parsed
    assert patch.input.startswith("*** Begin Patch") and not patch.is_error
    assert patch.result.startswith("Success. Updated")  # JSON wrapper unwrapped
    assert pytest_call.is_error and "ModuleNotFoundError" in pytest_call.result
    assert not make.is_error and not rg.is_error


def test_older_rollout_interrupt_compaction_and_bad_lines(codex_home: Path) -> None:
    path = _by_id(codex_home)[OLDER]
    s = codex.parse_rollout(path)
    assert s.malformed_lines == 1 and s.torn_tail
    assert 0 < s.meta["complete_bytes"] < path.stat().st_size
    assert s.meta["compactions"] == 1
    # The compaction's replacement history repeats the first ask; it is not read twice.
    assert [t.text for t in s.user_turns() if t.text].count("Start the dev server and check /health.") == 1
    shell, kill, http = s.tool_calls()
    assert shell.name == "local_shell" and shell.is_error
    assert shell.result == "Error: That port is already in use.\n"
    assert kill.result is None and kill.interrupted
    assert http.is_error and http.input == '{"url": "http://127.0.0.1:8001/health"'  # not JSON: kept raw
    interrupts = [t for t in s.turns if t.interrupt]
    assert len(interrupts) == 1 and interrupts[0].role == "user"


def test_event_only_rollout_uses_the_ui_copies(codex_home: Path) -> None:
    s = codex.parse_rollout(_by_id(codex_home)[EVENTS_ONLY])
    assert [t.role for t in s.turns] == ["user", "assistant", "user", "assistant"]
    assert s.cwd == "/home/dev/notes"


def test_legacy_rollout_without_envelopes(codex_home: Path) -> None:
    s = codex.parse_rollout(_by_id(codex_home)[LEGACY])
    assert s.id == LEGACY and s.started.startswith("2025-04-20")
    (call,) = s.tool_calls()
    assert call.is_error and call.result.startswith("ls: cannot access")


@pytest.mark.parametrize("sid,errors", [(MODERN, True), (OLDER, True), (LEGACY, True), (EVENTS_ONLY, False)])
def test_detectors_find_a_correction_and_a_failed_call(codex_home: Path, sid: str, errors: bool) -> None:
    s = codex.parse_rollout(_by_id(codex_home)[sid])
    assert detect.corrections(s), [t.text for t in s.turns]
    assert bool(detect.errors(s)) is errors


def test_a_refused_command_is_a_correction(tmp_path: Path) -> None:
    def line(t: str, p: dict) -> str:
        return json.dumps({"timestamp": "2026-11-20T10:00:00.000Z", "type": t, "payload": p})

    path = tmp_path / "rollout-2026-11-20T10-00-00-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.jsonl"
    path.write_text("\n".join([
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "clean up"}]}),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                               "arguments": json.dumps({"command": ["bash", "-lc", "rm -rf build/ dist/"]})}),
        line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "exec command rejected by user"}),
    ]) + "\n")
    s = codex.parse_rollout(path)
    (call,) = s.tool_calls()
    assert call.rejected
    (found,) = detect.corrections(s)
    assert found.extra["how"] == "refused"


def test_html_is_not_mistaken_for_harness_text(tmp_path: Path) -> None:
    def line(t: str, p: dict) -> str:
        return json.dumps({"timestamp": "2026-11-20T10:00:00.000Z", "type": t, "payload": p})

    page = "<html><body>hello</body></html>"
    path = tmp_path / "rollout-2026-11-20T10-00-00-aaaaaaaa-bbbb-cccc-dddd-000000000000.jsonl"
    path.write_text("\n".join([
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": page}]}),
        line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<user_shell_command>ls</user_shell_command>"}]}),
        line("response_item", {"type": "function_call", "name": "fetch", "call_id": "c1", "arguments": "{}"}),
        line("response_item", {"type": "function_call_output", "call_id": "c1",
                               "output": [{"type": "input_text", "text": page}]}),
    ]) + "\n")
    s = codex.parse_rollout(path)
    assert [t.text for t in s.user_turns()] == [page]
    assert s.tool_calls()[0].result == page


def test_a_subagent_rollout_has_no_person_in_it(tmp_path: Path) -> None:
    def line(t: str, p: dict) -> str:
        return json.dumps({"timestamp": "2026-11-20T10:00:00.000Z", "type": t, "payload": p})

    path = tmp_path / "rollout-2026-11-20T10-00-00-aaaaaaaa-bbbb-cccc-dddd-ffffffffffff.jsonl"
    path.write_text("\n".join([
        line("session_meta", {"id": "aaaaaaaa-bbbb-cccc-dddd-ffffffffffff", "timestamp": "2026-11-20T10:00:00.000Z",
                              "cwd": "/x", "source": {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}}),
        line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}),
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "No, that's wrong."}]}),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1", "arguments": "{}"}),
        line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "Exit code: 2\nOutput:\nboom"}),
    ]) + "\n")
    s = codex.parse_rollout(path)
    assert s.meta["subagent"] and s.user_turns() == []
    assert detect.corrections(s) == [] and s.tool_calls()[0].is_error


def test_zst_rollout_is_read_where_the_jsonl_is_absent(codex_home: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    plain = _by_id(codex_home)[MODERN]
    packed = plain.with_name(plain.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    assert packed not in codex.find_rollouts()  # the .jsonl beside it wins
    plain.unlink()
    assert packed in codex.find_rollouts()
    s = codex.parse_rollout(packed)
    assert s.id == MODERN and len(s.tool_calls()) == 4


def test_zst_without_zstandard_is_reported_and_skipped(codex_home: Path, store, monkeypatch) -> None:
    """The machine has zstandard; its absence is simulated by hiding the module."""
    zstandard = pytest.importorskip("zstandard")
    plain = _by_id(codex_home)[MODERN]
    packed = plain.with_name(plain.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    plain.unlink()
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(codex.SourceUnavailable, match="pip install zstandard"):
        codex.parse_rollout(packed)
    from remem.engine.ingest import ingest_paths

    summary = ingest_paths(store, source="codex")
    assert any("zstandard" in e and packed.name in e for e in summary["errors"])
    assert summary["sessions"] == 3  # the others are read all the same


def test_ingest_codex_is_idempotent(codex_home: Path, store) -> None:
    from remem.engine.ingest import ingest_paths

    first = ingest_paths(store, source="codex")
    assert first["errors"] == [] and first["sessions"] == 4
    assert first["by_kind"].get("correction", 0) >= 4 and first["by_kind"].get("error", 0) >= 3
    second = ingest_paths(store, source="codex")
    assert second["episodes"] == 0


def test_torn_tail_is_read_again_once_complete(codex_home: Path, store) -> None:
    from remem.engine.ingest import ingest_paths

    path = _by_id(codex_home)[OLDER]
    ingest_paths(store, [str(path)], source="codex")
    with open(path, "a") as fh:  # the writer finishes the line
        fh.write('age", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]}}\n')
    again = ingest_paths(store, [str(path)], source="codex")
    assert again["skipped"] == 0 and again["files"] == 1
    assert not codex.parse_rollout(path).torn_tail


# --------------------------------------------------------------------------- never raises

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
_types = st.sampled_from(["session_meta", "turn_context", "response_item", "event_msg", "compacted",
                          "message", "function_call", "function_call_output", "zzz"]) | _json
_ptypes = st.sampled_from(["message", "function_call", "function_call_output", "local_shell_call",
                           "custom_tool_call", "custom_tool_call_output", "reasoning", "user_message",
                           "agent_message", "turn_aborted", "token_count", "exec_command_end",
                           "patch_apply_end", "web_search_call", "brand_new_type"]) | _json
_record = st.builds(
    lambda t, pt, extra, ts: {"timestamp": ts, "type": t,
                              "payload": {"type": pt, **extra} if isinstance(extra, dict) else extra},
    _types, _ptypes, st.dictionaries(st.sampled_from(
        ["role", "content", "call_id", "output", "arguments", "name", "message", "reason", "id",
         "cwd", "action", "info", "exit_code", "success", "input"]), _json, max_size=6) | _json,
    st.text(max_size=30) | st.just("2026-11-20T10:00:00Z"),
)
_line = st.one_of(_record.map(json.dumps), st.text(max_size=60), _json.map(json.dumps))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_line, max_size=12), st.booleans())
def test_malformed_lines_and_unknown_types_never_raise(tmp_path: Path, lines: list[str], newline: bool) -> None:
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("\n".join(lines) + ("\n" if newline else ""), encoding="utf-8")
    s = codex.parse_rollout(path)
    assert s.source == "codex"
    for call in s.tool_calls():
        assert isinstance(call.is_error, bool)


def test_a_forked_session_does_not_store_its_parents_findings_again(tmp_path: Path, store) -> None:
    """Codex writes a fork to a new file with a new id and copies the parent's history in
    first; one failure and one correction must stay one each (sleep learns from repeats)."""
    from remem.engine.ingest import ingest_paths

    def line(t: str, kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": t, "type": kind, "payload": payload})

    def meta(t: str, sid: str, **more) -> str:
        return line(t, "session_meta", {"id": sid, "timestamp": t, "cwd": "/home/u/proj", **more})

    def say(t: str, role: str, text: str) -> str:
        kind = "input_text" if role == "user" else "output_text"
        return line(t, "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    parent_id, fork_id = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"
    history = [
        say("2026-01-05T10:00:01.000Z", "user", "deploy the app with npm"),
        line("2026-01-05T10:00:02.000Z", "response_item", {
            "type": "function_call", "name": "shell", "call_id": "c1",
            "arguments": json.dumps({"command": ["bash", "-lc", "npm run deploy"]})}),
        line("2026-01-05T10:00:03.000Z", "response_item", {
            "type": "function_call_output", "call_id": "c1", "output": "Exit code: 1\nnpm ERR! missing script: deploy"}),
        say("2026-01-05T10:00:04.000Z", "assistant", "Deployed."),
        say("2026-01-05T10:00:05.000Z", "user", "no, we use pnpm here, not npm"),
        say("2026-01-05T10:00:06.000Z", "assistant", "ok"),
    ]
    parent = [meta("2026-01-05T10:00:00.000Z", parent_id)] + history
    fork = [meta("2026-01-05T11:00:00.000Z", fork_id, forked_from_id=parent_id)] + parent + [
        say("2026-01-05T11:00:01.000Z", "user", "now write the changelog")]
    parent_file = tmp_path / f"rollout-2026-01-05T10-00-00-{parent_id}.jsonl"
    fork_file = tmp_path / f"rollout-2026-01-05T11-00-00-{fork_id}.jsonl"
    parent_file.write_text("\n".join(parent) + "\n")
    fork_file.write_text("\n".join(fork) + "\n")
    summary = ingest_paths(store, [tmp_path], source="codex")
    assert summary["by_kind"] == {"session": 2, "correction": 1, "error": 1}
    # and the other way round: the fork read first, its parent later
    store.hard_delete([r["id"] for r in store.rows("SELECT id FROM episodes")])
    store.conn.execute("DELETE FROM forgotten")
    store.conn.execute("DELETE FROM sessions")
    assert ingest_paths(store, [fork_file], source="codex")["by_kind"] == {"session": 1, "correction": 1, "error": 1}
    assert ingest_paths(store, [parent_file], source="codex")["by_kind"] == {"session": 1}


def test_lines_of_a_type_this_version_does_not_know_are_skipped_not_malformed(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-11-20T10-00-00-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.jsonl"
    path.write_text("\n".join(json.dumps(rec) for rec in [
        {"timestamp": "2026-11-20T10:00:00.000Z", "type": "new_kind", "payload": "x"},
        {"timestamp": "2026-11-20T10:00:00.000Z", "type": "other_kind", "payload": None},
        {"timestamp": "2026-11-20T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
        {"timestamp": "2026-11-20T10:00:02.000Z", "type": "event_msg", "payload": ["not", "an", "object"]},
    ]) + "\n")
    s = codex.parse_rollout(path)
    assert s.malformed_lines == 1  # only the known type in a shape it never has
    assert [t.text for t in s.turns] == ["hi"]


# --------------------------------------------------------------------------- Codex's output wrapper

def _rollout(tmp_path: Path, sid: str, cwd: str, calls: list[tuple[str, dict, str]]) -> Path:
    """A rollout of one ask and the given calls: (tool name, arguments, output as Codex wrote it)."""
    def line(t: str, kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": t, "type": kind, "payload": payload})

    lines = [line("2026-04-14T09:00:00.000Z", "session_meta", {
                 "id": sid, "timestamp": "2026-04-14T09:00:00.000Z", "cwd": cwd, "source": "cli"}),
             line("2026-04-14T09:00:01.000Z", "response_item", {
                 "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Do it"}]})]
    for n, (name, args, output) in enumerate(calls):
        lines.append(line(f"2026-04-14T09:00:{10 + 2 * n}.000Z", "response_item", {
            "type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": f"c{n}"}))
        lines.append(line(f"2026-04-14T09:00:{11 + 2 * n}.000Z", "response_item", {
            "type": "function_call_output", "call_id": f"c{n}", "output": output}))
    path = tmp_path / f"rollout-2026-04-14T09-00-00-{sid}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _shell(script: str) -> dict:
    return {"command": ["bash", "-lc", script]}


def _shell_out(code: int, output: str) -> str:  # the `shell` tool's wrapper
    return f"Exit code: {code}\nWall time: 3.1 seconds\nOutput:\n{output}"


def _exec_out(code: int, output: str) -> str:  # the unified `exec_command` tool's wrapper
    return (f"Chunk ID: 77\nWall time: 1.0000 seconds\nProcess exited with code {code}\n"
            f"Original token count: 20\nOutput:\n{output}")


def test_the_wrapper_is_not_the_result_and_each_failure_keeps_its_own_title(tmp_path: Path, store) -> None:
    from remem.engine.ingest import ingest_paths

    sid = "0199e000-0000-7000-8000-0000000000e3"
    path = _rollout(tmp_path, sid, "/home/lee/src/deploy", [
        ("shell", _shell("make deploy"),
         _shell_out(1, "deploy.sh: line 12: AWS_PROFILE: unbound variable\nmake: *** [deploy] Error 1\n")),
        ("shell", _shell("terraform apply -auto-approve"),
         _shell_out(1, 'Error: Invalid provider configuration\n  Provider "aws" requires explicit configuration.\n')),
        ("exec_command", {"cmd": "helm upgrade web ./chart"},
         _exec_out(1, "Error: UPGRADE FAILED: release web has no deployed releases\n")),
        ("exec_command", {"cmd": "helm list"}, _exec_out(0, "NAME\tREVISION\n")),
        ("shell", _shell("npm run deploy"), "Exit code: 1\nnpm ERR! missing script: deploy"),  # no Output: line
    ])
    s = codex.parse_rollout(path)
    make, terraform, helm, helm_list, npm = s.tool_calls()
    assert make.result == "deploy.sh: line 12: AWS_PROFILE: unbound variable\nmake: *** [deploy] Error 1\n"
    assert helm.result == "Error: UPGRADE FAILED: release web has no deployed releases\n"
    assert helm_list.result == "NAME\tREVISION\n" and npm.result == "npm ERR! missing script: deploy"
    # the exit code is still what says a call failed
    assert [c.is_error for c in s.tool_calls()] == [True, True, True, False, True]
    assert [f.title for f in detect.errors(s)] == [
        "shell failed: deploy.sh: line …: AWS_PROFILE: unbound variable",
        "shell failed: Error: Invalid provider configuration",
        "exec_command failed: Error: UPGRADE FAILED: release web has no deployed releases",
        "shell failed: npm ERR! missing script: deploy",
    ]
    assert ingest_paths(store, [path], source="codex")["by_kind"]["error"] == 4


def test_environment_facts_are_read_through_the_wrapper(tmp_path: Path) -> None:
    path = _rollout(tmp_path, "0199b000-0000-7000-8000-00000000e001", "/home/lee/src/env", [
        ("shell", _shell("python3 --version"), _shell_out(0, "Python 3.12.3\n")),
        ("shell", _shell("which python3"), _shell_out(0, "/usr/bin/python3\n")),
        ("shell", _shell("uname -a"), _shell_out(0, "Linux buildbox 6.8.0-45-generic #45-Ubuntu SMP x86_64 GNU/Linux\n")),
        ("shell", _shell("node --version"), _shell_out(0, "v20.11.1\n")),
        ("exec_command", {"cmd": "git --version"}, _exec_out(0, "git version 2.43.0\n")),
        ("exec_command", {"cmd": "which node"}, _exec_out(0, "/opt/homebrew/bin/node\n")),
    ])
    s = codex.parse_rollout(path)
    assert [f.title for f in detect.environment(s)] == [
        "version: python3 3.12.3", "path: python3 -> /usr/bin/python3", "os: Linux 6.8.0-45-generic",
        "version: node 20.11.1", "version: git 2.43.0", "path: node -> /opt/homebrew/bin/node",
    ]


@pytest.mark.parametrize("wrapped, output", [
    ("Exit code: 1\nWall time: 0.2 seconds\nTotal output lines: 900\nOutput:\nlast lines\n", "last lines\n"),
    ("Chunk ID: 1a\nWall time: 5.0000 seconds\nProcess running with session ID 3\nOriginal token count: 0\n"
     "Output:\n", ""),
    ("Exit code: 0\nWall time: 0.0 seconds\nOutput:\nOutput:\nkept\n", "Output:\nkept\n"),  # only the first
    ("Exit code: 0 means it worked\nOutput:\nx", "Exit code: 0 means it worked\nOutput:\nx"),  # no wrapper
    ("plain text\nOutput:\nx", "plain text\nOutput:\nx"),
])
def test_only_codexs_own_header_is_removed(wrapped: str, output: str) -> None:
    assert codex._strip_wrapper(wrapped) == output
