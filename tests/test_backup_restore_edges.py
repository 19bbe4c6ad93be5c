"""backup, restore, export and import where the memory or the disk is not as it should be: a
damaged memory, an older export, a byte that is not UTF-8, an upgrade, another home's memory."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from remem import paths
from remem.engine import backup as backup_mod
from remem.engine.store import MIGRATIONS, Store
from tests.conftest import ROOT, run_remem


def _titles(path: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT title FROM episodes")}
    finally:
        conn.close()


def _filled(path: Path | None = None, n: int = 300, word: str = "note") -> Path:
    """A memory of n notes, big enough that its middle pages hold them; checkpointed whole."""
    with Store(path) as store:
        store.put_episodes([{"kind": "note", "title": f"{word} {i}", "gist": "x " * 400} for i in range(n)])
        target = store.path
    conn = sqlite3.connect(str(target))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return target


def _damage_pages(db: Path) -> None:
    data = db.read_bytes()
    mid = len(data) // 2
    db.write_bytes(data[:mid] + b"\xff" * 8192 + data[mid + 8192:])


# --------------------------------------------------------------------------- restore

@pytest.mark.parametrize("how", ["truncated", "random bytes"])
def test_restore_replaces_a_memory_too_damaged_to_open_and_keeps_it_as_it_was(home, tmp_path, how):
    saved = _filled(tmp_path / "good.db", n=5, word="from the backup")
    db = _filled(n=300)
    if how == "truncated":
        os.truncate(db, 50_000)
    else:
        db.write_bytes(bytes(range(256)) * 1200)
    damaged = db.read_bytes()
    res = run_remem("restore", str(saved), "--yes")
    assert res.returncode == 0, res.stderr
    assert _titles(db) == {f"from the backup {i}" for i in range(5)}
    kept = list(home.glob("memory.db.before-restore-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == damaged  # set aside byte for byte
    assert f"kept as {kept[0]}" in res.stdout


# --------------------------------------------------------------------------- backup

def test_a_backup_of_a_damaged_memory_rotates_no_good_backup_out(home, tmp_path):
    db = _filled()
    folder = paths.backups_dir()
    folder.mkdir()
    with Store() as store:
        older = backup_mod.backup(store, folder / "memory-20260101-030000.db")
        newest = backup_mod.backup(store, folder / "memory-20260102-030000.db")
    assert run_remem("config", "set", "backup.keep", "2").returncode == 0
    _damage_pages(db)
    for _ in range(2):
        res = run_remem("backup", "--json")
        assert res.returncode == 1
        line = res.stderr.strip()
        assert len(line.splitlines()) == 1 and "Traceback" not in line, line
        assert "the memory is damaged" in line and f"remem restore {newest}" in line, line
        assert "nothing rotated out" in line
    assert sorted(folder.glob("memory-*.db")) == [older, newest]  # both good ones kept
    for good in (older, newest):
        conn = sqlite3.connect(f"file:{good}?mode=ro&immutable=1", uri=True)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
    damaged = sorted(folder.glob("damaged-*.db"))
    assert len(damaged) == 2  # kept for what can be read from it, outside the rotation
    assert not list(folder.glob("*.partial"))
    # a backup to a file of one's own: never a damaged copy under the name asked for
    named = run_remem("backup", str(tmp_path / "mine.db"))
    assert named.returncode == 1 and "the memory is damaged" in named.stderr
    assert not (tmp_path / "mine.db").exists() and len(list(tmp_path.glob("damaged-*.db"))) == 1


def test_a_memory_left_damaged_keeps_two_damaged_copies_not_one_a_night(home, tmp_path):
    db = _filled()
    folder = paths.backups_dir()
    _damage_pages(db)
    ours = tmp_path / "notes" / "damaged-photo.db"  # not a name remem gives: never touched
    ours.parent.mkdir()
    ours.write_bytes(b"mine")
    kept = []
    for night in range(4):
        res = run_remem("backup")
        assert res.returncode == 1 and "the memory is damaged" in res.stderr
        kept.append(res.stderr.split("the damaged copy is kept as ")[1].split(";")[0])
        os.utime(kept[-1], (1_000_000 + night, 1_000_000 + night))  # one night apart
    left = sorted(str(p) for p in folder.glob("damaged-*.db"))
    assert left == sorted([kept[0], kept[-1]])  # the first sign of damage, and the newest
    named = run_remem("backup", str(ours.parent) + "/")
    assert named.returncode == 1 and ours.read_bytes() == b"mine"


def test_backup_never_replaces_another_homes_live_memory(home, tmp_path):
    with Store() as store:
        store.put_episodes([{"kind": "note", "title": "this home", "gist": "x"}])
    other = tmp_path / "h2"
    res = run_remem("--home", str(other), "remember", "the other home's memory")
    assert res.returncode == 0, res.stderr
    before = (other / "memory.db").read_bytes()
    for extra in ([], ["--force"]):
        refused = run_remem("backup", str(other / "memory.db"), *extra)
        assert refused.returncode == 1, refused.stdout
        line = refused.stderr.strip()
        assert len(line.splitlines()) == 1 and "live memory" in line and "name another file" in line
        assert (other / "memory.db").read_bytes() == before
    # an older backup (nothing beside it says a remem has it open) is replaced as before
    older = tmp_path / "older.db"
    with Store() as store:
        backup_mod.backup(store, older)
    again = run_remem("backup", str(older))
    assert again.returncode == 0, again.stderr


_FULL = """
import resource, signal, sys
from remem.entry import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
sys.argv = ["remem", *sys.argv[2:]]
main()
"""


def test_a_backup_cut_short_by_a_file_size_limit_faking_a_full_disk_names_the_backup(home, tmp_path):
    db = _filled()
    limit = 100_000
    assert db.stat().st_size > 2 * limit
    dest = tmp_path / "b.db"
    proc = subprocess.run([sys.executable, "-c", _FULL, str(limit), "backup", str(dest)],
                          capture_output=True, text=True, cwd=str(ROOT), env=dict(os.environ), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert line.startswith(f"remem: could not write a backup to {dest} (") and "free space there" in line
    assert str(db) not in line  # the memory is fine: it is not blamed
    assert not dest.exists() and not list(tmp_path.glob("b.db*"))


# --------------------------------------------------------------------------- import

def test_an_older_export_never_undoes_a_veto_or_a_forget(home, tmp_path, cli):
    from remem.engine.lessons import add_lesson
    from remem.engine.memories import remember

    with Store() as store:
        memory = remember(store, "the build needs node 20")
        lesson = add_lesson(store, "Use uv to install packages", "correction", sources=[memory["id"]])
    old = tmp_path / "old.jsonl"
    assert cli("export", str(old)).exit_code == 0
    assert cli("lessons", "veto", lesson["id"]).exit_code == 0
    assert cli("forget", memory["id"]).exit_code == 0
    res = cli("import", str(old))
    assert res.exit_code == 0, res.output
    assert "kept 1 memory and 1 lesson as they are here" in res.stdout
    with Store() as store:
        assert store.scalar("SELECT status FROM lessons WHERE id = ?", (lesson["id"],)) == "vetoed"
        assert store.scalar("SELECT archived FROM episodes WHERE id = ?", (memory["id"],)) == 1
    # an export newer than the veto (edited elsewhere since) brings its words, never its status
    rows = [json.loads(line) for line in old.read_text().splitlines()]
    for row in rows:
        if row["table"] == "lessons":
            row.update(text="Use uv, never pip", updated="2999-01-01T00:00:00.000000+00:00")
    newer = tmp_path / "newer.jsonl"
    newer.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = cli("import", str(newer), "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["kept"] == {"episodes": 1, "vetoed_lessons": 1}
    with Store() as store:
        row = store.rows("SELECT status, text FROM lessons WHERE id = ?", (lesson["id"],))[0]
        assert (row["status"], row["text"]) == ("vetoed", "Use uv, never pip")


def _export_with(tmp_path: Path, bad: bytes) -> tuple[Path, int]:
    """An export whose middle episode's title holds `bad` (bytes that are not UTF-8)."""
    with Store(tmp_path / "source.db") as store:
        store.put_episodes([{"kind": "note", "title": f"note {i}", "gist": "g"} for i in range(9)])
        lines = [json.dumps(r).encode() for r in backup_mod.export_rows(store)]
    episodes = [i for i, line in enumerate(lines) if b'"table": "episodes"' in line]
    middle = episodes[len(episodes) // 2]
    lines[middle] = lines[middle].replace(b'"title": "note', b'"title": "' + bad + b'note', 1)
    path = tmp_path / "export.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, len(episodes)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


NOT_UTF8 = st.lists(st.integers(0x80, 0xFF), min_size=1, max_size=6).map(bytes).filter(lambda b: not _utf8(b))


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(bad=NOT_UTF8)
def test_a_byte_that_is_not_utf8_is_read_alike_from_a_file_and_from_stdin(home, tmp_path_factory, cli, bad):
    tmp = tmp_path_factory.mktemp("bad")
    path, n = _export_with(tmp, bad)
    from_file = cli("--home", str(tmp / "a"), "import", str(path), "--json")
    from_stdin = cli("--home", str(tmp / "b"), "import", "-", "--json", input=path.read_bytes())
    assert from_file.exit_code == 0 and from_stdin.exit_code == 0, from_file.output + from_stdin.output
    assert json.loads(from_file.stdout)["imported"]["episodes"] == n  # every row, not those before it
    assert json.loads(from_file.stdout) == json.loads(from_stdin.stdout)
    assert _titles(tmp / "a" / "memory.db") == _titles(tmp / "b" / "memory.db")


def test_import_expands_a_quoted_home_path_as_export_does(home, tmp_path, monkeypatch, cli):
    with Store() as store:
        store.put_episodes([{"kind": "note", "title": "kept under home", "gist": "g"}])
    monkeypatch.chdir(tmp_path)
    assert cli("export", "~/x.jsonl").exit_code == 0
    res = cli("--home", str(tmp_path / "other"), "import", "~/x.jsonl")
    assert res.exit_code == 0, res.output
    assert _titles(tmp_path / "other" / "memory.db") == {"kept under home"}


# --------------------------------------------------------------------------- restore's output

def test_restore_prints_absolute_paths_and_the_render_pass_as_its_next_step(home, tmp_path, monkeypatch, cli):
    with Store() as store:
        store.put_episodes([{"kind": "note", "title": "restored", "gist": "g"}])
        backup_mod.backup(store, tmp_path / "b.db")
    monkeypatch.chdir(tmp_path)
    res = cli("restore", "b.db", "--yes", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["restored"] == str(tmp_path / "b.db") and out["into"] == str(home / "memory.db")
    assert "remem sleep --pass render" in out["next"]
    text = cli("restore", "b.db", "--yes")
    assert f"restored {tmp_path / 'b.db'} into" in text.stdout
    assert "next: run `remem sleep --pass render`" in text.stdout


# --------------------------------------------------------------------------- upgrade

def _old_memory(path: Path | None = None, schema: int = 3) -> Path:
    with Store(path, migrate_upto=schema) as old:
        old.conn.execute("INSERT INTO episodes (id, kind, title, gist, at, created) VALUES "
                         "('keepme', 'note', 'old note', 'kept', '2026-01-01T00:00:00+00:00', "
                         "'2026-01-01T00:00:00+00:00')")
        return old.path


def test_an_upgrade_keeps_a_copy_of_the_memory_at_its_old_schema_first(home):
    _old_memory()
    with Store() as store:
        assert store.scalar("PRAGMA user_version") == len(MIGRATIONS)
    copies = list(paths.backups_dir().glob("pre-upgrade-schema3-*.db"))
    assert len(copies) == 1 and not list(paths.backups_dir().glob("memory-*.db"))  # outside the rotation
    assert not list(paths.backups_dir().glob("*.partial"))
    conn = sqlite3.connect(f"file:{copies[0]}?mode=ro&immutable=1", uri=True)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
        assert conn.execute("SELECT id, title FROM episodes").fetchall() == [("keepme", "old note")]
    finally:
        conn.close()
    with Store():  # already upgraded: no second copy
        pass
    made = sorted(p.name for p in paths.backups_dir().iterdir() if p.name != ".upgrade.lock")
    assert made == [copies[0].name]


def test_an_upgrade_with_nowhere_to_keep_its_copy_is_refused_and_changes_nothing(home, tmp_path, cli):
    from remem.errors import StoreError

    db = _old_memory()
    paths.backups_dir().write_text("a file where the backups folder belongs")
    before = db.read_bytes()
    with pytest.raises(StoreError, match="only after keeping a copy") as refused:
        Store()
    assert len(str(refused.value).splitlines()) == 1
    assert db.read_bytes() == before
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    conn.close()
    # a memory that is not the home's (a backup being checked, a copy) is upgraded without one
    other = _old_memory(tmp_path / "other.db")
    with Store(other) as store:
        assert store.scalar("PRAGMA user_version") == len(MIGRATIONS)
