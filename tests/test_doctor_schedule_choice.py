"""`remem doctor` and a nightly job the person left out on purpose (`remem setup --no-schedule`,
or `remem setup --remove`): a note, as for an agent taken out with --remove, never a problem
whose fix (`remem setup`) would add the line they declined. A schedule nobody chose to leave
out stays a problem."""

from __future__ import annotations

import pytest

from remem.engine import doctor, setup
from remem.engine.schedule import CRON_MARK
from tests.test_schedule_without_scheduler import machine  # noqa: F401  (fixture)
from tests.test_setup import agents_home  # noqa: F401  (fixture)


def _schedule_problems(report: dict) -> list[dict]:
    return [p for p in report["problems"] if "nightly" in p["problem"]]


def _schedule_notes(report: dict) -> list[str]:
    return [n for n in report["notes"] if n.startswith("the nightly sleep")]


def test_a_schedule_left_out_with_no_schedule_or_remove_is_a_note_until_setup_schedules_it(cli, agents_home):
    cron = agents_home["cron"]
    theirs = cron.read_text()
    assert cli("setup", "--yes", "--no-schedule", "--agent", "windsurf").exit_code == 0
    report = doctor.diagnose(run_hooks=False)
    assert not report["schedule"]["wired"] and report["schedule"]["off"] == "no-schedule"
    assert _schedule_problems(report) == []
    assert _schedule_notes(report) == ["the nightly sleep is not scheduled: you chose `remem setup "
                                       "--no-schedule`; `remem setup` schedules it"]
    assert "note: the nightly sleep is not scheduled: you chose" in cli("doctor", "--no-run").output

    # Asked for again: scheduled, and the choice forgotten.
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    report = doctor.diagnose(run_hooks=False)
    assert report["schedule"]["wired"] and setup.schedule_off() is None
    assert _schedule_notes(report) == [] and _schedule_problems(report) == []

    # Taken out with --remove: a note again.
    assert cli("setup", "--remove", "--yes", "--agent", "windsurf").exit_code == 0
    assert cron.read_text() == theirs
    report = doctor.diagnose(run_hooks=False)
    assert _schedule_problems(report) == []
    assert _schedule_notes(report) == ["the nightly sleep is not scheduled: `remem setup --remove` took it "
                                       "out; `remem setup` schedules it again"]

    # --remove --no-schedule leaves the schedule, and what was chosen for it, as they are.
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    assert cli("setup", "--remove", "--yes", "--no-schedule", "--agent", "windsurf").exit_code == 0
    assert CRON_MARK in cron.read_text() and setup.schedule_off() is None

    # A line gone that nobody chose to leave out is still a problem, with its fix.
    cron.write_text(theirs)
    report = doctor.diagnose(run_hooks=False)
    assert _schedule_notes(report) == []
    assert [p["fix"] for p in _schedule_problems(report)] == ["remem setup"]


def test_no_schedule_with_nothing_else_to_change_is_remembered_on_a_machine_with_no_scheduler(cli, machine):
    """What setup's own note says to do there: run the job yourself, and `remem setup
    --no-schedule` from then on. That run changes no file, and still counts."""
    machine["use"]("none")
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    problems = _schedule_problems(doctor.diagnose(run_hooks=False))
    assert [p["problem"] for p in problems] == [
        "the nightly sleep is not scheduled: this machine has no crontab or systemctl command"]

    res = cli("setup", "--yes", "--agent", "windsurf", "--no-schedule")
    assert res.exit_code == 0 and "wired already" in res.output
    report = doctor.diagnose(run_hooks=False)
    assert _schedule_problems(report) == []
    [note] = _schedule_notes(report)
    # What works here, not `remem setup` (which cannot schedule it on this machine).
    assert note.startswith("the nightly sleep is not scheduled: you chose `remem setup --no-schedule`; run `")
    assert note.endswith("nightly from a scheduler of your own") and "sleep --quiet" in note

    # A dry run decides nothing.
    assert cli("setup", "--dry-run", "--agent", "windsurf").exit_code == 0
    assert setup.schedule_off() == "no-schedule"


def _as_an_older_release_wrote_it() -> None:
    """setup.json as a release before the choice was kept wrote it: no `schedule_off`."""
    import json

    from remem import paths

    manifest = json.loads(paths.setup_manifest().read_text())
    manifest.pop("schedule_off")
    paths.setup_manifest().write_text(json.dumps(manifest))


def test_an_older_setup_that_never_scheduled_the_job_is_a_note_after_the_upgrade(cli, agents_home):
    """An older release's `setup --no-schedule` wrote no choice: its setup.json, with no trace
    of a schedule setup made, counts as the job left out, not a problem (doctor exit 1)."""
    assert cli("setup", "--yes", "--no-schedule", "--agent", "windsurf").exit_code == 0
    _as_an_older_release_wrote_it()
    report = doctor.diagnose(run_hooks=False)
    assert _schedule_problems(report) == [] and report["schedule"]["off"] == "never"
    assert _schedule_notes(report) == ["the nightly sleep is not scheduled: an older remem's setup left it out "
                                       "(it kept no record of `--no-schedule`); `remem setup` schedules it"]
    assert "note: the nightly sleep is not scheduled: an older remem's setup" in cli("doctor", "--no-run").output

    # This release's setup keeps the choice from then on, either way.
    assert cli("setup", "--yes", "--no-schedule", "--agent", "windsurf").exit_code == 0
    assert setup.schedule_off() == "no-schedule"
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    assert setup.schedule_off() is None and doctor.diagnose(run_hooks=False)["schedule"]["wired"]


@pytest.mark.parametrize("trace", ["crontab record", "nightly log"])
def test_an_older_setup_whose_job_was_lost_since_is_still_a_problem(cli, agents_home, trace):
    """What an older setup scheduled leaves a trace: its crontab record, or (a line that was
    there already, so nothing recorded) the log the nightly job wrote. Gone since: a problem."""
    from remem import paths

    cron = agents_home["cron"]
    theirs = cron.read_text()
    if trace == "crontab record":
        assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    else:
        from remem.engine.schedule import cron_line

        cron.write_text(theirs + cron_line() + "\n")  # an earlier wiring's line: setup records nothing
        assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
        assert "crontab" not in setup.load_manifest()
        (paths.logs_dir() / "sleep.log").write_text("sleep: 3 passes\n")  # the job ran
    _as_an_older_release_wrote_it()
    cron.write_text(theirs)  # the line is gone
    report = doctor.diagnose(run_hooks=False)
    assert _schedule_notes(report) == [] and "off" not in report["schedule"]
    assert [p["fix"] for p in _schedule_problems(report)] == ["remem setup"]
