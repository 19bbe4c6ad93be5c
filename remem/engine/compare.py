"""Replay the history: would remem's lessons, or a plain retrieve-similar memory, have covered
each correction — and how much text would each have put into the agent's context?

At every correction, in time order, two memories answer with what they knew by then:

- remem: what priming would have shown for that prompt in the correction's cwd (as
  `remem context --prompt` does), from the lessons born before that moment (a theme counts
  from its earliest part): prime's own candidates (active lessons that may be shown in that
  cwd, relevance = cosine plus keyword evidence), prime.min_relevance as the cut, project
  lessons first, at most prime.max_lessons, rendered by prime into its fenced block (capped at
  prime.max_chars). It covers when that block holds a correction lesson; its cost is the block;
- retrieve-similar: the top-k most similar earlier episodes of any kind (no consolidation),
  covering when one of them is an earlier correction at the same cut; its cost is each
  episode's gist, plus its title when that is different text.

The query both get is the correction's own words: a stand-in for the moment just before it,
the same for both, so the comparison is fair even if neither sees the real prompt.
Tokens are estimated as characters / 4.
"""

from __future__ import annotations

from typing import Any

from remem import config as config_mod
from remem.engine import prime
from remem.engine.embed import get_embedder
from remem.engine.measure import lesson_births
from remem.engine.store import Store

CHARS_PER_TOKEN = 4


def _births(store: Store) -> dict[str, str]:
    """lesson id -> birth: the earliest `created` of it and the lessons merged into it."""
    births = {r["id"]: r["created"] for r in store.rows("SELECT id, created FROM lessons")}
    for row in store.rows("SELECT DISTINCT kind FROM lessons"):
        for lesson_id, born in lesson_births(store, row["kind"]).values():
            births[lesson_id] = min(born, births.get(lesson_id, born))
    return births


def _primed(store: Store, text: str, at: str, cwd: str | None, births: dict[str, str],
            cfg: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The block priming would have injected for `text` in `cwd` at `at`, and its lessons:
    prime.select's choice, limited to the lessons born before `at` (no session, no record)."""
    text = " ".join((text or "").split())
    if not text:
        return "", []
    unborn = {lesson_id for lesson_id, born in births.items() if born >= at}
    if len(unborn) == len(births):  # nothing learned yet
        return "", []
    scored = prime.candidates(store, text, event="prompt", cwd=cwd, cfg=cfg, exclude=unborn)
    return prime.choose(scored, cfg)


def compare(store: Store, k: int = 5, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    import numpy as np

    if k < 1:
        raise ValueError(f"-k must be at least 1, not {k}")

    cfg = cfg or config_mod.load()
    cut = float(cfg["prime"]["min_relevance"])
    space = get_embedder().space
    episodes = store.rows(
        "SELECT id, kind, title, gist, at, cwd, embedding FROM episodes "
        "WHERE space = ? AND embedding IS NOT NULL ORDER BY at",
        (space,),
    )
    rows: list[dict[str, Any]] = []
    if not episodes:
        return {"corrections": 0, "k": k, "cut": cut, "rows": rows, "totals": _totals(rows)}
    births = _births(store)
    ep_matrix = np.stack([np.frombuffer(e["embedding"], dtype="<f4") for e in episodes])
    ep_at = [e["at"] for e in episodes]
    for index, episode in enumerate(episodes):
        if episode["kind"] != "correction":
            continue
        words = episode["gist"] or episode["title"]
        # remem: what priming would have shown, from the lessons born before this moment
        block, shown = _primed(store, words, episode["at"], episode["cwd"], births, cfg)
        # retrieve-similar: the k most similar earlier episodes, of any kind
        query = ep_matrix[index]
        earlier = [i for i in range(len(episodes)) if ep_at[i] < episode["at"]]
        similar_cover = False
        similar_chars = 0
        if earlier:
            sims = ep_matrix[earlier] @ query
            top = np.argsort(-sims)[:k]
            similar_chars = sum(_episode_chars(episodes[earlier[i]]) for i in top)
            similar_cover = any(episodes[earlier[i]]["kind"] == "correction" and sims[i] >= cut for i in top)
        rows.append({
            "id": episode["id"], "at": episode["at"], "text": words,
            "remem": any(c["kind"] == "correction" for c in shown),
            "remem_tokens": len(block) // CHARS_PER_TOKEN,
            "similar": similar_cover, "similar_tokens": similar_chars // CHARS_PER_TOKEN,
        })
    return {"corrections": len(rows), "k": k, "cut": cut, "rows": rows, "totals": _totals(rows)}


def _episode_chars(episode: dict[str, Any]) -> int:
    """What retrieve-similar injects for an episode: its gist, and its title when it differs."""
    gist = episode["gist"] or ""
    title = episode["title"] or ""
    return len(gist) + (len(title) if title.strip() != gist.strip() else 0)


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "remem_covered": sum(r["remem"] for r in rows),
        "similar_covered": sum(r["similar"] for r in rows),
        "only_remem": sum(r["remem"] and not r["similar"] for r in rows),
        "only_similar": sum(r["similar"] and not r["remem"] for r in rows),
        "remem_tokens": sum(r["remem_tokens"] for r in rows),
        "similar_tokens": sum(r["similar_tokens"] for r in rows),
    }
