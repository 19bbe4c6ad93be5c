"""restore, export and import against the inputs that used to lose or corrupt a memory:
a foreign SQLite file, an export imported twice or into a memory with its own connections,
a bad timestamp, and the lifecycle's clock carried across an export."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from remem.engine import backup as backup_mod
from remem.engine import lessons
from remem.engine.memories import remember
from remem.engine.store import MIGRATIONS, Store


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _foreign(path: Path, user_version: int = 0, episodes: bool = False) -> Path:
    conn = sqlite3.connect(str(path))
    conn.execute("CREATE TABLE x (a)")
    if episodes:
        conn.execute("CREATE TABLE episodes (id TEXT)")
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.commit()
    conn.close()
    return path


# ------------------------------------------------------------------ restore a foreign file

@pytest.mark.parametrize("version,episodes,said", [
    (0, False, "not a remem backup"), (0, True, "not a remem backup"), (3, False, "not a remem backup"),
    (len(MIGRATIONS) + 1, True, "newer remem"),
])
def test_restore_refuses_a_database_that_is_not_a_remem_backup_and_leaves_it_untouched(
        home, tmp_path, version, episodes, said):
    with Store() as live:
        remember(live, "precious memory")
    foreign = _foreign(tmp_path / "foreign.db", version, episodes)
    before = _digest(foreign)
    with pytest.raises(ValueError) as refused:
        backup_mod.restore(foreign)
    message = str(refused.value)
    assert "\n" not in message and said in message
    assert _digest(foreign) == before  # never migrated in place
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("foreign")) == ["foreign.db"]
    with Store() as live:
        assert live.scalar("SELECT count(*) FROM episodes") == 1
    assert not list(home.glob("memory.db.before-restore*"))


def test_cli_restore_of_a_foreign_file_exits_1_with_one_line(home, tmp_path, remem_cli):
    assert remem_cli("remember", "precious memory").returncode == 0
    foreign = _foreign(tmp_path / "foreign.db")
    before = _digest(foreign)
    res = remem_cli("restore", str(foreign), "--yes")
    assert res.returncode == 1 and "not a remem backup" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert _digest(foreign) == before
    assert "precious memory" in json.dumps(remem_cli("list", "--json").json())


def test_restore_of_an_older_schema_backup_leaves_the_backup_as_it_was_and_migrates_the_copy(home, tmp_path):
    old = tmp_path / "old.db"
    with Store(old, migrate_upto=3) as early:
        with early.write() as conn:
            conn.execute("INSERT INTO episodes (id, kind, title, at, created) VALUES "
                         "('e-old', 'note', 'written by an older remem', '2026-01-01T00:00:00+00:00', "
                         "'2026-01-01T00:00:00+00:00')")
    before = _digest(old)
    backup_mod.restore(old)
    assert _digest(old) == before
    with Store() as restored:
        assert restored.scalar("PRAGMA user_version") == len(MIGRATIONS)
        assert restored.scalar("SELECT count(*) FROM episodes") == 1


# ------------------------------------------------------------------ importing twice

def _fill(store: Store) -> None:
    a = remember(store, "use uv, not pip", tags=["python"], importance=0.7)
    b = remember(store, "the build needs node 20", kind="environment")
    lessons.add_lesson(store, "Use uv to install packages", "correction", sources=[a["id"], b["id"]])


def _export(store: Store, path: Path) -> Path:
    with path.open("w") as out:
        backup_mod.export_jsonl(store, out)
    return path


def _import(store: Store, path: Path) -> dict:
    with path.open() as handle:
        return backup_mod.import_jsonl(store, handle)


def _indexes_sound(store: Store) -> None:
    assert store.scalar("PRAGMA integrity_check") == "ok"
    for fts in ("episodes_fts", "lessons_fts"):
        # rank 1 compares the index with its table (as `remem doctor` does); raises
        # "database disk image is malformed" when the index holds rows the table has not
        store.conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")


def test_importing_the_same_export_twice_keeps_both_full_text_indexes_sound(home, tmp_path):
    # Each import opens the memory anew, as `remem import` does: the connection that first
    # created a memory has recursive triggers on (sqlite-utils' migrations set it), which hid this.
    other = tmp_path / "other.db"
    Store(other).close()
    with Store() as original:
        _fill(original)
        dump = _export(original, tmp_path / "e.jsonl")
        before = backup_mod.snapshot(original)
    with Store() as original:
        assert _import(original, dump)["errors"] == []  # into the memory it came from
        _indexes_sound(original)
        assert backup_mod.snapshot(original) == before
    for _ in range(2):
        with Store(other) as copy:
            _import(copy, dump)
    with Store(other) as copy:
        _indexes_sound(copy)
        assert copy.scalar("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH 'node'") == 1
        assert copy.scalar("SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH 'packages'") == 1
        assert backup_mod.snapshot(copy) == before


def test_an_import_that_changes_an_episode_reindexes_its_new_words(home, tmp_path):
    with Store() as store:
        first = remember(store, "the cache lives in redis")
        row = {"table": "episodes", **{k: v for k, v in store.one(
            "SELECT * FROM episodes WHERE id = ?", (first["id"],)).items() if k not in ("seq", "embedding")}}
    row["gist"] = row["title"] = "the cache lives in memcached"
    with Store() as store:
        backup_mod.import_jsonl(store, iter([json.dumps(row)]))
        _indexes_sound(store)
        assert store.scalar("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH 'memcached'") == 1
        assert store.scalar("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH 'redis'") == 0


# ------------------------------------------------------------------ the importer's own edges

def _edges(store: Store) -> set[tuple[str, str, str]]:
    return {(r["src"], r["dst"], r["type"]) for r in store.rows("SELECT src, dst, type FROM connections")}


def test_importing_into_a_memory_keeps_its_own_connections(home, tmp_path):
    from remem.engine import graph

    with Store(tmp_path / "elsewhere.db") as elsewhere:
        c = remember(elsewhere, "gamma kafka")
        d = remember(elsewhere, "delta rabbitmq")
        graph.connect(elsewhere, c["id"], d["id"], "caused_by")
        graph.connect(elsewhere, d["id"], c["id"], "related_to")
        dump = _export(elsewhere, tmp_path / "elsewhere.jsonl")
    assert all("id" not in json.loads(line) for line in dump.read_text().splitlines()
               if json.loads(line)["table"] == "connections")  # a local row number, not exported
    with Store() as mine:
        a = remember(mine, "alpha redis")
        b = remember(mine, "beta postgres")
        graph.connect(mine, a["id"], b["id"], "caused_by")  # edge id 1 here, as c->d is there
        graph.connect(mine, a["id"], b["id"], "related_to")
    with Store() as mine:
        assert _import(mine, dump)["errors"] == []
        assert _import(mine, dump)["errors"] == []  # a second import adds no edge twice
    with Store() as mine:
        assert _edges(mine) == {(a["id"], b["id"], "caused_by"), (a["id"], b["id"], "related_to"),
                                (c["id"], d["id"], "caused_by"), (d["id"], c["id"], "related_to")}


def test_an_older_export_with_connection_ids_replaces_no_local_edge(home, tmp_path):
    from remem.engine import graph

    with Store() as mine:
        a = remember(mine, "alpha redis")
        b = remember(mine, "beta postgres")
        graph.connect(mine, a["id"], b["id"], "caused_by")
        local_id = mine.scalar("SELECT id FROM connections")
    old = {"table": "connections", "id": local_id, "src": "x1", "dst": "x2", "type": "caused_by",
           "weight": 0.5, "origin": "explicit", "created": "2026-01-01T00:00:00+00:00"}
    # the same edge seen from the other end: one symmetric edge, not two
    mirrored = {"table": "connections", "src": b["id"], "dst": a["id"], "type": "related_to",
                "weight": 1.0, "origin": "explicit", "created": "2026-01-01T00:00:00+00:00"}
    with Store() as mine:
        graph.connect(mine, a["id"], b["id"], "related_to")
        assert backup_mod.import_jsonl(mine, iter([json.dumps(old), json.dumps(mirrored)]))["errors"] == []
        assert _edges(mine) == {(a["id"], b["id"], "caused_by"), ("x1", "x2", "caused_by"),
                                (a["id"], b["id"], "related_to")}


# ------------------------------------------------------------------ a time that is not one

def test_a_row_with_a_bad_time_is_refused_by_line_and_the_memory_keeps_working(home, tmp_path, remem_cli):
    assert remem_cli("remember", "docker volumes note").returncode == 0
    good = "2026-01-01T00:00:00+00:00"
    lines = [
        {"table": "episodes", "id": "evil1", "kind": "note", "title": "t", "at": "yesterday", "created": good},
        {"table": "episodes", "id": "evil2", "kind": "note", "title": "t", "at": good, "created": good,
         "last_touched": 5},
        {"table": "episodes", "id": "zulu", "kind": "note", "title": "zulu docker", "at": "2026-01-02T10:00:00Z",
         "created": good, "flashbulb_until": None},
        {"table": "lessons", "id": "l1", "text": "x", "kind": "correction", "created": good, "updated": "soon"},
        {"table": "predictions", "id": "p1", "lesson_id": "l1", "text": "y", "made": "2026-13-45"},
    ]
    dump = tmp_path / "bad.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines))
    res = remem_cli("import", str(dump), "--json")
    assert res.returncode == 0, res.stderr
    errors = res.json()["errors"]
    assert [e.split(":")[0] for e in errors] == ["line 1", "line 2", "line 4", "line 5"]
    assert "at" in errors[0] and "yesterday" in errors[0] and "not a time" in errors[0]
    assert "last_touched" in errors[1] and "updated" in errors[2] and "made" in errors[3]
    assert res.json()["imported"] == {"episodes": 1}
    with Store() as store:  # kept in the store's one form
        assert store.scalar("SELECT at FROM episodes WHERE id = 'zulu'") == "2026-01-02T10:00:00.000000+00:00"
    recall = remem_cli("recall", "docker")
    assert recall.returncode == 0, recall.stderr
    ran = remem_cli("tasks", "--run", "--force", "--json")
    assert ran.returncode == 0 and ran.json()["ran"]["strength_decay"]["ran"] is True


# ------------------------------------------------------------------ decay after export -> import

def test_export_import_carries_when_each_decay_last_ran_so_nothing_decays_twice(home, tmp_path):
    from remem.engine import clock, lifecycle

    def decay(store: Store) -> None:
        lifecycle.strength_decay(store)
        lifecycle.importance_decay(store)

    def values(store: Store) -> tuple[float, float]:
        row = store.one("SELECT strength, importance FROM episodes")
        return round(row["strength"], 6), round(row["importance"], 6)

    with clock.frozen("2026-01-01T00:00:00+00:00"), Store() as original:
        remember(original, "kafka note")
    with clock.frozen("2026-03-02T00:00:00+00:00"), Store() as original:
        decay(original)
        dump = _export(original, tmp_path / "e.jsonl")
    assert any(json.loads(line)["table"] == "tasks" for line in dump.read_text().splitlines())
    other = tmp_path / "other.db"
    with clock.frozen("2026-03-02T00:00:00+00:00"), Store(other) as copy:
        assert _import(copy, dump)["errors"] == []
    with clock.frozen("2026-03-03T00:00:00+00:00"):
        with Store() as original:
            decay(original)
            expected = values(original)
        with Store(other) as copy:
            decay(copy)
            assert values(copy) == expected
    # an export from before tasks were exported still imports
    older = tmp_path / "older.jsonl"
    older.write_text("".join(line + "\n" for line in dump.read_text().splitlines()
                             if json.loads(line)["table"] != "tasks"))
    with Store(tmp_path / "third.db") as third:
        assert _import(third, older) == {"imported": {"episodes": 1}, "errors": [],
                                         "left_out_forgotten": []}


def test_an_imported_task_time_never_moves_this_memorys_own_back_nor_past_now(home, tmp_path):
    from remem.engine import clock

    def task(name: str, at: str) -> str:
        return json.dumps({"table": "tasks", "name": name, "last_run": at, "interval_s": 3600.0})

    with clock.frozen("2026-03-01T00:00:00+00:00"), Store() as store:
        with store.write() as conn:
            conn.execute("INSERT INTO tasks (name, last_run, interval_s) VALUES "
                         "('strength_decay', '2026-02-01T00:00:00.000000+00:00', 60)")
        result = backup_mod.import_jsonl(store, iter([
            task("strength_decay", "2026-01-01T00:00:00+00:00"),  # older than ours: ours stays
            task("importance_decay", "2027-01-01T00:00:00+00:00"),  # in the future: now
            task("active_forgetting", "last week"),
            json.dumps({"table": "tasks", "last_run": "2026-01-01T00:00:00+00:00"}),
        ]))
        assert [e.split(":")[0] for e in result["errors"]] == ["line 3", "line 4"]
        runs = {r["name"]: (r["last_run"], r["interval_s"]) for r in store.rows("SELECT * FROM tasks")}
    assert runs == {"strength_decay": ("2026-02-01T00:00:00.000000+00:00", 60.0),
                    "importance_decay": ("2026-03-01T00:00:00.000000+00:00", 3600.0)}



def test_what_was_deleted_for_good_stays_deleted_through_export_and_import(home, tmp_path):
    """The `forgotten` ids travel with an export, and an import never brings back a memory
    this memory deleted for good (re-reading its session would not either)."""
    with Store(tmp_path / "old.db") as old:
        kept = remember(old, "keep the retry in the upload job")["id"]
        gone = remember(old, "a secret pasted by mistake")["id"]
        dump = _export(old, tmp_path / "before.jsonl")  # still holds `gone`
        old.hard_delete([gone])
        after = _export(old, tmp_path / "after.jsonl")
    assert any(json.loads(line) == {"table": "forgotten", "id": gone, "at": json.loads(line)["at"]}
               for line in after.read_text().splitlines() if json.loads(line)["table"] == "forgotten")
    with Store() as new:
        assert _import(new, after)["errors"] == []
        assert new.forgotten([gone, kept]) == {gone}
        result = _import(new, dump)  # an older export that still has it
        assert result["left_out_forgotten"] == [gone]
        assert new.scalar("SELECT count(*) FROM episodes WHERE id = ?", (gone,)) == 0
        assert new.scalar("SELECT count(*) FROM episodes WHERE id = ?", (kept,)) == 1


def test_tags_and_connections_of_a_memory_deleted_for_good_are_not_brought_back(home, tmp_path):
    """An older export still holds a memory deleted here for good: its episode is left out,
    and so are its tags and every connection to or from it; the others' come in."""
    with Store() as live:
        kept = remember(live, "keep the retry in the upload job", tags=["upload"])["id"]
        gone = remember(live, "a secret pasted by mistake", tags=["secret", "upload"])["id"]
        third = remember(live, "the third memory", tags=["misc"])["id"]
        with live.write() as conn:
            for src, dst in ((kept, gone), (gone, third), (kept, third)):
                conn.execute("INSERT INTO connections (src, dst, type, weight, origin, created) VALUES "
                             "(?, ?, 'references', 1.0, 'explicit', '2026-01-01T00:00:00.000000+00:00')",
                             (src, dst))
        dump = _export(live, tmp_path / "before.jsonl")
        live.hard_delete([gone])
        result = _import(live, dump)
        assert result["left_out_forgotten"] == [gone] and result["errors"] == []
        assert live.scalar("SELECT count(*) FROM tags WHERE memory_id = ?", (gone,)) == 0
        assert live.scalar("SELECT count(*) FROM connections WHERE src = ? OR dst = ?", (gone, gone)) == 0
        assert _edges(live) == {(kept, third, "references")}
        assert live.tags_of(kept) == ["upload"] and live.tags_of(third) == ["misc"]
        assert result["imported"]["tags"] == 2 and result["imported"]["connections"] == 1


def test_a_forgotten_row_never_marks_a_memory_live_here_as_deleted(home, tmp_path):
    """Another memory deleted Q for good; here Q is live. The live memory wins: Q stays live,
    is not recorded as deleted, and a later import of Q is not left out."""
    with Store(tmp_path / "other.db") as other:
        q = remember(other, "quarterly report lives in the finance share")["id"]
        dump = _export(other, tmp_path / "with-q.jsonl")
        other.hard_delete([q])
        after = _export(other, tmp_path / "without-q.jsonl")
        elsewhere = remember(other, "only the other memory knew this")["id"]
        other.hard_delete([elsewhere])
        both = _export(other, tmp_path / "both-gone.jsonl")
    with Store() as here:
        assert _import(here, dump)["errors"] == []
        result = _import(here, after)
        assert result["errors"] == [] and "forgotten" not in result["imported"]
        assert here.forgotten([q]) == set()
        assert here.scalar("SELECT count(*) FROM episodes WHERE id = ?", (q,)) == 1
        again = _import(here, dump)
        assert again["left_out_forgotten"] == [] and again["imported"]["episodes"] == 1
        # an id not live here is still recorded as deleted for good
        assert _import(here, both)["imported"] == {"forgotten": 1}
        assert here.forgotten([q, elsewhere]) == {elsewhere}


def test_a_row_with_a_wrong_number_kind_or_type_is_refused_by_line_and_tags_are_normalised(
        home, tmp_path, remem_cli):
    assert remem_cli("remember", "docker volumes note").returncode == 0
    good = "2026-01-01T00:00:00+00:00"

    def episode(id_: str, **extra) -> dict:
        return {"table": "episodes", "id": id_, "kind": "note", "title": f"{id_} docker", "at": good,
                "created": good, **extra}

    lines = [
        episode("e1", strength="high"),                       # 1 refused
        episode("e2", importance=float("nan")),               # 2 refused (NaN in JSON)
        episode("e3", recalls=True),                          # 3 refused (a bool is not a count)
        episode("e4", recalls=1.5),                           # 4 refused
        episode("e5", kind="rumour"),                         # 5 refused
        episode("e6", memory_type="forever"),                 # 6 refused
        episode("ok", strength=0.5, recalls=2.0, archived=0),  # 7 kept (2.0 stored as 2)
        {"table": "tags", "memory_id": "ok", "tag": "  Docker "},  # 8 kept as "docker"
        {"table": "tags", "memory_id": "ok", "tag": "   "},   # 9 refused
        {"table": "tags", "memory_id": "ok", "tag": 7},       # 10 refused
        {"table": "connections", "src": "ok", "dst": "ok2", "type": "related_to", "weight": "1",
         "created": good},                                    # 11 refused
        {"table": "tasks", "name": "strength_decay", "last_run": good, "interval_s": "daily"},  # 12
    ]
    dump = tmp_path / "bad.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines))
    res = remem_cli("import", str(dump), "--json")
    assert res.returncode == 0, res.stderr
    errors = res.json()["errors"]
    assert [e.split(":")[0] for e in errors] == [f"line {n}" for n in (1, 2, 3, 4, 5, 6, 9, 10, 11, 12)]
    said = dict(zip((1, 2, 3, 4, 5, 6, 9, 10, 11, 12), errors))
    assert "strength" in said[1] and "'high'" in said[1] and "not a number" in said[1]
    assert "importance" in said[2] and "recalls" in said[3] and "whole number" in said[4]
    assert "rumour" in said[5] and "note" in said[5] and "forever" in said[6]
    assert "weight" in said[11] and "interval_s" in said[12]
    assert res.json()["imported"] == {"episodes": 1, "tags": 1}
    with Store() as store:
        row = store.one("SELECT strength, recalls FROM episodes WHERE id = 'ok'")
        assert (row["strength"], row["recalls"]) == (0.5, 2) and isinstance(row["recalls"], int)
        assert store.tags_of("ok") == ["docker"]
    listed = remem_cli("list", "--tag", "docker", "--json")
    assert listed.returncode == 0 and [r["id"] for r in listed.json()] == ["ok"]
    recall = remem_cli("recall", "docker")
    assert recall.returncode == 0, recall.stderr
    ran = remem_cli("tasks", "--run", "--force", "--json")
    assert ran.returncode == 0, ran.stderr
