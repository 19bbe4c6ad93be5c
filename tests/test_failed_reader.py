"""What an error lesson says failed, and what its remedy is, read once (programs.read_error_lesson)
for both of its readers: prime's program match (programs.lesson_commands) and the class the
lessons pass gives an error (lesson_text.error_lesson_parts). The lessons are drafted by
lesson_text.draft itself, so the wordings read back are those it gives."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import lesson_text, programs
from remem.engine.lessons_pass import _error_lesson_klass
from remem.engine.programs import commands_run, lesson_commands


def failed_command(lesson: str) -> str:
    """The command the lessons pass reads as what failed."""
    return lesson_text.error_lesson_parts(lesson)[2]


def about(lesson: str) -> set[tuple[str, ...]]:
    """The commands prime's program match reads the error lesson as about."""
    return set(lesson_commands(lesson, "error"))


# ----------------------------------------------------------------- where the two readings differed

@pytest.mark.parametrize("episode, lesson", [
    # Classes whose name has no "error", "fail" … in it: the fix's command was read as what failed.
    ({"title": "cat: conf/x.toml: No such file or directory", "gist": "fix: create it with `touch conf/x.toml`"},
     "On no such file: create it with `touch conf/x.toml`."),
    ({"title": "ReadTimeout while fetching the index", "gist": "fix: `pip install --timeout 60 httpx`"},
     "On ReadTimeout: `pip install --timeout 60 httpx`."),
    ({"title": "KeyboardInterrupt in the worker", "gist": "fix: run `celery worker --pool solo`"},
     "On KeyboardInterrupt: run `celery worker --pool solo`."),
])
def test_a_drafted_fix_lesson_is_about_no_command_its_fix_runs(episode, lesson):
    """"On <class>: <fix>" names what failed only by its class: running the fix follows the
    lesson, and the lessons pass reads no command in it either."""
    assert lesson_text.draft("error", [episode]) == lesson
    assert about(lesson) == set()
    assert failed_command(lesson) == ""
    assert programs.read_error_lesson(lesson).remedy == lesson.split(": ", 1)[1]  # the fix


def test_an_error_a_person_told_in_no_error_words_is_drafted_as_an_error_before_its_fix():
    """"On Deploy broke prod: use `make deploy-staging`." reads as "On macOS: `sed -i` …" does:
    a lesson about the command it quotes, the fix's own, which gave the error with a fix
    another class than the same error without one (they no longer joined). The draft says it
    is an error."""
    episode = {"title": "Deploy broke prod", "gist": "it pushed to prod\nfix: use `make deploy-staging`"}
    lesson = lesson_text.draft("error", [episode])
    unfixed = lesson_text.draft("error", [{"title": "Deploy broke prod", "gist": "it pushed to prod"}])
    assert _error_lesson_klass({"draft": lesson}) == _error_lesson_klass({"draft": unfixed})
    assert about(lesson) == set() and failed_command(lesson) == ""
    assert lesson == "On the error “Deploy broke prod”: use `make deploy-staging`."


@pytest.mark.parametrize("lesson, failed, named", [
    # Written or reworded, not drafted: the remedy follows the ";" and names no failed command.
    ("aws commands fail with ExpiredToken; run `aws sso login --profile infra` first.", "", {("aws",)}),
    ("Playwright tests fail with \"Executable doesn't exist\"; run `pnpm exec playwright install` once.",
     "", {("playwright",)}),
    # "On <place>:" names no error: what follows is what failed.
    ("On macOS: `sed -i` needs an explicit empty suffix.", "sed -i", {("sed",)}),
])
def test_a_lesson_in_a_persons_words_is_about_what_it_quotes_before_the_remedy(lesson, failed, named):
    """The lessons pass read the first command quoted anywhere ("aws sso login", the remedy)
    and none after "On macOS:"; prime read what comes before the remedy. Prime's reading is
    right: a remedy is never what failed."""
    assert failed_command(lesson) == failed
    assert about(lesson) == named


def test_a_failed_command_holding_backticks_is_read_whole():
    """Prime read a command quoted with a backtick inside ("`which python` -m pytest") as
    the first code span it found ("which python"), so `which python` was matched to it."""
    episode = {"title": "Bash failed: No module named pytest", "gist": "Bash: `which python` -m pytest -q",
               "tool": "bash"}
    lesson = lesson_text.draft("error", [episode])
    assert lesson.startswith("``which python` -m pytest -q` failed here (")
    assert failed_command(lesson) == "`which python` -m pytest -q"
    assert ("which", "python") not in about(lesson)


def test_a_failed_calls_remedy_is_its_advice_never_a_command_quoted_in_how_it_failed():
    """Prime cut the lesson at the first ";" inside the error's own line and took the code span
    after it for the remedy: a call running `make all clean` (which runs the `make all` that
    failed) was taken to follow the lesson already and was not matched to it."""
    episode = {"title": "Bash failed: error: no rule for x; try `make all clean`",
               "gist": "Bash: make all", "tool": "bash"}
    lesson = lesson_text.draft("error", [episode])
    matches = programs.lesson_matcher((commands_run("make all clean"),))
    assert matches(lesson, "error")
    said = programs.read_error_lesson(lesson)
    assert (said.command, said.how) == ("make all", "error: no rule for x; try `make all clean`")
    assert said.remedy == "find out why before running it again."


@pytest.mark.parametrize("title, gist, missing, names", [
    ("ModuleNotFoundError: No module named 'requests'", "fix: run `uv add requests`", "requests", {"uv"}),
    ("ImportError: No module named yaml.constructor", "fix: `pip install pyyaml`", "yaml", {"pip"}),
    # A command missing is a program: the prompt naming it runs or names it.
    ("zsh: command not found: fd", "fix: `brew install fd`", "fd", {"fd", "brew"}),
])
def test_a_module_a_fix_lesson_names_as_missing_is_no_programs_name(title, gist, missing, names):
    """Prime took `requests` for a program's name the prompt did not run, and dropped the only
    word "why can't I import requests" shared with the lesson."""
    lesson = lesson_text.draft("error", [{"title": title, "gist": f"it broke\n{gist}"}])
    assert lesson.startswith("On ") and f"(`{missing}`)" in lesson, lesson
    assert failed_command(lesson) == missing  # still what failed, for the lessons pass
    assert programs.program_names(lesson) == names


def test_a_title_holding_a_colon_is_read_whole_as_what_failed():
    """The reader cut the error at the ": " inside the quoted title: what failed was "On the
    error “Staging", and `make deploy` was read as the remedy, so a call running it was taken
    to follow the lesson already."""
    episode = {"title": "Staging: `make deploy` broke prod", "gist": "x\nfix: run `make deploy-staging` first"}
    lesson = lesson_text.draft("error", [episode])
    assert lesson == "On the error “Staging: `make deploy` broke prod”: run `make deploy-staging` first."
    said = programs.read_error_lesson(lesson)
    assert (said.command, said.remedy) == ("make deploy", "run `make deploy-staging` first.")
    assert programs.lesson_matcher(((("make", "deploy"),),))(lesson, "error")
    assert not programs.lesson_matcher(((("make", "deploy-staging"),),))(lesson, "error")


def test_a_title_naming_an_error_before_a_colon_of_its_own_is_quoted_whole():
    """"Deploy error: `make deploy` broke prod" names an error before its ": ": drafted bare,
    it was read as the error "Deploy error" and `make deploy` as the fix."""
    episode = {"title": "Deploy error: `make deploy` broke prod", "gist": "x\nfix: run `make deploy-staging`"}
    lesson = lesson_text.draft("error", [episode])
    assert failed_command(lesson) == "make deploy", lesson
    assert about(lesson) == {("make", "deploy")}, lesson


# ----------------------------------------------------------------- every drafted wording, read back

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=9)
_PUNCT = st.sampled_from([";", "&&", "|", "(x)", "a:b", "$(pwd)", "`date`", "'q'", "--flag=1", "./src/",
                          "…", "2>&1", "))", "\"a b\""])
_COMMAND = st.lists(st.one_of(_WORD, _WORD, _PUNCT), min_size=1, max_size=24).map(" ".join)
_LINE = st.lists(st.one_of(_WORD, _PUNCT, st.sampled_from(["failed", "error:", "); x", "`y`", "(z"])),
                 min_size=0, max_size=30).map(" ".join)
_TOOLS = st.sampled_from(["Bash", "exec_command", "Edit", "Write", "Task", "WebFetch"])
_LABELS = st.sampled_from(list(lesson_text._ADVICE))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TOOLS, _LABELS, _COMMAND, _LINE)
def test_a_failed_calls_lesson_reads_back_the_command_drafted_in(tool, label, command, line):
    episode = {"title": f"{tool} {label}: {line}".strip(), "gist": f"{tool}: {command}", "tool": tool.lower()}
    lesson = lesson_text.draft("error", [episode])
    shell = tool.lower() in ("bash", "exec_command")
    drafted = lesson_text.clip(command, 70) if shell else tool
    assert lesson.startswith(f"`{drafted}` failed here"), lesson  # the case this reads back
    got_label, _how, failed = lesson_text.error_lesson_parts(lesson)
    assert failed == drafted, lesson
    assert got_label == label or (label == "failed" and got_label), lesson
    # Prime is about what that command runs and may have failed (or the tool), nothing else it quotes.
    assert about(lesson) == set(commands_run(drafted, failed_only=True)), lesson


_CLASSES = st.sampled_from([
    ("ModuleNotFoundError: No module named '{name}'", "{name}"),
    ("zsh: command not found: {name}", "{name}"),
    ("KeyError: '{name}'", ""),
    ("requests.exceptions.ReadTimeout: {name}", ""),
    ("KeyboardInterrupt in {name}", ""),
    ("SystemExit: 2 in {name}", ""),
    ("cat: {name}: No such file or directory", ""),
    ("Permission denied on /var/{name}", ""),
    ("ssh: connect timed out for {name}", ""),
    ("CONFLICT (content): merge conflict in {name}.py", ""),
    ("Exit code 1 from {name}", ""),
    ("{name} broke prod", ""),           # no class: its title names no error either
    ("{name} is failing again", ""),     # no class, but its title names an error
    # A title holding a ": " (and a code span) of its own, naming an error before it or not.
    ("Staging: `{name}` broke prod", "{name}"),
    ("deploy error: `{name}` broke prod: see log", "{name}"),
    ("`{name}` failed: exit status 2", "{name}"),
    ("said “{name}: no” then failed", ""),
])
_FIX = st.lists(st.one_of(_WORD, _PUNCT, st.sampled_from(["`uv add requests`", "`brew install fd`", "run",
                                                           "then", "`make x`", ":", "On"])),
                min_size=1, max_size=12).map(" ".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_CLASSES, st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True), _FIX)
def test_a_fix_lessons_reads_back_the_missing_name_drafted_in_never_the_fix(klass, name, fix):
    title, missing = (part.format(name=name) for part in klass)
    lesson = lesson_text.draft("error", [{"title": title, "gist": f"it broke\nfix: {fix}"}])
    assert lesson.startswith("On "), lesson  # the case this reads back
    assert lesson_text.error_lesson_parts(lesson)[2] == missing, lesson
    assert about(lesson) == set(commands_run(missing) if missing else ()), lesson


@settings(max_examples=300, deadline=None)
@given(_COMMAND.filter(lambda c: "`" not in c and "…" not in c and len(c) <= 60),
       st.sampled_from(["{span} broke prod", "deploying with {span} hung", "it hung. Then {span} wiped the cache",
                        "the deploy hung; {span} broke it"]))
def test_an_unfixed_errors_lesson_reads_back_the_command_its_title_quotes(command, title):
    """The whole title says what failed, its ";" and full stops too (prime read no further)."""
    lesson = lesson_text.draft("error", [{"title": title.format(span=f"`{command}`"), "gist": "it broke"}])
    assert lesson.startswith("Avoid repeating this error: "), lesson  # the case this reads back
    assert failed_command(lesson) == " ".join(command.split()), lesson
    assert about(lesson) == set(commands_run(command, failed_only=True)), lesson


_MISSING = st.sampled_from([
    ("ModuleNotFoundError: No module named '{name}'", True),
    ("ImportError: No module named {name}", True),
    ("Traceback: ModuleNotFoundError: No module named '{name}.sub'", True),
    ("zsh: command not found: {name}", False),
    ("bash: {name}: command not found", False),
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MISSING, st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True), _FIX)
def test_a_fix_lessons_missing_module_is_no_programs_name_a_missing_command_is(missing, name, fix):
    """The programs a fix lesson names are its fix's, and the command it names as missing; a
    module named as missing is none."""
    title, is_module = missing
    lesson = lesson_text.draft("error", [{"title": title.format(name=name), "gist": f"it broke\nfix: {fix}"}])
    said = programs.read_error_lesson(lesson)
    assert (said.form, said.command, said.module) == ("fix", name, is_module), lesson
    fix_names = programs.program_names(said.remedy)
    assert programs.program_names(lesson) == (fix_names if is_module else fix_names | {name}), lesson
