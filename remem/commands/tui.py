"""remem tui: browse and curate the memory in the terminal."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def tui() -> None:
        """Browse and curate the memory: episodes, lessons, sleep, shared lessons.

        Press ? for the keys and ctrl+p for every action by name.
        Example: remem --home ~/.remem-demo tui
        """
        from remem.tui import run

        run()
