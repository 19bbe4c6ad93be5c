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
    ep = {"title": "Bash module not found: No module named 'yaml'", "gist": "Bash: python x.py\nNo module named 'yaml'"}
    assert lesson_text.draft("error", [ep]) == \
        "`python x.py` failed here (module not found: No module named 'yaml'); install the module first."
    ep = {"title": "Bash command not found: /bin/bash: line …: rg: command not found", "gist": "Bash: rg -n TODO"}
    assert lesson_text.draft("error", [ep]) == \
        "`rg -n TODO` failed here (command not found); check the tool is installed, or use another."
    ep = {"title": "Bash network error: ERROR tests/t.py::test_ttl - redis.ConnectionError: Error 111",
          "gist": "Bash: uv run pytest -q tests/t.py"}
    assert lesson_text.draft("error", [ep]) == ("`uv run pytest -q tests/t.py` failed here (network error: "
                                                "redis.ConnectionError: Error 111); check that the service it needs is running.")
    ep = {"title": "the deploy broke", "gist": "no structure here"}
    assert lesson_text.draft("error", [ep]).startswith("Avoid repeating this error: the deploy broke")


def test_surprise_text_keeps_the_persons_words():
    assert lesson_text.draft("surprise", [{"gist": "the tests need REDIS_URL"}]) == \
        "Keep in mind: the tests need REDIS_URL."


@given(st.text(max_size=2000))
def test_any_words_give_a_short_single_line_or_nothing(words):
    out = lesson_text.imperative(words)
    assert len(out) <= lesson_text.MAX_CHARS + 2 and "\n" not in out
    assert out == lesson_text.imperative(words)  # deterministic
