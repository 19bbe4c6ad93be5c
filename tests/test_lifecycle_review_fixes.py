"""The memory lifecycle where a review found it wrong: a re-read transcript kept its memory's
importance and emotion, tasks turned off in [tasks] that sleep still ran, a short-term memory
past its TTL still read, linked, walked and promoted, a clock set back, `forget --undo` of a
live memory, many --all-tags, and --until with date forms other than YYYY-MM-DD.

The clock is moved with REMEM_NOW, as docs/LIFECYCLE.md says; the store, the bundled model,
the MCP client session and the CLI are the real ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import clock, graph, lifecycle
from remem.engine.memories import remember, update_memory
from remem.engine.store import Store
from remem.errors import NotFound
from tests.conftest import call_tool, server_in_process

T0 = "2026-03-01T09:00:00+00:00"
TRANSCRIPT = Path("/work/shared/fixtures/claude-code/v1-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")
if not TRANSCRIPT.exists():  # the same recorded session, kept beside the tests
    TRANSCRIPT = Path(__file__).parent / "fixtures" / "claude_code" / TRANSCRIPT.name


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def at(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    monkeypatch.setenv("REMEM_NOW", when)


# --------------------------------------------------------------------------- 1. re-read

@pytest.mark.skipif(not TRANSCRIPT.exists(), reason="the recorded Claude Code session is not here")
def test_a_grown_transcript_read_again_keeps_its_memorys_importance_and_emotion(store, tmp_path, monkeypatch):
    from remem.engine.ingest import ingest_paths

    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines(keepends=True)
    file = tmp_path / TRANSCRIPT.name
    file.write_text("".join(lines[:20]), encoding="utf-8")
    at(monkeypatch, T0)
    ingest_paths(store, [file], source="claude-code")
    session = store.one("SELECT id, gist FROM episodes WHERE kind = 'session'")
    update_memory(store, session["id"], importance=0.95, valence=-0.5, arousal=0.3)
    at(monkeypatch, "2026-03-11T09:00:00+00:00")
    lifecycle.importance_decay(store)  # ten days of it: the lifecycle's own change
    decayed = store.episode(session["id"])["importance"]
    assert decayed < 0.95
    file.write_text("".join(lines), encoding="utf-8")  # the session went on
    ingest_paths(store, [file], source="claude-code")
    again = store.episode(session["id"])
    assert again["gist"] != session["gist"]  # read again: its words follow the longer session
    assert (again["importance"], again["valence"], again["arousal"]) == (decayed, -0.5, 0.3)
    assert again["memory_type"] == "long_term" and again["expires_at"] is None


# --------------------------------------------------------------------------- 2. tasks off

def test_sleep_skips_strength_decay_and_connect_when_their_tasks_are_off(cli, store, monkeypatch):
    at(monkeypatch, T0)
    note = remember(store, "the nightly export writes to the cold bucket")["id"]
    for task in ("strength_decay", "discover_connections"):
        assert cli("config", "set", f"tasks.{task}", "0").exit_code == 0
    at(monkeypatch, "2026-12-01T09:00:00+00:00")  # long enough to archive it, were decay on
    done = cli("sleep", "--pass", "decay", "--pass", "connect", "--json")
    assert done.exit_code == 0, done.output
    passes = json.loads(done.stdout)["passes"]
    assert passes["decay"]["skipped"].startswith("off (tasks.strength_decay = 0")
    assert passes["connect"]["skipped"].startswith("off (tasks.discover_connections = 0")
    assert "connected_until" not in json.loads(done.stdout)
    memory = store.episode(note)
    assert memory["strength"] == 1.0 and not memory["archived"]
    runs = {s["name"]: s["last_run"] for s in lifecycle.task_status(store)}
    assert runs["strength_decay"] is None and runs["discover_connections"] is None
    said = cli("sleep", "--pass", "decay")
    assert said.exit_code == 0 and "skipped: off (tasks.strength_decay = 0" in said.stdout
    # on again: it runs, and owes the whole time since the memory was stored
    assert cli("config", "set", "tasks.strength_decay", "86400").exit_code == 0
    assert cli("sleep", "--pass", "decay", "--json").exit_code == 0
    assert store.episode(note)["archived"]


def test_sleep_learns_no_lesson_while_the_consolidate_task_is_off(cli, store, monkeypatch):
    at(monkeypatch, T0)
    for n, where in enumerate(("/tmp/p1", "/tmp/p2")):
        remember(store, "no, use uv not pip", kind="correction", cwd=where, session_id=f"s{n}")
    assert cli("config", "set", "tasks.consolidate", "0").exit_code == 0
    done = cli("sleep", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["passes"]["lessons"]["skipped"].startswith("off (tasks.consolidate = 0")
    assert store.scalar("SELECT count(*) FROM lessons") == 0
    assert {s["name"]: s["last_run"] for s in lifecycle.task_status(store)}["consolidate"] is None
    said = cli("sleep", "--pass", "lessons")
    assert said.exit_code == 0 and "skipped: off (tasks.consolidate = 0" in said.stdout
    # on again: it reads what waited meanwhile
    assert cli("config", "set", "tasks.consolidate", "604800").exit_code == 0
    assert cli("sleep", "--pass", "lessons", "--json").exit_code == 0
    assert store.scalar("SELECT count(*) FROM lessons WHERE status = 'active'") == 1


# --------------------------------------------------------------------------- 3. expired

@pytest.mark.anyio
async def test_a_short_term_memory_past_its_ttl_is_gone_for_every_read_before_the_expire_task(
        store, monkeypatch) -> None:
    from mcp.client import Client

    at(monkeypatch, T0)
    brief = remember(store, "the staging box reboots at noon today", ttl="10m")["id"]
    keep = remember(store, "the staging box is rebuilt every sunday night")["id"]
    graph.connect(store, keep, brief, "related_to")
    at(monkeypatch, "2026-03-01T09:11:00+00:00")  # past the TTL; no expire task has run
    assert store.scalar("SELECT count(*) FROM episodes WHERE id = ?", (brief,)) == 1
    for read in (lambda: store.episode(brief), lambda: store.episode(brief[:6]),
                 lambda: lifecycle.promote(store, brief), lambda: lifecycle.restore(store, brief),
                 lambda: graph.connect(store, brief, keep, "supports"),
                 lambda: graph.connect(store, keep, brief, "supports"),
                 lambda: graph.traverse(store, brief), lambda: update_memory(store, brief, importance=0.9)):
        with pytest.raises(NotFound, match="expired"):
            read()
    assert graph.traverse(store, keep, depth=2) == [graph.traverse(store, keep)[0]]
    assert graph.edges_of(store, keep) == []
    again = remember(store, "the staging box reboots at noon today, again")["id"]  # discovers links
    linked = store.rows("SELECT src, dst FROM connections WHERE src = ? OR dst = ?", (again, again))
    assert all(brief not in (e["src"], e["dst"]) for e in linked)
    graph.discover_all(store)
    assert store.scalar("SELECT count(*) FROM connections WHERE (src = ? OR dst = ?) AND type = 'similar_to'",
                        (brief, brief)) == 0
    async with Client(server_in_process()) as client:
        for tool, args in (("get_memory", {"id": brief}), ("promote", {"id": brief}),
                           ("traverse", {"id": brief}), ("connect", {"source": keep, "target": brief, "type": "supports"})):
            ok, said = await call_tool(client, tool, args)
            assert not ok and "expired" in said, (tool, said)
        ok, walked = await call_tool(client, "traverse", {"id": keep, "depth": 2})
        assert ok and brief not in json.dumps(walked), walked


# --------------------------------------------------------------------------- 4. clock set back

def test_a_clock_set_back_never_moves_last_run_back_nor_charges_decay_twice(store, monkeypatch):
    at(monkeypatch, T0)
    note = remember(store, "the release train leaves on thursdays")["id"]
    at(monkeypatch, "2026-03-11T09:00:00+00:00")
    lifecycle.strength_decay(store)
    after_ten = store.episode(note)["strength"]
    at(monkeypatch, "2026-03-05T09:00:00+00:00")  # set back
    status = {s["name"]: s for s in lifecycle.task_status(store)}
    assert status["strength_decay"]["due"]  # not "not due until 2026-03-12"
    lifecycle.strength_decay(store)
    assert store.episode(note)["strength"] == after_ten  # nothing owed for time charged already
    runs = {s["name"]: s["last_run"] for s in lifecycle.task_status(store)}
    assert runs["strength_decay"] == "2026-03-11T09:00:00.000000+00:00"
    lifecycle.run_due_tasks(store, force=True)
    assert {s["name"]: s["last_run"] for s in lifecycle.task_status(store)}["expire_short_term"] \
        == "2026-03-05T09:00:00.000000+00:00"
    at(monkeypatch, "2026-03-12T09:00:00+00:00")
    lifecycle.strength_decay(store)
    # one day past 03-11 is owed, not the seven since the set-back run
    assert store.episode(note)["strength"] == pytest.approx(after_ten * 2 ** (-1 / 45))


# --------------------------------------------------------------------------- 5. forget --undo

def test_forget_undo_of_a_live_memory_changes_nothing_and_forget_twice_keeps_the_first_stamp(
        cli, store, monkeypatch):
    at(monkeypatch, T0)
    note = remember(store, "the invoice job retries three times")["id"]
    with store.write() as conn:
        conn.execute("UPDATE episodes SET strength = 0.4, health = 60 WHERE id = ?", (note,))
    before = store.episode(note)
    at(monkeypatch, "2026-03-02T09:00:00+00:00")
    said = cli("forget", note, "--undo")
    assert said.exit_code == 0 and said.stdout.strip() == f"{note} is not archived; nothing to undo"
    shown = json.loads(cli("forget", note, "--undo", "--json").stdout)
    assert shown["changed"] is False and shown["message"] == f"{note} is not archived; nothing to undo"
    after = store.episode(note)
    assert (after["strength"], after["health"], after["last_touched"]) == \
        (before["strength"], before["health"], before["last_touched"])
    assert cli("forget", note).exit_code == 0
    archived_at = store.episode(note)["last_touched"]
    at(monkeypatch, "2026-03-20T09:00:00+00:00")
    again = cli("forget", note)
    assert again.exit_code == 0 and "is archived already" in again.stdout
    assert store.episode(note)["last_touched"] == archived_at  # its health clock is not restarted
    back = json.loads(cli("forget", note, "--undo", "--json").stdout)
    assert back["changed"] is True and back["archived"] is False and back["strength"] == 1.0


# --------------------------------------------------------------------------- 6. many tags

@pytest.mark.anyio
async def test_many_all_tags_list_and_search_without_crashing(cli, store) -> None:
    from mcp.client import Client

    both = remember(store, "the cache warms at six", tags=["cache", "ops"])["id"]
    remember(store, "the cache is cold at night", tags=["cache"])
    assert [r["id"] for r in lifecycle.list_memories(store, tags=["cache", "ops"], all_tags=True)] == [both]
    many = [f"t{i}" for i in range(600)]
    assert lifecycle.list_memories(store, tags=many, all_tags=True) == []
    assert lifecycle.list_memories(store, tags=["cache", "ops", *many[:30]], all_tags=True) == []
    args = [a for t in many for a in ("--tag", t)]
    listed = cli("list", *args, "--all-tags", "--json")
    assert listed.exit_code == 0 and json.loads(listed.stdout) == [], listed.output
    assert len(json.loads(cli("list", *args, "--tag", "ops", "--json").stdout)) == 1  # any of them
    async with Client(server_in_process()) as client:
        ok, got = await call_tool(client, "search", {"tags": many, "all_tags": True})
        assert ok and got["hits"] == [], got


# --------------------------------------------------------------------------- 7. --until forms

@pytest.mark.parametrize("day", ["2026-11-20", "2026-11-20Z", "20261120", "20261120Z", "2026-W47-5",
                                 "2026W475", "2026-11-20+00:00"])
def test_until_any_date_only_form_includes_that_whole_day(store, cli, monkeypatch, day):
    at(monkeypatch, "2026-11-20T15:30:00+00:00")
    late = remember(store, "late afternoon deploy note")["id"]
    at(monkeypatch, "2026-11-21T00:00:00+00:00")
    remember(store, "next midnight deploy note")
    at(monkeypatch, "2026-11-25T00:00:00+00:00")
    assert [r["id"] for r in lifecycle.list_memories(store, until=day)] == [late]
    listed = cli("list", "--until", day, "--json")
    assert listed.exit_code == 0 and [r["id"] for r in json.loads(listed.stdout)] == [late]
    assert len(lifecycle.list_memories(store, since=day)) == 2


def test_a_week_is_monday_to_sunday_and_a_day_with_an_offset_is_that_day_there():
    assert clock.when("2026-W09", "since") == "2026-02-23T00:00:00.000000+00:00"
    assert clock.when("2026-W09", "until") == "2026-03-01T23:59:59.999999+00:00"
    assert clock.when("2026-03-01+02:00", "since") == "2026-02-28T22:00:00.000000+00:00"
    assert clock.when("2026-03-01+02:00", "until") == "2026-03-01T21:59:59.999999+00:00"
    assert clock.when("9999-12-31", "until") == "9999-12-31T23:59:59.999999+00:00"
    for bad in ("2026-02-30", "2026-W54", "2026-03-01+24:00"):
        with pytest.raises(ValueError, match="not a time"):
            clock.when(bad, "until")
    with pytest.raises(ValueError, match="outside year 1 to 9999"):
        clock.when("9999-12-31-05:00", "until")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(day=st.dates(), form=st.sampled_from(["%Y-%m-%d", "%Y%m%d", "%Y-%m-%dZ", "%Y%m%dZ", "iso-week"]))
def test_every_date_only_form_spans_exactly_its_day(day, form):
    if form == "iso-week":
        text = "%04d-W%02d-%d" % day.isocalendar()
    else:  # by hand: strftime writes fewer than four digits for a year below 1000
        text = form.replace("%Y", "%04d" % day.year).replace("%m", "%02d" % day.month) \
            .replace("%d", "%02d" % day.day)
    lo, hi = clock.when(text, "since"), clock.when(text, "until")
    assert lo == f"{day.isoformat()}T00:00:00.000000+00:00"
    assert hi == f"{day.isoformat()}T23:59:59.999999+00:00"


def test_forget_hard_deletes_an_expired_short_term_memory_at_once(home):
    """Its words must not wait for the expire task: a hard delete is asked for now."""
    import os
    import sqlite3

    from tests.conftest import run_remem

    made = run_remem("remember", "temp: staging db is on host 10.0.0.5", "--ttl", "1h", "--json",
                     env={**os.environ, "REMEM_NOW": "2026-03-01T12:00:00Z"})
    assert made.returncode == 0, made.stderr
    memory_id = json.loads(made.stdout)["id"]
    later = {**os.environ, "REMEM_NOW": "2026-03-01T14:00:00Z"}
    assert run_remem("forget", memory_id, env=later).returncode == 1  # expired: not found for an archive
    gone = run_remem("forget", memory_id, "--hard", env=later)
    assert gone.returncode == 0, gone.stderr
    conn = sqlite3.connect(home / "memory.db")
    assert conn.execute("SELECT count(*) FROM episodes WHERE id = ?", (memory_id,)).fetchone()[0] == 0
