"""The sleep's `lessons` and `merge` passes: the store side of consolidate.py.

lessons: new episodes (past the watermark) of the consolidated kinds join the lesson whose
sources they resemble, or make new lessons (see consolidate.py for the rules). A lesson's
sources are episode ids in time order; seen is how many; strength grows by one per source.

merge: lessons of one kind whose sources mean the same (average linkage >= the cut) become
one theme, the lesson with the most sources; the others become aliases (aliases table, with
their created time kept) and their open predictions move to the theme.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Generator, Iterator

import numpy as np

from remem.engine import clock, lesson_text
from remem.engine.consolidate import (
    CONSOLIDATED_KINDS, MUST_REPEAT, Group, Outcome, as_matrix, consolidate_kind, error_class,
    medoid, merge_groups,
)
from remem.engine.embed import to_blob
from remem.engine.lessons import lesson_hash
from remem.engine.store import Store, chunks, dumps, loads_list, new_id, stable_id

if TYPE_CHECKING:
    from remem.engine.sleep import Context, Progress

WRITE_BATCH = 250  # lessons per write transaction (a hook waits for at most one)


def _progress(*args: Any) -> "Progress":
    from remem.engine.sleep import Progress

    return Progress(*args)


def _kind_rows(store: Store, kind: str, space: str) -> list[dict[str, Any]]:
    return store.rows(
        "SELECT seq, id, at, cwd, title, archived, strength, embedding, "
        "(SELECT substr(tag, 7) FROM tags WHERE memory_id = episodes.id AND tag LIKE 'error:%' "
        "LIMIT 1) AS eclass FROM episodes "
        "WHERE kind = ? AND space = ? AND embedding IS NOT NULL ORDER BY at, seq",
        (kind, space),
    )


# Live episodes, and those archived because they faded (an old history imported at once has
# faded before its first sleep); not the ones the person archived by hand (`remem forget`).
_LEARNABLE = "(archived = 0 OR strength < ?)"


def _kind_data(ctx: "Context", kind: str) -> tuple[list[dict[str, Any]], dict[str, int], np.ndarray]:
    """Rows, id -> row index and the vector matrix of one kind; read once per sleep (episodes
    do not change between the lessons and merge passes)."""
    cache = ctx.__dict__.setdefault("_kind_cache", {})
    if kind not in cache:
        emb = ctx.embedder
        rows = _kind_rows(ctx.store, kind, emb.space)
        matrix = as_matrix([r.pop("embedding") for r in rows], emb.dim)
        cache[kind] = (rows, {r["id"]: i for i, r in enumerate(rows)}, matrix)
    return cache[kind]


def _klass(row: dict[str, Any]) -> str:
    """An error's class: ingest's `error:<class>` tag, else the class its title names."""
    return row.get("eclass") or error_class(row.get("title") or "")


def _common_cwd(cwds: list[str | None]) -> str | None:
    found = {c for c in cwds}
    return found.pop() if len(found) == 1 else None


def _full_rows(store: Store, ids: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        for row in store.rows(
            f"SELECT id, kind, at, cwd, title, gist, detail FROM episodes WHERE id IN ({marks})", chunk
        ):
            out[row["id"]] = row
    return out


def _relay(gen: Generator[int, None, Outcome], base: int, total: int, kind: str
           ) -> Generator["Progress", None, Outcome]:
    while True:
        try:
            done = next(gen)
        except StopIteration as stop:
            return stop.value
        yield _progress("lessons", base + done, total, f"{kind}: {done}")


def _reword_enabled(ctx: "Context") -> bool:
    return bool(ctx.cfg.get("llm", {}).get("url")) and bool(ctx.cfg["sleep"].get("reword", True)) \
        and not ctx.dry_run


def consolidate(ctx: "Context", watermark: int) -> Iterator["Progress"]:
    store, emb = ctx.store, ctx.embedder
    space = emb.space
    cut = ctx.cut(space)
    kinds = ",".join(f"'{k}'" for k in CONSOLIDATED_KINDS)
    faded_below = float(ctx.cfg["lifecycle"]["archive_below"])
    lessons = store.rows(
        "SELECT id, kind, cwd, strength, sources, created FROM lessons WHERE status != 'candidate' "
        "ORDER BY created, id"
    )
    consolidated: set[str] = set()
    by_kind: dict[str, list[tuple[dict[str, Any], list[str]]]] = defaultdict(list)
    for lesson in lessons:
        srcs = [s for s in loads_list(lesson["sources"]) if isinstance(s, str)]
        consolidated.update(srcs)
        by_kind[lesson["kind"]].append((lesson, srcs))
    max_seq = int(store.scalar("SELECT max(seq) FROM episodes") or 0)
    # An episode not yet in the current space is not consolidated yet: stop the mark before it.
    low = store.scalar(
        f"SELECT min(seq) FROM episodes WHERE seq > ? AND {_LEARNABLE} AND kind IN ({kinds}) "
        "AND (embedding IS NULL OR space IS NULL OR space != ?)", (watermark, faded_below, space),
    )
    mark = int(low) - 1 if low is not None else max_seq
    total = int(store.scalar(
        f"SELECT count(*) FROM episodes WHERE seq > ? AND seq <= ? AND {_LEARNABLE} "
        f"AND kind IN ({kinds})", (watermark, mark, faded_below),
    ) or 0)
    yield _progress("lessons", 0, total, f"{total} new episodes to consolidate")
    counts = {"new_episodes": 0, "joined": 0, "created": 0, "pending": 0}
    existing_ids = {r["id"] for r in store.rows("SELECT id FROM lessons UNION SELECT old FROM aliases")}
    base = 0
    for kind in CONSOLIDATED_KINDS:
        rows, index, matrix = _kind_data(ctx, kind)
        if not rows:
            continue
        groups: list[Group] = []
        originals: dict[str, dict[str, Any]] = {}
        for lesson, srcs in by_kind.get(kind, []):
            members = [s for s in srcs if s in index]
            if not members:
                continue
            idx = [index[s] for s in members]
            groups.append(Group(lesson["id"], members, matrix[idx].sum(axis=0), _klass(rows[idx[0]])))
            originals[lesson["id"]] = {"lesson": lesson, "sources": srcs}
        pool_idx, new_idx = [], []
        for i, r in enumerate(rows):
            if r["id"] in consolidated or (r["archived"] and r["strength"] >= faded_below):
                continue
            if r["seq"] <= watermark:
                if kind in MUST_REPEAT:
                    pool_idx.append(i)
            elif r["seq"] <= mark:
                new_idx.append(i)
        counts["new_episodes"] += len(new_idx)
        outcome = yield from _relay(consolidate_kind(
            kind, groups,
            [rows[i]["id"] for i in pool_idx], matrix[pool_idx], [_klass(rows[i]) for i in pool_idx],
            [rows[i]["id"] for i in new_idx], matrix[new_idx], [_klass(rows[i]) for i in new_idx],
            cut,
        ), base, total, kind)
        base += len(new_idx)
        counts["joined"] += outcome.joined
        counts["created"] += outcome.created
        counts["pending"] += outcome.pending
        _write_groups(ctx, kind, groups, originals, rows, index, matrix, existing_ids)
    ctx.watermark = mark
    ctx.counts["lessons"] = counts


def _write_groups(
    ctx: "Context", kind: str, groups: list[Group], originals: dict[str, dict[str, Any]],
    rows: list[dict[str, Any]], index: dict[str, int], matrix: np.ndarray, existing_ids: set[str],
) -> None:
    store = ctx.store
    made = [g for g in groups if g.lesson_id is None]
    grown = [g for g in groups if g.lesson_id is not None and g.added]
    if not made and not grown:
        return
    need = [m for g in made for m in g.members]
    full = _full_rows(store, need)
    new_rows: list[dict[str, Any]] = []
    stamp = clock.iso()
    for g in made:
        members = sorted(g.members, key=lambda m: index[m])
        eps = [full[m] for m in members if m in full]
        rep = medoid(matrix[[index[m] for m in members]])
        draft = lesson_text.draft(kind, eps, rep)
        text = draft
        if _reword_enabled(ctx):
            text = lesson_text.reword(draft, kind, eps) or draft
        lesson_id = stable_id("lesson", kind, members[0])[:12]
        if lesson_id in existing_ids:
            lesson_id = new_id()[:12]
        existing_ids.add(lesson_id)
        new_rows.append({
            "id": lesson_id, "text": text, "kind": kind,
            "cwd": _common_cwd([rows[index[m]]["cwd"] for m in members]),
            "strength": float(len(members)), "seen": len(members), "sources": dumps(members),
            "status": "active", "created": stamp, "updated": stamp, "origin": None,
            "hash": lesson_hash(text, kind), "origins": "[]",
            "draft": draft if text != draft else None,
        })
    vecs = ctx.embedder.encode([r["text"] for r in new_rows]) if new_rows else []
    space = ctx.embedder.space
    for row, vec in zip(new_rows, vecs):
        row["space"], row["embedding"] = space, to_blob(vec)
    # In batches: a first sleep over a large history makes thousands of lessons, and one
    # transaction for all of them kept hooks out of the store for over a second. Each batch
    # is whole; after a crash between batches, the next run skips the episodes already in a
    # lesson's sources, so nothing is learned twice.
    for batch in chunks(new_rows, WRITE_BATCH):
        with store.write() as conn:
            for row in batch:
                cols = list(row)
                conn.execute(
                    f"INSERT INTO lessons ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                    [row[c] for c in cols],
                )
    for batch in chunks(grown, WRITE_BATCH):
        with store.write() as conn:
            for g in batch:
                orig = originals[g.lesson_id]  # type: ignore[index]
                sources = list(orig["sources"]) + [m for m in g.added if m not in orig["sources"]]
                cwds = [rows[index[m]]["cwd"] for m in sources if m in index]
                conn.execute(
                    "UPDATE lessons SET sources = ?, seen = ?, strength = strength + ?, cwd = ?, "
                    "updated = ? WHERE id = ?",
                    (dumps(sources), len(sources), float(len(g.added)), _common_cwd(cwds), stamp,
                     g.lesson_id),
                )
    ctx.events["learned"] += [r["id"] for r in new_rows]
    ctx.events["grew"] += [g.lesson_id for g in grown]
    ctx.changed_lessons.update(r["id"] for r in new_rows)
    ctx.changed_lessons.update(g.lesson_id for g in grown if g.lesson_id)


# --------------------------------------------------------------------------- merge

def merge(ctx: "Context") -> Iterator["Progress"]:
    store, emb = ctx.store, ctx.embedder
    space = emb.space
    cut = ctx.cut(space)
    everything = "lessons" not in ctx.passes  # run alone: look at every pair
    counts = {"themes": 0, "aliased": 0}
    yield _progress("merge", 0, len(CONSOLIDATED_KINDS), "looking for lessons that mean the same")
    for step, kind in enumerate(CONSOLIDATED_KINDS, start=1):
        lessons = store.rows(
            "SELECT id, text, cwd, strength, sources, created FROM lessons "
            "WHERE status = 'active' AND kind = ? ORDER BY created, id", (kind,)
        )
        if len(lessons) < 2:
            continue
        rows, index, matrix = _kind_data(ctx, kind)
        live, totals, sizes, classes, changed = [], [], [], [], []
        for lesson in lessons:
            srcs = [s for s in loads_list(lesson["sources"]) if isinstance(s, str)]
            idx = [index[s] for s in srcs if s in index]
            if not idx:
                continue
            lesson["_sources"] = srcs
            live.append(lesson)
            totals.append(matrix[idx].sum(axis=0))
            sizes.append(len(idx))
            classes.append(_klass(rows[idx[0]]) if kind == "error" else "")
            changed.append(everything or lesson["id"] in ctx.changed_lessons)
        if len(live) < 2:
            continue
        clusters = merge_groups(np.stack(totals), sizes, cut, changed, classes)
        if clusters:
            _write_merges(ctx, [[live[i] for i in c] for c in clusters], rows, index, counts)
        yield _progress("merge", step, len(CONSOLIDATED_KINDS), kind)
    ctx.counts["merge"] = counts


def _write_merges(ctx: "Context", clusters: list[list[dict[str, Any]]], rows: list[dict[str, Any]],
                  index: dict[str, int], counts: dict[str, int]) -> None:
    stamp = clock.iso()
    with ctx.store.write() as conn:
        for cluster in clusters:
            # The theme: most sources, then the oldest.
            theme = sorted(cluster, key=lambda l: (-len(l["_sources"]), l["created"], l["id"]))[0]
            others = [l for l in cluster if l is not theme]
            seen: set[str] = set()
            sources: list[str] = []
            for lesson in [theme] + others:
                for s in lesson["_sources"]:
                    if s not in seen:
                        seen.add(s)
                        sources.append(s)
            sources.sort(key=lambda s: (index.get(s, -1), s))
            cwds = [rows[index[s]]["cwd"] for s in sources if s in index]
            conn.execute(
                "UPDATE lessons SET sources = ?, seen = ?, strength = ?, cwd = ?, updated = ? WHERE id = ?",
                (dumps(sources), len(sources), float(sum(l["strength"] for l in cluster)),
                 _common_cwd(cwds), stamp, theme["id"]),
            )
            for old in others:
                conn.execute(
                    "INSERT OR REPLACE INTO aliases (old, new, at, created) VALUES (?, ?, ?, ?)",
                    (old["id"], theme["id"], stamp, old["created"]),
                )
                conn.execute("UPDATE aliases SET new = ? WHERE new = ?", (theme["id"], old["id"]))
                conn.execute("UPDATE predictions SET lesson_id = ? WHERE lesson_id = ?", (theme["id"], old["id"]))
                conn.execute("DELETE FROM lessons WHERE id = ?", (old["id"],))
            counts["themes"] += 1
            counts["aliased"] += len(others)
            ctx.events["merged"].append({"theme": theme["id"], "old": [o["id"] for o in others]})
            ctx.changed_lessons.add(theme["id"])
