"""One answer for one question, whichever way it is asked: with or without --json or --pairs,
a mistyped home, and the usage slips a person makes, each said the way the other commands say it."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_remem
from tests.test_cli_journey import one_line_error

# --------------------------------------------------------------------------- experiment, no model


def test_experiment_json_without_a_model_has_a_runs_shape_with_or_without_pairs(home, cli, tmp_path):
    cli("remember", "install packages with uv, never pip")
    alone = cli("experiment", "--json")
    with_pairs = cli("experiment", "--json", "--pairs", str(tmp_path / "pairs.jsonl"))
    assert alone.exit_code == 1 and with_pairs.exit_code == 1, (alone.output, with_pairs.output)
    bare, paired = json.loads(alone.stdout), json.loads(with_pairs.stdout)
    assert set(bare) == set(paired)  # one shape, --pairs or not
    assert {"model", "lessons", "behaviour_with_reminder", "pairs_written", "error"} <= set(bare)
    assert bare["lessons"] == 0 and bare["model"] is None and bare["pairs_written"] is None
    assert bare["behaviour_without_reminder"] == {"passed": 0, "judged": 0, "rate": None}
    # The error on stdout is the one line on stderr.
    assert alone.stderr.strip() == f"remem: {bare['error']}" and "no model configured" in bare["error"]
    assert with_pairs.stderr.strip() == f"remem: {paired['error']}"


# --------------------------------------------------------------------------- morning


def test_morning_before_any_sleep_is_nothing_yet_with_or_without_json(home, cli):
    cli("remember", "a first note")
    text, as_json = cli("morning"), cli("morning", "--json")
    lessons = cli("lessons", "list")  # the other reading commands' "nothing yet": a line, exit 0
    assert lessons.exit_code == 0 and lessons.stdout.startswith("no lessons yet")
    assert text.exit_code == as_json.exit_code == 0, (text.output, as_json.output)
    assert text.stdout.strip() == "no morning report yet; run `remem sleep` first" and not text.stderr
    assert json.loads(as_json.stdout)["report"] is None


def test_morning_with_a_mistyped_home_names_it_as_the_other_reading_commands_do(tmp_path):
    typo = tmp_path / "remem-dmeo"
    said = one_line_error(run_remem("--home", str(typo), "lessons", "list"), "no memory at", str(typo))
    assert one_line_error(run_remem("--home", str(typo), "morning")) == said
    assert one_line_error(run_remem("--home", str(typo), "morning", "--json")) == said
    assert not typo.exists()


def test_morning_in_a_remem_home_not_made_yet_says_nothing_yet_and_makes_nothing(tmp_path):
    """REMEM_HOME may name a memory before its first ingest: used as it is, and reading the
    morning report there, with or without --json, starts no memory."""
    later = tmp_path / "not-made-yet"
    text = run_remem("morning", env={"REMEM_HOME": str(later)})
    as_json = run_remem("morning", "--json", env={"REMEM_HOME": str(later)})
    assert text.returncode == as_json.returncode == 0, (text.stderr, as_json.stderr)
    assert text.stdout.strip() == "no morning report yet; run `remem sleep` first" and not text.stderr
    assert json.loads(as_json.stdout) == {"report": None, "covers": None, "read_at": None, "runs": []}
    assert not as_json.stderr and not later.exists()


# --------------------------------------------------------------------------- tasks --run


def test_tasks_run_says_it_left_consolidate_to_sleep_in_text_and_json(home, cli):
    cli("remember", "a first note")
    ran = cli("tasks", "--run")
    assert ran.exit_code == 0, ran.output
    assert "skipped consolidate: it runs with `remem sleep`" in ran.stdout
    as_json = json.loads(cli("tasks", "--run", "--force", "--json").stdout)
    assert as_json["skipped"] == ["consolidate"] and as_json["ran"]["consolidate"]["ran"] is False
    assert [n for n, item in as_json["ran"].items() if item["ran"]] == [
        n for n in as_json["ran"] if n != "consolidate"]  # every other enabled task ran
    assert "skipped" not in json.loads(cli("tasks", "--json").stdout)  # nothing was run


# --------------------------------------------------------------------------- usage slips


def test_an_option_missing_its_value_names_the_commands_help(home):
    one_line_error(run_remem("recall", "x", "-k"), "'-k' requires an argument", "see `remem recall --help`")
    one_line_error(run_remem("lessons", "list", "--limit"), "see `remem lessons list --help`")


def test_home_with_no_folder_says_it_needs_one_not_that_it_is_misplaced(home):
    line = one_line_error(run_remem("--home"), "--home needs a folder", "remem --home DIR")
    assert "goes before" not in line
    one_line_error(run_remem("status", "--home", "/tmp"), "--home goes before the command")


def test_a_value_that_starts_with_a_dash_is_answered_with_the_double_dash(home):
    line = one_line_error(run_remem("remember", "--force-with-lease is safer"),
                          "no such option", "put -- before the arguments: remem remember -- …",
                          "see `remem remember --help`")
    assert "'--force-with-lease is safer'" in line
    stored = run_remem("remember", "--", "--force-with-lease is safer")
    assert stored.returncode == 0, stored.stderr
    # No such hint where the word is no value: a command without arguments, a slip of an option.
    assert "put --" not in one_line_error(run_remem("status", "--bogus"), "no such option")
    assert "put --" not in one_line_error(run_remem("recall", "x", "--jsn"), "--json")


def test_a_mistyped_option_is_not_offered_as_a_value(home):
    """Following the hint would search for, or ingest, the literal option: none is given."""
    for words, option in ((("recall", "--limit", "3", "foo"), "--limit"),
                          (("ingest", "--recursive", "/tmp/x"), "--recursive"),
                          (("remember", "-x"), "-x")):
        line = one_line_error(run_remem(*words), f"no such option: {option}", f"see `remem {words[0]} --help`")
        assert "put --" not in line and "as a value" not in line, line


def test_a_negative_number_or_a_sentence_is_named_as_typed(home):
    one_line_error(run_remem("recall", "-3"), "no such option: -3",
                   "(to pass -3 as a value, put -- before the arguments: remem recall -- …)")
    # Read letter by letter, `-3 days ago` fails at -3; the hint names the whole word.
    one_line_error(run_remem("remember", "-3 days ago"), "no such option: -3",
                   "to pass '-3 days ago' as a value, put -- before the arguments: remem remember -- …")
    # A sentence is no slip of an option, whichever option it starts like.
    line = one_line_error(run_remem("remember", "--json is fine"), "put -- before the arguments")
    assert "Possible options" not in line and "Did you mean" not in line, line


def _options_of(*names: str) -> tuple[set[str], set[str]]:
    """The long option names and the short option letters of `remem NAMES`."""
    import typer.main

    from remem.cli import app

    command = typer.main.get_command(app)
    for name in names:
        command = command.commands[name]
    opts = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    return {o for o in opts if o.startswith("--")}, {o[1] for o in opts if len(o) == 2}


LONG, SHORT = _options_of("remember")


def _not_an_option(word: str) -> bool:
    if word.startswith("--"):
        return word not in LONG and word != "--help"
    return word[1] not in SHORT and word[1] != "h"


def _plainly_a_value(word: str) -> bool:
    """A negative number, or a word holding a space (a sentence)."""
    if " " in word:
        return True
    try:
        float(word)
    except ValueError:
        return False
    return True


_NUMBERS = st.builds(lambda n: f"-{n}", st.one_of(st.integers(0, 10**6), st.floats(0, 1e6).map(str)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(word=st.one_of(st.from_regex(r"-{1,2}[a-z0-9][a-z0-9 .-]{0,24}", fullmatch=True), _NUMBERS)
       .filter(_not_an_option))
def test_a_word_with_a_dash_that_is_no_option_gets_the_double_dash_only_when_it_is_a_value(home, cli, word):
    said = cli("remember", word)
    assert said.exit_code == 1 and not said.stdout, said.output
    line = said.stderr.strip()
    assert "\n" not in line and line.startswith("remem: no such option"), line
    # The way to pass it as a value when it plainly is one (a negative number, a sentence);
    # else none: a mistyped option passed after -- would be stored as the note.
    hinted = "put -- before the arguments: remem remember -- …" in line
    assert hinted == _plainly_a_value(word), line
    assert "see `remem remember --help`" in line
