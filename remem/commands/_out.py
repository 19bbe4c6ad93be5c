"""Output helpers shared by commands: JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Collection, Sequence

# What json.dumps(ensure_ascii=False) leaves as it is though a terminal obeys it: DEL and the C1
# controls (U+009B is a one-byte CSI). Outside strings JSON is ASCII, so each one found stands
# in a string, where its \u escape means the same character.
_JSON_UNESCAPED = re.compile("[\x7f-\x9f]")


def json_text(value: Any, indent: int | None = None) -> str:
    """JSON as the CLI prints it: UTF-8 text as it is, every control character escaped."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    return _JSON_UNESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def emit_json(value: Any) -> None:
    sys.stdout.write(json_text(value, indent=2) + "\n")


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich would exit 1; the reader going away (`remem list | head`) is not a failure:
            # the CLI stops quietly, as with plain prints (exit 141, as a Unix tool killed by SIGPIPE).
            raise BrokenPipeError

    return _Console(stderr=stderr, highlight=False, soft_wrap=False)


def go_ahead(question: str) -> bool:
    """Ask a yes/no question on the terminal, no by default. End of input (Ctrl-D) is a no,
    as Enter is; Ctrl-C is left to the CLI, which says "interrupted" (exit 130). Click's
    confirm turns both into "Aborted!" and exit 1, as if something had failed."""
    print(f"{question} [y/N]: ", end="", flush=True)
    try:
        answer = input()
    except EOFError:
        print()  # the terminal's line ends where Ctrl-D left it
        return False
    return answer.strip().lower() in ("y", "yes")


# C0 controls, DEL and C1 controls: ESC starts terminal sequences (retitle the window, clear
# the screen, fake a line) and 0x9b is a one-byte CSI. Stored text comes from transcripts,
# events and other people's lessons, so it reaches a terminal only through safe().
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: Any, multiline: bool = False) -> str:
    """Stored text made harmless for a terminal: each control character shown as an escape
    (ESC as \\x1b), so nothing it holds can drive the terminal; `multiline` keeps newlines and
    tabs. For people's output only: JSON escapes them itself."""
    pattern = _CONTROL_KEEP_LINES if multiline else _CONTROL
    return pattern.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if text is None else str(text))


# Columns holding ids or origins people paste into `share accept ID`, `share trust ORIGIN` …
ID_COLUMNS = frozenset({"id", "origin", "from"})


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]],
          no_wrap: Collection[str] = ()) -> None:
    """A table for people. `no_wrap`: short columns (numbers, dates, a kind) kept whole on
    their line, so a narrow terminal or a pipe (80 columns) narrows only the others, which wrap
    between words."""
    from rich.table import Table
    from rich.text import Text

    # Cells are plain text: a memory or a received lesson saying "[/b]" is not rich markup.
    # Control characters are shown escaped: a memory titled "\x1b]0;…" does not drive the terminal.
    t = Table(title=Text(safe(title)) if title else None, show_lines=False, header_style="bold")
    for index, col in enumerate(columns):
        if col in ID_COLUMNS:  # an id is copied into the next command: never folded
            widest = max((len(safe(row[index] or "")) for row in rows), default=0)
            t.add_column(safe(col), no_wrap=True, min_width=min(widest, 40))
        elif col in no_wrap:
            t.add_column(safe(col), no_wrap=True)
        else:
            t.add_column(safe(col), overflow="fold")
    for row in rows:
        t.add_row(*[Text(safe(v, multiline=True)) for v in row])
    console().print(t)


def short(text: str | None, width: int = 70) -> str:
    """One line of at most `width` characters, control characters escaped (see safe)."""
    text = safe(" ".join((text or "").split()))
    return text if len(text) <= width else text[: width - 1] + "…"


# The folder `--home` named, for any command; and again for a command that reads a memory
# (cli.NEEDS_A_MEMORY) when it does not exist. None without --home.
home_flag: str | None = None
named_home: str | None = None


def missing_home(where: str) -> str:
    """'no memory at WHERE …': the folder --home named is not there (a typo, most often)."""
    return f"no memory at {where} (the folder does not exist); check --home"


def require_memory() -> None:
    """Stop with one line when --home names a folder that does not exist, before anything
    would create it."""
    if named_home and not os.path.exists(named_home):
        from remem.errors import RememError

        raise RememError(f"{missing_home(named_home)}, or start one there with "
                         f"`remem --home {named_home} ingest`")


def open_store() -> Any:
    from remem.engine.store import Store

    require_memory()

    return Store()
