"""serve, tools, call: remem's memory over MCP and HTTP. mcp is imported inside each body
(`tools` never imports it: it reads the tools' declarations only)."""

from __future__ import annotations

import json
from typing import Optional

import typer

from remem.commands._out import emit_json, table


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        http: bool = typer.Option(False, "--http", help="Serve streamable HTTP at /mcp and the /memory/* JSON API instead of stdio."),
        host: Optional[str] = typer.Option(None, "--host", help="Address to bind (default 127.0.0.1; others need a token)."),
        port: Optional[int] = typer.Option(None, "--port", help="Port for --http (default 4545, config server.port)."),
        no_tasks: bool = typer.Option(False, "--no-tasks", help="Do not run the due lifecycle tasks in the background."),
        no_warm: bool = typer.Option(False, "--no-warm", help="Do not preload the embedder and vectors at start."),
    ) -> None:
        """Serve the memory over MCP: stdio by default (for an agent to launch), or HTTP.

        With --http, a non-loopback --host needs a bearer token (REMEM_TOKEN or config
        server.token), and with a token set every request must send `Authorization: Bearer …`.

        Example: remem serve --http --port 4545
        """
        from remem import config
        from remem.engine.store import Store

        from remem import paths
        from remem.commands._out import require_memory
        from remem.engine.files import in_use

        if not http and (host is not None or port is not None):  # `--port 0` too: no port for stdio
            raise ValueError("--host and --port go with --http; plain `remem serve` speaks stdio")
        require_memory()  # a home --home or REMEM_HOME names that is not there: never a new one
        cfg = config.load()
        Store().close()  # a damaged or foreign memory.db: one line naming the fix, before serving
        if not http:
            from remem.server import serve_stdio

            with in_use(paths.db_path()):  # `remem restore` waits for this to end
                serve_stdio(tasks=not no_tasks, warm=not no_warm)
            return
        from remem.bind import check_bind, resolve_token

        host = host or str(cfg["server"]["host"])
        port = int(port if port is not None else cfg["server"]["port"])
        if not 0 < port < 65536:
            raise ValueError(f"--port must be between 1 and 65535, not {port}")
        token = resolve_token(cfg)
        check_bind(host, token)  # before the slow start: refusing should be quick
        from remem.proxy import check_token, listen

        check_token(token)
        # Held from here to the end: a busy port is one line and exit 1 before anything says
        # the server is running (a port checked, then let go, could be taken meanwhile).
        sock = listen(host, port)
        try:
            from remem.server_http import serve_http

            with in_use(paths.db_path()):
                serve_http(host=host, port=port, token=token, tasks=not no_tasks, warm=not no_warm,
                           sock=sock)
        finally:
            sock.close()

    @app.command()
    def tools(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """The MCP tools remem serves: name, hints and what each does.

        Example: remem tools --json
        """
        from remem.server_tools import tool_list

        found = tool_list()
        if json_out:
            emit_json(found)
            return

        def hints(t: dict) -> str:
            marks = ["read-only" if t["read_only"] else "writes"]
            if t["destructive"]:
                marks.append("destructive")
            if t["idempotent"]:
                marks.append("idempotent")
            return ", ".join(marks)

        table(None, ["tool", "hints", "what it does"], [(t["name"], hints(t), t["summary"]) for t in found])

    @app.command()
    def call(
        tool: str = typer.Argument(..., help="The tool's name (see `remem tools`)."),
        arguments: str = typer.Argument("{}", help=(
            "The tool's arguments as a JSON object; - reads them from stdin, @FILE from a file.")),
        json_out: bool = typer.Option(False, "--json", help="Accepted for symmetry: the output is JSON already."),
    ) -> None:
        """Call one MCP tool through a real client session against the server `remem serve` runs; prints JSON.

        The server is built in this process (no second one, no background tasks), with
        serve's checks first; a tool error is one line on stderr and exit 1. --json changes
        nothing: the answer is always JSON. Arguments too long for the command line (a long
        text to remember) come from stdin with - or from a file with @FILE.

        Example: remem call recall '{"query": "which package manager", "k": 3}'

        Example: echo '{"query": "uv"}' | remem call recall -

        Example: remem call remember @note.json
        """
        import anyio

        from remem.server_stdio import NESTED, too_deep

        arguments = _arguments_text(arguments)
        # Refused before it is parsed, as the tool refuses it: Python's parser (and what
        # follows it) would recurse that deep.
        if too_deep(arguments):
            raise ValueError(f"invalid arguments for {tool}: {NESTED}")
        try:
            args = json.loads(arguments)
        except ValueError as exc:
            raise ValueError(f"arguments must be a JSON object, e.g. '{{\"query\": \"x\"}}' ({exc})") from None
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object, e.g. '{\"query\": \"x\"}'")
        from remem import config
        from remem.engine.store import Store

        from remem.commands._out import require_memory

        # The checks `remem serve` makes before serving, here, so their one line is shown.
        require_memory()
        config.load()
        Store().close()
        from remem.server import call_tool

        emit_json(anyio.run(lambda: call_tool(tool, args)))


def _arguments_text(given: str) -> str:
    """`remem call`'s arguments as JSON text: as given, or read from stdin (-) or a file (@FILE),
    for arguments longer than a command line holds (about 128 KB). At most what the HTTP API
    takes in a body (remem.hooks.MAX_STDIN bytes), as UTF-8."""
    import sys

    from remem.engine.store import MAX_DETAIL, MAX_GIST
    from remem.hooks import MAX_STDIN

    if given == "-":
        where, stream = "stdin", sys.stdin.buffer
        data = stream.read(MAX_STDIN + 1)
    elif given.startswith("@"):
        path = given[1:]
        if not path:
            raise ValueError("@ names no file; give the arguments' file as @FILE (or - for stdin)")
        where = path
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_STDIN + 1)
        except OSError as exc:
            raise ValueError(f"cannot read the arguments from {path} ({exc.strerror or exc}); give an "
                             "existing file as @FILE, or - to read them from stdin") from None
    else:
        return given
    if len(data) > MAX_STDIN:
        raise ValueError(f"the arguments in {where} are over {MAX_STDIN:,} bytes; send less (remem keeps at "
                         f"most {MAX_GIST:,} characters of a memory's text and {MAX_DETAIL:,} of its detail)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the arguments in {where} are not UTF-8 (byte {exc.start}); save them as UTF-8") from None
    if not text.strip():
        raise ValueError(f"{where} holds no arguments; give a JSON object, e.g. {{\"query\": \"x\"}}")
    return text
