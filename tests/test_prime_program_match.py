"""The program match: a lesson about a program gets the command evidence when the prompt runs
or names that program, not only before a shell call. The real bundled model, a real store."""

from __future__ import annotations

import pytest

from tests.test_hooks import seed, session_in_arm

PROJECT = "/home/you/code/shop-api"
UV = "We use uv here, never pip (uv add / uv sync)"
KUBECTL = ("`kubectl apply` went to the production cluster because the default context is prod; "
           "always pass --context staging.")
GIT_PUSH = "`git push` failed with 'Permission denied (publickey)'; load the key with ssh-add."
PNPM = "Use pnpm, not npm, in this repo; npm rewrites the lockfile."
PYTEST_VENV = ("`pytest` fails with \"ModuleNotFoundError: No module named 'billing'\" outside the venv; "
               "run it as `uv run pytest`.")
LESSONS = [(UV, "correction", PROJECT), (KUBECTL, "error", None), (GIT_PUSH, "error", None),
           (PNPM, "correction", PROJECT), (PYTEST_VENV, "error", None)]


def shown(store, text: str, event: str = "prompt", command: str | None = None) -> list[str]:
    from remem import config
    from remem.engine import prime

    got = prime.select(store, text, event=event, cwd=PROJECT, session_id=session_in_arm(False),
                       cfg=config.load(), record=False, command=command)
    return [lesson["text"] for lesson in got["lessons"]]


@pytest.mark.parametrize("prompt", [
    "pip install requests",                   # the prompt is the command
    "sudo pip install requests",              # through a runner
    "use pip to add httpx",                   # the tool named as a word
    "why does `pip install httpx` hang?",     # a code span
])
def test_a_prompt_that_runs_or_names_pip_is_shown_the_lesson_against_pip(store, prompt):
    # Its vector alone puts "pip install requests" at 0.43 from this lesson, under the 0.65 bar.
    seed(store, LESSONS)
    assert UV in shown(store, prompt), prompt


@pytest.mark.parametrize("prompt", [
    "cargo build --release",      # a program no lesson concerns
    "tmux new -s work",
    "gh pr create --fill",
    "git status",                 # git, but not the `git push` the lesson is about
    "git log --oneline",
])
def test_a_prompt_naming_a_program_no_lesson_concerns_is_shown_nothing(store, prompt):
    seed(store, LESSONS)
    assert shown(store, prompt) == [], prompt


def test_a_lesson_that_recommends_a_program_is_not_about_it(store):
    """"Use pnpm, not npm" bears on running npm; someone already running pnpm follows it."""
    from remem.engine import prime

    seed(store, LESSONS)
    scored = {c["text"]: c for c in prime.candidates(store, "pnpm dev", event="prompt", cwd=PROJECT)}
    assert scored[PNPM]["command"] == 0.0
    scored = {c["text"]: c for c in prime.candidates(store, "npm install zod", event="prompt", cwd=PROJECT)}
    assert scored[PNPM]["command"] == 1.0


def test_before_a_call_that_runs_pytest_through_python_m_the_pytest_error_is_shown(store):
    seed(store, LESSONS)
    command = "python -m pytest -x"  # its vector and keywords alone: 0.64, under the bar
    assert PYTEST_VENV in shown(store, f"Bash {command}", event="pre-tool", command=command)


@pytest.mark.parametrize("text, kind, about", [
    # An error lesson is about what failed, not the remedy after its ";".
    (PYTEST_VENV, "error", {("pytest",)}),
    ("`npm install` fails on the workspace: dependencies; add packages with `pnpm add`.", "error",
     {("npm", "install")}),
    ("`python` is not found on this Mac; call python3.", "error", {("python",)}),
    ("aws commands fail with ExpiredToken; run `aws sso login` first.", "error", {("aws",)}),
    # Any other lesson is about what it rejects, when it rejects one; else all it names.
    (UV, "correction", {("pip",)}),
    (PNPM, "correction", {("npm",)}),
    ("Always run `terraform plan` before any `terraform apply`.", "correction",
     {("terraform", "plan"), ("terraform", "apply")}),
    ("Run the tests with `uv run pytest -n auto`.", "correction", {("uv", "run", "pytest"), ("pytest",)}),
    # Words that are everyday English or a language name a program only in a code span.
    ("Make sure the Python code has type hints.", "correction", set()),
])
def test_what_a_lesson_is_about(text, kind, about):
    from remem.engine.programs import lesson_commands

    assert set(lesson_commands(text, kind)) == about
