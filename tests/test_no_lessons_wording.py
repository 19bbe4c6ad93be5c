"""`remem lessons list` and `remem doctor` give one reason why there is no lesson yet, in the
same words, at every stage: before any sleep, with episodes waiting for a second sighting,
and after a sleep that found nothing to learn from."""

from __future__ import annotations

import pytest

from remem.engine import clock, doctor
from tests.test_sleep_says_what_happened import NOW, episode, seen_once

LISTED = "no lessons yet: "
PROBLEM = "no active lessons yet, so hooks have nothing to show: "


def _doctor_said() -> dict[str, str]:
    [problem] = [p for p in doctor.store_health()["problems"] if p["problem"].startswith("no active lessons")]
    return problem


def _both_say(cli) -> tuple[str, dict[str, str]]:
    listed = cli("lessons", "list")
    assert listed.exit_code == 0, listed.output
    return listed.stdout, _doctor_said()


def _same_reason(listed: str, problem: dict[str, str]) -> None:
    """The doctor's reason is the list's (the list may name each reason something waits for
    after it, which the doctor leaves to the list)."""
    assert listed.startswith(LISTED), listed
    assert problem["problem"].startswith(PROBLEM), problem
    reason = problem["problem"][len(PROBLEM):]
    assert reason and listed[len(LISTED):].startswith(reason), (listed, problem)


def test_before_a_sleep_both_say_the_new_corrections_wait_for_it(store, cli):
    with clock.frozen(NOW):
        store.put_episodes(seen_once())
        listed, problem = _both_say(cli)
    _same_reason(listed, problem)
    assert "5 new corrections and errors wait for `remem sleep`" in listed
    assert problem["fix"].startswith("remem sleep")


def test_with_episodes_waiting_both_say_so_and_neither_sends_to_sleep(store, cli):
    with clock.frozen(NOW):
        store.put_episodes(seen_once())
        assert cli("sleep", "--quiet").exit_code == 0
        listed, problem = _both_say(cli)
    _same_reason(listed, problem)
    assert "were each seen once" in listed and "Waiting: 3 errors" in listed
    assert "nothing to run now" in listed and problem["fix"].startswith("nothing to run now")
    assert "`remem lessons list` says what waits" in problem["fix"]
    assert "remem lessons list" not in listed  # the list does not point at itself


@pytest.mark.parametrize("slept", [True, False], ids=["after-a-sleep", "before-any-sleep"])
def test_with_nothing_to_learn_from_both_say_nothing_to_run(store, cli, slept):
    """A memory whose episodes hold no correction or error: a sleep would learn nothing, so
    neither tells the person to run one, before the first sleep as after it."""
    store.put_episodes([episode("n1", "note", "the deploy script lives in ops/")])
    if slept:
        assert cli("sleep", "--quiet").exit_code == 0
    listed, problem = _both_say(cli)
    _same_reason(listed, problem)
    assert ("the last sleep found" in listed) is slept
    assert problem["fix"].startswith("nothing to run") and "remem ingest" in problem["fix"]
    # Neither names a command; the list says where lessons come from in its own words, as
    # "nothing to run" is an answer to the doctor's "fix:", not to a list.
    assert "nothing to run" not in listed and "once the nightly `remem ingest` and `remem sleep`" in listed
