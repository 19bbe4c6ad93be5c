"""Logging to $REMEM_HOME/logs/remem.log without the logging module's import cost on hooks."""

from __future__ import annotations

import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

MAX_LOG_BYTES = 2_000_000

# What a line (a tool's error, an HTTP API's 400, a line of this log) echoes of a value it was
# given: a request may send megabytes (a 500,000-character `k`, a kind, an id, a field's name),
# and each refusal used to carry them back whole, and into the log. A value over LONG_VALUE
# characters is shown by its first SHOWN_VALUE and its length; a line is at most MAX_LINE
# characters (a log line, which may hold a traceback, MAX_LOG_LINE).
SHOWN_VALUE = 100
LONG_VALUE = 200
MAX_LINE = 2_000
MAX_LOG_LINE = 20_000
_LONG_WORD = re.compile(r"\S{%d,}" % (LONG_VALUE + 1))
_OPENING = re.compile(r"[\"'`(\[{]{0,4}")
_CLOSING = re.compile(r"[\"'`),;:.\]}]{0,4}$")
# The homes this process has written its log in: one of them gone since (moved or deleted under
# a running server) is not made again for a log line, which would leave a stray home behind
# and nest the real one in it when it is moved back.
_homes: set[Path] = set()


def _path() -> Path:
    from remem import paths

    return paths.log_file()


def shown(value: Any) -> str:
    """A value as a line quotes it (its repr): one over LONG_VALUE characters as its first
    SHOWN_VALUE and its length, `'yyyy…'… (500,000 chars)`."""
    if isinstance(value, str):
        return repr(value) if len(value) <= LONG_VALUE else f"{value[:SHOWN_VALUE]!r}… ({len(value):,} chars)"
    text = repr(value)
    return text if len(text) <= LONG_VALUE else f"{text[:SHOWN_VALUE]}… ({len(text):,} chars)"


def capped(line: str, limit: int = MAX_LINE) -> str:
    """`line` as it may be sent or logged: every run of more than LONG_VALUE characters without
    a space (a value echoed in it: an id, a name, a number) shortened to its first SHOWN_VALUE
    and its length, and the whole at most `limit` characters, keeping its start and its end
    (where a line names the fix) with how much was left out between them."""
    if len(line) <= LONG_VALUE:
        return line
    line = _LONG_WORD.sub(_shortened, line)
    if len(line) <= limit:
        return line
    head = limit * 2 // 3
    tail = max(0, limit - head - 40)  # 40: room for the marker
    left = len(line) - head - tail
    return f"{line[:head]} … ({left:,} chars left out) … {line[len(line) - tail:]}"


def _shortened(match: "re.Match[str]") -> str:
    """A long run as `capped` shows it: the quotes or brackets around it kept, and the length of
    what is between them (the value's own, as `shown` counts it)."""
    word = match.group()
    opening = _OPENING.match(word[:4]).group()  # type: ignore[union-attr]
    close = _CLOSING.search(word[-4:]).group()  # type: ignore[union-attr]
    value = word[len(opening):len(word) - len(close)]
    return f"{opening}{value[:SHOWN_VALUE]}… ({len(value):,} chars){close}"


def log(component: str, message: str, *, stderr: bool = False) -> None:
    """Append one line to the log (rotated at 2 MB), at most MAX_LOG_LINE characters
    (`capped`); never raises."""
    from remem.engine import clock

    line = f"{clock.iso()} {component} {message}".replace("\n", " ")
    if len(line) > MAX_LOG_LINE:
        line = capped(line, MAX_LOG_LINE)
    if stderr:
        _to_stderr(f"remem: {message if len(message) <= MAX_LOG_LINE else capped(message, MAX_LOG_LINE)}")
    try:
        path = _ready()
        if path is None:  # its home gone since: the line goes to stderr, no home is made for it
            if not stderr:
                _to_stderr(f"remem: {line}")
            return
        # backslashreplace: a path that is not UTF-8 (surrogate-escaped) must not lose the line
        with path.open("a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(line + "\n")
    except OSError:
        pass


def _ready() -> Path | None:
    """The log's path, its folder made and the file rotated past MAX_LOG_BYTES; None when the
    home it is in was there earlier in this process and is gone since. Raises OSError."""
    path = _path()
    home = path.parent.parent
    if home.is_dir():
        _homes.add(home)
    elif home in _homes:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
        os.replace(path, path.with_suffix(".log.1"))
    return path


def append_descriptor() -> int | None:
    """The log opened for appending, as a raw descriptor (the stderr of a detached child, whose
    one failure line lands there), rotated first as log() rotates it; None when it cannot be."""
    try:
        path = _ready()
        if path is None:
            return None
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except (OSError, ValueError):
        return None


def _to_stderr(text: str) -> None:
    try:
        print(text, file=sys.stderr)
    except (OSError, UnicodeError, ValueError):  # a closed or narrow stderr
        pass


def log_exception(component: str, exc: BaseException) -> str:
    """Log a traceback; return where it went."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    log(component, text.replace("\n", " | "))
    try:
        return str(_path())
    except Exception:
        return "the log"
