"""Sessions -> episodes, idempotently.

One session episode (what was asked, what was done, how it ended) and one episode per
finding (correction, error, surprise, environment). Episode ids are
`stable_id(session id, kind, title)`, so reading a session again adds only what is new; the
session episode's id is `stable_id(session id, "session", session id)` because its title and
gist grow with the session, and it is rewritten in place (strength and recalls kept). A batch
holding only a later (or earlier) part of a session, as events files may, is added to the
stored gist rather than put in its place (`_merge_part`). Ids in the `forgotten` table (deleted
for good) are never added again.

The `sessions` table makes re-runs cheap: a file whose mtime and size match its row is
skipped (unless the source named, --source, is not the row's: a wrong guess is read again;
or, guessed, its first lines are no records of the row's source; or the row says an older version of the detectors read it, `DETECTOR_VERSION`: it is read
again, up to READ_AGAIN_BYTES_PER_RUN a run, counted in `reread`, so an upgrade's detection
fixes reach sessions read before it).
A file with a torn last line (still being written) records the size of its complete lines
only, so it differs next time and is read again; one with no readable line at all is an error
line and stores no session. Embedding happens before any write transaction, in one batch per
session; a correction is embedded from the person's words alone.

A file is read whole each time it changed, so the findings it yields replace the ones ingest
made from it before (`reread.replace_stale`): a finding titled otherwise by an older version takes its
new id in place, keeping what the person and the sleep made of it, and one no detector finds
any more is dropped unless the person touched it.

A failure of the store itself (busy, read-only, disk full, damaged) stops the run at once
(`StoreError`); a file that cannot be read is one line in `errors` and the rest go on. Every
error line is also written to the log.

Here: ingest_paths and ingest_events, which read many files and stop on a failing store. Which
files, by source, is ingest_sources; one file (skipped when unchanged, parsed, chat ids carried
over) ingest_files; one session into its episodes, stored, session_episodes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable, Sequence

from remem import config as config_mod
from remem import paths as paths_mod
from remem.engine.chats import NotAConversation
from remem.engine.ingest_files import (
    ReadAgainBudget,
    _add_events,
    _empty_summary,
    ingest_file,
)
from remem.engine.ingest_sources import (
    _default_files,
    _files_under,
    _guess_source,
    check_source,
    default_places,
    gemini_sessions,
)
from remem.engine.session_episodes import safe_text
from remem.engine.store import Store
from remem.errors import StoreError, store_problem

Progress = Callable[[int, int, str], None]


def ingest_paths(store: Store, paths: Sequence[str | Path] | None = None, source: str | None = None,
                 progress: Progress | None = None) -> dict[str, Any]:
    """Ingest transcript files (or every source found, when no paths are given).

    Returns {files, skipped, sessions, episodes (added by this run), by_kind,
    malformed_lines, errors, reread (of `files`, the unchanged ones older detectors read)}.
    A file that cannot be read is an error line; the rest go on.
    A failure of the store itself (busy, read-only, full, damaged) stops the run: StoreError,
    with one line naming the fix. Every error line is written to the log as well.
    """
    check_source(source)
    cfg = config_mod.load()
    summary = _empty_summary()
    try:
        _ingest_paths(store, summary, cfg, paths, source, progress)
    finally:
        summary["errors"] = [safe_text(e) for e in summary["errors"]]
        _log_errors(summary["errors"])
    return summary


def _ingest_paths(store: Store, summary: dict[str, Any], cfg: dict[str, Any],
                  paths: Sequence[str | Path] | None, source: str | None, progress: Progress | None) -> None:
    from remem.engine.backup import cannot_read

    work: list[tuple[Path, str]] = []
    unreadable: list[tuple[Path, OSError]] = []  # project folders that cannot be listed
    inbox = False
    if not paths:
        if source is None:
            work = _default_files(unreadable)
            inbox = True
        elif source in ("claude-code", "codex"):
            for place in default_places(source):
                try:
                    work.extend((p, source) for p in _files_under(place, source, unreadable))
                except FileNotFoundError:
                    pass  # no such agent here
                except OSError as exc:
                    unreadable.append((place, exc))
        elif source == "events":
            inbox = True
        else:  # chats: Gemini CLI's sessions; other exports are named one by one
            work = [(p, source) for p in gemini_sessions(paths_mod.gemini_sessions_dir())]
    guessed: set[Path] = set()  # *.json found in a folder: may be no chat export at all
    folders: dict[Path, list[Path]] = {}
    for raw in paths or ():
        # Absolute: a file named `export.json` today and by its full path tomorrow is one file.
        path = Path(raw).expanduser().absolute()
        if path.is_dir():
            try:
                found = [(p, source or _guess_source(p)) for p in _files_under(path, source, unreadable)]
            except OSError as exc:
                unreadable.append((path, exc))
                continue
            work.extend(found)
            folders[path] = [p for p, _ in found]
            if source is None:  # `--source chats` lists an export's companions out (ingest_sources)
                guessed.update(p for p, src in found if src == "chats")
        elif path.is_file():
            work.append((path, source or _guess_source(path)))
        elif path.exists():
            summary["errors"].append(_not_a_file(path))
        else:
            summary["errors"].append(f"{path}: no such file or folder")
    summary["errors"].extend(cannot_read(folder, exc) for folder, exc in unreadable)
    embedder = None
    if work:
        from remem.engine.embed import get_embedder

        embedder = get_embedder()
    total = len(work)
    passed_over: set[Path] = set()
    budget = ReadAgainBudget()
    read: set[Path] = set()
    for done, (path, src) in enumerate(work, start=1):
        if progress is not None:
            progress(done - 1, total, str(path))  # the file being read, while it is
        try:
            # A symlink is the file it points to: one file named two ways is read once, as one.
            real = path.resolve() if path.is_symlink() else path
            if real in read:
                continue
            read.add(real)
            ingest_file(store, real, src, summary, cfg, embedder, source_given=source is not None, budget=budget)
        except NotAConversation as exc:
            if path not in guessed:
                summary["errors"].append(f"{path}: {exc}")
            else:  # user.json beside conversations.json: not an export, not an error
                passed_over.add(path)
        except Exception as exc:  # one bad file never stops the rest; a failing store does
            stop = store_failure(exc, store, f"ingest stopped at file {done} of {total}")
            if stop is not None:
                raise stop from exc
            if isinstance(exc, OSError):  # unreadable (permissions, a socket): the path once, the fix
                summary["errors"].append(cannot_read(path, exc))
            else:
                summary["errors"].append(f"{path}: {exc}")
            try:
                from remem.log import log_exception

                log_exception("ingest", exc)
            except Exception:
                pass
    if progress is not None and total:
        progress(total, total, str(work[-1][0]))
    for folder, files in folders.items():
        if all(p in passed_over for p in files):  # a folder named, nothing in it read: say so
            if source is None:
                summary["errors"].append(
                    f"no transcripts found in {folder}; it holds no Claude Code *.jsonl, Codex "
                    "rollout-*.jsonl or chat export *.json (name the files, or pass --source)")
            else:  # --source given: the advice to pass it would be no help
                looked_for = {"claude-code": "Claude Code *.jsonl", "codex": "Codex rollout-*.jsonl",
                              "chats": "chat export *.json or *.jsonl",
                              "events": "event *.jsonl"}.get(source, f"{source} files")
                summary["errors"].append(f"no transcripts found in {folder}; it holds no {looked_for}")
    if inbox:
        from remem.engine.events import ingest_inbox

        try:
            _add_events(summary, ingest_inbox(store))
        except Exception as exc:
            stop = store_failure(exc, store, "ingest stopped at the inbox")
            if stop is not None:
                raise stop from exc
            summary["errors"].append(f"inbox: {exc}")


def store_failure(exc: BaseException, store: Store, where: str) -> StoreError | None:
    """The store itself failing (busy past its timeout, read-only, disk full, damaged): a
    StoreError of one line naming the fix and `where` it stopped, or None for anything else
    (a file that cannot be read: the run goes on)."""
    if isinstance(exc, StoreError):
        message, fix, kind = str(exc), exc.fix, type(exc)
    else:
        found = store_problem(exc, store.path) if isinstance(exc, sqlite3.DatabaseError) else None
        if found is None:
            return None
        message, fix, kind = found[1], found[2], StoreError
    try:
        return kind(f"{message} ({where}; what was read before it is stored, and a new run skips it)",
                    fix=fix)
    except TypeError:  # a StoreError subclass made otherwise
        return StoreError(f"{message} ({where})", fix=fix)


def _log_errors(errors: list[str]) -> None:
    """Every error line in the log (the summary may show only the first ones)."""
    if not errors:
        return
    from remem.log import log

    for err in errors:
        log("ingest", err)


def _not_a_file(path: Path) -> str:
    """The line for a path that is no regular file (a pipe, a socket, a device): reading it
    could wait for ever."""
    return f"{path}: not a regular file (a pipe, a socket, a device or a folder); name a file"


def ingest_events(store: Store, path: str | Path, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """`remem ingest --events FILE`: the open event format, through the events module. Its
    counts are added to `into` (an `ingest_paths` summary) when given; returns the summary."""
    from remem.engine.events import ingest_events_file

    summary = _empty_summary() if into is None else into
    before = len(summary["errors"])
    try:
        path = Path(path).expanduser()
        if path.exists() and not path.is_file():
            summary["errors"].append(_not_a_file(path))
        else:
            _add_events(summary, ingest_events_file(store, path))
    except Exception as exc:
        stop = store_failure(exc, store, f"ingest stopped at {safe_text(path)}")
        if stop is not None:
            raise stop from exc
        raise
    finally:
        summary["errors"][before:] = [safe_text(e) for e in summary["errors"][before:]]
        _log_errors(summary["errors"][before:])
    return summary
