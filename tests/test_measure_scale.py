"""compare and measure at scale: the faster paths give the answers the old ones gave.

The old algorithms are copied here as references (compare: every correction scored by
prime.candidates, a copy of the earlier episodes' vectors each time; measure: every primes row
and every correction ever read into lists) and run on small synthetic stores beside the new
code. Speed is measured in bench/compare.py and bench/measure.py, not here.
"""

from __future__ import annotations

import json
import math
import random
from datetime import timedelta
from typing import Any

import pytest

from remem import config as config_mod
from remem.engine import clock, goals, lessons, prime
from remem.engine import compare as compare_mod
from remem.engine import measure as measure_mod
from remem.engine.compare import _nearest, compare
from remem.engine.embed import get_embedder, to_blob
from remem.engine.measure import lesson_births
from remem.engine.store import Store, loads_list

START = "2026-09-01T09:00:00+00:00"
NOW = "2026-11-30T12:00:00+00:00"

# --------------------------------------------------------------------------- old compare


def _old_births(store: Store) -> dict[str, str]:
    births = {r["id"]: r["created"] for r in store.rows("SELECT id, created FROM lessons")}
    for row in store.rows("SELECT DISTINCT kind FROM lessons"):
        for lesson_id, born in lesson_births(store, row["kind"]).values():
            births[lesson_id] = min(born, births.get(lesson_id, born))
    return births


def _old_primed(store, text, at, cwd, births, cfg):
    text = " ".join((text or "").split())
    if not text:
        return "", []
    unborn = {lesson_id for lesson_id, born in births.items() if born >= at}
    if len(unborn) == len(births):
        return "", []
    scored = prime.candidates(store, text, event="prompt", cwd=cwd, cfg=cfg, exclude=unborn)
    return prime.choose(scored, cfg)


def _old_compare(store: Store, k: int = 5, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """remem.engine.compare.compare before it was made linear (verbatim, but for the names)."""
    import numpy as np

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
        return {"corrections": 0, "k": k, "cut": cut, "rows": rows}
    births = _old_births(store)
    ep_matrix = np.stack([np.frombuffer(e["embedding"], dtype="<f4") for e in episodes])
    ep_at = [e["at"] for e in episodes]
    for index, episode in enumerate(episodes):
        if episode["kind"] != "correction":
            continue
        words = episode["gist"] or episode["title"]
        block, shown = _old_primed(store, words, episode["at"], episode["cwd"], births, cfg)
        query = ep_matrix[index]
        earlier = [i for i in range(len(episodes)) if ep_at[i] < episode["at"]]
        similar_cover = False
        similar_chars = 0
        if earlier:
            sims = ep_matrix[earlier] @ query
            top = np.argsort(-sims)[:k]
            similar_chars = sum(_chars(episodes[earlier[i]]) for i in top)
            similar_cover = any(episodes[earlier[i]]["kind"] == "correction" and sims[i] >= cut for i in top)
        rows.append({
            "id": episode["id"], "at": episode["at"], "text": words,
            "remem": any(c["kind"] == "correction" for c in shown),
            "remem_tokens": len(block) // 4,
            "similar": similar_cover, "similar_tokens": similar_chars // 4,
        })
    return {"corrections": len(rows), "k": k, "cut": cut, "rows": rows}


def _chars(episode: dict[str, Any]) -> int:
    gist = episode["gist"] or ""
    title = episode["title"] or ""
    return len(gist) + (len(title) if title.strip() != gist.strip() else 0)


def _old_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "remem_covered": sum(r["remem"] for r in rows),
        "similar_covered": sum(r["similar"] for r in rows),
        "only_remem": sum(r["remem"] and not r["similar"] for r in rows),
        "only_similar": sum(r["similar"] and not r["remem"] for r in rows),
        "remem_tokens": sum(r["remem_tokens"] for r in rows),
        "similar_tokens": sum(r["similar_tokens"] for r in rows),
    }


# --------------------------------------------------------------------------- a small history

TOOLS = ["pytest", "npm", "docker", "git", "uv", "make", "terraform", "psql", "nginx", "cargo"]
ACTS = ["run", "install", "build", "deploy", "migrate", "restart", "release", "lint"]
THINGS = ["the api", "the web app", "the worker", "the database", "the tests", "the docs"]
ADVICE = ["always pass --no-cache", "never on main", "use the staging profile first",
          "pin the version", "ask before pushing", "reload it instead"]
CWDS = ["/home/dev/shop", "/home/dev/shop/api", "/home/dev/blog", None]


def _history(store: Store, episodes: int = 240, n_lessons: int = 36, seed: int = 3) -> None:
    """Episodes over 90 days, a third corrections, every text different (no two vectors tie);
    lessons of three kinds learned along the way, some of a project, some vetoed, some
    merged from an older lesson (an alias row with an earlier `created`)."""
    rng = random.Random(seed)
    emb = get_embedder()
    start = clock.parse(START)
    topics = [(rng.choice(TOOLS), rng.choice(ACTS), rng.choice(THINGS), rng.choice(ADVICE))
              for _ in range(n_lessons)]
    rows, texts, by_topic = [], [], {}
    for n in range(episodes):
        kind = ("session", "correction", "error")[n % 3]
        t = topics[rng.randrange(n_lessons)]
        if kind == "correction":
            text = rng.choice(["no, {3} when you {1} {2} with {0}", "I said {3}: {0} for {2}",
                               "stop: {1} {2}, but {3}", "why did you {1} {2} without {0}"]).format(*t)
            by_topic.setdefault(t, []).append(f"e{n:04d}")
        elif kind == "error":
            text = f"`{t[0]} {t[1]}` failed on {t[2]}: exit code {1 + n % 3}"
        else:
            text = f"worked on {t[2]} with {t[0]} and {t[1]} went fine"
        text += f" (#{n})"  # every text its own
        title = text if n % 4 else text[:30]  # some titles differ from the gist
        at = clock.iso(start + timedelta(hours=9 * n + rng.random()))
        texts.append(text)
        rows.append({"id": f"e{n:04d}", "kind": kind, "title": title, "gist": text, "at": at,
                     "session_id": f"s{n // 6}", "cwd": CWDS[(n // 6) % len(CWDS)]})
    for row, vec in zip(rows, emb.encode(texts)):
        row.update(space=emb.space, embedding=to_blob(vec))
    store.put_episodes(rows)
    at_of = {r["id"]: r["at"] for r in rows}
    for j, t in enumerate(topics):
        kind = ("correction", "error", "surprise")[j % 3]
        text = f"When you {t[1]} {t[2]} with {t[0]}, {t[3]}"
        sources = by_topic.get(t, [])[:4] if kind == "correction" else []
        born = at_of[sources[0]] if sources else clock.iso(start + timedelta(days=rng.random() * 90))
        born = clock.iso(clock.parse(born) + timedelta(hours=1))
        made = lessons.add_lesson(
            store, text, kind, sources=sources, created=born, cwd=[None, None, "/home/dev/shop"][j % 3],
            status="vetoed" if j % 11 == 5 else "active",
            space=emb.space, embedding=to_blob(emb.encode([text])[0]))
        if j % 7 == 2:
            with store.write() as conn:
                conn.execute("INSERT INTO aliases (old, new, at, created) VALUES (?, ?, ?, ?)",
                             (f"old-{j}", made["id"], born, clock.iso(clock.parse(born) - timedelta(days=20))))


@pytest.fixture
def history(store: Store) -> Store:
    _history(store)
    return store


@pytest.mark.parametrize("block, chunk", [(256, 4096), (7, 16)])
def test_compare_gives_the_old_answer_row_for_row(history, monkeypatch, block, chunk):
    monkeypatch.setattr(compare_mod, "BLOCK", block)  # many blocks and chunks, or one of each
    monkeypatch.setattr(compare_mod, "CHUNK", chunk)
    cfg = config_mod.load()
    for k in (1, 5):
        old = _old_compare(history, k=k, cfg=cfg)
        new = compare(history, k=k, cfg=cfg, limit=None)
        assert new["corrections"] == old["corrections"] == 80
        assert new["rows"] == old["rows"]
        assert new["totals"] == _old_totals(old["rows"])
        assert new["rows_omitted"] == 0
    # the history exercises both sides: covered and not, by each memory
    t = new["totals"]
    assert 0 < t["remem_covered"] < new["corrections"] and 0 < t["similar_covered"] < new["corrections"]
    assert t["only_remem"] and t["only_similar"]


def test_compare_scores_with_keywords_and_projects_as_priming_does(history):
    """With a lower cut more lessons pass, keyword evidence and project order decide more of
    the blocks: the answer is still the one prime.candidates + prime.choose give."""
    cfg = config_mod.load()
    cfg["prime"]["min_relevance"] = 0.45
    cfg["prime"]["max_lessons"] = 2
    old = _old_compare(history, k=3, cfg=cfg)
    new = compare(history, k=3, cfg=cfg, limit=None)
    assert new["rows"] == old["rows"]
    assert sum(r["remem_tokens"] > 0 for r in new["rows"]) > 20


def test_compare_returns_the_latest_rows_and_totals_over_all(history):
    cfg = config_mod.load()
    old = _old_compare(history, k=5, cfg=cfg)
    new = compare(history, k=5, cfg=cfg, limit=7)
    assert new["corrections"] == 80 and new["rows_omitted"] == 73
    assert new["rows"] == old["rows"][-7:]
    assert new["totals"] == _old_totals(old["rows"])
    default = compare(history, k=5, cfg=cfg)
    assert len(default["rows"]) == min(80, 50) and default["limit"] == 50
    assert compare(history, k=5, cfg=cfg, limit=0)["rows"] == []
    with pytest.raises(ValueError):
        compare(history, k=5, cfg=cfg, limit=-1)


def test_compare_on_an_empty_store_keeps_its_keys(store):
    result = compare(store)
    assert result["corrections"] == 0 and result["rows"] == [] and result["rows_omitted"] == 0
    assert set(result["totals"]) == {"remem_covered", "similar_covered", "only_remem", "only_similar",
                                     "remem_tokens", "similar_tokens"}


@pytest.mark.parametrize("chunk", [2, 7, 4096])
def test_nearest_is_the_k_best_before_each_end_earliest_first_on_ties(monkeypatch, chunk):
    """Small integer vectors: every similarity is exact and many are equal. Whatever the chunk,
    the answer is the k best of the rows before the query's end, ties to the earliest."""
    import numpy as np

    monkeypatch.setattr(compare_mod, "CHUNK", chunk)
    rng = np.random.default_rng(5)
    matrix = rng.integers(-2, 3, size=(60, 4)).astype(np.float32)
    queries = [int(q) for q in rng.integers(0, 60, size=25)]
    ends = [int(e) for e in rng.integers(0, 61, size=25)]
    ends[:3] = [0, 1, 2]
    for k in (1, 3, 5):
        idx, vals = _nearest(matrix, queries, ends, k)
        for q, end, got, got_vals in zip(queries, ends, idx, vals):
            sims = matrix[:end] @ matrix[q]
            want = sorted(range(end), key=lambda i: (-sims[i], i))[:k]
            assert got[got < end].tolist() == want
            assert got_vals[got < end].tolist() == [sims[i] for i in want]
            assert (got[len(want):] == len(matrix)).all()


def test_compare_orders_lessons_whose_relevance_rounds_equal_as_priming_does(store):
    """Two lessons 0.00003 apart in cosine: both round to 0.7, so priming takes the stronger
    one (max_lessons 1), though the other scores a little higher before rounding."""
    import numpy as np

    emb = get_embedder()
    cfg = config_mod.load()
    cfg["prime"]["max_lessons"] = 1
    words = "zebra quantum xylophone"
    q = np.asarray(emb.encode_py(words), dtype=np.float64)
    other = np.asarray(emb.encode_py("marmalade harbour telescope"), dtype=np.float64)
    other -= (other @ q) * q
    other /= np.linalg.norm(other)
    start = clock.parse(START)
    born = clock.iso(start)
    for text, cos, strength in (("Keep the long lesson about the lighthouse keeper in mind", 0.70001, 2.0),
                                ("Short lesson", 0.70004, 1.0)):
        vec = cos * q + math.sqrt(1 - cos * cos) * other
        lessons.add_lesson(store, text, "correction", created=born, strength=strength,
                           space=emb.space, embedding=to_blob(vec.astype(np.float32)))
    store.put_episodes([{"id": "c1", "kind": "correction", "title": words, "gist": words, "session_id": "s1",
                         "at": clock.iso(start + timedelta(days=1)), "space": emb.space,
                         "embedding": to_blob(emb.encode([words])[0])}])
    scored = prime.candidates(store, words, cfg=cfg)
    assert [c["relevance"] for c in scored] == [0.7, 0.7] and scored[0]["text"].startswith("Keep")
    old = _old_compare(store, k=5, cfg=cfg)
    assert compare(store, k=5, cfg=cfg, limit=None)["rows"] == old["rows"]
    assert old["rows"][0]["remem_tokens"] > 30  # the long lesson's block


# --------------------------------------------------------------------------- old measure


def _old_repeats(store: Store, kind: str, since: str | None = None) -> list[dict[str, Any]]:
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


def _old_by_day(items):
    days: dict[str, list[int]] = {}
    for item in items:
        day = item["at"][:10]
        total, rep = days.get(day, [0, 0])
        days[day] = [total + 1, rep + int(item["repeat"])]
    return [{"day": day, "total": total, "repeats": rep, "rate": round(rep / total, 4) if total else None}
            for day, (total, rep) in sorted(days.items())]


def _old_rate(items):
    return round(sum(i["repeat"] for i in items) / len(items), 4) if items else None


def _old_themes(store: Store, since: str, top: int = 5) -> list[dict[str, Any]]:
    recent = {r["id"] for r in store.rows("SELECT id FROM episodes WHERE at >= ?", (since,))}
    ranked = []
    for row in store.rows("SELECT id, text, kind, sources, status FROM lessons WHERE status = 'active'"):
        new = [s for s in loads_list(row["sources"]) if s in recent]
        if new:
            ranked.append({"id": row["id"], "text": row["text"], "kind": row["kind"], "new_sources": len(new)})
    ranked.sort(key=lambda r: (-r["new_sources"], r["id"]))
    return ranked[:top]


def _old_words(text):
    return " ".join(str(text or "").split())[:prime.QUERY_CAP].casefold()


def _old_primed_sessions(store: Store, since: str | None):
    alias = {r["old"]: r["new"] for r in store.rows("SELECT old, new FROM aliases")}
    kept = {r["id"] for r in store.rows("SELECT id FROM lessons WHERE kind = 'correction'")}
    said = {r["id"]: _old_words(r["gist"] or r["title"]) for r in store.rows(
        "SELECT id, title, gist FROM episodes WHERE kind = 'correction' AND session_id IS NOT NULL")}
    first: dict[tuple[str, str], list[Any]] = {}
    for r in _old_repeats(store, "correction"):
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
        session, query = row["session_id"], _old_words(row["query"])
        for lesson_id in loads_list(row["lesson_ids"]):
            lesson_id = alias.get(lesson_id, lesson_id)
            if lesson_id not in kept:
                continue
            cut = first.get((session, lesson_id))
            if cut and (row["at"] >= cut[0] or (query and query in cut[1])):
                continue
            groups[session] = groups.get(session, False) or bool(row["held_out"])
            if cut:
                repeated.add(session)
    return groups, repeated


def _old_measure(store: Store, days: int) -> dict[str, Any]:
    """measure.measure before its reads were bounded and streamed (primed_vs_held_out's
    statistics are unchanged code; they are fed the old _primed_sessions here)."""
    since = clock.iso(clock.now() - timedelta(days=days))
    corrections = _old_repeats(store, "correction", since)
    errors = _old_repeats(store, "error", since)
    original = measure_mod._primed_sessions
    measure_mod._primed_sessions = _old_primed_sessions
    try:
        pvh = measure_mod.primed_vs_held_out(store, since)
    finally:
        measure_mod._primed_sessions = original
    return {
        "days": days, "since": since,
        "repeat_yourself_rate": _old_rate(corrections), "repeat_yourself_by_day": _old_by_day(corrections),
        "corrections": len(corrections),
        "repeated_error_rate": _old_rate(errors), "repeated_error_by_day": _old_by_day(errors),
        "errors": len(errors),
        "prediction_accuracy": measure_mod.prediction_accuracy(store, since),
        "themes": _old_themes(store, since),
        "primed_vs_held_out": pvh,
    }


def _old_trend(store: Store, kind: str, since: str, days: int):
    middle = clock.iso(clock.parse(since) + timedelta(days=days / 2))
    items = _old_repeats(store, kind, since)
    early = [i for i in items if i["at"] < middle]
    late = [i for i in items if i["at"] >= middle]
    if not early or not late:
        return None, None
    return (sum(i["repeat"] for i in early) / len(early), sum(i["repeat"] for i in late) / len(late))


# --------------------------------------------------------------------------- a history with primes


def _primed_history(store: Store, sessions: int = 90, seed: int = 11, old_sessions: int = 0) -> None:
    """Sessions over 120 days (and `old_sessions` more a year before), each with corrections
    and errors, many repeating a lesson learned earlier; the primes log of the hooks: decisions
    before and after the repeats, on the repeat's own words (other spacing and case), for
    merged (aliased) lessons, other kinds, unknown ids, malformed lists, sessionless."""
    rng = random.Random(seed)
    start = clock.parse(START)
    n_topics = 12
    topic_words = [f"use tool{t} for step{t}, not the other one" for t in range(n_topics)]
    episodes, lesson_sources = [], {t: [] for t in range(2 * n_topics)}
    first_at: dict[int, str] = {}
    topic_of: dict[str, int] = {}
    plan = [(f"old{s}", start - timedelta(days=365 - s * 0.5)) for s in range(old_sessions)]
    plan += [(f"s{s}", start + timedelta(days=s * 120 / sessions)) for s in range(sessions)]
    for session, begin in plan:
        for e in range(rng.randint(1, 6)):
            at = begin + timedelta(minutes=10 * e + rng.random())
            kind = rng.choice(["correction", "correction", "error", "session"])
            t = rng.randrange(n_topics)
            sid = session if rng.random() > 0.05 else rng.choice([None, ""])
            text = topic_words[t] if kind == "correction" else f"tool{t} failed at step {e}"
            if kind == "correction" and rng.random() < 0.5:
                text = "I  said " + text.upper()
            eid = f"{session}-{e}"
            episodes.append({"id": eid, "kind": kind, "title": text[:40], "gist": text if e % 5 else "",
                             "at": clock.iso(at), "session_id": sid})
            key = t if kind == "correction" else (n_topics + t if kind == "error" else None)
            if rng.random() < 0.2:  # said once, never learned
                key, text = None, f"{text} (once, #{len(episodes)})"
            if key is not None:
                first_at.setdefault(key, clock.iso(at))
                lesson_sources[key].append(eid)
                topic_of[eid] = key
    store.put_episodes(episodes)
    ids = {}
    for key, sources in lesson_sources.items():
        if not sources:
            continue
        kind = "correction" if key < n_topics else "error"
        born = clock.iso(clock.parse(first_at[key]) + timedelta(minutes=30))
        made = lessons.add_lesson(store, f"lesson {key}: {kind} about tool{key % n_topics}", kind,
                                  sources=sources, created=born, status="active" if key % 7 else "vetoed")
        ids[key] = made["id"]
        if key % 4 == 1:  # merged from an older one, which counts from its own birth
            with store.write() as conn:
                conn.execute("INSERT INTO aliases (old, new, at, created) VALUES (?, ?, ?, ?)",
                             (f"alias-{key}", made["id"], born, clock.iso(clock.parse(born) - timedelta(days=9))))
    by_session: dict[str, list[dict[str, Any]]] = {}
    for e in episodes:
        if e["session_id"]:
            by_session.setdefault(e["session_id"], []).append(e)
    rows = []
    for session, begin in plan + [("no-episodes", start + timedelta(days=100))]:
        for _ in range(rng.randint(0, 8)):
            at = begin + timedelta(minutes=rng.uniform(-5, 60))
            keys = rng.sample(sorted(ids), k=min(len(ids), rng.randint(1, 3)))
            said_here = [topic_of[e["id"]] for e in by_session.get(session, []) if e["id"] in topic_of]
            if said_here and rng.random() < 0.6:  # the lesson the session goes on to repeat
                keys.append(rng.choice(said_here))
            picked = [ids[k] if rng.random() < 0.85 else f"alias-{k}" for k in dict.fromkeys(keys) if k in ids]
            lesson_ids = json.dumps(picked)
            roll = rng.random()
            if roll < 0.04:
                lesson_ids = rng.choice(["[", "{}", '"x"', "[5, null]", "", "[]"])
            elif roll < 0.08:
                lesson_ids = json.dumps(picked + ["gone", 7])
            own = [e for e in by_session.get(session, []) if e["kind"] == "correction"]
            if own and rng.random() < 0.3:
                query = "  " + (own[0]["gist"] or own[0]["title"]).lower().replace(" ", "  ") + " "
            else:
                query = rng.choice(["install the deps", "run the tests", None, ""])
            sid = session if rng.random() > 0.03 else rng.choice([None, ""])
            held = rng.choice([0, 1]) if rng.random() < 0.1 else zlib_parity(session)
            rows.append((clock.iso(at), sid, "claude-code", "prompt", lesson_ids, held, query, 50))
    with store.write() as conn:
        conn.executemany("INSERT INTO primes (at, session_id, agent, event, lesson_ids, held_out, query, chars) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        for i in range(9):
            conn.execute("INSERT INTO predictions (id, lesson_id, text, made, resolved, outcome) VALUES (?, 'l', 't', ?, ?, ?)",
                         (f"p{i}", START, clock.iso(start + timedelta(days=10 * i)) if i % 3 else None,
                          ["confirmed", "failed"][i % 2] if i % 3 else None))


def zlib_parity(session: str) -> int:
    import zlib

    return zlib.crc32(session.encode("utf-8")) % 2


@pytest.mark.parametrize("days", [1, 10, 30, 61, 365])
def test_measure_gives_the_old_figures(store, days):
    _primed_history(store, old_sessions=40)
    with clock.frozen(clock.iso(clock.parse(START) + timedelta(days=121))):
        new = measure_mod.measure(store, days)
        old = _old_measure(store, days)
        assert new == old
        since = new["since"]
        for kind in ("correction", "error"):
            assert goals._trend(store, kind, since, days) == _old_trend(store, kind, since, days)
        assert measure_mod.repeats(store, "correction", since) == _old_repeats(store, "correction", since)
    if days == 61:  # the history is not a trivial one
        pvh = new["primed_vs_held_out"]
        assert pvh["primed"]["sessions"] >= 10 and pvh["held_out"]["sessions"] >= 10
        assert 0 < pvh["primed"]["with_repeat"] < pvh["primed"]["sessions"]
        assert new["corrections"] > 20 and 0 < new["repeat_yourself_rate"] < 1 and new["themes"]


class _CountingConnection:
    """store.conn, counting the rows SQLite hands to Python."""

    def __init__(self, conn: Any) -> None:
        self._conn, self.rows = conn, 0

    def execute(self, sql: str, params: Any = ()) -> Any:
        return _CountingCursor(self, self._conn.execute(sql, params))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _CountingCursor:
    def __init__(self, owner: _CountingConnection, cursor: Any) -> None:
        self._owner, self._cursor = owner, cursor

    def __iter__(self):
        for row in self._cursor:
            self._owner.rows += 1
            yield row

    def fetchall(self) -> list[Any]:
        rows = self._cursor.fetchall()
        self._owner.rows += len(rows)
        return rows

    def fetchone(self) -> Any:
        row = self._cursor.fetchone()
        self._owner.rows += row is not None
        return row


def test_measure_over_a_month_reads_the_month_not_the_history(store):
    """A year of old sessions, corrections and decisions before the window: measuring the last
    30 days (as the TUI's overview does at every start) reads the window's rows, the lessons,
    and the history of the sessions decided in the window — not every correction ever made."""
    _primed_history(store, sessions=20, old_sessions=600)
    with clock.frozen(clock.iso(clock.parse(START) + timedelta(days=121))):
        window = measure_mod.measure(store, 30)
        counted = _CountingConnection(store.conn)
        store.conn = counted
        try:
            assert measure_mod.measure(store, 30) == window
            assert goals._trend(store, "correction", window["since"], 30) is not None
        finally:
            store.conn = counted._conn
    old = store.scalar("SELECT count(*) FROM episodes WHERE at < ?", (window["since"],))
    assert old > 1500
    assert counted.rows < 400, counted.rows
