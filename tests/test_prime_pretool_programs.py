"""Before a tool call: a lesson about a non-shell tool matches that tool's call as a shell
program's lesson matches its command, and correction and refusal lessons are shown too, but
only on the program match (the call runs the program or tool they name). A refusal is never
what a hand-back is held for. The real bundled model, a real store, the real hook process."""

from __future__ import annotations

import json

import pytest

from tests.test_hooks import run_hook, seed, session_in_arm

PROJECT = "/home/you/code/shop-api"
EDIT = ("`Edit` failed here (File has not been read yet. Read it first before writing to it.); "
        "find out why before running it again.")
TASK = ("`Task` failed here (InputValidationError: … The required parameter `prompt` is missing); "
        "find out why before running it again.")
UV = "We use uv here, not pip."
FORCE = "Never force-push; use --force-with-lease."
MIGRATIONS = "Don't touch the migrations folder, old migrations are never edited."
PHX = "Ask before running `mix phx.server` (the person refused it)."
LESSONS = [(EDIT, "error", PROJECT), (TASK, "error", PROJECT), (UV, "correction", PROJECT),
           (FORCE, "correction", PROJECT), (MIGRATIONS, "correction", PROJECT), (PHX, "correction", PROJECT)]


def pre_tool(tool: str, tool_input: dict, session: str) -> str:
    """The lessons the real `remem hook pre-tool` process shows for this call, as one text."""
    result = run_hook("pre-tool", {"session_id": session, "cwd": PROJECT, "tool_name": tool,
                                   "tool_input": tool_input})
    assert result.returncode == 0, result.stderr
    if not result.stdout.strip():
        return ""
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def scored(store, tool_text: str, command: str | None = None) -> dict[str, dict]:
    from remem.engine import prime

    return {c["text"]: c for c in prime.candidates(store, tool_text, event="pre-tool", cwd=PROJECT,
                                                   command=command)}


@pytest.mark.parametrize("tool,tool_input,lesson", [
    ("Edit", {"file_path": f"{PROJECT}/app/settings.py", "old_string": "DEBUG = True",
              "new_string": "DEBUG = False"}, EDIT),
    ("Task", {"description": "Find where products are loaded", "subagent_type": "general-purpose"}, TASK),
])
def test_a_failed_tool_is_matched_by_its_own_name_before_its_next_call(store, tool, tool_input, lesson):
    seed(store, LESSONS)
    session = session_in_arm(False)
    from remem.hooks.adapters import tool_text

    got = scored(store, tool_text(tool, tool_input))
    assert got[lesson]["command"] == 1.0
    other = TASK if lesson == EDIT else EDIT
    assert got[other]["command"] == 0.0  # one tool's name is no other's
    assert lesson in pre_tool(tool, tool_input, session)


@pytest.mark.parametrize("command,lesson", [
    ("pip install httpx", UV),
    ("git push --force origin main", FORCE),
    ("git push -f origin main", FORCE),
    ("git push -fu origin main", FORCE),                          # -f among combined flags
    ("git add -A && git commit -m wip && git push --force", FORCE),  # the push is the chain's third
    ("cd /tmp && pip install httpx", UV),
    ("mix phx.server", PHX),
])
def test_a_correction_about_the_program_a_call_runs_is_shown_before_it(store, command, lesson):
    seed(store, LESSONS)
    shown = pre_tool("Bash", {"command": command}, session_in_arm(False))
    assert lesson in shown, command


@pytest.mark.parametrize("tool,tool_input", [
    ("Bash", {"command": "git push origin main"}),            # git push, not forced
    ("Bash", {"command": "git push origin main && rm -f /tmp/build.log"}),  # rm's -f, not push's
    ("Bash", {"command": "git push --force-with-lease origin main"}),  # the remedy itself
    ("Bash", {"command": "uv add httpx"}),                     # uv, which the lesson recommends
    ("Edit", {"file_path": f"{PROJECT}/migrations/0007_orders.py", "old_string": "a", "new_string": "b"}),
    ("Bash", {"command": "mix test"}),
])
def test_a_correction_is_not_shown_before_a_call_on_meaning_or_words_alone(store, tool, tool_input):
    seed(store, LESSONS)
    shown = pre_tool(tool, tool_input, session_in_arm(False))
    for lesson in (UV, FORCE, MIGRATIONS, PHX):
        assert lesson not in shown, (tool_input, lesson)


def test_a_refusal_shown_before_the_call_is_not_shown_again_at_the_hand_back(store):
    seed(store, LESSONS)
    session = session_in_arm(False)
    assert PHX in pre_tool("Bash", {"command": "mix phx.server"}, session)
    result = run_hook("stop", {"session_id": session, "cwd": PROJECT,
                               "last_assistant_message": "I started the server with `mix phx.server` as you asked."})
    assert result.returncode == 0
    assert "phx.server" not in result.stdout


def test_a_refusal_never_holds_the_hand_back(store):
    """After the hand-back the call was made or not: asking first is no longer possible."""
    from remem.engine import prime

    seed(store, LESSONS)
    got = prime.candidates(store, "I started the Phoenix server with `mix phx.server` as you asked.",
                           event="stop", cwd=PROJECT)
    assert PHX not in [c["text"] for c in got]
    assert MIGRATIONS in [c["text"] for c in got]  # other corrections still may


def test_a_here_documents_body_is_text_not_commands_it_runs():
    """A script written through a here-document runs none of its lines (and a generated file of
    thousands of lines must not be read as thousands of commands on the hook path)."""
    from remem.engine.programs import MAX_CHAIN, commands_run

    script = "cat > deploy.sh <<'EOF'\nnpm run build\ngit push --force origin main\nEOF\nchmod +x deploy.sh"
    assert commands_run(script) == (("cat",), ("chmod", "+x", "deploy.sh"))
    assert commands_run("git commit -F - <<-EOF\n\trm the old\n\tEOF") == (("git", "commit"),)
    long = "cat > gen.py <<'PY'\n" + "\n".join(f"x{i} = {i}" for i in range(5000)) + "\nPY"
    assert commands_run(long) == (("cat",),)
    many = " && ".join(f"tool{i} run" for i in range(100))
    assert len(commands_run(many)) <= MAX_CHAIN


def test_a_here_document_does_not_show_the_lessons_of_what_its_body_names(store):
    seed(store, LESSONS)
    script = "cat > notes.md <<'EOF'\npip install httpx\ngit push --force origin main\nEOF"
    shown = pre_tool("Bash", {"command": script}, session_in_arm(False))
    assert UV not in shown and FORCE not in shown


def test_a_lesson_about_cd_alone_still_names_cd():
    from remem.engine.programs import commands_run

    assert commands_run("cd frontend") == (("cd", "frontend"),)
    assert commands_run("cd app && make") == (("make",),)  # where make runs, not a command of its own


@pytest.mark.parametrize("lesson,harmless,meant", [
    ("`pwd && ls && pytest -q` failed here (module not found: yaml); install pyyaml first.",
     "ls -la", "pytest -q tests/"),
    ("`git status && npm run build` failed here (heap out of memory); find out why before running it again.",
     "git status", "npm run build"),
    ("`make; ls` failed here (no such file); find out why before running it again.",
     "make", "ls"),  # after the last ";" only the last command sets the status
])
def test_a_chained_error_lesson_is_about_the_commands_that_may_have_failed(store, lesson, harmless, meant):
    from remem.engine import prime

    seed(store, [(lesson, "error", PROJECT)])
    for command, expected in ((harmless, 0.0), (meant, 1.0)):
        got = {c["text"]: c for c in prime.candidates(store, f"Bash {command}", event="pre-tool", cwd=PROJECT,
                                                      command=command)}
        assert got[lesson]["command"] == expected, command


@pytest.mark.parametrize("lesson,about", [
    ("Never edit an Alembic migration that has been applied.", ()),   # a file of alembic's
    ("Keep the docker image under 200 MB.", ()),
    ("Use the gh CLI for pull requests.", (("gh",),)),                # the tool itself
    ("Run the pytest suite with -n auto.", (("pytest",),)),
    ("Do not use the git push --force on main.", (("git", "push"),)),  # its subcommand
    ("We use uv here, not pip.", (("pip",),)),
])
def test_a_tool_named_as_a_things_modifier_is_no_call_of_it(lesson, about):
    from remem.engine.programs import lesson_commands

    assert lesson_commands(lesson, "correction") == about


def test_a_lesson_about_editing_a_tools_files_is_not_shown_before_running_the_tool(store):
    alembic = "Never edit an Alembic migration that has been applied; create a new one instead."
    seed(store, [(alembic, "correction", PROJECT)])
    assert alembic not in pre_tool("Bash", {"command": "uv run alembic upgrade head"}, session_in_arm(False))
