"""The nightly sleep: passes that turn episodes into lessons, each reporting progress.

Passes, in order (PASSES): redact, embed, expire, decay, lessons, merge, verify, predict,
connect, render. Each is a generator of Progress events so the CLI and the TUI can show it
live; each is safe to re-run (a second sleep over the same memory changes nothing). A run is
recorded in the `runs` table (kind 'sleep') with per-pass counts; the `lessons` pass keeps a
watermark there (the last episode seq it consolidated) so only new episodes are read. The
`redact` pass (engine/scrub.py) redacts the secrets an older release stored, once: it keeps
how far it got in the `redaction_sweep` table and reads nothing when that is done.

    for event in run_sleep(store):
        print(event.pass_name, event.done, event.total, event.message)

The last event of a run has pass_name "sleep" and carries the run's summary in `counts`.
Just before it, a full run (every pass, not a dry run) makes a rotated backup when config
backup.nightly is on, told in events of pass_name "backup" and the summary's "backup" key: every
edge (`remem sleep`, the TUI's Sleep tab, the nightly job) gets it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from remem import config as config_mod
from remem import paths
from remem.engine import clock
from remem.engine.store import Store, dumps
from remem.errors import RememError

PASSES = ("redact", "embed", "expire", "decay", "lessons", "merge", "verify", "predict", "connect",
          "render")
EMBED_BATCH = 2048
SUMMARY_LIST_CAP = 200


@dataclass
class Progress:
    """One step of a pass: `done` of `total` units; `counts` is set on a pass's last event."""

    pass_name: str
    done: int
    total: int
    message: str = ""
    counts: dict[str, Any] | None = None


@dataclass
class Context:
    store: Store
    cfg: dict[str, Any]
    dry_run: bool
    passes: tuple[str, ...]
    counts: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[str, list[Any]] = field(default_factory=lambda: {
        "learned": [], "grew": [], "merged": [], "confirmed": [], "failed": [], "vetoed": [],
    })
    changed_lessons: set[str] = field(default_factory=set)
    watermark: int | None = None
    connected_until: str | None = None
    faded: int = 0
    morning: bool = False  # the render pass wrote morning.md
    waiting: dict[str, int] | None = None  # what made no lesson and why (lessons_pass.waiting)

    @property
    def embedder(self) -> Any:
        from remem.engine.embed import get_embedder

        return get_embedder()

    def cut(self, space: str) -> float:
        from remem.engine.embed import space_is_model

        s = self.cfg["sleep"]
        return float(s["surprise_cut_model"] if space_is_model(space) else s["surprise_cut_hashed"])


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
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
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
    ctx = Context(store=work, cfg=cfg, dry_run=dry_run, passes=wanted)
    started = clock.iso()
    with real.write() as conn:
        run_id = conn.execute(
            "INSERT INTO runs (kind, started, status, summary) VALUES ('sleep', ?, 'running', ?)",
            (started, dumps({"passes": list(wanted), "dry_run": dry_run})),
        ).lastrowid
    status = "error"
    try:
        for name in wanted:
            yield Progress(name, 0, 0, "starting")
            last: Progress | None = None
            for event in PASS_FUNCTIONS[name](ctx):
                last = event
                yield event
            counts = ctx.counts.setdefault(name, {})
            total = last.total if last else 0
            yield Progress(name, total, total, describe_pass(name, counts), counts=counts)
        status = "dry-run" if dry_run else "ok"
    finally:
        summary = _summary(ctx, dry_run)
        _record_run(real, run_id, status, summary)
    # After the run is recorded as finished, so the copy holds it (and its watermark) as done.
    if status == "ok" and wanted == PASSES and cfg.get("backup", {}).get("nightly"):
        yield Progress("backup", 0, 1, "rotated backup")
        summary["backup"] = _nightly_backup(real, cfg)
        _record_run(real, run_id, status, summary)
        yield Progress("backup", 1, 1, _describe_backup(summary["backup"]), counts=summary["backup"])
    yield Progress("sleep", len(wanted), len(wanted), f"sleep {status}", counts=summary)


def _record_run(store: Store, run_id: int, status: str, summary: dict[str, Any]) -> None:
    with store.write() as conn:
        conn.execute(
            "UPDATE runs SET finished = ?, status = ?, summary = ? WHERE id = ?",
            (clock.iso(), status, dumps(summary), run_id),
        )


def _nightly_backup(store: Store, cfg: dict[str, Any]) -> dict[str, Any]:
    """A full sleep's rotated backup (config backup.nightly; backup.keep copies kept), as
    {"path", "rotated_out"} or {"error"}: the night's work is done and kept either way."""
    import sqlite3

    from remem.engine import backup
    from remem.log import log

    try:
        dest, removed = backup.rotated_backup(store, int(cfg["backup"].get("keep", 7)))
    except (OSError, ValueError, sqlite3.Error) as exc:  # a full disk, an unwritable folder
        error = f"backup failed ({exc}); run `remem backup` by hand"
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
    for event in run_sleep(store, passes, dry_run=dry_run, cfg=cfg):
        if on_progress:
            on_progress(event)
        if event.pass_name == "sleep" and event.counts is not None:
            summary = event.counts
    return summary


def history(store: Store, limit: int = 20) -> list[dict[str, Any]]:
    """The last sleep runs, newest first (for the TUI and `remem morning`)."""
    rows = store.rows(
        "SELECT id, started, finished, status, summary FROM runs WHERE kind = 'sleep' "
        "ORDER BY id DESC LIMIT ?", (limit,)
    )
    for row in rows:
        try:
            row["summary"] = json.loads(row["summary"] or "{}")
        except ValueError:
            row["summary"] = {}
    return rows


def describe_counts(counts: dict[str, Any], most: int | None = None, empty: str = "nothing to do") -> str:
    """A pass's counts for people: its non-zero numbers ("created 2, merged 1"), the first
    `most` of them (None: all); `empty` when it has none. Lists, words and flags are left out."""
    parts = [f"{k} {v}" for k, v in counts.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool) and v]
    return ", ".join(parts[:most]) or empty


def _n(count: Any, one: str, many: str | None = None) -> str:
    count = int(count or 0)
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _said(parts: list[str], empty: str) -> str:
    return ", ".join(p for p in parts if p) or empty


def _describe_redact(c: dict[str, Any]) -> str:
    if not c.get("checked"):
        return "no memory from before redaction left to check"
    found = _said([_n(c.get("episodes"), "memory", "memories") if c.get("episodes") else "",
                   _n(c.get("lessons"), "lesson") if c.get("lessons") else ""], "")
    return (f"checked {_n(c['checked'], 'older row')}: "
            + (f"secrets redacted in {found}" if found else "no secret found"))


def _describe_embed(c: dict[str, Any]) -> str:
    made = _said([_n(c.get("episodes"), "memory", "memories") if c.get("episodes") else "",
                  _n(c.get("lessons"), "lesson") if c.get("lessons") else "",
                  _n(c.get("predictions"), "prediction") if c.get("predictions") else ""], "")
    return f"embedded {made}" if made else "everything was embedded already"


def _describe_expire(c: dict[str, Any]) -> str:
    if not c.get("ran"):
        return "no lifecycle task was due"
    by_task = c.get("by_task") if isinstance(c.get("by_task"), dict) else {}

    def did(task: str, key: str) -> int:
        return int((by_task.get(task) or {}).get(key) or 0)

    gone = did("expire_short_term", "expired") + did("active_forgetting", "deleted") \
        + did("cleanup_archived", "deleted")
    if not by_task:  # a run recorded before by_task: its summed numbers
        gone = int(c.get("expired") or 0) + int(c.get("deleted") or 0)
    head = f"{_n(c['ran'], 'due lifecycle task')} ran: " + (
        f"{_n(gone, 'memory', 'memories')} expired or deleted" if gone else "nothing expired or was deleted")
    eased = _said([
        f"importance of {_n(did('importance_decay', 'decayed'), 'memory', 'memories')} eased with age"
        if did("importance_decay", "decayed") else "",
        f"health of {_n(did('active_forgetting', 'decayed'), 'fading memory', 'fading memories')} fell"
        if did("active_forgetting", "decayed") else "",
    ], "")
    return head + (f"; {eased} (normal)" if eased else "")


def _describe_decay(c: dict[str, Any]) -> str:
    if c.get("skipped"):
        return f"skipped: {c['skipped']}"
    if not c.get("decayed"):
        return "no memory's strength was owed any decay"
    archived = int(c.get("archived") or 0)
    return (f"strength of {_n(c['decayed'], 'memory', 'memories')} eased for the time unused; "
            + (f"{_n(archived, 'memory', 'memories')} faded and {'was' if archived == 1 else 'were'} "
               "archived (hidden from recall, restorable)" if archived else "none faded (normal)"))


def _describe_lessons(c: dict[str, Any]) -> str:
    new, pending = int(c.get("new_episodes") or 0), int(c.get("pending") or 0)
    made = _said([_n(c.get("created"), "new lesson") if c.get("created") else "",
                  f"{_n(c.get('joined'), 'joined a lesson', 'joined lessons')}" if c.get("joined") else "",
                  f"{pending} seen only once, waiting for a second sighting" if pending else ""],
                 "nothing to learn")
    if not new:
        return "no new corrections or errors" + (f"; {made}" if pending else "")
    return f"read {_n(new, 'new correction or error', 'new corrections and errors')}: {made}"


def _describe_merge(c: dict[str, Any]) -> str:
    if not c.get("aliased"):
        return "no two lessons meant the same"
    return f"{_n(c['aliased'], 'lesson')} merged into {_n(c.get('themes'), 'lesson')} meaning the same"


def _describe_verify(c: dict[str, Any]) -> str:
    if not c.get("open"):
        return "no open prediction to check"
    return (f"checked {_n(c['open'], 'open prediction')}: {c.get('confirmed') or 0} came true, "
            f"{c.get('failed') or 0} did not in time")


def _describe_predict(c: dict[str, Any]) -> str:
    made = int(c.get("made") or 0)
    return f"made {_n(made, 'prediction')} for later sleeps to check" if made else "no new prediction"


def _describe_connect(c: dict[str, Any]) -> str:
    if "would_scan" in c:
        return f"would link {_n(c['would_scan'], 'new memory', 'new memories')} to similar ones"
    if not c.get("memories"):
        return "no new memory to link"
    text = (f"linked {_n(c['memories'], 'new memory', 'new memories')} to similar ones: "
            f"{_n(c.get('edges'), 'new connection')}")
    if c.get("older_not_scanned"):
        text += f" ({c['older_not_scanned']} older ones left for later)"
    return text


def _describe_render(c: dict[str, Any]) -> str:
    if not c.get("lessons") and not c.get("removed") and not c.get("vetoed"):
        return "no active lesson to write"
    parts = [f"{_n(c.get('lessons'), 'lesson')} for agents"]
    if c.get("folders"):
        parts.append(f"in {_n(c['folders'], 'project folder')}")
    text = " ".join(parts) + ": " + _said([
        _n(c.get("written"), "file") + " written" if c.get("written") else "",
        _n(c.get("removed"), "file") + " removed" if c.get("removed") else "",
        f"{c['no_project_folder']} wait for a project folder" if c.get("no_project_folder") else "",
        _n(c.get("vetoed"), "lesson") + " vetoed" if c.get("vetoed") else "",
    ], "files unchanged")
    return text


_DESCRIBE: dict[str, Callable[[dict[str, Any]], str]] = {
    "redact": _describe_redact, "embed": _describe_embed, "expire": _describe_expire,
    "decay": _describe_decay, "lessons": _describe_lessons, "merge": _describe_merge,
    "verify": _describe_verify, "predict": _describe_predict, "connect": _describe_connect,
    "render": _describe_render,
}


def describe_pass(name: str, counts: dict[str, Any]) -> str:
    """What a pass did, in words a person reads at a glance ("2 due lifecycle tasks ran:
    nothing expired or was deleted"); the summary's counts keep their keys for scripts. A pass
    without words of its own, or counts it cannot read, fall back to describe_counts."""
    describe = _DESCRIBE.get(name)
    if describe is None or not isinstance(counts, dict):
        return describe_counts(counts if isinstance(counts, dict) else {})
    try:
        return describe(counts)
    except (TypeError, ValueError, KeyError):  # a damaged or older summary: its numbers
        return describe_counts(counts)


def morning_report() -> str | None:
    """The last morning report (morning.md), or None when there is none or it cannot be read
    (a report is for reading; a damaged one must not stop `remem morning` or the Overview)."""
    try:
        return paths.morning_path().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


# --------------------------------------------------------------------------- redact, embed

def _pass_redact(ctx: Context) -> Iterator[Progress]:
    """Secrets in what an older release stored, redacted in place (first: every later pass,
    and the lesson files render writes, then see the redacted words)."""
    from remem.engine import scrub

    yield from scrub.sweep(ctx)


def episode_text(row: dict[str, Any]) -> str:
    """What an episode is embedded from: a correction from the person's words alone."""
    if row["kind"] == "correction":
        return row.get("gist") or row.get("title") or ""
    return f"{row.get('title') or ''}\n{row.get('gist') or ''}".strip()


def _pass_embed(ctx: Context) -> Iterator[Progress]:
    from remem.engine.embed import to_blob

    store, emb = ctx.store, ctx.embedder
    space = emb.space
    stale = "(embedding IS NULL OR space IS NULL OR space != ?)"
    n_ep = int(store.scalar(f"SELECT count(*) FROM episodes WHERE {stale}", (space,)) or 0)
    n_le = int(store.scalar(f"SELECT count(*) FROM lessons WHERE {stale}", (space,)) or 0)
    n_pr = int(store.scalar(f"SELECT count(*) FROM predictions WHERE {stale}", (space,)) or 0)
    total = n_ep + n_le + n_pr
    done = 0
    yield Progress("embed", 0, total, f"{total} to embed in {space}")
    last_seq = 0
    while n_ep:
        rows = store.rows(
            f"SELECT seq, id, kind, title, gist FROM episodes WHERE {stale} AND seq > ? "
            "ORDER BY seq LIMIT ?", (space, last_seq, EMBED_BATCH),
        )
        if not rows:
            break
        vecs = emb.encode([episode_text(r) for r in rows])  # outside the write
        with store.write() as conn:
            conn.executemany(
                "UPDATE episodes SET space = ?, embedding = ? WHERE seq = ?",
                [(space, to_blob(v), r["seq"]) for r, v in zip(rows, vecs)],
            )
        last_seq = rows[-1]["seq"]
        done += len(rows)
        yield Progress("embed", done, total, f"{done} of {total}")
    for table, text_col in (("lessons", "text"), ("predictions", "text")):
        rows = store.rows(f"SELECT id, {text_col} AS text FROM {table} WHERE {stale}", (space,))
        for start in range(0, len(rows), EMBED_BATCH):
            chunk = rows[start:start + EMBED_BATCH]
            vecs = emb.encode([r["text"] for r in chunk])
            with store.write() as conn:
                conn.executemany(
                    f"UPDATE {table} SET space = ?, embedding = ? WHERE id = ?",
                    [(space, to_blob(v), r["id"]) for r, v in zip(chunk, vecs)],
                )
            done += len(chunk)
            yield Progress("embed", done, total, f"{done} of {total}")
    ctx.counts["embed"] = {"episodes": n_ep, "lessons": n_le, "predictions": n_pr, "space": space}


# --------------------------------------------------------------------------- expire, decay

# The lifecycle tasks (`remem tasks`) that are sleep passes: stamped when the pass runs.
SLEEP_TASKS = {"lessons": "consolidate", "connect": "discover_connections"}


def _stamp_task(ctx: Context, pass_name: str, started: str) -> None:
    """Record in `tasks` that a pass which is a lifecycle task ran (started at `started`)."""
    from remem.engine import lifecycle

    with ctx.store.write() as conn:  # in a dry run, the private copy
        lifecycle._mark_run(conn, SLEEP_TASKS[pass_name], started, ctx.cfg)


# The lifecycle tasks the expire pass leaves to passes of their own.
OWN_PASS_TASKS = (*SLEEP_TASKS.values(), "strength_decay")


def _pass_expire(ctx: Context) -> Iterator[Progress]:
    """The due lifecycle tasks (expire short-term, importance decay, forgetting, cleanup)."""
    from remem.engine import lifecycle

    yield Progress("expire", 0, 1, "due lifecycle tasks")
    # Consolidation and connection discovery are this sleep's own passes, which stamp their
    # tasks when they run (_stamp_task), and strength decay is the decay pass's: none is run
    # here (a full sleep decays strength once), and none is stamped for a pass that did not run.
    own = {name: 0 for name in OWN_PASS_TASKS}
    cfg = {**ctx.cfg, "tasks": {**ctx.cfg.get("tasks", {}), **own}}
    report = lifecycle.run_due_tasks(ctx.store, cfg=cfg)
    counts: dict[str, Any] = {"ran": 0}
    by_task: dict[str, Any] = {}
    for name, info in report.items():
        if info.get("ran") and name not in own:
            counts["ran"] += 1
            by_task[name] = info["result"]
            for key, value in info["result"].items():
                if isinstance(value, (int, float)):
                    counts[key] = counts.get(key, 0) + value
    counts["by_task"] = by_task  # what each task did: the summed numbers mix importance and health
    ctx.counts["expire"] = counts
    yield Progress("expire", 1, 1, "done")


def _pass_decay(ctx: Context) -> Iterator[Progress]:
    """strength × 2^(−days since touch / 45); archived below the cut (flashbulb exempt)."""
    from remem.engine import lifecycle

    yield Progress("decay", 0, 1, "strength decay")
    counts = lifecycle.strength_decay(ctx.store, ctx.cfg)
    ctx.counts["decay"] = counts
    ctx.faded += int(counts.get("archived", 0) or 0)
    yield Progress("decay", 1, 1, "done")


# --------------------------------------------------------------------------- lessons

def _last_watermark(store: Store) -> int:
    for row in store.rows(
        "SELECT summary FROM runs WHERE kind = 'sleep' AND status = 'ok' "
        "AND summary LIKE '%\"watermark\"%' ORDER BY id DESC LIMIT 5"
    ):
        try:
            mark = json.loads(row["summary"] or "{}").get("watermark")
        except ValueError:
            continue
        if isinstance(mark, int):
            return mark
    return 0


def _pass_lessons(ctx: Context) -> Iterator[Progress]:
    from remem.engine import lessons_pass

    started = clock.iso()
    yield from lessons_pass.consolidate(ctx, _last_watermark(ctx.store))
    _stamp_task(ctx, "lessons", started)


def _pass_merge(ctx: Context) -> Iterator[Progress]:
    from remem.engine import lessons_pass, render

    # A deleted lesson file is a veto: take it now, or the lesson may merge away first.
    ctx.events["vetoed"] += render.take_vetoes(ctx.store, dry_run=ctx.dry_run)
    yield from lessons_pass.merge(ctx)


# --------------------------------------------------------------------------- verify, predict

def _pass_verify(ctx: Context) -> Iterator[Progress]:
    from remem.engine import predictions

    yield from predictions.verify(ctx)


def _pass_predict(ctx: Context) -> Iterator[Progress]:
    from remem.engine import predictions

    yield from predictions.predict(ctx)


# --------------------------------------------------------------------------- connect, render

def _last_summary_value(store: Store, key: str) -> Any:
    row = store.one(
        "SELECT summary FROM runs WHERE kind = 'sleep' AND status = 'ok' AND summary LIKE ? "
        "ORDER BY id DESC LIMIT 1", (f'%"{key}"%',),
    )
    try:
        return json.loads(row["summary"]).get(key) if row else None
    except ValueError:
        return None


def _pass_connect(ctx: Context) -> Iterator[Progress]:
    """Typed similar_to edges for memories made since the last connect pass."""
    from remem.engine.graph import discover_all

    yield Progress("connect", 0, 1, "discovering connections")
    store = ctx.store
    since = _last_summary_value(store, "connected_until")
    ctx.connected_until = started = clock.iso()
    # Discovery compares each memory with every other one: bound a run's share of it (the
    # first sleep over a long imported history links its newest `connect_max` memories).
    cap = int(ctx.cfg["sleep"].get("connect_max", 2000) or 0)
    live = "archived = 0 AND embedding IS NOT NULL" + (" AND created > ?" if since else "")
    todo = int(store.scalar(f"SELECT count(*) FROM episodes WHERE {live}", [since] if since else []) or 0)
    skipped = 0
    if cap and todo > cap:
        since = store.scalar(
            f"SELECT created FROM episodes WHERE {live} ORDER BY created DESC LIMIT 1 OFFSET ?",
            ([since] if since else []) + [cap],
        )
        skipped = todo - cap
    if ctx.dry_run:  # discovery keeps a vector cache per database: not for a throwaway copy
        ctx.counts["connect"] = {"would_scan": min(todo, cap) if cap else todo}
        return
    steps: list[tuple[int, int, str]] = []
    counts = discover_all(store, progress=lambda d, t, m: steps.append((d, t, m)), since=since, cfg=ctx.cfg)
    for done, total, message in steps[-1:]:
        yield Progress("connect", done, total, message)
    if skipped:
        counts["older_not_scanned"] = skipped
    ctx.counts["connect"] = counts
    _stamp_task(ctx, "connect", started)


# The passes whose work the morning report tells: a run with render and one of them rewrites it.
MORNING_PASSES = ("lessons", "merge", "verify", "decay")
EVENT_KINDS = ("learned", "grew", "merged", "confirmed", "failed", "vetoed")
UNREPORTED_RUNS_MAX = 500


def _wrote_morning(summary: dict[str, Any]) -> bool:
    """Whether a recorded run wrote morning.md (runs before the `morning` key: by its passes)."""
    if "morning" in summary:
        return bool(summary["morning"])
    passes = summary.get("passes")
    return (isinstance(passes, dict) and not summary.get("dry_run") and "render" in passes
            and any(p in passes for p in MORNING_PASSES))


def _add_events(into: dict[str, list[Any]], events: dict[str, Any]) -> None:
    """A later run's events after the earlier ones: lessons it merged away are named by their
    theme (as in one run), and each id once."""
    from remem.engine.lessons_pass import _retarget_events

    for merge in events.get("merged") or []:
        if isinstance(merge, dict) and merge.get("theme"):
            _retarget_events(into, merge["theme"], set(merge.get("old") or []))
    for kind in EVENT_KINDS:
        for item in events.get(kind) or []:
            if item not in into[kind]:
                into[kind].append(item)


def unreported(store: Store, events: dict[str, list[Any]], faded: int) -> tuple[dict[str, list[Any]], int]:
    """This run's events and faded count with those of the runs since morning.md was last
    written (a `--pass lessons` run, say): the report tells all that the last one did not."""
    earlier: list[dict[str, Any]] = []
    for row in store.rows(
        "SELECT summary FROM runs WHERE kind = 'sleep' AND status IN ('ok', 'error') "
        "ORDER BY id DESC LIMIT ?", (UNREPORTED_RUNS_MAX,)
    ):
        try:
            summary = json.loads(row["summary"] or "{}")
        except ValueError:
            continue
        if not isinstance(summary, dict) or summary.get("dry_run"):
            continue
        if _wrote_morning(summary):
            break
        earlier.append(summary)
    if not earlier:
        return events, faded
    out: dict[str, list[Any]] = {kind: [] for kind in EVENT_KINDS}
    for summary in reversed(earlier):  # oldest first
        if isinstance(summary.get("events"), dict):
            _add_events(out, summary["events"])
        faded += int(summary.get("faded") or 0)
    _add_events(out, events)
    return out, faded


def _pass_render(ctx: Context) -> Iterator[Progress]:
    from remem.engine import render

    yield Progress("render", 0, 1, "writing lesson files")
    # A render on its own (`--pass render`) keeps the night's report; a run that learned rewrites
    # it, telling also what the runs since the last report did (`--pass lessons`, say).
    learned = any(p in ctx.passes for p in MORNING_PASSES)
    events, faded = ctx.events, ctx.faded
    if learned and not ctx.dry_run:
        events, faded = unreported(ctx.store, ctx.events, ctx.faded)
    counts = render.render(ctx.store, events=events, faded=faded, dry_run=ctx.dry_run,
                           morning=learned)
    ctx.morning = learned and not ctx.dry_run
    ctx.events["vetoed"] += counts.pop("vetoed_ids", [])
    counts["vetoed"] = len(ctx.events["vetoed"])  # with those the merge pass took
    ctx.counts["render"] = counts
    yield Progress("render", 1, 1, "done")


PASS_FUNCTIONS: dict[str, Callable[[Context], Iterator[Progress]]] = {
    "redact": _pass_redact,
    "embed": _pass_embed,
    "expire": _pass_expire,
    "decay": _pass_decay,
    "lessons": _pass_lessons,
    "merge": _pass_merge,
    "verify": _pass_verify,
    "predict": _pass_predict,
    "connect": _pass_connect,
    "render": _pass_render,
}
