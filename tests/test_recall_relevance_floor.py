"""Recall's relevance floor: a memory less relevant than `recall.relevance_floor` × the query's
best relevance ranks after every memory at or above it, so recency and retention alone cannot
lift it over a clearly relevant one. The score itself stays the weighted sum of its parts."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest

from remem import config
from remem.engine import clock
from remem.engine.embed import get_embedder, to_blob
from remem.engine.lessons import add_lesson
from remem.engine.memories import remember
from remem.engine.recall import recall
from remem.engine.store import Store
from remem.errors import ConfigError

NOW = "2026-06-01T12:00:00+00:00"
QUERY = "how do I install python packages"


pytestmark = pytest.mark.usefixtures("fresh_vector_caches")


def ids(hits):
    return [h["id"] for h in hits]


def days_ago(days: float) -> str:
    return clock.iso(clock.now() - timedelta(days=days))


def lesson(store: Store, text: str, strength: float = 2.0) -> str:
    emb = get_embedder()
    return add_lesson(store, text, "correction", strength=strength, space=emb.space,
                      embedding=to_blob(emb.encode([text])[0]))["id"]


def weaken(store: Store, memory_id: str, strength: float) -> None:
    with store.write() as conn:
        conn.execute("UPDATE episodes SET strength = ? WHERE id = ?", (strength, memory_id))


@pytest.fixture
def packages(store: Store) -> dict[str, str]:
    """A fresh exact answer, an older answer that has weakened, and two corroborated lessons
    about something else (recency 1 and retention 1: the most lift a memory can have)."""
    with clock.frozen(NOW):
        out = {
            "best": remember(store, "install python packages with uv, never with pip", at=days_ago(1))["id"],
            "older": remember(store, "pip install failed behind the office proxy; uv installs the "
                                     "packages through the mirror", at=days_ago(400))["id"],
            "push": lesson(store, "Never force-push; use --force-with-lease."),
            "staging": lesson(store, "The staging database is read-only on Fridays."),
        }
    weaken(store, out["older"], 0.2)
    return out


def test_an_unrelated_lesson_does_not_outrank_a_relevant_older_episode(store, packages, cli):
    rc = config.load()["recall"]
    with clock.frozen(NOW):
        hits = recall(store, QUERY, 4, touch=False)
        shown = cli("recall", QUERY, "-k", "4", "--json")
    by_id = {h["id"]: h for h in hits}
    assert ids(hits)[:2] == [packages["best"], packages["older"]]
    assert set(ids(hits)[2:]) == {packages["push"], packages["staging"]}
    best = by_id[packages["best"]]["parts"]["relevance"]
    for name in ("push", "staging"):
        unrelated = by_id[packages[name]]
        # Ranked lower although its score is higher: recency and retention lifted it, not the query.
        assert unrelated["score"] > by_id[packages["older"]]["score"]
        assert unrelated["parts"]["demoted"] == 1.0
        assert unrelated["parts"]["relevance_floor"] == pytest.approx(rc["relevance_floor"] * best, abs=2e-4)
        assert unrelated["parts"]["relevance"] < unrelated["parts"]["relevance_floor"]
    for hit in hits:  # the score stays the weighted sum of its parts
        p = hit["parts"]
        total = rc["w_relevance"] * p["relevance"] + rc["w_recency"] * p["recency"] + rc["w_strength"] * p["strength"]
        assert hit["score"] == pytest.approx(total, abs=2e-4)
    assert "demoted" not in by_id[packages["older"]]["parts"]
    # The JSON a tool reads says why a hit ranks below a lower score.
    assert shown.exit_code == 0, shown.output
    parts = {h["id"]: h["parts"] for h in json.loads(shown.stdout)}
    assert parts[packages["push"]]["demoted"] == 1.0 and "demoted" not in parts[packages["older"]]


FRESH_UNRELATED = (
    "python here is version 3.12.4",
    "the python test suite needs REDIS_URL set",
    "format with ruff format, not black",
)


def fresh_and_strong(store: Store) -> list[str]:
    """Memories of the last day, strengthened by use, that do not answer QUERY."""
    out = [remember(store, text, at=days_ago(0.5))["id"] for text in FRESH_UNRELATED]
    for memory_id in out:
        weaken(store, memory_id, 2.0)
    return out


def test_a_relevant_lesson_still_shows_over_recent_unrelated_memories(store):
    """The floor is relative to the query's best match, not a penalty on lessons: an old,
    weak lesson that answers the query ranks over fresh, strong memories that do not."""
    with clock.frozen("2025-08-01T12:00:00+00:00"):
        answer = lesson(store, "Packages come from uv here.", strength=0.1)
    with clock.frozen(NOW):
        best = remember(store, "install python packages with uv, never with pip", at=days_ago(200))["id"]
        fresh = fresh_and_strong(store)
        others = [lesson(store, text) for text in (
            "Prefer pathlib over os.path in new code.", "Never force-push; use --force-with-lease.",
            "The staging database is read-only on Fridays.")]
        hits = recall(store, QUERY, 3, touch=False)
    assert ids(hits)[:2] == [best, answer], [(h["text"][:40], h["score"]) for h in hits]
    assert hits[1]["type"] == "lesson" and "demoted" not in hits[1]["parts"]
    assert hits[2]["id"] in fresh + others and hits[2]["parts"]["demoted"] == 1.0
    # By score alone the fresh memories win: recency and retention, not the query.
    assert hits[2]["score"] > hits[1]["score"]


def test_a_recent_episode_with_little_relevance_ranks_after_an_older_relevant_one(store):
    with clock.frozen(NOW):
        old = remember(store, "installing behind the office proxy works through the uv mirror",
                       at=days_ago(400))["id"]
        weaken(store, old, 0.1)  # a year unused
        fresh = fresh_and_strong(store)
        hits = recall(store, QUERY, 2, touch=False, lessons=False)
    assert ids(hits)[0] == old and ids(hits)[1] in fresh
    assert hits[1]["parts"]["demoted"] == 1.0 and hits[1]["score"] > hits[0]["score"]


def test_the_floor_is_read_from_config_and_checked(store, packages):
    unrelated = {packages["push"], packages["staging"]}
    config.set_value("recall.relevance_floor", 0.0)  # off: the plain score order
    with clock.frozen(NOW):
        off = recall(store, QUERY, 4, touch=False)
    assert set(ids(off)[1:3]) == unrelated and ids(off)[3] == packages["older"]
    assert not any("demoted" in h["parts"] for h in off)
    config.set_value("recall.relevance_floor", 0.8)  # above the older answer's share of the best
    with clock.frozen(NOW):
        high = recall(store, QUERY, 4, touch=False)
    assert ids(high)[0] == packages["best"] and ids(high)[3] == packages["older"]
    assert high[3]["parts"]["demoted"] == 1.0
    assert high[3]["parts"]["relevance_floor"] == pytest.approx(0.8 * high[0]["parts"]["relevance"], abs=2e-4)
    config.set_value("recall.relevance_floor", 0.5)
    with clock.frozen(NOW):
        half = recall(store, QUERY, 4, touch=False)
    assert ids(half)[:2] == [packages["best"], packages["older"]]
    with pytest.raises(ConfigError, match="relevance_floor"):
        config.set_value("recall.relevance_floor", "1.5")


def test_the_floor_ranking_equals_an_exhaustive_scan(store):
    """Recall reads candidate lists best-first and stops early; with the floor, the k-th hit
    may sit below it, and reading must go on until no unread memory can pass it. Here 400
    fresh, strong memories outscore 30 old ones that match the query."""
    rng = random.Random(3)
    filler = ("amber bronze cedar delta ember fjord garnet hollow indigo juniper lumen meadow "
              "nectar opal prairie quartz russet sable tundra umber velvet willow yarrow zephyr").split()
    emb = get_embedder()
    fresh = [" ".join(rng.choices(filler, k=rng.randint(5, 10))) for _ in range(400)]
    matching = [f"kestrel harbour {' '.join(rng.choices(filler, k=rng.randint(2, 12)))}" for _ in range(30)]
    with clock.frozen(NOW):
        rows = []
        for i, (text, vec) in enumerate(zip(fresh + matching, emb.encode(fresh + matching))):
            recent = i < len(fresh)
            rows.append({"id": f"{'f' if recent else 'm'}{i:04d}", "kind": "note", "title": text[:40],
                         "gist": text, "space": emb.space, "embedding": to_blob(vec),
                         "at": days_ago(rng.random() * 3 if recent else 300 + rng.random() * 400),
                         "strength": 2.0 if recent else 1.0})
        store.put_episodes(rows)
        deep = config.load()
        deep["recall"].update(candidates=1, recent_candidates=1, max_candidates=100_000)
        wide = config.load()
        wide["recall"].update(candidates=100_000, recent_candidates=100_000, max_candidates=100_000)
        for k in (1, 10, 40):
            a = recall(store, "kestrel harbour", k, cfg=deep, touch=False, lessons=False)
            b = recall(store, "kestrel harbour", k, cfg=wide, touch=False, lessons=False)
            assert ids(a) == ids(b), k
            assert all(h["id"].startswith("m") for h in a[:min(k, 30)]), k


def test_explain_says_which_memories_fell_below_the_floor(store, packages, cli):
    with clock.frozen(NOW):
        shown = cli("recall", QUERY, "-k", "4", "--explain")
    lines = shown.stdout.splitlines()
    below = [n for n, line in enumerate(lines) if "below the relevance floor" in line]
    assert len(below) == 2  # the two unrelated lessons, each under its own result
    for n in below:
        assert "lesson:" in lines[n - 2]
    assert "relevance_floor 0.5" in lines[-1]


def test_lessons_alone_meet_the_floor_when_no_episode_passes_the_filters(store):
    """Every episode is filed under another project, so only lessons are scored: the floor is
    still half the best lesson's relevance, and fresh, corroborated lessons that do not answer
    the query are below it, and say so."""
    with clock.frozen("2025-08-01T12:00:00+00:00"):
        answer = lesson(store, "Install packages with pip inside the project's virtualenv.", strength=0.1)
    with clock.frozen(NOW):
        unrelated = [lesson(store, text) for text in (
            "Prefer pathlib over os.path in new code.", "Never force-push; use --force-with-lease.",
            "The staging database is read-only on Fridays.")]
        remember(store, "install packages with pip, not conda", cwd="/work/app")
        hits = recall(store, "install packages with pip", 8, touch=False, lessons=True,
                      project="/elsewhere")
    assert [h["type"] for h in hits] == ["lesson"] * 4
    assert ids(hits)[0] == answer and "demoted" not in hits[0]["parts"]
    floor = 0.5 * hits[0]["parts"]["relevance"]
    for hit in hits[1:]:
        assert hit["id"] in unrelated and hit["parts"]["demoted"] == 1.0
        assert hit["parts"]["relevance_floor"] == pytest.approx(floor, abs=2e-4)


def _unit(vec):
    import numpy as np

    vec = np.asarray(vec, dtype=np.float64)
    return vec / np.linalg.norm(vec)


def _at_cosine(query_vec, cosine: float, rng: random.Random):
    """A unit vector whose cosine with the (unit) query vector is `cosine`."""
    import numpy as np

    noise = np.array([rng.gauss(0, 1) for _ in range(len(query_vec))])
    noise -= (noise @ query_vec) * query_vec
    return (cosine * query_vec + (1 - cosine**2) ** 0.5 * _unit(noise)).astype(np.float32)


def _episode(emb, vec, memory_id: str, **fields):
    text = fields.pop("text", "amber bronze cedar")
    return {"id": memory_id, "kind": "note", "title": text[:40], "gist": text, "space": emb.space,
            "embedding": to_blob(vec), **fields}


# Read once per list (candidates 1 gives a first read of 20 × k) and then deeper, as recall does
# on a large store; WIDE reads every memory at once, the exhaustive ranking.
def _deep_and_wide():
    deep = config.load()
    deep["recall"].update(candidates=1, recent_candidates=1, max_candidates=100_000)
    wide = config.load()
    wide["recall"].update(candidates=100_000, recent_candidates=100_000, max_candidates=100_000)
    return deep, wide


def test_an_unread_memory_more_relevant_than_any_read_one_raises_the_floor(store):
    """The relevance list is read best-first over every vector, archived ones too, so the
    first read can hold no eligible memory of high relevance. A protected flashbulb memory of
    low relevance then beats every unread score, yet an unread memory more than twice as
    relevant raises the floor over it: the early stop must not return it first."""
    emb = get_embedder()
    rng = random.Random(5)
    query = "kestrel harbour"
    q = _unit(emb.encode([query])[0])
    with clock.frozen(NOW):
        rows = [_episode(emb, _at_cosine(q, 0.55, rng), f"archived{i:02d}", archived=1,
                         at=days_ago(700)) for i in range(20)]
        rows.append(_episode(emb, _at_cosine(q, 0.5, rng), "answer", at=days_ago(600)))
        rows.append(_episode(emb, _at_cosine(q, 0.2, rng), "flashbulb", at=days_ago(500),
                             strength=2.0, importance=1.0, flashbulb_until=days_ago(-30)))
        store.put_episodes(rows)
        deep, wide = _deep_and_wide()
        early = recall(store, query, 1, mode="semantic", cfg=deep, touch=False, lessons=False)
        full = recall(store, query, 1, mode="semantic", cfg=wide, touch=False, lessons=False)
    assert ids(full) == ["answer"]
    assert ids(early) == ids(full)

