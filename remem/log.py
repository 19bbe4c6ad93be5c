"""Logging to $REMEM_HOME/logs/remem.log without the logging module's import cost on hooks."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

MAX_LOG_BYTES = 2_000_000
# The homes this process has written its log in: one of them gone since (moved or deleted under
# a running server) is not made again for a log line, which would leave a stray home behind
# and nest the real one in it when it is moved back.
_homes: set[Path] = set()


def _path() -> Path:
    from remem import paths

    return paths.log_file()


def log(component: str, message: str, *, stderr: bool = False) -> None:
    """Append one line to the log (rotated at 2 MB); never raises."""
    from remem.engine import clock

    line = f"{clock.iso()} {component} {message}".replace("\n", " ")
    if stderr:
        _to_stderr(f"remem: {message}")
    try:
        path = _path()
        home = path.parent.parent
        if home.is_dir():
            _homes.add(home)
        elif home in _homes:  # gone since: the line goes to stderr, no home is made for it
            if not stderr:
                _to_stderr(f"remem: {line}")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            os.replace(path, path.with_suffix(".log.1"))
        # backslashreplace: a path that is not UTF-8 (surrogate-escaped) must not lose the line
        with path.open("a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(line + "\n")
    except OSError:
        pass


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
