"""remem proxy: memory for any client that speaks the OpenAI or Anthropic API."""

from __future__ import annotations

from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def proxy(
        upstream: str = typer.Option(..., "--upstream", help="The real API, e.g. https://api.openai.com"),
        port: Optional[int] = typer.Option(None, "--port", help="Port to listen on (default: config proxy.port, 4546)."),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
        style: str = typer.Option("auto", "--style", help="openai, anthropic or auto (by path)."),
        no_inject: bool = typer.Option(False, "--no-inject", help="Do not add memory to requests."),
        no_record: bool = typer.Option(False, "--no-record", help="Do not record exchanges in the inbox."),
    ) -> None:
        """Forward an API, adding remembered lessons to the system prompt and recording exchanges.

        Point your client's base URL at it; per request, the header `x-remem: off` turns memory off.

        \b
        Example: remem proxy --upstream https://api.openai.com --port 4546
        then:    OPENAI_BASE_URL=http://127.0.0.1:4546/v1 your-tool
        """
        from remem import config
        from remem.proxy import listen, serve

        if style not in ("auto", "openai", "anthropic"):
            raise ValueError("--style must be openai, anthropic or auto")
        if not upstream.startswith(("http://", "https://")):
            raise ValueError("--upstream must be an http:// or https:// URL")
        cfg = config.load()["proxy"]
        inject = bool(cfg["inject"]) and not no_inject
        record = bool(cfg["record"]) and not no_record
        port = port or int(cfg["port"])
        from remem import paths
        from remem.engine.files import in_use

        sock = listen(host, port)  # a busy port: one line and exit 1, before claiming success
        try:
            with in_use(paths.db_path()):  # `remem restore` refuses while the proxy runs
                shown = f"[{host}]" if ":" in host else host
                print(f"remem proxy on http://{shown}:{port} -> {upstream} (memory "
                      f"{'on' if inject else 'off'}, recording {'on' if record else 'off'})", flush=True)
                serve(upstream, host=host, port=port, style=style, inject=inject, record=record, sock=sock)
        finally:
            sock.close()
