"""Paged, sorted views of episodes and lessons for people browsing (the TUI).

Pages come straight from indexed SQL (LIMIT/OFFSET), never a whole table in memory, so a
memory of 100,000 episodes opens as fast as one of a hundred.
"""

from __future__ import annotations

from typing import Any

from remem.engine.store import Store, loads_list, normalise_tag

EPISODE_SORTS = {
    "when": "at", "kind": "kind", "title": "title", "project": "cwd",
    "strength": "strength", "recalls": "recalls",
}
_LIST_COLUMNS = "id, kind, title, gist, cwd, at, strength, recalls, archived, memory_type, importance, health"


def _episode_filter(kind: str | None, project: str | None, tag: str | None,
                    archived: bool | None) -> tuple[str, list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if kind:
        where.append("kind = ?")
        params.append(kind)
    if project:
        where.append("cwd = ?")
        params.append(project)
    if tag:
        where.append("id IN (SELECT memory_id FROM tags WHERE tag = ?)")
        params.append(normalise_tag(tag))
    if archived is not None:
        where.append("archived = ?")
        params.append(int(archived))
    return (" WHERE " + " AND ".join(where)) if where else "", params


def page_episodes(
    store: Store,
    *,
    kind: str | None = None,
    project: str | None = None,
    tag: str | None = None,
    archived: bool | None = False,
    sort: str = "when",
    descending: bool = True,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """One page of episodes (no vectors, tags attached) and how many match in all."""
    if sort not in EPISODE_SORTS:
        raise ValueError(f"sort must be one of {', '.join(EPISODE_SORTS)}")
    where, params = _episode_filter(kind, project, tag, archived)
    order = f"{EPISODE_SORTS[sort]} {'DESC' if descending else 'ASC'}, seq DESC"
    rows = store.rows(
        f"SELECT {_LIST_COLUMNS} FROM episodes{where} ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, int(limit), int(offset)],
    )
    total = int(store.scalar(f"SELECT count(*) FROM episodes{where}", params) or 0)
    if rows:
        marks = ",".join("?" for _ in rows)
        tags: dict[str, list[str]] = {}
        for t in store.rows(f"SELECT memory_id, tag FROM tags WHERE memory_id IN ({marks}) ORDER BY tag",
                            [r["id"] for r in rows]):
            tags.setdefault(t["memory_id"], []).append(t["tag"])
        for r in rows:
            r["tags"] = tags.get(r["id"], [])
    return rows, total


# origin and origins: who sent a received lesson and who else sent it (memories.with_provenance
# names them), so a list can tell a received lesson from one of this memory's own.
_LESSON_COLUMNS = "id, kind, status, strength, seen, text, cwd, created, updated, origin, origins"


def _lesson_listed(row: dict[str, Any]) -> dict[str, Any]:
    row["origins"] = loads_list(row.get("origins"))  # stored as JSON, as get_lesson reads it
    return row


def page_lessons(store: Store, *, statuses: list[str] | tuple[str, ...] | None = None, limit: int = 50,
                 offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """One page of lessons (strongest first, as `remem lessons list` orders them; no vectors,
    no sources; with `origin` and the list `origins`) of the given statuses (None: every
    status), and how many there are in all."""
    where, params = "", []
    if statuses:
        where = f" WHERE status IN ({', '.join('?' for _ in statuses)})"
        params = list(statuses)
    rows = store.rows(f"SELECT {_LESSON_COLUMNS} FROM lessons{where} ORDER BY strength DESC, created, id "
                      "LIMIT ? OFFSET ?", [*params, int(limit), int(offset)])
    total = int(store.scalar(f"SELECT count(*) FROM lessons{where}", params) or 0)
    return [_lesson_listed(r) for r in rows], total


def lesson_row(store: Store, lesson_id: str) -> dict[str, Any] | None:
    """One lesson as page_lessons lists it (None: no lesson has that id now)."""
    row = store.one(f"SELECT {_LESSON_COLUMNS} FROM lessons WHERE id = ?", (lesson_id,))
    return _lesson_listed(row) if row is not None else None


def kinds_and_projects(store: Store) -> tuple[list[str], list[str]]:
    kinds = [r["kind"] for r in store.rows("SELECT DISTINCT kind FROM episodes ORDER BY kind")]
    projects = [r["cwd"] for r in store.rows(
        "SELECT DISTINCT cwd FROM episodes WHERE cwd IS NOT NULL ORDER BY cwd LIMIT 200")]
    return kinds, projects


# How many of the newest prime decisions a lesson's detail looks through for the times it was
# primed. No index finds a lesson inside `primes.lesson_ids` (a JSON list), so the search reads
# rows newest first by rowid, stops at the 20th match, and never reads more than this window:
# a few milliseconds however many decisions were logged (a whole scan of 520,000 took 75 ms,
# on every cursor move in the Lessons tab). An index (a primes_lessons table of prime id and
# lesson id) would make it exact; the schema has none.
PRIMES_WINDOW = 20_000
PRIMES_SHOWN = 20


def lesson_primes(store: Store, lesson_id: str, *, window: int | None = PRIMES_WINDOW,
                  limit: int = PRIMES_SHOWN) -> tuple[list[dict[str, Any]], int | None]:
    """The newest `limit` prime decisions (shown or held out) naming a lesson, newest first,
    among the newest `window` decisions (None: all), and the window searched when it was not
    every decision (None: it was, so no match means never)."""
    needle = f'"{lesson_id}"'  # as json.dumps writes it inside the list
    sql = ("SELECT at, session_id, agent, event, held_out, lesson_ids FROM primes "
           "WHERE instr(lesson_ids, ?) > 0{bound} ORDER BY id DESC LIMIT ?")
    searched: int | None = None
    if window is None:
        rows = store.rows(sql.format(bound=""), (needle, int(limit)))
    else:
        # Two subqueries: SQLite reads min() or max() of a rowid at one end of the tree, but
        # both in one SELECT scan the table.
        span = store.one("SELECT (SELECT min(id) FROM primes) AS low, (SELECT max(id) FROM primes) AS high") or {}
        floor = (span.get("high") or 0) - int(window)
        if span.get("low") is not None and span["low"] <= floor:
            searched = int(window)  # older decisions are not read
        rows = store.rows(sql.format(bound=" AND id > ?"), (needle, floor, int(limit)))
    return [p for p in rows if lesson_id in loads_list(p["lesson_ids"])], searched


def lesson_detail(store: Store, lesson_id: str, *, sources_limit: int = 50,
                  predictions_limit: int | None = 20,
                  primes_window: int | None = PRIMES_WINDOW) -> dict[str, Any]:
    """A lesson with its source episodes (the first `sources_limit`, oldest first), its
    predictions (the newest `predictions_limit`, newest first; None: all), the places it was
    primed (`primes`: the newest 20 among the newest `primes_window` decisions, see
    lesson_primes; `primes_window`: the window when it did not hold every decision, else None),
    and the lesson ids merged into it (`aliases`). Raises NotFound for an unknown id."""
    from remem.engine.lessons import get_lesson

    lesson = get_lesson(store, lesson_id)
    sources = lesson["sources"][:sources_limit]
    episodes = []
    if sources:
        marks = ",".join("?" for _ in sources)
        episodes = store.rows(f"SELECT id, kind, at, title FROM episodes WHERE id IN ({marks}) ORDER BY at", sources)
    predictions = store.rows(
        "SELECT id, text, made, resolved, outcome, evidence FROM predictions WHERE lesson_id = ? "
        "ORDER BY made DESC LIMIT ?", (lesson["id"], -1 if predictions_limit is None else predictions_limit),
    )
    primes, searched = lesson_primes(store, lesson["id"], window=primes_window)
    aliases = store.rows("SELECT old, at, created FROM aliases WHERE new = ?", (lesson["id"],))
    return {"lesson": lesson, "episodes": episodes, "predictions": predictions, "primes": primes,
            "primes_window": searched, "aliases": aliases}


def corrections_by_day(store: Store, days: int = 30) -> list[int]:
    """Corrections per day for the last `days` days, oldest first (the overview's sparkline)."""
    from datetime import timedelta

    from remem.engine import clock

    today = clock.now().date()
    start = today - timedelta(days=days - 1)
    counts = {r["day"]: r["n"] for r in store.rows(
        "SELECT substr(at, 1, 10) AS day, count(*) AS n FROM episodes WHERE kind = 'correction' "
        "AND at >= ? GROUP BY day", (start.isoformat(),))}
    return [int(counts.get((start + timedelta(days=i)).isoformat(), 0)) for i in range(days)]
