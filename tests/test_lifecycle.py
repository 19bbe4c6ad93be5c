"""Memory lifecycle under a controlled clock: TTL, flashbulb, strength, importance, health,
archive, promotion, the due tasks, and the tag/time lists."""

from __future__ import annotations

import pytest

from remem.engine import clock, graph, lifecycle
from remem.engine.memories import remember, update_memory
from remem.engine.store import Store
from remem.errors import NotFound

T0 = "2026-03-01T09:00:00+00:00"


def gone_everywhere(store: Store, memory_id: str, words: str) -> None:
    """Not in episodes, the FTS index, the tag index or the graph."""
    with pytest.raises(NotFound):
        store.episode(memory_id)
    assert store.scalar("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH ?", (words,)) == 0
    assert store.scalar("SELECT count(*) FROM tags WHERE memory_id = ?", (memory_id,)) == 0
    assert store.scalar(
        "SELECT count(*) FROM connections WHERE src = ? OR dst = ?", (memory_id, memory_id)) == 0


def run(store: Store) -> dict:
    return lifecycle.run_due_tasks(store, force=True)


def test_short_term_memory_is_gone_after_its_ttl(store):
    with clock.frozen(T0):
        m = remember(store, "the staging box is flaky today", short_term=True, ttl="10m", tags=["ops"])
        assert m["memory_type"] == "short_term"
        assert clock.parse(m["expires_at"]) == clock.parse("2026-03-01T09:10:00+00:00")
        clock.advance(minutes=9)
        run(store)
        assert store.episode(m["id"])["id"] == m["id"]
        clock.advance(minutes=2)
        report = run(store)
        assert report["expire_short_term"]["result"]["expired"] == 1
        gone_everywhere(store, m["id"], "staging")


def test_flashbulb_survives_29_days_of_neglect_and_decays_after_protection(store):
    with clock.frozen(T0):
        bulb = remember(store, "production database dropped by a migration", arousal=0.9,
                        importance=0.3, short_term=True, ttl="1d")
        plain = remember(store, "the linter prefers single quotes", importance=0.5)
        # Force-promoted to long-term (the TTL asked for is dropped), importance floored at 0.9.
        assert bulb["memory_type"] == "long_term" and bulb["expires_at"] is None
        assert bulb["importance"] == pytest.approx(0.9)
        assert clock.parse(bulb["flashbulb_until"]) == clock.parse("2026-03-31T09:00:00+00:00")
        lifecycle.archive(store, plain["id"])  # so the health clock runs for the plain one
        clock.advance(days=29)
        run(store)
        b = store.episode(bulb["id"])
        assert (b["strength"], b["importance"], b["health"], b["archived"]) == (1.0, pytest.approx(0.9), 100.0, 0)
        p = store.episode(plain["id"])
        assert p["health"] == pytest.approx(100 - 2 * 29)
        clock.advance(days=31)  # 30 days past the end of protection
        run(store)
        b = store.episode(bulb["id"])
        assert b["importance"] == pytest.approx(0.9 * 0.995 ** 30, rel=1e-6)
        assert b["strength"] == pytest.approx(2 ** (-30 / 45), rel=1e-6)


def test_raising_arousal_later_makes_no_flashbulb(store):
    with clock.frozen(T0):
        m = remember(store, "a calm note about tabs", arousal=0.2, importance=0.4)
        after = update_memory(store, m["id"], arousal=0.95)
        assert after["arousal"] == pytest.approx(0.95)
        assert after["flashbulb_until"] is None and after["importance"] == pytest.approx(0.4)


def test_health_reaching_zero_deletes_everywhere(store):
    with clock.frozen(T0):
        doomed = remember(store, "remember to rotate the zebra credentials", short_term=True,
                          ttl="30d", tags=["secrets"])
        other = remember(store, "credentials live in the vault")
        graph.connect(store, doomed["id"], other["id"], "references")
        clock.advance(days=10)
        run(store)
        assert store.episode(doomed["id"])["health"] == pytest.approx(100 - 8 * 10)
        clock.advance(days=3)  # 13 days untouched: 100 - 104 < 0
        report = run(store)
        assert report["active_forgetting"]["result"]["deleted"] == 1
        gone_everywhere(store, doomed["id"], "zebra")
        assert store.episode(other["id"])["health"] == 100.0  # live long-term: kept


def test_a_short_term_memory_dated_before_it_was_stored_owes_health_only_from_storing(store):
    with clock.frozen(T0):
        # An event from a month ago, stored today with a 30-day TTL: it has 30 days to live.
        m = remember(store, "the staging cluster is frozen for the audit", short_term=True, ttl="30d",
                     at="2026-01-30T09:00:00+00:00")
        run(store)
        assert store.episode(m["id"])["health"] == 100.0
        clock.advance(days=2)
        run(store)
        assert store.episode(m["id"])["health"] == pytest.approx(100 - 8 * 2)


def test_archived_long_term_memory_is_deleted_when_health_runs_out(store):
    with clock.frozen(T0):
        m = remember(store, "old quokka deployment notes", tags=["old"])
        lifecycle.forget(store, m["id"])  # soft: archived
        assert store.episode(m["id"])["archived"] == 1
        clock.advance(days=49)
        run(store)
        assert store.episode(m["id"])["health"] == pytest.approx(2.0)
        clock.advance(days=1)
        run(store)
        gone_everywhere(store, m["id"], "quokka")


def test_live_long_term_memory_fades_by_strength_into_the_archive_not_out(store):
    from remem.engine.recall import recall

    with clock.frozen(T0):
        m = remember(store, "the walrus service listens on port 8443")
        clock.advance(days=120)
        run(store)
        row = store.episode(m["id"])
        assert row["archived"] == 0 and row["health"] == 100.0
        assert row["strength"] == pytest.approx(2 ** (-120 / 45), rel=1e-6)
        clock.advance(days=4)  # 124 days: 2^(-124/45) < 0.15
        run(store)
        row = store.episode(m["id"])
        assert row["archived"] == 1 and row["health"] == 100.0  # kept, hidden
        assert all(h["id"] != m["id"] for h in recall(store, "walrus service port", 5))
        back = lifecycle.restore(store, m["id"])
        assert back["archived"] == 0 and back["strength"] >= 1.0
        assert recall(store, "walrus service port", 1)[0]["id"] == m["id"]


def test_recall_raises_health(store):
    from remem.engine.recall import recall

    with clock.frozen(T0):
        m = remember(store, "the narwhal cache must be warmed before load tests",
                     short_term=True, ttl="30d")
        clock.advance(days=5)
        run(store)
        assert store.episode(m["id"])["health"] == pytest.approx(60.0)
        hits = recall(store, "narwhal cache warm", 1)
        assert hits[0]["id"] == m["id"]
        assert store.episode(m["id"])["health"] == pytest.approx(70.0)
        clock.advance(days=2)
        run(store)  # decay counts from the recall, not from before it
        assert store.episode(m["id"])["health"] == pytest.approx(70.0 - 16)


def test_recall_caps_health_at_100(store):
    from remem.engine.recall import recall

    with clock.frozen(T0):
        m = remember(store, "the ocelot build needs java 21")
        recall(store, "ocelot build java", 1)
        assert store.episode(m["id"])["health"] == 100.0


def test_promotion_stops_expiry(store):
    with clock.frozen(T0):
        m = remember(store, "the flamingo branch is frozen", ttl="1h")
        promoted = lifecycle.promote(store, m["id"])
        assert promoted["memory_type"] == "long_term" and promoted["expires_at"] is None
        clock.advance(days=2)
        run(store)
        assert store.episode(m["id"])["health"] == 100.0  # promoted: health restored, clock stopped
        clock.advance(days=20)
        run(store)
        row = store.episode(m["id"])
        assert row["memory_type"] == "long_term" and row["health"] == 100.0


def test_a_failing_task_is_reported_and_spares_the_others(store):
    def broken(store):
        raise RuntimeError("consolidation exploded")

    with clock.frozen(T0):
        m = remember(store, "short and doomed", ttl="1m")
        clock.advance(minutes=2)
        report = lifecycle.run_due_tasks(store, registry={"consolidate": broken, "strength_decay": broken})
    assert report["strength_decay"]["ran"] is False and "exploded" in report["strength_decay"]["error"]
    assert report["consolidate"]["ran"] is False
    assert report["expire_short_term"]["result"]["expired"] == 1
    assert report["importance_decay"]["ran"] is True
    with pytest.raises(NotFound):
        store.episode(m["id"])


def test_running_the_due_tasks_twice_equals_once(store):
    with clock.frozen(T0):
        remember(store, "short one about pelicans", ttl="30d")
        remember(store, "long one about herons")
        remember(store, "loud one about storks", arousal=0.85)
        a = remember(store, "archived one about cranes")
        lifecycle.archive(store, a["id"])
        clock.advance(days=40)
        lifecycle.run_due_tasks(store)
        first = store.rows("SELECT * FROM episodes ORDER BY id")
        edges = store.rows("SELECT src, dst, type FROM connections ORDER BY src, dst")
        again = lifecycle.run_due_tasks(store)
        assert not any(item["ran"] for item in again.values())  # nothing is due any more
        lifecycle.run_due_tasks(store, force=True)
        assert store.rows("SELECT * FROM episodes ORDER BY id") == first
        assert store.rows("SELECT src, dst, type FROM connections ORDER BY src, dst") == edges


def test_daily_runs_equal_one_late_run(tmp_path):
    """Decay is computed from elapsed time, so ten daily runs and one run after ten days agree."""
    stores = [Store(tmp_path / "daily.db"), Store(tmp_path / "late.db")]
    try:
        with clock.frozen(T0):
            for s in stores:
                remember(s, "gannets nest on cliffs", memory_id="aaaa000000000001", ttl="60d")
                remember(s, "boobies are gannets' cousins", memory_id="aaaa000000000002")
                lifecycle.archive(s, "aaaa000000000002")
                remember(s, "terns dive", memory_id="aaaa000000000003")
                lifecycle.run_due_tasks(s)
            for _ in range(10):
                clock.advance(days=1)
                lifecycle.run_due_tasks(stores[0])
            lifecycle.run_due_tasks(stores[1])
        cols = "SELECT id, strength, importance, health, archived FROM episodes ORDER BY id"
        daily, late = (s.rows(cols) for s in stores)
        for d, l in zip(daily, late):
            assert d["id"] == l["id"] and d["archived"] == l["archived"]
            for key in ("strength", "importance", "health"):
                assert d[key] == pytest.approx(l[key], rel=1e-9)
        assert daily[0]["health"] == pytest.approx(100 - 8 * 10)  # short-term
        assert daily[1]["health"] == pytest.approx(100 - 2 * 10)  # archived long-term
        assert daily[2]["strength"] == pytest.approx(2 ** (-10 / 45), rel=1e-9)
    finally:
        for s in stores:
            s.close()


def test_tasks_become_due_after_their_interval_and_registry_supplies_consolidate(store):
    calls = []
    with clock.frozen(T0):
        first = lifecycle.run_due_tasks(store)
        assert first["consolidate"]["ran"] is False and "sleep" in first["consolidate"]["reason"]
        clock.advance(minutes=6)
        report = lifecycle.run_due_tasks(store, registry={"consolidate": lambda s: calls.append(1) or {"n": 1}})
        ran = {name for name, item in report.items() if item["ran"]}
        assert ran == {"expire_short_term", "consolidate"}
        clock.advance(hours=1)
        ran = {n for n, i in lifecycle.run_due_tasks(store).items() if i["ran"]}
        assert ran == {"expire_short_term", "discover_connections"}
        status = {s["name"]: s for s in lifecycle.task_status(store)}
        assert status["importance_decay"]["due"] is False
        assert store.scalar("SELECT count(*) FROM tasks") == 7
    assert calls == [1]


def test_cleanup_archived_deletes_long_archived_memories_whatever_the_health_rates(store):
    from remem import config

    cfg = config.load()
    cfg["lifecycle"]["health_decay_long_term"] = 0.0  # active forgetting off for long-term
    with clock.frozen(T0):
        m = remember(store, "ancient ibis notes")
        lifecycle.forget(store, m["id"])
        clock.advance(days=179)
        lifecycle.run_due_tasks(store, cfg=cfg, force=True)
        assert store.episode(m["id"])["health"] == 100.0
        clock.advance(days=2)
        report = lifecycle.run_due_tasks(store, cfg=cfg, force=True)
        assert report["cleanup_archived"]["result"]["deleted"] == 1
        gone_everywhere(store, m["id"], "ibis")


def test_hard_forget_and_soft_forget(store):
    with clock.frozen(T0):
        a = remember(store, "soft forgotten lemur", tags=["x"])
        b = remember(store, "hard forgotten gecko", tags=["x"])
        lifecycle.forget(store, a["id"])
        lifecycle.forget(store, b["id"], hard=True)
        assert store.episode(a["id"])["archived"] == 1
        gone_everywhere(store, b["id"], "gecko")


def test_bad_lifecycle_values_are_refused(store):
    for kwargs in ({"importance": 1.5}, {"valence": -2}, {"arousal": "loud"}, {"ttl": "0s"}, {"ttl": "soon"}):
        with pytest.raises(ValueError):
            remember(store, "x", **kwargs)
    with pytest.raises(NotFound):
        lifecycle.promote(store, "nope-not-there")


# --------------------------------------------------------------------------- tags and time

@pytest.mark.parametrize("probe_from", [2000, 0], ids=["rare-tags", "common-tags"])
def test_list_memories_by_tags_time_type_and_pages(store, monkeypatch, probe_from):
    monkeypatch.setattr(lifecycle, "_TAG_PROBE_FROM", probe_from)
    with clock.frozen(T0):
        ids = {}
        ids["a"] = remember(store, "alpha", tags=["python", "style"])["id"]
        clock.advance(days=1)
        ids["b"] = remember(store, "bravo", tags=["python"])["id"]
        clock.advance(days=1)
        ids["c"] = remember(store, "charlie", tags=["Style"], ttl="7d")["id"]
        clock.advance(days=1)
        ids["d"] = remember(store, "delta", kind="correction")["id"]
        lifecycle.archive(store, ids["d"])

        def names(**kw):
            return [r["title"] for r in lifecycle.list_memories(store, **kw)]

        assert names() == ["charlie", "bravo", "alpha"]  # newest first, archived hidden
        assert names(tags=["python"]) == ["bravo", "alpha"]
        assert names(tags=["python", "style"]) == ["charlie", "bravo", "alpha"]
        assert names(tags=["python", "style"], all_tags=True) == ["alpha"]
        assert names(since="2026-03-02", until="2026-03-03T12:00:00+00:00") == ["charlie", "bravo"]
        assert names(since="36h") == ["charlie"]
        assert names(memory_type="short_term") == ["charlie"]
        assert names(archived=True) == ["delta"]
        assert names(archived=None, kind="correction") == ["delta"]
        # archiving stamped last_touched, so the window on last_touched finds it today
        assert names(archived=None, field="last_touched", since="1h") == ["delta"]
        pages = [names(limit=2, offset=0), names(limit=2, offset=2)]
        assert pages == [["charlie", "bravo"], ["alpha"]]
        row = lifecycle.list_memories(store, tags=["style"], all_tags=True)[0]
        assert "embedding" not in row and row["tags"] == ["style"]
        for key in ("id", "kind", "memory_type", "importance", "health", "strength",
                    "flashbulb_until", "expires_at", "valence", "arousal"):
            assert key in row
    with pytest.raises(ValueError):
        lifecycle.list_memories(store, field="nope")
    with pytest.raises(ValueError):
        lifecycle.list_memories(store, since="last tuesday")


def test_list_uses_indexes_for_time_and_tags(store):
    plan = " ".join(r["detail"] for r in store.rows(
        "EXPLAIN QUERY PLAN SELECT id FROM episodes WHERE created >= ? ORDER BY created DESC LIMIT 10",
        ("2026-01-01",)))
    assert "episodes_created" in plan
    plan = " ".join(r["detail"] for r in store.rows(
        "EXPLAIN QUERY PLAN SELECT memory_id FROM tags WHERE tag IN (?, ?)", ("a", "b")))
    assert "tags_tag" in plan or "INDEX" in plan


# --------------------------------------------------------------------------- CLI

def test_cli_remember_short_term_json_and_lifecycle_commands(cli):
    res = cli("remember", "the heron job runs at noon", "--short-term", "--ttl", "2h",
              "--valence", "-0.4", "--arousal", "0.3", "--importance", "0.7", "--tag", "ops", "--json")
    assert res.exit_code == 0, res.output
    import json

    mem = json.loads(res.stdout)
    assert mem["id"] and mem["memory_type"] == "short_term" and mem["expires_at"]
    assert (mem["valence"], mem["arousal"], mem["importance"]) == (-0.4, 0.3, 0.7)
    assert "embedding" not in mem
    other = json.loads(cli("remember", "noon is lunch", "--json").stdout)["id"]

    rows = json.loads(cli("list", "--type", "short_term", "--json").stdout)
    assert [r["id"] for r in rows] == [mem["id"]] and rows[0]["tags"] == ["ops"]
    assert cli("list", "--tag", "ops").exit_code == 0

    res = cli("promote", mem["id"], "--json")
    assert json.loads(res.stdout)["memory_type"] == "long_term"
    res = cli("connect", mem["id"], other, "--type", "caused_by", "--json")
    assert json.loads(res.stdout)["new"] is True
    assert "already connected" in cli("connect", mem["id"], other, "--type", "caused_by").stdout
    levels = json.loads(cli("graph", mem["id"], "--depth", "2", "--type", "caused_by", "--json").stdout)
    assert [n["id"] for n in levels[1]] == [other]
    assert cli("graph", mem["id"]).exit_code == 0

    assert cli("forget", other).exit_code == 0
    assert json.loads(cli("list", "--archived", "--json").stdout)[0]["id"] == other
    assert cli("forget", other, "--undo").exit_code == 0
    assert cli("forget", other, "--hard").exit_code == 0
    assert json.loads(cli("list", "--json").stdout)[0]["id"] == mem["id"]

    res = cli("tasks", "--run", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["ran"]["expire_short_term"]["ran"] is True
    assert cli("tasks").exit_code == 0


def test_cli_tasks_force_alone_runs_every_task_and_help_says_so(cli):
    """--force is never silently ignored: alone it runs every enabled task now, as with --run."""
    import json

    shown = cli("tasks", "--help")
    assert shown.exit_code == 0 and "implies --run" in " ".join(shown.stdout.split())
    res = cli("tasks", "--force", "--json")
    assert res.exit_code == 0, res.output
    ran = json.loads(res.stdout)["ran"]
    assert ran and all(item["ran"] for name, item in ran.items() if name != "consolidate")
    again = json.loads(cli("tasks", "--force", "--json").stdout)["ran"]  # nothing is due now: forced
    assert again["strength_decay"]["ran"] is True
    assert "ran" not in json.loads(cli("tasks", "--json").stdout)


def test_cli_errors_are_one_line(cli):
    for args in (("connect", "aaaa", "bbbb", "--type", "loves"), ("forget", "nothing-here"),
                 ("remember", "x", "--ttl", "soon"), ("list", "--type", "medium_term"),
                 ("graph", "nothing-here", "--depth", "2")):
        res = cli(*args)
        assert res.exit_code == 1, args
        assert res.output.strip().count("\n") == 0 and res.output.startswith("remem: "), res.output


def test_cli_remember_subprocess_prints_id_json(remem_cli):
    res = remem_cli("remember", "subprocess memory about puffins", "--ttl", "30s", "--json")
    assert res.returncode == 0, res.stderr
    assert res.json()["id"] and res.json()["memory_type"] == "short_term"
    # 2099 is far past anything this memory has seen: the run holds the deletion back
    res = remem_cli("tasks", "--run", "--json", env={"REMEM_NOW": "2099-01-01T00:00:00+00:00"})
    assert res.json()["ran"]["expire_short_term"]["result"]["held_back"] == 1, res.stdout
    res = remem_cli("tasks", "--run", "--force", "--json", env={"REMEM_NOW": "2099-01-01T00:10:00+00:00"})
    assert res.json()["ran"]["expire_short_term"]["result"]["expired"] == 1, res.stdout


# --------------------------------------------------------------------------- invariants

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_memory = st.tuples(st.sampled_from(["short_term", "long_term"]), st.booleans(), st.booleans(),
                    st.integers(1, 60))
_step = st.tuples(st.floats(0, 45), st.lists(st.integers(0, 7), max_size=3))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(memories=st.lists(_memory, min_size=1, max_size=8), steps=st.lists(_step, min_size=1, max_size=6))
def test_no_memory_is_kept_by_one_rule_and_deleted_by_another(tmp_path_factory, memories, steps):
    """Whatever happens, an automatic deletion only takes a memory that was short-term or
    archived, and a protected flashbulb memory is never changed by the tasks."""
    from datetime import timedelta

    from remem.engine.recall import touch_memories

    path = tmp_path_factory.mktemp("inv") / "memory.db"
    with Store(path) as s, clock.frozen(T0):
        ids = []
        for i, (mtype, archived, loud, ttl_days) in enumerate(memories):
            fields = lifecycle.creation_fields(memory_type=mtype, ttl_s=ttl_days * 86400.0,
                                               arousal=0.9 if loud else 0.1)
            mid = f"inv{i:03d}"
            s.put_episodes([{"id": mid, "kind": "note", "title": mid, "gist": mid,
                             "archived": int(archived), **fields}])
            ids.append(mid)
        for days, touched in steps:
            clock.advance(days=days)
            touch_memories(s, [ids[t] for t in touched if t < len(ids)
                               and s.one("SELECT 1 FROM episodes WHERE id = ?", (ids[t],))])
            before = {r["id"]: r for r in s.rows("SELECT * FROM episodes")}
            lifecycle.run_due_tasks(s, force=True)
            after = {r["id"]: r for r in s.rows("SELECT * FROM episodes")}
            now = clock.now()
            for mid, row in before.items():
                if mid not in after:
                    assert row["memory_type"] == "short_term" or row["archived"], row
                    continue
                if lifecycle.is_protected(row, now - timedelta(seconds=1)) and lifecycle.is_protected(row, now):
                    kept = ("strength", "importance", "health", "archived")
                    assert [after[mid][k] for k in kept] == [row[k] for k in kept]
                if row["memory_type"] == "long_term" and not row["archived"]:
                    assert after[mid]["health"] == row["health"]  # kept: its health does not fall


def test_sleep_stamps_consolidate_and_discovery_when_their_passes_run(store):
    """`remem tasks` tells the truth: consolidate is stamped by every sleep that runs the lessons
    pass (not by a weekly placeholder), discover_connections by the connect pass, and a sleep
    that skips those passes stamps neither."""
    from remem.engine import sleep

    def last_runs() -> dict:
        return {s["name"]: s["last_run"] for s in lifecycle.task_status(store)}

    with clock.frozen(T0):
        remember(store, "the staging database listens on port 5433")
        sleep.run_sleep_collect(store)
        first = last_runs()
        assert first["consolidate"] == clock.iso() and first["discover_connections"] == clock.iso()
        clock.advance(days=1)
        sleep.run_sleep_collect(store)  # a nightly sleep: consolidation ran again tonight
        night = last_runs()
        assert night["consolidate"] == clock.iso() and night["discover_connections"] == clock.iso()
        clock.advance(days=1)
        sleep.run_sleep_collect(store, passes=["expire"])  # neither pass ran: neither is stamped
        assert last_runs()["consolidate"] == night["consolidate"]
        assert last_runs()["discover_connections"] == night["discover_connections"]
        assert last_runs()["importance_decay"] == clock.iso()
        # strength decay is the decay pass's, once per sleep, not expire's too
        assert last_runs()["strength_decay"] == night["strength_decay"]
        sleep.run_sleep_collect(store, passes=["lessons"])
        consolidated = clock.iso()
        assert last_runs()["consolidate"] == consolidated
        assert last_runs()["discover_connections"] == night["discover_connections"]
        clock.advance(minutes=1)
        sleep.run_sleep_collect(store, passes=["connect"])
        assert last_runs()["discover_connections"] == clock.iso()
        sleep.run_sleep_collect(store, passes=["lessons"], dry_run=True)  # a dry run stamps nothing
        assert last_runs()["consolidate"] == consolidated


def test_cli_list_shows_the_memory_type_as_a_word(cli):
    """`remem list` shows "long" / "short", not the cut "long_" / "short" of long_term / short_term."""
    import re

    assert cli("remember", "the heron job runs at noon", "--short-term", "--ttl", "2h").exit_code == 0
    assert cli("remember", "noon is lunch").exit_code == 0
    res = cli("list")
    assert res.exit_code == 0, res.output
    assert "long_" not in res.stdout
    cells = {cell.strip() for line in res.stdout.splitlines() for cell in re.split(r"[│|]", line)}
    assert {"long", "short"} <= cells, res.stdout


def test_cli_tasks_reports_a_task_that_failed_and_exits_1(cli, monkeypatch):
    """A task that raises is named on stderr with its error and the command exits 1, with or
    without --json (whose output is unchanged); the other tasks still ran."""
    import json

    def boom(store, cfg=None):
        raise RuntimeError("disk on fire")

    # Only this patch is undone below (monkeypatch.undo() would also undo the private home).
    with monkeypatch.context() as patched:
        patched.setattr(lifecycle, "strength_decay", boom)
        res = cli("tasks", "--run", "--force")
        assert res.exit_code == 1
        assert "failed strength_decay: RuntimeError('disk on fire')" in res.stderr
        assert "ran importance_decay" in res.stdout and "failed" not in res.stdout
        res = cli("tasks", "--force", "--json")
        assert res.exit_code == 1 and "failed strength_decay" in res.stderr
        ran = json.loads(res.stdout)["ran"]
        assert ran["strength_decay"]["ran"] is False and "disk on fire" in ran["strength_decay"]["error"]
        assert ran["importance_decay"]["ran"] is True
    assert cli("tasks", "--run").exit_code == 0  # it stayed due and now runs


def test_a_date_only_until_includes_that_whole_day(store, cli):
    import json

    from remem.engine.recall import recall

    with clock.frozen("2026-11-20T15:30:00+00:00"):
        late = remember(store, "late afternoon deploy note")["id"]
    with clock.frozen("2026-11-21T00:00:00+00:00"):
        remember(store, "next midnight deploy note")
    with clock.frozen("2026-11-25T00:00:00+00:00"):
        ids = [r["id"] for r in lifecycle.list_memories(store, until="2026-11-20")]
        assert ids == [late]
        assert lifecycle.list_memories(store, until="2026-11-19") == []
        assert len(lifecycle.list_memories(store, since="2026-11-20", until="2026-11-21")) == 2
        # a time of day given is taken as it is
        assert lifecycle.list_memories(store, until="2026-11-20T15:00:00+00:00") == []
        hits = recall(store, "deploy", 10, until="2026-11-20", touch=False)
        assert [h["id"] for h in hits] == [late]
    assert clock.when("2026-11-20", "until") == "2026-11-20T23:59:59.999999+00:00"
    assert clock.when("2026-11-20", "since") == "2026-11-20T00:00:00.000000+00:00"
    with pytest.raises(ValueError, match="not a time"):
        clock.when("2026-02-30", "until")
    listed = cli("list", "--until", "2026-11-20", "--json")
    assert listed.exit_code == 0 and [r["id"] for r in json.loads(listed.stdout)] == [late]
