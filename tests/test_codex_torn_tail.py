"""A Codex rollout whose last line is torn: left alone while unchanged, read when it grows; and
a rollout is read line by line, its memory bounded by its longest line, not its size."""

from __future__ import annotations

import json
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import codex
from remem.engine.ingest import ingest_paths


def _line(t: str, kind: str, payload: dict[str, Any]) -> bytes:
    return (json.dumps({"timestamp": f"2026-03-02T09:00:{t}.000Z", "type": kind, "payload": payload}) + "\n").encode()


def _say(t: str, role: str, text: str) -> bytes:
    part = "input_text" if role == "user" else "output_text"
    return _line(t, "response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]})


def _rollout(sid: str) -> list[bytes]:
    """An ask, a failing command, an answer, then the person correcting it (the last line)."""
    return [
        _line("00", "session_meta", {"id": sid, "timestamp": "2026-03-02T09:00:00.000Z", "cwd": "/home/kim/web"}),
        _say("01", "user", "Start the web app"),
        _line("02", "response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                                      "arguments": json.dumps({"command": ["bash", "-lc", "npm start"]})}),
        _line("03", "response_item", {"type": "function_call_output", "call_id": "c1",
                                      "output": "Exit code: 1\nWall time: 0.4 seconds\nOutput:\nnpm ERR! missing script: start\n"}),
        _say("04", "assistant", "There is no start script."),
        _say("05", "user", "No, use pnpm dev here, never npm start."),
    ]


def _episodes(store, sid: str, kind: str) -> int:
    return store.scalar("SELECT count(*) FROM episodes WHERE session_id = ? AND kind = ?", (sid, kind))


def test_an_unchanged_torn_tail_is_not_read_again_and_the_finished_line_is_read_once(store, tmp_path: Path) -> None:
    sid = "0199c000-0000-7000-8000-00000000f0a1"
    lines = _rollout(sid)
    path = tmp_path / f"rollout-2026-03-02T09-00-00-{sid}.jsonl"
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:30])  # the writer stopped mid-line, for good
    first = ingest_paths(store, [path], source="codex")
    assert first["files"] == 1 and first["errors"] == [] and first["malformed_lines"] == 0
    assert first["by_kind"] == {"session": 1, "error": 1}
    for _ in range(2):  # unchanged: not read again, however often ingest runs
        again = ingest_paths(store, [path], source="codex")
        assert (again["files"], again["skipped"], again["episodes"]) == (0, 1, 0), again
    with open(path, "ab") as fh:  # the line is finished after all
        fh.write(lines[-1][30:])
    grown = ingest_paths(store, [path], source="codex")
    assert grown["files"] == 1 and grown["by_kind"] == {"correction": 1}, grown
    assert ingest_paths(store, [path], source="codex")["skipped"] == 1
    assert _episodes(store, sid, "correction") == 1 and _episodes(store, sid, "error") == 1


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.floats(min_value=0.05, max_value=1, exclude_max=True))
def test_a_rollout_cut_at_any_byte_is_read_once_then_again_only_when_grown(store, tmp_path: Path, where: float) -> None:
    sid = str(uuid.uuid4())
    whole = b"".join(_rollout(sid))
    cut = int(len(whole) * where)
    path = tmp_path / f"rollout-2026-03-02T09-00-00-{sid}.jsonl"
    path.write_bytes(whole[:cut])
    session = codex.parse_rollout(path)
    tail = whole[:cut].rsplit(b"\n", 1)[-1]  # what follows the last newline: a line cut, or whole but for it
    assert session.malformed_lines == 0
    assert session.torn_tail == (tail != b"" and not _parses(tail))
    if session.torn_tail:
        assert session.meta["complete_bytes"] == whole.rfind(b"\n", 0, cut) + 1
    first = ingest_paths(store, [path], source="codex")
    assert first["errors"] == [] and first["files"] == 1, first
    assert ingest_paths(store, [path], source="codex")["skipped"] == 1
    path.write_bytes(whole)
    assert ingest_paths(store, [path], source="codex")["files"] == 1
    assert ingest_paths(store, [path], source="codex")["skipped"] == 1
    assert _episodes(store, sid, "correction") == 1 and _episodes(store, sid, "error") == 1


def _big_rollout(path: Path, sid: str, megabytes: int) -> bytes:
    """A long rollout: its ask and failure, then many lines of a kind not read (each about
    1 KB), then the correction; written as a Codex session grows, one line at a time."""
    lines = _rollout(sid)
    filler = _line("04", "event_msg", {"type": "a_kind_this_version_does_not_read", "pad": "x" * 1000})
    count = megabytes * 2**20 // len(filler)
    data = b"".join(lines[:-1]) + filler * count + lines[-1]
    path.write_bytes(data)
    return data


def _peak_while(read: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = read()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("compressed", [False, True])
def test_a_long_rollout_is_read_in_memory_bounded_by_its_longest_line(tmp_path: Path, compressed: bool) -> None:
    sid = "0199c000-0000-7000-8000-00000000b1a5"
    path = tmp_path / f"rollout-2026-03-02T09-00-00-{sid}.jsonl"
    data = _big_rollout(path, sid, megabytes=24)
    if compressed:
        zstandard = pytest.importorskip("zstandard")
        packed = path.with_name(path.name + ".zst")
        packed.write_bytes(zstandard.ZstdCompressor().compress(data))
        path.unlink()
        path = packed
    session, peak = _peak_while(lambda: codex.parse_rollout(path))
    assert [t.text for t in session.user_turns()] == ["Start the web app", "No, use pnpm dev here, never npm start."]
    assert session.malformed_lines == 0 and not session.torn_tail and session.tool_calls()[0].is_error
    # Read whole, the file alone took 24 MB twice over (its bytes, then its text).
    assert peak < 4 * 2**20, f"{peak / 2**20:.1f} MB to read a {len(data) / 2**20:.0f} MB rollout"
