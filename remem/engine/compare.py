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

Cost: the episodes are read once, in time order, into one matrix of vectors; the episodes
before a moment are a prefix of it (bisect, and views of it, never a copy). Retrieve-similar
scores BLOCK corrections at once against CHUNK episodes at a time and keeps each one's k best
so far: corrections x episodes dot products in BLAS, memory for one block's chunk whatever the
history's length. Equal similarities at the k-th place go to the earliest episode. remem's
side reads the active lessons once; a float64 product finds, per correction, the few lessons
that could reach the cut and be chosen, and only those are scored exactly as
`prime.candidates` scores them (the same query vector, keyword evidence and rounding), then
`prime.choose` renders the block. The totals count every correction; `rows` holds the most
recent `limit` of them (the earliest are the start of the replay, when nothing was learned).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any

from remem import config as config_mod
from remem.engine import prime
from remem.engine.embed import dot_py, from_blob_py, get_embedder
from remem.engine.lessons import applies_in
from remem.engine.measure import lesson_births
from remem.engine.store import Store

CHARS_PER_TOKEN = 4
ROWS_LIMIT = 50  # rows returned by default: the most recent corrections (the totals count all)
# Retrieve-similar scores BLOCK corrections at once against CHUNK episodes at a time: 4 MB of
# similarities, whatever the length of the history.
BLOCK = 256
CHUNK = 4096
# Lessons whose approximate relevance is this far below the cut are certainly under it once
# rounded to 4 places as prime rounds it (the float64 product differs from prime's
# pure-Python sum by ~1e-14).
MARGIN = 1e-3


def _births(store: Store) -> dict[str, str]:
    """lesson id -> birth: the earliest `created` of it and the lessons merged into it."""
    births = {r["id"]: r["created"] for r in store.rows("SELECT id, created FROM lessons")}
    for row in store.rows("SELECT DISTINCT kind FROM lessons"):
        for lesson_id, born in lesson_births(store, row["kind"]).values():
            births[lesson_id] = min(born, births.get(lesson_id, born))
    return births


class _Priming:
    """What priming would have injected at each moment, for many corrections: the lessons read
    once (prime.candidates' own query and order), scored as prime.candidates scores them."""

    def __init__(self, store: Store, births: dict[str, str], cfg: dict[str, Any]) -> None:
        import numpy as np

        self.store, self.cfg = store, cfg
        self.cut = float(cfg["prime"]["min_relevance"])
        self.embedder = get_embedder(cfg["embed"]["model"] if cfg else None)
        self.rows = store.rows("SELECT seq, id, text, kind, cwd, strength, space, embedding "
                               "FROM lessons WHERE status = 'active'")
        self.all_births = sorted(births.values())
        # a lesson missing from births (added since) is not excluded, as prime's exclude= was
        born = [births.get(r["id"], "") for r in self.rows]
        order = sorted(range(len(born)), key=born.__getitem__)
        self.sorted_born = [born[i] for i in order]
        self.rank = np.empty(len(born), dtype=np.int64)
        self.rank[order] = np.arange(len(born))
        dim = self.embedder.dim
        self.matrix = np.zeros((len(self.rows), dim), dtype=np.float64)
        self.exact = np.zeros(len(self.rows), dtype=bool)  # odd vectors: always scored exactly
        for i, r in enumerate(self.rows):
            if r["embedding"] and r["space"] == self.embedder.space:
                if len(r["embedding"]) == 4 * dim:
                    self.matrix[i] = np.frombuffer(r["embedding"], dtype="<f4")
                else:
                    self.exact[i] = True
        self.project = np.array([bool(r["cwd"]) for r in self.rows], dtype=bool)
        self.seq = np.array([r["seq"] for r in self.rows], dtype=np.int64)
        self._applies: dict[str | None, Any] = {}

    def _may_show(self, cwd: str | None) -> Any:
        import numpy as np

        mask = self._applies.get(cwd)
        if mask is None:
            mask = np.array([applies_in(r["cwd"], cwd) for r in self.rows], dtype=bool)
            if len(self._applies) < 4096:
                self._applies[cwd] = mask
        return mask

    def blocks(self, items: list[tuple[str | None, str, str | None]]) -> list[tuple[str, list[dict[str, Any]]]]:
        """For each (text, at, cwd): prime.choose(prime.candidates(text, event="prompt", cwd,
        exclude=the lessons born at or after `at`)), the block and its lessons."""
        import numpy as np

        out: list[tuple[str, list[dict[str, Any]]]] = [("", [])] * len(items)
        asked = []
        for n, (text, at, cwd) in enumerate(items):
            text = " ".join((text or "").split())
            if not text or bisect_left(self.all_births, at) == 0:  # nothing learned yet
                continue
            mask = (self.rank < bisect_left(self.sorted_born, at)) & self._may_show(cwd)
            if mask.any():
                text = text[:prime.TEXT_CAP]
                asked.append((n, text, mask, self.embedder.encode_py(text)))
        if asked:
            queries = np.array([qvec for *_, qvec in asked], dtype=np.float64)
            cosines = np.maximum(self.matrix @ queries.T, 0.0)  # lessons x questions
            for (n, text, mask, qvec), cosine in zip(asked, cosines.T):
                out[n] = self._choose(text, mask, qvec, cosine)
        return out

    def _choose(self, text: str, mask: Any, qvec: Any, cosine: Any) -> tuple[str, list[dict[str, Any]]]:
        import numpy as np

        floor = self.cut - MARGIN
        # The program match, as prime.candidates adds it: COMMAND_WEIGHT for a lesson about a
        # program the text runs or names.
        program = np.zeros(len(self.rows), dtype=np.float64)
        about_program = prime.program_matcher(text, event="prompt")
        if about_program:
            for i in np.flatnonzero(mask).tolist():
                if about_program(self.rows[i]["text"] or "", self.rows[i]["kind"]):
                    program[i] = 1.0
        near = np.flatnonzero(mask & ((cosine + prime.KEYWORD_WEIGHT + prime.COMMAND_WEIGHT * program >= floor)
                                      | self.exact))
        if not len(near):  # not even full keyword evidence could lift one to the cut
            return "", []
        seqs = dict(zip(self.seq[near].tolist(), near.tolist()))
        keyword = prime._keyword_scores(self.store, text, seqs)
        approx = cosine + prime.COMMAND_WEIGHT * program
        for seq, kw in keyword.items():
            approx[seqs[seq]] += prime.KEYWORD_WEIGHT * kw
        survivors = near[(approx[near] >= floor) | self.exact[near]]
        # prime.choose takes project lessons first, then the others, at most max_lessons. In each
        # group only the `room` best by the approximation and those within MARGIN of the last
        # of them can be taken: if those best all reach the cut, the rest rank below them; if
        # one does not, the rest are more than MARGIN under the cut. They are scored exactly.
        room = max(0, int(self.cfg["prime"]["max_lessons"]))
        scored: list[dict[str, Any]] = []
        for group in (self.project[survivors], ~self.project[survivors]):
            if room <= 0:
                break
            ranked = sorted(survivors[group], key=lambda i: -approx[i])
            if len(ranked) > room:
                bar = approx[ranked[room - 1]] - MARGIN
                ranked = [i for i in ranked if approx[i] >= bar or self.exact[i]]
            entries = [self._score(i, qvec, keyword, program[i]) for i in sorted(ranked)]  # the lessons' order
            scored += entries
            room -= sum(e["relevance"] >= self.cut for e in entries)
        scored.sort(key=lambda c: (-c["relevance"], -float(c["strength"] or 0)))
        return prime.choose(scored, self.cfg)

    def _score(self, i: int, qvec: Any, keyword: dict[int, float], program: float) -> dict[str, Any]:
        """One lesson as prime.candidates scores it for a prompt (the same arithmetic)."""
        r = self.rows[i]
        cos = 0.0
        if r["embedding"] and r["space"] == self.embedder.space:
            cos = dot_py(qvec, from_blob_py(r["embedding"]))
        kw = keyword.get(r["seq"], 0.0)
        command = float(program)
        return {
            "id": r["id"], "text": r["text"], "kind": r["kind"], "cwd": r["cwd"],
            "strength": r["strength"], "project": bool(r["cwd"]),
            "semantic": round(cos, 4), "keyword": round(kw, 4), "command": command,
            "relevance": round(max(cos, 0.0) + prime.KEYWORD_WEIGHT * kw + prime.COMMAND_WEIGHT * command, 4),
        }


def _nearest(matrix: Any, queries: list[int], ends: list[int], k: int) -> tuple[Any, Any]:
    """For each query (a row of `matrix`), the k rows most similar to it among the first ends[i]
    rows: (indices, similarities), each of shape (queries, k), best first, equal similarities
    earliest first; a query with fewer than k rows before its end has len(matrix) as the index
    of each missing one. The rows are scored CHUNK at a time: memory for queries x CHUNK
    similarities, whatever the length of the history."""
    import numpy as np

    n = len(queries)
    ends_a = np.asarray(ends, dtype=np.int64)
    best_val = np.full((n, k), -np.inf, dtype=np.float32)
    best_idx = np.full((n, k), len(matrix), dtype=np.int64)
    q = matrix[queries]
    width = int(ends_a.max()) if n else 0
    for c0 in range(0, width, CHUNK):
        c1 = min(width, c0 + CHUNK)
        sims = q @ matrix[c0:c1].T
        for i in np.flatnonzero(ends_a < c1):  # the rows at or after a query's end are not before it
            sims[i, max(0, ends[i] - c0):] = -np.inf
        # only what reaches the k-th best so far (or the chunk's own k-th best) can enter
        floor = best_val[:, -1].copy()
        live = ends_a > c0
        empty = live & (floor == -np.inf)
        if empty.any() and c1 - c0 > k:
            floor[empty] = np.partition(sims[empty], c1 - c0 - k, axis=1)[:, c1 - c0 - k]
        floor[~live] = np.inf
        r, c = np.nonzero(sims >= floor[:, None])
        keep = c + c0 < ends_a[r]
        r, c = r[keep], c[keep]
        if not len(r):
            continue
        rows = np.concatenate([np.repeat(np.arange(n), k), r])
        vals = np.concatenate([best_val.ravel(), sims[r, c]])
        idx = np.concatenate([best_idx.ravel(), c + c0])
        order = np.lexsort((idx, -vals, rows))
        rows, vals, idx = rows[order], vals[order], idx[order]
        first = np.searchsorted(rows, np.arange(n))
        take = np.arange(len(rows)) - first[rows] < k
        best_val, best_idx = vals[take].reshape(n, k), idx[take].reshape(n, k)
    return best_idx, best_val


def compare(store: Store, k: int = 5, cfg: dict[str, Any] | None = None,
            limit: int | None = ROWS_LIMIT) -> dict[str, Any]:
    """Replay every correction (see the module's doc). `totals` and `corrections` count them
    all; `rows` holds the most recent `limit` (None: every one), in time order, and
    `rows_omitted` how many were left out."""
    import numpy as np

    if k < 1:
        raise ValueError(f"-k must be at least 1, not {k}")
    if limit is not None and limit < 0:
        raise ValueError(f"--limit must be at least 0, not {limit}")

    cfg = cfg or config_mod.load()
    cut = float(cfg["prime"]["min_relevance"])
    space = get_embedder().space
    where = "FROM episodes WHERE space = ? AND embedding IS NOT NULL"
    expected = int(store.scalar(f"SELECT count(*) {where}", (space,)) or 0)
    rows: deque[dict[str, Any]] = deque(maxlen=limit)
    totals = _totals([])
    matrix: Any = None
    ep_at: list[str] = []
    chars: list[int] = []
    is_correction: list[bool] = []
    corrections: list[tuple[int, str, str | None, str | None]] = []  # index, id, words, cwd
    for e in store.conn.execute(f"SELECT id, kind, title, gist, at, cwd, embedding {where} ORDER BY at",
                                (space,)):
        vec = np.frombuffer(e["embedding"], dtype="<f4")
        n = len(ep_at)
        if matrix is None:
            matrix = np.empty((max(expected, 1), len(vec)), dtype=np.float32)
        elif n == len(matrix):  # more than counted: written meanwhile
            matrix = np.concatenate([matrix, np.empty_like(matrix)])
        matrix[n] = vec
        ep_at.append(e["at"])
        chars.append(_episode_chars(e))
        is_correction.append(e["kind"] == "correction")
        if e["kind"] == "correction":
            corrections.append((n, e["id"], e["gist"] or e["title"], e["cwd"]))
    if not ep_at:
        return {"corrections": 0, "k": k, "cut": cut, "limit": limit, "rows_omitted": 0,
                "rows": [], "totals": totals}
    matrix = matrix[: len(ep_at)]
    chars_a = np.asarray(chars, dtype=np.int64)
    corr_a = np.asarray(is_correction, dtype=bool)
    # ep_at is sorted (SQLite orders text by its UTF-8 bytes, Python by code points: the same
    # order), so the episodes before a moment are a prefix: bisect, and a view of the matrix.
    priming = _Priming(store, _births(store), cfg)
    for start in range(0, len(corrections), BLOCK):
        block = corrections[start:start + BLOCK]
        ends = [bisect_left(ep_at, ep_at[index]) for index, *_ in block]
        near, sims = _nearest(matrix, [index for index, *_ in block], ends, k)
        answers = priming.blocks([(words, ep_at[index], cwd) for index, _, words, cwd in block])
        for (index, eid, words, cwd), end, top, top_sims, (text_block, shown) in zip(
                block, ends, near, sims, answers):
            top, top_sims = top[top < end], top_sims[top < end]
            row = {
                "id": eid, "at": ep_at[index], "text": words,
                "remem": any(c["kind"] == "correction" for c in shown),
                "remem_tokens": len(text_block) // CHARS_PER_TOKEN,
                "similar": bool(np.any(corr_a[top] & (top_sims >= cut))),
                "similar_tokens": int(chars_a[top].sum()) // CHARS_PER_TOKEN,
            }
            _add(totals, row)
            rows.append(row)
    return {"corrections": len(corrections), "k": k, "cut": cut, "limit": limit,
            "rows_omitted": len(corrections) - len(rows), "rows": list(rows), "totals": totals}


def _add(totals: dict[str, Any], r: dict[str, Any]) -> None:
    totals["remem_covered"] += r["remem"]
    totals["similar_covered"] += r["similar"]
    totals["only_remem"] += r["remem"] and not r["similar"]
    totals["only_similar"] += r["similar"] and not r["remem"]
    totals["remem_tokens"] += r["remem_tokens"]
    totals["similar_tokens"] += r["similar_tokens"]


def _episode_chars(episode: Any) -> int:
    """What retrieve-similar injects for an episode: its gist, and its title when it differs."""
    gist = episode["gist"] or ""
    title = episode["title"] or ""
    return len(gist) + (len(title) if title.strip() != gist.strip() else 0)


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    totals = {"remem_covered": 0, "similar_covered": 0, "only_remem": 0, "only_similar": 0,
              "remem_tokens": 0, "similar_tokens": 0}
    for r in rows:
        _add(totals, r)
    return totals
