"""A wrapper's short options bundled in one word ("sudo -iu postgres psql"): the value of the
last one that takes a value is the next word, never the program the wrapper runs."""

from __future__ import annotations

import pytest

from remem.engine.programs import commands_run
from tests.test_prime_pretool_programs import FORCE, UV, matches


@pytest.mark.parametrize("command,runs", [
    ("sudo -iu postgres psql", (("sudo", "psql"), ("psql",))),
    ("sudo -Eu deploy pip install requests", (("sudo", "pip", "install"), ("pip", "install", "requests"))),
    ("sudo -Hiu deploy -- make deploy", (("sudo", "make", "deploy"), ("make", "deploy"))),
    ("sudo -iupostgres psql", (("sudo", "psql"), ("psql",))),          # the value in the group
    ("env -iu HOME make deploy", (("env", "make", "deploy"), ("make", "deploy"))),
    ("env -iC /srv/app make deploy", (("env", "make", "deploy"), ("make", "deploy"))),
    ("timeout -vs KILL 5 make deploy", (("timeout", "make", "deploy"), ("make", "deploy"))),
    ("timeout -sKILL 5 make deploy", (("timeout", "make", "deploy"), ("make", "deploy"))),
    ("nice -n5 make deploy", (("nice", "make", "deploy"), ("make", "deploy"))),
    ("exec -la worker make deploy", (("exec", "make", "deploy"), ("make", "deploy"))),
    ("sudo -u deploy make deploy", (("sudo", "make", "deploy"), ("make", "deploy"))),  # unbundled, as before
])
def test_a_bundled_option_that_takes_a_value_takes_the_next_word(command, runs):
    assert commands_run(command) == runs


@pytest.mark.parametrize("command", [
    "sudo -lu deploy make deploy",    # lists whether deploy may run make: runs nothing
    "command -pv make",               # looks make up
])
def test_a_bundled_option_that_runs_nothing_leaves_the_wrapper_the_command(command):
    assert commands_run(command) == ((command.split()[0],),)


@pytest.mark.parametrize("command,lesson", [
    ("sudo -Eu deploy pip install requests", UV),
    ("sudo -iu deploy git push --force origin main", FORCE),
])
def test_a_correction_is_matched_through_bundled_wrapper_options(command, lesson):
    assert matches(command, lesson), command
