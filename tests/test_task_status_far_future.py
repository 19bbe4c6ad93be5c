"""`remem tasks` with the clock at the end of year 9999 (REMEM_NOW): a task's next run would
fall past the last date there is, so it is capped there ("not due"), not a crash."""

from __future__ import annotations

from tests.conftest import run_remem

END = "9999-12-31T23:59:59Z"


def test_tasks_run_at_the_end_of_time_is_not_a_crash(home):
    assert run_remem("remember", "the deploy needs the staging token").returncode == 0
    ran = run_remem("tasks", "--run", env={"REMEM_NOW": END})
    assert ran.returncode == 0, ran.stderr
    assert "Traceback" not in ran.stderr and "unexpected error" not in ran.stderr

    listed = run_remem("tasks", "--json", env={"REMEM_NOW": END})
    assert listed.returncode == 0, listed.stderr
    tasks = {t["name"]: t for t in listed.json()["tasks"]}
    decay = tasks["strength_decay"]
    assert decay["last_run"].startswith("9999-12-31T23:59:59")
    assert decay["due"] is False and decay["next_run"] == "9999-12-31T23:59:59.999999+00:00"
    again = run_remem("tasks", "--run", "--json", env={"REMEM_NOW": END})
    assert again.returncode == 0, again.stderr
