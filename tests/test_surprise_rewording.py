"""A stated surprise said again in other words is a repeat, and becomes a lesson.

Reading every word two surprises do not share as a fact of its own (so that "ruff ignores …"
and "mypy ignores …" stay two) kept any rewording apart: "the integration tests hang unless
Docker is running" and "… hang when Docker is not running", "shared between branches" and
"shared across branches", "the settings" and "the config" each waited for a repeat that never
came. Names on both sides (programs, environments, files) and statements about other things
still keep two facts apart (tests/test_consolidate_surprises.py).

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the real sleep.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from remem.engine import clock
from remem.engine.consolidate import content_words, is_name, said_again, say_alike
from remem.engine.lessons import add_lesson
from remem.engine.lessons_pass import waiting
from remem.engine.programs import KNOWN_PROGRAMS
from tests.test_consolidate_surprises import _alike, _surprise
from tests.test_sleep import _at, lessons, run

REWORDED = [
    ("Turns out the integration tests hang unless Docker is running.",
     "Interestingly, the integration tests hang when Docker is not running."),
    ("Turns out the build cache is shared between branches.",
     "Surprisingly, the build cache is shared across branches."),
    ("Turns out ruff ignores the settings in pyproject.toml.",
     "Surprisingly ruff ignores the config in pyproject.toml."),
]
# "Turns out the API returns dates as strings, not datetime objects." and "Surprisingly the API
# gives back dates as plain strings rather than datetimes." were read as one too, but only by
# letting a word on each side meet none of the other's ("returns" and "gives", "objects" and
# "plain"), which also made one of "the tests hang …" and "the tests pass …": they now wait for
# another repeat each (tests/test_detect_review_fixes_2.py).
OTHER_FACTS = [
    ("Huh, ruff ignores the settings in pyproject.toml in this repo.",
     "Huh, mypy ignores the settings in pyproject.toml in this repo."),
    ("The staging database is wiped every Sunday night.",
     "The production database is backed up every Sunday night."),
    ("Turns out the integration tests hang unless Docker is running.",
     "Turns out the unit tests hang unless Docker is running."),
    ("Turns out the integration tests hang unless Docker is running.",
     "Turns out the integration tests hang unless Podman is running."),
    ("Turns out ruff reads the settings in pyproject.toml.", "Turns out ruff reads the settings in setup.cfg."),
    ("Turns out the tests need REDIS_URL.", "Turns out the tests need DATABASE_URL."),
    ("Turns out docker hangs.", "Turns out docker crashes."),
]


@pytest.mark.parametrize("a, b", REWORDED)
def test_a_surprise_said_again_in_other_words_is_one(a, b):
    alike = _alike()
    assert said_again(content_words(a), content_words(b), alike)
    assert said_again(content_words(b), content_words(a), alike)


@pytest.mark.parametrize("a, b", OTHER_FACTS)
def test_surprises_about_other_things_stay_two(a, b):
    alike = _alike()
    assert not said_again(content_words(a), content_words(b), alike)
    assert not said_again(content_words(b), content_words(a), alike)


def test_each_rewording_makes_a_lesson_of_two_and_other_facts_wait(store):
    said = [(f"r{n}{side}", text) for n, pair in enumerate(REWORDED) for side, text in zip("ab", pair)]
    said += [("x1", OTHER_FACTS[1][0]), ("x2", OTHER_FACTS[1][1]), ("x3", OTHER_FACTS[2][1]),
             ("x4", OTHER_FACTS[3][1])]
    with clock.frozen(_at(100)):
        store.put_episodes([_surprise(i, text, hours) for hours, (i, text) in enumerate(said, start=1)])
        run(store)
    made = sorted(l["sources"] for l in lessons(store))
    assert made == [[f"r{n}a", f"r{n}b"] for n in range(len(REWORDED))], made
    # staging, production, the unit tests and Podman: each another fact, still once
    assert waiting(store)["surprises"] == 4


def test_the_merge_pass_merges_two_lessons_of_one_surprise_in_other_words(store):
    settings_said, config_said = REWORDED[2]
    with clock.frozen(_at(100)):
        store.put_episodes([_surprise("s1", settings_said, 1), _surprise("s2", f"Huh, {settings_said[10:]}", 2),
                            _surprise("c1", config_said, 3), _surprise("c2", f"Oddly, {config_said[13:]}", 4)])
        add_lesson(store, f"Keep in mind: {settings_said}", "surprise", sources=["s1", "s2"], created=_at(10))
        add_lesson(store, f"Keep in mind: {config_said}", "surprise", sources=["c1", "c2"], created=_at(20))
        summary = run(store, passes=["merge"])
    assert summary["passes"]["merge"] == {"themes": 1, "aliased": 1}
    [theme] = [l for l in lessons(store) if l["status"] == "active"]
    assert sorted(theme["sources"]) == ["c1", "c2", "s1", "s2"]


# --------------------------------------------------------------------------- the rule's properties

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9)
_PROGRAMS = sorted(KNOWN_PROGRAMS - {"sudo"})


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=160), st.text(max_size=160))
def test_said_again_is_symmetric_and_takes_whatever_says_all_the_other_says(a, b):
    never = lambda x, y: False  # noqa: E731 — no two different words alike
    words_a, words_b = content_words(a), content_words(b)
    assert said_again(words_a, words_b, never) == said_again(words_b, words_a, never)
    if say_alike(words_a, words_b, never):
        assert said_again(words_a, words_b, never)
    assert said_again(words_a, words_a, never)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORD, min_size=1, max_size=8), one=st.sampled_from(_PROGRAMS),
       other=st.sampled_from(_PROGRAMS), lead=st.sampled_from(["Turns out", "Huh,", "Surprisingly", ""]))
def test_another_program_in_the_same_words_is_never_the_same_surprise(words, one, other, lead):
    assume(one != other and not {one, other} & set(words))
    a = content_words(f"{lead} {one} {' '.join(words)}")
    b = content_words(f"{lead} {other} {' '.join(words)}")
    assume(one in a and other in b)  # not read as glue
    never = lambda x, y: False  # noqa: E731
    assert not said_again(a, b, never) and not said_again(b, a, never)
    assert is_name(one) and is_name(other)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORD, min_size=3, max_size=8, unique=True), at=st.integers(1, 7),
       frame=st.sampled_from([("between", "across"), ("unless", "not"), ("not", "rather"), ("over", "through")]))
def test_a_preposition_or_a_turn_said_otherwise_is_the_same_surprise(words, at, frame):
    assume(not set(frame) & set(words))
    at = min(at, len(words))
    a = content_words(" ".join([*words[:at], frame[0], *words[at:]]))
    b = content_words(" ".join([*words[:at], frame[1], *words[at:]]))
    assume(frame[0] in a and frame[1] in b)
    never = lambda x, y: False  # noqa: E731
    assert said_again(a, b, never) and said_again(b, a, never)
