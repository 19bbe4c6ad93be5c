"""What every source is parsed into: a Session of Turns, with tool calls paired to results.

Claude Code transcripts, Codex rollouts, exported chats and conversation events all become
this shape, so the detectors and ingest never care where a conversation came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    """One tool call the assistant made, with the result attached when it came back."""

    id: str
    name: str
    input: Any = None
    result: str | None = None
    is_error: bool = False
    rejected: bool = False  # the person refused the call (permission denied by the user)
    interrupted: bool = False
    result_at: str | None = None  # when the result came back (an error is dated by it), if known


@dataclass
class Turn:
    """One message in the conversation. role: 'user' or 'assistant'."""

    role: str
    text: str = ""
    at: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    interrupt: bool = False  # the person pressed stop / "[Request interrupted by user]"
    uuid: str | None = None


@dataclass
class Session:
    id: str
    source: str  # claude-code, codex, chats, events
    path: str | None = None
    cwd: str | None = None
    started: str | None = None
    ended: str | None = None
    turns: list[Turn] = field(default_factory=list)
    malformed_lines: int = 0
    torn_tail: bool = False  # the last line was incomplete (a file still being written)
    meta: dict[str, Any] = field(default_factory=dict)

    def user_turns(self) -> list[Turn]:
        """The person's turns (serves tests and tools; the engine walks `turns` itself)."""
        return [t for t in self.turns if t.role == "user"]

    def tool_calls(self) -> list[ToolCall]:
        return [c for t in self.turns for c in t.tool_calls]
