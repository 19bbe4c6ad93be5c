"""The `remem` executable.

Hooks run on every prompt and tool call of someone's agent, so `remem hook …` is dispatched
here without importing typer or the rest of the CLI. Everything else goes to the typer app.
"""

from __future__ import annotations

import os
import sys


def _split_home(argv: list[str]) -> list[str]:
    """Apply a leading `--home DIR` (or `--home=DIR`) to REMEM_HOME and drop it from argv."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--home" and i + 1 < len(argv):
            os.environ["REMEM_HOME"] = os.path.abspath(os.path.expanduser(argv[i + 1]))
            i += 2
            continue
        if arg.startswith("--home="):
            os.environ["REMEM_HOME"] = os.path.abspath(os.path.expanduser(arg.split("=", 1)[1]))
            i += 1
            continue
        out.append(arg)
        i += 1
    return out


def main() -> None:
    argv = sys.argv[1:]
    if "hook" in argv[:3]:
        rest = _split_home(argv)
        if rest and rest[0] == "hook":
            from remem.hooks import main as hook_main

            code = hook_main(rest[1:])
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except Exception:
                pass
            # Leave without interpreter teardown: closing the store's last connection would
            # checkpoint the WAL (~10 ms); the next writer does that instead.
            os._exit(code)
    # One BLAS thread (unless the user chose otherwise): recall's one matrix-vector product
    # runs beside a SQLite query on its own worker thread, and BLAS threads would contend
    # with it and spin on a busy machine (bench/recall.py, docs/RECALL.md). Before numpy loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from remem.cli import run

    run()
