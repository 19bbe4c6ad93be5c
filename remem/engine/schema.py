"""The schema: numbered migrations, applied in order; PRAGMA user_version holds how many ran.

Never edit a released migration: append a new one. sqlite-utils is imported only when a
migration is pending (`apply_migrations`), so opening an up-to-date store stays cheap.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Callable


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Execute statements one by one (executescript would COMMIT the migration's transaction)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            conn.execute(pending)
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement in migration: {pending[:80]!r}")


def _m001_initial(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        CREATE TABLE episodes (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            session_id TEXT, source TEXT, cwd TEXT,
            kind TEXT NOT NULL, title TEXT NOT NULL DEFAULT '', gist TEXT NOT NULL DEFAULT '',
            detail TEXT NOT NULL DEFAULT '',
            at TEXT NOT NULL, created TEXT NOT NULL,
            strength REAL NOT NULL DEFAULT 1.0, recalls INTEGER NOT NULL DEFAULT 0,
            last_touched TEXT, archived INTEGER NOT NULL DEFAULT 0,
            memory_type TEXT NOT NULL DEFAULT 'long_term', expires_at TEXT,
            importance REAL NOT NULL DEFAULT 0.5, valence REAL NOT NULL DEFAULT 0.0,
            arousal REAL NOT NULL DEFAULT 0.0, flashbulb_until TEXT,
            health REAL NOT NULL DEFAULT 100.0, content_hash TEXT,
            space TEXT, embedding BLOB
        );
        CREATE INDEX episodes_session ON episodes(session_id);
        CREATE INDEX episodes_kind_at ON episodes(kind, at);
        CREATE INDEX episodes_at ON episodes(at);
        CREATE INDEX episodes_archived ON episodes(archived);
        CREATE INDEX episodes_cwd ON episodes(cwd);

        CREATE TABLE sessions (
            id TEXT PRIMARY KEY, path TEXT, source TEXT, mtime REAL, size INTEGER,
            ingested TEXT, episodes INTEGER NOT NULL DEFAULT 0, offers TEXT NOT NULL DEFAULT '[]'
        );
        CREATE UNIQUE INDEX sessions_path ON sessions(path);

        CREATE TABLE lessons (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            text TEXT NOT NULL, kind TEXT NOT NULL, cwd TEXT,
            strength REAL NOT NULL DEFAULT 1.0, seen INTEGER NOT NULL DEFAULT 1,
            sources TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL DEFAULT 'active',
            created TEXT NOT NULL, updated TEXT NOT NULL,
            origin TEXT, hash TEXT, origins TEXT NOT NULL DEFAULT '[]',
            space TEXT, embedding BLOB,
            draft TEXT, note TEXT
        );
        CREATE INDEX lessons_status ON lessons(status);
        CREATE INDEX lessons_hash ON lessons(hash);

        CREATE TABLE predictions (
            id TEXT PRIMARY KEY, lesson_id TEXT NOT NULL, text TEXT NOT NULL,
            made TEXT NOT NULL, resolved TEXT, outcome TEXT, evidence TEXT,
            space TEXT, embedding BLOB
        );
        CREATE INDEX predictions_lesson ON predictions(lesson_id);

        CREATE TABLE aliases (
            old TEXT PRIMARY KEY, new TEXT NOT NULL, at TEXT NOT NULL, created TEXT
        );

        CREATE TABLE tags (
            memory_id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (memory_id, tag)
        );
        CREATE INDEX tags_tag ON tags(tag);

        CREATE TABLE connections (
            id INTEGER PRIMARY KEY, src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 1.0, origin TEXT NOT NULL DEFAULT 'explicit',
            created TEXT NOT NULL, UNIQUE (src, dst, type)
        );
        CREATE INDEX connections_dst ON connections(dst);

        CREATE TABLE primes (
            id INTEGER PRIMARY KEY, at TEXT NOT NULL, session_id TEXT, agent TEXT,
            event TEXT, lesson_ids TEXT NOT NULL DEFAULT '[]', held_out INTEGER NOT NULL DEFAULT 0,
            query TEXT, chars INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX primes_session ON primes(session_id);

        CREATE TABLE tasks (name TEXT PRIMARY KEY, last_run TEXT, interval_s REAL);

        CREATE TABLE peers (
            origin TEXT PRIMARY KEY, public_key TEXT NOT NULL, trusted INTEGER NOT NULL DEFAULT 0,
            first_seen TEXT NOT NULL, label TEXT
        );

        CREATE TABLE runs (
            id INTEGER PRIMARY KEY, kind TEXT NOT NULL, started TEXT NOT NULL, finished TEXT,
            status TEXT NOT NULL DEFAULT 'running', summary TEXT NOT NULL DEFAULT '{}'
        );

        CREATE TABLE experiments (
            id INTEGER PRIMARY KEY, at TEXT NOT NULL, lesson_id TEXT, test TEXT NOT NULL,
            model TEXT, with_reminder INTEGER, passed INTEGER, prompt TEXT, response TEXT
        );

        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            title, gist, detail, content='episodes', content_rowid='seq',
            tokenize='porter unicode61'
        );
        CREATE TRIGGER episodes_ai AFTER INSERT ON episodes BEGIN
            INSERT INTO episodes_fts(rowid, title, gist, detail)
            VALUES (new.seq, new.title, new.gist, new.detail);
        END;
        CREATE TRIGGER episodes_ad AFTER DELETE ON episodes BEGIN
            INSERT INTO episodes_fts(episodes_fts, rowid, title, gist, detail)
            VALUES ('delete', old.seq, old.title, old.gist, old.detail);
        END;
        CREATE TRIGGER episodes_au AFTER UPDATE OF title, gist, detail ON episodes BEGIN
            INSERT INTO episodes_fts(episodes_fts, rowid, title, gist, detail)
            VALUES ('delete', old.seq, old.title, old.gist, old.detail);
            INSERT INTO episodes_fts(rowid, title, gist, detail)
            VALUES (new.seq, new.title, new.gist, new.detail);
        END;

        CREATE VIRTUAL TABLE lessons_fts USING fts5(
            text, content='lessons', content_rowid='seq', tokenize='porter unicode61'
        );
        CREATE TRIGGER lessons_ai AFTER INSERT ON lessons BEGIN
            INSERT INTO lessons_fts(rowid, text) VALUES (new.seq, new.text);
        END;
        CREATE TRIGGER lessons_ad AFTER DELETE ON lessons BEGIN
            INSERT INTO lessons_fts(lessons_fts, rowid, text) VALUES ('delete', old.seq, old.text);
        END;
        CREATE TRIGGER lessons_au AFTER UPDATE OF text ON lessons BEGIN
            INSERT INTO lessons_fts(lessons_fts, rowid, text) VALUES ('delete', old.seq, old.text);
            INSERT INTO lessons_fts(rowid, text) VALUES (new.seq, new.text);
        END;
        """
    )


def _m002_lifecycle_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for paged lists by time (created, last_touched) and for expiring short-term memories."""
    _run_script(
        conn,
        """
        CREATE INDEX IF NOT EXISTS episodes_created ON episodes(created);
        CREATE INDEX IF NOT EXISTS episodes_last_touched ON episodes(last_touched);
        CREATE INDEX IF NOT EXISTS episodes_type_expires ON episodes(memory_type, expires_at);
        """,
    )


def _m003_vector_changes(conn: sqlite3.Connection) -> None:
    """A change feed for the derived vector caches (engine/vectors.py): the seq of every episode
    inserted, deleted or re-embedded, so a cache updates incrementally instead of rescanning."""
    _run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS vector_changes (
            id INTEGER PRIMARY KEY AUTOINCREMENT, seq INTEGER NOT NULL
        );
        CREATE TRIGGER episodes_vc_ai AFTER INSERT ON episodes BEGIN
            INSERT INTO vector_changes(seq) VALUES (new.seq);
        END;
        CREATE TRIGGER episodes_vc_ad AFTER DELETE ON episodes BEGIN
            INSERT INTO vector_changes(seq) VALUES (old.seq);
        END;
        CREATE TRIGGER episodes_vc_au AFTER UPDATE OF embedding, space ON episodes
        WHEN old.embedding IS NOT new.embedding OR old.space IS NOT new.space BEGIN
            INSERT INTO vector_changes(seq) VALUES (new.seq);
        END;
        """,
    )


def _m004_flashbulb_index(conn: sqlite3.Connection) -> None:
    """The few memories with flashbulb protection, found without a scan (recall's recency
    bound: a protected memory counts as new however old it is)."""
    _run_script(
        conn,
        """
        CREATE INDEX IF NOT EXISTS episodes_flashbulb ON episodes(flashbulb_until)
        WHERE flashbulb_until IS NOT NULL;
        """,
    )


def _m005_speakers(conn: sqlite3.Connection) -> None:
    """Who said an episode (an event's `speaker`), and the names ever seen: recall ranks a
    person's own words first when the query names them (docs/RECALL.md)."""
    _run_script(
        conn,
        """
        ALTER TABLE episodes ADD COLUMN speaker TEXT;
        CREATE INDEX IF NOT EXISTS episodes_speaker ON episodes(speaker) WHERE speaker IS NOT NULL;
        CREATE TABLE IF NOT EXISTS speakers (name TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE TRIGGER episodes_speaker_ai AFTER INSERT ON episodes WHEN new.speaker IS NOT NULL
        BEGIN
            INSERT OR IGNORE INTO speakers(name) VALUES (new.speaker);
        END;
        CREATE TRIGGER episodes_speaker_au AFTER UPDATE OF speaker ON episodes
        WHEN new.speaker IS NOT NULL BEGIN
            INSERT OR IGNORE INTO speakers(name) VALUES (new.speaker);
        END;
        """,
    )


def _m006_forgotten(conn: sqlite3.Connection) -> None:
    """The ids of memories deleted for good (`remem forget --hard`, the lifecycle's deletions):
    ingest skips them, so reading a session or an events file again never brings one back."""
    _run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS forgotten (id TEXT PRIMARY KEY, at TEXT NOT NULL) WITHOUT ROWID;
        """,
    )


def _m007_redaction_sweep(conn: sqlite3.Connection) -> None:
    """How far the redaction sweep (engine/scrub.py) has read what an older release stored
    with its secrets: per table, every row up to seq `checked` was read, and rows up to seq
    `upto` may hold a secret (here: every row stored so far; ingest redacts the ones made from
    now on). `round` grows when an import starts the sweep over. max(seq) alone: cheap, since
    a hook may be the first to open the memory after an upgrade."""
    _run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS redaction_sweep (
            tbl TEXT PRIMARY KEY, checked INTEGER NOT NULL DEFAULT 0,
            upto INTEGER NOT NULL DEFAULT 0, round INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        INSERT OR IGNORE INTO redaction_sweep (tbl, upto)
        SELECT 'episodes', coalesce(max(seq), 0) FROM episodes;
        INSERT OR IGNORE INTO redaction_sweep (tbl, upto)
        SELECT 'lessons', coalesce(max(seq), 0) FROM lessons;
        """,
    )


def _m008_normal_folders(conn: sqlite3.Connection) -> None:
    """Every stored folder (`cwd` of episodes and lessons) in the one spelling ingest stores
    now (projects.normal_folder): "/a/b/" and "/a/./b" are "/a/b", "/" stays "/". An older
    release kept an event's folder as written, and a lesson learned in "/a/b/" was rendered
    into no agent folder. The rule is written out here, not imported: a migration never
    changes. Reads the distinct folders only (the cwd index for episodes), since a hook may
    be the first to open the memory after an upgrade."""
    import os

    def normal(path: str) -> str:
        return os.path.normpath(path).rstrip("/") or "/"

    for table in ("episodes", "lessons"):
        folders = [row[0] for row in conn.execute(f"SELECT DISTINCT cwd FROM {table} WHERE cwd <> ''")]
        for folder in folders:
            if normal(folder) != folder:
                conn.execute(f"UPDATE {table} SET cwd = ? WHERE cwd = ?", (normal(folder), folder))


def _m009_detector_version(conn: sqlite3.Connection) -> None:
    """Which version of the detectors read each session (session_episodes.DETECTOR_VERSION).
    Rows an older release wrote hold none (NULL), older than any: ingest reads such a file
    again, unchanged or not, so findings the detectors no longer make go. One ALTER (no
    rewrite of the table): a hook may be the first to open the memory after an upgrade."""
    _run_script(
        conn,
        """
        ALTER TABLE sessions ADD COLUMN detector_version INTEGER;
        """,
    )


def _m010_primes_redaction_sweep(conn: sqlite3.Connection) -> None:
    """The queries logged with lesson choices (`primes.query`) join the redaction sweep: a
    release before this one kept them as they came, keys included. Every row stored so far may
    hold one, as _m007 marked the episodes and lessons; prime redacts the ones logged from now
    on. A memory made by this release marks none (no older writer ever logged there)."""
    _run_script(
        conn,
        """
        INSERT OR IGNORE INTO redaction_sweep (tbl, upto)
        SELECT 'primes', coalesce(max(id), 0) FROM primes;
        """,
    )


MIGRATIONS: list[Callable[[Any], None]] = [
    _m001_initial, _m002_lifecycle_indexes, _m003_vector_changes, _m004_flashbulb_index,
    _m005_speakers, _m006_forgotten, _m007_redaction_sweep, _m008_normal_folders,
    _m009_detector_version, _m010_primes_redaction_sweep,
]


def apply_migrations(conn: sqlite3.Connection, upto: int | None = None) -> None:
    """Apply pending migrations through sqlite-utils, each in its own transaction."""
    from sqlite_utils import Database
    from sqlite_utils.migrations import Migrations

    target = len(MIGRATIONS) if upto is None else upto
    migrations = Migrations("remem")
    for number, fn in enumerate(MIGRATIONS[:target], start=1):
        def run(db: Any, fn: Callable[[Any], None] = fn) -> None:
            fn(db.conn)

        migrations(name=f"{number:03d}_{fn.__name__.split('_', 2)[-1]}")(run)
    db = Database(conn)
    migrations.apply(db)
    conn.execute(f"PRAGMA user_version = {target}")
