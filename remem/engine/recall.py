"""Recall: score memories against a query, return the best, touch what was returned.

score = w_rel·relevance + w_rec·2^(−age/half_life) + w_str·min(strength, 2)/2
relevance = semantic_weight·cosine + (1 − semantic_weight)·bm25 (max-normalised)
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from remem import config as config_mod
from remem.engine import clock
from remem.engine.embed import get_embedder
from remem.engine.store import Store

_FTS_WORD = re.compile(r"[A-Za-z0-9_]+")
STOP_WORDS = frozenset(
    "a an and are as at be but by did do does for from had has have he her him his how i if in "
    "into is it its me my of on or our she should so that the their them then there these they "
    "this to was we were what when where which who why will with would you your".split()
)


def fts_query(text: str) -> str:
    """An FTS5 OR-query of the query's content words (stop words left out), each quoted."""
    words = [w.lower() for w in _FTS_WORD.findall(text or "")]
    terms = [w for w in words if w not in STOP_WORDS] or words
    seen: list[str] = []
    for term in terms:
        if term not in seen:
            seen.append(term)
    return " OR ".join(f'"{t}"' for t in seen[:32])


def recall(
    store: Store,
    query: str,
    k: int = 5,
    *,
    mode: str = "hybrid",
    touch: bool = True,
    cfg: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The top k unarchived episodes for a query, with their score parts."""
    import numpy as np

    cfg = cfg or config_mod.load()
    rc = cfg["recall"]
    if mode not in ("hybrid", "semantic", "keyword"):
        raise ValueError("mode must be hybrid, semantic or keyword")
    embedder = get_embedder()
    rows = store.rows(
        "SELECT seq, id, kind, title, gist, at, strength, space, embedding FROM episodes WHERE archived = 0"
    )
    if not rows:
        return []
    semantic = np.zeros(len(rows), dtype=np.float32)
    if mode != "keyword":
        qvec = embedder.encode([query])[0]
        for i, row in enumerate(rows):
            if row["embedding"] and row["space"] == embedder.space:
                semantic[i] = float(np.frombuffer(row["embedding"], dtype="<f4") @ qvec)
    keyword = np.zeros(len(rows), dtype=np.float32)
    match = fts_query(query)
    if mode != "semantic" and match:
        index = {row["seq"]: i for i, row in enumerate(rows)}
        hits = store.rows(
            "SELECT rowid, -bm25(episodes_fts) AS s FROM episodes_fts WHERE episodes_fts MATCH ?",
            (match,),
        )
        for hit in hits:
            if hit["rowid"] in index:
                keyword[index[hit["rowid"]]] = hit["s"]
        if keyword.max() > 0:
            keyword /= keyword.max()
    sw = float(rc["semantic_weight"]) if mode == "hybrid" else (1.0 if mode == "semantic" else 0.0)
    relevance = sw * np.clip(semantic, 0, 1) + (1 - sw) * keyword
    half = float(rc["recency_half_life_days"])
    scored = []
    for i, row in enumerate(rows):
        age = clock.days_between(row["at"])
        recency = 2 ** (-age / half)
        strength = min(float(row["strength"]), 2.0) / 2
        score = (
            rc["w_relevance"] * float(relevance[i])
            + rc["w_recency"] * recency
            + rc["w_strength"] * strength
        )
        scored.append((score, i, recency, strength))
    scored.sort(key=lambda t: -t[0])
    out = []
    for score, i, recency, strength in scored[:k]:
        row = rows[i]
        out.append({
            "id": row["id"], "type": "episode", "kind": row["kind"], "title": row["title"],
            "text": row["gist"], "at": row["at"], "score": round(score, 4),
            "parts": {
                "relevance": round(float(relevance[i]), 4),
                "semantic": round(float(semantic[i]), 4),
                "keyword": round(float(keyword[i]), 4),
                "recency": round(recency, 4),
                "strength": round(strength, 4),
            },
        })
    if touch and out:
        touch_memories(store, [h["id"] for h in out], cfg)
    return out


def touch_memories(store: Store, ids: Sequence[str], cfg: dict[str, Any] | None = None) -> None:
    """A recall strengthens what it returned: +strength, +1 recall, +health (capped at 100)."""
    rc = (cfg or config_mod.load())["recall"]
    stamp = clock.iso()
    with store.write() as conn:
        conn.executemany(
            "UPDATE episodes SET strength = strength + ?, recalls = recalls + 1, last_touched = ?, "
            "health = min(100.0, health + ?) WHERE id = ?",
            [(rc["touch_strength"], stamp, rc["touch_health"], i) for i in ids],
        )
