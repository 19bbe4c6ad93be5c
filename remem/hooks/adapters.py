"""Each agent's hook JSON: what to read from its input, what shape to print.

Claude Code and Codex: `hookSpecificOutput.additionalContext` with `hookEventName`
(UserPromptSubmit, PreToolUse); Stop may block once with {"decision": "block", "reason"}.
Gemini CLI: BeforeAgent takes `hookSpecificOutput.additionalContext`; AfterAgent may deny
the response once with a reason (sent back to the agent as a new prompt); BeforeTool has no
context channel (only deny, which would stop the call), so pre-tool prints nothing there.
Cursor: beforeSubmitPrompt answers {"continue": true} and has no context channel; Cursor
reads remem over MCP. Stdout carries JSON only; an empty stdout means "carry on".
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

AGENTS = ("claude-code", "codex", "gemini", "cursor")
TOOL_TEXT_CAP = 2000
# The hookEventName each agent expects per remem event (None: no context channel).
EVENT_NAMES: dict[str, dict[str, str | None]] = {
    "claude-code": {"prompt": "UserPromptSubmit", "pre-tool": "PreToolUse", "stop": "Stop",
                    "session-end": "SessionEnd"},
    "codex": {"prompt": "UserPromptSubmit", "pre-tool": "PreToolUse", "stop": "Stop",
              "session-end": "SessionEnd"},
    "gemini": {"prompt": "BeforeAgent", "pre-tool": None, "stop": "AfterAgent",
               "session-end": "SessionEnd"},
    "cursor": {"prompt": "beforeSubmitPrompt", "pre-tool": None, "stop": None,
               "session-end": None},
}


class HookCall:
    """What remem reads from one hook call (a plain class: dataclasses cost the hook ~5 ms)."""

    __slots__ = ("text", "session_id", "cwd", "stop_hook_active", "transcript_path", "command")

    def __init__(self, text: str, session_id: str | None, cwd: str | None,
                 stop_hook_active: bool = False, transcript_path: str | None = None,
                 command: str | None = None) -> None:
        self.text = text
        self.session_id = session_id
        self.cwd = cwd
        self.stop_hook_active = stop_hook_active
        self.transcript_path = transcript_path
        self.command = command  # the shell command a pre-tool call runs, if it runs one


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def tool_text(name: Any, tool_input: Any) -> str:
    """A tool call as text: its name and the string values of its input (commands, paths…)."""
    from remem.engine.toolresult import json_or_raw  # json and re only: the hook stays light

    parts = [_str(name)]
    tool_input = json_or_raw(tool_input)
    if isinstance(tool_input, str):
        parts.append(tool_input)
    elif isinstance(tool_input, dict):
        for key, value in tool_input.items():
            if isinstance(value, str):
                parts.append(value)
            elif isinstance(value, (int, float, bool)) and key in ("timeout",):
                continue
            elif isinstance(value, (list, dict)):
                parts.append(json.dumps(value, ensure_ascii=False)[:500])
    return " ".join(p for p in parts if p)[:TOOL_TEXT_CAP]


def _texts(content: Any) -> list[str]:
    """The text of a transcript message's content: a string, or its text parts that are strings."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [c["text"] for c in content
            if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)]


TRANSCRIPT_TAIL = 262_144  # bytes of a transcript the stop hook reads, from its end


def _tail_lines(path: str | None) -> list[str]:
    """The lines of a transcript's last TRANSCRIPT_TAIL bytes, last first; [] when there is no
    regular file to read (/dev/zero, a FIFO: no end, or no answer)."""
    if not path:
        return []
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return []
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - TRANSCRIPT_TAIL))
            tail = fh.read(TRANSCRIPT_TAIL).decode("utf-8", errors="replace")
    except OSError:
        return []
    return tail.splitlines()[::-1]


def _last_assistant_from_transcript(path: str | None) -> str:
    """The assistant's text since the person's last prompt in a Claude Code transcript (its last
    256 KB), or "". Records of another shape are skipped; a subagent's (sidechain) are not the
    hand-back; an earlier turn's answer is never taken for this one's."""
    for line in _tail_lines(path):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("isSidechain") is True:
            continue
        message = rec.get("message")
        if not isinstance(message, dict):
            continue
        texts = _texts(message.get("content"))
        if rec.get("type") == "user":
            # A prompt ends the search (tool results, also "user" records, do not): what came
            # before it answered an earlier turn. isMeta records are the harness's, not the person's.
            if rec.get("isMeta") is not True and any(t.strip() for t in texts):
                return ""
            continue
        if rec.get("type") != "assistant" or message.get("model") == "<synthetic>":
            continue  # <synthetic>: written by the harness (an API error), not the agent
        if any(t.strip() for t in texts):
            return "\n".join(texts)
    return ""


def _last_assistant_from_rollout(path: str | None) -> str:
    """The agent's last answer in a Codex rollout (its last 256 KB), or "": the output_text of
    the last `response_item` assistant message (`{"type": "response_item", "payload": {"type":
    "message", "role": "assistant", "content": [{"type": "output_text", "text": …}]}}`), after
    the person's last message. Other records (tool calls, reasoning, the UI's event_msg copies)
    are passed over; records of another shape are skipped."""
    for line in _tail_lines(path):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        item = rec.get("payload") if isinstance(rec, dict) and rec.get("type") == "response_item" else None
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        content = item.get("content")
        parts = [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)
                 and c.get("type") in ("output_text", "input_text", "text")] \
            if isinstance(content, list) else [content] if isinstance(content, str) else []
        if not any(p.strip() for p in parts):
            continue
        if item.get("role") == "user" and not _codex_harness("\n".join(parts)):
            return ""  # the person's prompt: what came before it answered an earlier turn
        if item.get("role") == "assistant":
            return "\n".join(parts)
    return ""


def _codex_harness(text: str) -> bool:
    """Whether a rollout's user message is Codex's own (its environment, AGENTS.md, a note
    that a turn was aborted: a whole message in one snake_case tag), not the person's."""
    from remem.engine.codex import _is_harness, persons_words  # only when a rollout is read: rare

    return _is_harness(text) or not persons_words(text)


def read(agent: str, event: str, payload: dict[str, Any]) -> HookCall | None:
    """What remem needs from the agent's input; None when this agent/event has no channel."""
    if EVENT_NAMES[agent].get(event) is None:
        return None
    # Both import nothing heavy (text: nothing at all; toolresult: json and re).
    from remem.engine.projects import normal_folder  # os and text only: the store loads it anyway
    from remem.engine.text import clean_text
    from remem.engine.toolresult import json_or_raw

    session = payload.get("session_id") or payload.get("conversation_id")
    cwd = _str(payload.get("cwd"))
    roots = payload.get("workspace_roots")
    if not cwd and isinstance(roots, list) and roots and isinstance(roots[0], str):
        cwd = roots[0]
    transcript = clean_text(_str(payload.get("transcript_path"))) or None
    command = None
    if event == "prompt":
        if agent == "cursor":
            return None  # beforeSubmitPrompt cannot carry context
        text = _str(payload.get("prompt"))
        from remem.engine.prime import STOP_REASON  # prime chooses the lessons next anyway

        if text.lstrip().startswith(STOP_REASON):
            text = ""  # remem's own stop reason, sent back as a prompt (Gemini CLI): not the person's
    elif event == "pre-tool":
        text = tool_text(payload.get("tool_name"), payload.get("tool_input"))
        from remem.engine.shell_words import shell_command

        command = shell_command(payload.get("tool_name"), json_or_raw(payload.get("tool_input")))
    elif event == "stop":
        text = _str(payload.get("last_assistant_message")) or _str(payload.get("prompt_response"))
        if not text and agent == "claude-code":
            text = _last_assistant_from_transcript(transcript)
        elif not text and agent == "codex":  # its transcript_path is the session's rollout
            text = _last_assistant_from_rollout(transcript)
    else:
        text = ""
    return HookCall(
        text=clean_text(text), session_id=clean_text(str(session)) if session else None,
        cwd=normal_folder(clean_text(cwd)) if cwd else None, stop_hook_active=bool(payload.get("stop_hook_active")),
        transcript_path=transcript, command=clean_text(command) if command else None,
    )


def __getattr__(name: str) -> Any:
    """STOP_REASON (the stop hook's reason, before its lessons) lives in remem.engine.prime, read
    from there only when asked for: importing this module stays light for every hook."""
    if name == "STOP_REASON":
        from remem.engine.prime import STOP_REASON

        return STOP_REASON
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def render(agent: str, event: str, block: str) -> str:
    """The agent's JSON carrying block to the model."""
    name = EVENT_NAMES[agent].get(event)
    if not name or not block:
        return neutral(agent, event)
    if event == "stop":
        # (prime is loaded already: the stop hook has just chosen the block with it)
        from remem.engine.prime import STOP_REASON

        decision = "deny" if agent == "gemini" else "block"
        return json.dumps({"decision": decision, "reason": f"{STOP_REASON}\n{block}"})
    # ASCII JSON (\u escapes): whatever encoding the agent's pipe has, what is written arrives,
    # and a lesson recorded as shown is shown.
    return json.dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": block}})


def neutral(agent: str, event: str) -> str:
    """What to print when there is nothing to add (or something failed): carry on."""
    if agent == "cursor" and event == "prompt":
        return json.dumps({"continue": True})
    return ""
