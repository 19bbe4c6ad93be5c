"""The foundation: package, paths, config, store, migrations, embeddings, first commands."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_remem

UNRELATED_NOTES = [
    "the staging database is read-only on Fridays",
    "deploys go out through the release train on Tuesdays",
    "the office coffee machine is on the third floor",
    "the design review meets every other Thursday",
    "our logo uses the teal from the brand guide",
    "rotate the API keys every ninety days",
    "the CI runners have 2 cores and 24 GiB of memory",
    "feature flags live in the flags.yaml file",
    "the on-call rotation changes on Mondays",
    "customer names are never logged",
    "the mobile app targets iOS 17 and later",
    "translations are managed in the i18n folder",
    "invoices are generated on the first of the month",
    "the cache is warmed by a nightly cron job",
    "use the shared calendar for vacation days",
    "the frontend uses a dark theme by default",
    "metrics are kept for thirteen months",
    "the legacy billing service is written in Perl",
    "PDF exports use the A4 paper size",
    "the wiki has the onboarding checklist",
    "error budgets are reviewed quarterly",
    "screenshots in docs are 1280 pixels wide",
    "the marketing site is built with Hugo",
    "backups are restored as a drill every quarter",
    "the support inbox is triaged twice a day",
    "commit messages start with a verb",
    "the map tiles come from an internal server",
    "the team lunch is on Wednesdays",
    "database migrations must be reversible",
    "the search page paginates twenty results",
]


def test_version_and_module_entry():
    out = run_remem("--version")
    assert out.returncode == 0
    from remem import __version__

    assert out.stdout.strip() == f"remem {__version__}"


def test_remember_then_recall_ranks_it_first_among_unrelated(cli):
    for note in UNRELATED_NOTES:
        assert cli("remember", note).exit_code == 0
    stored = cli("remember", "use uv, not pip, to install packages", "--json")
    assert stored.exit_code == 0, stored.output
    wanted = json.loads(stored.stdout)["id"]
    result = cli("recall", "which package installer should I use", "--json", "-k", "3")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert hits[0]["id"] == wanted
    assert set(hits[0]["parts"]) >= {"relevance", "recency", "strength"}


def test_bundled_model_puts_paraphrase_closer_than_unrelated():
    from remem.engine.embed import StaticEmbedder, cosine, get_embedder

    emb = get_embedder("")
    assert isinstance(emb, StaticEmbedder), "the bundled model must load from package data"
    q, para, other = emb.encode([
        "which package installer should I use",
        "use uv, not pip, to install packages",
        "the office coffee machine is on the third floor",
    ])
    assert cosine(q, para) > cosine(q, other) + 0.2


def test_pure_python_encoding_matches_numpy_encoding():
    from remem.engine.embed import get_embedder

    emb = get_embedder("")
    texts = ["git push was rejected", "ModuleNotFoundError: No module named 'yaml'", ""]
    batch = emb.encode(texts)
    for text, row in zip(texts, batch):
        py = emb.encode_py(text)
        assert max(abs(a - float(b)) for a, b in zip(py, row)) < 1e-4


def test_bundled_model_loads_with_network_unreachable(tmp_path):
    code = (
        "import socket\n"
        "def no_net(*a, **k): raise OSError('network unreachable')\n"
        "socket.socket.connect = no_net\n"
        "socket.create_connection = no_net\n"
        "from remem.engine.embed import get_embedder, StaticEmbedder\n"
        "e = get_embedder('')\n"
        "assert isinstance(e, StaticEmbedder)\n"
        "print(e.encode(['hello world']).shape)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "(1, 256)" in proc.stdout


def test_model2vec_itself_reads_the_bundled_model_offline():
    """The bundled folder is a genuine model2vec model, and our reader matches it."""
    from model2vec import StaticModel

    from remem.engine.embed import MODEL_DIR, get_embedder

    ref = StaticModel.from_pretrained(str(MODEL_DIR))
    texts = ["use uv to install packages", "tests failed with a timeout"]
    ours = get_embedder("").encode(texts)
    theirs = ref.encode(texts)
    assert abs(ours - theirs.astype("float32")).max() < 1e-3


def test_hashed_fallback_is_deterministic_and_normalised():
    from remem.engine.embed import HashedEmbedder, dot_py

    h = HashedEmbedder()
    a = h.encode_py("install with uv")
    assert a == h.encode_py("install with uv")
    assert abs(dot_py(a, a) - 1.0) < 1e-5
    assert len(a) == 256 and h.space == "hashed-256"


def test_importing_engine_pulls_in_no_edge_libraries():
    code = (
        "import sys\n"
        "import remem.engine, remem.engine.store, remem.engine.embed, remem.engine.recall\n"
        "import remem.engine.memories, remem.config, remem.paths, remem.hooks\n"
        "bad = [m for m in ('textual', 'mcp', 'rich', 'tomlkit', 'typer') if m in sys.modules]\n"
        "print(bad)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_engine_sources_never_import_edge_libraries():
    root = Path(__file__).resolve().parent.parent / "remem" / "engine"
    banned = ("typer", "textual", "rich", "mcp", "tomlkit")
    for path in root.rglob("*.py"):
        for line in path.read_text().splitlines():
            stripped = line.strip()
            for name in banned:
                assert not stripped.startswith((f"import {name}", f"from {name}")), f"{path}: {line}"


def test_migration_one_database_opens_under_latest_code_with_data_kept(home):
    from remem.engine import store as store_mod
    from remem.engine.store import Store

    db = home / "old.db"
    with Store(db, migrate_upto=1) as old:
        # Written as that schema had it (put_episodes writes the current columns).
        with old.write() as conn:
            conn.execute("INSERT INTO episodes (id, kind, title, gist, at, created) VALUES "
                         "('keepme', 'note', 'old note', 'kept', '2026-01-01T00:00:00+00:00', "
                         "'2026-01-01T00:00:00+00:00')")
        assert old.scalar("PRAGMA user_version") == 1
    with Store(db) as new:
        assert new.scalar("PRAGMA user_version") == len(store_mod.MIGRATIONS)
        assert new.episode("keepme")["gist"] == "kept"
        hits = new.rows("SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH 'kept'")
        assert len(hits) == 1


_OPEN_AT = """
import sys, time
from remem.engine.store import Store
start = float(sys.argv[1])
while time.time() < start:
    pass
try:
    with Store() as s:
        print("ok", s.scalar("PRAGMA user_version"))
except Exception as exc:
    print("FAIL", type(exc).__name__, exc)
"""


@pytest.mark.parametrize("schema", [1, 4, 5])
def test_two_processes_upgrading_an_old_memory_at_once_both_open_it(home, schema):
    """The slower one used to re-run migrations the other had just applied ("duplicate column
    name: speaker", a migration recorded twice) and told the person to restore a backup."""
    import os
    import time

    from remem import paths
    from remem.engine.store import MIGRATIONS, Store

    for _ in range(3):
        # the whole memory, its write-ahead log too: a log left from the round before would be
        # replayed onto the new file (SQLite then calls it malformed)
        for suffix in ("", "-wal", "-shm"):
            paths.db_path().with_name(paths.db_path().name + suffix).unlink(missing_ok=True)
        with Store(migrate_upto=schema) as old:
            assert old.scalar("PRAGMA user_version") == schema
        start = str(time.time() + 1.0)
        procs = [subprocess.Popen([sys.executable, "-c", _OPEN_AT, start], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
                 for _ in range(2)]
        outs = [p.communicate(timeout=60)[0].strip() for p in procs]
        assert outs == [f"ok {len(MIGRATIONS)}"] * 2, outs


def test_store_uses_wal_and_fts_triggers_follow_writes(store):
    assert store.scalar("PRAGMA journal_mode") == "wal"
    store.put_episodes([{"id": "e1", "kind": "note", "title": "alpha", "gist": "bravo charlie"}])
    count = lambda q: store.scalar("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH ?", (q,))
    assert count("bravo") == 1
    with store.write() as conn:
        conn.execute("UPDATE episodes SET gist = 'delta' WHERE id = 'e1'")
    assert count("bravo") == 0 and count("delta") == 1
    store.hard_delete(["e1"])
    assert count("delta") == 0


def test_vectors_are_little_endian_float32_tagged_with_space(cli, store):
    result = cli("remember", "vectors are float32", "--json")
    memory_id = json.loads(result.stdout)["id"]
    row = store.one("SELECT space, embedding FROM episodes WHERE id = ?", (memory_id,))
    assert row["space"].startswith("m2v:bundled-256")
    assert len(row["embedding"]) == 256 * 4


def test_not_a_database_is_reported_never_overwritten(home, remem_cli):
    home.mkdir(parents=True, exist_ok=True)
    db = home / "memory.db"
    db.write_bytes(b"this is not sqlite at all" * 10)
    out = remem_cli("status")
    assert out.returncode == 1
    assert "not a SQLite database" in out.stderr and "backup" in out.stderr
    assert "Traceback" not in out.stderr
    assert db.read_bytes() == b"this is not sqlite at all" * 10


def test_malformed_config_gives_one_line_error(home, remem_cli):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[recall\nk = 3\n")
    out = remem_cli("recall", "anything")
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "config.toml" in out.stderr


def test_config_set_keeps_comments(home, cli):
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("# my settings\n[recall]\n# how many\nk = 5\n")
    assert cli("config", "set", "recall.k", "8").exit_code == 0
    text = path.read_text()
    assert "# my settings" in text and "# how many" in text and "k = 8" in text
    from remem import config

    assert config.get("recall.k") == 8


def test_config_set_rejects_bad_type_and_unknown_key(home, cli):
    assert cli("config", "set", "recall.k", "many").exit_code == 1
    assert cli("config", "set", "nope.key", "1").exit_code == 1


def test_paths_follow_environment(home, cli, monkeypatch, tmp_path):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    result = cli("paths", "--json")
    found = json.loads(result.stdout)
    assert found["home"] == str(home)
    assert found["codex_home"] == str(tmp_path / "cx")
    assert found["database"] == str(home / "memory.db")


def test_home_option_overrides_remem_home(tmp_path, remem_cli):
    other = tmp_path / "elsewhere"
    out = remem_cli("--home", str(other), "remember", "a note in another home")
    assert out.returncode == 0, out.stderr
    assert (other / "memory.db").exists()


def test_status_json_has_counts_model_and_times(cli):
    cli("remember", "one note")
    info = json.loads(cli("status", "--json").stdout)
    assert info["counts"]["episodes"] == 1
    assert info["space"].startswith("m2v:")
    assert "last_ingest" in info and "last_sleep" in info and info["db_bytes"] > 0


def test_bad_arguments_are_one_line_errors(cli):
    result = cli("remember", "x", "--importance", "7")
    assert result.exit_code == 1
    assert "importance" in result.output
    result = cli("remember", "   ")
    assert result.exit_code == 1


def test_demo_builds_its_own_folder_never_the_real_memory(home, tmp_path, remem_cli):
    demo_dir = tmp_path / "demo"
    out = remem_cli("demo", "--dir", str(demo_dir))
    assert out.returncode == 0, out.stderr
    assert (demo_dir / "memory.db").exists()
    assert not (home / "memory.db").exists()
    assert "remem --home" in out.stdout
    # running it again rebuilds the demo; a folder that is not a demo is refused
    assert remem_cli("demo", "--dir", str(demo_dir)).returncode == 0
    stranger = tmp_path / "mine"
    stranger.mkdir()
    (stranger / "precious.txt").write_text("keep")
    refused = remem_cli("demo", "--dir", str(stranger))
    assert refused.returncode == 1 and (stranger / "precious.txt").exists()


def test_a_hard_delete_is_remembered_in_the_forgotten_table(home):
    from remem.engine.store import Store

    db = home / "v5.db"
    with Store(db, migrate_upto=5) as old:  # a store from before the table existed
        old.put_episodes([{"id": "gone1", "kind": "note", "title": "a"}, {"id": "kept1", "kind": "note", "title": "b"}])
    with Store(db) as store:
        assert store.scalar("SELECT count(*) FROM forgotten") == 0
        assert store.hard_delete(["gone1", "never-existed"]) == 1
        assert [r["id"] for r in store.rows("SELECT id FROM forgotten")] == ["gone1"]
        assert store.forgotten(["gone1", "kept1", "other"]) == {"gone1"}


def test_an_id_prefix_must_name_one_memory(store, cli):
    from remem.errors import NotFound

    store.put_episodes([{"id": "abcd1111", "kind": "note", "title": "one"},
                        {"id": "abcd2222", "kind": "note", "title": "two"},
                        {"id": "x_y%9999", "kind": "note", "title": "three"}])
    assert store.episode("abcd1")["title"] == "one"
    with pytest.raises(NotFound, match=r"ambiguous id 'abcd': matches abcd1111 and abcd2222; give more characters"):
        store.episode("abcd")
    # % and _ are characters of the id, not wildcards
    with pytest.raises(NotFound, match="no memory with id"):
        store.episode("x%y%")
    assert store.episode("x_y%")["title"] == "three"
    with pytest.raises(NotFound):
        store.episode("ab_d")
    result = cli("forget", "abcd", "--hard")
    assert result.exit_code == 1 and "ambiguous id 'abcd'" in result.stderr
    assert store.scalar("SELECT count(*) FROM episodes WHERE id LIKE 'abcd%'") == 2  # nothing deleted


def test_config_set_refuses_a_section_and_leaves_the_file_working(home, cli, remem_cli):
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("[recall]\nk = 5\n")
    out = remem_cli("config", "set", "recall", "1")
    assert out.returncode == 1
    assert "recall is a section; set recall.KEY" in out.stderr and out.stderr.count("\n") == 1
    assert path.read_text() == "[recall]\nk = 5\n"
    assert remem_cli("config", "show", "--json").returncode == 0


def test_config_set_value_checks_the_new_document_before_writing(home):
    from remem import config
    from remem.errors import ConfigError

    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("[recall]\nk = 5\n")
    with pytest.raises(ConfigError, match="recall.k must be a whole number"):
        config.set_value("recall.k", [1, 2])  # not from the command line, so not coerced
    assert path.read_text() == "[recall]\nk = 5\n"
