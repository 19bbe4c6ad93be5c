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
        import sys

        from remem.commands._out import require_memory

        require_memory()
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            # Without a terminal the app would wait for keys that never come.
            raise ValueError("remem tui needs a terminal; for scripts use `remem list`, `remem lessons list` "
                             "or `remem status` (each with --json)")
        from remem import paths
        from remem.engine.files import in_use
        from remem.tui import run

        with in_use(paths.db_path()):  # `remem restore` refuses while the TUI is open
            run()
