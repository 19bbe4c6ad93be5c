"""A clock that was once ahead: tasks that ran then keep a last_run after now. `remem tasks`
says so plainly (text and --json); the decays charge nothing twice and cost no scan while they
wait; every other task is back on its interval after one run, discovery looks at every memory
once, and sleep puts consolidate right.

The clock is moved with REMEM_NOW, as docs/LIFECYCLE.md says; the store, the bundled model and
the CLI are the real ones."""

from __future__ import annotations

import json

import pytest

from remem.engine import clock, lifecycle
from remem.engine.memories import remember
from remem.engine.store import Store

T0 = "2026-03-01T09:00:00+00:00"
AHEAD = "2031-01-02T09:00:00+00:00"  # the clock jumped here, and the tasks ran
RIGHT = "2026-03-05T09:00:00+00:00"  # the clock put right again
AHEAD_STORED = "2031-01-02T09:00:00.000000+00:00"
OTHERS = ("expire_short_term", "cleanup_archived", "discover_connections")


def at(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    monkeypatch.setenv("REMEM_NOW", when)


def jumped(store: Store, monkeypatch: pytest.MonkeyPatch, cfg: dict | None = None) -> str:
    """A memory made before the jump, every task run while the clock was ahead, the clock put
    right; returns the memory's id."""
    at(monkeypatch, T0)
    note = remember(store, "the release train leaves on thursdays")["id"]
    at(monkeypatch, AHEAD)
    lifecycle.run_due_tasks(store, cfg=cfg, force=True)
    at(monkeypatch, RIGHT)
    return note


def status(store: Store) -> dict[str, dict]:
    return {s["name"]: s for s in lifecycle.task_status(store)}


def test_remem_tasks_says_plainly_when_a_last_run_is_after_now(cli, store, monkeypatch):
    jumped(store, monkeypatch)
    said = cli("tasks")
    assert said.exit_code == 0, said.output
    lines = said.stdout.splitlines()
    decay = next(line for line in lines if line.startswith("strength_decay last ran"))
    assert decay.startswith("strength_decay last ran 2031-01-02 09:00, which is after now: the clock "
                            "was ahead then. That run charged decay up to then")
    assert "no time is charged twice" in decay and "remem forget ID --undo" in decay
    expire = next(line for line in lines if line.startswith("expire_short_term last ran"))
    assert "`remem tasks --run` runs it now" in expire
    assert not any(line.startswith("consolidate last ran") for line in lines)  # it never ran

    shown = {t["name"]: t for t in json.loads(cli("tasks", "--json").stdout)["tasks"]}
    assert shown["strength_decay"]["last_run_ahead"] is True and shown["strength_decay"]["due"] is True
    assert shown["strength_decay"]["note"] == decay
    assert shown["consolidate"]["last_run_ahead"] is False and shown["consolidate"]["note"] is None

    ran = cli("tasks", "--run")  # puts the other tasks right; the decays wait, and say why
    assert ran.exit_code == 0, ran.output
    assert "ran strength_decay: decayed 0, archived 0, skipped last ran 2031-01-02 09:00, after now " \
           "(the clock was ahead then)" in ran.stdout
    after = {t["name"]: t for t in json.loads(cli("tasks", "--json").stdout)["tasks"]}
    assert [n for n, t in after.items() if t["last_run_ahead"]] == list(lifecycle.DECAY_TASKS)
    assert all(after[n]["note"] is None and not after[n]["due"] for n in OTHERS)


def test_the_decays_wait_without_charging_twice_and_the_other_tasks_come_back_on_time(store, monkeypatch):
    cfg = lifecycle.config_mod.load()
    cfg["lifecycle"]["strength_half_life_days"] = 3650.0  # so the years ahead leave it live
    note = jumped(store, monkeypatch, cfg)
    row = store.episode(note)
    charged = row["strength"]
    assert not row["archived"] and charged == pytest.approx(2 ** (-1768 / 3650), rel=1e-9)

    report = lifecycle.run_due_tasks(store, cfg=cfg)
    for name in lifecycle.DECAY_TASKS:  # due, ran, charged nothing, and said so
        assert report[name]["ran"] and "after now" in report[name]["result"]["skipped"]
    assert store.episode(note)["strength"] == charged
    runs = status(store)
    assert all(runs[n]["last_run"] == AHEAD_STORED and runs[n]["last_run_ahead"] for n in lifecycle.DECAY_TASKS)
    assert all(runs[n]["last_run"] == clock.iso() and not runs[n]["due"] for n in OTHERS)
    assert not any(i["ran"] for n, i in lifecycle.run_due_tasks(store, cfg=cfg).items() if n in OTHERS)

    at(monkeypatch, "2031-01-03T09:00:00+00:00")  # the clock passes the run made ahead
    lifecycle.run_due_tasks(store, cfg=cfg)
    # one day past that run is owed, not the years since the set-back runs
    assert store.episode(note)["strength"] == pytest.approx(charged * 2 ** (-1 / 3650), rel=1e-9)
    assert not any(s["last_run_ahead"] for s in lifecycle.task_status(store))


def test_discovery_after_a_clock_that_was_ahead_links_the_memories_made_since(store, monkeypatch):
    from remem.engine import events

    jumped(store, monkeypatch)
    # Stored as an ingest stores them: connections are left to the discover task.
    texts = ["the staging database listens on port 5433 behind the vpn",
             "the staging database listens on port 5433 behind the office vpn"]
    events.store_events(store, [events.validate({"v": 1, "at": RIGHT, "kind": "note", "text": t})
                                for t in texts])
    assert store.scalar("SELECT count(*) FROM connections") == 0
    report = lifecycle.run_due_tasks(store)
    assert report["discover_connections"]["result"]["memories"] >= 2
    assert store.scalar("SELECT count(*) FROM connections WHERE origin = 'auto'") >= 1
    assert status(store)["discover_connections"]["last_run"] == clock.iso()


def test_a_sleep_while_discovery_waits_does_not_hide_that_it_has_every_memory_to_look_at(store, monkeypatch):
    """Sleep's connect pass looks from a mark of its own (ahead too, so it links nothing new);
    its stamp must not put discover_connections right before the task has looked at every memory."""
    from remem.engine import events, sleep

    at(monkeypatch, AHEAD)
    remember(store, "the release train leaves on thursdays")
    sleep.run_sleep_collect(store)  # every pass, the connect pass included, while ahead
    at(monkeypatch, RIGHT)
    texts = ["the staging database listens on port 5433 behind the vpn",
             "the staging database listens on port 5433 behind the office vpn"]
    events.store_events(store, [events.validate({"v": 1, "at": RIGHT, "kind": "note", "text": t})
                                for t in texts])
    sleep.run_sleep_collect(store, passes=["connect"])
    assert status(store)["discover_connections"]["last_run_ahead"]  # still waiting for its own run
    report = lifecycle.run_due_tasks(store)
    assert report["discover_connections"]["result"]["memories"] >= 2
    assert store.scalar("SELECT count(*) FROM connections WHERE origin = 'auto'") >= 1
    assert status(store)["discover_connections"]["last_run"] == clock.iso()


def test_a_sleep_puts_consolidate_back_on_time_after_the_clock_was_ahead(store, monkeypatch):
    from remem.engine import sleep

    at(monkeypatch, AHEAD)
    remember(store, "no, use uv not pip in this repo", kind="correction")
    sleep.run_sleep_collect(store, passes=["lessons"])
    assert status(store)["consolidate"]["last_run"] == AHEAD_STORED
    at(monkeypatch, RIGHT)
    assert "the next `remem sleep` runs it" in status(store)["consolidate"]["note"]
    sleep.run_sleep_collect(store, passes=["lessons"])
    right = status(store)["consolidate"]
    assert right["last_run"] == clock.iso() and not right["last_run_ahead"] and right["note"] is None


def test_a_sleep_after_the_clock_was_ahead_links_the_memories_made_since(store, monkeypatch):
    """Sleep's connect pass looks from where the last one got to; a mark after now (left by a
    sleep while the clock was ahead) is set aside, so what came since is linked at once."""
    from remem.engine import events, sleep

    at(monkeypatch, AHEAD)
    remember(store, "the release train leaves on thursdays")
    sleep.run_sleep_collect(store)  # the connect pass marks 2031
    at(monkeypatch, RIGHT)
    texts = ["the staging database listens on port 5433 behind the vpn",
             "the staging database listens on port 5433 behind the office vpn"]
    events.store_events(store, [events.validate({"v": 1, "at": RIGHT, "kind": "note", "text": t})
                                for t in texts])
    assert store.scalar("SELECT count(*) FROM connections WHERE origin = 'auto'") == 0
    done = sleep.run_sleep_collect(store, passes=["connect"])
    assert done["passes"]["connect"]["memories"] >= 2
    assert store.scalar("SELECT count(*) FROM connections WHERE origin = 'auto'") >= 1
    assert done["connected_until"] == clock.iso()
