"""Output helpers shared by commands: JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Sequence


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n")


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


# Columns holding ids or origins people paste into `share accept ID`, `share trust ORIGIN` …
ID_COLUMNS = frozenset({"id", "origin", "from"})


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.table import Table
    from rich.text import Text

    # Cells are plain text: a memory or a received lesson saying "[/b]" is not rich markup.
    t = Table(title=Text(title) if title else None, show_lines=False, header_style="bold")
    for index, col in enumerate(columns):
        if col in ID_COLUMNS:  # an id is copied into the next command: never folded
            widest = max((len(str(row[index] or "")) for row in rows), default=0)
            t.add_column(col, no_wrap=True, min_width=min(widest, 40))
        else:
            t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*[Text("" if v is None else str(v)) for v in row])
    console().print(t)


def short(text: str | None, width: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


# The folder `--home` named, for any command; and again for a command that reads a memory
# (cli.NEEDS_A_MEMORY). None without --home.
home_flag: str | None = None
named_home: str | None = None


def require_memory() -> None:
    """Stop with one line when --home names a folder that does not exist: a typo, most often."""
    if named_home and not os.path.exists(named_home):
        from remem.errors import RememError

        raise RememError(f"no memory at {named_home} (the folder does not exist); check --home, or "
                         f"start one there with `remem --home {named_home} ingest`")


def open_store() -> Any:
    from remem.engine.store import Store

    require_memory()

    return Store()
