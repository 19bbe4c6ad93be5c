"""The TypeScript Codex CLI's rollouts (2025): ~/.codex/sessions/rollout-<date>-<uuid>.json, one
JSON document `{"session": {...}, "items": [response items]}`, rewritten to a new file (a new
random id) at every save. Fixtures written here for the project, in the shape that CLI wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import paths
from remem.engine import codex, detect
from remem.engine.ingest import ingest_paths

SAVED_AT = "2025-04-18T10:00:05.123Z"


def _say(role: str, text: str, item_id: str | None = None) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    item: dict[str, Any] = {"role": role, "type": "message", "content": [{"type": kind, "text": text}]}
    if item_id:
        item["id"] = item_id
    return item


def _shell(call_id: str, item_id: str, script: str, name: str = "shell") -> dict[str, Any]:
    return {"id": item_id, "type": "function_call", "status": "completed", "name": name, "call_id": call_id,
            "arguments": json.dumps({"command": ["bash", "-lc", script], "workdir": "/home/ana/api"})}


def _output(call_id: str, output: str, exit_code: int) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id,
            "output": json.dumps({"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.4}})}


# One conversation as the CLI kept it: the person's ask, the model's reasoning, a failing
# command, its answer, a notice of the CLI's own (role "system"), the person correcting it,
# and a second command under the CLI's other name for its shell.
CONVERSATION: list[dict[str, Any]] = [
    _say("user", "Run the tests for the api package"),
    {"id": "rs_4f1a", "type": "reasoning", "summary": [], "duration_ms": 1200},
    _shell("call_a", "fc_4f1b", "pytest api"),
    _output("call_a", "ImportError: No module named 'api.settings'\n", 1),
    _say("assistant", "The tests fail: api.settings cannot be imported.", "msg_4f1c"),
    {"id": "error-1713434405", "type": "message", "role": "system",
     "content": [{"type": "input_text", "text": "Rate limit reached, retrying."}]},
    _say("user", "No, run them with make test, it sets DJANGO_SETTINGS_MODULE."),
    _shell("call_b", "fc_4f1d", "make test", name="container.exec"),
    _output("call_b", "42 passed\n", 0),
    _say("assistant", "All 42 tests pass with make test.", "msg_4f1e"),
]


def _document(items: list[dict[str, Any]], rollout_id: str) -> dict[str, Any]:
    return {"session": {"timestamp": SAVED_AT, "id": rollout_id, "instructions": "Be terse."}, "items": items}


def _write(folder: Path, items: list[dict[str, Any]], rollout_id: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2025-04-18-{rollout_id}.json"
    path.write_text(json.dumps(_document(items, rollout_id), indent=2), encoding="utf-8")  # as the CLI did
    return path


def _as_jsonl(folder: Path, items: list[dict[str, Any]], sid: str) -> Path:
    """The same items in today's rollout: the envelope, dated by the same time."""
    lines = [{"timestamp": SAVED_AT, "type": "session_meta", "payload": {"id": sid, "timestamp": SAVED_AT}}]
    lines += [{"timestamp": SAVED_AT, "type": "response_item", "payload": item} for item in items]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2025-04-18T10-00-05-{sid}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _shape(session: Any) -> list[tuple[Any, ...]]:
    return [(t.role, t.text, t.at, [(c.id, c.input, c.result, c.is_error) for c in t.tool_calls])
            for t in session.turns]


def test_a_legacy_rollout_reads_as_the_same_session_as_a_jsonl_one(tmp_path: Path) -> None:
    legacy = codex.parse_rollout(_write(tmp_path, CONVERSATION, "9b2e6c1a-4d3f-4a8b-9c7d-1e2f3a4b5c6d"))
    # the CLI's "container.exec" is its shell; read under the one name
    jsonl_items = [{**i, "name": "shell"} if i.get("name") == "container.exec" else i for i in CONVERSATION]
    modern = codex.parse_rollout(_as_jsonl(tmp_path, jsonl_items, "0199a000-0000-7000-8000-00000000aaaa"))
    assert _shape(legacy) == _shape(modern)
    assert [c.name for c in legacy.tool_calls()] == ["shell", "shell"]
    assert (legacy.source, legacy.malformed_lines, legacy.torn_tail) == ("codex", 0, False)
    assert legacy.started.startswith("2025-04-18T10:00:05") and legacy.ended == legacy.started
    assert legacy.meta["rollout_id"] == "9b2e6c1a-4d3f-4a8b-9c7d-1e2f3a4b5c6d"
    # the CLI's own notice is not the conversation; the person's words are
    assert [t.text for t in legacy.user_turns()] == [
        "Run the tests for the api package", "No, run them with make test, it sets DJANGO_SETTINGS_MODULE."]
    for finder in (detect.corrections, detect.errors):
        assert [f.title for f in finder(legacy)] == [f.title for f in finder(modern)] != []


def test_plain_ingest_finds_legacy_rollouts_beside_the_jsonl_ones(store) -> None:
    sessions = paths.codex_home() / "sessions"
    _write(sessions, CONVERSATION, "9b2e6c1a-4d3f-4a8b-9c7d-1e2f3a4b5c6d")
    _as_jsonl(sessions / "2026" / "01" / "05", [_say("user", "hello"), _say("assistant", "hi", "msg_1")],
              "0199a000-0000-7000-8000-00000000bbbb")
    archived = paths.codex_home() / "archived_sessions"
    _write(archived, [_say("user", "Tag the release"), _say("assistant", "Tagged v1.2.", "msg_9")],
           "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a")
    assert {p.suffix for p in codex.find_rollouts()} == {".json", ".jsonl"} and len(codex.find_rollouts()) == 3
    first = ingest_paths(store)
    assert first["errors"] == [] and first["sessions"] == 3, first
    assert first["by_kind"]["correction"] == 1 and first["by_kind"]["error"] == 1
    assert ingest_paths(store)["skipped"] == 3
    # a folder named without --source, and --source codex, find the same
    assert len(codex.find_rollouts(sessions)) == 2
    assert ingest_paths(store, [sessions])["skipped"] == 2
    assert ingest_paths(store, source="codex")["skipped"] == 3


def test_every_save_of_one_conversation_is_one_session(store, tmp_path: Path) -> None:
    """The CLI wrote the conversation so far to a new file, under a new random id, at each save:
    its findings are stored once, told by the longest file, whichever is read first."""
    saves = [
        _write(tmp_path, CONVERSATION[:1], "00000000-aaaa-4aaa-8aaa-000000000001"),  # before any answer
        _write(tmp_path, CONVERSATION[:5], "00000000-aaaa-4aaa-8aaa-000000000002"),
        _write(tmp_path, CONVERSATION[:7], "00000000-aaaa-4aaa-8aaa-000000000003"),
        _write(tmp_path, CONVERSATION, "00000000-aaaa-4aaa-8aaa-000000000004"),
    ]
    read = {p: codex.parse_rollout(p).id for p in saves}
    assert len(set(read.values())) == 2 and read[saves[1]] == read[saves[3]] == "rs_4f1a"
    summary = ingest_paths(store, [saves[2], saves[3], saves[1], saves[0]])  # longest first, then the rest
    assert summary["errors"] == [] and summary["by_kind"]["correction"] == 1 and summary["by_kind"]["error"] == 1
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction'") == 1
    assert store.scalar("SELECT path FROM sessions WHERE id = 'rs_4f1a'") == str(saves[3])
    again = ingest_paths(store, [tmp_path])
    assert again["episodes"] == 0 and again["errors"] == []


def test_a_legacy_rollout_with_no_conversation_is_no_error(store, tmp_path: Path) -> None:
    path = _write(tmp_path, [CONVERSATION[5]], "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d")  # the CLI's notice alone
    summary = ingest_paths(store, [path])
    assert summary["errors"] == [] and summary["sessions"] == 0 and summary["files"] == 1, summary
    assert ingest_paths(store, [path])["skipped"] == 1


def test_a_legacy_rollout_that_is_no_json_says_where(store, tmp_path: Path) -> None:
    path = _write(tmp_path, CONVERSATION, "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"items": [', '"items": [,', 1), encoding="utf-8")
    summary = ingest_paths(store, [path])
    (error,) = summary["errors"]
    assert "not valid JSON: Expecting value at line" in error and "expected a Codex rollout" in error, error
    assert summary["sessions"] == 0 and store.scalar("SELECT count(*) FROM sessions") == 0


_cut_points = st.floats(min_value=0, max_value=1, exclude_max=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_cut_points, st.sampled_from([None, 2]))
def test_a_legacy_rollout_cut_anywhere_reads_the_items_before_the_cut(tmp_path: Path, where: float,
                                                                      indent: int | None) -> None:
    """A save cut short (the CLI stopped while writing, or the file is being written) is torn:
    the items whole before the cut are read, as the complete lines of a JSONL rollout are."""
    whole = json.dumps(_document(CONVERSATION, "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a"), indent=indent)
    cut = whole[: int(len(whole) * where)]
    path = tmp_path / "rollout-2025-04-18-3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a.json"
    path.write_text(cut, encoding="utf-8")
    session = codex.parse_rollout(path)
    full = _shape(codex.parse_rollout(_write(tmp_path / "whole", CONVERSATION, "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a")))
    assert session.torn_tail and session.malformed_lines == 0
    # a prefix of the whole conversation (an answer in progress may lack its output yet)
    got = _shape(session)
    assert len(got) <= len(full) and [t[:3] for t in got] == [t[:3] for t in full[: len(got)]]
    assert session.id in ("rs_4f1a", "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a", path.name.split(".")[0])


def test_a_cut_save_is_not_read_again_until_it_grows(store, tmp_path: Path) -> None:
    path = _write(tmp_path, CONVERSATION, "4d3c2b1a-0f9e-4d8c-8b7a-6f5e4d3c2b1a")
    whole = path.read_bytes()
    path.write_bytes(whole[: whole.index(b"No, run them")])  # cut inside the correction
    first = ingest_paths(store, [path])
    assert first["errors"] == [] and first["by_kind"].get("error") == 1 and "correction" not in first["by_kind"]
    assert ingest_paths(store, [path])["skipped"] == 1
    path.write_bytes(whole)
    done = ingest_paths(store, [path])
    assert done["files"] == 1 and done["by_kind"] == {"correction": 1}, done
    assert ingest_paths(store, [path])["skipped"] == 1


@pytest.mark.parametrize("name", ["rollout-2025-04-18-x.json", "rollout-x.jsonl"])
def test_jsonl_named_json_and_a_compact_document_are_both_read(tmp_path: Path, name: str) -> None:
    """A `.json` holding JSON lines is read as lines; the document written on one line is read
    as the document when named `.json`."""
    path = tmp_path / name
    sid = "0199a000-0000-7000-8000-00000000cccc"
    _as_jsonl(tmp_path, CONVERSATION[:5], sid).rename(path)
    assert codex.parse_rollout(path).id == sid and len(codex.parse_rollout(path).turns) == 3
    compact = tmp_path / "rollout-2025-04-18-compact.json"
    compact.write_text(json.dumps(_document(CONVERSATION[:5], "c")), encoding="utf-8")
    assert len(codex.parse_rollout(compact).turns) == 3
