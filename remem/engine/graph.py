"""Typed connections between memories: explicit or auto-discovered, and breadth-first traversal.

Edges live in `connections` (UNIQUE src, dst, type). Symmetric types (related_to, similar_to,
contradicts) are one edge, not two: connecting b->a when a->b exists is a duplicate, and a
traversal walks them both ways. Directed types are walked from src to dst only.

Auto-discovery links a memory to its most similar memories (cosine >= graph.auto_threshold,
at most graph.auto_top_k edges originated by that memory), typed similar_to, origin auto, and
only within one embedding space. Similarities are one matrix product over the stored vectors.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from remem import config as config_mod
from remem.engine import clock
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
    """Connect memory a to b. Ids may be unique prefixes. An existing edge is returned, not doubled."""
    _check_type(type)
    if origin not in ORIGINS:
        raise ValueError(f"origin must be explicit or auto, not {origin!r}")
    try:
        weight = float(weight)
    except (TypeError, ValueError):
        raise ValueError("weight must be a number") from None
    if not math.isfinite(weight):
        raise ValueError("weight must be a finite number")
    src, dst = store.episode(a)["id"], store.episode(b)["id"]
    if src == dst:
        raise ValueError("a memory cannot be connected to itself; give two different ids")
    with store.write() as conn:
        row = _existing(conn, src, dst, type)
        if row is not None:
            return {**dict(row), "new": False}
        conn.execute(
            "INSERT INTO connections (src, dst, type, weight, origin, created) VALUES (?, ?, ?, ?, ?, ?)",
            (src, dst, type, weight, origin, clock.iso()),
        )
        row = _existing(conn, src, dst, type)
    return {**dict(row), "new": True}


def disconnect(store: Store, a: str, b: str, type: str) -> int:
    """Remove the edge a->b of that type (either direction for symmetric types). Returns removed."""
    _check_type(type)
    src, dst = store.episode(a)["id"], store.episode(b)["id"]
    with store.write() as conn:
        n = conn.execute("DELETE FROM connections WHERE src = ? AND dst = ? AND type = ?",
                         (src, dst, type)).rowcount
        if type in SYMMETRIC:
            n += conn.execute("DELETE FROM connections WHERE src = ? AND dst = ? AND type = ?",
                              (dst, src, type)).rowcount
    return n


def edges_of(store: Store, memory_id: str) -> list[dict[str, Any]]:
    """Every edge touching a memory, with direction 'out' or 'in', strongest first."""
    mid = store.episode(memory_id)["id"]
    rows = store.rows(
        "SELECT *, 'out' AS direction FROM connections WHERE src = ? "
        "UNION ALL SELECT *, 'in' AS direction FROM connections WHERE dst = ? "
        "ORDER BY weight DESC, created", (mid, mid))
    return rows


# --------------------------------------------------------------------------- traversal

def traverse(
    store: Store, start: str, depth: int = 1, types: Sequence[str] | None = None
) -> list[list[dict[str, Any]]]:
    """Breadth-first from start: levels[0] is [start], levels[d] the memories first reached at
    depth d. No memory appears twice. types limits the edge types walked. Trailing empty levels
    are dropped."""
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
        levels.append(level)
        frontier = [n["id"] for n in level]
    return levels


def _node(row: dict[str, Any], via: dict[str, Any] | None) -> dict[str, Any]:
    keys = ("id", "kind", "title", "memory_type", "archived", "importance", "strength", "health",
            "valence", "arousal", "at")
    node = {k: row.get(k) for k in keys}
    node["via"] = via
    return node


def _rows(store: Store, ids: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" for _ in chunk)
        out += store.rows(
            f"SELECT id, kind, title, memory_type, archived, importance, strength, health, valence, "
            f"arousal, at FROM episodes WHERE id IN ({marks})", chunk)
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

_cache: dict[tuple[str, str], dict[str, Any]] = {}


def _space_vectors(store: Store, space: str) -> tuple[list[str], "np.ndarray"]:
    """Ids and the (N, dim) matrix of every stored vector in one space, archived included.

    Cached per process and store; new rows (higher seq) are appended, any deletion reloads.
    Archived memories are filtered after the product, so an archive never stales the cache.
    """
    import numpy as np

    key = (str(store.path), space)
    head = store.one(
        "SELECT count(*) AS n, coalesce(max(seq), 0) AS top FROM episodes "
        "WHERE space = ? AND embedding IS NOT NULL", (space,)) or {"n": 0, "top": 0}
    count, top = int(head["n"]), int(head["top"])
    hit = _cache.get(key)
    if hit and hit["top"] <= top:
        rows = store.rows(
            "SELECT id, embedding FROM episodes WHERE space = ? AND embedding IS NOT NULL AND seq > ? "
            "ORDER BY seq", (space, hit["top"])) if top > hit["top"] else []
        if len(hit["ids"]) + len(rows) == count:
            if rows:
                hit["ids"] = hit["ids"] + [r["id"] for r in rows]
                hit["matrix"] = np.vstack([hit["matrix"], _stack([r["embedding"] for r in rows])])
                hit["top"] = top
            return hit["ids"], hit["matrix"]
    rows = store.rows(
        "SELECT id, embedding FROM episodes WHERE space = ? AND embedding IS NOT NULL ORDER BY seq",
        (space,))
    ids = [r["id"] for r in rows]
    matrix = _stack([r["embedding"] for r in rows])
    _cache[key] = {"ids": ids, "matrix": matrix, "top": top}
    return ids, matrix


def _stack(blobs: list[bytes]) -> "np.ndarray":
    import numpy as np

    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    dim = len(blobs[0]) // 4
    good = [b if len(b) == dim * 4 else bytes(dim * 4) for b in blobs]  # a torn vector matches nothing
    return np.frombuffer(b"".join(good), dtype="<f4").reshape(len(good), dim).astype(np.float32)


def _live(store: Store, ids: Iterable[str]) -> set[str]:
    ids = list(ids)
    live: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" for _ in chunk)
        live |= {r["id"] for r in store.rows(
            f"SELECT id FROM episodes WHERE archived = 0 AND id IN ({marks})", chunk)}
    return live


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


def discover_for(store: Store, memory_id: str, cfg: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Link one memory to its most similar live memories in its own space. Returns new edges."""
    import numpy as np

    cfg = cfg or config_mod.load()
    threshold = float(cfg["graph"]["auto_threshold"])
    top_k = int(cfg["graph"]["auto_top_k"])
    row = store.one("SELECT id, space, embedding, archived FROM episodes WHERE id = ?", (memory_id,))
    if top_k <= 0 or not row or not row["embedding"] or not row["space"] or row["archived"]:
        return []
    ids, matrix = _space_vectors(store, row["space"])
    if not len(ids):
        return []
    vec = np.frombuffer(row["embedding"], dtype="<f4")
    if vec.shape[0] != matrix.shape[1]:
        return []
    sims = matrix @ vec
    try:
        self_index = ids.index(row["id"])
    except ValueError:
        self_index = None
    picks = _candidates(sims, self_index, threshold, top_k * 3 + 5)
    live = _live(store, [ids[i] for i in picks])
    ranked = [(ids[i], float(sims[i])) for i in picks if ids[i] in live]
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
    """Auto-discover for every live memory created after `since` (all when None).

    progress(done, total, message) after each chunk. Returns {memories, edges}.
    """
    import numpy as np

    cfg = cfg or config_mod.load()
    threshold = float(cfg["graph"]["auto_threshold"])
    top_k = int(cfg["graph"]["auto_top_k"])
    where = "archived = 0 AND embedding IS NOT NULL AND space IS NOT NULL"
    params: list[Any] = []
    if since:
        where += " AND created > ?"
        params.append(since)
    todo = store.rows(f"SELECT id, space FROM episodes WHERE {where} ORDER BY seq", params)
    if top_k <= 0 or not todo:
        return {"memories": 0, "edges": 0}
    by_space: dict[str, list[str]] = {}
    for r in todo:
        by_space.setdefault(r["space"], []).append(r["id"])
    total, done, edges = len(todo), 0, 0
    archived = {r["id"] for r in store.rows("SELECT id FROM episodes WHERE archived = 1")}
    for space, wanted in by_space.items():
        ids, matrix = _space_vectors(store, space)
        position = {mid: i for i, mid in enumerate(ids)}
        rows = [position[m] for m in wanted if m in position]
        for start in range(0, len(rows), _CHUNK):
            chunk = rows[start:start + _CHUNK]
            sims = matrix[chunk] @ matrix.T
            found = []
            for j, qi in enumerate(chunk):
                picks = _candidates(sims[j], qi, threshold, top_k * 3 + 5)
                ranked = [(ids[i], float(sims[j, i])) for i in picks if ids[i] not in archived]
                if ranked:
                    found.append((ids[qi], ranked))
            if found:
                stamp = clock.iso()
                with store.write() as conn:  # one short transaction per chunk
                    for src, ranked in found:
                        edges += _link(conn, src, ranked, top_k, stamp)
            done += len(chunk)
            if progress:
                progress(done, total, f"{done}/{total} memories, {edges} new connections")
    return {"memories": total, "edges": edges}
