"""remem proxy: memory for any client that speaks the OpenAI or Anthropic API."""

from __future__ import annotations

import sys
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def proxy(
        upstream: str = typer.Option(..., "--upstream", help="The real API, e.g. https://api.openai.com"),
        port: Optional[int] = typer.Option(None, "--port", help="Port to listen on (default: config proxy.port, 4546)."),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default; "
                                 "others need a token, as `remem serve --http` does)."),
        style: str = typer.Option("auto", "--style", help="openai, anthropic or auto (by path)."),
        no_inject: bool = typer.Option(False, "--no-inject", help="Do not add memory to requests."),
        no_record: bool = typer.Option(False, "--no-record", help="Do not record exchanges in the inbox."),
    ) -> None:
        """Forward an API, adding remembered lessons to the system prompt and recording exchanges.

        Point your client's base URL at it; per request, the header `x-remem: off` turns memory off.
        Beyond loopback it needs a token (REMEM_TOKEN or config server.token), which every request
        then sends as `Proxy-Authorization: Bearer …`.

        \b
        Example: remem proxy --upstream https://api.openai.com --port 4546
        then:    OPENAI_BASE_URL=http://127.0.0.1:4546/v1 your-tool
        """
        from remem import config
        from remem.proxy import check_token, listen, serve, upstream_warning

        if style not in ("auto", "openai", "anthropic"):
            raise ValueError("--style must be openai, anthropic or auto")
        upstream = _check_upstream(upstream)
        if not host.strip():  # '' binds every interface
            raise ValueError("--host is empty; name an address, e.g. --host 127.0.0.1")
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"--port must be between 1 and 65535, not {port}")
        whole = config.load()
        cfg = whole["proxy"]
        inject = bool(cfg["inject"]) and not no_inject
        record = bool(cfg["record"]) and not no_record
        port = port or int(cfg["port"])
        from remem import paths
        from remem.bind import check_bind, is_loopback, resolve_token
        from remem.engine.files import in_use

        # The rule `remem serve --http` follows: nothing beyond this machine without a token
        # (the memory goes into answers, and exchanges into the inbox). Beyond loopback the
        # token is then asked of every request.
        token = resolve_token(whole)
        check_bind(host, token)
        guard = "" if is_loopback(host) else token
        if guard:  # on loopback no token is asked, so one a client could not send stops nothing
            check_token(guard)
        sock = listen(host, port)  # a busy port: one line and exit 1, before claiming success
        try:
            with in_use(paths.db_path()):  # `remem restore` refuses while the proxy runs
                shown = f"[{host}]" if ":" in host else host
                print(f"remem proxy on http://{shown}:{port} -> {upstream} (memory "
                      f"{'on' if inject else 'off'}, recording {'on' if record else 'off'}"
                      f"{', token required: Proxy-Authorization: Bearer …' if guard else ''})", flush=True)
                warning = upstream_warning(upstream)
                if warning:
                    print(warning, file=sys.stderr, flush=True)
                serve(upstream, host=host, port=port, style=style, inject=inject, record=record, sock=sock,
                      token=guard)
        finally:
            sock.close()


def _check_upstream(upstream: str) -> str:
    """An --upstream every request could be sent to, as used: an http:// or https:// URL (the
    scheme in any case, written lower), with a host, and a port that is a number, and no space,
    query or fragment (`http://` alone, `http://exa mple.com` or `…?key=x` would start, then
    answer every request 502 or send it where it was never meant to go)."""
    from urllib.parse import urlsplit

    scheme, sep, rest = upstream.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        raise ValueError("--upstream must be an http:// or https:// URL, e.g. --upstream https://api.openai.com")
    upstream = scheme.lower() + sep + rest
    if any(c.isspace() or not c.isprintable() for c in upstream):
        raise ValueError(f"--upstream {upstream!r} has a space or a control character in it; "
                         "remove it, e.g. --upstream https://api.openai.com")
    try:
        parts = urlsplit(upstream)
    except ValueError:  # `http://[::1`: a bracket not closed, or no IPv6 address inside
        raise ValueError(f"--upstream {upstream} has no valid address; write an IPv6 address in "
                         "brackets, e.g. --upstream http://[::1]:8080") from None
    if not parts.hostname:
        raise ValueError(f"--upstream {upstream} names no host; give the API's address, "
                         "e.g. --upstream https://api.openai.com")
    if any(c in '<>"{}|\\^`' for c in parts.hostname):
        raise ValueError(f"--upstream {upstream} names no valid host; give the API's address, "
                         "e.g. --upstream https://api.openai.com")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"--upstream {upstream} has no valid port; give one from 1 to 65535, "
                         "e.g. --upstream http://127.0.0.1:8080")
    if parts.query or parts.fragment or upstream.endswith(("?", "#")):
        raise ValueError(f"--upstream {upstream} has a query or fragment (?… or #…), after which each "
                         "request's path would go; give the API's base URL without it, e.g. "
                         "--upstream https://api.openai.com/v1")
    return upstream
