"""Stated surprises that say different things are no repeat: two alike in every word but
their subject ("ruff ignores …", "mypy ignores …"; "the staging database is wiped …", "the
production database is backed up …") come closer than the cut as wholes, the words they share
outweighing the ones that tell them apart. Each word one says and the other does not must mean
the same as one of the other's (consolidate.say_alike), in the lessons pass and the merge pass.

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the real sleep.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import clock, consolidate
from remem.engine.consolidate import content_words, differing, say_alike
from remem.engine.embed import get_embedder
from remem.engine.lessons import add_lesson
from remem.engine.lessons_pass import waiting
from tests.test_sleep import _at, episode, lessons, run

HERE = "/home/dev/s"
RUFF = "Huh, ruff ignores the settings in pyproject.toml in this repo."
MYPY = "Huh, mypy ignores the settings in pyproject.toml in this repo."
STAGING = "The staging database is wiped every Sunday night."
PRODUCTION = "The production database is backed up every Sunday night."


def _surprise(i: str, text: str, hours: float) -> dict:
    return episode(i, "surprise", text, hours=hours, cwd=HERE)


def _alike():
    """consolidate.say_alike's test of two words in the bundled model's space, at its cut."""
    emb = get_embedder()
    cache: dict[str, np.ndarray] = {}

    def vector(word: str) -> np.ndarray:
        if word not in cache:
            cache[word] = emb.encode([word])[0]
        return cache[word]

    return lambda a, b: float(vector(a) @ vector(b)) >= 0.62


def test_surprises_differing_in_their_subject_each_wait_for_their_own_repeat(store):
    with clock.frozen(_at(100)):
        store.put_episodes([_surprise("s1", RUFF, 1), _surprise("s2", MYPY, 2),
                            _surprise("s3", STAGING, 3), _surprise("s4", PRODUCTION, 4)])
        first = run(store)
        assert lessons(store) == [] and first["passes"]["lessons"]["pending"] == 4
        assert waiting(store)["surprises"] == 4
        # Said again, each meets its own: the mypy fact is not lost in ruff's lesson.
        store.put_episodes([_surprise("s5", "Turns out ruff ignores the settings in pyproject.toml here.", 5),
                            _surprise("s6", "Oddly, mypy ignores the settings in pyproject.toml in this repo.", 6)])
        run(store)
    made = sorted((l["text"], l["sources"]) for l in lessons(store))
    assert made == [(f"Keep in mind: {MYPY}", ["s2", "s6"]), (f"Keep in mind: {RUFF}", ["s1", "s5"])], made
    assert waiting(store)["surprises"] == 2  # staging and production, each still once


def test_the_same_surprise_in_other_words_is_still_one_lesson(store):
    with clock.frozen(_at(100)):
        store.put_episodes([_surprise("d1", "The staging DB is wiped every Sunday night.", 1),
                            _surprise("d2", "Staging database gets wiped every Sunday night!", 2),
                            _surprise("d3", PRODUCTION, 3)])
        run(store)
    [lesson] = lessons(store)
    assert lesson["sources"] == ["d1", "d2"] and lesson["seen"] == 2


def test_many_surprises_about_many_tools_make_one_lesson_per_tool(store):
    """At scale, "<tool> caches results in /tmp/<n>" for 15 tools became one lesson seen 1199
    times, naming one tool. The number in the path tells nothing apart."""
    tools = ["npm", "mypy", "pytest", "pnpm", "cargo", "go", "make", "black", "docker", "git", "pip",
             "poetry", "ruff", "uv", "yarn"]
    said = [_surprise(f"t{n}", f"Surprising: {tools[n % 15]} caches results in /tmp/{(n * 37) % 200}", n)
            for n in range(60)]
    with clock.frozen(_at(100)):
        store.put_episodes(said)
        run(store)
    made = lessons(store)
    assert len(made) == 15, [l["text"] for l in made]
    for lesson in made:
        tool = lesson["text"].split("Surprising: ")[1].split()[0]
        said = [f"t{n}" for n in range(60) if tools[n % 15] == tool]
        assert sorted(lesson["sources"], key=lambda s: int(s[1:])) == said


def test_the_merge_pass_keeps_surprise_lessons_that_say_other_things_apart(store):
    with clock.frozen(_at(100)):
        store.put_episodes([_surprise("r1", RUFF, 1), _surprise("r2", "Turns out ruff ignores the settings in "
                                                                  "pyproject.toml here.", 2),
                            _surprise("m1", MYPY, 3), _surprise("m2", "Oddly, mypy ignores the settings in "
                                                                 "pyproject.toml in this repo.", 4)])
        ruff = add_lesson(store, f"Keep in mind: {RUFF}", "surprise", sources=["r1", "r2"], created=_at(10))
        mypy = add_lesson(store, f"Keep in mind: {MYPY}", "surprise", sources=["m1", "m2"], created=_at(20))
        summary = run(store, passes=["merge"])
    assert summary["passes"]["merge"] == {"themes": 0, "aliased": 0}
    assert sorted(json.dumps(l["sources"]) for l in lessons(store)) == ['["m1", "m2"]', '["r1", "r2"]']
    assert {l["id"] for l in lessons(store)} == {ruff["id"], mypy["id"]}


# --------------------------------------------------------------------------- the rule itself

@pytest.mark.parametrize("a, b, repeat", [
    (RUFF, MYPY, False),
    (STAGING, PRODUCTION, False),
    ("Surprising: npm caches results in /tmp/47", "Surprising: pnpm caches results in /tmp/28", False),
    ("Surprising: npm caches results in /tmp/47", "Surprising: npm caches results in /tmp/117", True),
    ("The staging DB is wiped every Sunday night.", "Staging database gets wiped every Sunday night!", True),
    ("Turns out the cron runs in UTC, not local time.",
     "Surprisingly, the cron jobs run in UTC, not local time.", True),
    ("Huh, pip3 ignores the lock file here.", "Turns out pip ignores the lock file here.", True),
    ("I did not expect the tests to need REDIS_URL", "Turns out the tests need REDIS_URL", True),
])
def test_two_surprises_are_one_said_again_only_when_their_other_words_mean_the_same(a, b, repeat):
    alike = _alike()
    assert say_alike(content_words(a), content_words(b), alike) is repeat
    assert say_alike(content_words(b), content_words(a), alike) is repeat


def test_a_surprises_content_words():
    assert content_words(RUFF) == ("ruff", "ignores", "settings", "pyproject.toml", "repo")
    assert content_words("Surprising: pip3 caches results in /tmp/47") == ("pip", "caches", "results", "tmp")
    assert content_words("") == ()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_words_and_their_differences_read_any_text(a, b):
    words_a, words_b = content_words(a), content_words(b)
    for words in (words_a, words_b):
        assert len(set(words)) == len(words) and all(w == w.lower() and w[:1].isalpha() for w in words)
    said = differing(words_a, words_b)
    assert (said is None) == (set(words_a) <= set(words_b) or set(words_b) <= set(words_a))
    if said is not None:
        assert not set(said[0]) & set(words_b) and not set(said[1]) & set(words_a)
    never = lambda x, y: False  # noqa: E731 — no two different words alike
    assert say_alike(words_a, words_b, never) == say_alike(words_b, words_a, never) == (said is None)
    assert say_alike(words_a, words_a, never)


VOCAB = [RUFF, MYPY, STAGING, PRODUCTION, "The staging DB is wiped every Sunday night.",
         "Turns out ruff ignores the settings in pyproject.toml here.", "Huh, ruff ignores pyproject.toml."]


def _grouped(picks: list[int], vecs: np.ndarray, block: int, alike, monkeypatch: pytest.MonkeyPatch
             ) -> list[list[str]]:
    monkeypatch.setattr(consolidate, "BLOCK", block)
    groups: list[consolidate.Group] = []
    ids = [f"e{i}" for i in range(len(picks))]
    for _ in consolidate.consolidate_kind(
            "surprise", groups, [], np.zeros((0, vecs.shape[1]), np.float32), [], ids, vecs, [""] * len(ids),
            0.5, new_words=[content_words(VOCAB[p]) for p in picks], sayings=consolidate.Sayings(alike)):
        pass
    return [g.members for g in groups]


@settings(max_examples=40, deadline=None)
@given(picks=st.lists(st.integers(0, len(VOCAB) - 1), min_size=2, max_size=30), seed=st.integers(0, 10_000),
       block=st.integers(2, 8))
def test_no_lesson_ever_holds_two_surprises_that_say_other_things_in_any_order_or_block(picks, seed, block):
    alike = _alike()
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 8)) + 0.05 * rng.normal(size=(len(picks), 8))  # all alike as wholes
    vecs = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    with pytest.MonkeyPatch.context() as mp:
        one = _grouped(picks, vecs, 1, alike, mp)
        assert _grouped(picks, vecs, block, alike, mp) == one
    for members in one:
        said = [content_words(VOCAB[picks[int(m[1:])]]) for m in members]
        assert all(say_alike(a, b, alike) for a in said for b in said), [VOCAB[picks[int(m[1:])]] for m in members]
