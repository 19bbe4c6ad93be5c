"""A memory an older release read, opened by this one: the transcripts its older detectors
read are read again though unchanged (once; then skipped again, a run's share capped), the
findings they made wrongly go, and the lessons learned only from those are retired — not
the lessons a person edited, received ones, nor those whose sources the lifecycle deleted.

The older release is simulated on a real store: read by this release, then the findings an
older detector made are put beside what it read, and the `sessions` rows are taken back to
the schema before they recorded a detector version (as every earlier release left them).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from remem import paths
from remem.engine import clock, ingest, ingest_files, session_episodes
from remem.engine.detect_common import FINDING_WEIGHT
from remem.engine.lessons import NOT_FOUND_AGAIN, add_lesson, get_lesson
from remem.engine.session_episodes import DETECTOR_VERSION
from remem.engine.store import Store, stable_id
from tests.conftest import run_remem
from tests.test_ingest_sessions import CWD, _assistant, _failing_session, _user

SID = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"
OTHER = "ffffffff-ffff-4fff-8fff-ffffffffffff"
NOT_READ_YET = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"


def _session_with_a_harness_answer(sid: str) -> str:
    """A failing import (an error today's detectors find), then an Edit Claude Code refused
    before it ran ("File has not been read yet"): no error today; an older release made one."""
    return _failing_session(sid) + "".join([
        _user(sid, "h-u1", "2026-03-01T10:01:00.000Z", "create the beads"),
        _assistant(sid, "h-a1", "2026-03-01T10:01:02.000Z", "m3",
                   [{"type": "tool_use", "id": "toolu_e", "name": "Edit",
                     "input": {"file_path": "/home/dev/projects/spotter/a.py", "old_string": "x", "new_string": "y"}}]),
        _user(sid, "h-u2", "2026-03-01T10:01:03.000Z",
              [{"type": "tool_result", "tool_use_id": "toolu_e", "is_error": True, "content": NOT_READ_YET}]),
        _assistant(sid, "h-a2", "2026-03-01T10:01:05.000Z", "m4", [{"type": "text", "text": "Done."}]),
    ])


# What an older release's detectors made of that session, and today's make of it no more.
WRONG = {
    "error": ("Edit failed: File has not been read yet. Read it first before writing to it.",
              ["error:other", "tool:Edit"]),
    "correction": ("create the beads", ["interrupt", "unconfirmed"]),
}


def _wrong_finding(sid: str, kind: str) -> str:
    return stable_id(sid, kind, WRONG[kind][0])


@pytest.fixture
def project(home: Path) -> Path:
    folder = paths.claude_projects_dir() / "-home-dev-projects-spotter"
    folder.mkdir(parents=True)
    for sid in (SID, OTHER):
        (folder / f"{sid}.jsonl").write_text(_session_with_a_harness_answer(sid))
    return folder


def _as_an_older_release_left_it(sids: tuple[str, ...] = (SID, OTHER)) -> None:
    """Read by this release, then: the wrong findings an older one made put in, and the
    memory taken back to the schema before the detector version (its rows record none)."""
    with Store() as store:
        ingest.ingest_paths(store)
        store.put_episodes([
            {"id": _wrong_finding(sid, kind), "session_id": sid, "source": "claude-code", "cwd": CWD,
             "kind": kind, "title": title, "gist": title, "detail": title, "at": "2026-03-01T10:01:03.000000Z",
             "tags": tags, **FINDING_WEIGHT.get(kind, {})}
            for sid in sids for kind, (title, tags) in WRONG.items()])
    from remem.engine.schema import MIGRATIONS

    before = [fn.__name__ for fn in MIGRATIONS].index("_m009_detector_version")
    conn = sqlite3.connect(paths.db_path(), isolation_level=None)
    try:
        conn.execute("ALTER TABLE sessions DROP COLUMN detector_version")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?", (f"{before + 1:03d}_detector_version",))
        conn.execute(f"PRAGMA user_version = {before}")
    finally:
        conn.close()


def _kinds(store: Store, sid: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in store.rows("SELECT kind, title FROM episodes WHERE session_id = ? ORDER BY title", (sid,)):
        out.setdefault(row["kind"], []).append(row["title"])
    return out


# --------------------------------------------------------------------------- findings read again

def test_an_upgrade_reads_unchanged_transcripts_again_once_and_the_wrong_findings_go(project: Path, cli: Any) -> None:
    _as_an_older_release_left_it()
    with Store() as store:  # the first open after the upgrade migrates: no version recorded
        assert {r["detector_version"] for r in store.rows("SELECT detector_version FROM sessions")} == {None}
        assert _wrong_finding(SID, "error") in {r["id"] for r in store.rows("SELECT id FROM episodes")}
    first = cli("ingest", "--json")
    assert first.exit_code == 0, first.output
    assert {k: json.loads(first.stdout)[k] for k in ("files", "skipped", "reread", "episodes")} == \
        {"files": 2, "skipped": 0, "reread": 2, "episodes": 0}
    with Store() as store:
        for sid in (SID, OTHER):
            kinds = _kinds(store, sid)
            assert WRONG["error"][0] not in kinds.get("error", []), kinds
            assert WRONG["correction"][0] not in kinds.get("correction", []), kinds
            assert len(kinds["error"]) == 1 and "yaml" in kinds["error"][0]  # the real one stays
        assert {r["detector_version"] for r in store.rows("SELECT detector_version FROM sessions")} == {DETECTOR_VERSION}
    again = json.loads(cli("ingest", "--json").stdout)
    assert (again["files"], again["skipped"]) == (0, 2)  # read once: skipped again while unchanged


def test_the_summary_counts_the_files_read_again_and_a_run_reads_only_its_share(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _as_an_older_release_left_it()
    # A share smaller than any file: the first such file is still read, the other waits.
    monkeypatch.setattr(ingest_files, "READ_AGAIN_BYTES_PER_RUN", 1)
    with Store() as store:
        runs = [ingest.ingest_paths(store) for _ in range(3)]
        assert [(r["files"], r["reread"], r["skipped"]) for r in runs] == [(1, 1, 1), (1, 1, 1), (0, 0, 2)]
        assert store.scalar("SELECT count(*) FROM episodes WHERE title IN (?, ?)",
                            (WRONG["error"][0], WRONG["correction"][0])) == 0


def test_a_newer_version_of_the_detectors_reads_what_this_one_read_again(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store() as store:
        assert ingest.ingest_paths(store)["files"] == 2
        # the constant bumped with a change to the detectors (read where ingest reads and writes it)
        monkeypatch.setattr(ingest_files, "DETECTOR_VERSION", DETECTOR_VERSION + 1)
        monkeypatch.setattr(session_episodes, "DETECTOR_VERSION", DETECTOR_VERSION + 1)
        runs = [ingest.ingest_paths(store) for _ in range(2)]
    assert [(r["files"], r["reread"], r["skipped"]) for r in runs] == [(2, 2, 0), (0, 0, 2)]


def test_a_finding_the_person_touched_stays_when_the_older_release_made_it(project: Path) -> None:
    _as_an_older_release_left_it((SID,))
    with Store() as store:
        store.conn.execute("INSERT INTO tags (memory_id, tag) VALUES (?, 'look-into')", (_wrong_finding(SID, "error"),))
        ingest.ingest_paths(store)
        kinds = _kinds(store, SID)
    assert WRONG["error"][0] in kinds["error"] and WRONG["correction"][0] not in kinds.get("correction", [])


# --------------------------------------------------------------------------- lessons of those findings

def _real_error(store: Store, sid: str) -> str:
    """The error today's detectors find in the session too (the failed import)."""
    return store.scalar("SELECT id FROM episodes WHERE session_id = ? AND kind = 'error' AND title != ?",
                        (sid, WRONG["error"][0]))


def _lesson(store: Store, text: str, sources: list[str], **extra: Any) -> str:
    return add_lesson(store, text, "correction", sources=sources, cwd=CWD, **extra)["id"]


def test_a_lesson_learned_only_from_findings_not_found_again_is_retired(project: Path) -> None:
    _as_an_older_release_left_it()
    with Store() as store:
        real_error, faded_error = (_real_error(store, sid) for sid in (SID, OTHER))
        wrong = {sid: [_wrong_finding(sid, kind) for kind in WRONG] for sid in (SID, OTHER)}
        ids = {
            # learned from wrong findings of both sessions: retired once neither is left
            "wrong": _lesson(store, "Create the beads.", wrong[SID] + wrong[OTHER]),
            "mixed": _lesson(store, "Install yaml before importing it.", [wrong[SID][0], real_error]),
            "edited": _lesson(store, "Make the beads with bd create.", [wrong[SID][1]], draft="Create the beads."),
            "received": _lesson(store, "Read a file before editing it.", [wrong[SID][0]], origin="a" * 16),
            # the lifecycle deleted its source (archived, untouched past cleanup_archived_days), and
            # a re-read dropped the other: lessons outlive the episodes the lifecycle deletes
            "outlived": _lesson(store, "Pin yaml in requirements.", [faded_error, wrong[OTHER][0]]),
        }
        store.conn.execute("UPDATE lessons SET strength = 3.0 WHERE id = ?", (ids["mixed"],))
        vetoed = _lesson(store, "Never create beads.", [wrong[OTHER][1]])
        store.conn.execute("UPDATE lessons SET status = 'vetoed', note = 'vetoed by the person' WHERE id = ?", (vetoed,))
        long_ago = clock.iso(clock.now() - timedelta(days=400))
        store.conn.execute("UPDATE episodes SET archived = 1, last_touched = ? WHERE id = ?", (long_ago, faded_error))
    assert run_remem("sleep", "--pass", "render", "--json").returncode == 0
    memory = project / "memory"
    assert any(ids["wrong"] in f.name for f in memory.iterdir())
    with Store() as store:
        from remem.engine.lifecycle import cleanup_archived

        assert cleanup_archived(store)["deleted"] == 1
        ingest.ingest_paths(store)
        got = {name: get_lesson(store, lid) for name, lid in ids.items()}
        from remem.engine import prime

        shown = {l["id"] for l in prime.preview(store, CWD, None)["lessons"]}
    assert (got["wrong"]["status"], got["wrong"]["note"], got["wrong"]["sources"]) == ("vetoed", NOT_FOUND_AGAIN, [])
    assert (got["mixed"]["status"], got["mixed"]["sources"], got["mixed"]["seen"]) == ("active", [real_error], 1)
    assert got["mixed"]["strength"] == 2.0  # what the dropped source added goes with it
    assert (got["edited"]["status"], got["edited"]["sources"]) == ("active", [])
    assert (got["received"]["status"], got["received"]["sources"]) == ("active", [])
    assert (got["outlived"]["status"], got["outlived"]["sources"]) == ("active", [faded_error])
    with Store() as store:
        assert (get_lesson(store, vetoed)["status"], get_lesson(store, vetoed)["note"]) == ("vetoed", "vetoed by the person")
    assert ids["wrong"] not in shown and {ids["mixed"], ids["edited"], ids["outlived"]} <= shown
    # Not shown and no longer rendered; its words are not banned (no veto of the person's).
    assert run_remem("sleep", "--pass", "render", "--json").returncode == 0
    assert not any(ids["wrong"] in f.name for f in memory.iterdir())
    assert ids["wrong"] not in json.loads((paths.home() / "vetoed.json").read_text() if
                                          (paths.home() / "vetoed.json").exists() else "{}")
    restored = run_remem("lessons", "restore", ids["wrong"])
    assert restored.returncode == 0, restored.stderr
    with Store() as store:
        assert get_lesson(store, ids["wrong"])["status"] == "active"


def test_a_correction_said_after_a_lesson_was_retired_so_makes_a_lesson_of_its_own(project: Path, tmp_path: Path) -> None:
    _as_an_older_release_left_it()
    with Store() as store:
        retired = _lesson(store, "Create the beads.", [_wrong_finding(sid, k) for sid in (SID, OTHER) for k in WRONG])
        ingest.ingest_paths(store)
        assert get_lesson(store, retired)["note"] == NOT_FOUND_AGAIN
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"v": 1, "at": "2026-03-02T09:00:00Z", "kind": "correction", "cwd": CWD,
                                  "text": "no, create the beads first"}) + "\n")
    assert run_remem("ingest", "--events", str(events)).returncode == 0
    slept = run_remem("sleep", "--json")
    assert slept.returncode == 0, slept.stderr
    with Store() as store:
        # Not taken in by the retired lesson (a veto the person never made): a lesson of its own.
        assert get_lesson(store, retired)["status"] == "vetoed" and get_lesson(store, retired)["sources"] == []
        active = store.rows("SELECT text FROM lessons WHERE status = 'active' AND text LIKE '%beads%'")
    assert len(active) == 1, active


def test_the_docs_name_the_share_of_a_run_read_again() -> None:
    mb = ingest_files.READ_AGAIN_BYTES_PER_RUN // 2**20
    for doc in ("INGEST.md", "RELIABILITY.md"):
        assert f"{mb} MB" in (Path(__file__).resolve().parent.parent / "docs" / doc).read_text()
