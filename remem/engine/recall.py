"""Recall: score memories against a query, return the best, touch what was returned.

    score     = w_rel·relevance + w_rec·recency + w_str·retention
    relevance = (1 − d − v)·[s·cosine + (1 − s)·keyword] + d·when + v·said   (hybrid mode)
    keyword   = BM25 (FTS5, stop words out of the query, column weights) / the best BM25
                (a lesson's BM25 with the episodes' IDF and lengths: engine/lesson_keywords.py)
    when      = closeness of the memory's date to a date the query names (0 when none)
    said      = 1 when the query names the memory's speaker ("what did Ana say about …")
    recency   = 2^(−age / half_life); 1 while a flashbulb memory is protected
    retention = max(min(strength, 2) / 2, 2·(importance − 0.5))

s = `semantic_weight`, d = `date_weight` (only when the query names a date), v =
`speaker_weight` (only when the query names someone who speaks in the store). Semantic mode uses
the cosine alone, keyword mode the normalised BM25 alone, and returns only memories (and
lessons) holding a word of the query: fewer than k, or none, when fewer match. Importance above
the neutral 0.5 raises the floor of the retention part, flashbulb protection the floor of the
recency part: neither lifts a memory that has nothing to do with the query. Nor does recency: a
memory whose relevance is below `relevance_floor` × the best relevance of this query ranks after
every one at or above it (each group by score; the score itself is unchanged, and such a hit's
parts carry `demoted` and `relevance_floor`). Why these choices, and the measurements behind
them: docs/RECALL.md.

Speed: cosines come from the memory-mapped vector cache (engine/vectors.py) in one matrix
product; BM25 from FTS5 with a LIMIT. The top k is found by a threshold test over lists read
best-first (relevance, recency, flashbulb, a named date), so only candidates are read from
SQLite for the full score, and text for the top k alone.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import date, timedelta
from typing import Any, Iterable, Sequence

from remem import config as config_mod
from remem.engine import clock
from remem.engine.embed import get_embedder
from remem.engine.keywords import MAX_TERMS, STOP_WORDS, fts_terms, or_query
from remem.engine.lesson_keywords import lesson_bm25
from remem.engine.lessons import filed_under
from remem.engine.lifecycle import EXPIRED, check_filters, time_window
from remem.engine.memories import visible
from remem.engine.programs import matchable_text
from remem.engine.projects import under_sql
from remem.engine.query_dates import closeness, date_spans
from remem.engine.store import EPISODE_KINDS, Store, chunks, clean_text, normalise_tag

MODES = ("hybrid", "semantic", "keyword")
_EXPIRED_LISTED = 10_000  # expired short-term memories left out by seq; past this, by condition
_TERMS_READ = 8 * MAX_TERMS  # a long query's distinct words weighed for rarity; later ones unread
_WORDS = re.compile(r"\w+")


def _common_terms_out(store: Store, terms: list[str], share: float,
                      budget: int = 15_000) -> list[str]:
    """Leave out the terms whose matches would cost more than they weigh (a big store only),
    and the commonest past MAX_TERMS (a long query: its rare words are the ones that tell).

    FTS5 scores every row a term matches (about 1 ms per 1,000 at 100,000 memories), and a
    word found in many memories adds little to BM25 (low IDF) while the cosine still hears it.
    So: terms in more than `share` of the episodes are out; of the rest, the rarest are kept
    while their matches add up to at most `budget` rows. The rarest term always stays. Past
    MAX_TERMS, words no memory holds (by a count that may be a little stale) come last.
    """
    total = int(store.conn.execute("SELECT max(seq) FROM episodes").fetchone()[0] or 0)
    long_query = len(terms) > MAX_TERMS
    if not long_query and (total < 1000 or len(terms) < 2):
        return terms
    big = total >= 1000
    ceiling = max(1, min(int(share * total), int(budget)) if big else total)
    counts = {t: _term_count(store, t, total, ceiling) for t in terms}
    by_rarity = sorted(terms, key=lambda t: (long_query and not counts[t], counts[t]))
    kept, spent = [], 0
    for term in by_rarity[:MAX_TERMS]:
        if big and (counts[term] > ceiling or (kept and spent + counts[term] > budget)):
            break
        kept.append(term)
        spent += counts[term]
    keep = set(kept or by_rarity[:1])
    return [t for t in terms if t in keep]


_term_counts: dict[tuple[str, str], tuple[int, int, int]] = {}


def _term_count(store: Store, term: str, total: int, ceiling: int) -> int:
    """How many episodes a term matches, counted up to `ceiling` + 1 (past it, the exact
    number does not matter and counting a word in most memories would cost ~25 ms). A warm
    process reuses a count while the store has grown or shrunk by less than 5 %."""
    key = (str(store.path), term)
    hit = _term_counts.get(key)
    if hit is not None and abs(total - hit[1]) <= 0.05 * hit[1] and (hit[0] <= hit[2] or hit[2] >= ceiling):
        return hit[0]
    if len(_term_counts) > 50_000:
        _term_counts.clear()
    count = int(store.conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM episodes_fts WHERE episodes_fts MATCH ? LIMIT ?)",
        (f'"{term}"', ceiling + 1)).fetchone()[0])
    _term_counts[key] = (count, total, ceiling)
    return count


def named_speakers(store: Store, query: str) -> list[str]:
    """The store's speakers the query names, in any case: a name of several words as those
    words in a row, or a name's first word alone, if it can only be a name (three letters or
    more, not a stop word: a speaker called "Will" is not named by "what will break")."""
    names = [r[0] for r in store.conn.execute("SELECT name FROM speakers LIMIT 5000")]
    if not names:
        return []
    words = [w.lower() for w in _WORDS.findall(query)]
    text = f" {' '.join(words)} "
    out = []
    for name in names:
        parts = [w.lower() for w in _WORDS.findall(name)]
        if not parts:
            continue
        first = parts[0]
        alone = len(first) >= 3 and first not in STOP_WORDS and first in words
        if alone or (len(parts) > 1 and f" {' '.join(parts)} " in text):
            out.append(name)
    return out


def _spoken_by(store: Store, names: frozenset[str]) -> list[int]:
    """Seqs of the episodes these speakers said (the partial speaker index answers alone)."""
    marks = ",".join("?" * len(names))
    return [r[0] for r in store.conn.execute(
        f"SELECT seq FROM episodes WHERE speaker IN ({marks})", sorted(names))]


class _Filters:
    """The WHERE clause every candidate must pass (episodes), and whether lessons can pass it."""

    def __init__(self, *, kinds: Iterable[str] | None, project: str | None,
                 tags: Iterable[str] | None, all_tags: bool, since: str | None,
                 until: str | None, memory_type: str | None, archived: bool,
                 expired: Sequence[int] | str = ()) -> None:
        tags, kinds = list(tags or ()), list(kinds or ())  # read twice: no generator left empty
        check_filters(tags=tags, kinds=kinds, project=project, memory_type=memory_type)
        self.kinds = kinds
        unknown = sorted(set(self.kinds) - set(EPISODE_KINDS))
        if unknown:
            raise ValueError(f"unknown kind {unknown[0]!r}; use {', '.join(EPISODE_KINDS)}")
        self.project = (project.rstrip("/") or "/") if project else None
        self.tags = sorted({normalise_tag(t) for t in tags})
        self.all_tags = all_tags
        self.since, self.until = time_window(since, until)
        self.memory_type = memory_type
        self.archived = archived
        # "+archived": never pick the archived index (it matches nearly every row) over `at`'s.
        where, params = ([] if archived else ["+archived = 0"]), []
        if self.kinds:
            where.append(f"kind IN ({','.join('?' * len(self.kinds))})")
            params += self.kinds
        if self.project:
            clause, args = under_sql("cwd", self.project)
            where.append(clause)
            params += args
        if self.since:
            where.append("at >= ?")
            params.append(self.since)
        if self.until:
            where.append("at <= ?")
            params.append(self.until)
        if self.memory_type:
            where.append("memory_type = ?")
            params.append(self.memory_type)
        # A short-term memory past its TTL is gone for recall, even before the expire task runs.
        # Listed by seq (found from the (memory_type, expires_at) index alone, and rarely any),
        # so the other conditions keep using covering indexes.
        if isinstance(expired, str):  # too many to list: the condition itself (slower)
            where.append(f"NOT {EXPIRED}")
            params.append(expired)
        elif expired:
            where.append(f"seq NOT IN ({','.join(str(int(n)) for n in expired)})")
        if self.tags:
            marks = ",".join("?" * len(self.tags))
            if all_tags:
                where.append(f"(SELECT count(*) FROM tags t WHERE t.memory_id = episodes.id "
                             f"AND t.tag IN ({marks})) = ?")
                params += [*self.tags, len(self.tags)]
            else:
                where.append(f"EXISTS (SELECT 1 FROM tags t WHERE t.memory_id = episodes.id "
                             f"AND t.tag IN ({marks}))")
                params += self.tags
        self.sql = " AND ".join(where) or "1"
        self.params = params
        rest = where[0 if archived else 1:]
        self.sql_eligible = " AND ".join(rest) or "1"
        self.params_eligible = params
        # Selective filters: cheaper to list the eligible seqs first than to widen a pool.
        self.selective = bool(self.kinds or self.project or self.tags or self.since
                              or self.until or self.memory_type)
        # Lessons have no tags and no memory type: asking for either leaves them out.
        self.lessons_ok = not (self.tags or self.memory_type)


MAX_K = 10_000  # more is an export, not a recall (and SQLite's LIMIT overflows past 2**63)


def default_k(cfg: dict[str, Any] | None = None) -> int:
    """How many memories a recall returns when the caller names no k: config recall.k,
    checked (a whole number of at least 1)."""
    k = (cfg or config_mod.load())["recall"]["k"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"config recall.k must be a whole number of at least 1, not {k!r}; "
                         "`remem config set recall.k 5` resets it")
    return k


def recall(
    store: Store,
    query: str,
    k: int = 5,
    *,
    mode: str = "hybrid",
    touch: bool = True,
    cfg: dict[str, Any] | None = None,
    kinds: Iterable[str] | None = None,
    project: str | None = None,
    tags: Iterable[str] | None = None,
    all_tags: bool = False,
    since: str | None = None,
    until: str | None = None,
    memory_type: str | None = None,
    archived: bool = False,
    lessons: bool | None = None,
) -> list[dict[str, Any]]:
    """The top k memories for a query, best first, each with its score's parts.

    Filters narrow episodes (kinds, project folder and below, tags any/all, since/until on the
    memory's date, memory type, archived ones included). Active lessons compete too (type
    "lesson") unless `lessons` is False (default: config recall.include_lessons). Mode "keyword"
    (exact words) returns only what has keyword evidence: fewer than k when fewer match.
    """
    cfg = cfg or config_mod.load()
    rc = cfg["recall"]
    if mode not in MODES:
        raise ValueError("mode must be hybrid, semantic or keyword")
    k = int(k)
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K:,}")
    query = clean_text((query or "").strip())
    if not query:
        raise ValueError("the query is empty; say what you are looking for")
    if not visible(query):  # "\u200b" matched nothing yet returned (and touched) memories
        raise ValueError("the query is empty: it has no visible character (only control, "
                         "zero-width or blank ones); say what you are looking for")
    now_iso = clock.iso()
    expired = [r["seq"] for r in store.rows(
        "SELECT seq FROM episodes WHERE memory_type = 'short_term' AND expires_at <= ? LIMIT ?",
        (now_iso, _EXPIRED_LISTED + 1))]
    flt = _Filters(kinds=kinds, project=project, tags=tags, all_tags=all_tags, since=since,
                   until=until, memory_type=memory_type, archived=archived,
                   expired=expired if len(expired) <= _EXPIRED_LISTED else now_iso)
    with_lessons = bool(rc.get("include_lessons", True) if lessons is None else lessons)
    with_lessons = with_lessons and flt.lessons_ok

    sw = float(rc["semantic_weight"])
    sw = sw if mode == "hybrid" else (1.0 if mode == "semantic" else 0.0)
    spans = date_spans(query) if mode == "hybrid" and float(rc.get("date_weight", 0)) > 0 else []
    dw = float(rc.get("date_weight", 0)) if spans else 0.0
    said = named_speakers(store, query) if mode == "hybrid" and float(rc.get("speaker_weight", 0)) > 0 else []
    vw = float(rc.get("speaker_weight", 0)) if said else 0.0
    pool_size = max(int(rc["candidates"]), 20 * k)

    embedder = get_embedder()
    qvec = embedder.encode([query])[0] if sw > 0 else None

    eligible = _eligible(store, flt) if flt.selective else None

    # Semantic evidence: one product over the memory-mapped vectors of this space, computed
    # while the keyword query below runs.
    cache = cos = pending = None
    if qvec is not None:
        from remem.engine import vectors

        cache = vectors.cache_for(store, embedder.space, embedder.dim)
        pending = cache.scores_later(qvec)

    terms = fts_terms(query, _TERMS_READ) if sw < 1 else []
    kw_raw: dict[int, float] = {}
    kw_floor = 0.0
    kw_match = ""
    if terms:
        terms = _common_terms_out(store, terms, float(rc.get("common_term_share", 0.2)),
                                  int(rc.get("keyword_budget", 15_000)))
        kw_match = or_query(terms)
        kw_raw, kw_floor = _keyword(store, kw_match, rc, eligible, pool_size * 8)
    lesson_kw: dict[int, float] = {}
    active = _active_lessons(store, embedder.space, flt) if with_lessons else []
    if terms and active:
        # On the episodes' scale (their IDF and average length), with the words the episodes
        # were searched for: lessons_fts's own statistics come from a handful of lessons. Only
        # the lessons that may be returned count, also for the normaliser below: a vetoed or
        # filtered-out lesson must not reorder the episodes.
        total = int(store.conn.execute("SELECT max(seq) FROM episodes").fetchone()[0] or 0)
        # A lesson's own words only, not remem's template around them (`matchable_text`).
        lesson_kw = lesson_bm25(
            store.conn, terms, {lesson["seq"]: matchable_text(lesson["text"], lesson["kind"])
                                for lesson in active},
            lambda term, ceiling: _term_count(store, term, total, ceiling),
            _bm25_weights(rc)[1])
    kw_max = max([*kw_raw.values(), *lesson_kw.values(), 0.0])
    if pending is not None:
        cos = pending.result()
        if not len(cos):  # no vector in this space yet: keywords only
            cache = cos = None

    ctx = _Scoring(rc, sw, dw, spans, vw, said)
    # Keyword mode is a search for the query's words: a memory without one of them is no
    # answer, however recent or strong (it used to fill the k places with keyword 0).
    matches_only = mode == "keyword"
    lesson_hits = []
    if with_lessons:
        for lesson in active:
            semantic = max(0.0, float(lesson["vec"] @ qvec)) if (qvec is not None and lesson["vec"] is not None) else 0.0
            keyword = lesson_kw.get(lesson["seq"], 0.0) / kw_max if kw_max > 0 else 0.0
            if matches_only and keyword <= 0:
                continue
            parts = ctx.parts(semantic, keyword, lesson["updated"], lesson["strength"], 0.5, None, None)
            lesson_hits.append((ctx.total(parts), -lesson["seq"], {"id": lesson["id"], "type": "lesson"}, parts))
    # The lessons' best relevance counts towards the floor the episodes are ranked against.
    lesson_best = max((parts["relevance"] for _, _, _, parts in lesson_hits), default=0.0)
    scored, floor = _top_episodes(store, flt, ctx, rc, k, pool_size, cache, cos, eligible, kw_raw,
                                  kw_max, kw_floor, kw_match, lesson_best, matches_only)
    scored += lesson_hits
    # Below the floor a memory ranks after every memory at or above it, whatever its score;
    # its parts say so (only its own: the others' parts stay as they were).
    for _, _, _, parts in scored:
        if parts["relevance"] < floor:
            parts.update(demoted=1.0, relevance_floor=floor)
    scored.sort(key=lambda t: ("demoted" in t[3], -t[0], -t[1]))
    top = scored[:k]
    out = _hydrate(store, top)
    if touch:
        ids = [h["id"] for h in out if h["type"] == "episode"]
        if ids:
            try:
                touch_memories(store, ids, cfg)
            except sqlite3.OperationalError as exc:
                # A busy, read-only or full memory can still answer: the answer matters more
                # than strengthening it, so it is returned untouched and the reason logged.
                from remem.errors import database_problem
                from remem.log import log

                log("recall", f"recalled without strengthening: {database_problem(exc) or exc}")
    return out


def _member(values: Any, sorted_pool: Any) -> Any:
    """Boolean mask: which of `values` are in the sorted array `sorted_pool`."""
    import numpy as np

    if not sorted_pool.size:
        return np.zeros(values.shape, dtype=bool)
    pos = np.clip(np.searchsorted(sorted_pool, values), 0, sorted_pool.size - 1)
    return sorted_pool[pos] == values


def _day_iso(day: date) -> str:
    return f"{day.isoformat()}T00:00:00.000000+00:00"


def _shift(day: date, by: timedelta) -> date:
    """day + by, held inside the calendar (9999-12-31 is a common "no end" date in text)."""
    try:
        return day + by
    except OverflowError:
        return date.max if by > timedelta(0) else date.min


class _Scoring:
    """The score of one memory from its evidence and its lifecycle fields."""

    def __init__(self, rc: dict[str, Any], sw: float, dw: float, spans: list[tuple[date, date]],
                 vw: float = 0.0, speakers: Sequence[str] = ()) -> None:
        self.sw, self.dw, self.spans = sw, dw, spans
        self.vw, self.speakers = vw, frozenset(speakers)
        self.mix = 1.0 - dw - vw  # the share of relevance left to cosine and BM25
        self.w_rel = float(rc["w_relevance"])
        self.w_rec = float(rc["w_recency"])
        self.w_str = float(rc["w_strength"])
        self.half = float(rc["recency_half_life_days"])
        self.date_half = float(rc.get("date_half_life_days", 7.0))
        self.now = clock.now()

    def parts(self, semantic: float, keyword: float, at: str, strength: float,
              importance: float, flash: str | None, speaker: str | None) -> dict[str, float]:
        at, strength, importance = _iso_or_never(at), _number(strength), _number(importance)
        when = closeness(clock.parse(at), self.spans, self.date_half) if self.spans else 0.0
        said = 1.0 if speaker in self.speakers else 0.0
        relevance = (self.mix * (self.sw * semantic + (1 - self.sw) * keyword) + self.dw * when
                     + self.vw * said)
        protected = bool(flash) and clock.parse(_iso_or_never(flash)) > self.now
        recency = 1.0 if protected else 2.0 ** (-clock.days_between(at, self.now) / self.half)
        floor = min(1.0, max(0.0, 2.0 * (importance - 0.5)))
        retention = max(min(strength, 2.0) / 2.0, floor)
        return {
            "relevance": relevance, "semantic": semantic, "keyword": keyword, "when": when,
            "speaker": said, "recency": recency, "strength": retention, "importance": float(importance),
            "flashbulb": 1.0 if protected else 0.0,
        }

    def total(self, parts: dict[str, float]) -> float:
        return (self.w_rel * parts["relevance"] + self.w_rec * parts["recency"]
                + self.w_str * parts["strength"])


def _eligible(store: Store, flt: _Filters) -> Any:
    """Sorted seqs passing a selective filter. Without the archived test the (kind, at) and
    cwd indexes answer alone; archived rows are dropped when the pool is read."""
    import numpy as np

    eligible = np.fromiter(
        (r[0] for r in store.conn.execute(
            f"SELECT seq FROM episodes WHERE {flt.sql_eligible}", flt.params_eligible)),
        dtype=np.int64)
    eligible.sort()
    return eligible


def _bm25_weights(rc: dict[str, Any]) -> tuple[float, float, float]:
    """BM25 column weights: title, gist, detail."""
    return (float(rc["bm25_title"]), float(rc.get("bm25_gist", 1.0)),
            float(rc.get("bm25_detail", 0.3)))


def _keyword(store: Store, match: str, rc: dict[str, Any], eligible: Any,
             limit: int) -> tuple[dict[int, float], float]:
    """(seq -> BM25 (higher is better) for the best matches, best first; the most a match
    left out can score).

    FTS5 evaluates `rowid IN (…)` beside MATCH row by row (0.5 s for 2,000 rows), so a filter
    is applied here instead; with a filter, every match is read when there are not too many,
    so a narrow filter still gets the keyword evidence of its own memories.
    """
    import numpy as np

    w = _bm25_weights(rc)
    if eligible is not None:
        matches = store.conn.execute(
            "SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH ?", (match,)).fetchone()[0]
        if matches <= int(rc.get("keyword_scan", 20000)):
            limit = matches
    hits = store.conn.execute(
        "SELECT rowid, -bm25(episodes_fts, ?, ?, ?) AS s FROM episodes_fts "
        "WHERE episodes_fts MATCH ? ORDER BY s DESC LIMIT ?", (*w, match, limit)).fetchall()
    # Matches past the limit score at most the last one read (0 when none were left out).
    floor = float(hits[-1][1]) if hits and len(hits) >= limit else 0.0
    if eligible is not None and hits:
        rowids = np.fromiter((h[0] for h in hits), dtype=np.int64, count=len(hits))
        hits = [h for h, ok in zip(hits, _member(rowids, eligible).tolist()) if ok]
    return {int(r[0]): float(r[1]) for r in hits}, floor


def _top_episodes(store: Store, flt: _Filters, ctx: _Scoring, rc: dict[str, Any], k: int,
                  size: int, cache: Any, cos: Any, eligible: Any, kw_raw: dict[int, float],
                  kw_max: float, kw_floor: float, kw_match: str = "", lesson_best: float = 0.0,
                  matches_only: bool = False,
                  ) -> tuple[list[tuple[float, int, dict[str, Any], dict[str, float]]], float]:
    """The k best episodes, without reading every row (threshold algorithm), and the relevance
    floor they were ranked against.

    Best means: those at or above the floor (`recall.relevance_floor` × the best relevance of
    any memory scored, `lesson_best` included) first, each group by full score. Candidates
    come from three lists read best-first: relevance (cosine over every vector and BM25),
    recency (`ORDER BY at DESC` on its index), and the few protected flashbulb memories
    (recency 1 at any age), plus those near a date the query names. After scoring them, no
    unread episode can change the top k if even its best case (relevance of the last candidate
    read, recency of the last recent one read, perfect retention) scores lower than the k-th
    and its best relevance could not raise the floor past any of the top k, or if the k-th is
    at or above the floor and no unread one can reach it; else the lists are read four times
    deeper (at least once at any k, and until k are found). Exact up to
    max(`recall.max_candidates`, 4 × pool) per list. `matches_only` (keyword mode): only
    episodes with keyword evidence are candidates, and once every match was read, none is left.
    """
    import numpy as np

    sw, dw = ctx.sw, ctx.dw
    # base and its bounds are in units of the cosine/BM25 mix; a named speaker's share of
    # relevance (v·said) is that many units: v / (1 − d − v).
    said_bonus = ctx.vw / ctx.mix if ctx.vw else 0.0
    kwn = {s: v / kw_max for s, v in kw_raw.items()} if kw_max > 0 else {}
    kw_floor = kw_floor / kw_max if kw_max > 0 else 0.0
    kw_ranked = sorted(kwn, key=lambda q: -kwn[q])
    base = None  # sw·cosine + (1 − sw)·keyword of every cached slot that may be returned
    if cos is not None:
        seqs = np.asarray(cache.seqs)
        base = sw * np.clip(cos, 0.0, None).astype(np.float64)
        base[seqs < 0] = -np.inf
        if eligible is not None:
            allowed = np.zeros(len(base), dtype=bool)
            slots = cache.slots_of(eligible)
            allowed[slots[slots >= 0]] = True
            base[~allowed] = -np.inf
        if kwn:
            slots = cache.slots_of(kw_ranked)
            hit = slots >= 0
            base[slots[hit]] += (1 - sw) * np.fromiter((kwn[q] for q in kw_ranked), dtype=np.float64)[hit]
        if said_bonus:
            slots = cache.slots_of(_spoken_by(store, ctx.speakers))
            base[slots[slots >= 0]] += said_bonus
        live = int(np.isfinite(base).sum())
    now_iso = clock.iso(ctx.now)
    # Protected flashbulb memories: few, found by their partial index (with the filters in the
    # same query SQLite would walk the kind/date index instead); filtered when scored.
    fixed: set[int] = {r[0] for r in store.conn.execute(
        "SELECT seq FROM episodes WHERE flashbulb_until > ?", (now_iso,))}
    when_bound = 0.0
    if ctx.spans:
        pad = timedelta(days=2 * ctx.date_half)  # outside: closeness at most 1/4
        when_bound = 0.25
        for first, last in ctx.spans:
            near = store.conn.execute(
                f"SELECT seq FROM episodes WHERE {flt.sql} AND at >= ? AND at < ? LIMIT ?",
                [*flt.params, _day_iso(_shift(first, -pad)),
                 _day_iso(_shift(last, pad + timedelta(days=1))), size * 8]).fetchall()
            fixed.update(r[0] for r in near)
            if len(near) >= size * 8:
                when_bound = 1.0
    # Room to read deeper at any k (a large k used to stop after the first read), and a
    # recency list at least k long, so k memories are found whenever the store holds them.
    cap = max(int(rc.get("max_candidates", 400)), 4 * size)
    n, r = size, max(int(rc.get("recent_candidates", 50)), k)
    share = float(rc.get("relevance_floor", 0.0))
    seen: set[int] = set()
    scored: dict[str, Any] | None = None  # every candidate scored so far, as arrays
    # The lessons' best counts from the start: when no episode passes the filters (or none is
    # scored yet), the floor is still share × the best lesson's relevance.
    best_rel = float(lesson_best)
    floor = share * best_rel
    order: Any = []
    while True:
        cand = set(fixed) | set(kw_ranked[:n])
        base_n = 0.0
        if base is not None and live:
            m = min(n, live)
            top = np.argpartition(-base, m - 1)[:m]
            cand.update(np.asarray(cache.seqs)[top].tolist())
            base_n = float(base[top].min()) if m < live else 0.0
        recent = store.conn.execute(
            f"SELECT seq, at FROM episodes WHERE {flt.sql} ORDER BY at DESC LIMIT ?",
            [*flt.params, r]).fetchall()
        cand.update(q for q, _ in recent)
        if kw_floor > 0 and kw_max > 0:
            _recent_keywords(store, kw_match, rc, [q for q, _ in recent if q not in kwn], kw_max, kwn)
        new = list(cand - seen)
        seen.update(new)
        if matches_only:
            new = [q for q in new if kwn.get(q, 0.0) > 0]
        pool = _score_pool(store, flt, ctx, new, cache, cos, kwn)
        if pool is not None:
            scored = pool if scored is None else {
                name: (scored[name] + pool[name]) if name == "id" else np.concatenate((scored[name], pool[name]))
                for name in scored}
        if scored is not None:
            # Every pass re-ranks all that was scored: a better match read later raises the floor.
            best_rel = max(best_rel, float(scored["relevance"].max()))
            floor = share * best_rel
            order = np.lexsort((-scored["seq"], -scored["total"], scored["relevance"] < floor))[:k]
        if len(recent) < r:  # the recency list held every episode that passes: all scored
            break
        if matches_only and n >= len(kw_ranked) and kw_floor <= 0:
            break  # every keyword match was read (none past the LIMIT): no other can be a hit
        if len(order) >= k:
            kw_n = kwn[kw_ranked[n]] if len(kw_ranked) > n else kw_floor
            rel_bound = max(base_n + (1 - sw) * kw_floor, (1 - sw) * kw_n + said_bonus)
            rec_bound = 0.0 if len(recent) < r else 2.0 ** (-clock.days_between(recent[-1][1], ctx.now) / ctx.half)
            rel_unread = ctx.mix * rel_bound + dw * when_bound
            bound = ctx.w_rel * rel_unread + ctx.w_rec * rec_bound + ctx.w_str
            last = order[-1]
            beaten = float(scored["total"][last]) >= bound  # no unread score passes the k-th
            # Every unread memory is below the floor (so none can raise it: share ≤ 1).
            unread_below = rel_unread < floor
            if scored["relevance"][last] < floor:  # the k-th is below the floor itself
                done = beaten and unread_below
            else:
                # `beaten` alone is not enough: an unread memory may be more relevant than any
                # read (the relevance list is best-first over every vector, also those the
                # filters leave out, and a named date or a keyword past the LIMIT adds to
                # relevance outside it), and then it raises the floor, demotes some of the top
                # k and takes a place below their scores. Nothing of the top k can be demoted
                # while its least relevant stays at or above share × the most any memory can have.
                kept = float(scored["relevance"][order].min()) >= share * max(best_rel, rel_unread)
                done = (beaten and kept) or unread_below
            if done or n >= cap:
                break
        n, r = n * 4, r * 4
    if scored is None:
        return [], floor
    return [(float(scored["total"][i]), int(scored["seq"][i]), {"id": scored["id"][i], "type": "episode"},
             {name: float(scored[name][i]) for name in _PARTS}) for i in order.tolist()], floor


def _recent_keywords(store: Store, match: str, rc: dict[str, Any], seqs: list[int],
                     kw_max: float, kwn: dict[int, float]) -> None:
    """The keyword evidence of recent memories the keyword LIMIT left out (a new memory that
    matches less well than the best thousands must still have it, or recency could never lift
    it). Recent memories mostly hold the newest rowids, and FTS5 reads a rowid range cheaply
    (about 1 ms for 2,000 rows at 100,000 memories); a wider range is not read."""
    if not seqs or max(seqs) - min(seqs) > 2000:
        return
    w = _bm25_weights(rc)
    wanted = set(seqs)
    for seq, score in store.conn.execute(
            "SELECT rowid, -bm25(episodes_fts, ?, ?, ?) FROM episodes_fts "
            "WHERE episodes_fts MATCH ? AND rowid BETWEEN ? AND ?",
            (*w, match, min(seqs), max(seqs))):
        if seq in wanted:
            kwn[int(seq)] = float(score) / kw_max


_PARTS = ("relevance", "semantic", "keyword", "when", "speaker", "recency", "strength",
          "importance", "flashbulb")


def _score_pool(store: Store, flt: _Filters, ctx: _Scoring, pool: list[int], cache: Any,
                cos: Any, kwn: dict[int, float]) -> dict[str, Any] | None:
    """The pool's scores and parts, one array each (and "id", a list): one read of the pool's
    lifecycle columns (those passing the filters), every score computed at once with numpy.
    None when none passes."""
    import numpy as np

    if not pool:
        return None
    rows: list[tuple[Any, ...]] = []
    for chunk in chunks(pool, 900):
        rows += store.conn.execute(
            f"SELECT seq, id, at, strength, importance, flashbulb_until, speaker FROM episodes "
            f"WHERE seq IN ({','.join('?' * len(chunk))}) AND {flt.sql}", [*chunk, *flt.params]
        ).fetchall()
    if not rows:
        return None
    seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    sem = np.zeros(len(rows))
    if cos is not None:
        slots = cache.slots_of(seqs)
        sem = np.where(slots >= 0, cos[np.maximum(slots, 0)], 0.0).clip(min=0.0)
    kw = np.fromiter((kwn.get(int(q), 0.0) for q in seqs), dtype=np.float64, count=len(rows))
    at = _as_datetime64([r[2] for r in rows])
    now = np.datetime64(ctx.now.replace(tzinfo=None), "us")
    age = np.maximum((now - at) / np.timedelta64(1, "D"), 0.0)
    now_iso = clock.iso(ctx.now)
    protected = np.fromiter((bool(r[5]) and _iso_or_never(r[5]) > now_iso for r in rows), dtype=bool,
                            count=len(rows))
    recency = np.where(protected, 1.0, np.exp2(-age / ctx.half))
    when = np.zeros(len(rows))
    if ctx.spans:
        day = at.astype("datetime64[D]")
        for first, last in ctx.spans:
            lo, hi = np.datetime64(first, "D"), np.datetime64(last, "D")
            gap = np.where(day < lo, (lo - day), np.where(day > hi, (day - hi), 0)).astype(np.float64)
            when = np.maximum(when, np.exp2(-gap / ctx.date_half))
    strength, importance = _numbers(rows, 3), _numbers(rows, 4)
    retention = np.maximum(np.minimum(strength, 2.0) / 2.0, np.clip(2.0 * (importance - 0.5), 0.0, 1.0))
    said = np.fromiter((r[6] in ctx.speakers for r in rows), dtype=np.float64, count=len(rows))
    relevance = ctx.mix * (ctx.sw * sem + (1 - ctx.sw) * kw) + ctx.dw * when + ctx.vw * said
    total = ctx.w_rel * relevance + ctx.w_rec * recency + ctx.w_str * retention
    return {
        # float64 throughout, so the floor compares here exactly as it does on the parts later
        "seq": seqs, "id": [r[1] for r in rows], "total": np.asarray(total, dtype=np.float64),
        "relevance": np.asarray(relevance, dtype=np.float64),
        "semantic": np.asarray(sem, dtype=np.float64), "keyword": kw, "when": when, "speaker": said,
        "recency": recency, "strength": retention, "importance": importance,
        "flashbulb": protected.astype(np.float64),
    }


def _iso(text: str) -> str:
    """A stored time in the one canonical form (fast when it already is)."""
    return text if len(text) == 32 and text.endswith("+00:00") else clock.iso(clock.parse(text))


# A stored time that is no time (a row damaged by hand or by another tool) counts as this: the
# memory is very old, and one bad row never fails a search.
NEVER = "1970-01-01T00:00:00.000000+00:00"


def _iso_or_never(text: Any) -> str:
    try:
        return _iso(text)
    except (TypeError, ValueError, AttributeError):
        return NEVER


def _as_datetime64(texts: list[str]) -> Any:
    """Stored ISO times (UTC) -> numpy datetime64[us], without a parse per row when canonical."""
    import numpy as np

    try:
        return np.array([_iso(t)[:26] for t in texts], dtype="datetime64[us]")
    except (TypeError, ValueError, AttributeError):  # a damaged row: read each one carefully
        return np.array([_iso_or_never(t)[:26] for t in texts], dtype="datetime64[us]")


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _numbers(rows: list[Any], column: int) -> Any:
    """One number column of the rows as float64; a value that is no number (a damaged row) is
    0, read that carefully only when the fast read fails."""
    import numpy as np

    try:
        return np.fromiter((float(r[column]) for r in rows), dtype=np.float64, count=len(rows))
    except (TypeError, ValueError):
        return np.fromiter((_number(r[column]) for r in rows), dtype=np.float64, count=len(rows))


_lesson_cache: dict[tuple[str, str], tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}


def _active_lessons(store: Store, space: str, flt: _Filters) -> list[dict[str, Any]]:
    """Active lessons with their vectors (cached per process until the table changes)."""
    import numpy as np

    sig = tuple(store.conn.execute(
        "SELECT count(*), max(updated), max(seq), total(strength) FROM lessons").fetchone())
    key = (str(store.path), space)
    hit = _lesson_cache.get(key)
    if hit is None or hit[0] != sig:
        rows = store.rows(
            "SELECT seq, id, kind, cwd, text, strength, updated, space, embedding FROM lessons "
            "WHERE status = 'active'")
        for row in rows:
            blob = row.pop("embedding")
            ok = blob is not None and row.pop("space") == space
            row["vec"] = np.frombuffer(blob, dtype="<f4") if ok else None
        hit = (sig, rows)
        _lesson_cache[key] = hit
    out = []
    for row in hit[1]:
        if flt.kinds and row["kind"] not in flt.kinds:
            continue
        if flt.project and not filed_under(row["cwd"], flt.project):
            continue
        if flt.since and row["updated"] < flt.since:
            continue
        if flt.until and row["updated"] > flt.until:
            continue
        out.append(row)
    return out


def _hydrate(store: Store, top: list[tuple[float, int, dict[str, Any], dict[str, float]]]) -> list[dict[str, Any]]:
    """Read text for the returned rows only."""
    ep_ids = [h["id"] for _, _, h, _ in top if h["type"] == "episode"]
    ls_ids = [h["id"] for _, _, h, _ in top if h["type"] == "lesson"]
    eps: dict[str, dict[str, Any]] = {}
    tags: dict[str, list[str]] = {}
    if ep_ids:
        marks = ",".join("?" * len(ep_ids))
        for r in store.rows(
                f"SELECT id, kind, title, gist, at, cwd, session_id, memory_type, archived "
                f"FROM episodes WHERE id IN ({marks})", ep_ids):
            eps[r["id"]] = r
        for r in store.rows(f"SELECT memory_id, tag FROM tags WHERE memory_id IN ({marks}) "
                            "ORDER BY tag", ep_ids):
            tags.setdefault(r["memory_id"], []).append(r["tag"])
    les: dict[str, dict[str, Any]] = {}
    if ls_ids:
        marks = ",".join("?" * len(ls_ids))
        for r in store.rows(f"SELECT id, kind, text, updated, cwd FROM lessons WHERE id IN ({marks})", ls_ids):
            les[r["id"]] = r
    out = []
    for score, _, head, parts in top:
        rounded = {name: round(value, 4) for name, value in parts.items()}
        if head["type"] == "episode":
            r = eps.get(head["id"])
            if r is None:
                continue
            out.append({
                "id": r["id"], "type": "episode", "kind": r["kind"], "title": r["title"],
                "text": r["gist"], "at": r["at"], "score": round(score, 4), "parts": rounded,
                "cwd": r["cwd"], "session_id": r["session_id"], "memory_type": r["memory_type"],
                "archived": bool(r["archived"]), "tags": tags.get(r["id"], []),
            })
        else:
            r = les.get(head["id"])
            if r is None:
                continue
            out.append({
                "id": r["id"], "type": "lesson", "kind": r["kind"], "title": r["text"][:120],
                "text": r["text"], "at": r["updated"], "score": round(score, 4), "parts": rounded,
                "cwd": r["cwd"], "tags": [],
            })
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
