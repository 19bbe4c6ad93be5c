"""Corrections about programs, as consolidation keeps them apart or together: the same advice
with a program named in passing, or another alternative named, makes one lesson; corrections
preferring different programs never do, whatever order they came in. The lessons, merge and
verify passes keep one rule (consolidate.same_programs of `topic_of`).

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the real sleep.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import clock, consolidate
from remem.engine.consolidate import BARE, same_programs, topic_of
from tests.test_sleep import _at, episode, lessons, run

SHOP = "/home/dev/shop"


def _learned(store) -> list[tuple[int, list[str]]]:
    return sorted((l["seen"], l["sources"]) for l in lessons(store) if l["status"] == "active")


def _said(store, texts: list[str]) -> list[tuple[int, list[str]]]:
    with clock.frozen(_at(48)):
        store.put_episodes([episode(f"c{n}", "correction", text, hours=n, cwd=SHOP) for n, text in enumerate(texts)])
        run(store)
    return _learned(store)


# Said after the corrections that belong together: alike in words, about other programs.
APART = ["use black for formatting python code", "use ruff for linting python code",
         "for the backend part, always invoke uv with the verbose flag #1",
         "for the backend part, always invoke fd with the verbose flag #2"]


@pytest.mark.parametrize("texts", list(itertools.permutations(
    ["Don't put emojis in commit messages.", "Don't put emojis in git commit messages."])))
def test_a_program_named_in_passing_keeps_one_correction_one_lesson(store, texts):
    """`git` named in passing ("git commit messages") split the same advice into two lessons,
    seen once each. A program named as a whole, or preferred, still keeps a correction from
    one naming none (`black` is no known tool, `fd` neither)."""
    assert _said(store, [*texts, *APART]) == [(1, ["c2"]), (1, ["c3"]), (1, ["c4"]), (1, ["c5"]),
                                              (2, ["c0", "c1"])]


@pytest.mark.parametrize("texts", list(itertools.permutations(
    ["Write git commit messages in the imperative mood.", "Write commit messages in the imperative mood.",
     "Write svn commit messages in the imperative mood."])))
def test_advice_naming_no_program_never_joins_programs_named_in_passing_to_each_other(store, texts):
    """"commit messages" joins "git commit messages" or "svn commit messages", never both: a
    lesson's programs named in passing add up, so git's and svn's stay apart in any order (a
    correction naming none once made a lesson about none, which then took the other)."""
    learned = _said(store, list(texts))
    assert sorted(seen for seen, _ in learned) == [1, 2], learned
    sources = {tuple(sorted(s)) for _, s in learned}
    words = dict(zip([f"c{n}" for n in range(3)], texts))
    for group in sources:
        named = {w for c in group for w in ("git", "svn") if f"{w} " in words[c]}
        assert len(named) <= 1, (group, named)


@pytest.mark.parametrize("texts", list(itertools.permutations(
    ["Use pnpm, not yarn.", "use pnpm", "Use pnpm, not npm."])))
def test_corrections_preferring_the_same_program_make_one_lesson_in_any_order(store, texts):
    """"Use pnpm, not yarn." and "Use pnpm, not npm." both prefer pnpm: one lesson, whichever came
    first (a lesson's programs grew as corrections joined it, so the order decided). Those
    preferring another program stay apart: yarn, and `black` from ruff."""
    said = [*texts, "Use yarn, not npm.", "use ruff for linting python code", "use `black` for linting python code"]
    assert _said(store, said) == [(1, ["c3"]), (1, ["c4"]), (1, ["c5"]), (3, ["c0", "c1", "c2"])]


def test_a_correction_preferring_the_same_program_confirms_a_lessons_prediction(store):
    """verify keeps the rule the lessons pass keeps: "Use pnpm, not yarn." confirms "Use pnpm,
    not npm.", "Use yarn, not npm." does not (tests/test_nightly_backup_and_verify.py)."""
    with clock.frozen(_at(24)):
        store.put_episodes([episode("c1", "correction", "Use pnpm, not npm.", hours=1, cwd=SHOP)])
        run(store)
        [pnpm] = store.rows("SELECT id FROM lessons WHERE status = 'active'")
        clock.advance(days=1)
        store.put_episodes([episode("c2", "correction", "Use pnpm, not yarn.", hours=25, cwd=SHOP)])
        again = run(store)
    [confirmed] = again["events"]["confirmed"]
    assert store.one("SELECT lesson_id, evidence FROM predictions WHERE id = ?", (confirmed,)) == \
        {"lesson_id": pnpm["id"], "evidence": "c2"}


# --------------------------------------------------------------------------- the rule itself

SAID = ["", "Use pnpm, not npm.", "Use pnpm, not yarn.", "use pnpm", "Use yarn, not npm.",
        "use ruff for linting", "use `black` for linting", "never use npm here",
        "Don't put emojis in git commit messages.", "run `npm run build` before pushing",
        "always invoke uv with the verbose flag", "no emojis in commit messages"]
TOPICS = [topic_of(text) for text in SAID]


def test_what_a_correction_is_about():
    assert TOPICS[0] == BARE and TOPICS[-1] == BARE  # corrections naming no program
    assert TOPICS[1].prefers == TOPICS[2].prefers == TOPICS[3].prefers == {"pnpm"}
    assert TOPICS[6].prefers == {"black"}  # a code span names a program no known tool list has
    passing = TOPICS[8], TOPICS[9]  # named only as a way of running it
    assert [(t.names, t.about) for t in passing] == [({"git"}, set()), ({"npm"}, set())]
    assert TOPICS[10].about == {"uv"} and not TOPICS[10].prefers  # named as a whole


def _grouped(topics: list, vecs: np.ndarray, block: int) -> list[tuple[list[int], object]]:
    old, consolidate.BLOCK = consolidate.BLOCK, block
    try:
        groups: list[consolidate.Group] = []
        ids = [str(i) for i in range(len(topics))]
        for _ in consolidate.consolidate_kind("correction", groups, [], np.zeros((0, vecs.shape[1]), np.float32),
                                              [], ids, vecs, [""] * len(ids), 0.5, None, None, [], topics):
            pass
    finally:
        consolidate.BLOCK = old
    return [([int(m) for m in g.members], g.topic) for g in groups]


@settings(max_examples=60, deadline=None)
@given(picks=st.lists(st.integers(0, len(SAID) - 1), min_size=2, max_size=30), seed=st.integers(0, 10_000),
       block=st.integers(1, 8))
def test_a_lesson_never_holds_corrections_preferring_different_programs_in_any_order(picks, seed, block):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 8)) + 0.05 * rng.normal(size=(len(picks), 8))  # all alike
    vecs = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    topics = [TOPICS[p] for p in picks]
    one = _grouped(topics, vecs, 1)
    assert _grouped(topics, vecs, block) == one
    for members, _ in one:
        held = [topics[m] for m in members]
        preferred = {t.prefers for t in held if t.prefers}
        assert len(preferred) <= 1, [SAID[picks[m]] for m in members]
        # Never one about a program together with one naming none.
        assert not (any(t.about for t in held) and any(not t.names for t in held))


def test_the_merge_pass_and_the_lessons_pass_keep_one_rule():
    """Two lessons alike in every word merge exactly when a correction like one joins the
    other's lesson: both ask same_programs (merge_groups once had its own matrix form of it)."""
    same = np.ones((2, 3), dtype=np.float32) / np.sqrt(3)
    for a, b in itertools.product(TOPICS, repeat=2):
        merged = consolidate.merge_groups(same, [1, 1], 0.6, [True, True], topics=[a, b]) == [[0, 1]]
        joined = len(_grouped([a, b], same, 1)) == 1
        assert merged == joined == same_programs(a, b), (a, b)


def test_a_merged_cluster_keeps_the_program_its_first_lesson_prefers():
    """A lesson about npm preferring nothing ("never use npm here") merges with pnpm's; the
    cluster then prefers pnpm, so "Use yarn, not npm." stays apart."""
    same = np.ones((3, 3), dtype=np.float32) / np.sqrt(3)
    never_npm, pnpm, yarn = (topic_of(t) for t in ("never use npm here", "Use pnpm, not npm.", "Use yarn, not npm."))
    assert consolidate.merge_groups(same, [1, 1, 1], 0.6, [True] * 3, topics=[never_npm, pnpm, yarn]) == [[0, 1]]
    assert consolidate.merge_groups(same, [1, 1, 1], 0.6, [True] * 3, topics=[pnpm, yarn, never_npm]) == [[0, 2]]
