"""The real Gemini CLI against remem's hooks, with only the model faked.

`remem setup --agent gemini` wires the hooks into a scratch ~/.gemini/settings.json; Gemini CLI
(`gemini -p`) runs one session in a scratch project against a local Gemini API
(tests/fake_gemini_api.py) whose replies are scripted: a `run_shell_command` call to `pip
install requests`, then a hand-back that force-pushed to main, then a last answer once the
AfterAgent hook has denied the hand-back. Everything else is real: Gemini CLI runs remem's
hooks, puts what they print into the conversation, runs the shell tool and writes its chat
record; the SessionEnd hook's detached `remem ingest` reads that record into the memory.
Gemini CLI's own local telemetry file (hook_call events, with each hook's input and output)
is how the test sees which hooks ran and what they answered.

The Gemini CLI binary is `$REMEM_GEMINI_BIN`, else `gemini` on PATH; without one the tests
skip, unless REMEM_REQUIRE_AGENTS=1 (CI), where they fail. Checked with Gemini CLI 0.61.0;
where a hook's text lands in the request is Gemini CLI's choice and may move in other releases.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_remem
from tests.fake_gemini_api import (
    FakeGemini,
    ServerThread,
    function_call_part,
    text_part,
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

# LESSONS (tests/real_agents.py) hold one lesson per remem event: the prompt bears on the
# first, the shell call on the error lesson about its command (Gemini CLI has no channel for
# it, so it must never show), the hand-back on the force-push correction.
GEMINI_CLI_VERSION = "0.61.0"
BIN_ENV = "REMEM_GEMINI_BIN"
GEMINI_TIMEOUT_S = 240  # the whole `gemini -p` run; it takes seconds
# Named, so Gemini CLI's model router (which would ask the model to pick one) stays out.
MODEL = "gemini-2.5-flash"
SHELL_TOOL = "run_shell_command"


def gemini_binary() -> str:
    """The Gemini CLI to drive; skips (or, with REMEM_REQUIRE_AGENTS=1, fails) without one."""
    return agent_binary(BIN_ENV, "gemini", "Gemini CLI", f"npm install @google/gemini-cli@{GEMINI_CLI_VERSION}")


def texts(content: dict[str, Any]) -> list[str]:
    return [p["text"] for p in content.get("parts") or [] if isinstance(p.get("text"), str)]


def is_agent_turn(body: dict[str, Any]) -> bool:
    """The main loop's requests offer the shell tool; side requests (summaries, checks) do not."""
    return any(f.get("name") == SHELL_TOOL
               for t in body.get("tools") or [] for f in t.get("functionDeclarations") or [])


def carries_shell_result(content: dict[str, Any]) -> bool:
    return any((p.get("functionResponse") or {}).get("name") == SHELL_TOOL
               for p in content.get("parts") or [])


def scripted_model(model: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The fake model: decides each reply from what the request holds, never from its order."""
    if not is_agent_turn(body):
        return [text_part("ok")]
    last = body["contents"][-1]
    if carries_shell_result(last):
        return [text_part(HAND_BACK)]
    if last.get("role") == "user" and any(STOP_LESSON in t for t in texts(last)):
        return [text_part(FINAL)]
    return [function_call_part(SHELL_TOOL, {"command": COMMAND, "description": "Install requests"})]


def telemetry_records(path: Path) -> list[dict[str, Any]]:
    """Gemini CLI's local telemetry file: JSON objects one after another (not one per line)."""
    text = path.read_text(errors="replace") if path.exists() else ""
    decoder, at, out = json.JSONDecoder(), 0, []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return out
        record, at = decoder.raw_decode(text, at)
        out.append(record)


def hook_calls(path: Path) -> list[dict[str, Any]]:
    """Each hook Gemini CLI ran, in order: its event, name, exit code, success, input and stdout."""
    calls = [r["attributes"] for r in telemetry_records(path)
             if (r.get("attributes") or {}).get("event.name") == "gemini_cli.hook_call"]
    for call in calls:
        call["input"] = json.loads(call.get("hook_input") or "{}")
    return sorted(calls, key=lambda c: c["event.timestamp"])


def agent_env(base: dict[str, str], *, url: str, stub_bin: Path, tmp: Path,
              telemetry: Path) -> dict[str, str]:
    """The environment `gemini` runs in: nothing of a real Gemini CLI setup leaks in."""
    return scratch_env(
        base, drop=("GEMINI_", "GOOGLE_"), stub_bin=stub_bin,
        GOOGLE_GEMINI_BASE_URL=url, GEMINI_API_KEY="test",
        # Its own telemetry, to a local file only, with each hook's input and output in it.
        GEMINI_TELEMETRY_ENABLED="true", GEMINI_TELEMETRY_TARGET="local",
        GEMINI_TELEMETRY_OUTFILE=str(telemetry), GEMINI_TELEMETRY_LOG_PROMPTS="true",
        TMPDIR=str(tmp), NO_COLOR="1",
    )


def run_gemini(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`gemini` in its own process group, all of it killed if it outlives GEMINI_TIMEOUT_S
    (its MCP server and hooks with it; the detached ingest has a session of its own)."""
    return run_agent(args, cwd=cwd, env=env, name="gemini", timeout_s=GEMINI_TIMEOUT_S)


class GeminiSession:
    """One `gemini -p` session, wired by `remem setup`, with the seeded lessons' ids."""

    def __init__(self, tmp_path: Path) -> None:
        self.binary = gemini_binary()
        self.telemetry = tmp_path / "gemini-telemetry.log"
        self.project, stub_bin, tmp = scratch_folders(tmp_path)
        # (a closed port until run() puts the fake model's there)
        self.base_env = agent_env(dict(os.environ), url="http://127.0.0.1:9", stub_bin=stub_bin,
                                  tmp=tmp, telemetry=self.telemetry)
        self.session_id = session_in_shown_arm()  # a UUID (--session-id takes only those)

    def version(self) -> str:
        found = subprocess.run([self.binary, "--version"], capture_output=True, text=True, timeout=60,
                               input="", env=self.base_env, cwd=self.project, check=False)
        assert found.returncode == 0, f"{self.binary} --version failed: {found.stderr}"
        return found.stdout.strip()

    def wire(self) -> tuple[str, str, str]:
        """Settings as a person who signed in with an API key has them, then `remem setup`;
        the seeded lessons' ids (prompt, tool, stop)."""
        settings = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        # selectedType is what Gemini CLI writes once a person picks "Use Gemini API key" (with a
        # base URL in the environment and no choice written, it refuses to start: auth "gateway").
        settings.write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        }, indent=2) + "\n")
        wired = run_remem("setup", "--agent", "gemini", "--no-schedule", "--yes")
        assert wired.returncode == 0, wired.stderr
        self.settings = json.loads(settings.read_text())
        return seed_lessons_and_warm_up()

    def run(self, prompt: str = PROMPT, model: Any = scripted_model
            ) -> tuple[subprocess.CompletedProcess[str], FakeGemini]:
        fake = FakeGemini(model)
        with ServerThread(fake.app) as server:
            env = {**self.base_env, "GOOGLE_GEMINI_BASE_URL": server.url}
            run = run_gemini(
                [self.binary, "-p", prompt, "--model", MODEL, "--output-format", "stream-json",
                 # the scratch project is new to it: trusted for this run, tools approved
                 "--skip-trust", "--approval-mode", "yolo", "--session-id", self.session_id],
                cwd=self.project, env=env,
            )
        return run, fake


@pytest.mark.usefixtures("no_stray_ingest")
def test_real_gemini_cli_with_a_faked_model_runs_every_remem_hook(home, tmp_path):
    session = GeminiSession(tmp_path)
    seen_version = session.version()
    prompt_id, tool_id, stop_id = session.wire()
    # setup wires the events this release runs, and hooks are on by default here
    # (hooksConfig.enabled): nothing needs switching on.
    assert set(session.settings["hooks"]) == {"BeforeAgent", "AfterAgent", "SessionEnd"}
    assert session.settings.get("hooksConfig", {}).get("enabled", True) is True
    run, fake = session.run()
    sid = session.session_id
    where = f"(Gemini CLI {seen_version}; stderr: {run.stderr[-2000:]!r})"
    assert run.returncode == 0, where
    assert fake.errors == [], fake.errors
    assert [r["path"] for r in fake.requests if r["action"] is None] == []  # all went to models/*
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip().startswith("{")]
    assert [e["session_id"] for e in events if e["type"] == "init"] == [sid], events
    result = [e for e in events if e["type"] == "result"]
    assert len(result) == 1 and result[0]["status"] == "success", where
    said = "".join(e["content"] for e in events if e["type"] == "message" and e["role"] == "assistant")
    assert said == HAND_BACK + FINAL, said
    ran = [e for e in events if e["type"] == "tool_result"]
    assert [e["status"] for e in ran] == ["success"] and "stub pip" in ran[0]["output"], ran

    # Every hook Gemini CLI ran ended well: BeforeAgent on the prompt, AfterAgent (denied), then
    # both again on the retry that the denial's reason starts (not denied twice: stop_hook_active).
    calls = hook_calls(session.telemetry)
    assert all(c["success"] and c["exit_code"] == 0 and c["hook_name"] == "remem" for c in calls), calls
    assert all(c["input"]["session_id"] == sid and c["input"]["cwd"] == str(session.project)
               for c in calls), calls
    turns = [c for c in calls if c["hook_event_name"] != "SessionEnd"]  # it runs as the CLI exits
    assert [c["hook_event_name"] for c in turns] == [
        "BeforeAgent", "AfterAgent", "BeforeAgent", "AfterAgent"], calls
    prompt_hook, stop_hook, retry_prompt_hook, retry_stop_hook = turns
    assert prompt_hook["input"]["prompt"] == PROMPT
    out = json.loads(prompt_hook["stdout"])
    assert set(out) == {"hookSpecificOutput"} and out["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    prompt_ctx = out["hookSpecificOutput"]["additionalContext"]
    assert prompt_ctx.startswith("<remem-memory>") and f"- (correction) {PROMPT_LESSON}\n" in prompt_ctx
    # AfterAgent's prompt_response: the hand-back (0.61.0 follows it with its streamed pieces
    # again, joined by spaces); remem's deny goes back as the next prompt.
    assert stop_hook["input"]["stop_hook_active"] is False and HAND_BACK in stop_hook["input"]["prompt_response"]
    stop = json.loads(stop_hook["stdout"])
    assert set(stop) == {"decision", "reason"} and stop["decision"] == "deny"
    assert f"- (correction) {STOP_LESSON}\n" in stop["reason"]
    assert retry_prompt_hook["input"]["prompt"] == stop["reason"] and retry_prompt_hook["stdout"] == ""
    assert retry_stop_hook["input"]["stop_hook_active"] is True and retry_stop_hook["stdout"] == ""

    agent_turns = [b for b in fake.bodies("streamGenerateContent") if is_agent_turn(b)]
    assert len(agent_turns) == 3, [[c["role"] for c in b["contents"]] for b in agent_turns]
    first, after_tool, after_deny = agent_turns
    # The prompt hook's context reached the model with the prompt, once: the part after it in
    # the same user turn, wrapped by Gemini CLI in <hook_context> with < and > escaped.
    escaped = prompt_ctx.replace("<", "&lt;").replace(">", "&gt;")
    asked = [c for c in first["contents"] if PROMPT in texts(c)]
    assert len(asked) == 1 and asked[0]["role"] == "user", first["contents"]
    parts = texts(asked[0])
    assert parts[parts.index(PROMPT) + 1] == f"<hook_context>{escaped}</hook_context>", parts
    assert count_in(first, escaped) == 1 and count_in(first.get("systemInstruction"), PROMPT_LESSON) == 0
    # (The tool lesson has no channel in Gemini CLI: BeforeTool is not wired, so it never shows.)
    assert carries_shell_result(after_tool["contents"][-1])
    assert not any(count_in(b, TOOL_LESSON) for b in agent_turns)
    # The deny's reason is the next user turn, after the hand-back.
    assert after_deny["contents"][-1] == {"role": "user", "parts": [{"text": stop["reason"]}]}
    assert texts(after_deny["contents"][-2]) == [HAND_BACK]

    # Each decision is in `primes`, under Gemini CLI's own session id, in the shown arm (the id is
    # chosen for it; prime.holdout stays on).
    from remem.engine.store import Store

    with Store() as store:
        primes = [dict(r) for r in store.rows("SELECT * FROM primes ORDER BY id")]
    assert [(p["session_id"], p["agent"], p["event"], p["held_out"]) for p in primes] == [
        (sid, "gemini", "prompt", 0), (sid, "gemini", "stop", 0)]
    assert [json.loads(p["lesson_ids"]) for p in primes] == [[prompt_id], [stop_id]]
    assert primes[0]["query"] == PROMPT and HAND_BACK in primes[1]["query"]
    stop_block = stop["reason"][stop["reason"].index("<remem-memory>"):]
    assert [p["chars"] for p in primes] == [len(prompt_ctx), len(stop_block)]
    assert tool_id not in {i for p in primes for i in json.loads(p["lesson_ids"])}

    # SessionEnd's detached ingest read Gemini CLI's chat record into the memory, under the
    # record's own sessionId, the one its hooks send.
    episodes = wait_for_ingest(home, sid)
    assert episodes, f"no episode of session {sid} after the session-end ingest"
    assert {e["source"] for e in episodes} == {"chats"}
    stored = " ".join(f"{e['title']} {e['gist']} {e['detail']}" for e in episodes)
    assert COMMAND in stored and PROMPT in stored, episodes


# Gemini CLI records the BeforeAgent context in the prompt's own message (a `<hook_context>`
# part after the typed words, which are in `displayContent` alone) and the AfterAgent deny's
# reason as a plain user message; neither is the person's words.
@pytest.mark.usefixtures("no_stray_ingest")
def test_real_gemini_cli_session_is_stored_without_remems_own_text(home, tmp_path):
    session = GeminiSession(tmp_path)
    session.wire()
    run, fake = session.run()
    # What this test is not about fails as a failure, never as the expected one (not assert).
    if run.returncode != 0 or fake.errors:
        pytest.fail(f"gemini exited {run.returncode}; model errors {fake.errors}; "
                    f"stderr: {run.stderr[-2000:]!r}")
    shown = [c["hook_event_name"] for c in hook_calls(session.telemetry) if c["stdout"]]
    if shown != ["BeforeAgent", "AfterAgent"]:
        pytest.fail(f"remem's hooks did not answer the prompt and the hand-back once each: {shown}")
    episodes = wait_for_ingest(home, session.session_id)
    stored = " ".join(f"{e['title']} {e['gist']} {e['detail']}" for e in episodes)
    if PROMPT not in stored or COMMAND not in stored:
        pytest.fail(f"the session-end ingest did not store the session: {episodes}")

    from remem.hooks.adapters import STOP_REASON

    # The person corrected nothing; what remem put into the conversation is not their words.
    assert [e["kind"] for e in episodes if e["kind"] == "correction"] == [], episodes
    assert "remem-memory" not in stored and "hook_context" not in stored, episodes
    assert STOP_REASON not in stored and not any(text in stored for text, _, _ in LESSONS), episodes


# A prompt naming a file with @ makes Gemini CLI read it and append its text to the prompt's
# own message, between its reference markers; the file's words are not the person's.
FILE_WORDS = "No, never store money as a float; use integer cents instead."
AT_PROMPT = "Summarise @notes.md for me"


@pytest.mark.usefixtures("no_stray_ingest")
def test_real_gemini_cli_prompt_naming_a_file_is_stored_without_the_files_text(home, tmp_path):
    session = GeminiSession(tmp_path)
    (session.project / "notes.md").write_text(f"# Money\n\n{FILE_WORDS}\n")
    session.wire()
    run, fake = session.run(AT_PROMPT, lambda model, body: [text_part("Money is kept in cents.")])
    if run.returncode != 0 or fake.errors:
        pytest.fail(f"gemini exited {run.returncode}; model errors {fake.errors}; "
                    f"stderr: {run.stderr[-2000:]!r}")
    agent_turns = [b for b in fake.bodies("streamGenerateContent") if is_agent_turn(b)]
    # the file's text did reach the model with the prompt: Gemini CLI read @notes.md
    if not agent_turns or not count_in(agent_turns[0], FILE_WORDS):
        pytest.fail(f"Gemini CLI did not send notes.md's text with the prompt: {agent_turns[:1]}")
    episodes = wait_for_ingest(home, session.session_id)
    stored = " ".join(f"{e['title']} {e['gist']} {e['detail']}" for e in episodes)
    if "Summarise" not in stored:
        pytest.fail(f"the session-end ingest did not store the prompt: {episodes}")
    assert "integer cents" not in stored and "Content from" not in stored, episodes
    assert [e for e in episodes if e["kind"] == "correction"] == [], episodes


def test_the_faked_model_answers_streamed_plain_and_count_tokens_as_the_gemini_api():
    """The stand-in model itself, no agent needed: the server-sent events rebuild the scripted
    parts (text in pieces, the call whole, finishReason and usage on the last), the plain answer
    equals them, countTokens answers, and every request is kept with its model and action."""
    import urllib.request

    parts = [text_part("Running it now, then reporting back."),
             function_call_part(SHELL_TOOL, {"command": COMMAND})]
    fake = FakeGemini(lambda model, body: parts)
    ask = json.dumps({"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}).encode()

    def post(url: str) -> tuple[str, str]:
        request = urllib.request.Request(url, data=ask, headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.headers.get("content-type", ""), response.read().decode()

    with ServerThread(fake.app) as server:
        base = f"{server.url}/v1beta/models/{MODEL}"
        streamed_type, streamed = post(f"{base}:streamGenerateContent?alt=sse")
        plain_type, plain = post(f"{base}:generateContent")
        _, counted = post(f"{base}:countTokens")
    assert streamed_type.startswith("text/event-stream") and plain_type.startswith("application/json")
    chunks = [json.loads(line[len("data: "):]) for line in streamed.splitlines() if line.startswith("data: ")]
    assert len(chunks) > 2
    rebuilt = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in rebuilt) == parts[0]["text"]
    assert [p for p in rebuilt if "functionCall" in p] == [parts[1]]
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None] * (len(chunks) - 1) + ["STOP"]
    assert "usageMetadata" in chunks[-1] and all("usageMetadata" not in c for c in chunks[:-1])
    assert json.loads(plain)["candidates"][0]["content"] == {"role": "model", "parts": parts}
    assert json.loads(counted)["totalTokens"] > 0
    assert [(r["model"], r["action"]) for r in fake.requests] == [
        (MODEL, "streamGenerateContent"), (MODEL, "generateContent"), (MODEL, "countTokens")]
    assert fake.errors == []
