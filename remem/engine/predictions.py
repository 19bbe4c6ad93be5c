"""The sleep's `verify` and `predict` passes.

predict: every active lesson with strength >= 1 and no open prediction gets one — that a
situation like the lesson's comes again within `sleep.prediction_days` (14) days. The text
is deterministic; the prediction carries the lesson's vector.

verify: an open prediction is confirmed by the first episode of the lesson's kind that
happened after it was made and within `prediction_days` of it, and matches the lesson: it
joined the lesson's sources, or its mean cosine to them reaches the cut (the consolidation
cut in a model's space, 0.5 hashed) and it does not point the other way (a correction that
contradicts the lesson, contradiction.py, is about it but takes it back: no confirmation), nor
is it a correction about other programs than the lesson's (consolidate.same_programs, the
rule the lessons and merge passes keep: "Use yarn, not npm" never confirms "Use pnpm, not
npm", however close the words).
With no match in the window, it failed (an episode after the window never confirms it, even
when no sleep ran inside the window). Only an active lesson's predictions run: the open
prediction of a lesson that is not active (vetoed by the person, superseded by a later
correction, revoked) is withdrawn — deleted, so it counts neither way in the accuracy — and
the predict pass makes a new one if the lesson is restored.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from remem.engine import clock
from remem.engine.consolidate import Topic, as_matrix, same_programs, topic_of
from remem.engine.contradiction import Stance, contradicts, stance
from remem.engine.embed import space_is_model
from remem.engine.programs import REFUSAL_LEAD
from remem.engine.store import loads_list, stable_id

if TYPE_CHECKING:
    from remem.engine.sleep_passes import Context, Progress

_PHRASE = {
    "correction": "the person will correct this again",
    "error": "this error will come again",
    "surprise": "this will surprise again",
}


def _progress(*args: Any) -> "Progress":
    from remem.engine.sleep_passes import Progress

    return Progress(*args)


def prediction_text(lesson: dict[str, Any], days: int) -> str:
    phrase = _PHRASE.get(lesson["kind"], "this will come up again")
    return f"Within {days} days {phrase}: {lesson['text']}"


_MADE_WITH_DAYS = re.compile(r"Within (\d+) days ")


def reword_open(conn: Any, lesson: dict[str, Any]) -> int:
    """Inside the write that changes a lesson's words (lessons.edit_text): its open predictions
    say its new words, as `predict` would make them (with the days each was made with), and
    lose their vector, which the next sleep's embed pass makes anew from the new text. A
    resolved prediction keeps the words it was confirmed or failed with. Returns how many
    changed."""
    rows = conn.execute("SELECT id, text FROM predictions WHERE lesson_id = ? AND resolved IS NULL",
                        (lesson["id"],)).fetchall()
    changed = []
    for pid, text in rows:
        found = _MADE_WITH_DAYS.match(text or "")
        # Not in predict's words (never so far): the days a prediction is made with now.
        days = int(found.group(1)) if found else _days_now()
        new = prediction_text(lesson, days)
        if new != text:
            changed.append((new, pid))
    conn.executemany("UPDATE predictions SET text = ?, space = NULL, embedding = NULL "
                     "WHERE id = ? AND resolved IS NULL", changed)
    return len(changed)


def _days_now() -> int:
    """sleep.prediction_days as configured; its default when the config cannot be read (an
    edit is not the place to stop for it: the next sleep says what is wrong with it)."""
    from remem import config
    from remem.errors import RememError

    try:
        return int(config.load()["sleep"]["prediction_days"])
    except (RememError, ValueError, OSError, KeyError, TypeError):
        return int(config.DEFAULTS["sleep"]["prediction_days"])


def _verify_cut(ctx: "Context", space: str) -> float:
    if space_is_model(space):
        return float(ctx.cfg["sleep"]["surprise_cut_model"])
    return float(ctx.cfg["sleep"].get("verify_cut_hashed", 0.5))


def verify(ctx: "Context") -> Iterator["Progress"]:
    store, emb = ctx.store, ctx.embedder
    days = float(ctx.cfg["sleep"]["prediction_days"])
    open_preds = store.rows(
        "SELECT p.id, p.lesson_id, p.made, l.kind, l.sources, l.text, l.draft, l.status FROM predictions p "
        "LEFT JOIN lessons l ON l.id = p.lesson_id WHERE p.resolved IS NULL ORDER BY p.made, p.id"
    )
    # A lesson that is no longer active predicts nothing: its open prediction is withdrawn.
    withdrawn = [p["id"] for p in open_preds if p["status"] not in (None, "active")]
    if withdrawn:
        with store.write() as conn:
            conn.executemany("DELETE FROM predictions WHERE id = ? AND resolved IS NULL",
                             [(pid,) for pid in withdrawn])
        open_preds = [p for p in open_preds if p["status"] in (None, "active")]
    counts = {"open": len(open_preds), "confirmed": 0, "failed": 0}
    if withdrawn:
        counts["withdrawn"] = len(withdrawn)
    yield _progress("verify", 0, len(open_preds), f"{len(open_preds)} open predictions")
    cut = _verify_cut(ctx, emb.space)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pred in open_preds:
        by_kind[pred["kind"] or ""].append(pred)
    now = clock.iso()
    resolved: list[tuple[str, str, str | None, str]] = []  # (outcome, evidence, resolved, id)
    done = 0
    for kind, preds in by_kind.items():
        since = min(p["made"] for p in preds)
        rows = store.rows(
            f"SELECT id, at, embedding{', gist' if kind == 'correction' else ''} FROM episodes "
            "WHERE kind = ? AND at > ? AND archived = 0 "
            "AND space = ? AND embedding IS NOT NULL ORDER BY at, seq", (kind, since, emb.space),
        ) if kind else []
        later = as_matrix([r["embedding"] for r in rows], emb.dim)
        ats = [r["at"] for r in rows]
        stances: dict[int, Stance | None] = {}  # read once per episode, when a lesson points somewhere
        topics: dict[int, Topic] = {}  # the programs each episode is about, read once too
        for pred in preds:
            sources = [s for s in loads_list(pred["sources"]) if isinstance(s, str)]
            pointed = stance(pred["text"]) if kind == "correction" else None
            about = _lesson_topic(pred) if kind == "correction" else None
            evidence = _match(store, emb, pred, sources, rows, ats, later, cut, days, pointed, stances,
                              about, topics)
            if evidence:
                resolved.append(("confirmed", evidence, now, pred["id"]))
                counts["confirmed"] += 1
                ctx.events["confirmed"].append(pred["id"])
            elif clock.days_between(pred["made"]) >= days:
                resolved.append(("failed", None, now, pred["id"]))  # type: ignore[arg-type]
                counts["failed"] += 1
                ctx.events["failed"].append(pred["id"])
            done += 1
        yield _progress("verify", done, len(open_preds), kind or "orphaned")
    if resolved:
        with store.write() as conn:
            conn.executemany(
                "UPDATE predictions SET outcome = ?, evidence = ?, resolved = ? WHERE id = ?", resolved
            )
    ctx.counts["verify"] = counts


def _lesson_topic(pred: dict[str, Any]) -> Topic | None:
    """The programs a correction lesson is about (consolidate.topic_of the words it was made
    with), or None for the lesson of a refused call: the call keeps it apart, not the programs
    (lessons_pass._topic)."""
    words = pred.get("draft") or pred.get("text") or ""
    return None if words.startswith(REFUSAL_LEAD) else topic_of(words)


def _match(store: Any, emb: Any, pred: dict[str, Any], sources: list[str],
           rows: list[dict[str, Any]], ats: list[str], later: np.ndarray, cut: float,
           days: float, pointed: Stance | None = None,
           stances: dict[int, Stance | None] | None = None, about: Topic | None = None,
           topics: dict[int, Topic] | None = None) -> str | None:
    """The first episode inside the prediction's window that matches its lesson, or None.
    pointed: the lesson's stance; an episode that contradicts it never matches (stances: the
    episodes' stances read so far, by row). about: the programs a correction lesson is about
    (consolidate.topic_of); a correction about other programs never matches it
    (consolidate.same_programs; topics: the episodes' topics read so far, by row)."""
    first = bisect_right(ats, pred["made"])  # rows are in time order
    # Only the window counts: when no sleep ran inside it, a later episode must not confirm it.
    until = clock.iso(clock.parse(pred["made"]) + timedelta(days=days))
    last = bisect_right(ats, until)
    if first >= last:
        return None
    mask = np.zeros(len(rows), dtype=bool)
    mask[first:last] = True
    if pointed is not None:
        seen = stances if stances is not None else {}
        for i in range(first, last):
            if i not in seen:
                seen[i] = stance(rows[i].get("gist"))
            if contradicts(pointed, seen[i]):
                mask[i] = False
    if about is not None:
        read = topics if topics is not None else {}
        for i in range(first, last):
            if i not in read:
                read[i] = topic_of(rows[i].get("gist"), stances[i] if stances and i in stances else False)
            if not same_programs(about, read[i]):
                mask[i] = False
    src = set(sources)
    for i in np.nonzero(mask)[0]:
        if rows[i]["id"] in src:
            return rows[i]["id"]
    if not sources:
        return None
    marks = ",".join("?" for _ in sources[:500])
    vecs = store.rows(
        f"SELECT embedding FROM episodes WHERE id IN ({marks}) AND space = ? AND embedding IS NOT NULL",
        [*sources[:500], emb.space],
    )
    if not vecs:
        return None
    total = as_matrix([v["embedding"] for v in vecs], emb.dim).sum(axis=0)
    means = (later @ total) / len(vecs)
    hits = np.nonzero(mask & (means >= cut))[0]
    return rows[int(hits[0])]["id"] if hits.size else None


def predict(ctx: "Context") -> Iterator["Progress"]:
    store = ctx.store
    days = int(ctx.cfg["sleep"]["prediction_days"])
    lessons = store.rows(
        "SELECT id, text, kind, space, embedding FROM lessons l WHERE status = 'active' "
        "AND strength >= 1 AND NOT EXISTS (SELECT 1 FROM predictions p "
        "WHERE p.lesson_id = l.id AND p.resolved IS NULL) ORDER BY created, id"
    )
    yield _progress("predict", 0, len(lessons), f"{len(lessons)} lessons without an open prediction")
    made = clock.iso()
    rows = [
        (stable_id("prediction", l["id"], made), l["id"], prediction_text(l, days), made,
         l["space"], l["embedding"])
        for l in lessons
    ]
    for start in range(0, len(rows), 500):  # short writes: hooks and the server write meanwhile
        with store.write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO predictions (id, lesson_id, text, made, space, embedding) "
                "VALUES (?, ?, ?, ?, ?, ?)", rows[start:start + 500],
            )
    ctx.counts["predict"] = {"made": len(rows)}
    yield _progress("predict", len(lessons), len(lessons), f"{len(rows)} made")
