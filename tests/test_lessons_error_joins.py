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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import paths
from remem.engine import clock, ingest, lesson_text, sleep
from remem.engine.lessons_pass import _error_lesson_klass, _full_rows, _kind_rows, _klass
from remem.engine.session import Session, ToolCall, Turn
from remem.engine.session_episodes import episodes_of

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


@pytest.mark.parametrize("title, gist", [
    ("Bash failed: npm ERR! code ELIFECYCLE", "Bash: npm run build\nnpm ERR! code ELIFECYCLE"),
    ("Bash tests failed: FAILED tests/test_api.py::test_login", "Bash: pytest -q\nFAILED tests/test_api.py::test_login"),
    ("Bash command not found: zsh: command not found: fd", "Bash: fd . src\nzsh: command not found: fd"),
    ("Bash module not found: ModuleNotFoundError: No module named 'yaml'",
     "Bash: python app.py\nModuleNotFoundError: No module named 'yaml'"),
])
def test_an_error_lessons_words_give_back_the_class_its_sources_had(title, gist):
    """An error lesson whose sources the lifecycle deleted stands in with the class read from
    its words: the one its sources had, so the same failure again joins it (and a veto on it
    holds) rather than making a second lesson beside it."""
    row = {"kind": "error", "title": title, "gist": gist, "tool": "bash", "eclass": None}
    words = lesson_text.draft("error", [row])
    assert _error_lesson_klass({"text": words}) == _klass(row)
    assert _error_lesson_klass({"text": "Reworded by a person.", "draft": words}) == _klass(row)


@pytest.mark.parametrize("command, output, klass", [
    ("./gradlew build", "FAILURE: Build failed with an exception.", "|gradlew build"),
    (".venv/bin/pytest -q", "FAILED tests/test_a.py::test_x - assert 1 == 2", "test_failure|pytest"),
    ("$HOME/bin/deploy --prod", "deploy: refused", "|deploy"),
    ("(cd app && make)", "make: *** No rule to make target 'all'.", "|make"),
    ("'my tool' run", "boom", "|my tool"),
    ("/home/dev/app/bin/seed --all", "seed: no database", "|seed"),
])
def test_a_command_run_by_its_path_is_what_failed_not_the_shell(store, command, output, klass):
    """A program run by its path, in a subshell or quoted was read as no command at all: its
    error had the class of every such command ("|bash"), and the lesson made from it another
    (""), so the same failure again made a second lesson once the first one's sources were
    gone. The class names the program, by its file name."""
    [row] = _stored_rows(store, _failed_call("Bash", {"command": command}, f"Exit code 1\n{output}"))
    assert _klass(row) == klass
    assert _error_lesson_klass({"draft": lesson_text.draft("error", _full_rows(store, [row["id"]]).values())}) == klass


@pytest.mark.parametrize("title, gist, klass", [
    ("ModuleNotFoundError: No module named 'requests'", "running the app\nfix: run `uv add requests`",
     "module_not_found|requests"),
    ("`make deploy` broke prod", "it pushed to prod\nfix: use `make deploy-staging`", "|make deploy"),
    ("`make deploy` broke prod", "it pushed to prod", "|make deploy"),
    ("zsh: command not found: fd", "fix: `brew install fd`", "command_not_found|fd"),
    ("Permission denied on /var/run/docker.sock", "fix: add user to the `docker` group", "permission_denied"),
])
def test_an_error_a_person_told_has_the_class_of_its_lesson(store, title, gist, klass):
    """A lesson about a fix keeps what is missing ("On ModuleNotFoundError (`requests`): …"),
    and is about the command quoted before its fix, never the fix's own (`docker`, `make
    deploy-staging`): the error and its lesson have one class."""
    [row] = _stored_rows(store, [{"id": "told", "kind": "error", "title": title, "gist": gist}])
    lesson = lesson_text.draft("error", _full_rows(store, ["told"]).values())
    assert _klass(row) == _error_lesson_klass({"draft": lesson}) == klass


SPACE = "test-space"


def _failed_call(tool: str, tool_input: dict, result: str) -> list[dict[str, Any]]:
    """The error episodes ingest makes of one failed tool call in a session in CWD."""
    session = Session(id="s-calls", source="claude-code", cwd=CWD, turns=[
        Turn(role="user", text="check the project"),
        Turn(role="assistant", tool_calls=[ToolCall(id="t1", name=tool, input=tool_input, result=result,
                                                    is_error=True)])])
    return [ep for ep in episodes_of(session) if ep["kind"] == "error"]


def _stored_rows(store, episodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The episodes stored, as the lessons pass reads them back (vectors are not looked at here)."""
    with store.write() as conn:
        conn.execute("DELETE FROM tags")
        conn.execute("DELETE FROM episodes")
    store.put_episodes([{**ep, "space": SPACE, "embedding": b"\0" * 4} for ep in episodes])
    return _kind_rows(store, "error", SPACE)


_SHELL_COMMANDS = st.builds(
    lambda before, program, args: f"{before}{program} {' '.join(args)}".strip(),
    st.sampled_from(["", "FOO=1 ", "cd app && ", f"cd {CWD} && ", "(", "sudo "]),
    st.sampled_from(["npm run", "./gradlew", ".venv/bin/pytest", "$HOME/bin/deploy", "'my tool'", "fd",
                     "python", f"{CWD}/bin/seed", "git", "make", "`which rg`", "\"$BIN\"/x"]),
    st.lists(st.sampled_from(["build", "-q", "push", "origin", "src/", "'a|b'", '"x;y"', "&&", "|", ";",
                              "2>&1", ")", "tests/t.py", "$(date)", "<<EOF"]), max_size=4))
_NAMES = st.one_of(st.sampled_from(["requests", "fd", "yaml.sub", "rg"]),
                   st.text(alphabet="abz._-/ `'\":;|&()$", min_size=1, max_size=10))
# A line saying what to do that a tool printed, some in other cases (Unicode's "İ" and "ſ" are
# read as "i" and "s" by a case-insensitive pattern, but not by SQLite's lower()).
_FIX_LINES = st.sampled_from(["", "Fix: run `uv sync`", "fix: restart it", "FIX: `make clean`",
                              "Solution: use `--force`", "resolved by: a retry", "Fİx: pin it", "ſolution: x"])
_OUTPUTS = st.sampled_from([
    "FAILURE: Build failed with an exception.", "/bin/bash: line 1: {}: command not found",
    "zsh: command not found: {}",
    "Traceback (most recent call last):\n  File \"a.py\"\nModuleNotFoundError: No module named '{}'",
    "Error: Cannot find module '{}'", "ls: cannot open directory '/root': Permission denied",
    "FAILED tests/test_a.py::test_{} - assert 1 == 2", "timed out after 120s",
    "curl: (7) Failed to connect to localhost port 8080: Connection refused",
    "CONFLICT (content): Merge conflict in {}", "cat: {}: No such file or directory", "npm ERR! code ELIFECYCLE",
    "KeyError: '{}'", "{}", "boom"])
_CALLS = st.one_of(
    st.tuples(st.sampled_from(["Bash", "exec_command"]), _SHELL_COMMANDS.map(lambda c: {"command": c})),
    st.tuples(st.sampled_from(["Edit", "Read", "Write"]), _NAMES.map(lambda n: {"file_path": f"{CWD}/{n}"})),
    st.tuples(st.sampled_from(["WebFetch", "Task", "mcp__db__query"]), _NAMES.map(lambda n: {"query": n})))
_TOLD_TITLES = st.sampled_from([
    "ModuleNotFoundError: No module named '{}'", "`make {}` broke prod", "zsh: command not found: {}",
    "Permission denied on {}", "Deploy timed out: helm upgrade {} hung", "Build failed: missing env var {}",
    "the deploy broke {}", "{}"])
_TOLD_GISTS = st.sampled_from(["running the app", "Note: set {} before npm run build",
                               "Context: helm upgrade --install {} ./chart", "Bash: make {}", "Edit: {}", "{}"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.tuples(st.just("call"), _CALLS, st.integers(1, 127), _OUTPUTS, _NAMES, _FIX_LINES),
    st.tuples(st.just("told"), _TOLD_TITLES, _TOLD_GISTS, _NAMES, _FIX_LINES.map(lambda f: f.lower()))))
def test_an_errors_class_is_the_class_of_the_lesson_drafted_from_it(store, made):
    """Whatever failed (a shell command, another tool, an error a person told, with a fix or
    not), the class the lessons pass gives the stored error is the class the lesson drafted
    from it stands in with once its sources are gone: the same failure again meets that lesson,
    and a veto on it holds."""
    if made[0] == "call":
        _, (tool, tool_input), status, output, name, fix = made
        episodes = _failed_call(tool, tool_input, f"Exit code {status}\n{output.format(name)}\n{fix}")
    else:
        _, title, gist, name, fix = made
        episodes = [{"id": "told", "kind": "error", "title": title.format(name),
                     "gist": f"{gist.format(name)}\n{fix}", "cwd": CWD}]
    for row in _stored_rows(store, episodes):
        lesson = lesson_text.draft("error", _full_rows(store, [row["id"]]).values())
        assert _klass(row) == _error_lesson_klass({"draft": lesson}), lesson


GRADLE = ("./gradlew build", "Exit code 1\nFAILURE: Build failed with an exception.")


@pytest.mark.parametrize("failing", [NPM_BUILD, GRADLE], ids=["npm run build", "./gradlew build"])
def test_a_failure_again_joins_its_vetoed_lesson_whose_sources_are_gone_and_another_does_not(
        store, sessions, failing):
    from remem.engine.lessons import set_status
    from remem.engine.render_vetoes import record_veto

    sessions(store, [failing], [failing])
    [lesson] = store.rows("SELECT * FROM lessons")
    set_status(store, lesson["id"], "vetoed")
    record_veto(lesson)
    with store.write() as conn:  # the lifecycle deletes faded sources
        conn.execute("DELETE FROM episodes WHERE kind = 'error'")
    folder = paths.claude_projects_dir() / "-home-dev-app"
    third, fourth = "33333333-3333-4333-8333-333333333333", "44444444-4444-4444-8444-444444444444"
    (folder / f"{third}.jsonl").write_text(_session(third, 4, [failing]))
    (folder / f"{fourth}.jsonl").write_text(_session(fourth, 5, [RUFF]))
    with clock.frozen("2026-03-06T09:00:00.000000+00:00"):
        ingest.ingest_paths(store)
        summary = sleep.run_sleep_collect(store)
    assert summary["passes"]["lessons"]["joined"] == 1
    assert summary["passes"]["lessons"]["created"] == 0
    [after] = store.rows("SELECT id, status, seen FROM lessons")
    assert (after["id"], after["status"], after["seen"]) == (lesson["id"], "vetoed", 3)


def test_a_merge_refused_for_a_quarantined_lesson_names_the_command_that_accepts_it(store):
    """The refusal said `remem share accept ID`, which refuses a quarantined lesson without
    --force: the command it names is the one that accepts it, and then the merge is taken.
    (A merge by hand, not an error join: it sits here with the other lesson tests this change
    touches.)"""
    import shlex

    from remem.engine import share_choices
    from remem.engine.lessons import add_lesson, merge_check, merge_into
    from remem.engine.share import ShareError

    theme = add_lesson(store, "Use uv, not pip.", "correction")
    held = add_lesson(store, "Install with uv, never pip.", "correction", status="quarantined",
                      origin="ab" * 8, origins=["ab" * 8], note="quarantined: a shell pipeline")
    with pytest.raises(ValueError) as refused:
        merge_check(store, theme["id"], held["id"])
    said = str(refused.value)
    [command] = [c for c in said.split("`")[1::2] if c.startswith("remem share accept")]
    assert "remem share candidates" in said and "\n" not in said
    args = shlex.split(command)[3:]
    with pytest.raises(ShareError):  # what the refusal said before: refused in turn
        share_choices.accept(store, held["id"])
    share_choices.accept(store, args[0], force="--force" in args)
    merge_into(store, theme["id"], held["id"])
