"""Codex CLI rollouts -> Session, for the same detectors as Claude Code transcripts.

A rollout is JSON lines under $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl
(and archived_sessions/), each line `{"timestamp", "type", "payload"}` where type is one of
session_meta, turn_context, response_item, event_msg, compacted. Unknown types and unknown
payload types are skipped (Codex adds new ones often); a line that is not JSON is counted
in `malformed_lines`; an incomplete last line (a file still being written) sets `torn_tail`
and is left for when the file has grown. A rollout is read line by line: memory is bounded by
its longest line, not its size. Very old rollouts wrote bare response items with no envelope;
those are read too, and so are the rollouts of the 2025 TypeScript Codex CLI
(sessions/rollout-<date>-<uuid>.json): one JSON document `{"session": {...}, "items": [...]}`
whose items are the same response items (`_Reader.legacy_document`).

Which copy of a message we read: Codex writes what the person typed and what the model
answered twice, as `response_item` messages (the model's history) and as `event_msg`
user_message / agent_message (for the UI). We read the `response_item` copy: it is written
by every Codex version, sits in order with the tool calls it belongs with, and is what the
model actually saw. The event copies are used only for a file that has no response_item
message at all, so a message is never counted twice. Harness text Codex injects as user
messages (<environment_context>, AGENTS.md instructions, <turn_aborted> notes, skills…) is
dropped, as are such blocks and the IDE's context inside a message the person typed
(`persons_words`).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from remem import paths
from remem.engine import clock
from remem.engine.harness_text import TaggedBlocks
from remem.engine.session import Session, ToolCall, Turn
from remem.engine.toolresult import json_or_raw, looks_failed, looks_rejected, scrub_surrogates, unwrap


class SourceUnavailable(ValueError):
    """A file we found but cannot read here (e.g. zstd-compressed without `zstandard`)."""


_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", re.I)
# User messages that are the harness talking, not the person: a whole message wrapped in one
# snake_case tag (<environment_context>…</environment_context>, <user_instructions>,
# <turn_aborted>, <user_shell_command>…) or the AGENTS.md preamble. HTML tags have no
# underscore, so a person pasting <html>…</html> is still the person.
_WRAPPED = re.compile(r"^\s*<([A-Za-z]+_[\w-]*)[^>]*>.*</\1>\s*$", re.S)
_HARNESS_PREFIXES = ("# AGENTS.md instructions", "<permissions instructions>")
# Blocks Codex puts into a user message before, after or between the person's words, taken
# out wherever they sit: its environment, instructions, the note that a turn was aborted, a
# command the person ran in Codex's shell, a skill's instructions, a sub-agent's notice, and
# the empty placeholder standing where an image was pasted.
HARNESS_BLOCKS = TaggedBlocks(
    names=("environment_context", "user_instructions", "turn_aborted", "user_shell_command",
           "subagent_notification", "skill", "image"),
    blank_only=("image",),
)
# The IDE extension and the desktop app put the editor's state or the files named above the
# person's words, under headers; the words follow the header that says so.
_CONTEXT_HEADERS = ("# Context from my IDE setup:", "# Files mentioned by the user:")
_REQUEST_HEADER = "## My request for Codex:"
_INTERRUPT_REASONS = {"interrupted", "user_interrupt"}
_RESPONSE_TYPES = {"message", "reasoning", "function_call", "function_call_output",
                   "local_shell_call", "custom_tool_call", "custom_tool_call_output",
                   "web_search_call"}


def find_rollouts(codex_home: Path | str | None = None) -> list[Path]:
    """Every rollout under sessions/ and archived_sessions/, oldest first by path.

    A `.jsonl.zst` is listed only where no `.jsonl` of the same name sits beside it. The
    TypeScript Codex CLI's `rollout-*.json` (2025, sessions/ itself) are listed after the
    JSONL ones of their folder.
    """
    home = Path(codex_home) if codex_home else paths.codex_home()
    found: list[Path] = []
    bases = [b for b in (home / "sessions", home / "archived_sessions") if b.is_dir()]
    if not bases and home.is_dir():
        bases = [home]  # a sessions folder (or any folder of rollouts) given directly
    for base in bases:
        plain = sorted(base.rglob("rollout-*.jsonl"))
        found.extend(plain)
        have = {p.with_suffix("") for p in plain}
        for z in sorted(base.rglob("rollout-*.jsonl.zst")):
            if z.with_suffix("").with_suffix("") not in have:
                found.append(z)
        found.extend(p for p in sorted(base.rglob("rollout-*.json")) if p.is_file())
    return found


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError:
        raise SourceUnavailable(
            "zstd-compressed rollout skipped; `pip install zstandard` to read it"
        ) from None
    return zstandard


def _read_bytes(path: Path) -> bytes:
    """A rollout's bytes, whole (decompressed for a `.zst`)."""
    if path.name.endswith(".zst"):
        zstandard = _zstandard()
        with open(path, "rb") as fh:
            return zstandard.ZstdDecompressor().stream_reader(fh).read()
    return path.read_bytes()


def _rollout_lines(path: Path) -> Iterator[bytes]:
    """A rollout's lines as bytes, each with its newline (the last may have none), read one at a
    time (decompressed as they are read for a `.zst`): memory is bounded by the longest line."""
    if path.name.endswith(".zst"):
        zstandard = _zstandard()
        with open(path, "rb") as fh, \
                io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(fh)) as reader:
            yield from reader
        return
    with open(path, "rb") as fh:
        yield from fh


class _Tally:
    """What reading the lines noted beside their records: the bytes of the complete lines
    (those ending in a newline) and whether any holds an escaped surrogate."""

    def __init__(self) -> None:
        self.complete_bytes = 0
        self.surrogates = False


def _lines(raw: Iterable[bytes], session: Session, tally: _Tally) -> Iterator[dict[str, Any]]:
    """JSON objects of JSONL lines; bad lines counted, a torn last line noted."""
    for line in raw:
        ended = line.endswith(b"\n")
        if ended:
            tally.complete_bytes += len(line)
        text = line.decode("utf-8", errors="replace")
        if not tally.surrogates and ("\\ud" in text or "\\uD" in text):
            tally.surrogates = True
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except ValueError:
            if not ended:  # no newline after it: still being written
                session.torn_tail = True
            else:
                session.malformed_lines += 1
            continue
        if isinstance(value, dict):
            yield value
        else:
            session.malformed_lines += 1


def _iso(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    # Codex writes "2026-11-20T10:00:00.123Z" on every line: convert that shape directly
    # (a third of the parse time went to datetime round trips).
    if len(value) == 24 and value[23] == "Z" and value[10] == "T" and value[19] == "." \
            and value[:4].isdigit() and value[20:23].isdigit():
        return f"{value[:23]}000+00:00"
    return clock.normalise(value)


def _content_text(content: Any, harness: bool = True) -> str:
    """Text of a message's content parts (input_text / output_text); images and the rest skipped."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text"):
            text = part.get("text")
            if isinstance(text, str) and text.strip() and not (harness and _is_harness(text)):
                parts.append(text)
    return "\n".join(parts)


def _is_harness(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith(_HARNESS_PREFIXES) or bool(_WRAPPED.match(stripped))


def persons_words(text: str) -> str:
    """A user message's text without what Codex put around the person's words; '' if none."""
    text = HARNESS_BLOCKS.strip(text).strip()
    if text.startswith(_CONTEXT_HEADERS):
        at = text.find(_REQUEST_HEADER)
        text = text[at + len(_REQUEST_HEADER):].strip() if at >= 0 else ""
    return text


def _spawned(source: Any) -> bool:
    """session_meta.source of a rollout Codex started on its own: a sub-agent, a review, memory work."""
    if isinstance(source, dict):
        return any(str(k).lower() in ("subagent", "internal") for k in source)
    return isinstance(source, str) and source.lower().startswith(("subagent", "internal"))


# Codex hands a shell call's output to the model inside a header, and the rollout keeps it:
#   shell:         Exit code: 1 / Wall time: 3.1 seconds / [Total output lines: N] / Output: / …
#   exec_command:  Chunk ID: 77 / Wall time: 1.0000 seconds / Process exited with code 1 /
#                  [Process running with session ID N] / Original token count: 20 / Output: / …
# The exit code is read from the whole text first (is_error); the call's result is what
# follows `Output:`, so titles and environment facts see the command's own words.
_WRAPPER_START = ("Exit code:", "Chunk ID:", "Wall time:", "Process exited with code",
                  "Process running with session ID")
_WRAPPER_LINE = re.compile(
    r"(?:Exit code: -?\d+|Wall time: [\d.]+(?: \w+)?|Total output lines: \d+|Chunk ID: \S+|"
    r"Process exited with code -?\d+|Process running with session ID \S+|"
    r"Original token count: \d+)\s*$")


def _strip_wrapper(text: str) -> str:
    """The command's own output inside Codex's text wrapper (see above); other text unchanged.

    Only a run of header lines at the very start is removed, up to and including `Output:`;
    a header with no `Output:` line after it loses its header lines alone. A first line that
    only starts like a header ("Exit code: 0 means …") is no header: the text is kept whole.
    """
    if not text.startswith(_WRAPPER_START):
        return text
    pos = 0
    while pos < len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if line.rstrip() == "Output:":
            return "" if end < 0 else text[end + 1:]
        if not _WRAPPER_LINE.match(line):
            break
        pos = len(text) if end < 0 else end + 1
    return text[pos:]


# A command still running when exec_command hands back ("Process running with session ID N")
# goes on under that id: the model polls it or types to it with write_stdin {"session_id": N},
# whose outputs are the rest of the command's, the last saying how it exited. That exit is
# the command's: its failure is the exec_command call's, with all it printed, not the poll's.
_RUNNING = re.compile(r"^Process running with session ID (\S+)\s*$", re.M)
_EXITED = re.compile(r"^Process exited with code (-?\d+)\s*$", re.M)


def _wrapper_says(pattern: re.Pattern[str], text: str) -> str | None:
    """What `pattern` reads in the wrapper's header of an output (None without a header)."""
    if not text.startswith(_WRAPPER_START):
        return None
    at = text.find("\nOutput:")
    found = pattern.search(text[:at if at >= 0 else 2000])
    return found.group(1) if found else None


def _output_text(output: Any) -> tuple[str, bool | None]:
    """A call output as text, and an explicit failure flag where the payload has one."""
    if isinstance(output, str):
        return output, None
    if isinstance(output, list):  # content items: [{"type": "input_text", "text": …}]
        return _content_text(output, harness=False), None
    if isinstance(output, dict):
        flag = None
        if output.get("success") is False:
            flag = True
        content = output.get("content", output.get("output"))
        text, _ = _output_text(content) if content is not None else (json.dumps(output), None)
        return text, flag
    return ("" if output is None else json.dumps(output)), None


class _Builder:
    """Walks rollout lines in order and builds turns, pairing calls with outputs by call_id."""

    def __init__(self, session: Session) -> None:
        self.s = session
        self.timeline: list[tuple[str, Turn]] = []  # ("item" | "event", turn)
        self.calls: dict[str, ToolCall] = {}
        self.item_messages = 0
        self.unpaired_outputs = 0
        self.running: dict[str, ToolCall] = {}  # session ID -> the exec_command still running
        self.later_output: dict[int, tuple[ToolCall, list[str]]] = {}  # what the polls read of it

    def _assistant(self, at: str | None) -> Turn:
        """The assistant turn a tool call belongs to: the last one, unless the person spoke since."""
        for source, turn in reversed(self.timeline):
            if source != "item":
                continue
            if turn.role == "assistant":
                return turn
            break
        turn = Turn(role="assistant", at=at)
        self.timeline.append(("item", turn))
        return turn

    def _call(self, call_id: Any, name: str, args: Any, at: str | None) -> None:
        cid = str(call_id) if call_id not in (None, "") else f"call-{len(self.calls)}"
        call = ToolCall(id=cid, name=name, input=args)
        self.calls[cid] = call
        self._assistant(at).tool_calls.append(call)

    def _result(self, call_id: Any, output: Any, at: str | None = None) -> None:
        call = self.calls.get(str(call_id))
        if call is None:
            self.unpaired_outputs += 1
            return
        call.result_at = at  # when it came back: a failure is dated by it
        text, flag = _output_text(output)
        # The failure is read from the whole text, exit code included; the result kept is
        # the command's output alone, without the legacy JSON or the text wrapper around it.
        call.result = _strip_wrapper(unwrap(text))
        if looks_rejected(text):
            call.rejected = True
        call.is_error = bool(flag) or looks_failed(text)
        self._running_command(call, text, at)

    def _running_command(self, call: ToolCall, text: str, at: str | None) -> None:
        """Pair a write_stdin with the command it polls (see _RUNNING): its output is that
        command's, and the exit it reports is that command's."""
        args = call.input if isinstance(call.input, dict) else {}
        polled = str(args.get("session_id")) if call.name == "write_stdin" and "session_id" in args else None
        origin = self.running.get(polled) if polled is not None else None
        if origin is not None and not text.startswith(_WRAPPER_START):
            return  # no output of the command: write_stdin's own answer (an unknown session ID)
        if origin is None:
            running = _wrapper_says(_RUNNING, text)
            if running is not None:
                self.running[running] = call
            return
        self.later_output.setdefault(id(origin), (origin, []))[1].append(call.result or "")
        code = _wrapper_says(_EXITED, text)
        if code is not None:
            del self.running[polled]
            origin.is_error = origin.is_error or int(code) != 0
            origin.result_at = at
            call.is_error = False  # the poll worked; the command it polled failed

    def response_item(self, p: dict[str, Any], at: str | None) -> None:
        kind = p.get("type") if isinstance(p.get("type"), str) else None
        if kind == "message":
            role = p.get("role")
            if role not in ("user", "assistant"):
                return  # developer / system: instructions, not the conversation
            text = _content_text(p.get("content"))
            if role == "user":
                text = persons_words(text)
            if not text.strip():
                return  # harness-only (environment context…) or images
            self.item_messages += 1
            self.timeline.append(("item", Turn(role=role, text=text, at=at, uuid=p.get("id"))))
        elif kind == "function_call":
            self._call(p.get("call_id") or p.get("id"), str(p.get("name") or "function"),
                       json_or_raw(p.get("arguments")), at)
        elif kind == "custom_tool_call":
            self._call(p.get("call_id") or p.get("id"), str(p.get("name") or "custom_tool"),
                       p.get("input"), at)
        elif kind == "local_shell_call":
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            args = {"command": action.get("command"), "workdir": action.get("working_directory")}
            self._call(p.get("call_id") or p.get("id"), "local_shell", args, at)
        elif kind == "web_search_call":  # no output item: its status is its result
            self._call(p.get("id"), "web_search", p.get("action"), at)
            status = p.get("status")
            self._assistant(at).tool_calls[-1].result = status if isinstance(status, str) else ""
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._result(p.get("call_id"), p.get("output"), at)
        # reasoning, ghost_snapshot, compaction and anything newer: not the conversation

    def event(self, p: dict[str, Any], at: str | None) -> None:
        kind = p.get("type") if isinstance(p.get("type"), str) else None
        if kind in ("user_message", "agent_message"):
            text = p.get("message")
            role = "user" if kind == "user_message" else "assistant"
            if isinstance(text, str) and role == "user":
                text = persons_words(text)
            if isinstance(text, str) and text.strip() and not _is_harness(text):
                self.timeline.append(("event", Turn(role=role, text=text, at=at)))
        elif kind == "turn_aborted":
            if str(p.get("reason", "")).lower() in _INTERRUPT_REASONS:
                for _, turn in reversed(self.timeline):
                    if turn.role == "assistant":
                        for call in turn.tool_calls:
                            if call.result is None:
                                call.interrupted = True
                        break
                self.timeline.append(("item", Turn(role="user", at=at, interrupt=True)))
        elif kind == "token_count":
            info = p.get("info")
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                self.s.meta["tokens"] = info["total_token_usage"]
        elif kind == "exec_command_end":  # persisted only in Codex's extended mode
            call = self.calls.get(str(p.get("call_id")))
            code = p.get("exit_code")
            if call is not None and isinstance(code, int) and code != 0:
                call.is_error = True
        elif kind == "patch_apply_end":
            call = self.calls.get(str(p.get("call_id")))
            if call is not None and p.get("success") is False:
                call.is_error = True

    def finish(self) -> list[Turn]:
        for call, parts in self.later_output.values():
            pieces = [call.result or ""] + parts
            call.result = "".join(p if not p or p.endswith("\n") else p + "\n" for p in pieces)
        # See the module docstring: one copy of each message, never both.
        use_events = self.item_messages == 0
        return [t for src, t in self.timeline if src == "item" or use_events]


# Record types read here; any other type is skipped, whatever its payload (newer Codex).
RECORD_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")


class _Reader:
    """One rollout's records, in order, into its Session (`record` for a JSONL line,
    `legacy_document` for the TypeScript CLI's whole document); `finish` completes it."""

    def __init__(self, session: Session) -> None:
        self.s = session
        self.builder = _Builder(session)
        self.tally = _Tally()
        self.first_at: str | None = None
        self.last_at: str | None = None
        self.have_meta = False
        self.cwds: list[str] = []

    def _seen(self, at: str | None) -> None:
        if at:
            self.first_at = self.first_at or at
            self.last_at = at

    def record(self, rec: dict[str, Any]) -> None:
        session, builder = self.s, self.builder
        at = _iso(rec.get("timestamp"))
        self._seen(at)
        kind = rec.get("type") if isinstance(rec.get("type"), str) else None
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            if kind in _RESPONSE_TYPES:  # the oldest rollouts: bare response items
                builder.response_item(rec, at)
            elif kind is None and "id" in rec and "timestamp" in rec and not self.have_meta:
                self.have_meta = True  # the oldest rollouts' first line: {"id", "timestamp", …}
                session.id = str(rec["id"])
            elif kind in RECORD_TYPES:  # a type read here, in a shape it never has
                session.malformed_lines += 1
            return
        try:
            if kind == "session_meta":
                if not self.have_meta:
                    self.have_meta = True
                    if payload.get("id"):
                        session.id = str(payload["id"])
                    if isinstance(payload.get("cwd"), str):
                        self.cwds.append(payload["cwd"])
                    session.started = _iso(payload.get("timestamp")) or at
                    for key in ("originator", "cli_version", "forked_from_id", "model_provider"):
                        if payload.get(key):
                            session.meta[key] = payload[key]
                    if isinstance(payload.get("git"), dict):
                        session.meta["git"] = payload["git"]
                    if _spawned(payload.get("source")):
                        session.meta["subagent"] = True
            elif kind == "turn_context":
                cwd = payload.get("cwd")
                if isinstance(cwd, str) and cwd and (not self.cwds or self.cwds[-1] != cwd):
                    self.cwds.append(cwd)
                if payload.get("model"):
                    session.meta["model"] = payload["model"]
            elif kind == "response_item":
                builder.response_item(payload, at)
            elif kind == "event_msg":
                builder.event(payload, at)
            elif kind == "compacted":
                # A summary the model wrote of what came before; replacement_history repeats
                # earlier items, so neither becomes turns (they would be counted twice).
                session.meta["compactions"] = session.meta.get("compactions", 0) + 1
        except (TypeError, AttributeError, ValueError):
            session.malformed_lines += 1  # a known type with an unexpected shape

    def legacy_document(self, doc: dict[str, Any]) -> None:
        """The TypeScript Codex CLI's rollout: `{"session": {"id", "timestamp", "instructions",
        …}, "items": [response items]}`, its items read as a rollout's `response_item`s.

        Its items carry no time: each is dated by the document's `session.timestamp` (when it
        was saved). It wrote the whole conversation again to a new file, under a new random
        `session.id`, at every save, so its files of one conversation hold the same items
        from the first on; the session is named by the id of its first item that has one
        (the model's first output: `rs_…`, `fc_…`, `msg_…`; the person's messages have none),
        the same in each: the longest file tells it, as of two copies of one rollout. Only a
        document with no such item (saved before the first answer) is named by its
        `session.id`."""
        session, builder = self.s, self.builder
        self.have_meta = True
        session.meta["format"] = LEGACY_FORMAT
        header = doc.get("session") if isinstance(doc.get("session"), dict) else {}
        at = _iso(header.get("timestamp"))
        self._seen(at)
        session.started = at
        if header.get("id"):
            session.id = session.meta["rollout_id"] = str(header["id"])
        for key in ("model", "version"):
            if isinstance(header.get(key), str) and header[key]:
                session.meta["model" if key == "model" else "cli_version"] = header[key]
        named = False
        for item in doc.get("items") or ():
            if not isinstance(item, dict):
                session.malformed_lines += 1
                continue
            kind = item.get("type")
            if kind is None and item.get("role") in ("user", "assistant", "system", "developer"):
                kind, item = "message", {**item, "type": "message"}  # an input message, untyped
            if not named and isinstance(item.get("id"), str) and item["id"] and item.get("role") != "user":
                session.id, named = item["id"], True
            if kind not in _RESPONSE_TYPES:
                continue  # a type this reader does not read: skipped, as in a JSONL rollout
            if kind == "function_call" and item.get("name") == "container.exec":
                item = {**item, "name": "shell"}  # the CLI's other name for its shell tool
            try:
                builder.response_item(item, at)
            except (TypeError, AttributeError, ValueError):
                session.malformed_lines += 1

    def finish(self) -> Session:
        session, builder = self.s, self.builder
        if session.torn_tail and session.meta.get("format") != LEGACY_FORMAT:
            # The bytes of the complete lines: what a later read of a grown file starts with.
            session.meta["complete_bytes"] = self.tally.complete_bytes
        session.turns = builder.finish()
        if session.meta.get("subagent"):
            # A sub-agent's "user" is the agent that spawned it, not the person: its words are no
            # correction. Its own tool calls and their failures are real, so they stay.
            session.turns = [t for t in session.turns if t.role != "user"]
        if self.tally.surrogates:
            scrub_surrogates(session)
        session.cwd = self.cwds[0] if self.cwds else None
        if len(self.cwds) > 1:
            session.meta["cwds"] = self.cwds
        if builder.unpaired_outputs:
            session.meta["unpaired_outputs"] = builder.unpaired_outputs
        session.started = session.started or self.first_at
        session.ended = self.last_at
        return session


# session.meta["format"] of a rollout read from the TypeScript CLI's JSON document.
LEGACY_FORMAT = "codex-json"
_WS = re.compile(r"[ \t\n\r]*")


def _cut_short(exc: json.JSONDecodeError, text: str) -> bool:
    """The document stops before its end (saved in part, or still being written)."""
    return not text[exc.pos:].strip() or exc.msg.startswith("Unterminated string")


def _complete_part(text: str) -> dict[str, Any]:
    """What a JSON document cut short holds whole: its top-level keys whose value ends before
    the cut, and of a cut `items` list, the items before the cut."""
    decoder = json.JSONDecoder()
    out: dict[str, Any] = {}
    pos = _WS.match(text).end()
    if not text.startswith("{", pos):
        return out
    pos += 1
    while True:
        pos = _WS.match(text, pos).end()
        try:
            key, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return out
        pos = _WS.match(text, pos).end()
        if not isinstance(key, str) or not text.startswith(":", pos):
            return out
        pos = _WS.match(text, pos + 1).end()
        if key == "items" and text.startswith("[", pos):
            items: list[Any] = []
            out["items"] = items
            pos += 1
            while True:
                pos = _WS.match(text, pos).end()
                try:
                    item, pos = decoder.raw_decode(text, pos)
                except ValueError:
                    return out
                items.append(item)
                pos = _WS.match(text, pos).end()
                if not text.startswith(",", pos):
                    break
                pos += 1
            if not text.startswith("]", pos):
                return out
            pos += 1
        else:
            try:
                out[key], pos = decoder.raw_decode(text, pos)
            except ValueError:
                return out
        pos = _WS.match(text, pos).end()
        if not text.startswith(",", pos):
            return out
        pos += 1


def _is_legacy(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("items"), list) \
        and (isinstance(doc.get("session"), dict) or not doc.keys() - {"session", "items"})


def _json_document(data: bytes, session: Session) -> dict[str, Any] | None:
    """A `.json` rollout's document: the TypeScript CLI's whole one, the complete part of one
    cut short (`torn_tail`), or None when the file is JSON lines after all. A file that is
    neither raises NotAConversation saying where it stops being JSON."""
    text = data.decode("utf-8-sig", errors="replace")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Extra data"):
            return None  # one value a line: JSONL named .json
        if _cut_short(exc, text):
            session.torn_tail = True  # read whole once it has grown (ingest: it changed)
            part = _complete_part(text)
            return {"session": part.get("session"), "items": part.get("items", [])}
        from remem.engine.chats import NotAConversation, _not_json

        raise NotAConversation(f"{_not_json(exc, text, data)}; expected a Codex rollout "
                               '({"session": …, "items": […]}, or one JSON object per line)') from None
    return doc if _is_legacy(doc) else None


def parse_rollout(path: Path | str) -> Session:
    """One rollout file -> Session. Raises SourceUnavailable / OSError only for the file itself
    (and NotAConversation for a `.json` that is no JSON document and no JSON lines)."""
    path = Path(path)
    found = _UUID.findall(path.name)
    session = Session(id=found[-1] if found else path.name.split(".")[0], source="codex",
                      path=str(path))
    reader = _Reader(session)
    lines: Iterable[bytes]
    if path.name.endswith(".json"):
        data = path.read_bytes()  # one document: read whole
        doc = _json_document(data, session)
        if doc is not None:
            reader.tally.surrogates = b"\\ud" in data or b"\\uD" in data
            reader.legacy_document(doc)
            return reader.finish()
        lines = io.BytesIO(data)
    else:
        lines = _rollout_lines(path)
    for rec in _lines(lines, session, reader.tally):
        reader.record(rec)
    return reader.finish()
