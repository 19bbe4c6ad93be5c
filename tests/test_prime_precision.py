"""Priming's keyword evidence: a word a prompt shares with a lesson only because the lesson
names a program by it ("`python` is not found …", "`find` on this Mac is BSD find") is no
evidence unless the prompt runs or names that program. The real bundled model, a real store."""

from __future__ import annotations

import pytest

from tests.test_hooks import seed, session_in_arm

PROJECT = "/home/you/code/shop-api"
PYTHON = "`python` is not found on this Mac ('command not found: python'); call python3."
FIND = "`find` on this Mac is BSD find: -printf does not exist; use `gfind`."
KUBECTL = ("`kubectl apply` went to the production cluster because the default context is prod; "
           "always pass --context staging.")
GIT_PUSH = ("`git push` failed with 'Permission denied (publickey)'; load the key with "
            "`ssh-add --apple-use-keychain ~/.ssh/id_ed25519`.")
DOCKER = ("`docker build` needs --platform linux/amd64 on this Mac, or the image fails on the "
          "servers with 'exec format error'.")
COMMITS = "Commit messages: imperative mood, subject under 72 characters, no emoji."
LESSONS = [(PYTHON, "error", None), (FIND, "error", None), (KUBECTL, "error", None),
           (GIT_PUSH, "error", None), (DOCKER, "error", None), (COMMITS, "correction", None)]
# A fix lesson drafted for a missing module: `requests` is the module's name, no program's.
REQUESTS = "On ModuleNotFoundError (`requests`): run `uv add requests`."
# A lesson that says Python as the language, not as a program: the word is its subject.
HINTS = "Use type hints in all Python code; run mypy before handing back."


def shown(store, text: str) -> list[str]:
    from remem import config
    from remem.engine import prime

    got = prime.select(store, text, event="prompt", cwd=PROJECT, session_id=session_in_arm(False),
                       cfg=config.load(), record=False)
    return [lesson["text"] for lesson in got["lessons"]]


def keyword_evidence(store, text: str) -> dict[str, float]:
    """Each lesson's keyword evidence for this prompt, as prime.candidates scores it."""
    from remem.engine import prime

    return {c["text"]: c["keyword"] for c in prime.candidates(store, text, event="prompt", cwd=PROJECT)}


@pytest.mark.parametrize("prompt", [
    "Python type hints everywhere please",
    "how do I reverse a linked list in Python?",
    "write a Python function that parses ISO dates",
    "is this idiomatic Python?",
    "port the Python CLI to Go",
    "Find where the config is loaded",
    "find all the callers of formatPrice",
])
def test_an_everyday_prompt_sharing_only_a_programs_name_with_a_lesson_is_shown_nothing(store, prompt):
    # Each scored 0.65-0.80 against the python or find lesson on that one word (keyword
    # evidence 0.8-1.0: BM25 is normalised to the best hit, here the only one).
    seed(store, LESSONS)
    assert shown(store, prompt) == [], prompt


@pytest.mark.parametrize("prompt", [
    "Python type hints everywhere please",
    "Find where the config is loaded",
])
def test_the_shared_name_alone_is_no_keyword_evidence(store, prompt):
    seed(store, LESSONS)
    evidence = keyword_evidence(store, prompt)
    assert evidence[PYTHON] == 0.0 and evidence[FIND] == 0.0, prompt


@pytest.mark.parametrize("prompt, lesson", [
    ("is `python` on the PATH here?", PYTHON),      # a code span names the program
    ("python manage.py migrate", PYTHON),          # the prompt runs it
    ("find src -type f -name '*.bak'", FIND),
    ("why does python say command not found", PYTHON),  # more words in common than the name
])
def test_a_prompt_that_runs_or_names_the_program_keeps_its_keyword_evidence(store, prompt, lesson):
    seed(store, LESSONS)
    assert keyword_evidence(store, prompt)[lesson] > 0.0, prompt
    assert lesson in shown(store, prompt), prompt


def test_another_subcommand_of_the_lessons_program_keeps_the_shared_name_as_evidence(store):
    """`kubectl rollout` is not the `kubectl apply` the lesson is about (no program match), but
    it is kubectl against the same default context: the name shared is the evidence that
    lifts it (relevance 0.70, 0.57 without it)."""
    seed(store, LESSONS)
    prompt = "kubectl rollout restart deployment/api"
    assert keyword_evidence(store, prompt)[KUBECTL] > 0.0
    assert KUBECTL in shown(store, prompt)


def test_a_lesson_that_uses_the_word_as_its_subject_keeps_the_keyword_evidence(store):
    seed(store, LESSONS + [(HINTS, "correction", None)])
    prompt = "Python type hints everywhere please"
    evidence = keyword_evidence(store, prompt)
    assert evidence[HINTS] > 0.0 and evidence[PYTHON] == 0.0
    assert shown(store, prompt) == [HINTS]


@pytest.mark.parametrize("prompt", ["why can't I import requests", "requests is missing again"])
def test_a_module_a_fix_lesson_names_as_missing_keeps_its_name_as_keyword_evidence(store, prompt):
    """The module quoted as missing was counted as a program's name the prompt does not run,
    so the lesson's one word in common with the prompt was dropped and it was shown nothing
    (0.70 and 0.78 with the word)."""
    from remem.engine import prime

    seed(store, LESSONS + [(REQUESTS, "error", None)])
    assert keyword_evidence(store, prompt)[REQUESTS] > 0.0, prompt
    assert REQUESTS in shown(store, prompt), prompt
    preview = prime.preview(store, "/tmp", prompt, agent="test")
    assert [lesson["text"] for lesson in preview["lessons"]] == [REQUESTS], prompt
