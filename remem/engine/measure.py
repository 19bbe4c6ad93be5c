"""Does remem help? The person's own history, measured.

- repeat-yourself rate: of the corrections on a day, the share that match a lesson that
  already existed before them (the person had said it before, and remem had learned it);
- repeated-error rate: the same for errors and error lessons;
- prediction accuracy: confirmed / resolved predictions;
- themes: the lessons that gained the most new sources in the window;
- primed vs held out: sessions that were shown correction lessons against sessions held out
  by the stable hash (which record what they would have been shown), compared on the share
  that later repeated a correction of a lesson they were primed for, with a 95 % interval for
  the difference — and a plain "too little data" when that is what it is. Only decisions made
  before the session's first repeat of a lesson prime it for that lesson, and a decision
  whose query is that repeated correction itself does not (`_primed_sessions`).

A correction "matches" a lesson when it is one of the lesson's sources. A lesson's birth is
the earliest `created` among it and the lessons merged into it (aliases keep theirs), so a
theme counts as known from the first time any of its parts was learned.

What is read is bounded by the window, not by the history (the TUI's Overview measures 30 days
at every start): the episodes of the window, the lessons, and for the primed-vs-held-out
comparison the corrections of the sessions with a decision in the window; rows are counted as
they are read (the `primes` log grows with every prompt), never gathered into a list.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any, Iterator

from remem.engine import clock
from remem.engine.prime import QUERY_CAP
from remem.engine.store import Store, loads_list

MIN_SESSIONS_PER_GROUP = 10
Z95 = 1.959964


def lesson_births(store: Store, kind: str) -> dict[str, tuple[str, str]]:
    """episode id -> (lesson id, birth of that lesson) for every source of lessons of a kind."""
    births: dict[str, str] = {}
    for row in store.rows("SELECT id, created FROM lessons WHERE kind = ?", (kind,)):
        births[row["id"]] = row["created"]
    for alias in store.rows("SELECT old, new, created FROM aliases WHERE created IS NOT NULL"):
        if alias["new"] in births and alias["created"] < births[alias["new"]]:
            births[alias["new"]] = alias["created"]
    out: dict[str, tuple[str, str]] = {}
    for row in store.rows("SELECT id, sources FROM lessons WHERE kind = ?", (kind,)):
        for episode_id in loads_list(row["sources"]):
            out[episode_id] = (row["id"], births[row["id"]])
    return out


def repeat_flags(store: Store, kind: str, since: str | None = None) -> Iterator[tuple[Any, ...]]:
    """(id, session_id, at, lesson id or None, repeat) for each episode of `kind` since a time,
    in time order, read one at a time."""
    sources = lesson_births(store, kind)
    sql = "SELECT id, session_id, at FROM episodes WHERE kind = ?"
    params: list[Any] = [kind]
    if since:
        sql += " AND at >= ?"
        params.append(since)
    for eid, session_id, at in store.conn.execute(sql + " ORDER BY at", params):
        lesson = sources.get(eid)
        yield eid, session_id, at, lesson[0] if lesson else None, bool(lesson and lesson[1] < at)


def repeats(store: Store, kind: str, since: str | None = None) -> list[dict[str, Any]]:
    """Every episode of `kind` (since a time) with whether it repeated an already-learned lesson."""
    return [{"id": eid, "session_id": session_id, "at": at, "lesson": lesson, "repeat": repeat}
            for eid, session_id, at, lesson, repeat in repeat_flags(store, kind, since)]


def _tally(store: Store, kind: str, since: str | None) -> tuple[list[dict[str, Any]], int, float | None]:
    """The episodes of `kind` since a time, counted by day as they are read: (by day, how
    many, repeat rate), without a list of them."""
    days: dict[str, list[int]] = {}
    for _, _, at, _, repeat in repeat_flags(store, kind, since):
        counts = days.setdefault(at[:10], [0, 0])
        counts[0] += 1
        counts[1] += repeat
    total = sum(t for t, _ in days.values())
    rate = round(sum(r for _, r in days.values()) / total, 4) if total else None
    return [
        {"day": day, "total": t, "repeats": r, "rate": round(r / t, 4) if t else None}
        for day, (t, r) in sorted(days.items())
    ], total, rate


def prediction_accuracy(store: Store, since: str | None = None) -> dict[str, Any]:
    sql = "SELECT outcome, count(*) AS n FROM predictions WHERE outcome IS NOT NULL"
    params: list[Any] = []
    if since:
        sql += " AND resolved >= ?"
        params.append(since)
    counts = {r["outcome"]: r["n"] for r in store.rows(sql + " GROUP BY outcome", params)}
    resolved = sum(counts.values())
    confirmed = counts.get("confirmed", 0)
    open_count = store.scalar("SELECT count(*) FROM predictions WHERE outcome IS NULL") or 0
    return {
        "confirmed": confirmed, "failed": counts.get("failed", 0), "resolved": resolved, "open": open_count,
        "accuracy": round(confirmed / resolved, 4) if resolved else None,
    }


def themes(store: Store, since: str, top: int = 5) -> list[dict[str, Any]]:
    """Lessons ranked by how many of their sources happened in the window."""
    recent = {eid for (eid,) in store.conn.execute("SELECT id FROM episodes WHERE at >= ?", (since,))}
    ranked = []
    for row in store.conn.execute("SELECT id, text, kind, sources, status FROM lessons WHERE status = 'active'"):
        new = [s for s in loads_list(row["sources"]) if s in recent]
        if new:
            ranked.append({"id": row["id"], "text": row["text"], "kind": row["kind"], "new_sources": len(new)})
    ranked.sort(key=lambda r: (-r["new_sources"], r["id"]))
    return ranked[:top]


def _words(text: str | None) -> str:
    """A prompt as `primes.query` keeps it (spaces collapsed, capped), compared without case."""
    return " ".join(str(text or "").split())[:QUERY_CAP].casefold()


def _primed_sessions(store: Store, since: str | None) -> tuple[dict[str, bool], set[str]]:
    """Which sessions were primed (session -> held out), and which of them repeated a lesson
    they were primed for.

    A decision primes a session for a correction lesson only when it was recorded before the
    session's first repeated correction of that lesson and its query is not the words of such
    a correction: a lesson chosen for the correction itself (the person typed it, the prompt
    hook found the lesson) came because they repeated themselves, not before. The rule is the
    same for held-out decisions (what they would have been shown), so both arms are alike.
    """
    alias = {r["old"]: r["new"] for r in store.rows("SELECT old, new FROM aliases")}
    kept = {r["id"] for r in store.rows("SELECT id FROM lessons WHERE kind = 'correction'")}
    window = "session_id IS NOT NULL"
    params: list[Any] = []
    if since:
        window += " AND at >= ?"
        params.append(since)
    # (session, lesson) -> [the first repeat's time, the words of every repeat of it there], for
    # the sessions with a decision in the window only; their repeats from any time count (one
    # just before `since` still does).
    sources = lesson_births(store, "correction")
    first: dict[tuple[str, str], list[Any]] = {}
    for eid, session, at, title, gist in store.conn.execute(
            "SELECT id, session_id, at, title, gist FROM episodes WHERE kind = 'correction' AND session_id IN "
            f"(SELECT session_id FROM primes WHERE {window}) ORDER BY at", params):
        lesson = sources.get(eid)
        if session and lesson and lesson[1] < at:
            entry = first.setdefault((session, lesson[0]), [at, set()])
            entry[1].add(_words(gist or title))
    groups: dict[str, bool] = {}
    repeated: set[str] = set()
    # Read as they come (the log can hold millions of rows); the order does not matter.
    for at, session, lesson_ids, held_out, query in store.conn.execute(
            f"SELECT at, session_id, lesson_ids, held_out, query FROM primes WHERE {window}", params):
        words = None
        for lesson_id in loads_list(lesson_ids):
            lesson_id = alias.get(lesson_id, lesson_id)
            if lesson_id not in kept:
                continue
            cut = first.get((session, lesson_id))
            if cut:
                if at >= cut[0]:
                    continue  # with or after the repeat: not a prime of it
                if words is None:
                    words = _words(query)
                if words and words in cut[1]:
                    continue  # the repeated correction's own words
            groups[session] = groups.get(session, False) or bool(held_out)
            if cut:
                repeated.add(session)
    return groups, repeated


def primed_vs_held_out(store: Store, since: str | None = None) -> dict[str, Any]:
    """Share of sessions that repeated a lesson they were primed for: primed against held out."""
    groups, repeated = _primed_sessions(store, since)
    out: dict[str, Any] = {}
    for name, held in (("primed", False), ("held_out", True)):
        sessions = [s for s, h in groups.items() if h == held]
        hit = sum(1 for s in sessions if s in repeated)
        out[name] = {"sessions": len(sessions), "with_repeat": hit,
                     "rate": round(hit / len(sessions), 4) if sessions else None}
    p, h = out["primed"], out["held_out"]
    if p["sessions"] < MIN_SESSIONS_PER_GROUP or h["sessions"] < MIN_SESSIONS_PER_GROUP:
        out["difference"] = None
        out["ci95"] = None
        out["verdict"] = (
            f"too little data to tell: {p['sessions']} primed and {h['sessions']} held-out sessions "
            f"(at least {MIN_SESSIONS_PER_GROUP} of each are needed)"
        )
        return out
    diff = p["rate"] - h["rate"]
    se = math.sqrt(p["rate"] * (1 - p["rate"]) / p["sessions"] + h["rate"] * (1 - h["rate"]) / h["sessions"])
    low, high = diff - Z95 * se, diff + Z95 * se
    out["difference"] = round(diff, 4)
    out["ci95"] = [round(low, 4), round(high, 4)]
    if high < 0:
        out["verdict"] = "primed sessions repeat less than held-out ones (95 % interval below zero)"
    elif low > 0:
        out["verdict"] = "primed sessions repeat more than held-out ones (95 % interval above zero)"
    else:
        out["verdict"] = "no clear difference yet (the 95 % interval includes zero)"
    return out


MAX_DAYS = 36500  # a century: more than any history, and far inside what datetime can hold


def check_days(days: int) -> int:
    """The window in days, refused in one line when it is below 1 or past MAX_DAYS."""
    if days < 1:
        raise ValueError("--days must be at least 1")
    if days > MAX_DAYS:
        raise ValueError(f"--days must be at most {MAX_DAYS} (100 years), not {days}")
    return days


def measure(store: Store, days: int = 30) -> dict[str, Any]:
    """Everything `remem measure` reports, over the last `days` days."""
    check_days(days)
    since = clock.iso(clock.now() - timedelta(days=days))
    corrections_by_day, corrections, correction_rate = _tally(store, "correction", since)
    errors_by_day, errors, error_rate = _tally(store, "error", since)
    return {
        "days": days,
        "since": since,
        "repeat_yourself_rate": correction_rate,
        "repeat_yourself_by_day": corrections_by_day,
        "corrections": corrections,
        "repeated_error_rate": error_rate,
        "repeated_error_by_day": errors_by_day,
        "errors": errors,
        "prediction_accuracy": prediction_accuracy(store, since),
        "themes": themes(store, since),
        "primed_vs_held_out": primed_vs_held_out(store, since),
    }


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A few plain sentences for morning.md and the TUI."""
    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 100:.0f} %"

    pa = result["prediction_accuracy"]
    return [
        f"Repeat-yourself rate: {pct(result['repeat_yourself_rate'])} of {result['corrections']} corrections",
        f"Repeated-error rate: {pct(result['repeated_error_rate'])} of {result['errors']} errors",
        f"Prediction accuracy: {pct(pa['accuracy'])} ({pa['confirmed']} of {pa['resolved']} resolved)",
        f"Primed vs held out: {result['primed_vs_held_out']['verdict']}",
    ]
