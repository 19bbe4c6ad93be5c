"""What each agent's own tools and outputs mean, read through real ingest into a real store
and, where a lesson is at stake, slept on:

- Codex's `shell_command` (current Codex CLI; {"command": "<string>"}) is a shell like `shell`:
  a search that found nothing is no error, a failure's lesson and a refusal's name the command.
- Codex's "apply_patch verification failed: …" is its answer to a patch that does not fit the
  file, as Claude Code's "String to replace not found in file": no error, no lesson; the gist
  names the files the patch edits. Gemini CLI's `replace` is an edit.
- Python's FileNotFoundError is a missing file, not a network error (ENOTFOUND).
- IPython's traceback (ChatGPT's code interpreter) is titled by its exception, not its dashes.
- An error's detail keeps the end of a huge output, where the failing line is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import clock, detect, ingest, sleep
from remem.engine.detect_common import redact_secrets, redacted_tail
from remem.engine.session import Session, ToolCall, Turn

CWD = "/home/dev/web"
AFTER = "2025-10-08T09:00:00.000000+00:00"  # when the sleep runs: after both days' sessions


# --------------------------------------------------------------------------- Codex rollouts

def _line(at: str, kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": at, "type": kind, "payload": payload})


def _rollout(folder: Path, sid: str, day: int, ask: str, calls: list[tuple[str, str, Any, Any]]) -> Path:
    """A Codex rollout as the current CLI writes it: one ask, then each call as (kind, tool
    name, arguments or patch input, output). kind "function" is a function_call (arguments as a
    JSON string), "custom" a custom_tool_call (apply_patch: the patch itself)."""
    at = f"2025-10-0{day}T09:00:00.000Z"
    lines = [_line(at, "session_meta", {"id": sid, "timestamp": at, "cwd": CWD, "originator": "codex_cli_rs",
                                        "cli_version": "0.58.0", "source": "cli"}),
             _line(at, "turn_context", {"cwd": CWD, "model": "gpt-5-codex"}),
             _line(at, "response_item", {"type": "message", "role": "user",
                                         "content": [{"type": "input_text", "text": ask}]})]
    for n, (kind, name, args, output) in enumerate(calls):
        if kind == "function":
            lines.append(_line(at, "response_item", {"type": "function_call", "name": name,
                                                     "arguments": json.dumps(args), "call_id": f"c{n}"}))
            lines.append(_line(at, "response_item", {"type": "function_call_output", "call_id": f"c{n}",
                                                     "output": output}))
        else:
            lines.append(_line(at, "response_item", {"type": "custom_tool_call", "status": "completed",
                                                     "call_id": f"c{n}", "name": name, "input": args}))
            lines.append(_line(at, "response_item", {"type": "custom_tool_call_output", "call_id": f"c{n}",
                                                     "output": output}))
    lines.append(_line(at, "response_item", {"type": "message", "role": "assistant",
                                             "content": [{"type": "output_text", "text": "Done."}]}))
    day_folder = folder / "sessions" / "2025" / "10" / f"0{day}"
    day_folder.mkdir(parents=True, exist_ok=True)
    path = day_folder / f"rollout-2025-10-0{day}T09-00-00-{sid}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _shell_command(command: str) -> dict[str, str]:
    """The arguments of Codex's `shell_command`: the command as one string."""
    return {"command": command, "workdir": CWD}


def _shell_command_out(code: int, output: str) -> str:
    return f"Exit code: {code}\nWall time: 0.3 seconds\nOutput:\n{output}"


def _ingest_and_sleep(store, paths: list[Path]) -> dict[str, Any]:
    """Ingest the files, sleep on them; the store's error episodes, session gists and lessons."""
    with clock.frozen(AFTER):
        summary = ingest.ingest_paths(store, paths)
        sleep.run_sleep_collect(store)
    assert summary["errors"] == []
    return {"errors": [(e["title"], store.tags_of(e["id"])) for e in store.rows(
                "SELECT id, title FROM episodes WHERE kind = 'error' ORDER BY seq")],
            "gists": [e["gist"] for e in store.rows("SELECT gist FROM episodes WHERE kind = 'session' ORDER BY seq")],
            "lessons": [l["text"] for l in store.rows("SELECT text FROM lessons ORDER BY created, id")]}


_TS_ERROR = ("src/app.ts:12:5 - error TS2339: Property 'amount' does not exist on type 'Order'.\n\n"
             "Found 1 error in src/app.ts:12\n")


def test_a_codex_shell_command_is_a_shell_call(store, tmp_path):
    """A search with no match under `shell_command` is its answer, no error; a failed build
    on two days is one lesson naming the command, not the tool."""
    for n, (day, search) in enumerate(((5, "rg -n TODO src"), (6, "grep -rn FIXME src"))):
        _rollout(tmp_path / "codex", f"0199a1b2-0000-7000-8000-00000000000{n}", day, "build the web app", [
            ("function", "shell_command", _shell_command(search), _shell_command_out(1, "")),
            ("function", "shell_command", _shell_command("pnpm build"), _shell_command_out(2, _TS_ERROR)),
        ])
    got = _ingest_and_sleep(store, [tmp_path / "codex"])
    assert [title for title, _ in got["errors"]] == [(
        "shell_command syntax/type error: src/app.ts:…:… - error TS2339: Property 'amount' does not exist "
        "on type 'Order'.")] * 2
    assert got["lessons"] == [("`pnpm build` failed here (syntax/type error: error TS2339: Property 'amount' "
                               "does not exist on type 'Order'.); check the code before running it.")]
    assert all("ran rg -n TODO src" in g or "ran grep -rn FIXME src" in g for g in got["gists"])


def test_a_refused_codex_shell_command_is_learned_as_the_command(store, tmp_path):
    for n, (day, branch) in enumerate(((5, "main"), (6, "release"))):
        _rollout(tmp_path / "codex", f"0199a1b2-7777-7000-8000-00000000007{n}", day, "ship the release", [
            ("function", "shell_command", _shell_command(f"git push origin {branch} --force"),
             "exec command rejected by user"),
        ])
    got = _ingest_and_sleep(store, [tmp_path / "codex"])
    assert got["lessons"] == ["Ask before running `git push origin main` (the person refused it)."]


def test_the_pre_tool_hook_reads_a_codex_shell_command():
    from remem.hooks import adapters

    payload = {"session_id": "s", "cwd": CWD, "tool_name": "shell_command",
               "tool_input": {"command": "git push origin main --force", "workdir": CWD}}
    assert adapters.read("codex", "pre-tool", payload).command == "git push origin main --force"


# --------------------------------------------------------------------------- apply_patch

def _patch(path: str, old: str, new: str) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"


def _patch_out(code: int, output: str) -> str:  # apply_patch's output as Codex keeps it
    return json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.0}})


_STALE = "  return items.reduce((s, i) => s + i.price, 0)"
_NOT_FOUND = f"apply_patch verification failed: Failed to find expected lines in {CWD}/src/order.js:\n{_STALE}"
_BAD_HUNK = ("apply_patch verification failed: invalid hunk at line 3, Expected update hunk to start with "
             "a @@ context marker, got: 'price'")


def test_a_patch_codex_cannot_apply_as_written_is_no_error(store, tmp_path):
    """Two days of a patch whose lines were not in the file, then one that fit: no error, no
    lesson; the gist says the file was edited."""
    for n, day in enumerate((5, 6)):
        _rollout(tmp_path / "codex", f"0199a1b2-5555-7000-8000-00000000005{n}", day, "rename price to unitPrice", [
            ("custom", "apply_patch", _patch("src/order.js", _STALE, _STALE.replace("price", "unitPrice")),
             _patch_out(1, _NOT_FOUND)),
            ("custom", "apply_patch", _patch("src/order.js", "price", "unitPrice").replace("@@\n", ""),
             _patch_out(1, _BAD_HUNK)),
            ("custom", "apply_patch", _patch("src/order.js", "price", "unitPrice"),
             _patch_out(0, "Success. Updated the following files:\nM src/order.js\n")),
        ])
    got = _ingest_and_sleep(store, [tmp_path / "codex"])
    assert got["errors"] == [] and got["lessons"] == []
    assert all("; edited order.js" in g and "Noted:" not in g for g in got["gists"])


def test_a_patch_run_by_the_shell_is_read_as_a_patch(store, tmp_path):
    heredoc = f"apply_patch <<'EOF'\n{_patch('src/cart.js', 'price', 'unitPrice')}EOF\n"
    _rollout(tmp_path / "codex", "0199a1b2-5555-7000-8000-000000000060", 5, "rename price", [
        ("function", "shell_command", _shell_command(heredoc),
         _shell_command_out(1, _NOT_FOUND.replace("order.js", "cart.js"))),
        ("function", "shell", {"command": ["bash", "-lc", heredoc]},
         json.dumps({"output": "Success. Updated the following files:\nM src/cart.js\n",
                     "metadata": {"exit_code": 0}})),
    ])
    got = _ingest_and_sleep(store, [tmp_path / "codex"])
    assert got["errors"] == []
    assert "; edited cart.js" in got["gists"][0]


def test_a_patch_on_a_missing_file_and_the_same_words_from_a_command_are_still_errors(store, tmp_path):
    """A file that is not there is a fact about the project; and words a program printed are
    that program's, whatever they say."""
    _rollout(tmp_path / "codex", "0199a1b2-5555-7000-8000-000000000070", 5, "patch it", [
        ("custom", "apply_patch", _patch("src/gone.js", "a", "b"),
         _patch_out(1, f"apply_patch verification failed: Failed to read file to update {CWD}/src/gone.js: "
                       "No such file or directory (os error 2)")),
        ("function", "shell_command", _shell_command("./scripts/migrate.sh"),
         _shell_command_out(1, "Failed to find expected lines in schema.sql")),
    ])
    got = _ingest_and_sleep(store, [tmp_path / "codex"])
    patch, script = (tags for _, tags in got["errors"])
    assert patch == ["error:file_not_found", "tool:apply_patch"] and script[-1] == "tool:shell_command"


# --------------------------------------------------------------------------- Gemini CLI's replace

def test_a_gemini_replace_is_an_edit(store, tmp_path):
    chats = tmp_path / ".gemini" / "tmp" / "shop" / "chats"
    chats.mkdir(parents=True)
    call = {"id": "replace-1", "name": "replace", "status": "success", "timestamp": "2025-10-05T09:00:06.000Z",
            "args": {"file_path": "/home/dev/shop/src/order.js", "old_string": "a", "new_string": "b"},
            "result": [{"functionResponse": {"id": "replace-1", "name": "replace", "response": {
                "output": "Successfully modified file: /home/dev/shop/src/order.js (1 replacements)."}}}]}
    record = {"sessionId": "7c1e2f3a-1111-2222-3333-444455556666", "projectHash": "shop",
              "startTime": "2025-10-05T09:00:00.000Z", "lastUpdated": "2025-10-05T09:00:09.000Z", "messages": [
                  {"id": "u1", "timestamp": "2025-10-05T09:00:00.000Z", "type": "user", "content": "add a discount"},
                  {"id": "g1", "timestamp": "2025-10-05T09:00:05.000Z", "type": "gemini", "content": "",
                   "model": "gemini-2.5-pro", "toolCalls": [call]},
                  {"id": "g2", "timestamp": "2025-10-05T09:00:09.000Z", "type": "gemini", "content": "Done.",
                   "model": "gemini-2.5-pro"}]}
    path = chats / "session-2025-10-05T09-00-7c1e2f3a.json"
    path.write_text(json.dumps(record))
    with clock.frozen(AFTER):
        assert ingest.ingest_paths(store, [path], source="chats")["sessions"] == 1
    (gist,) = [e["gist"] for e in store.rows("SELECT gist FROM episodes WHERE kind = 'session'")]
    assert "Did: 1 tool calls (replace); edited order.js" in gist


# --------------------------------------------------------------------------- FileNotFoundError

_FNF = ("Traceback (most recent call last):\n  File \"/home/dev/etl/run.py\", line 8, in <module>\n"
        "    cfg = open('config/settings.yaml')\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'config/settings.yaml'\n")


def test_a_python_file_not_found_error_is_a_missing_file_not_a_network_error(store, tmp_path):
    """"fileNOTFOUNDerror" holds ENOTFOUND, read regardless of case: Claude Code's and Codex's
    runs of the same script were network errors. Node's ENOTFOUND still is one."""
    claude = tmp_path / "claude" / "-home-dev-etl"
    claude.mkdir(parents=True)
    sid = "11111111-2222-4333-8444-555555555555"
    base = {"sessionId": sid, "cwd": "/home/dev/etl", "timestamp": "2025-10-05T09:00:00.000Z"}
    claude_path = claude / f"{sid}.jsonl"
    claude_path.write_text("\n".join(json.dumps({**base, **rec}) for rec in [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "run the etl"}},
        {"type": "assistant", "uuid": "a1", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "python run.py"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "npm install"}}]}},
        {"type": "user", "uuid": "u2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": f"Exit code 1\n{_FNF}"},
            {"type": "tool_result", "tool_use_id": "t2", "is_error": True,
             "content": "Exit code 1\nnpm ERR! code ENOTFOUND\nnpm ERR! getaddrinfo ENOTFOUND registry.npmjs.org"}]}},
    ]) + "\n")
    _rollout(tmp_path / "codex", "0199a1b2-4444-7000-8000-000000000044", 5, "run the etl", [
        ("function", "shell", {"command": ["bash", "-lc", "python run.py"], "workdir": CWD},
         json.dumps({"output": _FNF, "metadata": {"exit_code": 1}})),
    ])
    got = _ingest_and_sleep(store, [claude_path, tmp_path / "codex"])
    assert sorted(got["errors"]) == sorted([
        ("Bash file not found: FileNotFoundError: [Errno …] No such file or directory: 'config/settings.yaml'",
         ["error:file_not_found", "tool:bash"]),
        ("Bash network error: npm ERR! code ENOTFOUND", ["error:network", "tool:bash"]),
        ("shell file not found: FileNotFoundError: [Errno …] No such file or directory: 'config/settings.yaml'",
         ["error:file_not_found", "tool:shell"]),
    ])


# --------------------------------------------------------------------------- IPython tracebacks

_RULE = "-" * 75


def _ipython(name: str, frames: str, exception: str) -> str:
    """A traceback as IPython prints it: a rule of dashes, then a header with no colon."""
    return f"{_RULE}\n{name:<42}Traceback (most recent call last)\n{frames}\n\n{exception}"


def _conversation(cid: str, t0: int, ask: str, code: str, output: str) -> dict[str, Any]:
    """A ChatGPT export's conversation: the ask, code run by the code interpreter, its output."""
    def message(mid: str, role: str, content: dict, t: int, recipient: str = "all", name: str | None = None,
                meta: dict | None = None) -> dict:
        return {"id": mid, "author": {"role": role, "name": name, "metadata": {}}, "create_time": t,
                "content": content, "status": "finished_successfully", "end_turn": None, "weight": 1.0,
                "metadata": meta or {}, "recipient": recipient, "channel": None}
    mapping = {
        "r": {"id": "r", "message": None, "parent": None, "children": ["u1"]},
        "u1": {"id": "u1", "parent": "r", "children": ["c1"],
               "message": message("u1", "user", {"content_type": "text", "parts": [ask]}, t0)},
        "c1": {"id": "c1", "parent": "u1", "children": ["t1"], "message": message(
            "c1", "assistant", {"content_type": "code", "language": "unknown", "text": code}, t0 + 2,
            recipient="python")},
        "t1": {"id": "t1", "parent": "c1", "children": ["a1"], "message": message(
            "t1", "tool", {"content_type": "execution_output", "text": output}, t0 + 3, name="python",
            meta={"aggregate_result": {"status": "failed_with_in_kernel_exception"}})},
        "a1": {"id": "a1", "parent": "t1", "children": [], "message": message(
            "a1", "assistant", {"content_type": "text", "parts": ["Sorry, that failed."]}, t0 + 4)},
    }
    return {"title": ask, "create_time": t0, "update_time": t0 + 4, "mapping": mapping, "current_node": "a1",
            "id": cid, "conversation_id": cid}


def test_an_ipython_traceback_is_titled_by_its_exception(store, tmp_path):
    """Both errors were titled by the rule of dashes, so two unrelated failures made one lesson."""
    chained = _ipython("KeyError", "File ~/.local/lib/python3.11/site-packages/pandas/core/indexes/base.py:3802, "
                       "in Index.get_loc(self, key)\n   3801 try:\n-> 3802     return self._engine.get_loc(key)",
                       "KeyError: 'month'") + "\n\nThe above exception was the direct cause of the following " \
        "exception:\n\n" + _ipython("KeyError", "Cell In[2], line 1\n----> 1 df['month'].plot()", "KeyError: 'month'")
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([
        _conversation("c-1", 1759650000, "convert the prices", "float('n/a')", _ipython(
            "ValueError", "Cell In[2], line 1\n----> 1 float('n/a')",
            "ValueError: could not convert string to float: 'n/a'")),
        _conversation("c-2", 1759736400, "plot revenue by month", "df['month'].plot()", chained),
    ]))
    got = _ingest_and_sleep(store, [path])
    assert [title for title, _ in got["errors"]] == [
        "python failed: ValueError: could not convert string to float: 'n/a'", "python failed: KeyError: 'month'"]
    assert got["lessons"] == []


def test_a_cut_ipython_traceback_falls_back_to_a_line_that_names_an_exception():
    cut = f"{_RULE}\nZeroDivisionError                         Traceback (most recent call last)\n" \
          "Cell In[4], line 1\n----> 1 1/0\n\nZeroDivisionError"
    call = ToolCall(id="c", name="python", input="1/0", result=cut, is_error=True)
    session = Session(id="s", source="chatgpt", turns=[Turn(role="user", text="divide"),
                                                        Turn(role="assistant", tool_calls=[call])])
    assert [f.title for f in detect.errors(session)] == ["python failed: ZeroDivisionError"]


def test_a_rule_of_dashes_never_titles_an_error():
    result = f"{_RULE}\nSegmentation fault (core dumped)\n{_RULE}\n"
    call = ToolCall(id="c", name="Bash", input={"command": "./render"}, result=result, is_error=True)
    session = Session(id="s", source="claude-code", turns=[Turn(role="user", text="render"),
                                                            Turn(role="assistant", tool_calls=[call])])
    assert [f.title for f in detect.errors(session)] == ["Bash failed: Segmentation fault (core dumped)"]


# --------------------------------------------------------------------------- a huge output's detail

def test_an_errors_detail_keeps_the_end_of_a_huge_output(store, tmp_path):
    """The line that says why a build failed is its last; the detail kept only the first
    4,000 characters. A key at the tail is redacted there as at the head."""
    log = "".join(f"line {n}: compiling crate {n} xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n" for n in range(6000))
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    tail = f"token {key} was used\nerror: linker `cc` not found\n"
    _rollout(tmp_path / "codex", "0199a1b2-9999-7000-8000-000000000099", 5, "build it", [
        ("function", "shell", {"command": ["bash", "-lc", "cargo build"], "workdir": CWD},
         json.dumps({"output": log + tail, "metadata": {"exit_code": 101}})),
    ])
    with clock.frozen(AFTER):
        ingest.ingest_paths(store, [tmp_path / "codex"])
    (detail,) = [e["detail"] for e in store.rows("SELECT detail FROM episodes WHERE kind = 'error'")]
    assert detail.startswith("shell: cargo build\n\nline 0: compiling crate 0")
    assert detail.rstrip().endswith("error: linker `cc` not found")
    assert f"… {len(log + tail) - 4000:,} characters left out …" in detail
    assert len(detail) < 4200 and "ghp_" not in detail and "[secret]" in detail


_PIECES = st.sampled_from(["password", "token", "=", ":", " ", "\n", "x", "abcdefgh", "ABCDEFGHIJKLMNOP",
                           "0123456789", "sk-", "ghp_", " ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 ", "…"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join), st.integers(min_value=1, max_value=80))
def test_a_redacted_tail_is_the_tail_of_the_redacted_text(text: str, width: int) -> None:
    whole = redact_secrets(text)
    tail = redacted_tail(text, width)
    assert whole[-width:].endswith(tail)  # the tail, from a word boundary when it was cut
    if len(whole) <= width:
        assert tail == whole


@pytest.mark.parametrize("before", [1000, 1900, 2100, 5000])
def test_a_private_key_cut_by_the_tail_is_redacted_not_half_kept(before: int) -> None:
    """The tail of a huge output is cut from its end: a key whose BEGIN line lay before the
    cut was no longer recognised, and its base64 lines were kept."""
    body = [f"{n:02d}" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2" for n in range(25)]
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----"
    output = "x " * (before // 2) + key + "\n" + "deploy: permission denied\n" * 40
    tail = redacted_tail(output, 2000)
    assert "deploy: permission denied" in tail
    assert not any(line[:30] in tail for line in body), tail
