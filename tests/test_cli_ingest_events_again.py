"""`remem ingest --events FILE` read again and again: a file with a refused line beside good
ones is a success at every read (its events stored before count as an unchanged file, not as
nothing at all), so a nightly job does not turn red for good after one bad line."""

from __future__ import annotations

import json
from pathlib import Path

from remem.engine import events
from remem.engine.ingest import ingest_events, ingest_paths
from tests.conftest import run_remem

GOOD = {"v": 1, "kind": "correction", "text": "use uv not pip", "at": "2026-11-30T10:00:00Z"}


def _one_good_one_bad(tmp_path: Path) -> Path:
    path = tmp_path / "ev.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + '{"bad json\n', encoding="utf-8")
    return path


def test_a_file_with_a_bad_line_exits_zero_at_every_read(home, tmp_path: Path) -> None:
    path = _one_good_one_bad(tmp_path)
    first = run_remem("ingest", "--events", str(path), "--json")
    assert first.returncode == 0, first.stderr
    assert first.json()["episodes"] == 1 and first.json()["malformed_lines"] == 1
    for _ in range(2):
        again = run_remem("ingest", "--events", str(path), "--json")
        assert again.returncode == 0, again.stderr
        out = again.json()
        assert "error" not in out, out
        # stored before: an unchanged file; its bad line, still there, is still reported
        assert (out["files"], out["skipped"], out["episodes"]) == (0, 1, 0), out
        refused = f"{path}:2: not JSON (Unterminated string starting at at column 2)"
        assert out["malformed_lines"] == 1 and out["errors"] == [refused]
    plain = run_remem("ingest", "--events", str(path))
    quiet = run_remem("ingest", "--events", str(path), "--quiet")
    assert plain.returncode == 0 and quiet.returncode == 0, (plain.stderr, quiet.stderr)
    assert "1 error" in quiet.stderr  # still said, in one line


def test_a_file_of_nothing_but_bad_lines_fails_at_every_read(home, tmp_path: Path) -> None:
    """The other side of the rule, as for a transcript with no readable line: exit 1 each time."""
    path = tmp_path / "bad.jsonl"
    path.write_text('{"bad json\n', encoding="utf-8")
    for _ in range(2):
        res = run_remem("ingest", "--events", str(path), "--json")
        assert res.returncode == 1, res.stdout
        assert res.json()["error"] == f"{path}:1: not JSON (Unterminated string starting at at column 2)"


def test_events_stored_before_are_counted_by_the_engine(store, tmp_path: Path) -> None:
    path = _one_good_one_bad(tmp_path)
    first = events.ingest_events_file(store, path)
    assert (first["files"], first["skipped"], first["already"], first["episodes"]) == (1, 0, 0, 1)
    again = events.ingest_events_file(store, path)
    assert (again["files"], again["skipped"], again["already"], again["episodes"]) == (0, 1, 1, 0)
    assert again["events"] == 1 and again["malformed_lines"] == 1
    # the same through --source events (ingest_file) and through --events (ingest_events)
    assert ingest_paths(store, [str(path)], source="events")["skipped"] == 1
    assert ingest_events(store, path)["skipped"] == 1
    # a new event in the file: read, and only it added
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**GOOD, "text": "run the linter before pushing"}) + "\n")
    grown = events.ingest_events_file(store, path)
    assert (grown["files"], grown["skipped"], grown["already"], grown["episodes"]) == (1, 0, 1, 1)
