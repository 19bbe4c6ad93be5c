"""What every detector shares: the Finding it returns, how findings are shortened and
deduplicated, and what a tool call or an offer does (the command it ran, its action kind).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from remem.engine.session import ToolCall


@dataclass
class Finding:
    kind: str  # correction, error, surprise, environment
    title: str  # stable for the same finding across re-reads of the session
    text: str  # what it says: for a correction, the person's words alone
    detail: str = ""
    at: str | None = None
    turn: int = -1
    tags: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def shorten(text: str | None, width: int = 100) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


# Where one sentence ends and the next starts: surprises are read a sentence at a time, and a
# message whose first sentence asks is a question, not a correction.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def describe_call(call: ToolCall) -> str:
    """A call as a title names it: the tool and what it ran or touched ("Bash: git push")."""
    inp = call.input if isinstance(call.input, dict) else {}
    arg = command_of(inp) or inp.get("file_path") or inp.get("path") or inp.get("pattern") \
        or inp.get("url") or inp.get("query") or ""
    return f"{call.name}: {shorten(str(arg), 80)}" if arg else call.name


def dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per title within a session: the same error repeated is one episode."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        key = (f.kind, f.title)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


# --------------------------------------------------------------------------- action kinds

_TEST_CMD = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?test|cargo\s+test|go\s+test|mix\s+test|make\s+(test|check)|"
    r"gradle\w*\s+test|mvn\s+test|dotnet\s+test)\b"
)
_INSTALL_CMD = re.compile(
    r"\b(pip3?\s+install|uv\s+(add|pip\s+install|sync)|poetry\s+add|pipx\s+install|conda\s+install|"
    r"(npm|pnpm|bun)\s+(install|i|add)\b|yarn\s+add|cargo\s+(add|install)|go\s+(get|install)|"
    r"gem\s+install|bundle\s+install|brew\s+install|(apt|apt-get|dnf|yum|pacman|apk)\s+(install|add|-S)|"
    r"mix\s+deps\.get)"
)
_EDIT_TOOLS = {"edit", "write", "multiedit", "notebookedit", "str_replace_based_edit_tool",
               "apply_patch", "create_file", "edit_file", "write_file", "str_replace"}
_TEXT_KINDS = (
    ("push", re.compile(r"\bpush(ing)?\b|\bopen (a |the )?(pull request|pr)\b|\bdeploy\b", re.I)),
    ("commit", re.compile(r"\bcommit(ting)?\b", re.I)),
    ("install", re.compile(r"\binstall(ing)?\b|\badd (it |them |this )?(as )?(a )?(dependency|dependencies|package)\b", re.I)),
    ("run_tests", re.compile(r"\b(run|rerun|re-run)(ning)? (the |all |your )?(unit |integration )?(tests?|test suite|specs?)\b|\btest suite\b", re.I)),
    ("edit", re.compile(
        r"\b(edit|change|update|fix|modify|refactor|rename|rewrite|write|create|implement|apply|"
        r"add|remove|delete|replace|patch|move|clean up|convert|migrate|make the change)\b", re.I)),
)


def command_of(tool_input: Any) -> str:
    """The shell command a tool call ran, as one string ('' if it ran none).

    Claude Code gives a string; Codex a list, usually ["bash", "-lc", "<script>"].
    """
    if not isinstance(tool_input, dict):
        return ""
    cmd = tool_input.get("command") or tool_input.get("cmd") or ""
    if isinstance(cmd, list):
        parts = [str(p) for p in cmd]
        if len(parts) >= 3 and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and parts[1] in ("-lc", "-c"):
            return parts[-1]
        return " ".join(parts)
    return str(cmd)


def action_kind(item: Any) -> str:
    """The kind of action an offer (text) or a tool call proposes: edit, run_tests, commit,
    install, push or other. Accepts a ToolCall, a {"name", "input"} dict, or text."""
    name = None
    tool_input: Any = None
    if isinstance(item, ToolCall):
        name, tool_input = item.name, item.input
    elif isinstance(item, dict):
        name, tool_input = item.get("name"), item.get("input")
    if name is not None:
        lname = str(name).lower()
        if lname in _EDIT_TOOLS:
            return "edit"
        command = ""
        if isinstance(tool_input, dict):
            command = command_of(tool_input)
        elif isinstance(tool_input, (str, list)):
            command = " ".join(tool_input) if isinstance(tool_input, list) else tool_input
        if command:
            return _command_kind(command)
        return "other"
    return _text_kind(str(item or ""))


def _command_kind(command: str) -> str:
    if re.search(r"\bgit\s+push\b", command):
        return "push"
    if re.search(r"\bgit\s+commit\b", command):
        return "commit"
    if _INSTALL_CMD.search(command):
        return "install"
    if _TEST_CMD.search(command):
        return "run_tests"
    if re.search(r"\bsed\s+-i\b|>\s*\S+\.\w+\s*$|\btee\s+\S", command):
        return "edit"
    return "other"


def _text_kind(text: str) -> str:
    for kind, pattern in _TEXT_KINDS:
        if pattern.search(text):
            return kind
    return "other"

