"""A session's own memory: its title, its gist (what was asked, what was done, how it ended)
and its detail (every prompt), deterministic; a local model may write the gist instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from remem.engine.detect_common import (EDIT_TOOLS, FINDING_KINDS, command_of, patch_of, patched_files, quote,
                                        shorten)
from remem.engine.projects import project_name
from remem.engine.session import Session, ToolCall


def first_ask(session: Session) -> str:
    """What the person asked first: their first words, or the slash command that opened it."""
    opening = session.meta.get("opening_command")
    if opening:
        return str(opening)
    for turn in session.turns:
        if turn.role == "user" and turn.text:
            return turn.text
    commands = session.meta.get("commands") or []
    return str(commands[0]) if commands else ""


def prompts_of(session: Session) -> list[str]:
    """Everything the person wrote, in order: the slash command that opened the session, then
    each message in words."""
    opening = session.meta.get("opening_command")
    return ([str(opening)] if opening else []) + \
        [t.text for t in session.turns if t.role == "user" and t.text]


# The session episode's detail lists every prompt, so later requests are found too (the title
# and gist hold only the first): each one cut at _PROMPT_CHARS, all of them at _PROMPTS_CHARS.
PROMPTS_HEAD = "The person wrote:"
_PROMPT_CHARS = 1_000
_PROMPTS_CHARS = 24_000


def prompts_detail(session: Session) -> str:
    """The session episode's detail: one line per prompt ("- …"), capped."""
    prompts = prompts_of(session)
    if not prompts:
        return ""
    lines = [PROMPTS_HEAD]
    used = 0
    for n, prompt in enumerate(prompts):
        line = f"- {shorten(prompt, _PROMPT_CHARS)}"
        if used + len(line) > _PROMPTS_CHARS:
            lines.append(f"(and {len(prompts) - n} more)")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def edited_files(call: ToolCall) -> list[str]:
    """The files an edit call changes: an edit tool's `file_path`, or the files a Codex patch
    names ("*** Update File: src/order.js"), whether apply_patch is its own tool or run by
    the shell; [] for any other call."""
    inp = call.input if isinstance(call.input, dict) else {}
    if call.name.lower() in EDIT_TOOLS and inp.get("file_path"):
        return [str(inp["file_path"])]
    return patched_files(patch_of(call))


def session_gist(session: Session, found: dict[str, Any]) -> tuple[str, str]:
    """A deterministic title and gist: what was asked, what was done, how it ended."""
    asked = first_ask(session)
    project = project_name(session.cwd)
    title = shorten(asked, 110) or f"session {session.id[:8]}"
    if project:
        title = f"{project}: {title}"
    calls = session.tool_calls()
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.name] = counts.get(call.name, 0) + 1
    parts = [f"Asked: {shorten(asked, 300)}" if asked else "Asked: (no words from the person)"]
    if calls:
        tools = ", ".join(f"{n}×{c}" if c > 1 else n for n, c in sorted(counts.items(), key=lambda kv: -kv[1])[:6])
        edited: list[str] = []
        ran: list[str] = []
        tried: list[tuple[str, str]] = []  # (what was tried, how it ended): refused or failed
        for call in calls:
            inp = call.input if isinstance(call.input, dict) else {}
            # Recall gives the gist to agents: a call refused or failed did not do what it
            # asked, so it is told apart, never listed as done.
            outcome = "refused" if call.rejected else "failed" if call.is_error else ""
            files = edited_files(call)
            if files:
                for name in (Path(f).name for f in files):
                    if outcome:
                        tried.append((f"edit {name}", outcome))
                    elif name not in edited:
                        edited.append(name)
            elif command_of(inp):
                command = shorten(command_of(inp), 60)
                if call.rejected:
                    tried.append((f"run {command}", outcome))
                elif len(ran) < 3:  # a command that failed still ran: it says so
                    ran.append(f"{command} (failed)" if outcome else command)
        # an edit that failed and then went through is an edit; each attempt told once
        tried = list(dict.fromkeys(t for t in tried if t[0] not in {f"edit {n}" for n in edited}))
        did = f"Did: {len(calls)} tool calls ({tools})"
        if edited:
            did += f"; edited {', '.join(edited[:5])}" + (" …" if len(edited) > 5 else "")
        if ran:
            did += f"; ran {'; '.join(ran)}"
        if tried:
            did += "; tried to " + ", ".join(f"{what} ({how})" for what, how in tried[:3]) \
                + (" …" if len(tried) > 3 else "")
        parts.append(did)
    requests = len(prompts_of(session))  # a slash command that opened the session is one
    if requests > 1:
        parts.append(f"The person wrote {requests} messages.")
    noted = [f"{len(found[k])} {k}{'s' if len(found[k]) != 1 else ''}" for k in FINDING_KINDS if found.get(k)]
    if noted:
        parts.append("Noted: " + ", ".join(noted) + ".")
    parts.append("Ended: " + ending(session))
    return title, "\n".join(parts)


def ending(session: Session) -> str:
    """How the session ended, for the gist's \"Ended:\"."""
    if not session.turns:
        return "nothing was said."
    last = session.turns[-1]
    if last.role == "user":
        if last.interrupt:
            return "the person interrupted."
        return f"with the person's message: {shorten(last.text, 200)}"
    if last.tool_calls and any(c.rejected for c in last.tool_calls):
        return "the person refused a tool call."
    if last.tool_calls and any(c.is_error for c in last.tool_calls) and not last.text:
        return "with a failed tool call."
    if last.text:
        return quote(last.text, 300)  # the agent's Markdown as plain text
    return "with a tool call."


def llm_gist(session: Session, gist: str, cfg: dict[str, Any]) -> str | None:
    from remem.engine import llm

    if not llm.enabled(cfg):
        return None
    lines = []
    for turn in session.turns[:60]:
        if turn.text:
            lines.append(f"{turn.role}: {shorten(turn.text, 400)}")
        for call in turn.tool_calls[:5]:
            how = " (refused)" if call.rejected else " (failed)" if call.is_error else ""
            lines.append(f"  tool {call.name}{how}")
    prompt = (
        "Summarise this coding-agent session in at most 4 sentences: what the person asked, "
        "what was done, and how it ended. Plain text.\n\n" + "\n".join(lines)[:8000]
        + f"\n\nA mechanical summary for reference:\n{gist}"
    )
    text = llm.complete(prompt, system="You write terse, factual session notes.", cfg=cfg)
    if not text:
        return None
    text = shorten(text, 2000)
    from remem.engine.share_safety import incoming
    from remem.log import log

    # Recall gives gists to agents: the model's words pass the checks a received lesson passes
    # (instruction-like phrasing, secrets, URLs, shell pipelines, hidden characters), else the
    # mechanical gist is kept.
    if incoming(text):
        log("llm", "the model's session summary failed the safety checks; the mechanical gist is kept")
        return None
    return text


def llm_detail(gist: str, prompts: str) -> str:
    """A session episode's detail when a local model wrote its gist: the mechanical gist, then
    the prompts."""
    return f"{gist}\n\n{prompts}" if prompts else gist
