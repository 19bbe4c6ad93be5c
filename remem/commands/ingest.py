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

SUMMARY_KEYS = ("files", "skipped", "sessions", "episodes", "by_kind", "malformed_lines", "errors")


def register(app: typer.Typer) -> None:
    @app.command()
    def ingest(
        paths: Optional[List[str]] = typer.Argument(
            None, help="Transcript files or folders. Default: every source found "
            "(Claude Code projects, Codex sessions, the inbox)."),
        source: Optional[str] = typer.Option(
            None, "--source", help="claude-code, codex, chats or events (default: guessed per file)."),
        events: Optional[str] = typer.Option(
            None, "--events", help="Read this file of events (the open event format); alone, "
            "it reads nothing else."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no summary."),
        json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    ) -> None:
        """Read what happened in agent sessions: sessions, corrections, errors, surprises.

        Unchanged files are skipped, so running it again is cheap and adds nothing.

        Example: remem ingest --json    (or: remem ingest ~/.claude/projects/my-app)
        """
        from remem.engine import ingest as ingest_mod

        ingest_mod.check_source(source)  # before the paths: a wrong --source is said first
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
        summary = {k: summary[k] for k in SUMMARY_KEYS}
        if json_out:
            emit_json(summary)
            return
        if quiet:
            return
        _print(summary)
        if not paths and not events and not summary["files"] and not summary["skipped"]:
            searched = _one_of([str(p) for p in ingest_mod.default_places(source)])
            print(f"remem: no agent sessions found in {searched}; name a file or "
                  "folder, or try `remem demo`", file=sys.stderr)


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
        print(f"remem: … and {len(summary['errors']) - 20} more errors (see the log)", file=sys.stderr)
