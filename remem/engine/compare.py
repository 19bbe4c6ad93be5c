"""Replay the history: would remem's lessons, or a plain retrieve-similar memory, have covered
each correction — and how much text would each have put into the agent's context?

At every correction, in time order, two memories answer with what they knew by then:

- remem: the lessons born before that moment (a theme counts from its earliest part) whose
  vector is close to the correction (the same cut as priming, prime.min_relevance), at most
  prime.max_lessons of them;
- retrieve-similar: the top-k most similar earlier episodes of any kind (no consolidation),
  covering when one of them is an earlier correction at the same cut.

The query both get is the correction's own words: a stand-in for the moment just before it,
the same for both, so the comparison is fair even if neither sees the real prompt.
Tokens are estimated as characters / 4.
"""

from __future__ import annotations

from typing import Any

from remem import config as config_mod
from remem.engine.embed import get_embedder
from remem.engine.measure import lesson_births
from remem.engine.store import Store

CHARS_PER_TOKEN = 4


def compare(store: Store, k: int = 5, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    import numpy as np

    if k < 1:
        raise ValueError(f"-k must be at least 1, not {k}")

    cfg = cfg or config_mod.load()
    cut = float(cfg["prime"]["min_relevance"])
    max_lessons = int(cfg["prime"]["max_lessons"])
    space = get_embedder().space
    episodes = store.rows(
        "SELECT id, kind, title, gist, at, embedding FROM episodes WHERE space = ? AND embedding IS NOT NULL ORDER BY at",
        (space,),
    )
    lesson_rows = store.rows(
        "SELECT id, text, created, embedding FROM lessons WHERE space = ? AND embedding IS NOT NULL "
        "AND kind = 'correction'", (space,),
    )
    births = {lid: born for lid, born in lesson_births(store, "correction").values()}
    rows: list[dict[str, Any]] = []
    if not episodes:
        return {"corrections": 0, "rows": rows, "totals": _totals(rows)}
    ep_matrix = np.stack([np.frombuffer(e["embedding"], dtype="<f4") for e in episodes])
    ep_at = [e["at"] for e in episodes]
    ls_matrix = (np.stack([np.frombuffer(l["embedding"], dtype="<f4") for l in lesson_rows])
                 if lesson_rows else np.zeros((0, ep_matrix.shape[1]), dtype=np.float32))
    ls_born = [births.get(l["id"], l["created"]) for l in lesson_rows]
    for index, episode in enumerate(episodes):
        if episode["kind"] != "correction":
            continue
        query = ep_matrix[index]
        # remem: lessons known before this moment
        known = [i for i, born in enumerate(ls_born) if born < episode["at"]]
        chosen: list[int] = []
        if known:
            sims = ls_matrix[known] @ query
            order = np.argsort(-sims)[:max_lessons]
            chosen = [known[i] for i in order if sims[i] >= cut]
        remem_chars = sum(len(lesson_rows[i]["text"]) for i in chosen)
        # retrieve-similar: the k most similar earlier episodes, of any kind
        earlier = [i for i in range(len(episodes)) if ep_at[i] < episode["at"]]
        similar_cover = False
        similar_chars = 0
        if earlier:
            sims = ep_matrix[earlier] @ query
            top = np.argsort(-sims)[:k]
            picked = [earlier[i] for i in top]
            similar_chars = sum(len(episodes[i]["title"]) + len(episodes[i]["gist"]) for i in picked)
            similar_cover = any(episodes[earlier[i]]["kind"] == "correction" and sims[i] >= cut for i in top)
        rows.append({
            "id": episode["id"], "at": episode["at"], "text": episode["gist"] or episode["title"],
            "remem": bool(chosen), "remem_tokens": remem_chars // CHARS_PER_TOKEN,
            "similar": similar_cover, "similar_tokens": similar_chars // CHARS_PER_TOKEN,
        })
    return {"corrections": len(rows), "k": k, "cut": cut, "rows": rows, "totals": _totals(rows)}


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "remem_covered": sum(r["remem"] for r in rows),
        "similar_covered": sum(r["similar"] for r in rows),
        "only_remem": sum(r["remem"] and not r["similar"] for r in rows),
        "only_similar": sum(r["similar"] and not r["remem"] for r in rows),
        "remem_tokens": sum(r["remem_tokens"] for r in rows),
        "similar_tokens": sum(r["similar_tokens"] for r in rows),
    }
