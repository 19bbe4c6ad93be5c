"""The sleep's passes (redact … render), the Context they share and the Progress they yield."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from remem.engine import clock
from remem.engine.store import Store

EMBED_BATCH = 2048


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
        "contradicted": [],  # contradiction.settle's: every key is in every summary, empty or not
    })
    changed_lessons: set[str] = field(default_factory=set)
    watermark: int | None = None
    connected_until: str | None = None
    faded: int = 0
    morning: bool = False  # the render pass wrote morning.md
    started: str | None = None  # when this run began (the runs row's `started`)
    morning_at: str | None = None  # when morning.md was written (after the write)
    morning_covers: dict[str, Any] | None = None  # the runs it tells (unreported)
    waiting: dict[str, int] | None = None  # what made no lesson and why (lessons_pass.waiting)

    @property
    def embedder(self) -> Any:
        from remem.engine.embed import get_embedder

        return get_embedder()

    def cut(self, space: str) -> float:
        from remem.engine.embed import space_is_model

        s = self.cfg["sleep"]
        return float(s["surprise_cut_model"] if space_is_model(space) else s["surprise_cut_hashed"])


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
    for table, kind_col in (("lessons", "kind"), ("predictions", "NULL")):
        rows = store.rows(f"SELECT id, text, {kind_col} AS kind FROM {table} WHERE {stale}", (space,))
        for start in range(0, len(rows), EMBED_BATCH):
            chunk = rows[start:start + EMBED_BATCH]
            vecs = emb.encode([lesson_vector_text(r) for r in chunk])
            with store.write() as conn:
                conn.executemany(
                    f"UPDATE {table} SET space = ?, embedding = ? WHERE id = ?",
                    [(space, to_blob(v), r["id"]) for r, v in zip(chunk, vecs)],
                )
            done += len(chunk)
            yield Progress("embed", done, total, f"{done} of {total}")
    ctx.counts["embed"] = {"episodes": n_ep, "lessons": n_le, "predictions": n_pr, "space": space,
                           "lessons_reembedded": reembed_lessons(ctx)}


def lesson_vector_text(row: dict[str, Any]) -> str:
    """What a lesson or prediction row is embedded from (`lessons.vector_text`)."""
    from remem.engine.lessons import vector_text

    return vector_text(row["text"], row["kind"])


def reembed_lessons(ctx: Context) -> int:
    """A repair of stores from before: error lessons whose vector in the current space was
    computed from their whole text, embedded again from their own words (`lessons.vector_text`);
    returns how many. Every place that embeds a lesson now embeds those words when it writes
    it; this is for the vectors computed before (an earlier release's lessons pass, received
    share, redaction), which made a lesson show for prompts about no error of its ("find out
    why the build is failing" for every "…; find out why before running it again."). A lesson
    already embedded so is left alone (its vector is the same), so this is safe to re-run and
    costs an encoding of the error lessons, not a write; the embed pass runs it."""
    import numpy as np

    from remem.engine.embed import to_blob

    store, emb = ctx.store, ctx.embedder
    rows = store.rows("SELECT id, text, kind, embedding FROM lessons WHERE kind = 'error' "
                      "AND space = ? AND embedding IS NOT NULL", (emb.space,))
    rows = [r for r in rows if lesson_vector_text(r) != (r["text"] or "")]
    stale: list[tuple[str, bytes, str]] = []
    for start in range(0, len(rows), EMBED_BATCH):
        chunk = rows[start:start + EMBED_BATCH]
        vecs = emb.encode([lesson_vector_text(r) for r in chunk])
        for r, vec in zip(chunk, vecs):
            old = np.frombuffer(r["embedding"], dtype="<f4")
            if old.shape != vec.shape or float(np.dot(old, vec)) < 0.9999:
                stale.append((to_blob(vec), r["id"], r["text"]))
    if stale:
        with store.write() as conn:  # the text it was computed from must still be the lesson's
            conn.executemany("UPDATE lessons SET embedding = ? WHERE id = ? AND text = ?", stale)
    return len(stale)


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
    # The numbers every summary has, whether a task was due or not (a script reads them).
    counts: dict[str, Any] = {"ran": 0, "expired": 0, "decayed": 0, "deleted": 0}
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


def task_off(ctx: Context, task: str) -> str | None:
    """Why a pass that is the lifecycle task `task` does not run: its interval in [tasks] is
    0 or less ("0 = off"), so sleep leaves it, as `remem tasks --run` does; None when it is on."""
    try:
        interval = float(ctx.cfg.get("tasks", {}).get(task, 1) or 0)
    except (TypeError, ValueError):
        return None  # a value config.load would have refused: the pass runs as before
    if interval > 0:
        return None
    from remem.config import DEFAULTS

    on = DEFAULTS["tasks"][task]
    return f"off (tasks.{task} = 0; `remem config set tasks.{task} {on}` turns it on)"


def _pass_decay(ctx: Context) -> Iterator[Progress]:
    """strength × 2^(−days since touch / 45); archived below the cut (flashbulb exempt)."""
    from remem.engine import lifecycle

    off = task_off(ctx, "strength_decay")
    if off:  # neither decayed nor stamped: turned on again, it owes the time since it last ran
        ctx.counts["decay"] = {"decayed": 0, "archived": 0, "skipped": off}
        yield Progress("decay", 1, 1, f"skipped: {off}")
        return
    yield Progress("decay", 0, 1, "strength decay")
    counts = lifecycle.strength_decay(ctx.store, ctx.cfg)
    ctx.counts["decay"] = counts
    ctx.faded += int(counts.get("archived", 0) or 0)
    yield Progress("decay", 1, 1, "done")


# --------------------------------------------------------------------------- lessons

def _last_summary_value(store: Store, key: str, kind: type = object) -> Any:
    """`key` of the newest successful sleep that recorded one of type `kind`, or None. A
    summary that does not parse is passed over, not taken for "never recorded"."""
    for row in store.rows(
        "SELECT summary FROM runs WHERE kind = 'sleep' AND status = 'ok' AND summary LIKE ? "
        "ORDER BY id DESC LIMIT 5", (f'%"{key}"%',),
    ):
        try:
            value = json.loads(row["summary"] or "{}").get(key)
        except (ValueError, AttributeError):
            continue
        if isinstance(value, kind):
            return value
    return None


def last_watermark(store: Store) -> int:
    """The last episode seq a finished sleep's lessons pass read; 0 before the first."""
    return _last_summary_value(store, "watermark", int) or 0


def _pass_lessons(ctx: Context) -> Iterator[Progress]:
    from remem.engine import lessons_pass

    off = task_off(ctx, "consolidate")
    if off:  # neither read nor stamped: turned on again, it reads from its watermark
        ctx.counts["lessons"] = {"skipped": off}
        yield Progress("lessons", 1, 1, f"skipped: {off}")
        return
    started = clock.iso()
    watermark = last_watermark(ctx.store)
    yield from lessons_pass.consolidate(ctx, watermark)
    counts = ctx.counts.get("lessons")
    if isinstance(counts, dict):
        # Of those still waiting, the ones an earlier sleep read (at or below its watermark):
        # the rest are this run's new episodes, so its account can say what became of each.
        still = int(lessons_pass.waiting(ctx.store, ctx.cfg, watermark).get("total") or 0)
        counts["pending_earlier"] = min(still, int(counts.get("pending") or 0))
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
    if isinstance(ctx.counts.get("verify"), dict):  # in every summary, none withdrawn or some
        ctx.counts["verify"].setdefault("withdrawn", 0)


def _pass_predict(ctx: Context) -> Iterator[Progress]:
    from remem.engine import predictions

    yield from predictions.predict(ctx)


# --------------------------------------------------------------------------- connect, render

def _pass_connect(ctx: Context) -> Iterator[Progress]:
    """Typed similar_to edges for memories made since the last connect pass."""
    from remem.engine.graph import discover_all

    off = task_off(ctx, "discover_connections")
    if off:  # not stamped, connected_until left: turned on again, it links what came meanwhile
        ctx.counts["connect"] = {"memories": 0, "edges": 0, "skipped": off}
        yield Progress("connect", 1, 1, f"skipped: {off}")
        return
    yield Progress("connect", 0, 1, "discovering connections")
    store = ctx.store
    since = _last_summary_value(store, "connected_until", str)
    ctx.connected_until = started = clock.iso()
    if since and since > started:
        # Marked while the clock was ahead: what came since cannot be told from what that run
        # saw, so look at every live memory (bounded below; edges are never doubled).
        since = None
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
UNREPORTED_RUNS_MAX = 500  # runs read back at most, looking for the last report read


def _wrote_morning(summary: dict[str, Any]) -> bool:
    """Whether a recorded run wrote morning.md (runs before the `morning` key: by its passes)."""
    if "morning" in summary:
        return bool(summary["morning"])
    passes = summary.get("passes")
    return (isinstance(passes, dict) and not summary.get("dry_run") and "render" in passes
            and any(p in passes for p in MORNING_PASSES))


def _report_was_read(summary: dict[str, Any], finished: str | None, read_at: str | None) -> bool:
    """Whether the report this run wrote was there when the person last read the report (so
    they saw it, and all it told): written (`morning_at`; runs before it: finished) by then."""
    if read_at is None or not _wrote_morning(summary):
        return False
    written = clock.normalise(summary.get("morning_at")) or clock.normalise(finished)
    return written is not None and written <= read_at


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


def unreported(
    store: Store, events: dict[str, list[Any]], faded: int, started: str | None = None,
) -> tuple[dict[str, list[Any]], int, dict[str, Any]]:
    """This run's events and faded count with those of every run since the person last read
    the report (render_morning.read_at): a second sleep in a day adds to the report, it does not
    replace it. Runs that wrote no report (`--pass lessons`) count as unread, and so do runs
    that did not finish (killed): what their finished passes did was recorded after each pass,
    and is told here; dry runs never count.
    At most REPORT_DAYS days and REPORT_RUNS_MAX runs (this one included); `covers` says the
    span: since (the first run's start), runs, previous_read (when the report before it was
    read, where the span starts; None: never) and left_out (unread runs beyond it)."""
    from datetime import timedelta

    from remem.engine.render_morning import REPORT_DAYS, REPORT_RUNS_MAX, read_at

    last_read = read_at()
    oldest = clock.iso(clock.now() - timedelta(days=REPORT_DAYS))
    since = started or clock.iso()
    earlier: list[dict[str, Any]] = []
    left_out, scanned, reached_read = 0, 0, False
    for row in store.rows(
        "SELECT started, finished, summary FROM runs WHERE kind = 'sleep' "
        "AND status IN ('ok', 'error', 'interrupted') ORDER BY id DESC LIMIT ?", (UNREPORTED_RUNS_MAX,)
    ):
        scanned += 1
        try:
            summary = json.loads(row["summary"] or "{}")
        except ValueError:
            continue
        if not isinstance(summary, dict) or summary.get("dry_run"):
            continue
        if _report_was_read(summary, row["finished"], last_read):
            reached_read = True
            break
        if left_out or len(earlier) + 1 >= REPORT_RUNS_MAX or (row["started"] or "") < oldest:
            left_out += 1  # and every older one: the report keeps the newest runs
            continue
        earlier.append(summary)
        since = min(since, row["started"] or since)
    covers: dict[str, Any] = {"since": since, "runs": len(earlier) + 1, "previous_read": last_read,
                              "left_out": left_out}
    if left_out and not reached_read and scanned >= UNREPORTED_RUNS_MAX:
        covers["left_out_more"] = True  # the scan stopped before the last report read
    if not earlier:
        return events, faded, covers
    out: dict[str, list[Any]] = {kind: [] for kind in EVENT_KINDS}
    for summary in reversed(earlier):  # oldest first
        if isinstance(summary.get("events"), dict):
            _add_events(out, summary["events"])
        faded += int(summary.get("faded") or 0)
    _add_events(out, events)
    return out, faded, covers


def _pass_render(ctx: Context) -> Iterator[Progress]:
    from remem.engine import render

    yield Progress("render", 0, 1, "writing lesson files")
    # A render on its own (`--pass render`) keeps the report there is; a run that learned
    # rewrites it, telling also what every run since the person last read it did.
    learned = any(p in ctx.passes for p in MORNING_PASSES)
    events, faded, covers = ctx.events, ctx.faded, None
    if learned and not ctx.dry_run:
        events, faded, covers = unreported(ctx.store, ctx.events, ctx.faded, ctx.started)
    counts = render.render(ctx.store, events=events, faded=faded, dry_run=ctx.dry_run,
                           morning=learned, covers=covers)
    ctx.morning = learned and not ctx.dry_run
    if ctx.morning:  # after the write: a read from now on has seen this report
        ctx.morning_at, ctx.morning_covers = clock.iso(), covers
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
