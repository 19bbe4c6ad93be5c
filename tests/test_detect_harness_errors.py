"""What Claude Code's harness says about the agent's own calls is no error, and the go after an
approved plan is no correction: real transcripts, ingested into a real store and slept on.

- "Claude requested permissions to write to …, but you haven't granted it yet." is the person
  not granting that action: a refusal, never a permission error ("check the permissions first").
- `<tool_use_error>` answers about a call that broke the harness's own rules ("File has not
  been read yet", "InputValidationError") carry their own fix and the agent follows it at the
  next call: no error, no lesson. A fact about the project answered the same way ("File does
  not exist.") and real failures are still errors.
- Words after an interrupt that follows an approved plan (ExitPlanMode) start the plan's task:
  no correction. A plain instruction after an interrupt of real work, or pushback after the
  plan, still is one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from remem import paths
from remem.engine import clock, ingest, sleep
from remem.engine.detect import detect_all
from remem.engine.transcripts import parse_lines

CWD = "/home/dev/app"
DAY_ONE = "11111111-1111-4111-8111-111111111111"
DAY_TWO = "22222222-2222-4222-8222-222222222222"
AFTER = "2026-03-03T09:00:00.000000+00:00"  # when the sleep runs: a day after the second session

NOT_GRANTED = f"Claude requested permissions to write to {CWD}/CLAUDE.md, but you haven't granted it yet."
NOT_READ = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
NO_PROMPT = ("<tool_use_error>InputValidationError: Task failed due to the following issue:\n"
             "The required parameter `prompt` is missing</tool_use_error>")
NO_FILE = "<tool_use_error>File does not exist.</tool_use_error>"
DENIED = "Exit code 1\ncp: cannot create regular file '/etc/app.conf': Permission denied"
PLAN_APPROVED = "User has approved exiting plan mode. You can now proceed."

# The steps of a conversation: ("say", words), ("call", tool, input, result, is_error),
# ("interrupt", marker). The first step is the person's prompt.
Step = tuple[Any, ...]


def _transcript(sid: str, day: int, steps: list[Step]) -> str:
    """A Claude Code transcript of the steps, one record a line, as Claude Code writes it."""
    records: list[str] = []
    at = f"2026-03-0{day}T10:00:00.000Z"

    def add(kind: str, message: dict) -> None:
        records.append(json.dumps({"type": kind, "sessionId": sid, "uuid": f"{sid[:4]}-{len(records)}",
                                   "timestamp": at, "cwd": CWD, "message": message}))

    for n, step in enumerate(steps):
        if step[0] == "say":
            add("user", {"role": "user", "content": step[1]})
        elif step[0] == "interrupt":
            add("user", {"role": "user", "content": [{"type": "text", "text": step[1]}]})
        else:
            _, tool, tool_input, result, is_error = step
            add("assistant", {"id": f"m{n}", "role": "assistant", "model": "claude-x", "content": [
                {"type": "tool_use", "id": f"toolu_{n}", "name": tool, "input": tool_input}]})
            add("user", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{n}", "is_error": is_error, "content": result}]})
    return "\n".join(records) + "\n"


@pytest.fixture
def twice(home) -> Callable[..., dict[str, Any]]:
    """The same conversation on two days (seen twice, as a lesson needs), ingested, slept on;
    returns the store's error and correction episodes and its lessons."""
    folder = paths.claude_projects_dir() / "-home-dev-app"
    folder.mkdir(parents=True)

    def run(store, steps: list[Step]) -> dict[str, Any]:
        for sid, day in ((DAY_ONE, 1), (DAY_TWO, 2)):
            (folder / f"{sid}.jsonl").write_text(_transcript(sid, day, steps))
        with clock.frozen(AFTER):
            ingest.ingest_paths(store)
            sleep.run_sleep_collect(store)
        episodes = store.rows("SELECT kind, title, gist FROM episodes WHERE kind IN ('error', 'correction') "
                              "ORDER BY seq")
        return {"errors": [e["title"] for e in episodes if e["kind"] == "error"],
                "corrections": [e["gist"] for e in episodes if e["kind"] == "correction"],
                "lessons": [(l["kind"], l["text"]) for l in store.rows(
                    "SELECT kind, text FROM lessons ORDER BY created, id")]}
    return run


def _write(path: str = "CLAUDE.md") -> dict[str, str]:
    return {"file_path": f"{CWD}/{path}", "content": "# notes\n"}


# --------------------------------------------------------------------------- permissions not granted

def test_a_permission_not_granted_is_the_person_refusing_not_a_permission_error(store, twice):
    """A Write Claude Code did not run because the person had not granted it, on two days, is
    a refused call: the lesson asks before that action, and no lesson says to check the
    permissions. A command the file system refused is still a permission error."""
    out = twice(store, [
        ("say", "write a CLAUDE.md for this project"),
        ("call", "Write", _write(), NOT_GRANTED, True),
        ("call", "Bash", {"command": "cp app.conf /etc/app.conf"}, DENIED, True),
    ])
    assert out["errors"] == ["Bash permission denied: cp: cannot create regular file '/etc/app.conf': "
                             "Permission denied"] * 2
    assert out["corrections"] == [f"refused Write: {CWD}/CLAUDE.md"] * 2
    kinds = sorted(kind for kind, _ in out["lessons"])
    assert kinds == ["correction", "error"]
    refusal = next(text for kind, text in out["lessons"] if kind == "correction")
    assert refusal.startswith("Ask before") and "CLAUDE.md" in refusal and "the person refused it" in refusal
    error = next(text for kind, text in out["lessons"] if kind == "error")
    assert error.startswith("`cp app.conf /etc/app.conf` failed here") and "check the permissions" in error
    assert not any("haven't granted" in text or "requested permissions" in text for _, text in out["lessons"])


def test_a_permission_not_granted_is_refused_by_any_claude_code_tool():
    """Claude Code words it per tool ("to use Bash"); each is a refused call, never an error."""
    text = _transcript(DAY_ONE, 1, [
        ("say", "run the migrations"),
        ("call", "Bash", {"command": "mix ecto.migrate"},
         "Claude requested permissions to use Bash, but you haven't granted it yet.", True),
    ])
    found = detect_all(parse_lines(text.splitlines(keepends=True)))
    assert found["error"] == []
    assert [f.title for f in found["correction"]] == ["refused Bash: mix ecto.migrate"]


# --------------------------------------------------------------------------- the harness's own rules

def test_the_harness_telling_the_agent_how_its_call_broke_a_rule_is_no_error(store, twice):
    """An Edit before a Read and a Task call missing its prompt, each answered by the harness
    with the fix the agent then follows, on two days: no error episode and no lesson ("`Edit`
    failed here (File has not been read yet…); find out why before running it again")."""
    out = twice(store, [
        ("say", "add a usage section to the README"),
        ("call", "Task", {"description": "survey the docs"}, NO_PROMPT, True),
        ("call", "Task", {"description": "survey the docs", "prompt": "list the docs"}, "docs/ has 3 pages", False),
        ("call", "Edit", {"file_path": f"{CWD}/README.md", "old_string": "a", "new_string": "b"}, NOT_READ, True),
        ("call", "Read", {"file_path": f"{CWD}/README.md"}, "     1\t# app", False),
        ("call", "Edit", {"file_path": f"{CWD}/README.md", "old_string": "a", "new_string": "b"},
         f"The file {CWD}/README.md has been updated.", False),
    ])
    assert out["errors"] == []
    assert out["lessons"] == []


def test_real_failures_beside_the_harness_rules_are_still_errors_and_lessons(store, twice):
    """A file that is not there (answered by the harness too) and a failing build, beside an
    Edit before a Read: the two real failures are errors, and seen twice each is a lesson."""
    out = twice(store, [
        ("say", "fix the build"),
        ("call", "Edit", {"file_path": f"{CWD}/app.py", "old_string": "a", "new_string": "b"}, NOT_READ, True),
        ("call", "Read", {"file_path": f"{CWD}/src/vat.py"}, NO_FILE, True),
        ("call", "Bash", {"command": "npm run build"},
         "Exit code 1\nnpm ERR! code ELIFECYCLE\nnpm ERR! Failed at the app@1.0.0 build script.", True),
    ])
    assert sorted(set(out["errors"])) == ["Bash failed: npm ERR! code ELIFECYCLE", "Read file not found: File does not exist."]
    assert len(out["errors"]) == 4
    texts = sorted(text for kind, text in out["lessons"] if kind == "error")
    assert len(texts) == 2
    assert texts[0].startswith("`Read` failed here") and texts[1].startswith("`npm run build` failed here")
    assert not any("has not been read" in text for text in texts)


def test_the_same_words_from_a_tool_that_ran_are_still_an_error():
    """The harness's wording is read only from the harness's own answer (inside
    <tool_use_error>): a script that raises its own InputValidationError failed for real."""
    script = ("Exit code 1\nTraceback (most recent call last):\n  File \"load.py\", line 3\n"
              "InputValidationError: the required parameter `prompt` is missing")
    steps: list[Step] = [("say", "load the fixtures"),
                         ("call", "Bash", {"command": "python load.py"}, script, True),
                         ("call", "Task", {"description": "x"}, NO_PROMPT.replace("<tool_use_error>", "")
                          .replace("</tool_use_error>", ""), True)]
    found = detect_all(parse_lines(_transcript(DAY_ONE, 1, steps).splitlines(keepends=True)))
    assert [f.extra["tool"] for f in found["error"]] == ["Bash", "Task"]


# --------------------------------------------------------------------------- after an approved plan

PLAN = [
    ("say", "plan the quality tooling, then we create the beads"),
    ("call", "Write", _write("plan.md"), f"File created successfully at: {CWD}/plan.md", False),
    ("call", "ExitPlanMode", {}, PLAN_APPROVED, False),
    ("interrupt", "[Request interrupted by user]"),
]


def test_the_go_after_an_approved_plan_is_no_correction(store, twice):
    """The person approves the plan, Claude Code stops the turn, and they say what to do next:
    on two days that made the lesson "Create the beads.", which only restates the next task."""
    out = twice(store, PLAN + [
        ("say", "create the beads"),
        ("call", "Bash", {"command": "bd create --title=Quality"}, "Created issue: app-1", False),
    ])
    assert out["corrections"] == []
    assert out["lessons"] == []


def test_pushback_after_an_approved_plan_is_still_a_correction(store, twice):
    """Approved, then turned away from it in words ("no, …", "use X not Y"): a correction at
    once, and a lesson."""
    out = twice(store, PLAN + [("say", "no, use pnpm not npm for the new tasks")])
    assert out["corrections"] == ["no, use pnpm not npm for the new tasks"] * 2
    assert [kind for kind, _ in out["lessons"]] == ["correction"]


def test_a_plain_instruction_after_interrupting_work_is_still_learned_when_it_comes_again(store, twice):
    """The interrupt stopped a command the agent was running (not an approved plan): the plain
    instruction that follows may redirect it, and seen twice it is a lesson."""
    out = twice(store, [
        ("say", "set up the project"),
        ("call", "Bash", {"command": "npm install"}, "added 12 packages", False),
        ("interrupt", "[Request interrupted by user for tool use]"),
        ("say", "use pnpm for installs here"),
    ])
    assert out["corrections"] == ["use pnpm for installs here"] * 2
    assert [kind for kind, _ in out["lessons"]] == ["correction"]


def test_a_plan_the_person_did_not_approve_is_not_the_go():
    """The plan's exit refused, or answered with an error: what the person says next is read
    as after any refusal or interrupt, not passed over as the go."""
    for result, is_error in (("The user doesn't want to proceed with this tool use. The tool use was rejected.", True),
                             ("Error: plan mode is not active", True)):
        steps: list[Step] = PLAN[:2] + [("call", "ExitPlanMode", {}, result, is_error),
                                         ("interrupt", "[Request interrupted by user for tool use]"),
                                         ("say", "split the epic into two tasks")]
        found = detect_all(parse_lines(_transcript(DAY_ONE, 1, steps).splitlines(keepends=True)))
        assert "split the epic into two tasks" in [f.text for f in found["correction"]], result
