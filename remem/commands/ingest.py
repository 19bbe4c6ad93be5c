"""ingest: read agent sessions into episodes."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from remem.commands._out import emit_json, open_store, table

if TYPE_CHECKING:
    from remem.engine.store import Store

SUMMARY_KEYS = ("files", "skipped", "reread", "sessions", "episodes", "by_kind", "malformed_lines", "errors")


def register(app: typer.Typer) -> None:
    @app.command()
    def ingest(
        paths: Optional[List[str]] = typer.Argument(
            None, help="Transcript files or folders. Default: every source found "
            "(Claude Code projects, Codex sessions, Gemini CLI sessions and the inbox)."),
        source: Optional[str] = typer.Option(
            None, "--source", help="claude-code, codex, chats or events (default: guessed per file)."),
        events: Optional[str] = typer.Option(
            None, "--events", help="Read this file of events (the open event format); alone, "
            "it reads nothing else."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no summary; "
                                   "one line on stderr when something was refused."),
        json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    ) -> None:
        """Read what happened in agent sessions: sessions, corrections, errors, surprises.

        Unchanged files are skipped, so running it again is cheap and adds nothing. Exits 1
        when something could not be read and nothing was read, stored or found unchanged.

        Example: remem ingest --json    (or: remem ingest ~/.claude/projects/my-app)
        """
        from remem.engine import ingest as ingest_mod
        from remem.engine.ingest_files import files_read
        from remem.engine.ingest_sources import check_source, default_places

        check_source(source)  # before the paths: a wrong --source is said first
        _check_events(events, paths, source)
        missing = [p for p in (paths or []) + ([events] if events else []) if not Path(p).expanduser().exists()]
        if missing and len(missing) == len(paths or []) + (1 if events else 0):
            raise ValueError(f"no such file or folder: {missing[0]}; check the path "
                             "(`remem ingest` alone reads every source found)")
        with open_store() as store:
            if events and not paths and source is None:
                summary = ingest_mod.ingest_events(store, events)  # only the events file
            else:
                if quiet or json_out:
                    summary = ingest_mod.ingest_paths(store, paths or None, source=source)
                else:
                    summary = _with_progress(ingest_mod, store, paths or None, source)
                if events:
                    ingest_mod.ingest_events(store, events, into=summary)
        read = files_read(summary)
        # `files` counts the files read: an events file none of whose lines was good is none
        summary = {k: summary.get(k, 0) for k in SUMMARY_KEYS} | {"files": read}
        # Refused lines or files beside what was read are a partial success (exit 0, the errors
        # said and logged): a file read (a transcript whose only line is still being written
        # too), something stored, or a file found unchanged. Nothing of these is a failure. An
        # events file whose good lines were stored by an earlier read is unchanged (`skipped`):
        # the same exit every read; one with no good line is no file read.
        failed = bool(summary["errors"]) and not (read or summary["episodes"] or summary["sessions"]
                                                  or summary["skipped"])
        if json_out:
            # As every command's --json error: an "error" key on stdout, one line on stderr.
            said = summary["errors"][0] if len(summary["errors"]) == 1 else _errors_line(summary["errors"])
            emit_json({**summary, "error": said} if failed else summary)
            if failed:
                print(f"remem: {said}", file=sys.stderr)
        elif quiet:
            if summary["errors"]:  # one line, so a script sees that something was refused
                print(f"remem: {_errors_line(summary['errors'])}", file=sys.stderr)
        else:
            _print(summary)
            if not paths and not events and not summary["files"] and not summary["skipped"]:
                searched = _one_of([str(p) for p in default_places(source)])
                print(f"remem: no agent sessions found in {searched}; name a file or "
                      "folder, or try `remem demo`", file=sys.stderr)
        if failed:
            raise typer.Exit(1)


def _check_events(events: Optional[str], paths: Optional[List[str]], source: Optional[str]) -> None:
    """--events reads its file and, alone, nothing else: refuse what would read more."""
    if events is None:
        return
    if not events.strip():
        raise ValueError("--events needs a file: remem ingest --events FILE")
    if source is not None and not paths:
        if source == "events":
            raise ValueError("--events FILE reads only that file, and --source events without files "
                             "reads the inbox; use one: remem ingest --events FILE")
        raise ValueError(f"--events FILE reads only that file; --source {source} without files reads "
                         f"every {source} session: run them one at a time")


def _errors_line(errors: List[str]) -> str:
    """How many lines or files were refused, and where the list is."""
    from remem import paths as paths_mod

    n = len(errors)
    return (f"{n} error{'s' if n != 1 else ''} (lines refused or files not read); "
            f"every one is in {paths_mod.log_file()}")


def _one_of(names: List[str]) -> str:
    """Names joined for a sentence: a; a or b; a, b or c."""
    return " or ".join(filter(None, [", ".join(names[:-1]), *names[-1:]]))


def _with_progress(ingest_mod: ModuleType, store: Store, paths: Optional[List[str]],
                   source: Optional[str]) -> dict[str, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from remem.commands._out import console

    with Progress(TextColumn("ingest"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}", markup=False), console=console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task("", total=None)

        def step(done: int, total: int, path: str) -> None:
            bar.update(task, completed=done, total=total, description=path[-50:])

        return ingest_mod.ingest_paths(store, paths, source=source, progress=step)


def _print(summary: dict) -> None:
    rows = [
        ("files read", summary["files"]),
        *([("  read again (read by older detectors)", summary["reread"])] if summary["reread"] else []),
        ("files unchanged (skipped)", summary["skipped"]),
        ("sessions", summary["sessions"]),
        ("episodes added", summary["episodes"]),
    ]
    for kind, n in sorted(summary["by_kind"].items()):
        rows.append((f"  {kind}", n))
    rows.append(("malformed lines skipped", summary["malformed_lines"]))
    table("ingest", ["", "count"], rows)
    for err in summary["errors"][:20]:
        print(f"remem: {err}", file=sys.stderr)
    if len(summary["errors"]) > 20:
        from remem import paths as paths_mod

        print(f"remem: … and {len(summary['errors']) - 20} more errors (all of them are in "
              f"{paths_mod.log_file()})", file=sys.stderr)
