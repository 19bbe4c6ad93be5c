"""Recall: filters, touching, the score's parts, modes, lessons, and the vector cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from remem import config
from remem.engine import clock, vectors
from remem.engine.embed import get_embedder, to_blob
from remem.engine.keywords import fts_query
from remem.engine.lessons import add_lesson
from remem.engine.memories import remember
from remem.engine.query_dates import date_spans
from remem.engine.recall import recall
from remem.engine.store import Store


pytestmark = pytest.mark.usefixtures("fresh_vector_caches")


def ids(hits):
    return [h["id"] for h in hits]


def row(store: Store, memory_id: str) -> dict:
    return store.one("SELECT * FROM episodes WHERE id = ?", (memory_id,))


@pytest.fixture
def mems(store: Store) -> dict[str, str]:
    """A few memories across kinds, projects, tags, dates and types."""
    out = {}
    out["uv"] = remember(store, "use uv, not pip, to install python packages", kind="correction",
                         tags=["python", "tooling"], cwd="/home/dev/shop",
                         at="2026-03-01T10:00:00+00:00")["id"]
    out["numpy"] = remember(store, "the build failed because numpy was missing", kind="error",
                            tags=["python"], cwd="/home/dev/shop/api",
                            at="2026-05-10T10:00:00+00:00")["id"]
    out["deploy"] = remember(store, "deploy to production with the release script", kind="note",
                             tags=["ops"], cwd="/home/dev/other", at="2026-06-03T09:00:00+00:00")["id"]
    out["short"] = remember(store, "the staging python server is on port 8080", kind="environment",
                            short_term=True, ttl="30d")["id"]
    return out


# ----------------------------------------------------------------------------- filters

def test_kind_filter(store, mems):
    hits = recall(store, "python packages build", 10, kinds=["error"], touch=False, lessons=False)
    assert ids(hits) == [mems["numpy"]]
    with pytest.raises(ValueError, match="unknown kind"):
        recall(store, "python", 3, kinds=["mistake"])


def test_project_filter_includes_subfolders_only(store, mems):
    hits = recall(store, "python", 10, project="/home/dev/shop", touch=False)
    assert set(ids(hits)) == {mems["uv"], mems["numpy"]}
    assert recall(store, "python", 10, project="/home/dev/sh", touch=False) == []


def test_tag_filters_any_and_all(store, mems):
    any_hits = recall(store, "python", 10, tags=["tooling", "ops"], touch=False)
    assert set(ids(any_hits)) == {mems["uv"], mems["deploy"]}
    all_hits = recall(store, "python", 10, tags=["python", "tooling"], all_tags=True, touch=False)
    assert ids(all_hits) == [mems["uv"]]
    assert all(h["tags"] for h in any_hits)


def test_time_window(store, mems):
    hits = recall(store, "python", 10, since="2026-04-01", until="2026-05-31", touch=False)
    assert ids(hits) == [mems["numpy"]]
    with clock.frozen("2026-06-05T00:00:00+00:00"):
        recent = recall(store, "deploy", 10, since="7d", until="2026-06-30", touch=False)
    assert ids(recent) == [mems["deploy"]]
    with pytest.raises(ValueError, match="not a time"):
        recall(store, "x", 3, since="last tuesday")


def test_memory_type_filter(store, mems):
    assert ids(recall(store, "python", 10, memory_type="short_term", touch=False)) == [mems["short"]]
    assert mems["short"] not in ids(recall(store, "python", 10, memory_type="long_term", touch=False))
    with pytest.raises(ValueError):
        recall(store, "python", 3, memory_type="forever")


def test_archived_left_out_unless_asked(store, mems):
    with store.write() as conn:
        conn.execute("UPDATE episodes SET archived = 1 WHERE id = ?", (mems["numpy"],))
    assert mems["numpy"] not in ids(recall(store, "numpy build failed", 10, touch=False))
    found = recall(store, "numpy build failed", 10, archived=True, touch=False)
    assert found[0]["id"] == mems["numpy"] and found[0]["archived"] is True


# ----------------------------------------------------------------------------- touching

def test_touch_strengthens_what_was_returned(store, mems):
    with store.write() as conn:
        conn.execute("UPDATE episodes SET health = 95 WHERE id = ?", (mems["uv"],))
    before = {k: row(store, v) for k, v in mems.items()}
    hits = recall(store, "install python packages with uv", 1)
    assert ids(hits) == [mems["uv"]]
    after = row(store, mems["uv"])
    assert after["strength"] == pytest.approx(before["uv"]["strength"] + 0.1)
    assert after["recalls"] == before["uv"]["recalls"] + 1
    assert after["health"] == 100.0  # +10, capped
    assert after["last_touched"] != before["uv"]["last_touched"]
    for other in ("numpy", "deploy", "short"):  # not returned, not touched
        assert row(store, mems[other])["recalls"] == 0


def test_no_touch(store, mems):
    recall(store, "install python packages with uv", 3, touch=False)
    assert all(row(store, v)["recalls"] == 0 for v in mems.values())


# ----------------------------------------------------------------------------- score parts

def test_score_is_the_weighted_sum_of_its_parts(store, mems):
    rc = config.load()["recall"]
    for hit in recall(store, "python packages", 4, touch=False):
        p = hit["parts"]
        assert set(p) >= {"relevance", "semantic", "keyword", "when", "recency", "strength"}
        total = rc["w_relevance"] * p["relevance"] + rc["w_recency"] * p["recency"] + rc["w_strength"] * p["strength"]
        assert hit["score"] == pytest.approx(total, abs=2e-4)
        sw = rc["semantic_weight"]
        assert p["relevance"] == pytest.approx(sw * p["semantic"] + (1 - sw) * p["keyword"], abs=2e-4)


def test_recency_and_strength_parts(store):
    with clock.frozen("2026-07-01T00:00:00+00:00"):
        old = remember(store, "sqlite migrations notes", at="2026-05-02T00:00:00+00:00")["id"]
        hits = recall(store, "sqlite migrations", 1, touch=False)
    p = hits[0]["parts"]
    assert hits[0]["id"] == old
    assert p["recency"] == pytest.approx(2 ** (-60 / 30), abs=1e-3)  # 60 days, 30-day half-life
    assert p["strength"] == pytest.approx(0.5)  # strength 1 of 2


def test_importance_and_flashbulb_raise_the_floor(store):
    with clock.frozen("2026-01-01T00:00:00+00:00"):
        plain = remember(store, "rotate the signing keys yearly", at="2025-06-01T00:00:00+00:00")["id"]
        vital = remember(store, "rotate the backup keys yearly", importance=0.95,
                         at="2025-06-01T00:00:00+00:00")["id"]
        flash = remember(store, "rotate the api keys yearly", arousal=0.9)["id"]
    with clock.frozen("2026-01-20T00:00:00+00:00"):
        with store.write() as conn:  # a flashbulb memory that happened long ago
            conn.execute("UPDATE episodes SET at = ? WHERE id = ?", ("2025-01-01T00:00:00+00:00", flash))
        parts = {h["id"]: h["parts"] for h in recall(store, "rotate keys yearly", 3, touch=False)}
    assert parts[plain]["strength"] == pytest.approx(0.5)
    assert parts[vital]["strength"] == pytest.approx(0.9)  # 2·(0.95 − 0.5)
    assert parts[plain]["recency"] < 0.01
    assert parts[flash]["recency"] == 1.0 and parts[flash]["flashbulb"] == 1.0


def test_a_named_date_is_evidence(store):
    for day in ("2025-06-01", "2025-06-03", "2025-06-20"):
        remember(store, "we shipped the release", at=f"{day}T12:00:00+00:00", memory_id=f"m{day}")
    hits = recall(store, "what did we ship on 3 June, 2025?", 3, touch=False)
    assert hits[0]["id"] == "m2025-06-03" and hits[0]["parts"]["when"] == 1.0
    assert date_spans("in July 2022 and 2024-02-29")[0][0].isoformat() == "2024-02-29"


# ----------------------------------------------------------------------------- modes

def test_keyword_mode_returns_only_memories_and_lessons_holding_a_word_of_the_query(cli, store, mems):
    """Keyword mode is a search for exact words: it used to fill the k places with the most
    recent and strongest memories, keyword 0, and a word found nowhere still got k hits."""
    lesson = _lesson(store, "prefer ripgrep over grep for searching code")
    assert recall(store, "zzzqqqxx", 3, mode="keyword", touch=False) == []
    numpy = recall(store, "numpy", 5, mode="keyword", touch=False)
    assert ids(numpy) == [mems["numpy"]] and numpy[0]["parts"]["keyword"] > 0  # fewer than k
    staging = recall(store, "staging ripgrep", 10, mode="keyword", touch=False)
    assert set(ids(staging)) == {mems["short"], lesson}, staging  # a lesson only when it matches
    assert all(h["parts"]["keyword"] > 0 for h in staging)
    # The CLI's --mode keyword is the same search; hybrid and semantic still rank every memory.
    assert json.loads(cli("recall", "zzzqqqxx", "--mode", "keyword", "--json").stdout) == []
    assert ids(json.loads(cli("recall", "numpy", "--mode", "keyword", "-k", "5", "--json").stdout)) == [mems["numpy"]]
    for mode in ("hybrid", "semantic"):
        assert len(recall(store, "zzzqqqxx", 3, mode=mode, touch=False)) == 3, mode


def test_words_of_any_script_are_keywords(store):
    mid = remember(store, "le café près de la gare ferme à midi")["id"]
    assert recall(store, "café", 1, mode="keyword", touch=False)[0]["id"] == mid


def test_modes(store, mems):
    kw = recall(store, "numpy", 3, mode="keyword", touch=False)
    assert kw[0]["id"] == mems["numpy"] and kw[0]["parts"]["semantic"] == 0.0
    assert all(h["parts"]["keyword"] > 0 or h["parts"]["relevance"] == 0 for h in kw)
    sem = recall(store, "installing libraries for python", 4, mode="semantic", touch=False)
    assert max(sem, key=lambda h: h["parts"]["semantic"])["id"] == mems["uv"]
    assert all(h["parts"]["keyword"] == 0.0 for h in sem)
    assert all(h["parts"]["relevance"] == h["parts"]["semantic"] for h in sem)
    with pytest.raises(ValueError, match="mode"):
        recall(store, "x", 3, mode="fuzzy")
    with pytest.raises(ValueError, match="empty"):
        recall(store, "  ", 3)


def test_stop_words_left_out_of_the_keyword_query():
    assert fts_query("What did we do with the numpy build?") == '"numpy" OR "build"'
    assert fts_query('naïve "quotes" AND OR*') == '"naïve" OR "quotes"'


# ----------------------------------------------------------------------------- lessons

def _lesson(store, text, kind="correction", cwd=None):
    emb = get_embedder()
    return add_lesson(store, text, kind, cwd=cwd, space=emb.space,
                      embedding=to_blob(emb.encode([text])[0]))["id"]


def test_lessons_compete_and_can_be_left_out(store, mems):
    lid = _lesson(store, "prefer ripgrep over grep for searching code")
    hits = recall(store, "searching code with ripgrep", 3, touch=False)
    assert hits[0]["id"] == lid and hits[0]["type"] == "lesson"
    assert hits[0]["kind"] == "correction" and "ripgrep" in hits[0]["text"]
    assert lid not in ids(recall(store, "searching code with ripgrep", 3, lessons=False, touch=False))
    assert lid not in ids(recall(store, "ripgrep", 3, tags=["python"], touch=False))
    assert lid not in ids(recall(store, "ripgrep", 3, kinds=["error"], touch=False))
    # a lesson is not touched like an episode, and its row stays as it was
    before = store.one("SELECT strength FROM lessons WHERE id = ?", (lid,))
    recall(store, "searching code with ripgrep", 3)
    assert store.one("SELECT strength FROM lessons WHERE id = ?", (lid,)) == before


def test_lesson_project_scope(store):
    here = _lesson(store, "run the shop tests with make check", cwd="/home/dev/shop")
    everywhere = _lesson(store, "run tests before committing")
    elsewhere = _lesson(store, "run the blog tests with npm test", cwd="/home/dev/blog")
    found = ids(recall(store, "run tests", 5, project="/home/dev/shop", touch=False))
    assert here in found and everywhere in found and elsewhere not in found


# ----------------------------------------------------------------------------- vector cache

def _cache(store):
    emb = get_embedder()
    return vectors.cache_for(store, emb.space, emb.dim)


def _live(cache) -> set[int]:
    return {int(s) for s in np.asarray(cache.seqs) if s >= 0}


def _seqs(store, space=None) -> set[int]:
    space = space or get_embedder().space
    return {r["seq"] for r in store.rows("SELECT seq FROM episodes WHERE space = ?", (space,))}


def test_cache_follows_inserts_deletes_and_replacements(store, mems):
    cache = _cache(store)
    assert _live(cache) == _seqs(store)
    new = remember(store, "pin the node version in .nvmrc")["id"]
    cache = _cache(store)
    assert _live(cache) == _seqs(store)
    assert recall(store, "node version nvmrc", 1, mode="semantic", touch=False)[0]["id"] == new
    store.hard_delete([mems["numpy"]])
    cache = _cache(store)
    assert _live(cache) == _seqs(store)
    assert mems["numpy"] not in ids(recall(store, "numpy build failed", 5, touch=False))
    # re-embedded in place (same seq, new text and vector): the old vector must not answer
    emb = get_embedder()
    ep = dict(row(store, mems["deploy"]))
    ep.update(title="water the office plants", gist="water the office plants on fridays",
              embedding=to_blob(emb.encode(["water the office plants on fridays"])[0]))
    store.put_episodes([ep], replace=True)
    cache = _cache(store)
    seq = row(store, mems["deploy"])["seq"]
    slot = int(cache.slots_of([seq])[0])
    assert slot >= 0 and np.allclose(cache.vectors[slot], emb.encode(["water the office plants on fridays"])[0])
    assert (np.asarray(cache.seqs) == seq).sum() == 1
    assert recall(store, "plants", 1, mode="semantic", touch=False)[0]["id"] == mems["deploy"]


def test_cache_space_change_and_a_second_process_view(store, mems):
    cache = _cache(store)
    uv_seq = row(store, mems["uv"])["seq"]
    with store.write() as conn:  # moved to another space (say a new model): no longer comparable
        conn.execute("UPDATE episodes SET space = 'hashed-256' WHERE id = ?", (mems["uv"],))
    cache = _cache(store)
    assert uv_seq not in _live(cache) and _live(cache) == _seqs(store)
    hit = [h for h in recall(store, "install python packages", 5, touch=False) if h["id"] == mems["uv"]]
    assert not hit or hit[0]["parts"]["semantic"] == 0.0
    # a fresh process (no in-memory cache) reads the same files and agrees
    vectors.drop_caches()
    again = _cache(store)
    assert _live(again) == _live(cache)


def test_cache_rebuilds_when_the_log_was_pruned_past_it(store, mems, monkeypatch):
    cache = _cache(store)
    old_manifest = json.loads(cache.manifest_path.read_text())
    for i in range(5):
        remember(store, f"note number {i} about gardening")
    with store.write() as conn:  # as if another cache had consumed and pruned the log
        hi = conn.execute("SELECT max(id) FROM vector_changes").fetchone()[0]
        conn.execute("DELETE FROM vector_changes WHERE id < ?", (hi,))
    # this cache last synced before the pruned entries: it must rebuild, not miss them
    cache.manifest_path.write_text(json.dumps(old_manifest))
    vectors.drop_caches()
    cache = _cache(store)
    assert _live(cache) == _seqs(store)
    assert json.loads(cache.manifest_path.read_text())["gen"] != old_manifest["gen"]
    stale = Path(cache.folder) / f"{cache.key}.{old_manifest['gen']}.f32"
    assert not stale.exists()


def test_many_changes_compact_the_cache(store, monkeypatch):
    monkeypatch.setattr(vectors, "DEAD_SHARE", 0.0)
    first = [remember(store, f"first batch memory {i}")["id"] for i in range(3)]
    cache = _cache(store)
    gen = cache.manifest["gen"]
    monkeypatch.setattr(vectors, "DEAD_SHARE", 0.25)
    store.hard_delete(first[:2])
    cache = _cache(store)
    assert cache.manifest["gen"] == gen and cache.manifest["dead"] == 2
    assert _live(cache) == _seqs(store)


# ----------------------------------------------------------------------------- CLI

def test_cli_recall_json_filters_and_explain(cli, store, mems):
    result = cli("recall", "python packages", "--json", "--kind", "correction", "--kind", "error")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert {h["id"] for h in hits} == {mems["uv"], mems["numpy"]}
    result = cli("recall", "python", "--tag", "ops", "--tag", "python", "--all-tags", "--json")
    assert json.loads(result.stdout) == []
    result = cli("recall", "install python packages", "-k", "2", "--explain")
    assert result.exit_code == 0 and "relevance" in result.stdout and "recency" in result.stdout
    bad = cli("recall", "x", "--type", "forever")
    assert bad.exit_code == 1 and "short_term or long_term" in bad.output


def test_cli_recall_takes_its_default_k_from_config(cli, store, mems):
    """`remem config set recall.k N` (the README's example) sets how many `remem recall` returns."""
    assert len(json.loads(cli("recall", "python", "--json").stdout)) == 4  # default 5: all four
    config.set_value("recall.k", 2)
    assert len(json.loads(cli("recall", "python", "--json").stdout)) == 2
    assert len(json.loads(cli("recall", "python", "-k", "3", "--json").stdout)) == 3  # -k wins
    config.set_value("recall.k", 1)
    assert len(json.loads(cli("recall", "python", "--json").stdout)) == 1
    assert "config recall.k" in cli("recall", "--help").stdout
    with pytest.raises(config.ConfigError, match="recall.k must be from 1 to 100"):
        config.set_value("recall.k", 0)  # refused when set, not when the next recall meets it
    config.paths.config_path().write_text("[recall]\nk = 0\n")  # written by hand: named by the next recall
    bad = cli("recall", "python")
    assert bad.exit_code == 1 and "recall.k" in bad.output and bad.output.count("\n") == 1


def test_cli_recall_in_a_real_process(remem_cli, store, mems):
    out = remem_cli("recall", "numpy build", "-k", "1", "--json", "--project", "/home/dev/shop")
    assert out.returncode == 0, out.stderr
    assert [h["id"] for h in out.json()] == [mems["numpy"]]
    assert row(store, mems["numpy"])["recalls"] == 1


def test_cache_rebuilds_when_the_database_went_backwards(store, mems):
    cache = _cache(store)
    manifest = json.loads(cache.manifest_path.read_text())
    manifest["log_id"] += 1000  # as if written for a newer database than the one now in place
    cache.manifest_path.write_text(json.dumps(manifest))
    vectors.drop_caches()
    again = _cache(store)
    assert again.manifest["gen"] != manifest["gen"] and _live(again) == _seqs(store)


# ----------------------------------------------------------------------------- larger stores

@pytest.fixture
def big(store):
    """1,200 episodes of random words over two years (one embedding batch, one write)."""
    import random

    rng = random.Random(3)
    words = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
             "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()
    texts = ["common " + " ".join(rng.choices(words, k=rng.randint(4, 10))) for _ in range(1200)]
    emb = get_embedder()
    vecs = emb.encode(texts)
    with clock.frozen("2026-06-01T00:00:00+00:00"):
        eps = [{"id": f"b{i:04d}", "kind": "note", "title": t[:40], "gist": t,
                "at": clock.iso(clock.now() - __import__("datetime").timedelta(days=rng.random() * 700)),
                "strength": rng.choice([0.5, 1.0, 1.5, 2.5]), "space": emb.space,
                "embedding": to_blob(v)} for i, (t, v) in enumerate(zip(texts, vecs))]
        store.put_episodes(eps)
    return texts


def test_top_k_equals_an_exhaustive_scan(store, big):
    wide = config.load()
    wide["recall"].update(candidates=100_000, recent_candidates=100_000, max_candidates=100_000)
    deep = config.load()
    deep["recall"].update(max_candidates=100_000)  # bounded only by the threshold test
    with clock.frozen("2026-06-01T00:00:00+00:00"):
        for query in ("alpha tango", "kilo lima mike", "whiskey", "xray foxtrot sierra golf"):
            for mode in ("hybrid", "semantic", "keyword"):
                a = recall(store, query, 5, mode=mode, cfg=deep, touch=False)
                b = recall(store, query, 5, mode=mode, cfg=wide, touch=False)
                assert ids(a) == ids(b), (query, mode)


def test_a_large_k_equals_an_exhaustive_scan_and_can_return_every_memory(store, big):
    """k of 20 and more used to stop after the first read (and the recency list stayed 50
    long), so keyword mode at k=100 over 80 matches returned too few and the wrong ones."""
    wide = config.load()
    wide["recall"].update(candidates=100_000, recent_candidates=100_000, max_candidates=100_000)
    with clock.frozen("2026-06-01T00:00:00+00:00"):
        for k in (20, 60):
            for mode in ("hybrid", "semantic", "keyword"):
                a = recall(store, "kilo whiskey", k, mode=mode, touch=False)
                b = recall(store, "kilo whiskey", k, mode=mode, cfg=wide, touch=False)
                assert ids(a) == ids(b), (k, mode)
        everything = recall(store, "zebra", 1500, mode="hybrid", touch=False)  # no word matches
        assert recall(store, "zebra", 1500, mode="keyword", touch=False) == []  # only matches
    assert len(everything) == 1200


def test_a_recent_memory_past_the_keyword_limit_keeps_its_keyword_evidence(store):
    """900 old memories match "docker" a little better than a new one (shorter texts), so the
    new one falls past the keyword LIMIT; recency must still lift it, with its real BM25."""
    from datetime import timedelta

    words = lambda n: " ".join(f"w{j}" for j in range(n))  # noqa: E731
    with clock.frozen("2026-06-01T00:00:00+00:00"):
        now = clock.now()
        old = [{"id": f"old{i:03d}", "kind": "note", "title": "old", "gist": "docker " + words(100),
                "at": clock.iso(now - timedelta(days=3000)), "strength": 0.0} for i in range(900)]
        store.put_episodes(old + [{"id": "new", "kind": "note", "title": "new",
                                   "gist": "docker " + words(150), "at": clock.iso(now),
                                   "strength": 2.0}])
        cfg = config.load()
        cfg["recall"].update(candidates=20)  # a keyword limit of 800 matches at k=5
        top = recall(store, "docker", 1, mode="keyword", touch=False, cfg=cfg)[0]
    assert top["id"] == "new" and 0.7 < top["parts"]["keyword"] < 1.0


def test_a_vetoed_or_filtered_out_lesson_does_not_reorder_episodes(store):
    first = remember(store, "rotate the deploy keys every quarter")["id"]
    remember(store, "the office plants need water")
    before = recall(store, "rotate deploy keys", 2, mode="keyword", touch=False, lessons=True)
    add_lesson(store, "rotate deploy keys deploy keys rotate keys", "correction", status="vetoed")
    after = recall(store, "rotate deploy keys", 2, mode="keyword", touch=False, lessons=True)
    assert ids(before) == ids(after) and after[0]["id"] == first
    assert after[0]["parts"]["keyword"] == before[0]["parts"]["keyword"] == 1.0


def test_a_date_at_the_end_of_the_calendar_in_a_query_is_no_crash(store):
    remember(store, "valid_to defaults to 9999-12-31 in the orders table")
    for query in ("why is valid_to 9999-12-31", "what happened in December 9999",
                  "on 0001-01-01 or in January 1"):
        assert recall(store, query, 3, touch=False)[0]["text"].startswith("valid_to")
    assert date_spans("in December 9999")[0][1].isoformat() == "9999-12-31"


def test_expired_memories_stay_out_when_too_many_to_list(store, monkeypatch):
    from remem.engine import recall as recall_mod

    monkeypatch.setattr(recall_mod, "_EXPIRED_LISTED", 2)  # as with more than 10,000 waiting
    with clock.frozen("2026-11-01T10:00:00+00:00"):
        short = [remember(store, f"staging server {n} is down for maintenance", ttl="1h")["id"]
                 for n in range(4)]
        lasting = remember(store, "the staging server runs on port 8080")["id"]
        clock.advance(hours=2)
        found = ids(recall(store, "staging server down", 5, touch=False))
    assert found == [lasting] and not set(short) & set(found)


def test_an_old_flashbulb_memory_is_found_in_a_big_store(store, big):
    with clock.frozen("2025-01-01T00:00:00+00:00"):
        vivid = remember(store, "the day the whole cluster went down", arousal=0.95)["id"]
    with clock.frozen("2025-01-20T00:00:00+00:00"):
        hits = recall(store, "cluster went down", 3, touch=False)
    assert hits[0]["id"] == vivid and hits[0]["parts"]["flashbulb"] == 1.0


def test_words_in_most_memories_leave_the_keyword_query(store, big):
    from remem.engine.recall import _common_terms_out

    assert _common_terms_out(store, ["common", "zebra"], 0.2) == ["zebra"]  # in every one: out
    assert _common_terms_out(store, ["common", "alpha"], 0.5) == ["alpha"]
    assert _common_terms_out(store, ["common"], 0.2) == ["common"]  # the rarest always stays


def test_the_keyword_query_keeps_the_rarest_terms_within_its_budget(store, big):
    from remem.engine.recall import _common_terms_out

    def matches(word: str) -> int:
        return store.scalar("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH ?", (f'"{word}"',))

    words = ["alpha", "bravo", "charlie", "delta"]
    rarest = sorted(words, key=matches)
    two = matches(rarest[0]) + matches(rarest[1])
    assert _common_terms_out(store, words, 0.9, budget=two) == [w for w in words if w in rarest[:2]]
    assert _common_terms_out(store, words, 0.9, budget=two - 1) == [rarest[0]]
    assert _common_terms_out(store, words, 0.9, budget=1) == [rarest[0]]  # always one term
    assert _common_terms_out(store, words, 0.9, budget=10**6) == words


def test_cosines_on_a_worker_thread_rank_exactly_as_inline(store, big, monkeypatch):
    from remem.engine import vectors

    inline = {q: ids(recall(store, q, 5, touch=False)) for q in ("alpha tango", "kilo lima mike")}
    monkeypatch.setattr(vectors, "BACKGROUND_ROWS", 0)  # every product on the worker thread
    for query, expected in inline.items():
        assert ids(recall(store, query, 5, touch=False)) == expected


def test_recall_from_threads_while_memories_arrive(home, mems):
    """A long-running server recalls from several threads while other writers add memories."""
    import threading

    errors: list[BaseException] = []

    def reader() -> None:
        try:
            with Store() as own:
                for _ in range(15):
                    for hit in recall(own, "python packages", 3, touch=False):
                        assert hit["parts"]["semantic"] >= 0
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            with Store() as own:
                for i in range(10):
                    remember(own, f"new python note {i}")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with Store() as own:
        assert _live(_cache(own)) == _seqs(own)


# ----------------------------------------------------------------------------- LoCoMo bench

def _locomo_module():
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "bench" / "locomo.py"
    spec = importlib.util.spec_from_file_location("bench_locomo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_locomo_evidence_repair():
    L = _locomo_module()
    assert L.repair_evidence(["D:11:26", "D30:05", "D8:6; D9:17", "D", "D2:3 D2:4"]) == [
        "D11:26", "D30:5", "D8:6", "D9:17", "D2:3", "D2:4"]
    assert L.session_date("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00+00:00"


def test_locomo_bench_end_to_end_on_a_tiny_conversation(home, tmp_path):
    """A conversation written for this test, in LoCoMo's shape, through the events path."""
    L = _locomo_module()
    sample = {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "9:00 am on 3 March, 2024",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat called Miso."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "How is the orchestra going?"},
            ],
            "session_2_date_time": "6:30 pm on 20 April, 2024",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "We hiked up Ben Nevis last weekend."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Miso knocked over my coffee again."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ana's cat?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
            {"question": "Which instrument did Ben start learning?", "answer": "cello", "evidence": ["D1:02"], "category": 4},
            {"question": "Where did Ben hike?", "answer": "Ben Nevis", "evidence": ["D:2:1"], "category": 2},
            {"question": "Adversarial", "answer": "-", "evidence": ["D1:1"], "category": 5},
            {"question": "No evidence", "answer": "-", "evidence": ["D"], "category": 1},
        ],
    }
    result = L.run([sample], context=1)
    assert result["questions"] == 3
    assert result["turn"]["R@10"] == 1.0 and result["session"]["R@10"] == 1.0
    assert result["turn"]["R@5"] >= 2 / 3
    assert set(result["baselines"]) == {"bm25", "cosine", "bm25-plain"}
    assert os.environ["REMEM_HOME"] == str(home)  # the benchmark's own homes are gone again


def test_an_expired_short_term_memory_is_not_recalled_before_the_expire_task_runs(store):
    from remem.engine import clock
    from remem.engine.memories import remember
    from remem.engine.recall import recall

    with clock.frozen("2026-11-01T10:00:00+00:00"):
        short = remember(store, "the staging server is down for maintenance", ttl="2h")
        lasting = remember(store, "the staging server runs on port 8080")
        assert short["id"] in {h["id"] for h in recall(store, "staging server", 5, touch=False)}
        clock.advance(hours=3)
        found = {h["id"] for h in recall(store, "staging server", 5, touch=False)}
    assert short["id"] not in found and lasting["id"] in found


# ----------------------------------------------------------------------------- speakers

def _said(store: Store, lines: list[tuple[str, str]]) -> list[str]:
    """Note events spoken by someone, through the events ingest; their episode ids in order."""
    from remem.engine.events import ingest_events, parse_event_lines

    evs = [{"v": 1, "id": f"chat:{n}", "kind": "note", "at": f"2026-05-0{1 + n % 9}T10:00:00+00:00",
            "speaker": who, "text": text, "session": "chat"} for n, (who, text) in enumerate(lines)]
    valid, bad = parse_event_lines([json.dumps(e) for e in evs])
    assert bad == [] and ingest_events(store, valid)["errors"] == []
    return [store.scalar("SELECT id FROM episodes WHERE speaker IS ? AND gist = ?", (who, text))
            for who, text in lines]


def test_a_named_speakers_own_words_rank_first(store):
    ana, ben = _said(store, [
        ("Ana Lima", "Ben, your pottery class sounds relaxing, I should try it"),
        ("Ben", "I signed up for a pottery class, it is relaxing"),
    ])
    hits = recall(store, "what does Ben find relaxing about pottery", 2, touch=False, lessons=False)
    assert ids(hits) == [ben, ana]
    assert hits[0]["parts"]["speaker"] == 1.0 and hits[1]["parts"]["speaker"] == 0.0
    assert ids(recall(store, "why did ana lima try pottery", 2, touch=False, lessons=False))[0] == ana
    assert ids(recall(store, "what did Ana say about pottery", 2, touch=False, lessons=False))[0] == ana
    plain = recall(store, "pottery relaxing", 2, touch=False, lessons=False)
    assert all(h["parts"]["speaker"] == 0.0 for h in plain)  # nobody named: no speaker part
    keyword = recall(store, "what does Ben find relaxing", 2, mode="keyword", touch=False, lessons=False)
    assert all(h["parts"]["speaker"] == 0.0 for h in keyword)  # a hybrid-mode part only


def test_which_speakers_a_query_names(store):
    from remem.engine.recall import named_speakers

    _said(store, [("Ana Lima", "hello"), ("Will", "hi"), ("Jo", "hey"), ("Mary Ann Lee", "yo")])
    assert named_speakers(store, "what did ANA say") == ["Ana Lima"]
    assert named_speakers(store, "what will break") == []  # a stop word is not a name
    assert named_speakers(store, "jo said") == []  # two letters alone: too ambiguous
    assert named_speakers(store, "when did mary ann lee move") == ["Mary Ann Lee"]
    assert named_speakers(store, "anagram lima") == []  # whole words only
    assert sorted(named_speakers(store, "did Ana and Mary talk")) == ["Ana Lima", "Mary Ann Lee"]


def test_speakers_are_kept_per_episode_and_listed_once(store):
    _said(store, [("  Ana   Lima ", "one"), ("Ana Lima", "two")])
    assert store.scalar("SELECT count(*) FROM speakers") == 1
    assert store.scalar("SELECT count(*) FROM episodes WHERE speaker = 'Ana Lima'") == 2
    remember(store, "a note nobody said")
    assert store.scalar("SELECT count(*) FROM episodes WHERE speaker IS NULL") == 1


def test_top_k_with_a_named_speaker_equals_an_exhaustive_scan(store, big):
    with store.write() as conn:  # every third memory was said by Ana
        conn.execute("UPDATE episodes SET speaker = 'Ana' WHERE seq % 3 = 0")
    wide = config.load()
    wide["recall"].update(candidates=100_000, recent_candidates=100_000, max_candidates=100_000)
    deep = config.load()
    deep["recall"].update(max_candidates=100_000)
    with clock.frozen("2026-06-01T00:00:00+00:00"):
        for query in ("what did ana say about alpha tango", "ana kilo lima", "ana"):
            a = recall(store, query, 5, cfg=deep, touch=False)
            b = recall(store, query, 5, cfg=wide, touch=False)
            assert ids(a) == ids(b), query
            assert a[0]["parts"]["speaker"] == 1.0


def test_locomo_bench_takes_a_malformed_conversation_and_says_what_it_left_out(home):
    """Conversations it was not tuned on may be less tidy: an unreadable session date, turns
    without an id or text, a repeated id, a category as a string, a question without text.
    The rest is still measured, and each problem is named."""
    L = _locomo_module()
    sample = {
        "sample_id": "rough",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "9:00 am on 3 March, 2024",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat called Miso."},
                {"speaker": "Ben", "text": "a turn without an id"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": ""},
                {"speaker": "Ana", "dia_id": "D1:1", "text": "the same id again"},
            ],
            "session_2_date_time": "sometime in spring",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "We hiked up Ben Nevis."}],
        },
        "qa": [
            {"question": "What is the name of Ana's cat?", "evidence": ["D1:1"], "category": "4"},
            {"question": "Where did Ben hike?", "evidence": ["D2:1"], "category": 2},
            {"evidence": ["D2:1"], "category": 2},
            "not a question at all",
        ],
    }
    result = L.run([sample, {"sample_id": "empty"}], context=1, baselines=False)
    assert result["questions"] == 2
    assert result["turn"]["R@5"] == 1.0
    said = "\n".join(result["warnings"])
    assert "sample 1: no conversation" in said
    assert "session_2: unreadable date 'sometime in spring'" in said
    assert "D1:1: dia_id seen before" in said
    assert "D1:2" in said and "no dia_id, speaker or text" in said
    assert len(result["warnings"]) == 5
    sessions = L.sessions_of(sample["conversation"])
    assert sessions[1][1] == "2024-03-04T09:00:00+00:00"  # a day after the session before
