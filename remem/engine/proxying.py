"""What the proxy does to a request and a response, without any HTTP: pure functions.

Three request styles: OpenAI Chat Completions (`messages`), OpenAI Responses (`input`,
`instructions`) and Anthropic Messages (`system`, `messages`). Memory goes into the system
prompt; the exchange becomes events for the inbox, so the next ingest runs the detectors on it.
"""

from __future__ import annotations

import copy
import json
import threading
from collections import OrderedDict
from hashlib import sha1
from typing import Any, Iterable

from remem.engine.text import clean_text, content_text

CHAT = "openai"  # /v1/chat/completions
RESPONSES = "responses"  # /v1/responses
ANTHROPIC = "anthropic"  # /v1/messages

# The endpoint each style's path ends in, whatever comes before it: `/v1` (api.openai.com,
# api.anthropic.com), `/v1beta/openai` (Gemini), `/openai/deployments/<name>` (Azure), nothing
# (DeepSeek's /chat/completions), a gateway's own prefix.
STYLE_BY_PATH = {
    "/chat/completions": CHAT,
    "/responses": RESPONSES,
    "/messages": ANTHROPIC,
}


def style_of_path(path: str) -> str | None:
    """The style of a request by the whole path the upstream gets (the upstream URL's path and
    the client's), None for any other path. `/messages` under `/threads/…` is OpenAI's
    Assistants API (a message added to a thread), not Anthropic's."""
    for suffix, kind in STYLE_BY_PATH.items():
        if path.endswith(suffix):
            if kind == ANTHROPIC and "/threads/" in path:
                return None
            return kind
    return None


def messages_of(body: dict[str, Any], style: str) -> list[tuple[str, str]]:
    """(role, text) of every conversational message in a request, system prompts left out."""
    out: list[tuple[str, str]] = []
    if style == RESPONSES:
        items = body.get("input")
        if isinstance(items, str):
            return [("user", items)]
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("role") in ("user", "assistant"):
                out.append((item["role"], content_text(item.get("content"), part_types=None)))
        return out
    messages = body.get("messages")
    for msg in messages if isinstance(messages, list) else []:
        if isinstance(msg, dict) and msg.get("role") in ("user", "assistant"):
            text = content_text(msg.get("content"), part_types=None)
            if text:
                out.append((msg["role"], text))
    return out


def conversation_key(body: dict[str, Any], style: str) -> str:
    """The memory block's key: the first user message, known from the first request on (every
    request repeats it), so a conversation keeps one block. Recording tells conversations
    apart more finely (session_key)."""
    first = next((text for role, text in messages_of(body, style) if role == "user"), "")
    return "proxy-" + sha1(_utf8(f"{style}\n{first}")).hexdigest()[:16]


def _utf8(text: str) -> bytes:
    """Bytes to hash: a lone surrogate (valid JSON, `\\ud800`) must not fail the request."""
    return text.encode("utf-8", "surrogatepass")


def response_id(payload: bytes, streamed: bool) -> str | None:
    """The id a Responses API answer gives itself (`resp_…`), for the next turn's
    `previous_response_id`; None when it has none."""
    if streamed:
        for event in sse_events(payload):
            found = _dict(event.get("response")).get("id")
            if isinstance(found, str) and found:
                return found
        return None
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    found = data.get("id") if isinstance(data, dict) else None
    return found if isinstance(found, str) and found else None


class Threads:
    """Responses API conversations that the server keeps: a turn sends only its new input and
    names the last answer (`previous_response_id`) or a `conversation`. Each answer's id is
    mapped to its conversation's (memory key, recorded session), so every later turn reuses
    the conversation's memory choice and session; bounded, the oldest forgotten first."""

    def __init__(self, size: int = 4096) -> None:
        self._by_response: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._size = size

    def find(self, body: dict[str, Any]) -> tuple[str, str] | None:
        """(memory key, recorded session) of the conversation a request continues, if known."""
        conversation = body.get("conversation")
        if isinstance(conversation, dict):
            conversation = conversation.get("id")
        if isinstance(conversation, str) and conversation:
            key = "proxy-" + sha1(_utf8(f"{RESPONSES}\nconversation\n{conversation}")).hexdigest()[:16]
            return key, key
        previous = body.get("previous_response_id")
        if isinstance(previous, str) and previous in self._by_response:
            self._by_response.move_to_end(previous)
            return self._by_response[previous]
        return None

    def remember(self, response: str, thread: tuple[str, str]) -> None:
        self._by_response[response] = thread
        self._by_response.move_to_end(response)
        while len(self._by_response) > self._size:
            self._by_response.popitem(last=False)


def query_text(body: dict[str, Any], style: str, limit: int = 2000) -> str:
    """What the lessons should bear on: the latest user message."""
    users = [text for role, text in messages_of(body, style) if role == "user"]
    return (users[-1] if users else "")[-limit:]


def can_inject(body: dict[str, Any], style: str) -> bool:
    """Whether the field memory goes into is missing or of a type the API takes. One of
    another type (`"system": 5`, `"instructions": ["a"]`, `"messages": "hi"`) is the
    upstream's to refuse: the body goes as sent, without memory."""
    field, kinds = {ANTHROPIC: ("system", (str, list)), RESPONSES: ("instructions", (str,))}.get(
        style, ("messages", (list,)))
    return body.get(field) is None or isinstance(body[field], kinds)


def inject(body: dict[str, Any], style: str, block: str) -> dict[str, Any]:
    """A copy of the request with the memory block added to its system prompt; the body
    itself when there is no block or it cannot take one (can_inject)."""
    if not block or not can_inject(body, style):
        return body
    out = copy.deepcopy(body)
    if style == ANTHROPIC:
        system = out.get("system")
        if isinstance(system, list):
            out["system"] = [*system, {"type": "text", "text": block}]
        elif isinstance(system, str) and system:
            out["system"] = f"{system}\n\n{block}"
        else:
            out["system"] = block
    elif style == RESPONSES:
        instructions = out.get("instructions")
        out["instructions"] = f"{instructions}\n\n{block}" if instructions else block
    else:
        messages = list(out.get("messages") or [])
        # After any leading system/developer messages, so the caller's own prompt stays first.
        at = 0
        while at < len(messages) and isinstance(messages[at], dict) and messages[at].get("role") in ("system", "developer"):
            at += 1
        messages.insert(at, {"role": "system", "content": block})
        out["messages"] = messages
    return out


def sse_events(raw: bytes) -> Iterable[dict[str, Any]]:
    """The JSON data payloads of a server-sent-events stream (ignores [DONE] and comments)."""
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data or data == "[DONE]":
            continue
        try:
            value = json.loads(data)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def response_text(style: str, payload: bytes, streamed: bool) -> str:
    """The assistant's final text, from a JSON response or an assembled SSE stream.

    Any shape is read without raising: what does not look like text is left out.
    """
    if streamed:
        pieces: list[str] = []
        for event in sse_events(payload):
            if style == CHAT:
                for choice in _list(event.get("choices")):
                    delta = _dict(_dict(choice).get("delta"))
                    if isinstance(delta.get("content"), str):
                        pieces.append(delta["content"])
            elif style == ANTHROPIC:
                delta = _dict(event.get("delta"))
                if event.get("type") == "content_block_delta" and isinstance(delta.get("text"), str):
                    pieces.append(delta["text"])
            elif style == RESPONSES:
                if event.get("type") == "response.output_text.delta" and isinstance(event.get("delta"), str):
                    pieces.append(event["delta"])
        return "".join(pieces)
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(data, dict):
        return ""
    if style == CHAT:
        choices = _list(data.get("choices")) or [{}]
        return content_text(_dict(_dict(choices[0]).get("message")).get("content"), part_types=None)
    if style == ANTHROPIC:
        return content_text(data.get("content"), part_types=None)
    if isinstance(data.get("output_text"), str):
        return data["output_text"]
    texts = []
    for item in _list(data.get("output")):
        if isinstance(item, dict) and item.get("type") == "message":
            texts.append(content_text(item.get("content"), part_types=None))
    return "\n".join(t for t in texts if t)


def session_key(turns: list[tuple[str, str]], style: str) -> str:
    """The recorded conversation: its first question and first answer. Two conversations that
    open with the same question (a template, "continue") are told apart by the answer."""
    first = next((i for i, (role, _) in enumerate(turns) if role == "user"), None)
    if first is None:
        opening = ""
    else:
        answer = next((text for role, text in turns[first + 1:] if role == "assistant"), "")
        opening = f"{turns[first][1]}\n{answer}"
    return "proxy-" + sha1(_utf8(f"{style}\n{opening}")).hexdigest()[:16]


class Recorded:
    """What the proxy has written of each recorded conversation (its session): the id of the
    last turn written. Every request repeats the history; with this, only the turns after that
    one are written again, not the whole conversation on every turn. Bounded, the oldest
    conversation forgotten first (its next turn is written whole again, and ingest reads the
    repeats once: the ids are the same). Shared by the proxy's worker threads."""

    def __init__(self, size: int = 1024) -> None:
        self._last: OrderedDict[str, str] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def last(self, session: str) -> str | None:
        with self._lock:
            return self._last.get(session)

    def remember(self, events: list[dict[str, Any]]) -> None:
        """After `events` (one exchange's) were written."""
        if not events:
            return
        with self._lock:
            self._last[events[-1]["session"]] = events[-1]["id"]
            self._last.move_to_end(events[-1]["session"])
            while len(self._last) > self._size:
                self._last.popitem(last=False)


def exchange_events(body: dict[str, Any], style: str, reply: str, at: str, source: str = "proxy",
                    session: str | None = None, turn: str = "",
                    recorded: Recorded | None = None) -> list[dict[str, Any]]:
    """The exchange as conversation events (docs/PROTOCOL.md §0), secrets redacted.

    Every request repeats the history; an event's id is a hash of the conversation up to and
    including its turn (the words as sent, before redaction), so the repeats ingest once, while
    a turn of another conversation (the same position, a different history) keeps its own id.
    With `recorded`, only the turns from the person's turn before the first one not yet written
    come back (each turn is written at most twice, and the detectors see the answer a correction
    pushes back on); all of them when the last turn written is not in this history (a
    conversation not seen, or edited). A turn of
    a conversation the server keeps (Threads) gives its `session` and a `turn` (its answer's
    id) that sets its ids apart.
    """
    from remem.engine.events import MAX_MESSAGE_TEXT
    from remem.engine.scrub import redacted

    turns = messages_of(body, style)
    if reply:
        turns.append(("assistant", reply))
    session = session or session_key(turns, style)
    prefix = sha1(_utf8(f"{style}\n{turn}" if turn else style))  # one running hash: linear in the conversation's size
    ids = []
    for index, (role, text) in enumerate(turns):
        data = f"{role}\n{text}".encode("utf-8", "surrogatepass")
        prefix.update(f"{len(data)}:".encode("ascii") + data)
        ids.append(f"{session}-{index}-{prefix.hexdigest()[:16]}")
    last = recorded.last(session) if recorded is not None else None
    first_new = ids.index(last) + 1 if last in ids else 0
    # From the person's turn before the new ones: ingest may have read the earlier ones by now,
    # and a correction is read against the answer it pushes back on and what was asked.
    first_new = max([i for i in range(first_new) if turns[i][0] == "user"], default=first_new)
    events = []
    for index in range(first_new, len(turns)):
        role, text = turns[index]
        if not text.strip():
            continue
        events.append({
            "v": 1, "id": ids[index], "at": at, "kind": "message", "role": role,
            # Secrets go as ingest's episodes lose them ("[secret]"); a huge pasted message is
            # kept shortened (with a marker), never dropped.
            "text": redacted(clean_text(text), MAX_MESSAGE_TEXT), "session": session, "source": source,
        })
    return events
