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


# ------------------------------------------------ the forms a call runs a program in
PNPM = "Use pnpm, not npm, in this repo; npm rewrites the lockfile."
PYTHON_MISSING = "`python` is not found on this Mac ('command not found: python'); call python3."
SCRIPT_13 = "\n".join(f"cp build/part{i}.js dist/" for i in range(12)) + "\ngit push --force origin main"
SCRIPT_LONG = "\n".join(f"echo 'step {i}' && cp build/part{i}.js dist/" for i in range(400)) \
    + "\ngit push --force origin main"


def matches(command: str, lesson: str, kind: str = "correction") -> bool:
    """Whether the program match before a tool call gives this lesson to this shell command."""
    from remem.engine.programs import commands_run, lesson_matcher

    return lesson_matcher((commands_run(command),))(lesson, kind)


@pytest.mark.parametrize("command,lesson", [
    ("pip3 install requests", UV),                               # a versioned name
    ("pip3.12 install requests", UV),
    ("python3.12 -m pip install requests", UV),                  # a versioned runner
    (".venv/bin/pip install requests", UV),                      # a path: its file name
    ("/usr/local/bin/pip3 install requests", UV),
    ("git -C /home/you/code/shop-api push --force origin main", FORCE),  # git's own options
    ("git -c core.sshCommand=ssh --git-dir=.git --work-tree=. push -f origin main", FORCE),
    ("/usr/bin/git --no-pager push --force origin main", FORCE),
    ("timeout 60 git push --force origin main", FORCE),          # a program that runs another
    ("timeout -k 5 2m git push --force origin main", FORCE),
    ("env GIT_TRACE=1 git push --force origin main", FORCE),
    ("env -i PATH=/usr/bin pip install requests", UV),
    ("nice -n 10 git push --force origin main", FORCE),
    ("time git push --force origin main", FORCE),
    ("nohup git push --force origin main > push.log 2>&1 &", FORCE),
    ("command git push --force origin main", FORCE),
    ("exec git push --force origin main", FORCE),
    ("sudo -H pip install requests", UV),
    ("sudo -u deploy git push --force origin main", FORCE),
    ("DEBUG=1 timeout 60 sudo -E pip install requests", UV),
    ('bash -lc "git push --force origin main"', FORCE),          # a shell given a string
    ("sh -c 'cd app && pip install requests'", UV),
    ('bash -euo pipefail -c "npm run build && git push -f origin main"', FORCE),
    ("{ git push --force origin main; }", FORCE),                # the shell's own words
    ("if git diff --quiet; then git push --force origin main; fi", FORCE),
    ("! git push --force origin main", FORCE),
    ("for remote in origin backup; do git push --force $remote main; done", FORCE),
    ("function publish { git push --force origin main; }; publish", FORCE),
    pytest.param(SCRIPT_13, FORCE, id="13-line script ending in a push"),  # a script's last command
    pytest.param(SCRIPT_LONG, FORCE, id="400-line script ending in a push"),
])
def test_a_correction_is_matched_whatever_form_the_call_runs_its_program_in(command, lesson):
    assert matches(command, lesson), command


@pytest.mark.parametrize("command", [
    "pip3 install requests",
    ".venv/bin/pip install requests",
    "git -C /home/you/code/shop-api push --force origin main",
    "timeout 60 git push --force origin main",
    'bash -lc "git push --force origin main"',
])
def test_the_hook_shows_a_correction_before_a_wrapped_or_versioned_call(store, command):
    seed(store, LESSONS)
    shown = pre_tool("Bash", {"command": command}, session_in_arm(False))
    assert UV in shown or FORCE in shown, command


def test_a_prompt_running_a_versioned_program_gets_the_correction_about_it(store):
    seed(store, LESSONS)
    result = run_hook("prompt", {"prompt": "pip3 install fakeredis", "cwd": PROJECT,
                                 "session_id": session_in_arm(False, "pip3")})
    assert result.returncode == 0, result.stderr
    assert UV in result.stdout


@pytest.mark.parametrize("command,lesson,kind", [
    ("pip3 install requests", PNPM, "correction"),       # pip is no npm, versioned or not
    ("pip3 install requests", "Use pip3, not pip.", "correction"),  # a lesson naming both keeps them apart
    ("python3 -m venv .venv", PYTHON_MISSING, "error"),
    ("python3.12 manage.py runserver", PYTHON_MISSING, "error"),
    ("sqlite3 app.db .tables", "Never open the production database with `sqlite`; use the admin.", "correction"),
    ("env", UV, "correction"),                           # env alone runs nothing else
    ("env | grep PIP_INDEX_URL", UV, "correction"),
    ("command -v pip", UV, "correction"),                # looks pip up, does not run it
    ("sudo -l pip", UV, "correction"),                   # lists what may be run
    ("bash deploy.sh --force", FORCE, "correction"),     # a script, not a -c string
    ("echo 'git push --force origin main' >> NOTES.md", FORCE, "correction"),
])
def test_a_wrapped_or_versioned_form_does_not_widen_the_match(command, lesson, kind):
    assert not matches(command, lesson, kind), command


@pytest.mark.parametrize("command,runs", [
    ("env", (("env",),)),
    ("timeout --help", (("timeout",),)),                 # no duration: timeout itself
    ("./timeout fetch-prices", (("timeout", "fetch-prices"),)),  # a program named timeout, run as a thing
    ("grep -rn timeout config/", (("grep",),)),
    ("timeout 60 make deploy", (("timeout", "make", "deploy"), ("make", "deploy"))),
])
def test_timeout_and_env_are_wrappers_only_when_they_run_a_command(command, runs):
    from remem.engine.programs import commands_run

    assert commands_run(command) == runs


@pytest.mark.parametrize("lesson,about", [
    ("Never call `/usr/bin/pip`; we use uv.", (("pip",),)),         # a path: its file name
    ("Do not run /usr/local/bin/pip3 here, we use uv.", (("pip3",),)),
    ("Avoid pip3.12 here; uv manages the interpreter.", (("pip3.12",),)),
])
def test_a_lesson_names_a_program_by_its_path_or_versioned_name(lesson, about):
    from remem.engine.programs import lesson_commands

    assert lesson_commands(lesson, "correction") == about


@pytest.mark.parametrize("lesson", [
    "Never call `/usr/bin/pip`; we use uv.",
    "Do not run /usr/local/bin/pip3 here, we use uv.",
    "Never use pip3 in this repo; uv add is the way.",
])
def test_a_lesson_naming_one_name_of_a_program_is_about_the_others_too(lesson):
    for command in ("pip install requests", "pip3 install requests", ".venv/bin/pip install requests"):
        assert matches(command, lesson), (command, lesson)


def test_a_long_script_is_read_at_its_start_and_its_end_within_the_bound():
    from remem.engine.programs import MAX_CHAIN, commands_run

    for script in (SCRIPT_13, SCRIPT_LONG):
        run = commands_run(script)
        assert ("git", "push", "--force") in run
        assert len(run) <= MAX_CHAIN + 1  # the forced push is the push's second reading
    assert ("cp",) in commands_run(SCRIPT_LONG)  # and the start is read too


def test_a_lesson_about_a_wrapper_running_a_program_is_about_its_versioned_names_too():
    assert matches("sudo -H pip3 install -r requirements.txt", "Stop using sudo for pip installs.")
    # One that names both tells them apart: it rejects pip alone.
    assert not matches("sudo -H pip3 install -r requirements.txt", "Use sudo pip3 for system tools, never pip.")


@pytest.mark.parametrize("prompt", ["pip3.12 install requests", "./gradlew build", "/usr/local/bin/pip3 install httpx"])
def test_a_prompt_starting_with_a_versioned_or_pathed_tool_reads_as_a_command(prompt):
    from remem.engine.programs import reads_as_command

    assert reads_as_command(prompt)


def test_a_lesson_naming_one_versioned_name_is_about_another_of_its_family():
    assert matches("python3.12 manage.py migrate", "Never run python3 directly here; use uv run.")
