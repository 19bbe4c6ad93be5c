"""Conversations exported from a model's API -> Session, for the same detectors.

A file is JSON (one conversation, a list of them, or {"conversations": [...]}) or JSON lines
(one conversation per line; a file whose lines are single messages is one conversation).
Each conversation is read in the format it is written in, detected on its own:

- OpenAI Chat Completions: {"messages": [...]} with roles system / developer / user /
  assistant / tool, assistant `tool_calls` (arguments a JSON string), tool `tool_call_id`.
- Anthropic Messages: top-level "system", content blocks text / tool_use / tool_result
  (with is_error) / thinking.
- Gemini: {"contents": [{"role": "user" | "model", "parts": [text | functionCall |
  functionResponse]}]}.
- The data exports of the chat apps: ChatGPT's conversations.json (a `mapping` tree) and
  Claude.ai's (`chat_messages` with sender human / assistant).

Optional per message: "timestamp", "created_at" or "at" (ISO 8601 or epoch seconds). A
conversation may carry "id", "cwd" and a start time the same way. Unknown roles, part types
and fields are skipped; a malformed line or message never stops the rest. The last line of a
JSONL file, with no newline after it and not JSON, is a file still being written (a live
Gemini CLI session): it is not counted as malformed, and ingest reads the file again next time
(`torn_tail`, `meta["complete_bytes"]`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from remem.engine import clock
from remem.engine.prime import OPEN_TAG, STOP_REASON
from remem.engine.session import Session, ToolCall, Turn
from remem.engine.store import stable_id
from remem.engine.toolresult import json_or_raw, looks_failed, looks_rejected, scrub_surrogates


class NotAConversation(ValueError):
    """A file that holds no conversation at all (a settings file, a ChatGPT export's user.json)."""


_TIME_KEYS = ("timestamp", "created_at", "at", "create_time", "time", "startTime")
_ID_KEYS = ("id", "conversation_id", "session_id", "sessionId", "uuid")
_TITLE_KEYS = ("title", "name")
# The ids ChatGPT and Claude.ai give their conversations: one conversation each, for good.
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def _when(obj: dict[str, Any]) -> str | None:
    for key in _TIME_KEYS:
        value = obj.get(key)
        if value is None or isinstance(value, bool):
            continue
        try:
            if isinstance(value, (int, float)):
                seconds = value / 1000.0 if value > 1e11 else float(value)  # ms or s
                return clock.iso(datetime.fromtimestamp(seconds, tz=timezone.utc))
            if isinstance(value, str) and value.strip():
                return clock.iso(clock.parse(value.strip()))
        except (ValueError, OverflowError, OSError):
            continue
    return None


def _text_of(value: Any) -> str:
    """Text of a content value in any of the three formats; non-text parts skipped."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return value["text"]
        if "content" in value:
            return _text_of(value["content"])
        return ""
    if isinstance(value, list):
        out = []
        for part in value:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in ("text", "input_text",
                                                                         "output_text"):
                if isinstance(part.get("text"), str):
                    out.append(part["text"])
        return "\n".join(t for t in out if t)
    return ""


def _key(value: Any) -> str | None:
    """A value usable as a lookup key: strings only (a list or dict in a role is malformed)."""
    return value if isinstance(value, str) else None


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return _text_of(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


class _Conv:
    """Shared building: turns, a call index for pairing, and the last assistant turn."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.calls: dict[str, ToolCall] = {}
        self.by_name: dict[str, list[ToolCall]] = {}

    def say(self, role: str, text: str, at: str | None) -> Turn | None:
        if not text.strip():
            return None
        turn = Turn(role=role, text=text, at=at)
        self.turns.append(turn)
        return turn

    def assistant(self, at: str | None) -> Turn:
        if self.turns and self.turns[-1].role == "assistant":
            return self.turns[-1]
        turn = Turn(role="assistant", at=at)
        self.turns.append(turn)
        return turn

    def call(self, turn: Turn, call_id: Any, name: Any, args: Any) -> None:
        cid = str(call_id) if call_id not in (None, "") else f"call-{len(self.calls)}"
        call = ToolCall(id=cid, name=str(name or "tool"), input=args)
        turn.tool_calls.append(call)
        self.calls[cid] = call
        self.by_name.setdefault(call.name, []).append(call)

    def result(self, call_id: Any, name: Any, text: str, is_error: bool | None) -> None:
        call = self.calls.get(str(call_id)) if call_id not in (None, "") else None
        if call is None and name:  # Gemini without ids, OpenAI legacy `function` role
            pending = [c for c in self.by_name.get(str(name), []) if c.result is None]
            call = pending[0] if pending else None
        if call is None and call_id in (None, "") and not name:  # exports without ids
            call = next((c for c in reversed(list(self.calls.values())) if c.result is None), None)
        if call is None:
            return
        call.result = text
        call.rejected = looks_rejected(text)
        call.is_error = bool(is_error) if is_error is not None else looks_failed(text)


def detect_format(conv: dict[str, Any]) -> str:
    """The format of one conversation object (see _READERS)."""
    if isinstance(conv.get("contents"), list):
        return "gemini"
    if _is_gemini_cli(conv):
        return "gemini-cli"
    if isinstance(conv.get("mapping"), dict):
        return "chatgpt-export"
    if isinstance(conv.get("chat_messages"), list):
        return "claude-export"
    messages = conv.get("messages")
    if "system" in conv and not isinstance(conv.get("system"), dict):
        return "anthropic"
    if isinstance(messages, list):
        for m in messages:
            if not isinstance(m, dict):
                continue
            if m.get("role") in ("tool", "system", "developer", "function") or "tool_calls" in m:
                return "openai"
            content = m.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") in (
                        "tool_use", "tool_result", "thinking", "redacted_thinking"
                    ):
                        return "anthropic"
    return "openai"


def _openai(conv: dict[str, Any], c: _Conv) -> None:
    for m in conv.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role, at = m.get("role"), _when(m)
        if role in ("system", "developer"):
            continue
        if role == "user":
            c.say("user", _text_of(m.get("content")), at)
        elif role == "assistant":
            text = _text_of(m.get("content"))
            turn = c.say("assistant", text, at)
            calls = m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []
            legacy = m.get("function_call")
            if isinstance(legacy, dict):
                calls = calls + [{"id": None, "function": legacy}]
            for tc in calls:
                if not isinstance(tc, dict):
                    continue
                fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
                c.call(turn or c.assistant(at), tc.get("id"), fn.get("name") or tc.get("name"),
                       json_or_raw(fn.get("arguments", tc.get("arguments"))))
        elif role in ("tool", "function"):
            c.result(m.get("tool_call_id"), m.get("name"), _result_text(m.get("content")), None)


def _anthropic(conv: dict[str, Any], c: _Conv) -> None:
    for m in conv.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            continue
        role, at, content = m["role"], _when(m), m.get("content")
        if isinstance(content, str):
            c.say(role, content, at)
            continue
        if not isinstance(content, list):
            continue
        _blocks(c, role, at, content)


def _blocks(c: _Conv, role: str, at: str | None, content: list[Any]) -> None:
    """Anthropic content blocks in order: text gathers into a turn, tool_use attaches to the
    assistant turn it follows, tool_result pairs with its call (by id, else the latest open)."""
    texts: list[str] = []

    def flush() -> None:
        if texts:
            c.say(role, "\n".join(t for t in texts if t), at)
            texts.clear()

    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            if role == "assistant":
                flush()
            c.call(c.assistant(at), block.get("id"), block.get("name"), block.get("input"))
        elif kind == "tool_result":
            flag = block.get("is_error")
            c.result(block.get("tool_use_id"), block.get("name"),
                     _result_text(block.get("content", "")), flag if isinstance(flag, bool) else None)
        # thinking, redacted_thinking, image, document, server tools, anything newer: skipped
    flush()


def _gemini(conv: dict[str, Any], c: _Conv) -> None:
    for m in conv.get("contents") or []:
        if not isinstance(m, dict):
            continue
        # functionResponse parts come back as role user, or function / tool in older APIs
        role = {"user": "user", "model": "assistant", "assistant": "assistant",
                "function": "tool", "tool": "tool"}.get(_key(m.get("role", "user")))
        parts = m.get("parts")
        if role is None or not isinstance(parts, list):
            continue
        at = _when(m)
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
            fc = part.get("functionCall", part.get("function_call"))
            if isinstance(fc, dict):
                calls.append(fc)
            fr = part.get("functionResponse", part.get("function_response"))
            if isinstance(fr, dict):
                response = fr.get("response")
                failed = isinstance(response, dict) and response.get("error") not in (None, "")
                c.result(fr.get("id"), fr.get("name"), _result_text(response),
                         True if failed else None)
        turn = c.say(role, "\n".join(t for t in texts if t), at) if role != "tool" else None
        for fc in calls:
            c.call(turn if turn is not None and role == "assistant" else c.assistant(at),
                   fc.get("id"), fc.get("name"), fc.get("args"))


_GEMINI_CLI_TYPES = ("user", "gemini", "info", "error", "warning")


def _is_gemini_cli(conv: dict[str, Any]) -> bool:
    """A Gemini CLI session file (~/.gemini/tmp/<project>/chats/session-*.json): sessionId and
    messages typed "user" / "gemini", not roles."""
    messages = conv.get("messages")
    return "sessionId" in conv and isinstance(messages, list) and any(
        isinstance(m, dict) and m.get("type") in ("user", "gemini") and "role" not in m for m in messages)


# How Gemini CLI wraps a hook's added context (BeforeAgent's) in the prompt's own message.
_HOOK_CONTEXT = "<hook_context>"
# What Gemini CLI appends to a prompt that names `@file`s: the files' contents between these
# markers (its own stripReferenceContent removes the same span; cut off before the end marker,
# all from the opening one on), and a note naming `@agent`s.
_REFERENCED = re.compile(r"\n?--- Content from referenced (?:files|context) ---")
_REFERENCED_END = "--- End of content ---"
_AGENT_NOTE = re.compile(r"\n?<system_note>")
_AGENT_NOTE_END = re.compile(r"</system_note>\n?")


def _without_added_to_prompt(text: str) -> str:
    """`text` without the spans above, taken from left to right, each marker looked for once: a
    regex running lazily to a closing marker is quadratic on a paste of many unclosed openers."""
    kept: list[str] = []
    pos = 0
    referenced = _REFERENCED.search(text)
    note = _AGENT_NOTE.search(text)
    while referenced is not None or note is not None:
        if referenced is not None and (note is None or referenced.start() < note.start()):
            end = text.find(_REFERENCED_END, referenced.end())
            start, pos_after = referenced.start(), len(text) if end < 0 else end + len(_REFERENCED_END)
        elif note is not None:
            close = _AGENT_NOTE_END.search(text, note.end())
            if close is None:
                note = None  # no note closes after this one, so none after it does either
                continue
            start, pos_after = note.start(), close.end()
        kept.append(text[pos:start])
        pos = pos_after
        if referenced is not None and referenced.start() < pos:
            referenced = _REFERENCED.search(text, pos)
        if note is not None and note.start() < pos:
            note = _AGENT_NOTE.search(text, pos)
    kept.append(text[pos:])
    return "".join(kept)


def _persons_words(content: Any) -> str:
    """The text of a Gemini CLI "user" message without the context a hook added to it: Gemini
    CLI appends that as a part of its own, `<hook_context>…</hook_context>` (remem's lessons
    among them), and the contents of the files a prompt names with `@` (read as the person's,
    a file's text became their words, a "correction" among them). Its `displayContent` is no
    better a source: it is absent when nothing was added, and Gemini CLI passes the prompt's
    along its turn, so the retry a stop hook's deny starts (its reason the content) may carry
    the typed prompt there."""
    if isinstance(content, str):
        text = "" if content.lstrip().startswith(_HOOK_CONTEXT) else content
    else:
        if isinstance(content, list):
            content = [p for p in content if not (isinstance(p, dict) and isinstance(p.get("text"), str)
                                                  and p["text"].lstrip().startswith(_HOOK_CONTEXT))]
        text = _text_of(content)
    if "--- Content from referenced" in text or "<system_note>" in text:
        text = _without_added_to_prompt(text).strip()
    return text


def _gemini_cli(conv: dict[str, Any], c: _Conv) -> None:
    """Gemini CLI's own record: each message {id, timestamp, type, content}; a "gemini" one
    holds its toolCalls with their results and status. info/error/warning lines are the
    CLI's own notices, not words of the person or the model; nor is a "user" message holding
    only a tool's result (its call holds it too), a hook's added context, or remem's own stop
    hook reason (Gemini CLI sends it as the next prompt)."""
    for m in conv.get("messages") or []:
        if not isinstance(m, dict) or m.get("type") not in ("user", "gemini"):
            continue
        at = _iso_or_none(m.get("timestamp"))
        if m["type"] == "user":
            text = _persons_words(m.get("content"))
            # remem's stop reason, or (as earlier releases sent it) its lessons block alone
            if not text.strip() or text.lstrip().startswith((STOP_REASON, OPEN_TAG)):
                continue
            last = c.turns[-1] if c.turns else None
            if last is not None and last.role == "assistant" and last.tool_calls and all(
                    call.result is not None and not call.rejected for call in last.tool_calls):
                # Its calls done and no more words: the agent stopped and handed back (Gemini
                # CLI keeps a message's calls inside it, with no closing message after them).
                # A refused call is answered by the person's words directly: no hand-back.
                c.turns.append(Turn(role="assistant", text="", at=last.at))
            c.say("user", text, at)
            continue
        turn = c.say("assistant", _text_of(m.get("content")), at)
        for tc in m.get("toolCalls") or []:
            if not isinstance(tc, dict):
                continue
            owner = turn if turn is not None else c.assistant(at)
            c.call(owner, tc.get("id"), tc.get("name"), tc.get("args"))
            status = tc.get("status")
            if "result" in tc or "resultDisplay" in tc:
                shown = tc.get("resultDisplay")
                result = shown if isinstance(shown, str) and shown else _result_text(tc.get("result"))
                failed = True if status == "error" else (False if status == "success" else None)
                if failed is False and tc.get("name") in _GEMINI_SHELL_TOOLS:
                    # A command that ran and exited non-zero is a "success" of the tool: its exit
                    # code is only in what the model was sent ("Exit Code: 1").
                    failed = _shell_exit_code(_sent_to_model(tc.get("result"))) not in (None, 0)
                c.result(tc.get("id"), tc.get("name"), result, failed)
            if status == "cancelled":  # the person said no to the call
                call = owner.tool_calls[-1]
                call.rejected, call.is_error = True, True
                call.result = call.result or "cancelled by the user"


# Gemini CLI's shell tool: it reports a command that exited non-zero as status "success",
# with "Exit Code: N" in the output it sends the model (and the raw output in resultDisplay).
_GEMINI_SHELL_TOOLS = ("run_shell_command",)
# The line Gemini CLI adds after a command's output; the last one is its own (the output,
# before it, may hold any text), so it is looked for from the end, however long the output.
_GEMINI_EXIT_LINE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)


def _shell_exit_code(sent: str) -> int | None:
    """The exit code Gemini CLI's shell tool reported to the model (None: none said)."""
    found = None
    for found in _GEMINI_EXIT_LINE.finditer(sent, max(0, len(sent) - 2000)):
        pass
    return int(found.group(1)) if found is not None else None


def _sent_to_model(result: Any) -> str:
    """The text of a Gemini CLI call's `result` parts as the model got it:
    functionResponse.response.output (or .error), joined."""
    parts = result if isinstance(result, list) else [result]
    out: list[str] = []
    for part in parts:
        fr = part.get("functionResponse") if isinstance(part, dict) else None
        response = fr.get("response") if isinstance(fr, dict) else None
        if isinstance(response, dict):
            out.extend(v for v in (response.get("output"), response.get("error")) if isinstance(v, str))
    return "\n".join(out)


def _iso_or_none(value: Any) -> str | None:
    return _when({"timestamp": value}) if value is not None else None


def _chatgpt(conv: dict[str, Any], c: _Conv) -> None:
    """ChatGPT's data export (conversations.json): a tree in `mapping`; the thread shown is the
    path from the root to `current_node`. A message to a recipient other than "all" is a tool
    call (e.g. to python); the tool's reply is its result."""
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        return
    def node(key: Any) -> dict[str, Any] | None:
        value = mapping.get(key) if isinstance(key, str) else None
        return value if isinstance(value, dict) else None

    node_id = conv.get("current_node")
    if node(node_id) is None:  # no pointer: follow the last child down from the root
        node_id = next((k for k, n in mapping.items() if isinstance(n, dict) and not n.get("parent")), None)
        walked: set[str] = set()
        while (here := node(node_id)) is not None and node_id not in walked:
            walked.add(node_id)
            children = here.get("children")
            if not (isinstance(children, list) and children and node(children[-1]) is not None):
                break
            node_id = children[-1]
    thread: list[dict[str, Any]] = []
    seen: set[str] = set()
    while (here := node(node_id)) is not None and node_id not in seen:
        seen.add(node_id)
        if isinstance(here.get("message"), dict):
            thread.append(here["message"])
        node_id = here.get("parent")
    for m in reversed(thread):
        author = m.get("author") if isinstance(m.get("author"), dict) else {}
        role = author.get("role")
        content = m.get("content") if isinstance(m.get("content"), dict) else {}
        parts = content.get("parts")
        text = _text_of(parts) if isinstance(parts, list) else (
            content.get("text") if isinstance(content.get("text"), str) else "")
        at = _when({"at": m.get("create_time")})
        recipient = m.get("recipient")
        if role == "assistant" and isinstance(recipient, str) and recipient not in ("all", ""):
            c.call(c.assistant(at), m.get("id"), recipient, text)
        elif role == "tool":
            meta = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
            agg = meta.get("aggregate_result") if isinstance(meta.get("aggregate_result"), dict) else {}
            status = str(agg.get("status", ""))
            failed = True if ("exception" in status or status in ("error", "failed")) else None
            c.result(None, author.get("name"), text, failed)
        elif role in ("user", "assistant") and content.get("content_type", "text") in (
            "text", "multimodal_text"
        ):
            c.say(role, text, at)


def _claude_ai_thread(messages: list[Any], leaf: Any = None) -> list[dict[str, Any]]:
    """The messages of a Claude.ai conversation as shown: the path from its root to its
    latest message. An edited prompt or a regenerated reply is a second child of the same
    parent (`parent_message_uuid`), and the export lists every version, the abandoned ones
    too; the thread shown ends at `current_leaf_message_uuid` where the export names it, else
    at the newest message no other answers (latest `created_at`, then the last listed). An
    export whose messages name no parent (older ones) is one thread, in the order listed."""
    dicts = [m for m in messages if isinstance(m, dict)]
    if not any(isinstance(m.get("parent_message_uuid"), str) and m["parent_message_uuid"] for m in dicts):
        return dicts
    by_uuid: dict[str, dict[str, Any]] = {}
    for m in dicts:
        if isinstance(m.get("uuid"), str) and m["uuid"]:
            by_uuid[m["uuid"]] = m
    parents = {m.get("parent_message_uuid") for m in dicts if isinstance(m.get("parent_message_uuid"), str)}
    end = by_uuid.get(leaf) if isinstance(leaf, str) else None
    if end is None:
        leaves = [(n, m) for n, m in enumerate(dicts) if m.get("uuid") not in parents]
        if not leaves:
            return dicts  # every message answered by another: a cycle, read as listed
        end = max(leaves, key=lambda nm: (_when({"at": nm[1].get("created_at")}) or "", nm[0]))[1]
    thread: list[dict[str, Any]] = []
    seen: set[int] = set()
    here: dict[str, Any] | None = end
    while here is not None and id(here) not in seen:
        seen.add(id(here))
        thread.append(here)
        parent = here.get("parent_message_uuid")
        here = by_uuid.get(parent) if isinstance(parent, str) else None
    thread.reverse()
    return thread


def _claude_ai(conv: dict[str, Any], c: _Conv) -> None:
    """Claude.ai's data export: `chat_messages` with sender human / assistant, the thread
    shown only (_claude_ai_thread)."""
    messages = conv.get("chat_messages")
    for m in _claude_ai_thread(messages if isinstance(messages, list) else [],
                               conv.get("current_leaf_message_uuid")):
        role = {"human": "user", "user": "user", "assistant": "assistant"}.get(_key(m.get("sender")))
        if role is None:
            continue
        at = _when(m)
        if isinstance(m.get("content"), list) and m["content"]:
            _blocks(c, role, at, m["content"])
        elif isinstance(m.get("text"), str):
            c.say(role, m["text"], at)


_READERS = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini,
            "gemini-cli": _gemini_cli, "chatgpt-export": _chatgpt, "claude-export": _claude_ai}


def conversation_to_session(conv: Any, *, path: str | None = None, index: int = 0) -> Session | None:
    """One conversation object -> Session (None when it is not a conversation at all)."""
    if isinstance(conv, list):  # a bare list of messages
        if not conv or not all(isinstance(m, dict) and "role" in m for m in conv):
            return None
        conv = {"messages": conv}
    if not isinstance(conv, dict) or not (
        isinstance(conv.get("messages"), list) or isinstance(conv.get("contents"), list)
        or isinstance(conv.get("mapping"), dict) or isinstance(conv.get("chat_messages"), list)
    ):
        return None
    fmt = detect_format(conv)
    c = _Conv()
    _READERS[fmt](conv, c)
    given = next((str(conv[k]) for k in _ID_KEYS if isinstance(conv.get(k), (str, int))
                  and not isinstance(conv.get(k), bool)), None)
    times = [t.at for t in c.turns if t.at]
    started = _when(conv) or (times[0] if times else None)
    # The id comes from the conversation, never from where the file is: the same export named
    # two ways, or copied, is one conversation. A given id is namespaced by the content too,
    # as exports reuse small ids ("id": 1) for different conversations — except a UUID, which
    # names one conversation whatever its opening becomes (a live record growing, a first reply
    # regenerated or a first prompt edited between two exports). Gemini CLI's (.jsonl) is
    # kept as it is: the session id its hooks send (`primes` records it, `remem measure` joins
    # the session's episodes on it).
    fp = fingerprint(c.turns, started)
    if fmt == "gemini-cli" and given and str(path or "").endswith(".jsonl"):
        sid = given
    elif fmt == "gemini-cli" and given:
        # An older .json record: Gemini CLI writes a .jsonl with the same sessionId beside a
        # .json it resumes, so the .json is told apart by its start, which it keeps as it grows.
        sid = f"{given}@{started or (Path(path).stem if path else fp[:10])}"
    elif fmt in ("chatgpt-export", "claude-export") and given and _UUID.fullmatch(given):
        sid = given
    else:
        sid = f"{given}:{fp[:10]}" if given else stable_id("chats", fp)
    cwd = conv.get("cwd") if isinstance(conv.get("cwd"), str) else None
    title = next((conv[k] for k in _TITLE_KEYS if isinstance(conv.get(k), str)), None)
    return Session(
        id=sid, source="chats", path=path, cwd=cwd, started=started,
        ended=times[-1] if times else None, turns=c.turns,
        meta={"format": fmt, "index": index, "given_id": given,
              **({"title": title} if title is not None else {})},
    )


def _tell_apart(sessions: list[Session]) -> None:
    """Conversations of one file with the same opening (no id, no times, "hi" / "Hello!") are
    still two: their ids use as many turns as it takes to differ. That is stable when the
    export grows or its order changes; only conversations identical throughout are numbered."""
    groups: dict[str, list[Session]] = {}
    for session in sessions:
        groups.setdefault(session.id, []).append(session)
    for sid, same in groups.items():
        if len(same) < 2:
            continue
        new_ids = [f"{sid}~{_distinct_prefix(s, same)}" for s in same]
        seen: dict[str, int] = {}
        for session, new_id in zip(same, new_ids):
            seen[new_id] = seen.get(new_id, 0) + 1
            session.id = new_id if seen[new_id] == 1 else f"{new_id}~{seen[new_id]}"


def _distinct_prefix(session: Session, same: list[Session]) -> str:
    """The fingerprint of this conversation's shortest opening (3 turns or more) that no other
    of `same` shares, so one sharing more with a third changes only those two."""
    for count in range(3, len(session.turns) + 1):
        mine = fingerprint(session.turns, session.started, count)
        if all(other is session or fingerprint(other.turns, other.started, count) != mine
               for other in same):
            return mine[:10]
    return fingerprint(session.turns, session.started, len(session.turns))[:10]


def fingerprint(turns: list[Turn], started: str | None, count: int = 2) -> str:
    """What identifies one conversation across exports: its start and its first `count` turns.

    Only the opening is used, so a later export of the same conversation, grown since, has the
    same fingerprint and updates it instead of being stored again.
    """
    opening = []
    for turn in turns[:count]:
        calls = [f"{call.name}:{json.dumps(call.input, sort_keys=True, default=str)}" for call in turn.tool_calls]
        opening.append(f"{turn.role}\x1e{turn.text}\x1e{'|'.join(calls)}")
    text = f"{started or ''}\x1d" + "\x1d".join(opening)
    return stable_id("chat-content", text.encode("utf-8", "replace").decode("utf-8"))


def _gemini_project_root(path: Path) -> str | None:
    """The project folder of a Gemini CLI session file: Gemini CLI writes it to
    ~/.gemini/tmp/<project>/.project_root, beside the session's chats/ folder (None when
    that file is not there, or says nothing)."""
    if path.parent.name != "chats":
        return None
    try:
        with open(path.parent.parent / ".project_root", "rb") as fh:
            raw = fh.read(4096)  # a path; more than that is no .project_root of Gemini CLI's
    except OSError:
        return None
    return raw.decode("utf-8", "replace").strip() or None


def _gemini_not_started(items: list[Any], header: dict[str, Any]) -> bool:
    """A Gemini CLI session record with no message yet: its header alone (a .jsonl just
    opened), or a .json whose `messages` is still empty. Not an error, and not a conversation."""
    if header:  # a .jsonl: its header, and no message line that made an item
        record = header if not items else {}
    else:
        record = items[0] if len(items) == 1 and isinstance(items[0], dict) else {}
    return (bool(record.get("sessionId")) and ("projectHash" in record or "startTime" in record)
            and not record.get("messages"))


def _conversations(value: Any) -> list[Any]:
    if isinstance(value, dict) and isinstance(value.get("conversations"), list):
        return value["conversations"]
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "role" in v for v in value):
            return [value]  # one conversation written as a bare message list
        return value
    return [value]


# What every zip archive starts with (the apps' data exports are downloaded as one).
ZIP_MAGIC = b"PK\x03\x04"
ZIP_ADVICE = "a zip archive: unzip it and ingest its conversations.json"


def _not_json(exc: ValueError, text: str, data: bytes) -> str:
    """Where a file meant as one JSON document stops being JSON, in one line."""
    pos = getattr(exc, "pos", None)
    if not isinstance(pos, int):
        return f"not valid JSON: {exc}"
    if not text[pos:].strip() or str(getattr(exc, "msg", "")).startswith("Unterminated string"):
        # nothing after where it fails, or a string that runs to the end: the file is cut short
        return f"not valid JSON: it ends early at byte {len(data)} (an incomplete download?)"
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    at = bom + len(text[:pos].encode("utf-8", "replace"))
    line, column = getattr(exc, "lineno", 0), getattr(exc, "colno", 0)
    return f"not valid JSON: {getattr(exc, 'msg', exc)} at line {line}, column {column} (byte {at})"


def parse_chats(path: Path | str) -> list[Session]:
    """Every conversation in a JSON or JSONL file, as Sessions.

    Raises ValueError only when the file holds no conversation at all (not JSON, or nothing
    that looks like one); bad lines and parts inside a usable file are skipped and counted.
    """
    path = Path(path)
    data = path.read_bytes()
    # utf-8-sig: exports saved by Windows tools start with a byte-order mark
    text = data.decode("utf-8-sig", errors="replace")
    if data.startswith(ZIP_MAGIC):
        raise NotAConversation(ZIP_ADVICE)
    malformed = 0
    torn = False
    items: list[Any]
    header: dict[str, Any] = {}
    not_json: ValueError | None = None
    objects = 0  # lines that are JSON objects or arrays: none, and the file was one JSON document
    try:
        items = _conversations(json.loads(text))
    except ValueError as exc:
        not_json = exc
        items = []
        loose: list[Any] = []  # JSONL whose lines are single messages
        # Gemini CLI's session-*.jsonl: a header, then records, each message once as last
        # written (it writes one again as it grows) in the order first seen, as Gemini CLI reads it
        gemini: dict[Any, dict[str, Any]] = {}
        lines = text.split("\n")
        last = len(lines) - 1
        for n, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                if n == last:  # no newline after it: a live session still being written
                    torn = True
                else:
                    malformed += 1
                continue
            objects += isinstance(value, (dict, list))
            if isinstance(value, dict) and value.get("type") in _GEMINI_CLI_TYPES \
                    and "role" not in value and "content" in value:
                gemini[value["id"] if isinstance(value.get("id"), str) else n] = value
            elif isinstance(value, dict) and isinstance(value.get("$set"), dict):
                # Gemini CLI updating its record in place: metadata (lastUpdated, summary ...)
                # and `messages`, the model's history as it now stands (the session's opening
                # context, a history cut short or compressed). Every message of the session is
                # a record of its own already: only the metadata is taken.
                header = {**header, **{k: v for k, v in value["$set"].items() if k != "messages"}}
            elif isinstance(value, dict) and isinstance(value.get("$rewindTo"), str):
                # The person went back to an earlier prompt: that message and all after it are
                # gone from the conversation (an abandoned branch, as in a ChatGPT export).
                ids = list(gemini)
                if value["$rewindTo"] in gemini:
                    for key in ids[ids.index(value["$rewindTo"]):]:
                        del gemini[key]
            elif isinstance(value, dict) and "sessionId" in value and not any(
                    key in value for key in ("messages", "type", "contents", "mapping", "chat_messages")):
                header = {**header, **value}
            elif isinstance(value, dict) and "role" in value and not (
                "messages" in value or "contents" in value or "mapping" in value
            ):
                loose.append(value)
            else:
                items.append(value)
        if loose:
            items.append(loose)
        if gemini:
            items.append({"sessionId": path.stem, **header, "messages": list(gemini.values())})
    sessions: list[Session] = []
    for i, item in enumerate(items):
        try:
            session = conversation_to_session(item, path=str(path), index=i)
        except (TypeError, ValueError, AttributeError, KeyError):
            session = None
        if session is None:
            malformed += 1
        else:
            sessions.append(session)
    if not sessions and _gemini_not_started(items, header):
        return []  # a Gemini CLI session just opened: nothing said yet, read once it grows
    if not sessions and not_json is not None and not objects and text.strip() and path.suffix != ".jsonl":
        # One JSON document (an app's conversations.json) that does not parse, not JSON lines.
        raise NotAConversation(_not_json(not_json, text, data))
    if not sessions:
        # No path here: ingest puts it in front of every error it reports.
        raise NotAConversation(
            f"no conversations found ({malformed} unreadable entries); expected a ChatGPT or "
            "Claude.ai export's conversations.json, or OpenAI, Anthropic or Gemini messages, "
            "as JSON or one conversation per JSONL line"
        )
    _tell_apart(sessions)
    sessions[0].malformed_lines = malformed
    for session in sessions:
        if session.meta["format"] == "gemini-cli" and session.cwd is None:
            session.cwd = _gemini_project_root(path)
    if torn:
        # ingest records this size instead of the file's, so the file is read again next time
        for session in sessions:
            session.torn_tail = True
            session.meta["complete_bytes"] = data.rfind(b"\n") + 1
    if "\\ud" in text or "\\uD" in text:
        for session in sessions:
            scrub_surrogates(session)
    return sessions
