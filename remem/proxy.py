"""`remem proxy`: an OpenAI-/Anthropic-compatible proxy that adds memory and records exchanges.

Point a client's base URL at it. For a path ending in /chat/completions, /responses or
/messages (after /v1, or any other base path the upstream URL or the client gives) it adds
the lessons the conversation bears on to the system prompt (the same selection as the
prompt hook) and appends the exchange to the inbox; every other path passes through untouched.
Bodies, paths and headers go upstream as given and nothing else (auth included, never logged;
no header or cookie of the proxy's own; while recording, Accept-Encoding keeps only the codings
the recorder can read); answers, errors, streams and headers (repeated ones apart) come back as
the upstream sent them, and one the upstream breaks off reaches the client cut off too.
"""

from __future__ import annotations

import http.cookiejar
import json
import logging
import socket
import sys
import zlib
from collections import OrderedDict
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from remem.engine import clock, proxying
from remem.log import capped, log

HOP_HEADERS = {"host", "content-length", "connection", "keep-alive", "transfer-encoding",
               "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade"}
# The answer's bytes are relayed as received (still encoded), so its length is the upstream's:
# a HEAD or a plain answer keeps its Content-Length (and is not turned into a chunked one).
RESPONSE_HOP_HEADERS = HOP_HEADERS - {"content-length"}
MEMORY_HEADER = "x-remem"


class NoCookies(http.cookiejar.DefaultCookiePolicy):
    """The proxy's client keeps no cookie and sends none of its own: cookies are the client's
    business, and pass through as its headers and the upstream's."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return False

    def return_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return False


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


class BrokeOff(Exception):
    """The upstream's answer ended before it was whole (RelayResponse cuts the client's too)."""


class RelayResponse(StreamingResponse):
    """The upstream's answer, chunk by chunk. One the upstream broke off is not ended: without
    its last (empty) chunk the server closes the connection, so the client sees an answer cut
    short, as it would from the upstream itself, never one that looks whole."""

    async def stream_response(self, send: Any) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            async for chunk in self.body_iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except BrokeOff:
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _NotEnded(logging.Filter):
    """uvicorn's error line for an answer RelayResponse leaves unended on purpose: the proxy's
    own log says why, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing response."


# How long a request waits for its memory to be chosen before it goes on without it.
SELECT_CAP_S = 2.0
# Of the cap, what recording the choice may wait for another writer's lock (a sleep, an
# ingest): choosing must be done by the cap less this, so a recorded choice is one that is shown.
RECORD_WAIT_S = 0.5


def _select_block(query: str, session: str) -> str:
    """The memory block for a conversation, chosen within SELECT_CAP_S, as the hooks bound
    theirs: a deadline for choosing, and a short busy timeout for recording the choice.
    Raises (StoreBusy, TimeoutError, ...) when no choice could be made in time."""
    import time

    from remem.engine import prime
    from remem.engine.store import Store

    deadline = time.monotonic() + SELECT_CAP_S - RECORD_WAIT_S
    with Store(busy_timeout_ms=int(RECORD_WAIT_S * 1000)) as store:
        # A proxy knows no project (cwd=None): only lessons without one are chosen.
        chosen = prime.select(store, query, event="prompt", cwd=None, session_id=session, agent="proxy",
                              deadline=deadline)
    if chosen.get("late"):  # no choice, which must not stand for the whole conversation
        raise TimeoutError(f"memory not chosen within {SELECT_CAP_S:g} s")
    return chosen.get("text") or ""


def _warm() -> None:
    """Load the model before the first request: choosing a conversation's memory then fits
    in SELECT_CAP_S from the first turn on."""
    try:
        from remem.engine import prime  # noqa: F401  (the modules selection imports)
        from remem.engine.embed import get_embedder

        get_embedder().encode(["warm up"])
    except Exception as exc:  # the first turns choose (and say why they cannot) on their own
        log("proxy", f"could not load the model ahead of the first request: {exc!r}")


def _read_reply(style: str, payload: bytes, encoding: str, streamed: bool) -> tuple[str, bytes]:
    """(the assistant's text, the decoded payload) of an answer; ("", b"") when unreadable."""
    try:
        raw = _decode(payload, encoding)
        if payload and not raw:
            log("proxy", f"a reply in content-encoding {encoding!r} could not be read; "
                         "recorded without the answer")
        return proxying.response_text(style, raw, streamed), raw
    except Exception as exc:
        log("proxy", f"could not read a reply to record: {exc!r}")
        return "", b""


def _record(body: dict[str, Any], style: str, reply: str, session: str | None = None,
            turn: str = "", at: str | None = None, recorded: proxying.Recorded | None = None) -> None:
    from remem.engine import events

    try:
        # An answer that cannot be read (an odd shape, an unknown coding, cut short) still
        # leaves the request's own turns recorded; of a conversation recorded before, only
        # the turns not written yet.
        found = proxying.exchange_events(body, style, reply, at or clock.iso(), session=session, turn=turn,
                                         recorded=recorded)
        if found:
            events.append_to_inbox(found)
            if recorded is not None:
                recorded.remember(found)
    except Exception as exc:  # recording must never break the client's request
        log("proxy", f"could not record an exchange: {exc!r}")


def _decode(raw: bytes, encoding: str) -> bytes:
    encoding = (encoding or "").lower()
    try:
        if encoding in ("gzip", "x-gzip"):
            return zlib.decompress(raw, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            return zlib.decompress(raw)
    except zlib.error:
        return b""
    return raw if encoding in ("", "identity") else b""


# The content codings _decode reads. While recording, the upstream is offered only these
# (of those the client accepts), so a br or zstd answer never leaves only the question kept.
DECODABLE = {"gzip", "x-gzip", "deflate", "identity"}


def _decodable_accept(value: str) -> str:
    kept = [part.strip() for part in value.split(",")
            if part.split(";")[0].strip().lower() in DECODABLE]
    return ", ".join(kept) or "identity"


def _raw_target(request: Request) -> str:
    """The path exactly as the client sent it (an encoded slash stays %2F), with its query."""
    from urllib.parse import quote

    raw = request.scope.get("raw_path")
    if raw:
        # Only bytes that may not stand in a URL (not ASCII, spaces) are escaped; the rest as sent.
        path = quote(raw, safe="".join(chr(c) for c in range(33, 127)))
    else:
        path = quote(request.url.path)
    query = request.scope.get("query_string") or b""
    return path + (f"?{query.decode('latin-1')}" if query else "")


def upstream_path(upstream: str) -> str:
    """The path of --upstream (`/v1` in `https://api.openai.com/v1`), without its last slash:
    what comes before the client's path in every request the upstream gets."""
    from urllib.parse import urlsplit

    try:
        return urlsplit(upstream).path.rstrip("/")
    except ValueError:  # refused at start by `remem proxy`
        return ""


def upstream_warning(upstream: str) -> str | None:
    """One line for an --upstream whose own path ends in an endpoint (`…/v1/chat/completions`):
    each request's path is added after it, so the upstream gets `…/chat/completions/chat/
    completions`, and a request to the proxy's root (`…/chat/completions/`) is not known for one
    to add memory to or record."""
    base = upstream_path(upstream)
    endpoint = next((suffix for suffix in proxying.STYLE_BY_PATH if base.endswith(suffix)), None)
    if endpoint is None or proxying.style_of_path(base) is None:
        return None
    root = upstream.rstrip("/")
    return (f"remem proxy: --upstream ends in {endpoint}, an endpoint, and each request's path is added "
            f"after it; give the API's base URL, e.g. --upstream {root[:len(root) - len(endpoint)]}")


class Guard:
    """Who may use the proxy, by the rules `remem serve --http` follows (remem.bind).

    With `token` (the proxy beyond loopback), every request must carry `Proxy-Authorization:
    Bearer <token>`: Authorization stays the upstream API's own key, and Proxy-Authorization is
    never forwarded (a hop header). With `local_only` (the proxy on loopback), a request whose
    Host or Origin names another machine is refused: a web page rebinding its name to
    127.0.0.1 cannot have the person's browser post into the memory's inbox."""

    def __init__(self, app: Any, *, token: str = "", local_only: bool = False) -> None:
        self.app, self.token, self.local_only = app, token, local_only

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from remem.bind import NOT_LOCAL, bearer_matches, from_this_machine, header_bytes

        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}
            refused = None
            # The token as bytes (not the Latin-1 text above): a token that is not ASCII matches.
            if self.token and not bearer_matches(header_bytes(scope, b"proxy-authorization"), self.token):
                refused = JSONResponse(
                    {"error": {"type": "remem_token", "message": "missing or wrong remem token: send "
                               "Proxy-Authorization: Bearer <REMEM_TOKEN or server.token>"}},
                    407, headers={"Proxy-Authenticate": "Bearer"})
            elif self.local_only and not from_this_machine(headers.get("host", ""), headers.get("origin", "")):
                refused = JSONResponse({"error": {"type": "remem_not_local", "message": NOT_LOCAL}}, 403)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(upstream: str, *, style: str = "auto", inject: bool = True, record: bool = True,
               timeout_s: float = 600.0, token: str = "", local_only: bool = False) -> Any:
    """The proxy's ASGI app; with `token`, every request must send it; with `local_only`, every
    request must come from this machine (see Guard). serve() sets them from its address."""
    app = _create_app(upstream, style=style, inject=inject, record=record, timeout_s=timeout_s)
    return Guard(app, token=token, local_only=local_only) if token or local_only else app


def _create_app(upstream: str, *, style: str, inject: bool, record: bool, timeout_s: float) -> Starlette:
    upstream = upstream.rstrip("/")
    cache = MemoryCache()
    # Faithful: no cookie jar (an upstream's Set-Cookie would go back upstream on every later
    # request, of any client) and no default headers (a client that sent no Accept-Encoding
    # would get gzip bytes it never asked for).
    client = httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s, connect=10.0), trust_env=False,
                                cookies=http.cookiejar.CookieJar(policy=NoCookies()))
    client.headers.clear()

    base_path = upstream_path(upstream)

    def style_for(path: str) -> str | None:
        """The API family of a request, by the path the upstream gets (--upstream's own path,
        `/v1` in `https://api.openai.com/v1`, then the client's) and its last segments, so any
        prefix works: `/v1/chat/completions`, `/v1beta/openai/chat/completions`,
        `/openai/deployments/…/chat/completions`, a bare `/chat/completions`.

        --style openai or anthropic limits memory and recording to that family; the other
        family's paths then pass through untouched like any other path.
        """
        kind = proxying.style_of_path(base_path + path)
        if kind and (style == "auto" or (style == "anthropic") == (kind == proxying.ANTHROPIC)):
            return kind
        return None

    threads = proxying.Threads()
    recorded = proxying.Recorded()

    async def memory_for(body: dict[str, Any], kind: str, key: str, request: Request) -> dict[str, Any]:
        if not inject or request.headers.get(MEMORY_HEADER, "").lower() == "off":
            return body
        if not proxying.can_inject(body, kind):  # nothing chosen (nor logged in primes) for nothing
            return body
        block = cache.get(key)
        if block is None:
            try:
                # abandon_on_cancel: at the cap the request goes on and the worker thread is left
                # to finish (its deadline and busy timeout end it soon after); without it the
                # request would wait for the thread whatever the cap.
                with anyio.fail_after(SELECT_CAP_S):
                    block = await anyio.to_thread.run_sync(
                        _select_block, proxying.query_text(body, kind), key, abandon_on_cancel=True)
            except TimeoutError:
                log("proxy", f"memory selection failed: not chosen within {SELECT_CAP_S:g} s; "
                             "sent without memory, the next turn tries again")
                return body
            except Exception as exc:  # memory is a bonus; the request goes on without it
                log("proxy", f"memory selection failed: {exc!r}; sent without memory, "
                             "the next turn tries again")
                return body
            # Only a choice is kept for the conversation: a failure (a busy or damaged store, the
            # cap) is not, so a later turn chooses again.
            cache.put(key, block)
        return proxying.inject(body, kind, block)

    async def forward(request: Request) -> Response:
        # Dated when it arrived: recording runs after the answer, on a worker thread, so two
        # quick turns could otherwise be recorded (and dated) in the other order.
        arrived = clock.iso()
        path = request.url.path
        try:
            raw = await request.body()
        except ClientDisconnect:  # no one to answer or to forward for: one line, not a traceback
            log("proxy", f"a client left before sending its whole request to {request.method} {capped(path)}; "
                         "nothing forwarded")
            return Response(status_code=400)
        kind = style_for(path) if request.method == "POST" else None
        body: dict[str, Any] | None = None
        if kind:
            try:
                parsed = json.loads(raw) if raw else None
                body = parsed if isinstance(parsed, dict) else None
            except (ValueError, RecursionError):  # not JSON, or nested too deep to read: as sent
                body = None
        # A Responses turn that continues a conversation the server keeps reuses its key.
        thread = threads.find(body) if kind == proxying.RESPONSES and body is not None else None
        key = ""
        if kind and body is not None:
            try:
                key = thread[0] if thread else proxying.conversation_key(body, kind)
                sent = await memory_for(body, kind, key, request)
                if sent is not body:
                    # No NaN/Infinity (not JSON) and no lone surrogate that UTF-8 cannot hold: a
                    # body that cannot be written again goes as the client sent it, without memory.
                    raw = json.dumps(sent, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except Exception as exc:  # memory is optional; the request is not
                log("proxy", f"request sent as given, without memory: {exc!r}")
        recording = bool(record and kind and body is not None)
        headers = [(k, v) for k, v in request.headers.items()
                   if k.lower() not in HOP_HEADERS and k.lower() != MEMORY_HEADER]
        if recording:
            headers = [(k, _decodable_accept(v) if k.lower() == "accept-encoding" else v)
                       for k, v in headers]
        url = upstream + _raw_target(request)
        upstream_request = client.build_request(request.method, url, headers=headers, content=raw)
        # A client that leaves while the upstream thinks never gets the answer that follows: it
        # is relayed to no one and not recorded as received (its question is). Watched from
        # here: the body is read, so all the client can do next is leave.
        left = anyio.Event()

        async def watch() -> None:
            if (await request.receive())["type"] == "http.disconnect":
                left.set()

        failed: Response | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            try:
                reply = await client.send(upstream_request, stream=True)
            except httpx2.TimeoutException:
                failed = JSONResponse({"error": {"type": "upstream_timeout",
                                                 "message": f"{upstream} did not answer in time"}}, 504)
            except httpx2.TransportError as exc:
                failed = JSONResponse({"error": {"type": "upstream_unreachable", "message": f"{upstream}: {exc}"}},
                                      502)
            group.cancel_scope.cancel()
        if failed is not None:
            return failed
        # As a list, byte for byte: a mapping would join two Set-Cookie into one broken cookie.
        out_headers = [(k, v) for k, v in reply.headers.raw
                       if k.lower().decode("latin-1") not in RESPONSE_HOP_HEADERS]
        if any(k.lower() == b"transfer-encoding" for k, _ in reply.headers.raw):
            out_headers = [(k, v) for k, v in out_headers if k.lower() != b"content-length"]
        streamed = reply.headers.get("content-type", "").startswith("text/event-stream")
        encoding = reply.headers.get("content-encoding", "")
        collected: list[bytes] = []
        ok = reply.status_code < 400 and body is not None and bool(kind)
        keep_thread = ok and kind == proxying.RESPONSES and (inject or record)
        should_record = recording and ok
        done: dict[str, Any] = {"whole": False}

        async def relay() -> AsyncIterator[bytes]:
            try:
                try:
                    async for chunk in reply.aiter_raw():
                        if should_record or keep_thread:
                            collected.append(chunk)
                        yield chunk
                except httpx2.TransportError as exc:  # broke off, timed out: after() keeps the question
                    log("proxy", f"the upstream broke off its answer to {request.method} {path}: "
                                 f"{type(exc).__name__}; the client's connection is cut, not ended")
                    raise BrokeOff from None
                if (should_record or keep_thread) and (left.is_set() or await request.is_disconnected()):
                    # Sent to no one: after() keeps the question, not an answer the client never got.
                    log("proxy", f"the client left before the answer to {request.method} {path} came; "
                                 "only its question is recorded")
                    return
                done["whole"] = True
                if keep_thread and body is not None and key:
                    # Known before the client can send its next turn (which names this answer).
                    text, decoded = _read_reply(proxying.RESPONSES, b"".join(collected), encoding, streamed)
                    answer_id = proxying.response_id(decoded, streamed)
                    session = thread[1] if thread else proxying.session_key(
                        proxying.messages_of(body, kind) + ([("assistant", text)] if text else []), kind)
                    if answer_id:
                        threads.remember(answer_id, (key, session))
                    turn = (answer_id or str(body.get("previous_response_id") or "")) if thread else ""
                    done.update(text=text, turn=turn, session=session)
            finally:
                await reply.aclose()

        def after() -> None:
            if not (should_record and body is not None and kind):
                return
            if not done["whole"]:
                # The client left (or the upstream broke off) mid-answer: what it got is not the
                # answer, so only the question is recorded.
                _record(body, kind, "", at=arrived, recorded=recorded)
                return
            if "text" in done:
                _record(body, kind, done["text"], done["session"], done["turn"], at=arrived, recorded=recorded)
                return
            text, _ = _read_reply(kind, b"".join(collected), encoding, streamed)
            _record(body, kind, text, at=arrived, recorded=recorded)

        response = RelayResponse(relay(), status_code=reply.status_code, background=BackgroundTask(after))
        response.raw_headers = out_headers
        return response

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


ASCII_SPACE = " \t\n\r\x0b\x0c"  # what bytes.strip() takes off, as remem.bind.bearer_matches trims


def check_token(token: str) -> None:
    """Refuse, in one line, a token (REMEM_TOKEN or server.token) a client cannot send: an
    HTTP header carries printable ASCII, and HTTP clients (the mcp SDK's, httpx, the OpenAI and
    Anthropic SDKs) fail before sending one with any other character. Whitespace around it is
    no part of it (a header's value is trimmed). Both `remem serve --http` and `remem proxy`
    ask this at start, after remem.bind.check_bind."""
    from remem.errors import RememError

    # Which characters is not said: the line would show part of a secret.
    if any(not " " <= c <= "~" for c in token.strip(ASCII_SPACE)):
        raise RememError(
            "the token (REMEM_TOKEN or server.token) has a character no HTTP client can send (an "
            "accent, an emoji, a tab...); use printable ASCII only, e.g. REMEM_TOKEN=$(openssl rand -hex 16)")


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound now: a busy port is one line, before anything claims the
    server is running. `remem proxy` and `remem serve --http` both listen on it."""
    from remem.errors import RememError

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except (OSError, OverflowError) as exc:  # in use, not this machine's address, port > 65535
        sock.close()
        reason = getattr(exc, "strerror", None) or str(exc)
        raise RememError(f"cannot listen on {host}:{port} ({reason}); "
                         "pick another with --port or stop what holds it") from None
    return sock


def serve(upstream: str, *, host: str = "127.0.0.1", port: int = 4546, style: str = "auto",
          inject: bool = True, record: bool = True, sock: socket.socket | None = None,
          token: str = "") -> None:
    """Serve until interrupted, on `sock` when given (from listen()), else on host:port; with
    `token`, only to requests that send it; on loopback, only to requests from this machine."""
    from remem.bind import is_loopback

    if sock is None:
        sock = listen(host, port)
    if inject:
        import threading

        threading.Thread(target=_warm, name="remem-proxy-warm", daemon=True).start()
    app = create_app(upstream, style=style, inject=inject, record=record, token=token,
                     local_only=is_loopback(host))
    logging.getLogger("uvicorn.error").addFilter(_NotEnded())
    try:
        # The upstream's own Server and Date headers come through; uvicorn's would double them.
        run(app, sock, sys.stdout, host=host, port=port, server_header=False, date_header=False)
    finally:
        sock.close()


# How long a stop (Ctrl-C, SIGTERM) waits for the requests under way (a stream, a client still
# sending its body, an MCP session's open stream) before ending them.
GRACE_S = 5


class _Stopping(logging.Filter):
    """Once the server stops, what ending the requests still open makes uvicorn (and Starlette)
    log: a traceback per request cancelled at GRACE_S or at a second Ctrl-C, the count of them,
    an open stream left unended. The "stopping…" line said so already."""

    def __init__(self, server: Any) -> None:
        super().__init__()
        self.server = server

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.server.should_exit:
            return True
        import asyncio

        error = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        last = message.rstrip().rsplit("\n", 1)[-1]  # a traceback's last line names its exception
        return not (isinstance(error, asyncio.CancelledError) or "CancelledError" in last
                    or message.startswith("Cancel ") and "graceful shutdown" in message
                    or message == "ASGI callable returned without completing response.")


def run(app: Any, sock: socket.socket, out: Any, **options: Any) -> None:
    """Serve `app` on `sock` until stopped. A stop says "stopping…" on `out` (where the start line
    went) and waits at most GRACE_S for the requests under way; a second Ctrl-C stops at once,
    without tracebacks."""
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if not self.should_exit:
                try:
                    print(f"remem: stopping… (open requests get {GRACE_S} s; "
                          f"{'Ctrl-C again stops now' if sig == signal.SIGINT else 'then they are ended'})",
                          file=out, flush=True)
                except (OSError, ValueError, RuntimeError):  # a closed or busy stream: stop all the same
                    pass
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=GRACE_S, **options)
    server = Server(config)
    quiet = _Stopping(server)
    logger = logging.getLogger("uvicorn.error")
    logger.addFilter(quiet)
    try:
        server.run(sockets=[sock])
    finally:
        logger.removeFilter(quiet)
