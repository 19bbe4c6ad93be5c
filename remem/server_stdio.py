"""The stdio side of the MCP server: reading the protocol from stdin, cleaning text that is
not valid Unicode (a lone surrogate, half an emoji) out of what clients send, and refusing a
request nested too deep to parse.

Separate from remem/server.py because it is transport plumbing, not tools: the SDK's own
stdio reader drops a line that fails validation without a reply, so remem reads stdin itself
(on a private descriptor), scrubs each line and answers one nested too deep with an error; the
HTTP side (remem/server_http.py) uses the same `scrub_json` and `too_deep` on request bodies,
and `remem call` the same limit on its arguments.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from contextlib import contextmanager
from typing import Any, Iterator

# A JSON escape of a surrogate ("\ud83d", half an emoji): only a line holding one is re-read.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")

# How deep lists and objects may nest in a request (a JSON-RPC line or body, a JSON API body,
# `remem call`'s arguments). No tool takes more than a list of strings, three levels inside a
# JSON-RPC message; past about 200 the SDK's parser gives up (over stdio without a reply), and
# Python's own at about 1,000 (a RecursionError, which used to stop the server).
MAX_DEPTH = 100
# A JSON string (one left open at the end of the text too, so no quote is scanned twice) or a
# bracket: the brackets outside strings are the nesting.
_STRING_OR_BRACKET = re.compile(rb'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_ID_VALUE = re.compile(rb'\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")')


# What a request nested past MAX_DEPTH gets told, wherever it came in ("the request has …",
# "invalid arguments for recall: …").
NESTED = (f"lists or objects nested more than {MAX_DEPTH} levels deep; no remem tool takes more "
          "than a list of strings: send flatter JSON")


def _as_bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")


def json_depth(text: str | bytes) -> int:
    """How deep lists and objects nest in a JSON text (brackets inside strings are text),
    without parsing it: no recursion, linear in its length (numpy over the brackets)."""
    import numpy as np

    bare = np.frombuffer(_STRING.sub(b"", _as_bytes(text)), dtype=np.uint8)
    step = np.zeros(256, dtype=np.int64)
    step[[ord("["), ord("{")]] = 1
    step[[ord("]"), ord("}")]] = -1
    return int(np.cumsum(step[bare]).max(initial=0))


def too_deep(text: str | bytes, what: str = "the request") -> str | None:
    """The one-line refusal for a JSON text nested more than MAX_DEPTH levels, else None. A text
    with at most MAX_DEPTH opening brackets (nearly every one) is let through without a look."""
    data = _as_bytes(text)
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return None
    return f"{what} has {NESTED}" if json_depth(data) > MAX_DEPTH else None


def request_id(text: str | bytes) -> int | str | None:
    """The id of a JSON-RPC request however deep its params nest (where parsing it would fail):
    the top-level "id" member's number or string; None for a notification, or none found."""
    data = _as_bytes(text)
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
        elif token in (b"]", b"}"):
            depth -= 1
        elif depth == 1 and token == b'"id"':
            value = _ID_VALUE.match(data, match.end())
            if value:
                try:
                    found = json.loads(value.group(1))
                except ValueError:
                    return None
                return found if isinstance(found, (int, str)) else None
    return None


class TooDeep(ValueError):
    """A value nested more than MAX_DEPTH levels: a bad request, refused in one line."""


def scrub(value: Any, _depth: int = 0) -> Any:
    """A JSON value with every lone surrogate (in keys and strings) replaced by U+FFFD: JSON
    can carry them (Node-based agents send half an emoji), pydantic and SQLite refuse them.
    Raises TooDeep for lists or dicts nested more than MAX_DEPTH levels, long before the
    recursion goes as deep as Python allows."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, (list, dict)) and _depth >= MAX_DEPTH:
        raise TooDeep(NESTED)
    if isinstance(value, list):
        return [scrub(v, _depth + 1) for v in value]
    if isinstance(value, dict):
        return {scrub(k, _depth + 1): scrub(v, _depth + 1) for k, v in value.items()}
    return value


def scrub_json(text: str | bytes) -> str | None:
    """`text` re-encoded with lone surrogates replaced, or None when it has none to replace
    (or is not JSON, which the transport then refuses as it would have)."""
    pattern = SURROGATE_ESCAPE_BYTES if isinstance(text, bytes) else SURROGATE_ESCAPE
    if not pattern.search(text):  # type: ignore[arg-type]
        return None
    if too_deep(text):  # refused by the transport, never parsed here (Python's parser would recurse)
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return json.dumps(scrub(data), ensure_ascii=False, separators=(",", ":"))


# What a line that is not JSON gets told (a JSON-RPC parse error, id null).
NOT_JSON = "the line is not JSON: send one JSON-RPC message per line"


class ScrubbedLines:
    """The stdio transport's input: the lines of a text stream, each with lone surrogate
    escapes replaced by U+FFFD (see `scrub_json`); other lines pass through untouched, but for
    what the SDK would drop without a reply, answered here through `reply`: one nested more than
    MAX_DEPTH levels (Python's parser would also stop the server) with an error for its id, and
    one that is not JSON with a parse error (-32700, id null). A blank line is skipped."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        # Sends a JSON-RPC message to the client; set once the transport's write stream exists.
        self.reply: Any = None

    def __aiter__(self) -> "ScrubbedLines":
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self.stream.readline()
            if not line:
                raise StopAsyncIteration
            if not line.strip():
                continue  # nothing sent: nothing to answer (the SDK would drop it too)
            refusal = too_deep(line)
            if refusal is not None:
                await self._refuse(line, refusal)
                continue
            fixed = scrub_json(line)
            if fixed is not None:  # parsed already, to scrub it
                return fixed + "\n"
            if _is_json(line):
                return line
            await self._not_json(line)

    async def _refuse(self, line: str, refusal: str) -> None:
        """An error for the request this line holds (a notification gets none), and a log line."""
        from remem.log import log

        found = request_id(line)
        log("server", f"refused a request{'' if found is None else f' (id {found!r})'}: {refusal}")
        if found is None:
            return
        from mcp_types import INVALID_REQUEST

        await self._send_error(found, INVALID_REQUEST, refusal)

    async def _not_json(self, line: str) -> None:
        """A parse error (-32700, id null: none can be read from it) for a line that is not
        JSON, and one log line with its length and its first words."""
        from mcp_types import PARSE_ERROR

        from remem.log import log

        text = line.strip()
        log("server", f"refused a line that is not JSON ({len(text):,} characters, starting {text[:60]!r})")
        await self._send_error(None, PARSE_ERROR, NOT_JSON)

    async def _send_error(self, found: int | str | None, code: int, message: str) -> None:
        if self.reply is None:
            return
        import anyio
        from mcp_types import ErrorData, JSONRPCError

        try:
            await self.reply(JSONRPCError(jsonrpc="2.0", id=found, error=ErrorData(code=code, message=message)))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session is over: nobody to answer


def _is_json(line: str) -> bool:
    """Whether a line parses as JSON (what the SDK then checks as a JSON-RPC message)."""
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


@contextmanager
def _protocol_stdin() -> Iterator[Any]:
    """The protocol's stdin as a binary stream on a private descriptor, with fd 0 pointed at
    the null device meanwhile (as the SDK's own transport does), so no child reads the wire."""
    try:
        sys.stdin.buffer.fileno()
        private = os.dup(0)
    except (AttributeError, OSError, ValueError):
        yield sys.stdin.buffer
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        os.close(private)
        yield sys.stdin.buffer
        return
    try:
        # closefd=False: a worker thread may still block reading it after the transport ends.
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        try:
            os.dup2(private, 0)
        except OSError:
            pass


async def run_scrubbed_stdio(lowlevel: Any) -> None:
    """The SDK's stdio transport for the low-level server, reading requests through
    `ScrubbedLines` from the protocol's private stdin."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    with _protocol_stdin() as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
        lines = ScrubbedLines(anyio.wrap_file(text))
        try:
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
                async def reply(message: Any) -> None:  # out through the SDK's own writer
                    await write_stream.send(SessionMessage(message))

                lines.reply = reply
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        finally:
            try:
                text.detach()  # the descriptor is not the wrapper's to close
            except ValueError:
                pass
