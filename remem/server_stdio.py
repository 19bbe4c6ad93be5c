"""The stdio side of the MCP server: reading the protocol from stdin, and cleaning text that
is not valid Unicode (a lone surrogate, half an emoji) out of what clients send.

Separate from remem/server.py because it is transport plumbing, not tools: the SDK's own
stdio reader drops a line that fails validation without a reply, so remem reads stdin itself
(on a private descriptor) and scrubs each line; the HTTP side (remem/server_http.py) uses
the same `scrub_json` on request bodies.
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


def scrub(value: Any) -> Any:
    """A JSON value with every lone surrogate (in keys and strings) replaced by U+FFFD: JSON
    can carry them (Node-based agents send half an emoji), pydantic and SQLite refuse them."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    return value


def scrub_json(text: str | bytes) -> str | None:
    """`text` re-encoded with lone surrogates replaced, or None when it has none to replace
    (or is not JSON, which the transport then refuses as it would have)."""
    pattern = SURROGATE_ESCAPE_BYTES if isinstance(text, bytes) else SURROGATE_ESCAPE
    if not pattern.search(text):  # type: ignore[arg-type]
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return json.dumps(scrub(data), ensure_ascii=False, separators=(",", ":"))


class ScrubbedLines:
    """The stdio transport's input: the lines of a text stream, each with lone surrogate
    escapes replaced by U+FFFD (see `scrub_json`); other lines pass through untouched."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __aiter__(self) -> "ScrubbedLines":
        return self

    async def __anext__(self) -> str:
        line = await self.stream.readline()
        if not line:
            raise StopAsyncIteration
        fixed = scrub_json(line)
        return line if fixed is None else fixed + "\n"


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

    with _protocol_stdin() as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
        lines = ScrubbedLines(anyio.wrap_file(text))
        try:
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        finally:
            try:
                text.detach()  # the descriptor is not the wrapper's to close
            except ValueError:
                pass
