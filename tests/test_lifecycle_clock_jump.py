"""A run on a clock far ahead deleted memories for good (a short-term memory whose TTL had not
really passed, one archived by `forget`), though docs/LIFECYCLE.md promised only archiving,
which can be undone. Now a run long after remem last ran its tasks holds its deletions back
for one run: put right, the clock finds every memory still there; left as it is (a laptop
asleep for months), the next run deletes them.

The clock is moved with REMEM_NOW and clock.frozen, as docs/LIFECYCLE.md says; the store and
the CLI are the real ones."""

from __future__ import annotations

from remem.engine import clock, lifecycle
from remem.engine.memories import remember
from remem.engine.store import Store
from remem.errors import NotFound
from tests.conftest import run_remem

T0 = "2027-01-12T09:00:00+00:00"
AHEAD = "2031-01-02T09:00:00+00:00"


def _memories(store: Store) -> tuple[str, str, str]:
    """A short-term memory of a year, one forgotten by hand (archived), a live one."""
    ttl = remember(store, "the staging password rotates yearly", ttl="365d")["id"]
    gone = remember(store, "an old note about cranes")["id"]
    lifecycle.forget(store, gone)
    live = remember(store, "the deploy runs from the ops box", importance=1.0)["id"]
    return ttl, gone, live


def _there(store: Store, memory_id: str) -> bool:
    try:
        store.episode(memory_id, expired=True)
    except NotFound:
        return False
    return True


def test_a_run_on_a_clock_years_ahead_deletes_nothing_for_good(store):
    with clock.frozen(T0):
        ttl, gone, live = _memories(store)
        lifecycle.run_due_tasks(store)  # the tasks run at the right time: nothing is due to go
    with clock.frozen(AHEAD):
        report = lifecycle.run_due_tasks(store)
    expire, forgetting = report["expire_short_term"]["result"], report["active_forgetting"]["result"]
    assert expire["expired"] == 0 and expire["held_back"] == 1
    assert forgetting["deleted"] == 0 and forgetting["held_back"] == 1
    assert "held back" in forgetting["note"] and "put it right" in forgetting["note"]
    assert all(_there(store, m) for m in (ttl, gone, live))
    # The clock put right: nothing that run would have deleted is gone, and nothing now deletes it.
    with clock.frozen("2027-01-13T09:00:00+00:00"):
        report = lifecycle.run_due_tasks(store, force=True)
        assert report["active_forgetting"]["result"]["deleted"] == 0
        assert all(_there(store, m) for m in (ttl, gone, live))
        assert lifecycle.restore(store, gone)["archived"] is False  # and can be brought back
        assert lifecycle.restore(store, live)["archived"] is False  # the jump archived it: undone


def test_the_run_after_a_long_gap_deletes_what_the_one_before_held_back(store):
    """A laptop asleep for months: the first run holds back, the next one deletes."""
    with clock.frozen(T0):
        ttl, gone, live = _memories(store)
        lifecycle.run_due_tasks(store)
        clock.advance(days=400)
        first = lifecycle.run_due_tasks(store)
        assert first["expire_short_term"]["result"]["held_back"] == 1 and _there(store, ttl)
        clock.advance(days=1)
        second = lifecycle.run_due_tasks(store)
        assert second["expire_short_term"]["result"]["expired"] == 1 and not _there(store, ttl)
        assert second["active_forgetting"]["result"]["deleted"] == 1 and not _there(store, gone)
        assert "held_back" not in second["active_forgetting"]["result"]
        # Runs less than half a year apart delete as they always did.
        short = remember(store, "short one", ttl="1h")["id"]
        clock.advance(days=100)
        third = lifecycle.run_due_tasks(store)
    assert third["expire_short_term"]["result"] == {"expired": 1} and not _there(store, short)


def test_one_run_holds_back_every_deleting_task_though_the_first_stamps_its_own_run(store):
    """The first task of a run records its run at now: the others must still see the gap."""
    with clock.frozen(T0):
        _, gone, _ = _memories(store)
        lifecycle.run_due_tasks(store)
        clock.advance(days=400)
        report = lifecycle.run_due_tasks(store)
    assert report["expire_short_term"]["result"]["held_back"] == 1
    assert report["cleanup_archived"]["result"]["held_back"] == 1 and _there(store, gone)


def test_a_memory_at_health_0_waits_while_active_forgetting_last_ran_ahead(store):
    """The ahead branch deleted what was at health 0: health charged on a clock that was ahead."""
    with clock.frozen(T0):
        _, gone, _ = _memories(store)
    with store.write() as conn:  # as a run made ahead left it: health charged to 0, last run ahead
        conn.execute("UPDATE episodes SET health = 0 WHERE id = ?", (gone,))
        conn.execute("INSERT INTO tasks (name, last_run, interval_s) VALUES ('active_forgetting', ?, 86400)",
                     (clock.iso(clock.parse(AHEAD)),))
    with clock.frozen("2027-01-13T09:00:00+00:00"):
        result = lifecycle.active_forgetting(store)
    assert result["deleted"] == 0 and "after now" in result["skipped"] and _there(store, gone)
    status = {s["name"]: s for s in lifecycle.task_status(store)}
    assert "nor is one deleted" in status["active_forgetting"]["note"]


def test_remem_tasks_run_says_what_it_held_back():
    with_env = {"REMEM_NOW": T0}
    assert run_remem("remember", "short one about pelicans", "--ttl", "30d", env=with_env).returncode == 0
    assert run_remem("tasks", "--run", env=with_env).returncode == 0
    res = run_remem("tasks", "--run", env={"REMEM_NOW": AHEAD})
    assert res.returncode == 0, res.stderr
    line = next(l for l in res.stdout.splitlines() if l.startswith("ran expire_short_term:"))
    assert "expired 0" in line and "held_back 1" in line and "held back: now (2031-01-02 09:00) is" in line
    listed = run_remem("list", "--archived", "--json", env={"REMEM_NOW": T0})  # archived by the jump, kept
    assert "pelicans" in listed.stdout
