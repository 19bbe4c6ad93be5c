"""Slips on the command line that a person makes often, answered with the line they meant."""

from __future__ import annotations

import pytest

from tests.conftest import run_remem
from tests.test_cli_journey import one_line_error


@pytest.mark.parametrize(("args", "meant"), [
    (["--json", "ingest"], "remem ingest --json"),
    (["--json", "share", "peers"], "remem share peers --json"),
    (["--json", "status"], "remem status --json"),
])
def test_a_commands_option_put_before_it_is_answered_with_the_command_as_meant(home, args, meant):
    line = one_line_error(run_remem(*args), f"{args[0]} goes after the command", meant)
    assert "see `remem --help`" not in line


@pytest.mark.parametrize("args", [["--bogus", "status"], ["--json"], ["--json", "share"]])
def test_an_option_no_following_command_takes_is_still_an_unknown_option(home, args):
    one_line_error(run_remem(*args), f"no such option: {args[0]}", "remem --help")


def test_doctor_with_a_mistyped_home_names_it_instead_of_making_it(tmp_path):
    typo = tmp_path / "remem-dmeo"
    one_line_error(run_remem("--home", str(typo), "doctor", "--no-run"), "no memory at", str(typo))
    assert not typo.exists()
