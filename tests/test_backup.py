"""backup -> restore and export -> import reproduce the same memory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remem.engine import backup as backup_mod
from remem.engine import lessons
from remem.engine.memories import remember
from remem.engine.store import Store
from tests.conftest import run_remem


def _fill(store: Store) -> None:
    a = remember(store, "use uv, not pip", tags=["python", "tooling"], importance=0.7)
    b = remember(store, "the build needs node 20", kind="environment", arousal=0.9)
    remember(store, "short lived", ttl="2h")
    lesson = lessons.add_lesson(store, "Use uv to install packages", "correction", sources=[a["id"]])
    with store.write() as conn:
        conn.execute(
            "INSERT INTO connections (src, dst, type, weight, origin, created) VALUES (?, ?, 'related_to', 1.0, 'explicit', 'x')",
            (a["id"], b["id"]),
        )
        conn.execute(
            "INSERT INTO predictions (id, lesson_id, text, made) VALUES ('p1', ?, 'will recur', "
            "'2026-01-01T00:00:00.000000+00:00')",
            (lesson["id"],),
        )
        conn.execute("INSERT INTO aliases (old, new, at, created) VALUES ('l-old', ?, 'z', 'w')", (lesson["id"],))


def test_export_import_round_trip_reproduces_the_memory(home, tmp_path):
    with Store() as original:
        _fill(original)
        path = tmp_path / "export.jsonl"
        with path.open("w") as out:
            counts = backup_mod.export_jsonl(original, out)
        assert counts["episodes"] == 3 and counts["lessons"] == 1 and counts["tags"] == 2
        before = backup_mod.snapshot(original)
    with Store(tmp_path / "other.db") as copy:
        with path.open() as handle:
            result = backup_mod.import_jsonl(copy, handle)
        assert result["errors"] == []
        assert backup_mod.snapshot(copy) == before
        # the FTS index follows imported rows
        assert copy.scalar("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH 'uv'") == 1
        # importing twice adds nothing
        with path.open() as handle:
            backup_mod.import_jsonl(copy, handle)
        assert backup_mod.snapshot(copy) == before


def test_import_reports_bad_lines_and_keeps_the_rest(home, tmp_path):
    with Store() as original:
        _fill(original)
        lines = [json.dumps(r, default=str) for r in backup_mod.export_rows(original)]
    lines.insert(2, "{torn")
    lines.insert(3, json.dumps({"table": "nope", "x": 1}))
    with Store(tmp_path / "other.db") as copy:
        result = backup_mod.import_jsonl(copy, iter(lines))
        assert len(result["errors"]) == 2
        assert copy.scalar("SELECT count(*) FROM episodes") == 3


def test_an_import_stores_a_folder_in_one_spelling(home, tmp_path):
    with Store() as original:
        _fill(original)
        rows = list(backup_mod.export_rows(original))
    for row in rows:
        if row.get("table") in ("episodes", "lessons"):
            row["cwd"] = "/srv/shop/./api/../"  # an export written by hand, or by another tool
    with Store(tmp_path / "other.db") as copy:
        result = backup_mod.import_jsonl(copy, iter(json.dumps(r, default=str) for r in rows))
        assert result["errors"] == []
        folders = {r["cwd"] for r in copy.rows("SELECT cwd FROM episodes UNION SELECT cwd FROM lessons")}
    assert folders == {"/srv/shop"}


def test_backup_then_restore_is_equal(home, tmp_path):
    with Store() as live:
        _fill(live)
        before = backup_mod.snapshot(live)
        saved = backup_mod.backup(live, tmp_path / "b.db")
        remember(live, "written after the backup")
    backup_mod.restore(saved)
    with Store() as restored:
        assert backup_mod.snapshot(restored) == before
        assert restored.scalar("PRAGMA integrity_check") == "ok"
    kept = list(home.glob("memory.db.before-restore-*"))
    assert len(kept) == 1
    with Store(kept[0]) as old:
        assert old.scalar("SELECT count(*) FROM episodes") == 4  # the memory restore replaced


def _titles(path) -> set[str]:
    with Store(path) as store:
        return {r["title"] for r in store.rows("SELECT title FROM episodes")}


def test_a_second_restore_keeps_the_first_ones_copy_of_the_original_memory(home, tmp_path, remem_cli):
    """Two restores in a row (the second in the same second too): the memory as it was before
    the first one is still on disk, under a name the output gave."""
    with Store() as live:
        remember(live, "the original memory")
    with Store(tmp_path / "b1.db") as other:
        remember(other, "backup one")
    with Store(tmp_path / "b2.db") as other:
        remember(other, "backup two")
    first = remem_cli("restore", str(tmp_path / "b1.db"), "--yes")
    assert first.returncode == 0, first.stderr
    second = remem_cli("restore", str(tmp_path / "b2.db"), "--yes", env={"REMEM_NOW": "2026-11-29T03:00:00+00:00"})
    third = remem_cli("restore", str(tmp_path / "b2.db"), "--yes", env={"REMEM_NOW": "2026-11-29T03:00:00+00:00"})
    assert second.returncode == 0 and third.returncode == 0, second.stderr + third.stderr
    kept = sorted(home.glob("memory.db.before-restore*"))
    assert len(kept) == 3 and all(p.name.startswith("memory.db.before-restore-") for p in kept)
    said = [line.split("kept as ", 1)[1] for r in (first, second, third)
            for line in r.stdout.splitlines() if "kept as " in line]
    assert sorted(said) == [str(p) for p in kept]
    assert any(p.name == "memory.db.before-restore-20261129T030000" for p in kept)
    named_first = [line.split("kept as ", 1)[1] for line in first.stdout.splitlines() if "kept as " in line][0]
    assert _titles(named_first) == {"the original memory"}
    assert _titles(home / "memory.db") == {"backup two"}


def test_restore_without_yes_and_without_a_terminal_refuses_and_replaces_nothing(home, tmp_path, remem_cli):
    with Store() as live:
        remember(live, "precious memory")
    with Store(tmp_path / "b.db") as other:
        remember(other, "from the backup")
    res = remem_cli("restore", str(tmp_path / "b.db"), input="")  # stdin is a pipe, not a terminal
    assert res.returncode == 1
    assert res.stderr.strip() == "remem: restore replaces the memory; confirm with --yes"
    assert _titles(home / "memory.db") == {"precious memory"}
    assert not list(home.glob("memory.db.before-restore*"))


def test_backup_to_a_path_ending_in_a_separator_makes_that_folder(home, tmp_path, remem_cli):
    with Store() as live:
        remember(live, "backed up into a new folder")
    target = tmp_path / "new" / "dir"
    res = remem_cli("backup", str(target) + "/", "--json")
    assert res.returncode == 0, res.stderr
    made = Path(res.json()["backup"])
    assert target.is_dir() and made.parent == target and made.name.startswith("memory-")
    assert made.suffix == ".db" and _titles(made) == {"backed up into a new folder"}
    # the same through the engine, and a plain name without the separator is still a file
    with Store() as live:
        inside = backup_mod.backup(live, str(tmp_path / "other") + "/")
        plain = backup_mod.backup(live, str(tmp_path / "plain.db"))
    assert inside.parent == tmp_path / "other"
    assert plain == tmp_path / "plain.db" and plain.is_file()
    a_file = remem_cli("backup", str(plain) + "/")
    assert a_file.returncode == 1 and "is a file, not a folder" in a_file.stderr


def test_backup_rotation_keeps_the_newest(home, tmp_path):
    folder = tmp_path / "bk"
    folder.mkdir()
    for day in range(1, 6):
        (folder / f"memory-2026110{day}-030000.db").write_bytes(b"")
    removed = backup_mod.rotate(2, folder)
    assert sorted(p.name for p in folder.iterdir()) == ["memory-20261104-030000.db", "memory-20261105-030000.db"]
    assert len(removed) == 3


def test_cli_export_to_stdout_and_import(remem_cli, tmp_path, home):
    assert remem_cli("remember", "exported through the cli").returncode == 0
    out = remem_cli("export")
    assert out.returncode == 0
    dump = tmp_path / "d.jsonl"
    dump.write_text(out.stdout)
    other = tmp_path / "other-home"
    res = remem_cli("--home", str(other), "import", str(dump), "--json")
    assert res.returncode == 0, res.stderr
    assert res.json()["imported"]["episodes"] == 1
    missing = remem_cli("import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 1 and "check the path" in missing.stderr
    assert remem_cli("backup", "--json").json()["backup"].startswith(str(home))


def test_restore_refuses_while_a_server_has_the_memory_open(home, tmp_path, remem_cli):
    """A real `remem serve` over stdio holds the memory; restore says so and changes nothing,
    then succeeds once the server has gone."""
    import os
    import subprocess
    import sys
    import time

    from remem.engine.files import InUse, sole_user

    with Store() as live:
        remember(live, "kept in the backup")
        saved = backup_mod.backup(live, tmp_path / "b.db")
        remember(live, "written after the backup")
    server = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--no-tasks", "--no-warm"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=dict(os.environ))
    try:
        deadline = time.monotonic() + 60
        while True:  # until the server holds the memory
            try:
                with sole_user(home / "memory.db", patience=0):
                    pass
            except InUse:
                break
            assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
            time.sleep(0.1)
        refused = remem_cli("restore", str(saved), "--yes")
        assert refused.returncode == 1
        assert "open in `remem serve`" in refused.stderr and "close them" in refused.stderr
        with Store() as live:
            assert live.scalar("SELECT count(*) FROM episodes") == 2  # nothing replaced
    finally:
        server.stdin.close()  # end of input: the stdio server stops
        server.wait(30)
    assert remem_cli("restore", str(saved), "--yes").returncode == 0
    with Store() as restored:
        assert restored.scalar("SELECT count(*) FROM episodes") == 1


def test_many_long_running_processes_may_hold_a_memory_at_once(home):
    from remem.engine.files import InUse, in_use, sole_user

    db = home / "memory.db"
    with in_use(db), in_use(db):  # a server and a TUI together
        try:
            with sole_user(db, patience=0):
                raise AssertionError("restore got the memory while it was in use")
        except InUse:
            pass
    with sole_user(db):
        pass


def _holder(seconds: float):
    """Another process that has the live memory open for `seconds` (as an ingest would)."""
    import os
    import subprocess
    import sys

    code = ("import sys, time\nfrom remem.engine.store import Store\n"
            "with Store() as s:\n    print('open', flush=True)\n    time.sleep(float(sys.argv[1]))\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(seconds)], stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    assert proc.stdout.readline().strip() == "open"
    return proc


def test_restore_waits_for_a_command_to_finish_and_refuses_one_that_keeps_the_memory(home, tmp_path):
    """Every open of the live memory marks it in use, not just servers: a restore waits for a
    short command, and refuses (changing nothing) while one outlasts its patience."""
    from remem.engine.files import InUse

    with Store() as live:
        remember(live, "kept in the backup")
        saved = backup_mod.backup(live, tmp_path / "b.db")
        remember(live, "written after the backup")
    long_one = _holder(60)
    try:
        try:
            backup_mod.restore(saved)
            raise AssertionError("restore replaced the memory under a running command")
        except InUse as exc:
            assert "close them" in str(exc)
        with Store() as live:
            assert live.scalar("SELECT count(*) FROM episodes") == 2
    finally:
        long_one.kill()
        long_one.wait(30)
    short_one = _holder(0.5)  # finishes inside restore's patience
    backup_mod.restore(saved)
    assert short_one.wait(30) == 0
    with Store() as restored:
        assert restored.scalar("SELECT count(*) FROM episodes") == 1


def test_a_command_or_hook_started_during_a_restore_is_told_to_run_again(home):
    from remem.engine.files import InUse, sole_user

    with Store() as live:
        remember(live, "something to prime from")
    with sole_user(home / "memory.db"):  # what restore holds while it copies
        try:
            Store(busy_timeout_ms=300)  # waits that long for the restore, as SQLite would
            raise AssertionError("the memory opened while a restore was replacing it")
        except InUse as exc:
            assert "being restored" in str(exc) and "run this again" in str(exc)
        res = run_remem("hook", "prompt", "--agent", "claude-code",
                        input=json.dumps({"prompt": "something", "session_id": "s1"}))
        assert res.returncode == 0 and res.stdout == ""
    with Store() as live:  # and once it is done, it opens as before
        assert live.scalar("SELECT count(*) FROM episodes") == 1


def test_a_command_started_during_a_short_restore_waits_for_it(home):
    """A server or command starting while a restore copies (under a second) waits for it, as
    SQLite waits for a lock, instead of failing."""
    import threading
    import time

    from remem.engine.files import sole_user

    with Store() as live:
        remember(live, "kept")
    held, done = threading.Event(), threading.Event()

    def restore_for_a_moment() -> None:
        with sole_user(home / "memory.db"):
            held.set()
            time.sleep(0.5)
        done.set()

    threading.Thread(target=restore_for_a_moment).start()
    assert held.wait(10)
    with Store() as live:
        assert done.is_set() and live.scalar("SELECT count(*) FROM episodes") == 1



def test_a_backup_never_rotates_out_the_one_it_just_made_and_keep_below_1_is_refused(home, remem_cli):
    from remem import config, paths

    folder = paths.backups_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for day in range(1, 4):  # named later than the one made now: a clock set back, a copied folder
        (folder / f"memory-2999010{day}-030000.db").write_bytes(b"")
    with Store() as store:
        remember(store, "kept by the backup")
        dest, removed = backup_mod.rotated_backup(store, 0)
        assert dest.is_file() and dest not in removed
        assert sorted(p.name for p in folder.glob("memory-*.db")) == [dest.name]
        again, _ = backup_mod.rotated_backup(store, 1)
        assert again.is_file()
    refused = remem_cli("config", "set", "backup.keep", "0")
    assert refused.returncode == 1 and "backup.keep" in refused.stderr and "at least 1" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    paths.config_path().parent.mkdir(parents=True, exist_ok=True)
    paths.config_path().write_text("[backup]\nkeep = -1\n")
    with pytest.raises(config.ConfigError, match="backup.keep must be at least 1"):
        config.load()
    res = remem_cli("backup")
    assert res.returncode == 1 and "backup.keep" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert again.is_file()


def test_backup_to_a_path_that_cannot_be_opened_says_so_in_one_line(home, tmp_path, remem_cli):
    assert remem_cli("remember", "worth a backup").returncode == 0
    blocked = tmp_path / "blocked.db"
    (tmp_path / "blocked.db.partial").mkdir()  # SQLite cannot open a folder as its database
    res = remem_cli("backup", str(blocked))
    assert res.returncode == 1
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1 and "unexpected error" not in line
    assert f"cannot write a backup to {blocked}" in line and "permissions" in line
    assert not blocked.exists() and (tmp_path / "blocked.db.partial").is_dir()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    under = remem_cli("backup", str(a_file / "x.db"))
    assert under.returncode == 1 and len(under.stderr.strip().splitlines()) == 1
    assert "unexpected error" not in under.stderr and str(a_file) in under.stderr
    assert a_file.read_text() == "x"


def test_export_to_dash_writes_stdout_and_no_file_named_dash(home, tmp_path, monkeypatch, cli):
    with Store() as store:
        remember(store, "exported to stdout")
    monkeypatch.chdir(tmp_path)
    res = cli("export", "-")
    assert res.exit_code == 0, res.output
    first = json.loads(res.stdout.splitlines()[0])
    assert first["table"] == "remem-export"
    assert any(json.loads(line).get("title") == "exported to stdout" for line in res.stdout.splitlines())
    assert not (tmp_path / "-").exists() and not (tmp_path / "-.partial").exists()


def test_export_to_a_quoted_home_path_writes_the_expanded_path(home, tmp_path, monkeypatch, cli):
    with Store() as store:
        remember(store, "exported under home")
    monkeypatch.chdir(tmp_path)
    res = cli("export", "~/x.jsonl")
    assert res.exit_code == 0, res.output
    written = Path(os.environ["HOME"]) / "x.jsonl"
    assert "exported under home" in written.read_text()
    assert not (tmp_path / "~").exists()
    assert str(written) in res.stderr


def test_export_to_a_fifo_writes_into_it_and_leaves_it_a_fifo(home, tmp_path, cli):
    import stat
    import subprocess

    with Store() as store:
        remember(store, "streamed through a pipe")
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    try:
        res = cli("export", str(fifo))
        try:
            received, _ = reader.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            received = ""
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert res.exit_code == 0, res.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # never replaced by a regular file
    assert not (tmp_path / "pipe.jsonl.partial").exists()
    assert "streamed through a pipe" in received
