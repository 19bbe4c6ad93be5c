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
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

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


def repeats(store: Store, kind: str, since: str | None = None) -> list[dict[str, Any]]:
    """Every episode of `kind` (since a time) with whether it repeated an already-learned lesson."""
    sources = lesson_births(store, kind)
    sql = "SELECT id, session_id, at FROM episodes WHERE kind = ?"
    params: list[Any] = [kind]
    if since:
        sql += " AND at >= ?"
        params.append(since)
    out = []
    for row in store.rows(sql + " ORDER BY at", params):
        lesson = sources.get(row["id"])
        out.append({
            "id": row["id"], "session_id": row["session_id"], "at": row["at"],
            "lesson": lesson[0] if lesson else None,
            "repeat": bool(lesson and lesson[1] < row["at"]),
        })
    return out


def _by_day(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    days: dict[str, list[int]] = {}
    for item in items:
        day = item["at"][:10]
        total, rep = days.get(day, [0, 0])
        days[day] = [total + 1, rep + int(item["repeat"])]
    return [
        {"day": day, "total": total, "repeats": rep, "rate": round(rep / total, 4) if total else None}
        for day, (total, rep) in sorted(days.items())
    ]


def _rate(items: list[dict[str, Any]]) -> float | None:
    return round(sum(i["repeat"] for i in items) / len(items), 4) if items else None


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
    recent = {r["id"] for r in store.rows("SELECT id FROM episodes WHERE at >= ?", (since,))}
    ranked = []
    for row in store.rows("SELECT id, text, kind, sources, status FROM lessons WHERE status = 'active'"):
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
    said = {r["id"]: _words(r["gist"] or r["title"]) for r in store.rows(
        "SELECT id, title, gist FROM episodes WHERE kind = 'correction' AND session_id IS NOT NULL")}
    # (session, lesson) -> [the first repeat's time, the words of every repeat of it there]
    first: dict[tuple[str, str], list[Any]] = {}
    for r in repeats(store, "correction"):  # all time: a repeat just before `since` still counts
        if r["repeat"] and r["session_id"]:
            entry = first.setdefault((r["session_id"], r["lesson"]), [r["at"], set()])
            entry[1].add(said.get(r["id"], ""))
    sql = "SELECT at, session_id, lesson_ids, held_out, query FROM primes WHERE session_id IS NOT NULL"
    params: list[Any] = []
    if since:
        sql += " AND at >= ?"
        params.append(since)
    groups: dict[str, bool] = {}
    repeated: set[str] = set()
    for row in store.rows(sql + " ORDER BY at", params):
        session, query = row["session_id"], _words(row["query"])
        for lesson_id in loads_list(row["lesson_ids"]):
            lesson_id = alias.get(lesson_id, lesson_id)
            if lesson_id not in kept:
                continue
            cut = first.get((session, lesson_id))
            if cut and (row["at"] >= cut[0] or (query and query in cut[1])):
                continue  # with or after the repeat: not a prime of it
            groups[session] = groups.get(session, False) or bool(row["held_out"])
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
    corrections = repeats(store, "correction", since)
    errors = repeats(store, "error", since)
    return {
        "days": days,
        "since": since,
        "repeat_yourself_rate": _rate(corrections),
        "repeat_yourself_by_day": _by_day(corrections),
        "corrections": len(corrections),
        "repeated_error_rate": _rate(errors),
        "repeated_error_by_day": _by_day(errors),
        "errors": len(errors),
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
