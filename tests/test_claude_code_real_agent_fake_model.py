"""The real Claude Code CLI against remem's hooks, with only the model faked.

`remem setup --agent claude-code` wires the hooks into a scratch ~/.claude; Claude Code
(`claude -p`) runs one session in a scratch project against a local Anthropic Messages API
(tests/fake_anthropic_stream.py) whose replies are scripted: a Bash call to `pip install
requests`, then a hand-back that force-pushed to main, then a last answer once the stop hook
has blocked. Everything else is real: Claude Code runs remem's hooks, puts what they print
into the conversation, runs the Bash tool and writes its transcript; the SessionEnd hook's
detached `remem ingest` reads that transcript into the memory.

The Claude Code binary is `$REMEM_CLAUDE_BIN`, else `claude` on PATH; without one the test
skips, unless REMEM_REQUIRE_AGENTS=1 (CI), where it fails. Checked with Claude Code 2.1.197
(the release CI installs); where a hook's text lands in the request is Claude Code's choice
and may move in other releases.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_remem
from tests.fake_anthropic_stream import (
    FakeAnthropic,
    ServerThread,
    text_block,
    tool_use_block,
)
from tests.real_agents import (  # noqa: F401  (no_stray_ingest: a fixture)
    COMMAND,
    FINAL,
    HAND_BACK,
    LESSONS,
    PROMPT,
    PROMPT_LESSON,
    STOP_LESSON,
    TOOL_LESSON,
    agent_binary,
    count_in,
    no_stray_ingest,
    run_agent,
    scratch_env,
    scratch_folders,
    seed_lessons_and_warm_up,
    session_in_shown_arm,
    wait_for_ingest,
)

CLAUDE_CODE_VERSION = "2.1.197"
BIN_ENV = "REMEM_CLAUDE_BIN"
CLAUDE_TIMEOUT_S = 240  # the whole `claude -p` run; it takes seconds

TOOL_USE_ID = "toolu_fake_pip_install"
# Claude Code's debug log, when it turns down what a hook printed.
REJECTED = re.compile(r"Hook JSON output validation failed|Hook \S+ \(\w+\) error:|incorrect event name")


def claude_binary() -> str:
    """The Claude Code CLI to drive; skips (or, with REMEM_REQUIRE_AGENTS=1, fails) without one."""
    return agent_binary(BIN_ENV, "claude", "Claude Code CLI",
                        f"npm install @anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}")


def content_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [c for c in content or [] if isinstance(c, dict)]


def message_texts(message: dict[str, Any]) -> list[str]:
    return [c.get("text", "") for c in content_blocks(message) if c.get("type") == "text"]


def carries_tool_result(message: dict[str, Any]) -> bool:
    return any(c.get("type") == "tool_result" and c.get("tool_use_id") == TOOL_USE_ID
               for c in content_blocks(message))


def is_agent_turn(body: dict[str, Any]) -> bool:
    """The main loop's requests offer the Bash tool; side requests (titles, summaries) do not."""
    return any(t.get("name") == "Bash" for t in body.get("tools") or [])


def scripted_model(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The fake model: decides each reply from what the request holds, never from its order."""
    if not is_agent_turn(body):
        return [text_block("ok")]
    last = body["messages"][-1]
    if carries_tool_result(last):
        return [text_block(HAND_BACK)]
    if last.get("role") == "user" and any(STOP_LESSON in t for t in message_texts(last)):
        return [text_block(FINAL)]
    return [tool_use_block(TOOL_USE_ID, "Bash", {"command": COMMAND, "description": "Install requests"})]


def hook_context(event: dict[str, Any], name: str) -> str:
    """The additionalContext remem printed for a hook, checked to be in Claude Code's shape."""
    out = json.loads(event["stdout"])
    specific = out.get("hookSpecificOutput") if isinstance(out, dict) else None
    assert isinstance(specific, dict) and specific.get("hookEventName") == name, out
    assert isinstance(specific.get("additionalContext"), str), out
    return specific["additionalContext"]


def agent_env(base: dict[str, str], *, url: str, stub_bin: Path, tmp: Path) -> dict[str, str]:
    """The environment `claude` runs in: nothing of a real Claude Code setup leaks in."""
    return scratch_env(
        base, drop=("ANTHROPIC_", "CLAUDE"), stub_bin=stub_bin,
        ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="test-key",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
        # Claude Code keeps tool output under /tmp/claude-<uid>/ unless told otherwise.
        CLAUDE_CODE_TMPDIR=str(tmp), TMPDIR=str(tmp),
    )


def run_claude(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`claude` in its own process group, all of it killed if it outlives CLAUDE_TIMEOUT_S."""
    return run_agent(args, cwd=cwd, env=env, name="claude", timeout_s=CLAUDE_TIMEOUT_S)


@pytest.mark.usefixtures("no_stray_ingest")
def test_real_claude_code_with_a_faked_model_runs_every_remem_hook(home, tmp_path):
    claude = claude_binary()
    version = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=60,
                             input="", env={**os.environ, "DISABLE_AUTOUPDATER": "1"})
    assert version.returncode == 0, f"{claude} --version failed: {version.stderr}"
    seen_version = version.stdout.strip()

    wired = run_remem("setup", "--agent", "claude-code", "--no-schedule", "--yes")
    assert wired.returncode == 0, wired.stderr
    from remem.engine.store import Store

    prompt_id, tool_id, stop_id = seed_lessons_and_warm_up()
    project, stub_bin, tmp = scratch_folders(tmp_path)
    session_id = session_in_shown_arm()
    debug_log = tmp_path / "claude-debug.txt"

    fake = FakeAnthropic(scripted_model)
    with ServerThread(fake.app) as server:
        run = run_claude(
            [claude, "-p", PROMPT, "--output-format", "stream-json", "--verbose",
             "--include-hook-events", "--allowedTools", "Bash", "--session-id", session_id,
             "--debug-file", str(debug_log)],
            cwd=project, env=agent_env(dict(os.environ), url=server.url, stub_bin=stub_bin, tmp=tmp),
        )
    where = f"(Claude Code {seen_version}; stderr: {run.stderr[-2000:]!r})"
    assert run.returncode == 0, where
    assert fake.errors == [], fake.errors
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    result = [e for e in events if e.get("type") == "result"]
    assert len(result) == 1 and result[0]["subtype"] == "success" and not result[0]["is_error"], where
    assert result[0]["result"] == FINAL
    init = next(e for e in events if e.get("subtype") == "init")
    # setup's MCP entry is read (it may still be connecting when the session starts)
    assert "remem" in [server["name"] for server in init["mcp_servers"]], init["mcp_servers"]

    # Every hook Claude Code ran ended well, and it took what each printed.
    hooks = [e for e in events if e.get("subtype") == "hook_response"]
    assert all(h["outcome"] == "success" and h["exit_code"] == 0 for h in hooks), hooks
    hooks = [h for h in hooks if h["hook_event"] != "SessionEnd"]  # it runs as the stream ends
    assert [h["hook_event"] for h in hooks] == ["UserPromptSubmit", "PreToolUse", "Stop", "Stop"], hooks
    debug = debug_log.read_text(errors="replace")
    assert not REJECTED.search(debug), [line for line in debug.splitlines() if REJECTED.search(line)]
    prompt_ctx = hook_context(hooks[0], "UserPromptSubmit")
    tool_ctx = hook_context(hooks[1], "PreToolUse")
    stop = json.loads(hooks[2]["stdout"])
    assert set(stop) == {"decision", "reason"} and stop["decision"] == "block"
    assert hooks[3]["stdout"] == ""  # stop_hook_active: it blocks once, never twice in a row
    assert f"- (correction) {PROMPT_LESSON}\n" in prompt_ctx and prompt_ctx.startswith("<remem-memory>")
    assert f"- (error) {TOOL_LESSON}\n" in tool_ctx and f"- (correction) {STOP_LESSON}\n" in stop["reason"]

    turns = [b for b in fake.message_bodies if is_agent_turn(b)]
    assert len(turns) == 3, [[m.get("role") for m in b["messages"]] for b in turns]
    first, after_tool, after_stop = turns
    # The prompt hook's context reached the model with the prompt, in the conversation (in
    # 2.1.197: a role "system" message after the prompt), once, labelled by Claude Code.
    labelled = f"UserPromptSubmit hook additional context: {prompt_ctx}"
    assert count_in(first, prompt_ctx) == 1 and count_in(first["system"], prompt_ctx) == 0
    holders = [i for i, m in enumerate(first["messages"]) if any(labelled in t for t in message_texts(m))]
    asked = [i for i, m in enumerate(first["messages"]) if any(PROMPT in t for t in message_texts(m))]
    assert len(holders) == 1 and asked and holders[0] >= asked[0], first["messages"]
    assert first["messages"][holders[0]]["role"] in ("system", "user")
    # The pre-tool hook's context came back with the tool's result, in the same user turn.
    returned = after_tool["messages"][-1]
    assert returned["role"] == "user" and carries_tool_result(returned)
    tool_labelled = f"PreToolUse:Bash hook additional context: {tool_ctx}"
    assert any(tool_labelled in t for t in message_texts(returned)), returned
    assert count_in(after_tool, tool_ctx) == 1
    # The stop hook's block went back to the model as the next user turn.
    fed_back = after_stop["messages"][-1]
    assert fed_back["role"] == "user" and any(stop["reason"] in t for t in message_texts(fed_back)), fed_back

    # Each decision is in `primes`, under Claude Code's own session id, in the shown arm.
    with Store() as store:
        primes = [dict(r) for r in store.rows("SELECT * FROM primes ORDER BY id")]
    assert [(p["session_id"], p["agent"], p["event"], p["held_out"]) for p in primes] == [
        (session_id, "claude-code", "prompt", 0), (session_id, "claude-code", "pre-tool", 0),
        (session_id, "claude-code", "stop", 0)]
    assert [json.loads(p["lesson_ids"]) for p in primes] == [[prompt_id], [tool_id], [stop_id]]
    assert primes[0]["query"] == PROMPT and primes[2]["query"] == HAND_BACK
    stop_block = stop["reason"][stop["reason"].index("<remem-memory>"):]
    assert [p["chars"] for p in primes] == [len(prompt_ctx), len(tool_ctx), len(stop_block)]

    # SessionEnd's detached ingest read Claude Code's transcript into the memory.
    episodes = wait_for_ingest(home, session_id)
    assert episodes, f"no episode of session {session_id} after the session-end ingest"
    assert {e["source"] for e in episodes} == {"claude-code"}
    assert any(e["cwd"] == str(project) for e in episodes)
    stored = " ".join(f"{e['title']} {e['gist']} {e['detail']}" for e in episodes)
    assert COMMAND in stored, episodes
    # What remem itself put into the conversation (context, the stop's feedback turn) is never
    # read back as the session's own words.
    assert "remem-memory" not in stored and not any(text in stored for text, _, _ in LESSONS), episodes


def test_the_faked_model_speaks_the_messages_api_to_the_official_client():
    """The stand-in model itself, read by Anthropic's own client: streamed events rebuild the
    scripted blocks, the plain answer equals them, count_tokens answers; no agent needed."""
    import anthropic

    blocks = [text_block("Running it now."), tool_use_block("toolu_x", "Bash", {"command": COMMAND})]
    fake = FakeAnthropic(lambda body: blocks)
    with ServerThread(fake.app) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0, timeout=30)
        ask = {"model": "fake", "max_tokens": 64, "messages": [{"role": "user", "content": PROMPT}]}
        with client.messages.stream(**ask) as stream:
            streamed = stream.get_final_message()
        plain = client.messages.create(**ask)
        counted = client.messages.count_tokens(model="fake", messages=ask["messages"])
    for message in (streamed, plain):
        assert [b.model_dump(exclude_none=True) for b in message.content] == blocks
        assert message.stop_reason == "tool_use"
    assert counted.input_tokens > 0
    assert [r["body"].get("stream") for r in fake.requests if r["path"] == "/v1/messages"] == [True, None]
    assert fake.errors == []
