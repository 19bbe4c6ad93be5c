"""The open event format: validation, episodes, message sessions (also sent in parts), the
inbox, atomic append, and secrets in explicit events stored redacted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import paths
from remem.engine import clock, events
from remem.engine.store import MAX_GIST

FIXTURES = Path(__file__).parent / "fixtures" / "events"
GOOD = {"v": 1, "at": "2026-11-24T09:00:00Z", "kind": "note", "text": "The staging db resets on Sundays."}


def test_every_field_becomes_the_episode(store) -> None:
    with clock.frozen("2026-11-25T00:00:00Z"):
        summary = events.ingest_events_file(store, FIXTURES / "every_field.jsonl")
        # read while the clock is where it was stored: the note is short-term, and an expired
        # memory is not found
        note = store.episode("ci-tool:note-1")  # the event's id is the episode's id
    assert summary["errors"] == [] and summary["events"] == 10 and summary["sessions"] == 1
    assert note["kind"] == "note" and note["source"] == "ci-tool" and note["session_id"] == "ops-7"
    assert note["cwd"] == "/srv/ops" and note["at"] == "2026-11-24T09:00:00.000000+00:00"
    assert note["title"] == "release bot: The staging database is rebuilt every Sunday night."
    assert note["gist"] == "The staging database is rebuilt every Sunday night."
    assert sorted(note["tags"]) == ["db", "staging"]
    assert (note["importance"], note["valence"], note["arousal"]) == (0.8, 0.1, 0.2)
    assert note["memory_type"] == "short_term" and note["expires_at"].startswith("2026-12-25")
    assert note["space"] and note["embedding"]
    kinds = {r["kind"] for r in store.rows("SELECT kind FROM episodes WHERE source = 'ci-tool'")}
    assert kinds == {"note", "correction", "error", "surprise", "environment"}
    err = store.one("SELECT * FROM episodes WHERE kind = 'error' AND source = 'ci-tool'")
    assert err["title"] == "make deploy failed: AWS_PROFILE unbound" and "unbound variable" in err["gist"]


def test_message_events_go_through_the_detectors(store) -> None:
    summary = events.ingest_events_file(store, FIXTURES / "every_field.jsonl")
    assert summary["by_kind"].get("session") == 1
    found = store.rows("SELECT * FROM episodes WHERE session_id = 'chat-42' AND kind = 'correction'")
    assert len(found) == 1 and found[0]["gist"].startswith("No, that's not what I asked")
    # Only the turn marked keep is also an episode of its own (a note tagged message).
    kept = store.rows("SELECT id FROM episodes WHERE session_id = 'chat-42' AND kind = 'note'")
    assert len(kept) == 1 and "message" in store.tags_of(kept[0]["id"])
    row = store.one("SELECT * FROM sessions WHERE id = 'chat-42'")
    assert row["source"] == "events"
    (failed,) = store.rows("SELECT * FROM episodes WHERE session_id = 'chat-42' AND kind = 'error'")
    assert "AssertionError" in failed["detail"] and "tests/test_upload.py" in failed["gist"]


def test_message_session_carries_tool_calls() -> None:
    found, errors = events.parse_event_lines((FIXTURES / "every_field.jsonl").read_text().split("\n"))
    assert errors == []
    (session,) = events.message_sessions(found)
    assert [t.role for t in session.turns] == ["user", "assistant", "assistant", "user", "assistant"]
    shell, read = session.turns[1].tool_calls
    assert shell.id == "call-up-1" and shell.is_error and shell.input == {"command": "pytest tests/test_upload.py"}
    assert not read.is_error and read.id  # no id given: a stable one is made
    assert session.meta["speakers"] == {"user": "Dana", "assistant": "agent"}


def test_reingesting_adds_nothing(store) -> None:
    first = events.ingest_events_file(store, FIXTURES / "every_field.jsonl")
    before = store.counts()["episodes"]
    second = events.ingest_events_file(store, FIXTURES / "every_field.jsonl")
    assert first["episodes"] == before and second["episodes"] == 0
    assert store.counts()["episodes"] == before


def test_ids_without_an_id_are_stable_and_distinct() -> None:
    a = events.validate(GOOD)
    b = events.validate({**GOOD, "at": "2026-11-24T09:00:00+00:00"})  # same instant, other spelling
    c = events.validate({**GOOD, "session": "s2"})
    assert events.episode_id(a) == events.episode_id(b) != events.episode_id(c)


@pytest.mark.parametrize("change,field", [
    ({"kind": None}, "kind"),
    ({"kind": "diary"}, "kind"),
    ({"at": None}, "at"),
    ({"at": "yesterday"}, "at"),
    ({"at": 1764400000}, "at"),
    ({"v": 2}, "v"),
    ({"text": 42}, "text"),
    ({"text": "x" * (MAX_GIST + 1)}, "text"),
    ({"text": ""}, "text"),
    ({"tags": "a,b"}, "tags"),
    ({"importance": 2}, "importance"),
    ({"valence": "bad"}, "valence"),
    ({"arousal": True}, "arousal"),
    ({"ttl": "soon"}, "ttl"),
    ({"id": ""}, "id"),
    ({"session": 7}, "session"),
    ({"kind": "message", "session": "s"}, "role"),
    ({"kind": "message", "role": "user"}, "session"),
    ({"role": "narrator"}, "role"),
    ({"keep": "yes"}, "keep"),
    ({"text": "bad \ud800 surrogate"}, "text"),
    ({"tool_calls": [{"name": "sh"}]}, "tool_calls"),
    ({"kind": "message", "role": "assistant", "session": "s", "tool_calls": [{"input": 1}]}, "tool_calls[0].name"),
    ({"kind": "message", "role": "assistant", "session": "s", "tool_calls": [{"name": "x", "is_error": "y"}]},
     "tool_calls[0].is_error"),
    ({"kind": "message", "role": "assistant", "session": "s", "tool_calls": [{"name": 5}]}, "tool_calls[0].name"),
    ({"tags": ["\udfff"]}, "tags"),
    ({"ttl": "1e30s"}, "ttl"),
])
def test_a_bad_event_gets_a_reason_naming_the_field(change: dict, field: str) -> None:
    ev = {**GOOD, **change}
    ev = {k: v for k, v in ev.items() if v is not None}
    found, errors = events.parse_event_lines([json.dumps(ev)])
    assert found == [] and len(errors) == 1
    line, reason = errors[0]
    assert line == 1 and reason.startswith(f"{field}:"), reason
    assert "\n" not in reason


def test_title_and_detail_instead_of_text_and_long_messages() -> None:
    ev = events.validate({"v": 1, "at": "2026-11-24T09:00:00Z", "kind": "error", "title": "t", "detail": "d" * 9000})
    assert ev["text"] is None and ev["detail"] == "d" * 9000
    msg = events.validate({"v": 1, "at": "2026-11-24T09:00:00Z", "kind": "message", "role": "assistant",
                           "session": "s", "text": "y" * 20000})
    assert len(msg["text"]) == 20000
    assert events.validate({k: v for k, v in GOOD.items() if k != "v"})["v"] == 1  # v defaults to 1


def test_line_separator_inside_text_is_not_a_line_break(store, tmp_path: Path) -> None:
    path = tmp_path / "u.jsonl"
    path.write_text(json.dumps({**GOOD, "text": "one\u2028two"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert events.ingest_events_file(store, path)["episodes"] == 1


def test_locomo_shaped_notes_ingest_in_one_batch(store, tmp_path: Path) -> None:
    """One `kind: note` event per conversation turn, as the LoCoMo benchmark writes them."""
    path = tmp_path / "conv.jsonl"
    n = 6000
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({
                "v": 1, "at": f"2023-05-{1 + i // 400:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
                "kind": "note", "session": f"conv-26:session_{1 + i // 20}", "speaker": "Caroline" if i % 2 else "Melanie",
                "source": "locomo", "tags": [f"D{1 + i // 20}:{1 + i % 20}"],
                "text": f"Turn {i}: I went to the support group on day {i % 31}.",
                "detail": "image: a photo of a rainbow flag" if i % 50 == 0 else None,
            }, default=None).replace(', "detail": null', "") + "\n")
    summary = events.ingest_events_file(store, path)
    assert summary["errors"] == [] and summary["episodes"] == n and summary["sessions"] == 0
    ep = store.one("SELECT * FROM episodes WHERE title LIKE 'Melanie: Turn 0:%'")
    assert ep["session_id"] == "conv-26:session_1" and store.tags_of(ep["id"]) == ["d1:1"]
    assert events.ingest_events_file(store, path)["episodes"] == 0


# --------------------------------------------------------------------------- the inbox

def _inbox_file(name: str, lines: list[str]) -> Path:
    inbox = paths.inbox_dir()
    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_inbox_three_good_lines_one_bad(store) -> None:
    good = [json.dumps({**GOOD, "text": f"fact {i}"}) for i in range(3)]
    path = _inbox_file("batch.jsonl", [good[0], good[1], '{"v": 1, "kind": "note", "text": "no time"}', good[2]])
    first = events.ingest_inbox(store)
    assert first["episodes"] == 3 and first["malformed_lines"] == 1 and first["moved"] == 0
    assert path.exists()
    report = path.with_name("batch.jsonl.errors.txt").read_text()
    assert "batch.jsonl:3: at: missing" in report
    assert first["errors"] == [f"{path}:3: at: missing; give the time as ISO 8601, e.g. 2026-11-29T10:00:00Z"]
    second = events.ingest_inbox(store)
    assert second["episodes"] == 0 and second["waiting"] == 1 and store.counts()["episodes"] == 3
    # Fixed by hand: read again, nothing added twice, moved to done/, report gone.
    path.write_text("\n".join(good) + "\n")
    third = events.ingest_inbox(store)
    assert third["episodes"] == 0 and third["moved"] == 1 and third["errors"] == []
    assert not path.exists() and (path.parent / "done" / "batch.jsonl").exists()
    assert not path.with_name("batch.jsonl.errors.txt").exists()
    assert store.counts()["episodes"] == 3


def test_an_inbox_file_written_to_while_it_is_read_stays_for_the_next_run(store, monkeypatch) -> None:
    """A writer that appends (against the protocol's advice) after the read used to see its
    new lines moved to done/ unread."""
    path = _inbox_file("log.jsonl", [json.dumps({**GOOD, "id": "w:1", "text": "fact one"})])
    real_store_events = events.store_events

    def store_then_append(store_, found):  # the writer strikes between read and move
        result = real_store_events(store_, found)
        with path.open("a") as fh:
            fh.write(json.dumps({**GOOD, "id": "w:2", "text": "fact two"}) + "\n")
        return result

    monkeypatch.setattr(events, "store_events", store_then_append)
    first = events.ingest_inbox(store)
    assert first["episodes"] == 1 and first["moved"] == 0 and path.exists()
    monkeypatch.setattr(events, "store_events", real_store_events)
    second = events.ingest_inbox(store)
    assert second["episodes"] == 1 and second["moved"] == 1 and not path.exists()
    assert {r["id"] for r in store.rows("SELECT id FROM episodes")} >= {"w:1", "w:2"}


def test_inbox_gathers_a_conversation_written_one_exchange_per_file(store) -> None:
    def turn(i: int, role: str, text: str) -> dict:
        return {"kind": "message", "session": "px-1", "id": f"px-1-{i}", "role": role, "text": text,
                "at": f"2026-11-24T10:0{i}:00Z", "source": "proxy"}

    history = [turn(0, "user", "Add a retry to the upload job."),
               turn(1, "assistant", "Added three retries with a fixed delay. Done."),
               turn(2, "user", "No, that's not what I asked: use exponential backoff."),
               turn(3, "assistant", "Switched to exponential backoff.")]
    # Like the proxy: each exchange resends the history so far, one file per exchange.
    events.append_to_inbox(history[:2], name="x1")
    events.append_to_inbox(history[:4], name="x2")
    summary = events.ingest_inbox(store)
    assert summary["sessions"] == 1 and summary["moved"] == 2 and summary["errors"] == []
    (found,) = store.rows("SELECT * FROM episodes WHERE session_id = 'px-1' AND kind = 'correction'")
    assert found["gist"].startswith("No, that's not what I asked")
    assert events.ingest_inbox(store)["episodes"] == 0


def test_plain_ingest_reads_the_inbox(store) -> None:
    from remem.engine.ingest import ingest_paths

    _inbox_file("a.jsonl", [json.dumps(GOOD)])
    summary = ingest_paths(store)
    assert summary["episodes"] == 1 and summary["errors"] == []
    assert (paths.inbox_dir() / "done" / "a.jsonl").exists()
    _inbox_file("a.jsonl", [json.dumps(GOOD)])  # the same name again lands beside, not over
    assert ingest_paths(store, source="events")["episodes"] == 0
    assert (paths.inbox_dir() / "done" / "a-1.jsonl").exists()


def test_append_to_inbox_is_atomic_and_validated(store) -> None:
    p1 = events.append_to_inbox([{"kind": "note", "text": "from the proxy"}], name="proxy")
    p2 = events.append_to_inbox([{"kind": "note", "text": "again"}], name="proxy")
    assert p1 != p2 and p1.parent == p2.parent == paths.inbox_dir()
    assert [p.name for p in paths.inbox_dir().iterdir() if p.name.startswith(".")] == []
    line = json.loads(p1.read_text())
    assert line["v"] == 1 and line["at"] and line["text"] == "from the proxy"
    with pytest.raises(ValueError, match=r"event 1: kind: unknown 'nope'"):
        events.append_to_inbox([{"kind": "note", "text": "ok"}, {"kind": "nope", "text": "x"}])
    assert len(list(paths.inbox_dir().glob("*.jsonl"))) == 2  # nothing written for the bad call
    assert events.ingest_inbox(store)["episodes"] == 2


def test_cli_ingest_events_file(cli, tmp_path: Path) -> None:
    path = tmp_path / "ev.jsonl"
    path.write_text(json.dumps(GOOD) + "\n{oops\n")
    result = cli("ingest", "--source", "events", str(path), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["episodes"] == 1 and out["malformed_lines"] == 1
    assert out["errors"][0].startswith(f"{path}:2: not JSON")


# --------------------------------------------------------------------------- never raises

_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=15),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_event = st.dictionaries(
    st.sampled_from(["v", "at", "kind", "text", "title", "detail", "id", "session", "source", "cwd",
                     "tags", "importance", "valence", "arousal", "ttl", "role", "speaker", "keep",
                     "tool_calls", "zz"]),
    _value | st.sampled_from(["note", "message", "user", "2026-11-24T09:00:00Z", "7d", 1, 0.5]),
    max_size=10,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_event.map(json.dumps), st.text(max_size=40)), max_size=8))
def test_malformed_lines_never_raise(lines: list[str]) -> None:
    found, errors = events.parse_event_lines(lines)
    assert len(found) + len(errors) == sum(1 for line in lines if line.strip())
    for _, reason in errors:
        assert reason and "\n" not in reason
    for ev in found:
        assert ev["kind"] in events.KINDS and ev["at"].endswith("+00:00")


_text = st.text(max_size=30)  # any code point, lone surrogates included
_valid_ish = st.fixed_dictionaries(
    {"at": st.sampled_from(["2026-11-24T09:00:00Z", "0001-01-01T00:00:00+14:00", "2026-11-24", "9999-12-31T23:59:59"]),
     "kind": st.sampled_from(list(events.KINDS))},
    optional={"text": _text, "title": _text, "detail": _text, "id": _text, "session": _text,
              "source": _text, "cwd": _text, "speaker": _text, "tags": st.lists(_text, max_size=3),
              "importance": st.floats(), "valence": st.floats(), "arousal": st.floats(),
              "ttl": st.one_of(_text, st.floats(), st.sampled_from(["1e30s", "7d", "-1", "nan"])),
              "role": st.sampled_from(["user", "assistant"]), "keep": st.booleans(),
              "tool_calls": st.lists(st.fixed_dictionaries(
                  {"name": _text}, optional={"id": _text, "result": _text, "is_error": st.booleans(),
                                             "rejected": st.booleans(), "input": _value}), max_size=3)},
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_valid_ish, min_size=1, max_size=5))
def test_any_file_of_events_ingests_without_raising(store, tmp_path: Path, evs: list[dict]) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in evs), encoding="utf-8")
    summary = events.ingest_events_file(store, path)
    assert summary["events"] + summary["malformed_lines"] == len(evs)


def test_plain_remem_ingest_reads_codex_and_the_inbox(remem_cli, home: Path, tmp_path: Path) -> None:
    """The real console script: Codex sessions and an inbox file in one plain `remem ingest`."""
    import os
    import shutil

    shutil.copytree(Path(__file__).parent / "fixtures" / "codex", Path(os.environ["CODEX_HOME"]))
    events.append_to_inbox([{"kind": "note", "text": "The office VPN drops at 18:00."}], name="tool")
    result = remem_cli("ingest", "--json")
    assert result.returncode == 0, result.stderr
    out = result.json()
    assert out["errors"] == [] and out["sessions"] == 4 and out["by_kind"]["correction"] >= 4
    assert (paths.inbox_dir() / "done" / "tool.jsonl").exists()
    again = remem_cli("ingest", "--json").json()
    # The four rollouts are unchanged, the one whose last line is torn too: none is read again.
    assert again["episodes"] == 0 and again["skipped"] == 4 and again["files"] == 0


def test_an_events_file_with_a_byte_order_mark_is_read(store, tmp_path: Path) -> None:
    path = tmp_path / "events-bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(GOOD) + "\n").encode())
    summary = events.ingest_events_file(store, path)
    assert summary["errors"] == [] and summary["episodes"] == 1
    _inbox_file("bom.jsonl", [])
    (paths.inbox_dir() / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + (json.dumps({**GOOD, "text": "inbox"}) + "\n").encode())
    inbox = events.ingest_inbox(store)
    assert inbox["errors"] == [] and inbox["episodes"] == 1 and inbox["moved"] == 1


def test_a_hard_deleted_event_is_not_added_again(store, tmp_path: Path) -> None:
    path = tmp_path / "ev.jsonl"
    path.write_text(json.dumps({**GOOD, "id": "ev-1"}) + "\n")
    assert events.ingest_events_file(store, path)["episodes"] == 1
    store.hard_delete(["ev-1"])
    assert events.ingest_events_file(store, path)["episodes"] == 0
    assert store.counts()["episodes"] == 0


def _msg(at: str, role: str, text: str) -> str:
    return json.dumps({"v": 1, "at": at, "kind": "message", "session": "chat-42", "role": role, "text": text})


def _two_parts(tmp_path: Path) -> tuple[Path, Path]:
    """One conversation sent as two events files, an hour apart."""
    part1, part2 = tmp_path / "part1.jsonl", tmp_path / "part2.jsonl"
    part1.write_text("\n".join([_msg("2026-11-24T10:00:00Z", "user", "Please add a retry to the upload job."),
                                _msg("2026-11-24T10:00:40Z", "assistant", "Added a retry. Done.")]) + "\n")
    part2.write_text("\n".join([_msg("2026-11-24T11:00:00Z", "user", "What time is it in Tokyo?"),
                                _msg("2026-11-24T11:00:05Z", "assistant", "It is 8pm in Tokyo.")]) + "\n")
    return part1, part2


def test_a_later_file_of_the_same_conversation_adds_to_its_session_memory(store, tmp_path: Path) -> None:
    part1, part2 = _two_parts(tmp_path)

    def session_memory() -> dict:
        (row,) = store.rows("SELECT title, gist, at FROM episodes WHERE kind = 'session'")
        return row

    events.ingest_events_file(store, part1)
    events.ingest_events_file(store, part2)
    row = session_memory()
    assert row["title"] == "Please add a retry to the upload job."  # what was asked first
    assert row["at"].startswith("2026-11-24T10:00:00")
    assert "Please add a retry" in row["gist"] and "8pm in Tokyo" in row["gist"]
    # reading either part again changes nothing
    for part in (part1, part2, part1):
        events.ingest_events_file(store, part)
        assert session_memory() == row
    # the whole conversation, sent again, is the session as written from its start
    whole = tmp_path / "whole.jsonl"
    whole.write_text(part1.read_text() + part2.read_text())
    events.ingest_events_file(store, whole)
    assert "8pm in Tokyo" in session_memory()["gist"]
    assert "Then, from" not in session_memory()["gist"]  # one piece again, not parts


def test_a_later_part_whose_file_grew_replaces_its_own_segment(store, tmp_path: Path) -> None:
    """A later part read again after its file grew used to be added a second time."""
    part1, part2 = _two_parts(tmp_path)
    events.ingest_events_file(store, part1)
    events.ingest_events_file(store, part2)
    with part2.open("a") as fh:
        fh.write(_msg("2026-11-24T11:02:00Z", "user", "And in Berlin?") + "\n")
        fh.write(_msg("2026-11-24T11:02:05Z", "assistant", "It is noon in Berlin.") + "\n")
    events.ingest_events_file(store, part2)
    (gist,) = [r["gist"] for r in store.rows("SELECT gist FROM episodes WHERE kind = 'session'")]
    assert gist.count("Then, from 2026-11-24 11:00") == 1 and "noon in Berlin" in gist
    assert gist.startswith("Asked: Please add a retry")


def test_events_sessions_are_never_replaced_in_parts(store):
    """An events batch may hold only part of a session: what earlier batches found stays."""
    from remem.engine.events import ingest_events, validate

    def msg(n: int, role: str, text: str) -> dict:
        return validate({"v": 1, "kind": "message", "session": "ev-1", "role": role, "text": text,
                         "at": f"2026-03-01T10:0{n}:00Z"})

    ingest_events(store, [msg(0, "user", "add a cache"), msg(1, "assistant", "Done, I added it."),
                          msg(2, "user", "no, use redis instead")])
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction'") == 1
    ingest_events(store, [msg(5, "user", "thanks, now the docs"), msg(6, "assistant", "Docs written.")])
    assert store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction'") == 1


def test_a_blank_title_a_long_kept_message_and_a_long_speaker(store, tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    long_text = "word " * 1800 + "ENDWORD"
    path.write_text("\n".join(json.dumps(e) for e in [
        {**GOOD, "id": "t1", "title": "   ", "text": "hello world"},
        {"v": 1, "id": "k1", "at": "2026-11-24T09:00:00Z", "kind": "message", "session": "s",
         "role": "user", "keep": True, "text": long_text},
        {**GOOD, "id": "s1", "speaker": "S" * 300},
    ]) + "\n")
    summary = events.ingest_events_file(store, path)
    assert summary["errors"] == [f"{path}:3: speaker: 300 characters, over the 200 cap"]
    assert store.one("SELECT title FROM episodes WHERE id = 't1'")["title"] == "hello world"
    kept = store.one("SELECT gist, detail FROM episodes WHERE gist LIKE 'word word%'")
    assert len(kept["gist"]) <= 4000 and kept["detail"].endswith("ENDWORD")  # nothing lost


# --------------------------------------------------------------------------- secrets in explicit events

KEY = "sk-proj-AbCdEfGh1234IjKlMnOp5678QrStUvWxabcd"
GH = "ghp_1234567890abcdefghijABCDEFGHIJ0123"


def test_secrets_in_explicit_events_are_stored_redacted(home: Path, cli: Any, store: Any,
                                                        tmp_path: Path) -> None:
    from remem.engine import events

    raw = [
        {"v": 1, "kind": "note", "at": "2026-11-29T10:00:00Z", "title": f"deploy key {GH}",
         "text": f"the staging deploy uses OPENAI_API_KEY={KEY} for now", "detail": f"token {GH} rotates"},
        {"v": 1, "kind": "message", "role": "user", "session": "s1", "keep": True,
         "at": "2026-11-29T10:01:00Z", "text": f"keep this: staging deploy key {KEY}"},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in raw))
    assert cli("ingest", "--events", str(path)).exit_code == 0
    rows = store.rows("SELECT id, title, gist, detail FROM episodes")  # the session's own one too
    for row in rows:
        for field in ("title", "gist", "detail"):
            assert "sk-proj-" not in row[field] and "ghp_" not in row[field], (field, row[field])
    assert any("[secret]" in row["gist"] for row in rows) and any("[secret]" in row["title"] for row in rows)
    # Ids still hash the event as written: re-reading adds nothing, ids do not move.
    assert {events.episode_id(events.validate(e)) for e in raw} <= {r["id"] for r in rows}
    assert cli("ingest", "--events", str(path)).exit_code == 0
    assert store.one("SELECT count(*) AS n FROM episodes")["n"] == len(rows)
    for query in ("staging deploy key", "deploy key", KEY):
        out = cli("recall", query, "--json")
        assert out.exit_code == 0, out.output
        assert "sk-proj-" not in out.stdout and "ghp_" not in out.stdout, out.stdout
        assert "[secret]" in out.stdout


# --------------------------------------------------------------------------- the folder an event names

def test_an_event_folder_with_a_trailing_slash_is_the_project_without_it(home: Path, cli: Any, store: Any,
                                                                         tmp_path: Path) -> None:
    """An event's cwd "/…/beta/" was stored as written: the lesson learned from it was counted
    under no_project_folder and rendered nowhere, though `lessons list --project beta` showed
    it. Stored in the one spelling the hooks and render use, it is beta's lesson."""
    beta = tmp_path / "beta"
    (beta / "sub").mkdir(parents=True)
    memory = paths.claude_projects_dir() / paths.project_folder_name(str(beta)) / "memory"
    memory.parent.mkdir(parents=True)
    raw = [{"v": 1, "at": "2026-01-06T10:00:00Z", "kind": "correction", "cwd": f"{beta}/",
            "text": "In beta, never commit the generated protobuf stubs."},
           {"v": 1, "at": "2026-01-06T10:05:00Z", "kind": "note", "cwd": f"{beta}/sub/..//",
            "text": "The beta staging db resets on Sundays."}]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in raw))
    assert cli("ingest", "--events", str(path)).exit_code == 0
    assert [r["cwd"] for r in store.rows("SELECT cwd FROM episodes ORDER BY at")] == [str(beta)] * 2
    slept = cli("sleep", "--json")
    assert slept.exit_code == 0, slept.output
    assert json.loads(slept.stdout)["passes"]["render"]["no_project_folder"] == 0
    lesson = store.one("SELECT id, cwd FROM lessons WHERE text LIKE '%protobuf%'")
    assert lesson["cwd"] == str(beta)
    assert any(lesson["id"] in f.name for f in memory.iterdir())
