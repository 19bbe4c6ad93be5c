"""Typed connections between memories: explicit or auto-discovered, and breadth-first traversal.

Edges live in `connections` (UNIQUE src, dst, type). Symmetric types (related_to, similar_to,
contradicts) are one edge, not two: connecting b->a when a->b exists is a duplicate, and a
traversal walks them both ways. Directed types are walked from src to dst only.

Auto-discovery links a memory to its most similar memories (cosine >= graph.auto_threshold,
at most graph.auto_top_k edges originated by that memory), typed similar_to, origin auto, and
only within one embedding space. Similarities are one matrix product over the memory-mapped
vector cache that recall keeps (engine/vectors.py), so nothing re-reads every BLOB per call.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from remem import config as config_mod
from remem.engine import clock
from remem.engine.lifecycle import EXPIRED
from remem.engine.store import CONNECTION_TYPES, Store

if TYPE_CHECKING:
    import numpy as np

SYMMETRIC = frozenset({"related_to", "similar_to", "contradicts"})
ORIGINS = ("explicit", "auto")
MAX_DEPTH = 10
_CHUNK = 256  # query rows per matrix product in discover_all (bounds memory: 256 × N floats)


def _check_type(kind: str) -> str:
    if kind not in CONNECTION_TYPES:
        raise ValueError(f"unknown connection type {kind!r}; use one of {', '.join(CONNECTION_TYPES)}")
    return kind


def _existing(conn: Any, a: str, b: str, kind: str) -> Any:
    row = conn.execute(
        "SELECT * FROM connections WHERE src = ? AND dst = ? AND type = ?", (a, b, kind)
    ).fetchone()
    if row is None and kind in SYMMETRIC:
        row = conn.execute(
            "SELECT * FROM connections WHERE src = ? AND dst = ? AND type = ?", (b, a, kind)
        ).fetchone()
    return row


def connect(
    store: Store, a: str, b: str, type: str, weight: float = 1.0, origin: str = "explicit"
) -> dict[str, Any]:
    """Connect memory a to b. Ids may be unique prefixes. An existing edge is returned, not doubled,
    and keeps its weight (connecting is idempotent): given another weight, the answer's `note`
    says the edge exists and which weight it kept."""
    _check_type(type)
    if origin not in ORIGINS:
        raise ValueError(f"origin must be explicit or auto, not {origin!r}")
    try:
        weight = float(weight)
    except (TypeError, ValueError):
        raise ValueError("weight must be a number") from None
    # One rule for every caller (CLI, MCP, TUI): a strength in (0, 1], as traverse ranks it.
    if not (math.isfinite(weight) and 0 < weight <= 1):
        raise ValueError(f"weight must be more than 0 and at most 1, not {weight:g}")
    src, dst = store.episode(a)["id"], store.episode(b)["id"]
    if src == dst:
        raise ValueError("a memory cannot be connected to itself; give two different ids")
    with store.write() as conn:
        row = _existing(conn, src, dst, type)
        if row is not None:
            edge = {**dict(row), "new": False}
            if not math.isclose(float(row["weight"]), weight, rel_tol=0, abs_tol=1e-9):
                edge["note"] = (f"this {type} edge exists already, with weight {float(row['weight']):g}: kept "
                                f"(connect never changes an edge, so {weight:g} was not applied)")
            return edge
        conn.execute(
            "INSERT INTO connections (src, dst, type, weight, origin, created) VALUES (?, ?, ?, ?, ?, ?)",
            (src, dst, type, weight, origin, clock.iso()),
        )
        row = _existing(conn, src, dst, type)
    return {**dict(row), "new": True}


def edges_of(store: Store, memory_id: str) -> list[dict[str, Any]]:
    """Every edge touching a memory, with direction 'out' or 'in', strongest first. An edge to
    a short-term memory past its TTL is left out: that memory is gone for every read."""
    mid = store.episode(memory_id)["id"]
    gone = f"SELECT id FROM episodes WHERE {EXPIRED}"
    now = clock.iso()
    rows = store.rows(
        f"SELECT *, 'out' AS direction FROM connections WHERE src = ? AND dst NOT IN ({gone}) "
        f"UNION ALL SELECT *, 'in' AS direction FROM connections WHERE dst = ? AND src NOT IN ({gone}) "
        "ORDER BY weight DESC, created", (mid, now, mid, now))
    return rows


# --------------------------------------------------------------------------- traversal

def traverse(
    store: Store, start: str, depth: int = 1, types: Sequence[str] | None = None
) -> list[list[dict[str, Any]]]:
    """Breadth-first from start: levels[0] is [start], levels[d] the memories first reached at
    depth d. No memory appears twice. types limits the edge types walked. Trailing empty levels
    are dropped. A short-term memory past its TTL is neither a start (NotFound) nor reached."""
    if not 1 <= int(depth) <= MAX_DEPTH:
        raise ValueError(f"depth must be between 1 and {MAX_DEPTH}")
    wanted = [_check_type(t) for t in (types or ())]
    root = store.episode(start)
    seen = {root["id"]}
    levels: list[list[dict[str, Any]]] = [[_node(root, None)]]
    frontier = [root["id"]]
    for _ in range(int(depth)):
        found: dict[str, dict[str, Any]] = {}
        for edge in _edges_from(store, frontier, wanted):
            nxt = edge["next"]
            if nxt in seen or nxt in found:
                continue
            found[nxt] = {"from": edge["at"], "type": edge["type"], "weight": edge["weight"],
                          "origin": edge["origin"], "direction": edge["direction"]}
        if not found:
            break
        seen.update(found)
        rows = {r["id"]: r for r in _rows(store, list(found))}
        level = [_node(rows[i], via) for i, via in found.items() if i in rows]
        if not level:  # every memory reached is past its TTL (or gone meanwhile)
            break
        levels.append(level)
        frontier = [n["id"] for n in level]
    return levels


def _node(row: dict[str, Any], via: dict[str, Any] | None) -> dict[str, Any]:
    """A memory reached by a traversal, as every edge shows one (memories.public: `archived`
    true/false), with the connection it was reached `via` (None for the start)."""
    from remem.engine.memories import public  # lazily: memories imports this module

    keys = ("id", "kind", "title", "memory_type", "archived", "importance", "strength", "health",
            "valence", "arousal", "at")
    node = public({k: row.get(k) for k in keys})
    node["via"] = via
    return node


def _rows(store: Store, ids: list[str]) -> list[dict[str, Any]]:
    """The memories of `ids` a traversal shows: not one past its TTL (gone for every read)."""
    out: list[dict[str, Any]] = []
    now = clock.iso()
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" for _ in chunk)
        out += store.rows(
            f"SELECT id, kind, title, memory_type, archived, importance, strength, health, valence, "
            f"arousal, at FROM episodes WHERE id IN ({marks}) AND NOT {EXPIRED}", [*chunk, now])
    return out


def _edges_from(store: Store, frontier: list[str], types: list[str]) -> list[dict[str, Any]]:
    """Outgoing edges of the frontier, plus incoming edges of symmetric types; strongest first."""
    out: list[dict[str, Any]] = []
    type_sql = f" AND type IN ({','.join('?' for _ in types)})" if types else ""
    sym = [t for t in (types or CONNECTION_TYPES) if t in SYMMETRIC]
    for i in range(0, len(frontier), 400):
        chunk = frontier[i:i + 400]
        marks = ",".join("?" for _ in chunk)
        out += store.rows(
            f"SELECT src AS at, dst AS next, type, weight, origin, 'out' AS direction FROM connections "
            f"WHERE src IN ({marks}){type_sql}", [*chunk, *types])
        if sym:
            out += store.rows(
                f"SELECT dst AS at, src AS next, type, weight, origin, 'in' AS direction FROM connections "
                f"WHERE dst IN ({marks}) AND type IN ({','.join('?' for _ in sym)})", [*chunk, *sym])
    out.sort(key=lambda e: (-float(e["weight"]), e["type"], e["next"]))
    return out


# --------------------------------------------------------------------------- auto-discovery

def _space_cache(store: Store, space: str, dim: int) -> Any:
    """The recall vector cache for one space (memory-mapped, synced incrementally)."""
    from remem.engine import vectors

    return vectors.cache_for(store, space, dim)


def _by_seq(store: Store, seqs: Iterable[int]) -> dict[int, dict[str, Any]]:
    """seq -> {id, archived} for the given episode seqs (archived is true for a memory past its
    TTL too: neither is linked to)."""
    seqs = [int(x) for x in seqs]
    out: dict[int, dict[str, Any]] = {}
    now = clock.iso()
    for i in range(0, len(seqs), 500):
        chunk = seqs[i:i + 500]
        marks = ",".join("?" for _ in chunk)
        for r in store.rows(f"SELECT seq, id, (archived OR {EXPIRED}) AS archived FROM episodes "
                            f"WHERE seq IN ({marks})", [now, *chunk]):
            out[int(r["seq"])] = r
    return out


def _candidates(sims: "np.ndarray", self_index: int | None, threshold: float, want: int) -> list[int]:
    """Indexes of the best `want` similarities >= threshold, best first (self excluded)."""
    import numpy as np

    if self_index is not None:
        sims[self_index] = -np.inf
    above = np.flatnonzero(sims >= threshold)
    if len(above) > want:
        above = above[np.argpartition(-sims[above], want - 1)[:want]]
    return [int(i) for i in above[np.argsort(-sims[above], kind="stable")]]


def _link(conn: Any, src: str, picks: list[tuple[str, float]], top_k: int, stamp: str) -> int:
    """Write auto similar_to edges from src until it originates top_k of them; skip duplicates."""
    have = conn.execute(
        "SELECT count(*) FROM connections WHERE src = ? AND type = 'similar_to' AND origin = 'auto'",
        (src,)).fetchone()[0]
    made = 0
    for dst, sim in picks:
        if have >= top_k:
            break
        if _existing(conn, src, dst, "similar_to") is not None:
            continue
        conn.execute(
            "INSERT INTO connections (src, dst, type, weight, origin, created) "
            "VALUES (?, ?, 'similar_to', ?, 'auto', ?)", (src, dst, round(sim, 4), stamp))
        have += 1
        made += 1
    return made


def _link_batch(conn: Any, found: list[tuple[str, list[tuple[str, float]]]], top_k: int, stamp: str) -> int:
    """_link for many sources at once: existing edges read in two queries, inserts in one."""
    srcs = [src for src, _ in found]
    marks = ",".join("?" for _ in srcs)
    pairs: set[tuple[str, str]] = set()
    have: dict[str, int] = {}
    for r in conn.execute(
            f"SELECT src, dst, origin FROM connections WHERE type = 'similar_to' AND "
            f"(src IN ({marks}) OR dst IN ({marks}))", srcs + srcs).fetchall():
        pairs.add((r[0], r[1]))
        pairs.add((r[1], r[0]))
        if r[2] == "auto":
            have[r[0]] = have.get(r[0], 0) + 1
    rows = []
    for src, ranked in found:
        n = have.get(src, 0)
        for dst, sim in ranked:
            if n >= top_k:
                break
            if (src, dst) in pairs:
                continue
            pairs.add((src, dst))
            pairs.add((dst, src))
            rows.append((src, dst, round(sim, 4), stamp))
            n += 1
        have[src] = n
    # Pairs between two memories of this batch were settled above; OR IGNORE guards the rest.
    conn.executemany(
        "INSERT OR IGNORE INTO connections (src, dst, type, weight, origin, created) "
        "VALUES (?, ?, 'similar_to', ?, 'auto', ?)", rows)
    return len(rows)


def _top_rows(sims: "np.ndarray", self_cols: list[int], threshold: float, want: int) -> list[list[int]]:
    """Per row of a similarity block: the columns of its best `want` values >= threshold, best first.

    Thresholding first keeps this proportional to the pairs above the threshold, not the block.
    """
    import numpy as np

    sims[np.arange(len(self_cols)), self_cols] = -np.inf
    rows, cols = np.nonzero(sims >= threshold)
    out: list[list[int]] = [[] for _ in self_cols]
    if not rows.size:
        return out
    vals = sims[rows, cols]
    order = np.lexsort((cols, -vals, rows))  # by row, then best first (ties by column)
    rows, cols = rows[order], cols[order]
    starts = np.searchsorted(rows, np.arange(len(self_cols)))
    ends = np.searchsorted(rows, np.arange(len(self_cols)), side="right")
    for r, (lo, hi) in enumerate(zip(starts, ends)):
        if hi > lo:
            out[r] = cols[lo:min(hi, lo + want)].tolist()
    return out


def discover_for(store: Store, memory_id: str, cfg: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Link one memory to its most similar live memories in its own space. Returns new edges."""
    import numpy as np

    cfg = cfg or config_mod.load()
    threshold = float(cfg["graph"]["auto_threshold"])
    top_k = int(cfg["graph"]["auto_top_k"])
    row = store.one(f"SELECT seq, id, space, embedding, (archived OR {EXPIRED}) AS archived FROM episodes "
                    "WHERE id = ?", (clock.iso(), memory_id))
    if top_k <= 0 or not row or not row["embedding"] or not row["space"] or row["archived"]:
        return []
    vec = np.frombuffer(row["embedding"], dtype="<f4")
    cache = _space_cache(store, row["space"], vec.shape[0])
    if not len(cache):
        return []
    sims = cache.scores(vec)  # dead slots score -2
    slot = int(cache.slots_of([row["seq"]])[0])
    picks = _candidates(sims, slot if slot >= 0 else None, threshold, top_k * 3 + 5)
    seqs = np.asarray(cache.seqs)
    rows = _by_seq(store, (seqs[i] for i in picks))
    ranked = [(rows[int(seqs[i])]["id"], float(sims[i])) for i in picks
              if int(seqs[i]) in rows and not rows[int(seqs[i])]["archived"]][:top_k]
    stamp = clock.iso()
    with store.write() as conn:
        _link(conn, row["id"], ranked, top_k, stamp)
    return store.rows(
        "SELECT src, dst, type, weight, origin, created FROM connections "
        "WHERE src = ? AND origin = 'auto' AND created = ?", (row["id"], stamp))


def discover_all(
    store: Store,
    progress: Callable[[int, int, str], None] | None = None,
    since: str | None = None,
    cfg: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Auto-discover for every live memory created after `since` (all when None). Archived
    memories and short-term ones past their TTL are neither linked from nor linked to.

    progress(done, total, message) after each chunk. Returns {memories, edges}.
    """
    import numpy as np

    cfg = cfg or config_mod.load()
    threshold = float(cfg["graph"]["auto_threshold"])
    top_k = int(cfg["graph"]["auto_top_k"])
    now = clock.iso()
    where = f"archived = 0 AND NOT {EXPIRED} AND embedding IS NOT NULL AND space IS NOT NULL"
    params: list[Any] = [now]
    if since:
        where += " AND created > ?"
        params.append(since)
    todo = store.rows(f"SELECT seq, space, length(embedding) AS width FROM episodes WHERE {where} "
                      f"ORDER BY seq", params)
    if top_k <= 0 or not todo:
        return {"memories": 0, "edges": 0}
    by_space: dict[tuple[str, int], list[int]] = {}
    for r in todo:
        by_space.setdefault((r["space"], int(r["width"]) // 4), []).append(int(r["seq"]))
    total, done, edges = len(todo), 0, 0
    hidden = np.asarray([r["seq"] for r in store.rows(
        f"SELECT seq FROM episodes WHERE archived = 1 OR {EXPIRED}", (now,))], dtype=np.int64)
    live_ids = {int(r["seq"]): r["id"] for r in store.rows(
        f"SELECT seq, id FROM episodes WHERE archived = 0 AND NOT {EXPIRED} AND embedding IS NOT NULL", (now,))}
    for (space, dim), wanted in by_space.items():
        cache = _space_cache(store, space, dim)
        if not len(cache):
            done += len(wanted)
            continue
        # Compare only against live memories: archived and dead slots leave the matrix.
        all_seqs = np.asarray(cache.seqs)
        keep = all_seqs >= 0
        if hidden.size:
            keep &= ~np.isin(all_seqs, hidden)
        live_slots = np.flatnonzero(keep)
        matrix = np.ascontiguousarray(np.asarray(cache.vectors)[live_slots], dtype=np.float32)
        seqs = all_seqs[live_slots]
        order = np.argsort(seqs, kind="stable")
        want = np.asarray(wanted, dtype=np.int64)
        pos = np.clip(np.searchsorted(seqs[order], want), 0, max(len(seqs) - 1, 0))
        rows_q = [int(order[p]) for p, w in zip(pos, want) if len(seqs) and seqs[order[p]] == w]
        for start in range(0, len(rows_q), _CHUNK):
            chunk = rows_q[start:start + _CHUNK]
            sims = matrix[chunk] @ matrix.T
            picked = _top_rows(sims, chunk, threshold, top_k)
            found = []
            for j, qi in enumerate(chunk):
                src = live_ids.get(int(seqs[qi]))
                ranked = [(live_ids[int(seqs[i])], float(sims[j, i])) for i in picked[j]
                          if int(seqs[i]) in live_ids]
                if src and ranked:
                    found.append((src, ranked))
            if found:
                stamp = clock.iso()
                with store.write() as conn:  # one short transaction per chunk
                    edges += _link_batch(conn, found, top_k, stamp)
            done += len(chunk)
            if progress:
                progress(done, total, f"{done}/{total} memories, {edges} new connections")
    return {"memories": total, "edges": edges}
