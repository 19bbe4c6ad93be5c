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


# Programs whose names are everyday words or a language: they name a program only in a code
# span or at the head of a prompt written as a command.
MAKE = "`make` fails here with 'missing separator': the Mac's make is GNU make 3.81; use `gmake`."
FIND = "`find` on this Mac is BSD find: -printf does not exist; use `gfind`."
OPEN = "`open` hangs in the dev container; print the URL instead."
PYTHON = "`python` is not found on this Mac; call python3."
EVERYDAY = [(MAKE, "error", None), (FIND, "error", None), (OPEN, "error", None), (PYTHON, "error", None)]


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


def command_evidence(store, text: str, event: str = "prompt", command: str | None = None) -> dict[str, float]:
    """Each lesson's program match for this moment, as prime.candidates scores it."""
    from remem.engine import prime

    return {c["text"]: c["command"]
            for c in prime.candidates(store, text, event=event, cwd=PROJECT, command=command)}


@pytest.mark.parametrize("prompt, lesson", [
    ("Make the header sticky on scroll", MAKE),
    ("make the build pass", MAKE),
    ("Python type hints everywhere please", PYTHON),
    ("Find where the config is loaded", FIND),
    ("Open a PR when done", OPEN),
    ("open the file src/config.ts", OPEN),          # a path, but after a sentence's words
])
def test_a_prompt_that_is_a_sentence_does_not_run_its_first_word(store, prompt, lesson):
    seed(store, EVERYDAY)
    assert command_evidence(store, prompt)[lesson] == 0.0, prompt
    if lesson in (MAKE, OPEN):  # its vector alone is far under the bar
        assert lesson not in shown(store, prompt), prompt


@pytest.mark.parametrize("prompt, lesson", [
    ("make -j8 release", MAKE),
    ("CI=1 make test", MAKE),
    ("python manage.py runserver", PYTHON),
    ("find . -name '*.log' -printf '%p'", FIND),
    ("open http://localhost:8080", OPEN),
    ("why does `make` fail here?", MAKE),          # a code span names it anywhere
])
def test_a_prompt_written_as_a_command_runs_its_program_even_an_everyday_word(store, prompt, lesson):
    seed(store, EVERYDAY)
    assert command_evidence(store, prompt)[lesson] == 1.0, prompt
    assert lesson in shown(store, prompt), prompt


def test_before_a_call_that_runs_pytest_through_python_m_the_pytest_error_is_shown(store):
    seed(store, LESSONS)
    command = "python -m pytest -x"  # its vector and keywords alone: 0.64, under the bar
    assert PYTEST_VENV in shown(store, f"Bash {command}", event="pre-tool", command=command)


@pytest.mark.parametrize("command", ["uv run pytest -q", "uv run pytest", "sudo uv run pytest -x"])
def test_a_call_that_runs_an_error_lessons_remedy_is_not_matched_to_it(store, command):
    """"`pytest` fails … outside the venv; run it as `uv run pytest`": the call already follows it."""
    seed(store, LESSONS)
    # Its vector and keywords alone score it about 0.74: whether it is shown is theirs to say.
    evidence = command_evidence(store, f"Bash {command}", event="pre-tool", command=command)
    assert evidence[PYTEST_VENV] == 0.0


PLAYWRIGHT = ("Playwright tests fail with \"browserType.launch: Executable doesn't exist\"; run "
              "`pnpm exec playwright install chromium` once.")
AWS = "aws commands fail with ExpiredToken; run `aws sso login --profile infra` first."
TF_LOCK = ("`terraform apply` fails with 'Error acquiring the state lock'; wait for CI, then "
           "`terraform apply -lock-timeout=5m`.")
RUFF = "`ruff check` fails on CI because the config is in pyproject; run `uv run ruff check .`"


@pytest.mark.parametrize("lesson, command, matched", [
    (PYTEST_VENV, "pytest -q", 1.0),                             # what failed
    (PYTEST_VENV, "python -m pytest -x", 1.0),                   # the same, through another runner
    (PLAYWRIGHT, "pnpm exec playwright test", 1.0),              # the remedy's runner, not its command
    (PLAYWRIGHT, "pnpm exec playwright install chromium", 0.0),
    (AWS, "aws s3 ls", 1.0),
    (AWS, "aws sso login --profile infra", 0.0),                 # the remedy says more than "aws"
    (TF_LOCK, "terraform apply", 1.0),  # a remedy that is the failed command with other flags
    (RUFF, "uv run ruff check src", 0.0),                        # "." is a path like src
])
def test_a_call_is_matched_to_what_failed_not_to_the_remedy(store, lesson, command, matched):
    seed(store, [(lesson, "error", None)])
    evidence = command_evidence(store, f"Bash {command}", event="pre-tool", command=command)
    assert evidence[lesson] == matched, command


def test_a_drafted_fix_lesson_is_about_the_error_not_the_remedy_it_names(store):
    """"On <error>: <fix>" names only its remedy: running it follows the lesson."""
    lesson = "On ModuleNotFoundError: run `uv add requests` and retry."
    seed(store, [(lesson, "error", None)])
    command = "uv add requests"
    assert command_evidence(store, f"Bash {command}", event="pre-tool", command=command)[lesson] == 0.0


@pytest.mark.parametrize("text, kind, about", [
    # An error lesson is about what failed, not the remedy after its ";".
    (PYTEST_VENV, "error", {("pytest",)}),
    ("`npm install` fails on the workspace: dependencies; add packages with `pnpm add`.", "error",
     {("npm", "install")}),
    ("`python` is not found on this Mac; call python3.", "error", {("python",)}),
    ("aws commands fail with ExpiredToken; run `aws sso login` first.", "error", {("aws",)}),
    # A drafted fix lesson names the error, then its remedy: about no command.
    ("On ModuleNotFoundError: run `uv add requests` and retry.", "error", set()),
    # "On <place>:" is no error's name: what follows is what failed.
    ("On macOS: `sed -i` needs an explicit empty suffix.", "error", {("sed",)}),
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
