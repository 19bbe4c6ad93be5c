"""Reading a tool result's outcome when the source carries no is_error flag.

Claude Code and the Anthropic format say outright when a tool call failed. Codex rollouts,
OpenAI chats and Gemini chats mostly do not: the failure is inside the output text (an exit
code, a JSON `error` key, a traceback). These helpers read it the same way for every source.
"""

from __future__ import annotations

import json
import re
from typing import Any

# The line a harness adds with a command's exit status ("Exit code 1", "exit status: 2").
EXIT_LINE = re.compile(
    r"^(?:exit code|exit status|process exited with code)[:\s]+(-?\d+)", re.IGNORECASE | re.MULTILINE
)
# What a failed call's output starts with, across the tools and harnesses we read.
_FAILED_PREFIXES = (
    "error:", "error ", "err:", "traceback (most recent call last)", "exception:",
    "failed to ", "execution error", "unsupported call", "command failed", "script failed",
    "fatal:", "permission denied",
)
_REJECTED = re.compile(r"\b(rejected|declined|denied|aborted) by (the )?user\b", re.IGNORECASE)
# session.meta[TOOL_USE_ERRORS]: the ids of the calls Claude Code answered itself, inside
# <tool_use_error>, before the tool ran (a call that broke the harness's rules, a file that is
# not there). The transcript reader keeps their results without the tags; the detectors ask.
TOOL_USE_ERRORS = "tool_use_errors"
# Claude Code's answer when a call needs a permission the person has not given ("Claude
# requested permissions to write to CLAUDE.md, but you haven't granted it yet."): their
# permission settings, or a prompt they did not approve, said no to that action. A refusal,
# not a file or system permission error.
_NOT_GRANTED = re.compile(r"(?:Error:\s*)?Claude requested permissions? to [^\n]*?\bhaven'?t granted it")


def json_or_raw(raw: Any) -> Any:
    """Tool-call arguments arrive as a JSON string; keep the raw string when it is not JSON."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _json_object(text: str) -> dict | None:
    """The JSON object a tool output is, when it is one."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def exit_code(text: str) -> int | None:
    """The exit code a command output reports, from its JSON metadata or an `Exit code: N` line."""
    if not text:
        return None
    value = _json_object(text)
    if value is not None:
        code = _code_in(value)
        if code is not None:
            return code
    match = EXIT_LINE.search(text[:2000])
    return int(match.group(1)) if match else None


def _code_in(value: dict[str, Any]) -> int | None:
    for holder in (value.get("metadata"), value):
        if isinstance(holder, dict):
            for key in ("exit_code", "exitCode", "returncode", "status_code"):
                code = holder.get(key)
                if isinstance(code, int) and not isinstance(code, bool):
                    return code
    return None


def unwrap(text: str) -> str:
    """The output inside Codex's legacy `{"output": ..., "metadata": {...}}` wrapper, else text."""
    stripped = (text or "").lstrip()
    if stripped.startswith("{") and '"output"' in stripped:
        try:
            value = json.loads(stripped)
        except ValueError:
            return text
        if isinstance(value, dict) and isinstance(value.get("output"), str):
            return value["output"]
    return text


def permission_not_granted(text: str | None) -> bool:
    """The call was not run because the person had not granted it (see _NOT_GRANTED)."""
    return _NOT_GRANTED.match((text or "").lstrip()[:2000]) is not None


def looks_rejected(text: str) -> bool:
    """The person refused the call (an approval prompt answered no, or a permission they had
    not granted)."""
    head = (text or "")[:300]
    return ("user" in head.lower() and bool(_REJECTED.search(head))) or permission_not_granted(text)


def looks_failed(text: str) -> bool:
    """A tool output that reports failure: a non-zero exit code, an error key, an error prefix."""
    if not text:
        return False
    code = exit_code(text)
    if code is not None:
        return code != 0
    value = _json_object(text)
    if value is not None:
        if value.get("success") is False or value.get("isError") is True or value.get("is_error") is True:
            return True
        if value.get("error") not in (None, "", False):
            return True
    head = text.lstrip()[:200].lower()
    return head.startswith(_FAILED_PREFIXES)


def _scrub(text: Any) -> Any:
    if isinstance(text, str):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text.encode("utf-8", "replace").decode("utf-8")
    return text


def scrub_surrogates(session: Any) -> None:
    """Replace lone surrogates ("\\ud800" escapes in the JSON) that SQLite cannot store.

    Called only when the raw file contains such an escape, so the common case costs nothing.
    """
    for turn in session.turns:
        turn.text = _scrub(turn.text)
        for call in turn.tool_calls:
            call.result = _scrub(call.result)
            call.name = _scrub(call.name)
            if isinstance(call.input, str):
                call.input = _scrub(call.input)
            elif call.input is not None:
                dumped = json.dumps(call.input, ensure_ascii=False, default=str)
                if _scrub(dumped) is not dumped:  # something inside was not storable
                    call.input = _scrub(dumped)
    session.id = _scrub(session.id)
    session.cwd = _scrub(session.cwd)
