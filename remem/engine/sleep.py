"""The nightly sleep: passes that turn episodes into lessons, each reporting progress.

Passes, in order (PASSES): redact, embed, expire, decay, lessons, merge, verify, predict,
connect, render. Each is a generator of Progress events so the CLI and the TUI can show it
live; each is safe to re-run (a second sleep over the same memory changes nothing). A run is
recorded in the `runs` table (kind 'sleep') with per-pass counts and events, written after
each pass (a run killed midway keeps what its finished passes did, and the next report tells
it); the `lessons` pass keeps a watermark there (the last episode seq it consolidated) so only
new episodes are read. The
`redact` pass (engine/scrub.py) redacts the secrets an older release stored, once: it keeps
how far it got in the `redaction_sweep` table and reads nothing when that is done.

This module runs them (one sleep at a time, under sleep.lock) and records each run; the passes
themselves, with the Context they share and the Progress they yield, are in sleep_passes, and
what each did in words for people in sleep_describe.

    for event in run_sleep(store):
        print(event.pass_name, event.done, event.total, event.message)

The last event of a run has pass_name "sleep" and carries the run's summary in `counts`.
Just before it, a full run (every pass, not a dry run) makes a rotated backup when config
backup.nightly is on, told in events of pass_name "backup" and the summary's "backup" key: every
edge (`remem sleep`, the TUI's Sleep tab, the nightly job) gets it; one that failed is added
to the morning report the run wrote (render_morning.add_backup_error).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from remem import config as config_mod
from remem import paths
from remem.engine import clock
from remem.engine.sleep_describe import describe_pass
from remem.engine.sleep_passes import PASS_FUNCTIONS, Context, Progress
from remem.engine.store import Store, dumps
from remem.errors import RememError

PASSES = ("redact", "embed", "expire", "decay", "lessons", "merge", "verify", "predict", "connect",
          "render")
SUMMARY_LIST_CAP = 200
# A sleep that finds sleep.lock taken tries again this many times over this many seconds
# before it says another sleep runs: `is_running` takes it for an instant to look.
LOCK_TRIES = 10
LOCK_TRIES_SPAN = 0.25
# A run recorded as 'running' whose sleep no longer holds sleep.lock: its process ended
# (the TUI quit, a kill, a crash) before it could record how it ended.
INTERRUPTED = "interrupted"
INTERRUPTED_NOTE = ("did not finish: the process running it ended first (quit or killed); "
                    "the next sleep does what it left undone")
# A run stopped in its own process (Ctrl-C) records its end so: 'interrupted', with this note.
STOPPED_NOTE = ("did not finish: it was stopped (Ctrl-C) before its end; "
                "the next sleep does what it left undone")


# --------------------------------------------------------------------------- lock

def lock_path() -> Path:
    return paths.home() / "sleep.lock"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _holder(path: Path) -> int:
    try:
        return int(path.read_text().strip() or "0")
    except (OSError, ValueError):
        return 0


@contextmanager
def sleep_lock() -> Iterator[Path]:
    """Only one sleep at a time.

    The lock is an flock on sleep.lock, which the kernel drops when its process ends however
    it ends (SIGKILL included), so a dead sleep's lock is taken over without guessing from
    pids (a pid can be reused). The file holds the holder's pid for the message, and is never
    deleted: deleting it would let a process that opened the old file and one that made a new
    one hold "the" lock at once.
    """
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): a pid file
        with _pid_lock(path):
            yield path
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _take_flock(fd, fcntl.LOCK_EX):
            pid = _holder(path)
            who = f" (pid {pid})" if pid else ""
            raise RememError(f"another sleep is running{who}; wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flock


def _take_flock(fd: int, mode: int) -> bool:
    """Take the flock without waiting for a sleep. Tried a few times over LOCK_TRIES_SPAN
    seconds: `is_running` holds it for an instant to look, and a sleep starting at that instant
    (the nightly one while the TUI reloads) must not be turned away for it."""
    import fcntl
    import time

    for attempt in range(LOCK_TRIES):
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except OSError:
            if attempt + 1 < LOCK_TRIES:
                time.sleep(LOCK_TRIES_SPAN / LOCK_TRIES)
    return False


def is_running() -> bool:
    """Whether a sleep holds sleep.lock now: only then can a run recorded as 'running' be
    running (the kernel drops a sleep's lock when its process ends, however it ends). Looks by
    taking the lock shared, without waiting, and letting it go at once; a lock file that is not
    there means no sleep has run since the memory was made, one that cannot be opened is taken
    as held (what cannot be seen is not called over). `render.unrender` takes the same lock for
    the moment it takes lesson files out, and is then taken for a sleep too (docs/SLEEP.md)."""
    path = lock_path()
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): the pid file of a live process
        pid = _holder(path)
        return bool(pid) and _alive(pid)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        return False
    finally:
        os.close(fd)  # releases the shared flock, if taken


@contextmanager
def _pid_lock(path: Path) -> Iterator[Path]:  # pragma: no cover - systems without flock
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            pid = _holder(path)
            if pid and _alive(pid):
                raise RememError(
                    f"another sleep is running (pid {pid}); wait for it, or delete {path} if it is not"
                ) from None
            path.unlink(missing_ok=True)  # stale: its process is gone
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        break
    else:
        raise RememError(f"cannot take the sleep lock {path}; delete it if no sleep is running")
    try:
        yield path
    finally:
        try:
            if path.read_text().strip() == str(os.getpid()):
                path.unlink()
        except OSError:
            pass


# --------------------------------------------------------------------------- runner

def run_sleep(
    store: Store,
    passes: list[str] | tuple[str, ...] | None = None,
    dry_run: bool = False,
    cfg: dict[str, Any] | None = None,
) -> Iterator[Progress]:
    """Run the passes (all by default, always in PASSES order), yielding progress.

    dry_run: the passes run on a private copy of the database and render writes no file;
    the counts say what a real run would do.
    """
    wanted = tuple(passes) if passes else PASSES
    unknown = [p for p in wanted if p not in PASSES]
    if unknown:
        raise ValueError(f"unknown pass {unknown[0]!r}; the passes are {', '.join(PASSES)}")
    wanted = tuple(p for p in PASSES if p in wanted)
    cfg = cfg or config_mod.load()
    if dry_run:
        yield from _dry_run(store, wanted, cfg)
        return
    with sleep_lock():
        yield from _run(store, store, wanted, cfg, dry_run=False)


def _dry_run(store: Store, wanted: tuple[str, ...], cfg: dict[str, Any]) -> Iterator[Progress]:
    from remem.engine.backup import backup

    tmpdir = Path(tempfile.mkdtemp(prefix="remem-sleep-dry-"))
    try:
        copy = backup(store, tmpdir / "memory.db")
        with Store(copy) as work:
            yield from _run(store, work, wanted, cfg, dry_run=True)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _run(
    real: Store, work: Store, wanted: tuple[str, ...], cfg: dict[str, Any], *, dry_run: bool
) -> Iterator[Progress]:
    started = clock.iso()
    ctx = Context(store=work, cfg=cfg, dry_run=dry_run, passes=wanted, started=started)
    # A dry run holds no sleep.lock (it changes nothing), so a row it left 'running' could not
    # be told from an interrupted run's: its row is written when it ends.
    run_id = None if dry_run else _start_run(real, started, wanted)
    status, note = "error", None
    try:
        for name in wanted:
            yield Progress(name, 0, 0, "starting")
            last: Progress | None = None
            for event in PASS_FUNCTIONS[name](ctx):
                last = event
                yield event
            counts = ctx.counts.setdefault(name, {})
            if run_id is not None:
                _record_progress(real, run_id, ctx, wanted)
            total = last.total if last else 0
            yield Progress(name, total, total, describe_pass(name, counts), counts=counts)
        status = "dry-run" if dry_run else "ok"
    except (KeyboardInterrupt, GeneratorExit, SystemExit):
        # Ctrl-C (or whoever read its progress stopped reading): cut short, not failed.
        status, note = INTERRUPTED, STOPPED_NOTE
        raise
    except Exception as exc:
        note = _error_note(exc)
        raise
    finally:
        summary = _summary(ctx, dry_run)
        if note:
            summary["note"] = note
        run_id = _record_run(real, run_id, status, summary, started)
    # After the run is recorded as finished, so the copy holds it (and its watermark) as done.
    if status == "ok" and wanted == PASSES and cfg.get("backup", {}).get("nightly"):
        yield Progress("backup", 0, 1, "rotated backup")
        summary["backup"] = _nightly_backup(real, cfg)
        _record_run(real, run_id, status, summary, started)
        if "error" in summary["backup"] and ctx.morning:  # the report, written before it, says so
            from remem.engine.render_morning import add_backup_error

            add_backup_error(summary["backup"]["error"])
        yield Progress("backup", 1, 1, _describe_backup(summary["backup"]), counts=summary["backup"])
    yield Progress("sleep", len(wanted), len(wanted), f"sleep {status}", counts=summary)


ERROR_NOTE_CHARS = 500


def _error_note(exc: BaseException) -> str:
    """What a run that failed records in its summary's `note`: the exception's text on one
    line ("failed: <its kind>: <its words>"; remem's own refusals and ValueError by their words
    alone), cut at ERROR_NOTE_CHARS."""
    words = " ".join(str(exc).split())
    said = words if isinstance(exc, (RememError, ValueError)) and words else \
        f"{type(exc).__name__}: {words}" if words else type(exc).__name__
    said = f"failed: {said}"
    return said if len(said) <= ERROR_NOTE_CHARS else said[:ERROR_NOTE_CHARS - 1] + "…"


def _start_run(store: Store, started: str, wanted: tuple[str, ...]) -> int:
    """Record a run as 'running' (under sleep.lock), and every other run still recorded so as
    interrupted: this sleep holds the lock, so none of them is running. Their `finished` stays
    NULL: when their process ended is not known."""
    with store.write() as conn:
        left = conn.execute("SELECT id, summary FROM runs WHERE kind = 'sleep' AND status = 'running'")
        for row in left.fetchall():
            conn.execute("UPDATE runs SET status = ?, summary = ? WHERE id = ?",
                         (INTERRUPTED, dumps(_interrupted(_loads(row[1]))), row[0]))
        return int(conn.execute(
            "INSERT INTO runs (kind, started, status, summary) VALUES ('sleep', ?, 'running', ?)",
            (started, dumps({"passes": {}, "planned": list(wanted), "dry_run": False})),
        ).lastrowid)


def _record_progress(store: Store, run_id: int, ctx: Context, wanted: tuple[str, ...]) -> None:
    """What the passes done so far did (counts, events, faded), written into the run's row
    after each pass: a run killed before its end keeps them, and the next report tells them
    (sleep_passes.unreported reads interrupted runs too). Written once the pass's own writes
    are committed, so a kill never records what a pass did whose changes were rolled back; a
    kill in the instant between the two loses that pass's events from the report (the memory
    keeps the changes)."""
    summary = _summary(ctx, False) | {"planned": list(wanted)}
    with store.write() as conn:
        conn.execute("UPDATE runs SET summary = ? WHERE id = ? AND status = 'running'",
                     (dumps(summary), run_id))


def _record_run(store: Store, run_id: int | None, status: str, summary: dict[str, Any],
                started: str) -> int:
    """A run's end: its row updated, or written now (run_id None: a dry run). Its id."""
    with store.write() as conn:
        if run_id is None:
            return int(conn.execute(
                "INSERT INTO runs (kind, started, finished, status, summary) VALUES ('sleep', ?, ?, ?, ?)",
                (started, clock.iso(), status, dumps(summary)),
            ).lastrowid)
        conn.execute(
            "UPDATE runs SET finished = ?, status = ?, summary = ? WHERE id = ?",
            (clock.iso(), status, dumps(summary), run_id),
        )
        return run_id


def _loads(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _interrupted(summary: dict[str, Any]) -> dict[str, Any]:
    """An interrupted run's summary: the note that it did not finish, and what the passes it
    finished did, as recorded after each (`_record_progress`): `passes` (counts), `events`,
    `faded`, kept so the next report tells them. A run recorded by an earlier release named the
    passes it was to run there (a list): they become `planned`, as a run records them now, and
    `passes` is empty (nothing was recorded)."""
    out = dict(summary)
    if not isinstance(out.get("passes"), dict):
        planned = out.pop("passes", None)
        if isinstance(planned, list):
            out["planned"] = planned
        out["passes"] = {}
    out["note"] = INTERRUPTED_NOTE
    return out


def _nightly_backup(store: Store, cfg: dict[str, Any]) -> dict[str, Any]:
    """A full sleep's rotated backup (config backup.nightly; backup.keep copies kept), as
    {"path", "rotated_out"} or {"error"}: the night's work is done and kept either way."""
    import sqlite3

    from remem.engine import backup
    from remem.errors import store_problem
    from remem.log import log

    try:
        dest, removed = backup.rotated_backup(store, int(cfg["backup"].get("keep", 7)))
    except (OSError, ValueError, sqlite3.Error) as exc:  # a full disk, an unwritable folder
        # A damaged memory's error names the restore to run: `remem backup` would refuse it too.
        found = store_problem(exc) if isinstance(exc, sqlite3.Error) else None
        by_hand = isinstance(exc, OSError) or (found is not None and found[0] != "damaged")
        error = f"backup failed ({exc})" + ("; run `remem backup` by hand" if by_hand else "")
        log("sleep", error)
        return {"error": error}
    return {"path": str(dest), "rotated_out": len(removed)}


def _describe_backup(result: dict[str, Any]) -> str:
    return result["error"] if "error" in result else f"backed up to {result['path']}"


def _summary(ctx: Context, dry_run: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "passes": ctx.counts,
        "dry_run": dry_run,
        "events": {k: v[:SUMMARY_LIST_CAP] for k, v in ctx.events.items()},
    }
    if ctx.watermark is not None:
        out["watermark"] = ctx.watermark
    if ctx.connected_until is not None:
        out["connected_until"] = ctx.connected_until
    out["faded"] = ctx.faded
    out["morning"] = ctx.morning
    if ctx.morning_at is not None:
        out["morning_at"] = ctx.morning_at
        out["morning_covers"] = ctx.morning_covers
    if ctx.waiting is not None:
        out["waiting"] = ctx.waiting
    return out


def run_sleep_collect(
    store: Store,
    passes: list[str] | tuple[str, ...] | None = None,
    dry_run: bool = False,
    cfg: dict[str, Any] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> dict[str, Any]:
    """Run sleep to the end and return its summary (what the runs table records)."""
    summary: dict[str, Any] = {}
    steps = run_sleep(store, passes, dry_run=dry_run, cfg=cfg)
    try:
        for event in steps:
            if on_progress:
                on_progress(event)
            if event.pass_name == "sleep" and event.counts is not None:
                summary = event.counts
    finally:
        # A Ctrl-C while `on_progress` draws ends the run here and now, while the store is
        # open: the run records that it was stopped, and lets sleep.lock go.
        steps.close()
    return summary


def last_full_sleep(store: Store) -> tuple[str, dict[str, Any]] | None:
    """When the last sleep that ran every pass finished, and its summary. A `remem sleep --pass
    render` is not the nightly sleep (its summary names only the passes it ran), nor is a
    dry run."""
    for row in store.rows("SELECT finished, summary FROM runs WHERE kind = 'sleep' AND status = 'ok' "
                          "AND finished IS NOT NULL ORDER BY finished DESC"):
        summary = _loads(row["summary"])
        ran = summary.get("passes")
        if isinstance(ran, (dict, list)) and not summary.get("dry_run") and set(PASSES) <= set(ran):
            return row["finished"], summary
    return None


def history(store: Store, limit: int = 20) -> list[dict[str, Any]]:
    """The last sleep runs, newest first (for the TUI and `remem morning`), each with its
    status as it is now: a run recorded as 'running' is 'interrupted' (with the note in its
    summary) unless a sleep holds sleep.lock (`is_running`), and then only the newest is
    running. The rows stay as they are; the next sleep records them so (`_start_run`)."""
    rows = store.rows(
        "SELECT id, started, finished, status, summary FROM runs WHERE kind = 'sleep' "
        "ORDER BY id DESC LIMIT ?", (limit,)
    )
    # The lock is looked at only when a row says 'running' (nearly never).
    live = any(row["status"] == "running" for row in rows) and is_running()
    for row in rows:
        row["summary"] = _loads(row["summary"])
        if row["status"] == "running":
            if live:
                live = False  # the newest: the sleep holding the lock; any older one is not
            else:
                row["status"], row["summary"] = INTERRUPTED, _interrupted(row["summary"])
    return rows


def morning_report(mark_read: bool = True) -> str | None:
    """The last morning report (morning.md), or None when there is none or it cannot be read
    (a report is for reading; a damaged one must not stop `remem morning` or the Overview).

    mark_read: the caller shows it to the person (`remem morning`, the TUI's Overview), so it
    counts as read: the next report covers the runs from then on. Scripts (`remem morning
    --json`) and agents (the MCP resource) pass False: what they read is still told next time.
    """
    from remem.engine import render_morning

    at = clock.iso()  # before reading: a report written meanwhile was not seen
    try:
        text = paths.morning_path().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if mark_read:
        render_morning.mark_read(at)
    return text


def report_covers(store: Store) -> dict[str, Any] | None:
    """The span the report in morning.md covers (since, runs, previous_read, left_out), as the
    run that wrote it recorded it; None when no run recorded one. Whether this report was read
    since is render_morning.read_at, not part of its span."""
    for row in store.rows(
        "SELECT summary FROM runs WHERE kind = 'sleep' AND summary LIKE '%\"morning_covers\"%' "
        "ORDER BY id DESC LIMIT 1"
    ):
        try:
            covers = json.loads(row["summary"] or "{}").get("morning_covers")
        except ValueError:
            return None
        return covers if isinstance(covers, dict) else None
    return None
