"""Lesson text: deterministic, short, imperative, from the person's own words."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from remem.engine import lesson_text


def test_pushback_filler_is_taken_off_and_the_words_kept():
    assert lesson_text.imperative("no, use uv not pip") == "Use uv not pip."
    assert lesson_text.imperative("I said: run the tests first!") == "Run the tests first!"
    assert lesson_text.imperative("you should use ruff format") == "Use ruff format."
    assert lesson_text.imperative("you shouldn't push to main") == "Don't push to main."


def test_a_refused_call_without_words_asks_first():
    ep = {"gist": "refused Bash: rm -rf build", "title": "refused Bash: rm -rf build"}
    assert lesson_text.draft("correction", [ep]) == "Ask before running Bash: rm -rf build."


def test_error_text_names_the_error_and_the_fix_when_one_was_recorded():
    ep = {"title": "Bash module not found: No module named 'yaml'", "gist": "python x.py\nfix: uv add pyyaml"}
    assert lesson_text.draft("error", [ep]) == "On Bash module not found: No module named 'yaml': uv add pyyaml."
    ep = {"title": "Bash module not found: No module named 'yaml'", "gist": "python x.py"}
    assert lesson_text.draft("error", [ep]).startswith("Avoid repeating this error: Bash module not found")


def test_surprise_text_keeps_the_persons_words():
    assert lesson_text.draft("surprise", [{"gist": "the tests need REDIS_URL"}]) == \
        "Keep in mind: the tests need REDIS_URL."


@given(st.text(max_size=2000))
def test_any_words_give_a_short_single_line_or_nothing(words):
    out = lesson_text.imperative(words)
    assert len(out) <= lesson_text.MAX_CHARS + 2 and "\n" not in out
    assert out == lesson_text.imperative(words)  # deterministic
