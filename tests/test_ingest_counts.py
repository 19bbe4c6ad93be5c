"""What `remem ingest` counts and says: copies of one session count once in `sessions`, a file
read beside a refused one is a success, and a rollout of JSON that is no record says so.

Found: a 7-line copy of a Claude Code session read before the full 13-line file (same session
id), or three saves of one TypeScript-CLI Codex conversation, gave `"sessions": 2` with one
stored; a project of `echo garbage` beside a file whose only line is still being written exited
1 with `"files": 1`; a rollout holding `{}` said "1 unreadable line" though the line parsed.

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the CLI in-process.
"""

from __future__ import annotations

import json
import re
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine.ingest import ingest_paths
from tests.test_codex_legacy import CONVERSATION, _write

FIX = Path(__file__).parent / "fixtures" / "claude_code"


def _stored_sessions(store) -> int:
    return store.scalar("SELECT count(*) FROM sessions")


def test_a_shorter_copy_read_first_and_the_longer_one_are_one_session(store, tmp_path):
    lines = (FIX / "v2_tools.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    sid = json.loads(lines[0])["sessionId"]
    short, full = tmp_path / "projects" / "a" / f"{sid}.jsonl", tmp_path / "projects" / "b" / f"{sid}.jsonl"
    for path, kept in ((short, lines[:7]), (full, lines)):
        path.parent.mkdir(parents=True)
        path.write_text("".join(kept), encoding="utf-8")
    os.utime(short, (1_700_000_000, 1_700_000_000))  # the backup copy, older: read first
    os.utime(full, (1_700_000_100, 1_700_000_100))
    summary = ingest_paths(store, [short.parent, full.parent])
    assert summary["errors"] == [] and summary["files"] == 2
    assert summary["sessions"] == summary["by_kind"]["session"] == _stored_sessions(store) == 1, summary
    assert store.scalar("SELECT path FROM sessions") == str(full)


def test_every_save_of_one_codex_conversation_counts_once(store, tmp_path):
    for n, upto in enumerate((5, 7, len(CONVERSATION)), start=1):
        _write(tmp_path, CONVERSATION[:upto], f"00000000-aaaa-4aaa-8aaa-00000000000{n}")
    summary = ingest_paths(store, [tmp_path], source="codex")
    assert summary["errors"] == [] and summary["files"] + summary["skipped"] == 3
    assert summary["sessions"] == summary["by_kind"]["session"] == _stored_sessions(store) == 1, summary


def test_a_file_read_beside_a_refused_one_exits_0_and_nothing_read_exits_1(cli, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    garbage = project / "g.jsonl"
    garbage.write_text("garbage\n")
    torn = project / "22222222-2222-4222-8222-222222222222.jsonl"
    still_written = '{"type": "user", "sessionId": "22222222-2222-4222-8222-222222222222", "message": {"ro'
    torn.write_text(still_written)
    result = cli("ingest", str(project), "--json")
    out = json.loads(result.stdout)
    assert (out["files"], out["sessions"], len(out["errors"])) == (1, 0, 1), out
    assert result.exit_code == 0 and "error" not in out, result.output
    # garbage alone: nothing read, stored or unchanged
    torn.unlink()
    alone = cli("ingest", str(project), "--json")
    assert alone.exit_code == 1 and json.loads(alone.stdout)["files"] == 0
    # an events file whose every line is refused is no file read, nor counted in `files`:
    # alone, exit 1; beside the transcript read, a partial success
    events = tmp_path / "bad-events.jsonl"
    events.write_text('{"v": 1, "kind": "note", "at": "not a time"}\n')
    refused = cli("ingest", "--events", str(events), "--json")
    assert refused.exit_code == 1 and json.loads(refused.stdout)["error"], refused.output
    assert json.loads(refused.stdout)["files"] == 0, refused.output
    torn.write_text(still_written)
    beside = cli("ingest", str(project), "--events", str(events), "--json")
    assert beside.exit_code == 0 and "error" not in json.loads(beside.stdout), beside.output
    assert json.loads(beside.stdout)["files"] == 1, beside.output
    table = cli("ingest", str(project), "--events", str(events))
    assert re.search(r"files read\W+1\b", table.stdout), table.stdout


def _rollout(folder: Path) -> Path:
    path = folder / "sessions" / "2026" / "01" / "01" / \
        "rollout-2026-01-01T00-00-00-dddddddd-0000-4000-8000-000000000001.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_a_rollout_of_json_that_is_no_record_says_so(store, tmp_path):
    path = _rollout(tmp_path)
    path.write_text("{}\n")
    errors = ingest_paths(store, [path])["errors"]
    assert errors == [f"{path}: no records found (1 JSON line that is no record); expected a Codex rollout, one "
                      "JSON object per line (another kind of file: pass --source claude-code or chats)"]


@given(garbage=st.integers(0, 4), parsed=st.lists(st.sampled_from(["{}", "[]", "1", '"x"', '{"a": 1}', "null"]),
                                                  max_size=4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_records_counts_unreadable_and_parsed_lines_apart(store, tmp_path, garbage, parsed):
    if not garbage and not parsed:
        return
    path = _rollout(tmp_path)
    lines = [f"garbage {n}" for n in range(garbage)] + parsed
    path.write_text("\n".join(lines) + "\n")
    errors = ingest_paths(store, [path])["errors"]
    said = ([f"{garbage} unreadable line{'s' if garbage != 1 else ''}"] if garbage else []) + \
        ([f"{len(parsed)} JSON line{'s that are no records' if len(parsed) != 1 else ' that is no record'}"]
         if parsed else [])
    assert len(errors) == 1 and errors[0].startswith(f"{path}: no records found ({', '.join(said)}); "), errors
    assert _stored_sessions(store) == 0
