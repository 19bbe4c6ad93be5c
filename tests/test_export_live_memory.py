"""`remem export FILE` and `remem experiment --pairs FILE` never write over the live memory, its
-wal or -shm, its config, its identity keys, another home's live memory or a remem backup,
--force or not; and a refusal that names a database never offers --force."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import run_remem


def refused(result, *words: str) -> str:
    """Exit 1 and one line on stderr naming each of `words`, offering no --force."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remem: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert "--force" not in lines[0], lines[0]
    return lines[0]


def _still_there(rhome: Path) -> None:
    listing = run_remem("--home", str(rhome), "list")
    assert listing.returncode == 0 and "keep me" in listing.stdout, (listing.stdout, listing.stderr)


@pytest.fixture
def live(home: Path) -> Path:
    """A real memory (the `home` fixture's REMEM_HOME) with a note, a config and a key pair."""
    from remem.engine.share_sign import identity

    assert run_remem("remember", "keep me").returncode == 0
    assert run_remem("config", "set", "backup.keep", "5").returncode == 0
    identity()
    assert (home / "config.toml").is_file() and (home / "identity" / "ed25519.key").is_file()
    return home


@pytest.mark.parametrize("name, words", [
    ("memory.db", ["is the live memory itself"]),
    ("memory.db-wal", ["write-ahead log"]),
    ("memory.db-shm", ["shared-memory"]),
    ("config.toml", ["this memory's config"]),
    ("identity/ed25519.key", ["identity folder"]),
    ("identity/ed25519.pub", ["identity folder"]),
])
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_export_never_writes_over_the_live_memory_or_its_files(live: Path, name: str, words: list[str],
                                                               force: list[str]) -> None:
    target = live / name
    before = target.read_bytes() if target.exists() else None
    refused(run_remem("export", *force, str(target)), str(target), *words, "name another file")
    assert (target.read_bytes() if target.exists() else None) == before
    _still_there(live)


def test_export_never_writes_over_another_homes_live_memory(live: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    assert run_remem("--home", str(other), "remember", "keep me").returncode == 0
    refused(run_remem("export", "--force", str(other / "memory.db")), "a remem home's live memory")
    refused(run_remem("export", "--force", str(other / "memory.db.in-use")), "belongs to the memory")
    _still_there(other)


def test_a_backup_is_named_as_one_and_kept_even_with_force(live: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept.db"
    assert run_remem("backup", str(kept)).returncode == 0
    before = kept.read_bytes()
    for force in ([], ["--force"]):
        refused(run_remem("export", *force, str(kept)), "is a remem memory or backup", "not a remem export")
    assert kept.read_bytes() == before


def test_another_programs_database_is_named_and_replaced_only_with_force(live: Path, tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    refused(run_remem("export", str(other)), "is a SQLite database", "not a remem export")
    assert other.read_bytes().startswith(b"SQLite format 3\x00")
    assert run_remem("export", "--force", str(other)).returncode == 0  # asked for in so many words
    assert '"remem-export"' in other.read_text().splitlines()[0]


def test_experiment_pairs_never_write_over_the_live_memory(live: Path) -> None:
    from remem.engine import experiment as exp
    from remem.engine.store import Store

    with Store() as store:  # a passing answer kept by an earlier run: there are pairs to write
        exp._record(store, "lesson-1", "behaviour", "m", True, True, "the situation", "the answer")
    for name in ("memory.db", "memory.db-wal", "config.toml"):
        target = live / name
        before = target.read_bytes() if target.exists() else None
        refused(run_remem("experiment", "--pairs", str(target), "--force"), str(target), "name another file")
        assert (target.read_bytes() if target.exists() else None) == before
    _still_there(live)
