"""The real Codex CLI against remem's hooks and MCP server, with only the model faked.

`remem setup --agent codex` wires a scratch CODEX_HOME (config.toml: the MCP server and
`[features] hooks = true`; hooks.json: UserPromptSubmit, PreToolUse on Bash, Stop,
SessionEnd). Codex (`codex exec`) runs one session in a scratch project against a local OpenAI
Responses API (tests/fake_openai_responses.py) whose replies are scripted: an `exec_command`
call running `pip install requests`, then a hand-back that force-pushed to main, then a last
answer once the stop hook has blocked. Everything else is real: Codex starts remem's MCP server
and offers its tools, runs remem's hooks and puts what they print into the conversation, runs
the shell tool and writes its rollout; the SessionEnd hook's detached `remem ingest` reads that
rollout into the memory, and the nightly job's `remem ingest` after it adds nothing twice.

Two things stand in for a person: `codex exec` runs hooks only once they are trusted, which a
person does once in the interactive `codex`; here `--dangerously-bypass-hook-trust` does it for
this run. And Codex picks its own session ids (no flag sets one), so instead of a session in the
shown arm the test switches the hold-out off (`prime.holdout = false`).

The Codex binary is `$REMEM_CODEX_BIN`, else `codex` on PATH; without one the test skips,
unless REMEM_REQUIRE_AGENTS=1 (CI), where it fails. Checked with Codex 0.171.0 (the release CI
installs); where a hook's text lands in the request is Codex's choice and may move in other
releases.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_remem
from tests.fake_openai_responses import (
    FakeResponses,
    ServerThread,
    function_call_item,
    message_item,
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
    wait_for_ingest,
)

CODEX_VERSION = "0.171.0"
BIN_ENV = "REMEM_CODEX_BIN"
CODEX_TIMEOUT_S = 240  # the whole `codex exec` run; it takes seconds

CALL_ID = "call_fake_pip_install"
SHELL_TOOL = "exec_command"  # Codex's shell tool; its hooks call it "Bash"
STUB_SAYS = f"stub pip: would run {COMMAND}"
# How Codex 0.171.0 hands a Stop hook's block reason back: a user message, XML-escaped, in a tag.
HOOK_PROMPT = re.compile(r'<hook_prompt hook_run_id="stop:[^"]*">(.*)</hook_prompt>', re.DOTALL)
# Written before setup runs: the model provider is the fake, and the shell tool never starts a
# login shell (Debian's /etc/profile would reset PATH, and a real pip would run instead of the
# stand-in). Top-level keys first: setup appends its tables after them.
CODEX_CONFIG = """\
model = "fake-model"
model_provider = "fake"
allow_login_shell = false

[model_providers.fake]
name = "fake"
base_url = "{url}/v1"
wire_api = "responses"
"""


def codex_binary() -> str:
    """The Codex CLI to drive; skips (or, with REMEM_REQUIRE_AGENTS=1, fails) without one."""
    return agent_binary(BIN_ENV, "codex", "Codex CLI", f"npm install @openai/codex@{CODEX_VERSION}")


def item_text(item: dict[str, Any]) -> str:
    """The text of a message input item (its input_text / output_text parts), else ""."""
    if item.get("type") != "message":
        return ""
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def is_agent_turn(body: dict[str, Any]) -> bool:
    """The agent loop's requests offer the shell tool; side requests (titles…) do not."""
    return any(t.get("name") == SHELL_TOOL for t in body.get("tools") or [])


def scripted_model(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The fake model: decides each reply from what the request holds, never from its order."""
    if not is_agent_turn(body):
        return [message_item("ok")]
    last = body["input"][-1]
    if last.get("type") == "function_call_output" and last.get("call_id") == CALL_ID:
        return [message_item(HAND_BACK)]
    if last.get("role") == "user" and STOP_LESSON in item_text(last):
        return [message_item(FINAL)]
    return [function_call_item(CALL_ID, SHELL_TOOL, {"cmd": COMMAND})]


def developer_texts(items: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(i, item_text(it)) for i, it in enumerate(items)
            if it.get("type") == "message" and it.get("role") == "developer"]


def agent_env(base: dict[str, str], *, stub_bin: Path, tmp: Path) -> dict[str, str]:
    """The environment `codex` runs in: nothing of a real Codex or OpenAI setup leaks in
    (CODEX_HOME is the scratch one the `home` fixture set)."""
    return scratch_env(
        base, drop=("OPENAI_", "CODEX_"), keep=("CODEX_HOME",), stub_bin=stub_bin,
        OPENAI_API_KEY="test-key", TMPDIR=str(tmp), NO_COLOR="1",
        # Should the stand-in `pip` ever be bypassed, a real pip still installs nothing.
        PIP_DRY_RUN="1", PIP_NO_INDEX="1",
    )


def run_codex(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`codex` in its own process group, all of it (MCP server and hooks with it) killed if it
    outlives CODEX_TIMEOUT_S, or once it is done, should anything of it linger."""
    return run_agent(args, cwd=cwd, env=env, name="codex", timeout_s=CODEX_TIMEOUT_S, kill_leftovers=True)


@pytest.mark.usefixtures("no_stray_ingest")
def test_real_codex_with_a_faked_model_runs_remem_hooks_and_mcp(home, tmp_path):
    codex = codex_binary()
    version = subprocess.run([codex, "--version"], capture_output=True, text=True, timeout=60, input="",
                             check=False)
    assert version.returncode == 0, f"{codex} --version failed: {version.stderr}"
    seen_version = version.stdout.strip()

    project, stub_bin, tmp = scratch_folders(tmp_path)
    codex_home = Path(os.environ["CODEX_HOME"])
    codex_home.mkdir(parents=True)

    fake = FakeResponses(scripted_model)
    with ServerThread(fake.app) as server:
        (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=server.url))
        wired = run_remem("setup", "--agent", "codex", "--no-schedule", "--yes")
        assert wired.returncode == 0, wired.stderr
        hooks_json = json.loads((codex_home / "hooks.json").read_text())["hooks"]
        assert set(hooks_json) == {"UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd"}
        config_toml = tomllib.loads((codex_home / "config.toml").read_text())
        assert config_toml["model_provider"] == "fake" and config_toml["features"]["hooks"] is True
        assert "remem" in config_toml["mcp_servers"]
        from remem import config
        from remem.engine.store import Store

        prompt_id, tool_id, stop_id = seed_lessons_and_warm_up()
        # Codex chooses its session id, so the session cannot be picked in the shown arm.
        config.set_value("prime.holdout", False)

        run = run_codex(
            [codex, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
             "--color", "never",
             # Codex does not wait for MCP servers: their tools join the request once they have
             # connected, maybe after the run is over. `required` makes it wait for remem's
             # (a run-time override; setup's entry stays as a person gets it).
             "-c", "mcp_servers.remem.required=true", "-c", "mcp_servers.remem.startup_timeout_sec=120",
             PROMPT],
            cwd=project, env=agent_env(dict(os.environ), stub_bin=stub_bin, tmp=tmp),
        )
    where = f"(Codex {seen_version}; stderr: {run.stderr[-2000:]!r})"
    assert run.returncode == 0, where
    assert fake.errors == [], fake.errors
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip().startswith("{")]
    session_id = next(e["thread_id"] for e in events if e.get("type") == "thread.started")
    assert [e["type"] for e in events if e.get("type", "").startswith("turn.")] == [
        "turn.started", "turn.completed"], where
    messages = [e["item"]["text"] for e in events
                if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"]
    assert messages == [HAND_BACK, FINAL], events
    shell = [e["item"] for e in events
             if e.get("type") == "item.completed" and e["item"].get("type") == "command_execution"]
    assert len(shell) == 1 and shell[0]["exit_code"] == 0, shell
    assert STUB_SAYS in shell[0]["aggregated_output"], shell  # the stand-in ran, not a real pip
    # Codex's warnings about hooks (a hooks.json it cannot use, a timeout it clamps) come as error
    # items; only the notice that hook trust is bypassed may be there. Hook output it turns down
    # it reports nowhere in `exec --json`: that shows as context missing from the requests below.
    complaints = [e["item"]["message"] for e in events
                  if e.get("type") == "item.completed" and e["item"].get("type") == "error"
                  and "hook" in e["item"]["message"].lower()
                  and "dangerously-bypass-hook-trust" not in e["item"]["message"]]
    assert complaints == [], complaints
    # A SessionEnd timeout over 3 s, which Codex clamps, is warned about on every run.
    assert "clamping" not in run.stdout and "clamping" not in run.stderr, where

    turns = [b for b in fake.response_bodies if is_agent_turn(b)]
    assert len(turns) == 3, [[(i.get("type"), i.get("role")) for i in b["input"]] for b in turns]
    first, after_tool, after_stop = turns
    # setup's MCP entry is read, and remem's tools are offered to the model.
    remem_tools = [t for t in first["tools"] if t.get("name") == "mcp__remem"]
    assert len(remem_tools) == 1, [t.get("name") for t in first["tools"]]
    assert {"recall", "context", "remember"} <= {t["name"] for t in remem_tools[0]["tools"]}

    # The prompt hook's block reached the model with the prompt, once: in 0.171.0 a `developer`
    # message right after the prompt, not in the instructions.
    asked = [i for i, it in enumerate(first["input"]) if item_text(it) == PROMPT]
    told = [(i, text) for i, text in developer_texts(first["input"]) if PROMPT_LESSON in text]
    assert len(asked) == 1 and len(told) == 1 and told[0][0] == asked[0] + 1, first["input"]
    prompt_ctx = told[0][1]
    assert prompt_ctx.startswith("<remem-memory>") and f"- (correction) {PROMPT_LESSON}\n" in prompt_ctx
    assert count_in(first, prompt_ctx) == 1 and count_in(first.get("instructions"), prompt_ctx) == 0
    # The pre-tool hook's block came back between the shell call and its output, once.
    items = after_tool["input"]
    called = [i for i, it in enumerate(items)
              if it.get("type") == "function_call" and it.get("call_id") == CALL_ID]
    returned = [i for i, it in enumerate(items)
                if it.get("type") == "function_call_output" and it.get("call_id") == CALL_ID]
    tool_told = [(i, text) for i, text in developer_texts(items) if TOOL_LESSON in text]
    assert len(called) == len(returned) == len(tool_told) == 1, items
    assert called[0] < tool_told[0][0] < returned[0], items
    tool_ctx = tool_told[0][1]
    assert tool_ctx.startswith("<remem-memory>") and f"- (error) {TOOL_LESSON}\n" in tool_ctx
    assert count_in(after_tool, tool_ctx) == 1 and STUB_SAYS in items[returned[0]]["output"]
    # The stop hook's block went back to the model as the next user turn, and the stop after
    # it was not blocked again (stop_hook_active): the run ended with the model's answer.
    fed_back = after_stop["input"][-1]
    wrapped = HOOK_PROMPT.fullmatch(item_text(fed_back))
    assert fed_back.get("role") == "user" and wrapped, fed_back
    from remem.hooks.adapters import STOP_REASON

    reason = html.unescape(wrapped.group(1))
    assert reason.startswith(f"{STOP_REASON}\n<remem-memory>"), reason
    assert f"- (correction) {STOP_LESSON}\n" in reason
    stop_block = reason[len(STOP_REASON) + 1:]

    # Each decision is in `primes`, under Codex's own session id (its thread id).
    with Store() as store:
        primes = [dict(r) for r in store.rows("SELECT * FROM primes ORDER BY id")]
    assert [(p["session_id"], p["agent"], p["event"], p["held_out"]) for p in primes] == [
        (session_id, "codex", "prompt", 0), (session_id, "codex", "pre-tool", 0),
        (session_id, "codex", "stop", 0)]
    assert [json.loads(p["lesson_ids"]) for p in primes] == [[prompt_id], [tool_id], [stop_id]]
    assert primes[0]["query"] == PROMPT and primes[2]["query"] == HAND_BACK
    assert primes[1]["query"] == f"Bash {COMMAND}"  # Codex names its shell tool "Bash" to hooks
    assert [p["chars"] for p in primes] == [len(prompt_ctx), len(tool_ctx), len(stop_block)]

    # The session's rollout is under CODEX_HOME/sessions, and SessionEnd's detached ingest
    # (started with the rollout Codex named as transcript_path) reads it into the memory.
    rollouts = list((codex_home / "sessions").rglob(f"rollout-*-{session_id}.jsonl"))
    assert len(rollouts) == 1, sorted(str(p) for p in (codex_home / "sessions").rglob("*"))
    log = (home / "logs" / "remem.log").read_text()
    assert f"session-end: ingesting {rollouts[0]} in the background" in log, log
    episodes = wait_for_ingest(home, session_id)
    assert episodes, f"no episode of session {session_id} after the session-end ingest"
    assert {e["source"] for e in episodes} == {"codex"}
    assert any(e["cwd"] == str(project) for e in episodes)
    stored = " ".join(f"{e['title']} {e['gist']} {e['detail']}" for e in episodes)
    assert COMMAND in stored and PROMPT in stored, episodes
    # What remem itself put into the conversation (developer context, the stop's feedback turn)
    # is never read back as the session's own words.
    assert "remem-memory" not in stored and "hook_prompt" not in stored, episodes
    assert not any(text in stored for text, _, _ in LESSONS) and STOP_REASON not in stored, episodes
    # The nightly job's ingest, after the hook's, stores the session no second time.
    ingested = run_remem("ingest", "--json")
    assert ingested.returncode == 0, ingested.stderr
    with Store() as store:
        again = [dict(r) for r in store.rows("SELECT * FROM episodes WHERE session_id = ?", (session_id,))]
    assert sorted(e["id"] for e in again) == sorted(e["id"] for e in episodes), ingested.stdout


def test_the_faked_model_speaks_the_responses_api_to_the_official_client():
    """The stand-in model itself, read by OpenAI's own client: streamed events rebuild the
    scripted items, the plain answer equals them; no agent needed."""
    import openai

    items = [message_item("Running it now."), function_call_item("call_x", SHELL_TOOL, {"cmd": COMMAND})]
    fake = FakeResponses(lambda body: items)
    with ServerThread(fake.app) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test-key", max_retries=0, timeout=30)
        with client.responses.stream(model="fake", input=PROMPT) as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            streamed = stream.get_final_response()
        plain = client.responses.create(model="fake", input=PROMPT)
    assert "".join(deltas) == "Running it now."
    for response in (streamed, plain):
        assert response.status == "completed" and response.output_text == "Running it now."
        call = response.output[1]
        assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == (
            "function_call", "call_x", SHELL_TOOL, {"cmd": COMMAND})
    assert [b.get("stream") for b in fake.response_bodies] == [True, None]
    assert fake.errors == []
