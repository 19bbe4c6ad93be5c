"""A lesson's keyword evidence is on the episodes' scale: a lesson and an episode holding the
same words get about the same keyword part, however few lessons the store holds and however
common a word is among the lessons compared with the episodes."""

from __future__ import annotations

import pytest

from remem.engine.embed import get_embedder, to_blob
from remem.engine.lessons import add_lesson
from remem.engine.memories import remember
from remem.engine.recall import recall
from remem.engine.store import Store

OTHER_NOTES = [
    "the build failed on the ci runner", "keep commits small and focused",
    "the hook timed out, retry with backoff", "cache the model load lazily",
    "the import is slow at start", "index the query on the orders table",
    "memory leak in the worker pool", "review the pull request before merging",
    "rotate the api keys monthly", "the staging database is read-only on fridays",
    "write the changelog entry", "pin the node version in the toolchain file",
]


pytestmark = pytest.mark.usefixtures("fresh_vector_caches")


def lesson(store: Store, text: str) -> str:
    emb = get_embedder()
    return add_lesson(store, text, "correction", space=emb.space,
                      embedding=to_blob(emb.encode([text])[0]))["id"]


def keyword_parts(store: Store, query: str) -> dict[str, float]:
    return {h["id"]: h["parts"]["keyword"]
            for h in recall(store, query, 200, mode="keyword", touch=False)}


def assert_comparable(lesson_kw: float, episode_kw: float) -> None:
    # The twin episode repeats its first line as its title (weight 0.5) and so is twice as
    # long: the two BM25s differ by a few percent, never by a factor.
    assert episode_kw > 0.1
    assert 0.8 <= lesson_kw / episode_kw <= 1.25, (lesson_kw, episode_kw)


def test_a_lone_lesson_gets_the_keyword_evidence_of_an_episode_with_its_words(store):
    """With one lesson, lessons_fts gives every word an IDF of about 0: the lesson had none."""
    for text in OTHER_NOTES:
        remember(store, text)
    text = "run docker compose up before the integration tests"
    lone = lesson(store, text)
    twin = remember(store, text)["id"]
    for query in ("docker compose", "integration tests", "how do I start docker"):
        parts = keyword_parts(store, query)
        assert_comparable(parts[lone], parts[twin])


def test_a_word_in_half_the_lessons_still_counts(store):
    """A word in half of four lessons had an IDF of about 0 among them, whatever the episodes."""
    for text in OTHER_NOTES:
        remember(store, text)
    tests_lesson = lesson(store, "run the tests with pytest -q")
    lesson(store, "the tests need REDIS_URL set")
    lesson(store, "use uv, not pip")
    lesson(store, "never push to main")
    twin = remember(store, "run the tests with pytest -q")["id"]
    parts = keyword_parts(store, "tests")
    assert_comparable(parts[tests_lesson], parts[twin])


def test_a_word_common_among_episodes_does_not_make_a_lesson_the_best_match(store):
    """A word in a third of the episodes but one lesson of many: by the lessons' own IDF the
    lesson outweighed every episode and took keyword 1.0 from its twin."""
    for i in range(120):
        text = OTHER_NOTES[i % len(OTHER_NOTES)] + f" (note {i})"
        remember(store, f"deploy: {text}" if i % 3 == 0 else text)
    for i in range(30):
        lesson(store, f"lesson {i}: {OTHER_NOTES[(i * 5) % len(OTHER_NOTES)]}")
    text = "deploy with the release script, not by hand"
    deploy_lesson = lesson(store, text)
    twin = remember(store, text)["id"]
    parts = keyword_parts(store, "how do I deploy")
    assert_comparable(parts[deploy_lesson], parts[twin])


def test_stems_and_joined_words_match_a_lesson_as_they_match_an_episode(store):
    """The lesson's words are split and stemmed as FTS5 does it: "installing" finds
    "installed", and get_products is matched as the phrase FTS5 makes of it."""
    for text in OTHER_NOTES:
        remember(store, text)
    text = "`rg -n get_products` failed here (command not found); check the tool is installed"
    rg = lesson(store, text)
    twin = remember(store, text)["id"]
    for query in ("installing tools", "where is get_products used"):
        parts = keyword_parts(store, query)
        assert_comparable(parts[rg], parts[twin])
