"""`remem proxy`: an OpenAI-/Anthropic-compatible proxy that adds memory and records exchanges.

Point a client's base URL at it. For /v1/chat/completions, /v1/responses and /v1/messages it
adds the lessons the conversation bears on to the system prompt (the same selection as the
prompt hook) and appends the exchange to the inbox; every other path passes through untouched.
Bodies and headers go upstream as given (auth included, never logged); answers, errors and
streams come back as the upstream sent them.
"""

from __future__ import annotations

import json
import zlib
from collections import OrderedDict
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from remem.engine import proxying
from remem.log import log

HOP_HEADERS = {"host", "content-length", "connection", "keep-alive", "transfer-encoding",
               "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade"}
MEMORY_HEADER = "x-remem"


class MemoryCache:
    """The memory block chosen for each conversation, chosen once and reused on every turn."""

    def __init__(self, size: int = 512) -> None:
        self._blocks: OrderedDict[str, str] = OrderedDict()
        self._size = size

    def get(self, key: str) -> str | None:
        if key in self._blocks:
            self._blocks.move_to_end(key)
            return self._blocks[key]
        return None

    def put(self, key: str, block: str) -> None:
        self._blocks[key] = block
        self._blocks.move_to_end(key)
        while len(self._blocks) > self._size:
            self._blocks.popitem(last=False)


def _select_block(query: str, session: str) -> str:
    from remem.engine import prime
    from remem.engine.store import Store

    with Store() as store:
        chosen = prime.select(store, query, event="prompt", session_id=session, agent="proxy")
    return chosen.get("text") or ""


def _record(body: dict[str, Any], style: str, reply: str) -> None:
    from remem.engine import clock, events

    try:
        found = proxying.exchange_events(body, style, reply, clock.iso())
        if found:
            events.append_to_inbox(found)
    except Exception as exc:  # recording must never break the client's request
        log("proxy", f"could not record an exchange: {exc!r}")


def _decode(raw: bytes, encoding: str) -> bytes:
    encoding = (encoding or "").lower()
    try:
        if encoding == "gzip":
            return zlib.decompress(raw, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            return zlib.decompress(raw)
    except zlib.error:
        return b""
    return raw if encoding in ("", "identity") else b""


def create_app(upstream: str, *, style: str = "auto", inject: bool = True, record: bool = True,
               timeout_s: float = 600.0) -> Starlette:
    upstream = upstream.rstrip("/")
    cache = MemoryCache()
    client = httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s, connect=10.0), trust_env=False)

    def style_for(path: str) -> str | None:
        """The API family of a path (matched by suffix, so prefixed base URLs work too).

        --style openai or anthropic limits memory and recording to that family; the other
        family's paths then pass through untouched like any other path.
        """
        for suffix, kind in proxying.STYLE_BY_PATH.items():
            if path.endswith(suffix):
                if style == "auto" or (style == "anthropic") == (kind == proxying.ANTHROPIC):
                    return kind
        return None

    async def memory_for(body: dict[str, Any], kind: str, request: Request) -> dict[str, Any]:
        if not inject or request.headers.get(MEMORY_HEADER, "").lower() == "off":
            return body
        key = proxying.conversation_key(body, kind)
        block = cache.get(key)
        if block is None:
            try:
                with anyio.fail_after(2.0):
                    block = await anyio.to_thread.run_sync(_select_block, proxying.query_text(body, kind), key)
            except Exception as exc:  # memory is a bonus; the request goes on without it
                log("proxy", f"memory selection failed: {exc!r}")
                block = ""
            cache.put(key, block)
        return proxying.inject(body, kind, block)

    async def forward(request: Request) -> Response:
        path = request.url.path
        raw = await request.body()
        kind = style_for(path) if request.method == "POST" else None
        body: dict[str, Any] | None = None
        if kind:
            try:
                parsed = json.loads(raw) if raw else None
                body = parsed if isinstance(parsed, dict) else None
            except ValueError:
                body = None
        if kind and body is not None:
            sent = await memory_for(body, kind, request)
            if sent is not body:
                raw = json.dumps(sent, ensure_ascii=False).encode("utf-8")
        headers = [(k, v) for k, v in request.headers.items()
                   if k.lower() not in HOP_HEADERS and k.lower() != MEMORY_HEADER]
        url = upstream + path + (f"?{request.url.query}" if request.url.query else "")
        upstream_request = client.build_request(request.method, url, headers=headers, content=raw)
        try:
            reply = await client.send(upstream_request, stream=True)
        except httpx2.TimeoutException:
            return JSONResponse({"error": {"type": "upstream_timeout", "message": f"{upstream} did not answer in time"}}, 504)
        except httpx2.TransportError as exc:
            return JSONResponse({"error": {"type": "upstream_unreachable", "message": f"{upstream}: {exc}"}}, 502)
        out_headers = {k: v for k, v in reply.headers.items() if k.lower() not in HOP_HEADERS}
        streamed = reply.headers.get("content-type", "").startswith("text/event-stream")
        collected: list[bytes] = []
        should_record = bool(record and kind and body is not None and reply.status_code < 400)

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in reply.aiter_raw():
                    if should_record:
                        collected.append(chunk)
                    yield chunk
            finally:
                await reply.aclose()

        def after() -> None:
            if should_record and body is not None and kind:
                payload = _decode(b"".join(collected), reply.headers.get("content-encoding", ""))
                _record(body, kind, proxying.response_text(kind, payload, streamed))

        return StreamingResponse(relay(), status_code=reply.status_code, headers=out_headers,
                                 background=BackgroundTask(after))

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "upstream": upstream, "inject": inject, "record": record})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()

    routes = [
        Route("/remem/health", health, methods=["GET"]),
        Route("/{path:path}", forward, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def serve(upstream: str, *, host: str = "127.0.0.1", port: int = 4546, style: str = "auto",
          inject: bool = True, record: bool = True) -> None:
    import uvicorn

    app = create_app(upstream, style=style, inject=inject, record=record)
    uvicorn.run(app, host=host, port=port, log_level="warning")
