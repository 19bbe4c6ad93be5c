"""The `remem` executable.

Hooks run on every prompt and tool call of someone's agent, so `remem hook …` is dispatched
here without importing typer or the rest of the CLI. Everything else goes to the typer app.
"""

from __future__ import annotations

import os
import sys

EMPTY_HOME = "--home is empty; name a folder, e.g. remem --home ~/.remem-demo hook prompt"


def _split_home(argv: list[str]) -> tuple[list[str], bool]:
    """Apply a leading `--home DIR` (or `--home=DIR`) to REMEM_HOME and drop it from argv.
    Returns (the rest, whether a DIR was empty or blank): an empty one is not applied, since
    abspath('') is the current directory, which would become the memory."""
    out: list[str] = []
    empty = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--home" and i + 1 < len(argv):
            value, i = argv[i + 1], i + 2
        elif arg.startswith("--home="):
            value, i = arg.split("=", 1)[1], i + 1
        else:
            out.append(arg)
            i += 1
            continue
        if value.strip():
            os.environ["REMEM_HOME"] = os.path.abspath(os.path.expanduser(value))
        else:
            empty = True
    return out, empty


def main() -> None:
    argv = sys.argv[1:]
    if "hook" in argv[:3]:
        rest, empty = _split_home(argv)
        if rest and rest[0] == "hook":
            if empty:
                # A hook fails open (exit 0, nothing on stdout: the prompt goes on without
                # memory), and never with the current directory as the memory: one line on
                # stderr and in the log, as for any hook that cannot run.
                from remem.log import log

                log("hook", f"hook skipped: {EMPTY_HOME}", stderr=True)
                return
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
