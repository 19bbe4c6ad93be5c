"""The HTTP side of `remem serve --http`: streamable HTTP at /mcp, the /memory/* JSON API
(the same tools, with the same checks), and the guard in front of both: a bearer token on
every request when one is set, and on loopback no request from a foreign Host or Origin."""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from remem import __version__
from remem.bind import NOT_LOCAL, bearer_matches, check_bind, from_this_machine, header_bytes, is_loopback
from remem.engine.store import MAX_DETAIL, MAX_GIST, StoreBusy
from remem.errors import RememError, StoreError
from remem.hooks import MAX_STDIN
from remem.log import capped, shown
from remem.server import _one_line, build_server
from remem.server_stdio import NESTED, request_id, scrub_json, too_deep
from remem.server_tools import MissingMemory

def http_app(mcp: MCPServer, *, host: str, token: str) -> Any:
    """The Starlette app: /mcp (streamable HTTP) and the /memory/* JSON API, behind a guard."""
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    async def call(name: str, args: dict[str, Any]) -> JSONResponse:
        try:
            result = await mcp.call_tool(name, args)
        except ToolError as exc:
            status = error_status(exc)
            # A busy memory is worth another try in a moment (the other writer finishes).
            retry = {"Retry-After": "1"} if isinstance(exc.__cause__, StoreBusy) else None
            return JSONResponse({"error": _one_line(str(exc))}, status_code=status, headers=retry)
        if getattr(result, "is_error", False):
            text = " ".join(getattr(c, "text", "") for c in result.content)
            return JSONResponse({"error": _one_line(text)}, status_code=400)
        return JSONResponse(result.structured_content)

    async def body(request: Request) -> dict[str, Any] | JSONResponse:
        try:
            data = await request.json()
        except RecursionError:  # the Guard refuses a body this deep before it gets here
            return JSONResponse({"error": f"the body has {NESTED}"}, 400)
        except UnicodeDecodeError:  # a ValueError too: said first, as what to fix
            return JSONResponse({"error": "the body is not UTF-8; send UTF-8 JSON"}, 400)
        except ValueError:
            return JSONResponse({"error": "the body must be a JSON object, e.g. {\"query\": \"...\"}"}, 400)
        if not isinstance(data, dict):
            return JSONResponse({"error": "the body must be a JSON object, e.g. {\"query\": \"...\"}"}, 400)
        return data

    @mcp.custom_route("/memory/health", methods=["GET"])
    async def health(request: Request) -> JSONResponse:
        import anyio

        from remem.errors import database_problem

        def read() -> dict[str, Any]:
            from remem import config
            from remem.engine import status
            from remem.engine.embed import get_embedder

            # What every call needs, so "ok" means a call can work: the config as it is now
            # (edited under the running server), the memory, and the embedding model (loaded
            # once per process, then kept: cheap after the first time).
            config.load()
            with mcp.memory.store() as store:  # type: ignore[attr-defined]
                facts = status.summary(store)
            get_embedder()
            return {"status": "ok", "version": __version__, "home": facts["home"],
                    "counts": facts["counts"], "tasks": facts["tasks"]}

        try:
            return JSONResponse(await anyio.to_thread.run_sync(read))
        except Exception as exc:  # the config, memory or model cannot be used: say why, as the tools do
            problem = str(exc) if isinstance(exc, RememError) else database_problem(exc)
            if not problem:
                raise
            return JSONResponse({"status": "error", "error": _one_line(problem)}, status_code=503)

    def no_query(request: Request, example: str) -> JSONResponse | None:
        """A 400 for a query field on a route that reads its fields from the body: read by no
        one, `?short_term=true` would store a long-term memory, `?k=1` answer five hits."""
        if not request.query_params:
            return None
        first = next(iter(request.query_params.keys()))
        return JSONResponse({"error": f"POST {request.url.path} takes no query field (got {shown(first)}); "
                                      f"give fields in the JSON body, e.g. {example}"}, status_code=400)

    @mcp.custom_route("/memory/recall", methods=["POST"])
    async def recall_route(request: Request) -> JSONResponse:
        refused = no_query(request, '{"query": "...", "k": 3}')
        data = refused if refused is not None else await body(request)
        return data if isinstance(data, JSONResponse) else await call("recall", data)

    @mcp.custom_route("/memory/remember", methods=["POST"])
    async def remember_route(request: Request) -> JSONResponse:
        refused = no_query(request, '{"text": "...", "short_term": true}')
        data = refused if refused is not None else await body(request)
        return data if isinstance(data, JSONResponse) else await call("remember", data)

    def query_args(request: Request, tool: str) -> dict[str, Any] | JSONResponse:
        """The query's fields as the tool's arguments: one left empty (`?kind=&limit=`, as
        docs/MCP.md shows the form) is unset, as an MCP client sends it; a field the tool does
        not take is passed on, empty or not, for the tool to refuse by name. A field given
        twice is refused (400): which one was meant is not for the server to guess."""
        takes = set(getattr(mcp, "parameters", {}).get(tool, ()))
        given: dict[str, str] = {}
        for key, value in request.query_params.multi_items():
            if key in given:
                return JSONResponse({"error": f"the query gives {shown(key)} more than once; "
                                              "give each field once"}, status_code=400)
            given[key] = value
        return {k: v for k, v in given.items() if v != "" or k not in takes}

    @mcp.custom_route("/memory/lessons", methods=["GET"])
    async def lessons_route(request: Request) -> JSONResponse:
        if (await request.body()).strip():  # {"kind": "error"} read by no one would list every lesson
            return JSONResponse({"error": "GET /memory/lessons takes no body; give its fields in the query, "
                                          "e.g. /memory/lessons?kind=error&limit=1"}, status_code=400)
        args = query_args(request, "lessons")
        return args if isinstance(args, JSONResponse) else await call("lessons", args)

    @mcp.custom_route("/memory/{id}", methods=["GET", "DELETE"])
    async def memory_route(request: Request) -> JSONResponse:
        memory_id = request.path_params["id"]
        said = capped(memory_id)  # as an error line echoes it: a long one by its start and length
        if memory_id in _NAMED:  # GET /memory/recall is the wrong method, not a memory id
            return JSONResponse({"error": f"/memory/{memory_id} takes {_NAMED[memory_id]}"},
                                status_code=405, headers={"Allow": _NAMED[memory_id]})
        # Every query field goes to the tool, which refuses one it does not take ("?hrad=true"
        # must not archive what was meant to be deleted); the id is the path's alone.
        tool = "delete_memory" if request.method == "DELETE" else "get_memory"
        if "id" in request.query_params:
            return JSONResponse({"error": f"unknown field 'id' in the query: the id is the path's, "
                                          f"{request.method} /memory/{said}"}, status_code=400)
        if (await request.body()).strip():  # {"hard": true} read by no one would archive instead
            fields = "; give hard as ?hard=true" if tool == "delete_memory" else ""
            return JSONResponse({"error": f"{request.method} /memory/{said} takes no body{fields}"},
                                status_code=400)
        args = query_args(request, tool)
        return args if isinstance(args, JSONResponse) else await call(tool, {**args, "id": memory_id})

    # The SDK's own Host/Origin check is off: the Guard in front of every route is the one rule
    # for /mcp and /memory/* alike (the SDK's is narrower, with no port-less "localhost", no
    # other 127.x address and no https origin, and it refuses with a plain-text 421).
    app = mcp.streamable_http_app(
        host=host, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    app.add_exception_handler(HTTPException, _http_error)  # 404, 405: JSON like every error
    return Guard(app, token=token, loopback=is_loopback(host))


def error_status(exc: BaseException) -> int:
    """The JSON API's status for a tool error: 404 for an id that is not there; 503 for a
    memory that cannot be used now (busy, read-only, damaged, gone, a broken config or
    embedding model: the request was fine, a retry or the named fix is what helps), as /memory/health answers; else 400 (the request)."""
    import sqlite3

    from remem.engine.embed import EmbedModelError
    from remem.errors import ConfigError

    cause = exc.__cause__
    if isinstance(exc, MissingMemory) or isinstance(cause, MissingMemory):
        return 404
    # the memory, its config or its model: the server's to fix, not the request's
    if isinstance(cause, (StoreError, sqlite3.DatabaseError, ConfigError, EmbedModelError)):
        return 503
    return 400


async def _http_error(request: Any, exc: Any) -> Any:
    """Starlette's own 404 and 405 (and any HTTPException) as {"error": "one line"}."""
    from starlette.responses import JSONResponse, Response

    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=exc.headers)
    path, method = request.url.path, request.method
    if exc.status_code == 404:
        message = capped(f"no such endpoint: {method} {path}; the JSON API is under /memory/ and MCP at /mcp")
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = capped(f"{method} is not allowed on {path}" + (f"; use {allowed}" if allowed else ""))
    else:
        message = _one_line(str(exc.detail)) or f"HTTP {exc.status_code}"
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


_NAMED = {"recall": "POST", "remember": "POST", "lessons": "GET", "health": "GET"}


class Guard:
    """Bearer token on every request when one is set; on loopback, also refuse requests whose
    Host or Origin is not this machine (a web page cannot reach the JSON API by DNS rebinding)."""

    def __init__(self, app: Any, *, token: str, loopback: bool) -> None:
        self.app, self.token, self.loopback = app, token, loopback

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        # The token as bytes: the header decoded as Latin-1 above would not match a token
        # that is not ASCII.
        if self.token and not bearer_matches(header_bytes(scope, b"authorization"), self.token):
            await _deny(send, 401, "missing or wrong bearer token: send Authorization: Bearer <token>",
                        {"www-authenticate": 'Bearer realm="remem"'})
            return
        if self.loopback and not from_this_machine(headers.get("host", ""), headers.get("origin", "")):
            await _deny(send, 403, NOT_LOCAL, {})
            return
        if scope.get("method") == "POST" or "content-length" in headers or "transfer-encoding" in headers:
            # Any request with a body (a GET or DELETE may carry one too): refused before it is
            # read, when it says its size (else once it has grown past it).
            declared = headers.get("content-length", "").strip()
            if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                await _deny(send, 413, TOO_LARGE, {})
                return
            try:
                scope, receive = await _scrubbed(scope, receive)
            except _Refused as refused:
                await _send_json(send, refused.status, refused.answer, {})
                return
            except _Gone:  # no one to answer: one line in the log, not a traceback on stderr
                from remem.log import log

                log("server", f"a client left before sending its whole request to {capped(scope.get('path', ''))}; "
                              "nothing done")
                return
        await self.app(scope, receive, send)


# What a request body (/mcp and /memory/* alike) may hold: what a hook reads of its agent's
# JSON. Nothing remem keeps comes near it (a memory's text is cut at MAX_GIST characters, its
# detail at MAX_DETAIL), and a 30 MB query was searched for seconds, then echoed back whole.
MAX_BODY_BYTES = MAX_STDIN
TOO_LARGE = (f"the request body is over {MAX_BODY_BYTES:,} bytes; send less (remem keeps at most "
             f"{MAX_GIST:,} characters of a memory's text and {MAX_DETAIL:,} of its detail)")


class _Refused(Exception):
    """A request body refused before the app sees it: the status and the JSON answer."""

    def __init__(self, status: int, answer: dict[str, Any]) -> None:
        super().__init__(status)
        self.status, self.answer = status, answer


class _Gone(Exception):
    """The client left (closed its connection) before its request's body was whole."""


def _too_deep_answer(scope: dict[str, Any], body: bytes) -> dict[str, Any] | None:
    """The 400 answer for a body nested more than MAX_DEPTH levels, else None: at /mcp a
    JSON-RPC error for the request's id (as the SDK answers a body it cannot parse), at
    /memory/* {"error": "one line"}. Parsing it would recurse that deep (a plain-text 500)."""
    refusal = too_deep(body, "the request" if _is_mcp(scope) else "the body")
    if refusal is None:
        return None
    from remem.log import log

    log("server", f"refused a request to {scope.get('path', '')}: {refusal}")
    if not _is_mcp(scope):
        return {"error": refusal}
    from mcp_types import INVALID_REQUEST

    return {"jsonrpc": "2.0", "id": request_id(body), "error": {"code": INVALID_REQUEST, "message": refusal}}


def _is_mcp(scope: dict[str, Any]) -> bool:
    path = str(scope.get("path", ""))
    return path == "/mcp" or path.startswith("/mcp/")


async def _scrubbed(scope: dict[str, Any], receive: Any) -> tuple[dict[str, Any], Any]:
    """The request with lone surrogate escapes ("\\ud83d", half an emoji) in its JSON body
    replaced by U+FFFD, as over stdio: pydantic refuses them, so /mcp would answer a parse
    error and /memory/* a bad argument where the docs promise the text is stored. Raises
    _Refused for a body over MAX_BODY_BYTES (413, read no further) or nested too deep (400), and
    _Gone for a client that left before its body was whole."""
    from collections import deque

    held: deque[dict[str, Any]] = deque()
    size, complete = 0, False
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Gone
        held.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if size > MAX_BODY_BYTES:
            raise _Refused(413, {"error": TOO_LARGE})
        if not message.get("more_body", False):
            complete = True
            break
    if complete:
        body = b"".join(m.get("body", b"") for m in held)
        deep = _too_deep_answer(scope, body)
        if deep is not None:
            raise _Refused(400, deep)
        fixed = scrub_json(body)
        if fixed is not None:
            data = fixed.encode("utf-8")
            held = deque([{"type": "http.request", "body": data, "more_body": False}])
            headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
            scope = {**scope, "headers": headers + [(b"content-length", str(len(data)).encode())]}

    async def replay() -> dict[str, Any]:
        return held.popleft() if held else await receive()

    return scope, replay


async def _deny(send: Any, status: int, message: str, extra: dict[str, str]) -> None:
    await _send_json(send, status, {"error": message}, extra)


async def _send_json(send: Any, status: int, answer: dict[str, Any], extra: dict[str, str]) -> None:
    payload = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def serve_http(*, host: str, port: int, token: str, tasks: bool = True, warm: bool = True,
               sock: socket.socket | None = None) -> None:
    """Serve /mcp and /memory/* over HTTP until interrupted, on `sock` when given (from
    remem.proxy.listen, as `remem serve --http` binds it before its slow start), else on
    host:port. The start line is printed only once the port is held: of two servers started
    on one port at once, the second says "cannot listen on …" and nothing else."""
    from remem import paths
    from remem.log import log
    from remem.proxy import check_token, listen, run

    check_bind(host, token)
    check_token(token)
    if sock is None:
        sock = listen(host, port)
    try:
        mcp = build_server(tasks=tasks, warm=warm)
        app = http_app(mcp, host=host, token=token)
        shown = f"[{host}]" if ":" in host else host
        log("server", f"serving http://{shown}:{port}/mcp for {paths.home()} (token {'on' if token else 'off'})")
        print(f"remem: serving http://{shown}:{port}/mcp and /memory/* (memory in {paths.home()}"
              f"{', bearer token required' if token else ''})", file=sys.stderr, flush=True)
        run(app, sock, sys.stderr, host=host, port=port, lifespan="on")
    finally:
        sock.close()
