"""Which errors become a lesson together: only errors of one class where the same thing failed
(the same command; for a missing module or command, the same one missing), and never a
command whose exit status 1 only answered no (grep found nothing, diff found a difference).

Real store in a tmp REMEM_HOME (conftest), the real model; Claude Code transcripts written
here are read by the real ingest, then the real sleep runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from remem import paths
from remem.engine import clock, ingest, lesson_text, sleep
from remem.engine.lessons_pass import _error_lesson_klass, _klass

CWD = "/home/dev/app"
DAY_ONE = "11111111-1111-4111-8111-111111111111"
DAY_TWO = "22222222-2222-4222-8222-222222222222"
AFTER = "2026-03-03T09:00:00.000000+00:00"  # when the sleep runs: a day after the second session

NPM_BUILD = ("npm run build", "Exit code 1\nnpm ERR! code ELIFECYCLE\nnpm ERR! Failed at the app@1.0.0 build script.")
RUFF = ("ruff check .", "Exit code 1\nsrc/app.py:3:1: F401 `os` imported but unused\nFound 1 error.")
# Exit status 1 as an answer: each is "is_error" in the transcript.
ANSWERS_NO = [
    ('grep -rn "parse_config" src/', "Exit code 1"),
    ("rg -n parse_config", "Exit code 1"),
    ("diff tests/a.json tests/b.json", 'Exit code 1\n3c3\n<   "id": 1\n---\n>   "id": 2'),
    ("cmp -s tests/a.json tests/b.json", "Exit code 1"),
    ("git diff --quiet", "Exit code 1"),
    ("test -f .env", "Exit code 1"),
    ("[ -f config.toml ]", "Exit code 1"),
    ("cd src && grep -c TODO main.py", "Exit code 1\n0"),
]


def _session(sid: str, day: int, calls: list[tuple[str, str]]) -> str:
    """A Claude Code transcript: a prompt, then each Bash call failing with its output."""
    records = []
    at = f"2026-03-0{day}T10:00:00.000Z"

    def add(kind: str, message: dict) -> None:
        records.append(json.dumps({"type": kind, "sessionId": sid, "uuid": f"{sid[:4]}-{len(records)}",
                                   "timestamp": at, "cwd": CWD, "message": message}))

    add("user", {"role": "user", "content": "check the project"})
    for n, (command, output) in enumerate(calls):
        add("assistant", {"id": f"m{n}", "role": "assistant", "model": "claude-x", "content": [
            {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": command}}]})
        add("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "is_error": True, "content": output}]})
    return "\n".join(records) + "\n"


@pytest.fixture
def sessions(home) -> Callable[..., dict[str, Any]]:
    """Write the two days' sessions, ingest them, sleep; returns the store's errors and lessons."""
    folder = paths.claude_projects_dir() / "-home-dev-app"
    folder.mkdir(parents=True)

    def run(store, day_one: list[tuple[str, str]], day_two: list[tuple[str, str]]) -> dict:
        for sid, day, calls in ((DAY_ONE, 1, day_one), (DAY_TWO, 2, day_two)):
            (folder / f"{sid}.jsonl").write_text(_session(sid, day, calls))
        with clock.frozen(AFTER):
            ingest.ingest_paths(store)
            summary = sleep.run_sleep_collect(store)
        return {"errors": [r["title"] for r in store.rows(
                    "SELECT title FROM episodes WHERE kind = 'error' ORDER BY seq")],
                "lessons": store.rows("SELECT kind, seen, text FROM lessons ORDER BY created, id"),
                "waiting": summary.get("waiting") or {}}
    return run


def test_a_command_that_only_answered_no_is_no_error_and_teaches_nothing(store, sessions):
    """Two sessions each searched with no match, compared files that differ and tested for a
    missing file: nothing failed, so there is no error and no lesson (not "`grep -rn …`
    failed here; find out why")."""
    out = sessions(store, ANSWERS_NO, ANSWERS_NO)
    assert out["errors"] == []
    assert out["lessons"] == []


def test_the_same_commands_failing_for_real_still_make_a_lesson(store, sessions):
    """grep's status 2 (a file that is not there) is trouble: it is an error, and seen in both
    sessions it is a lesson."""
    failing = [('grep -rn "parse_config" srcs/', "Exit code 2\ngrep: srcs/: No such file or directory")]
    out = sessions(store, failing, failing)
    assert out["errors"] == ["Bash file not found: grep: srcs/: No such file or directory"] * 2
    assert [(l["kind"], l["seen"]) for l in out["lessons"]] == [("error", 2)]


def test_two_unrelated_failures_in_two_sessions_make_no_lesson(store, sessions):
    """A failed build one day and a lint finding the next share only the wording every error
    output has ("Bash failed: …"): each waits for a second sighting of itself."""
    out = sessions(store, [NPM_BUILD], [RUFF])
    assert len(out["errors"]) == 2
    assert out["lessons"] == []
    assert out["waiting"]["errors"] == 2


def test_the_same_failure_in_two_sessions_is_one_lesson(store, sessions):
    out = sessions(store, [NPM_BUILD, RUFF], [RUFF, NPM_BUILD])
    assert sorted((l["seen"], l["text"].split("`")[1]) for l in out["lessons"]) == [
        (2, "npm run build"), (2, "ruff check .")]


def test_a_missing_module_is_one_error_whatever_command_met_it(store, sessions):
    """`python app.py` and `pytest` both missing `requests` are one lesson; a different module
    missing for the same command is not that lesson."""
    requests = "Exit code 1\nModuleNotFoundError: No module named 'requests'"
    out = sessions(store, [("python app.py", requests), ("python app.py", requests.replace("requests", "yaml"))],
                   [("pytest -q", requests)])
    assert [l["seen"] for l in out["lessons"]] == [2]
    assert "requests" in out["lessons"][0]["text"]
    assert out["waiting"]["errors"] == 1  # yaml


@pytest.mark.parametrize("title, head", [
    ("Bash failed: npm ERR! code ELIFECYCLE", "Bash: npm run build\nnpm ERR! code ELIFECYCLE"),
    ("Bash tests failed: FAILED tests/test_api.py::test_login", "Bash: pytest -q\nFAILED tests/test_api.py::test_login"),
    ("Bash command not found: zsh: command not found: fd", "Bash: fd . src\nzsh: command not found: fd"),
    ("Bash module not found: ModuleNotFoundError: No module named 'yaml'",
     "Bash: python app.py\nModuleNotFoundError: No module named 'yaml'"),
])
def test_an_error_lessons_words_give_back_the_class_its_sources_had(title, head):
    """An error lesson whose sources the lifecycle deleted stands in with the class read from
    its words: the one its sources had, so the same failure again joins it (and a veto on it
    holds) rather than making a second lesson beside it."""
    row = {"kind": "error", "title": title, "head": head, "tool": "bash", "eclass": None}
    words = lesson_text.draft("error", [{"title": title, "gist": head}])
    assert _error_lesson_klass({"text": words}) == _klass(row)
    assert _error_lesson_klass({"text": "Reworded by a person.", "draft": words}) == _klass(row)


def test_a_failure_again_joins_its_vetoed_lesson_whose_sources_are_gone_and_another_does_not(store, sessions):
    from remem.engine.lessons import set_status
    from remem.engine.render_vetoes import record_veto

    sessions(store, [NPM_BUILD], [NPM_BUILD])
    [lesson] = store.rows("SELECT * FROM lessons")
    set_status(store, lesson["id"], "vetoed")
    record_veto(lesson)
    with store.write() as conn:  # the lifecycle deletes faded sources
        conn.execute("DELETE FROM episodes WHERE kind = 'error'")
    folder = paths.claude_projects_dir() / "-home-dev-app"
    third, fourth = "33333333-3333-4333-8333-333333333333", "44444444-4444-4444-8444-444444444444"
    (folder / f"{third}.jsonl").write_text(_session(third, 4, [NPM_BUILD]))
    (folder / f"{fourth}.jsonl").write_text(_session(fourth, 5, [RUFF]))
    with clock.frozen("2026-03-06T09:00:00.000000+00:00"):
        ingest.ingest_paths(store)
        summary = sleep.run_sleep_collect(store)
    assert summary["passes"]["lessons"]["joined"] == 1
    assert summary["passes"]["lessons"]["created"] == 0
    [after] = store.rows("SELECT id, status, seen FROM lessons")
    assert (after["id"], after["status"], after["seen"]) == (lesson["id"], "vetoed", 3)
