"""A correction that ends in praise for the rest, two alike copies of one
transcript, a file named as the wrong source (chats, events), secrets in event tags. Real
store, real bundled model, the project's own fixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.engine import detect, ingest
from remem.engine.detect_corrections import pushback
from remem.engine.session import Session, Turn

FIX = Path(__file__).parent / "fixtures"
SID = "11111111-1111-4111-8111-111111111111"  # v1_sidechain.jsonl's session


# --------------------------------------------------------------------------- 1: praise for the rest

CORRECTIONS_ENDING_IN_PRAISE = [
    ("No, use pnpm, not npm. Otherwise LGTM", "no"),
    ("Don't touch the lockfile. The rest looks good.", "don't"),
    ("Stop adding comments everywhere. Otherwise great work!", "stop"),
    ("no, use pnpm instead. Then ship it.", "no"),
    ("You deleted the tests! Put them back, then commit it.", "undo"),
    ("Revert the migration change; everything else looks good to me.", "undo"),
    # the rest approved in other words: "fix that and ship it", "once that's fixed, LGTM"
    ("No, use pnpm not npm. Fix that and ship it.", "no"),
    ("You deleted the tests! Put them back and commit it.", "undo"),
    ("Don't commit the .env file. Once that's fixed, LGTM.", "don't"),
    ("No, I said pnpm. After that, ship it.", "no"),
    ("No, use pnpm not npm. Aside from that, LGTM.", "no"),
    ("No, use pnpm not npm. Rest looks good.", "no"),
]
PRAISE = [
    "Don't hesitate to refactor the helper if needed. Great work!",
    "No way, that's brilliant! Commit it.",
    "Never thought this would be so easy, thanks!",
    "Nope, no more changes needed. Ship it.",
    "Revert is not needed, the change is good.",
    "Why did you say the tests pass? … just curious",
    "Nope. Ship it.",
    "Thanks! Otherwise LGTM",
    "LGTM",
    # approval of the rest after a statement, not a request: nothing was asked for
    "Nice catch on the race. Everything else looks good.",
    "I like the new names. The rest looks good to me.",
    "Tests pass now. Otherwise LGTM.",
    "The docs are clear. Everything else looks good.",
    "Keep up the good work. Otherwise LGTM",
    # a plain approval at the end approves the work, whatever came before it
    "No, nothing else. Looks good!",
    "Stop worrying about the warnings, they're fine. Looks good.",
    "Nope, nothing else. Ship it.",
    "Nope, that's everything. Ship it!",
    "No, I don't have any other comments. Great work!",
    "Test coverage is solid. Otherwise LGTM",
    "Fix works for me. Otherwise LGTM",
    "Keep it up! Otherwise LGTM",
    # a "no" to "anything else?", then approval
    "No, that's it then. LGTM",
    "Nope, looks good then. Ship it",
    "No, all good then, commit it.",
    "No, go ahead then. Ship it.",
    # a request with no pushback words before approval of the rest: missed, by design (silence)
    "Rename the helper to parse_args. Otherwise LGTM",
]


def _handback(reply: str) -> Session:
    return Session(id="s1", source="claude-code", turns=[
        Turn(role="user", text="tidy the imports"), Turn(role="assistant", text="Done, I tidied the imports."),
        Turn(role="user", text=reply)])


@pytest.mark.parametrize("reply, how", CORRECTIONS_ENDING_IN_PRAISE)
def test_a_correction_ending_in_praise_for_the_rest_is_a_correction(reply, how):
    found = detect.corrections(_handback(reply))
    assert [(f.text, f.extra["how"]) for f in found] == [(reply, how)]


@pytest.mark.parametrize("reply", PRAISE)
def test_praise_alone_is_still_no_correction(reply):
    assert detect.corrections(_handback(reply)) == []


# Approval of the rest only: a plain approval at the end approves the whole reply.
_ENDINGS = st.sampled_from(["Otherwise LGTM", "The rest looks good.", "Otherwise great work!",
                            "Then ship it.", "then commit it.", "Everything else looks good to me.",
                            "Apart from that, well done.", "Other than that, nice work!"])
_CORRECTIONS = st.sampled_from([
    ("No, use pnpm for {w}, not npm.", "no"), ("Don't touch {w}.", "don't"),
    ("Stop adding comments to {w}.", "stop"), ("no, use uv for {w} instead.", "no"),
    ("You deleted {w}! Put it back,", "undo"), ("Revert {w};", "undo"),
    ("I said leave {w} alone.", "I said"), ("That's not what I asked for {w}.", "not what I asked"),
])
_PRAISE_OPENINGS = st.sampled_from(["", "Nope.", "No way, that's brilliant!", "Don't hesitate to extend {w}.",
                                    "Never thought {w} would be so easy.", "Nope, no more changes needed.",
                                    "Revert is not needed, {w} is fine.", "Thanks!"])
_APPROVALS = st.sampled_from(["Ship it.", "Commit it.", "Nice work!", "Well done.", "LGTM", "Looks good to me."])
_WORDS = st.sampled_from(["the helper", "the parser", "tests", "README", "the config", "it"])


@given(_CORRECTIONS, _ENDINGS, _WORDS)
def test_pushback_before_an_approving_ending_is_read(case, ending, word):
    template, how = case
    assert pushback(f"{template.format(w=word)} {ending}") == how


@given(_CORRECTIONS, _APPROVALS, _WORDS)
def test_a_plain_approval_at_the_end_approves_whatever_came_before(case, approval, word):
    # "No, nothing else. Looks good!": detectors err towards silence
    assert pushback(f"{case[0].format(w=word)} {approval}") is None


@given(_PRAISE_OPENINGS, _APPROVALS, _WORDS)
def test_an_approving_ending_after_no_pushback_is_approval(opening, approval, word):
    assert pushback(f"{opening.format(w=word)} {approval}".strip()) is None


# --------------------------------------------------------------------------- 2: two alike copies

def test_two_alike_copies_of_a_transcript_are_read_once(store, tmp_path):
    for folder in ("cp1", "cp2"):  # `cp -p`: as long, as new
        (tmp_path / folder).mkdir()
        shutil.copy2(FIX / "claude_code" / "v1_sidechain.jsonl", tmp_path / folder / f"{SID}.jsonl")
    one, two = (tmp_path / f / f"{SID}.jsonl" for f in ("cp1", "cp2"))
    assert (one.stat().st_size, one.stat().st_mtime) == (two.stat().st_size, two.stat().st_mtime)
    first = ingest.ingest_paths(store, [tmp_path / "cp1", tmp_path / "cp2"])
    assert (first["files"], first["sessions"], first["skipped"]) == (1, 1, 1), first
    for _ in range(2):
        again = ingest.ingest_paths(store, [tmp_path / "cp1", tmp_path / "cp2"])
        assert (again["files"], again["sessions"], again["skipped"]) == (0, 0, 2), again
    assert store.scalar("SELECT path FROM sessions WHERE id = ?", (SID,)) == str(one)


# --------------------------------------------------------------------------- 3, 4: the wrong source

CHAT_EXPORT_LINE = "looks like a chat export (a message or a conversation a line), not "


def test_a_jsonl_of_whole_conversations_named_as_a_transcript_names_chats(store, tmp_path):
    path = tmp_path / "x.jsonl"
    shutil.copy(FIX / "chats" / "anthropic.jsonl", path)
    summary = ingest.ingest_paths(store, [path])
    assert summary["errors"] == [f"{path}: {CHAT_EXPORT_LINE}a Claude Code transcript: pass --source chats"]
    assert store.scalar("SELECT count(*) FROM sessions") == 0
    assert ingest.ingest_paths(store, [path], source="chats")["errors"] == []


_TEXT = st.text(max_size=20)
_CONVERSATIONS = st.one_of(
    st.fixed_dictionaries({"messages": st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": _TEXT}))},
                          optional={"id": _TEXT, "model": _TEXT, "system": _TEXT}),
    st.fixed_dictionaries({"mapping": st.dictionaries(_TEXT, st.just({}), max_size=3)},
                          optional={"id": _TEXT, "title": _TEXT, "create_time": st.floats(0, 2e9)}),
    st.fixed_dictionaries({"chat_messages": st.lists(st.fixed_dictionaries({"sender": st.just("human"),
                                                                            "text": _TEXT}))},
                          optional={"uuid": _TEXT, "name": _TEXT}),
)


@given(_CONVERSATIONS)
def test_a_line_holding_a_whole_conversation_is_a_chat_exports(conversation):
    from remem.engine.ingest_files import _record_of

    assert _record_of(json.loads(json.dumps(conversation))) == "chats"


def _events_file(path: Path) -> Path:
    path.write_text("".join(json.dumps({"v": 1, "at": f"2026-11-29T10:00:0{i}Z", "kind": "message",
                                        "session": "s1", "role": role, "text": text}) + "\n"
                            for i, (role, text) in enumerate([("user", "rename the helper"),
                                                              ("assistant", "Renamed it.")])))
    return path


def test_a_transcript_named_as_events_is_one_line_naming_its_source(store, tmp_path):
    path = tmp_path / "t.jsonl"
    shutil.copy(FIX / "claude_code" / "v2_stream.jsonl", path)
    line = f"{path}: looks like a Claude Code transcript, not an events file: pass --source claude-code"
    named = ingest.ingest_paths(store, [path], source="events")
    assert named["errors"] == [line] and named["files"] == 0 and named["malformed_lines"] == 0, named
    assert ingest.ingest_events(store, path)["errors"] == [line]  # --events FILE
    assert store.scalar("SELECT count(*) FROM episodes") == 0


def test_an_events_file_named_as_chats_is_refused_and_not_stored(store, tmp_path):
    path = _events_file(tmp_path / "e.jsonl")
    named = ingest.ingest_paths(store, [path], source="chats")
    assert named["errors"] == [f"{path}: looks like an events file, not a chat export (a message or a "
                               "conversation a line): pass --source events"], named
    assert store.scalar("SELECT count(*) FROM sessions") == 0
    assert ingest.ingest_paths(store, [path], source="events")["sessions"] == 1


def test_an_events_file_with_a_mistyped_kind_is_still_read_as_events(store, tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"v": 1, "at": "2026-11-29T10:00:00Z", "kind": "mesage", "session": "s1",
                                "role": "user", "text": "rename the helper"}) + "\n")
    summary = ingest.ingest_paths(store, [path], source="events")
    assert len(summary["errors"]) == 1 and summary["errors"][0].startswith(f"{path}:1: kind: unknown 'mesage'")


# --------------------------------------------------------------------------- 5: event tags

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"


def test_a_secret_in_an_event_tag_is_stored_as_secret(store, tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"v": 1, "at": "2026-11-29T10:00:00Z", "kind": "note", "id": "t:1",
                                "text": "the deploy token rotates monthly", "tags": [TOKEN, "Deploy"]}) + "\n")
    assert ingest.ingest_events(store, path)["errors"] == []
    assert sorted(store.tags_of("t:1")) == ["[secret]", "deploy"]
    assert TOKEN.lower() not in json.dumps(store.rows("SELECT * FROM tags"))


def test_a_kept_message_stays_within_the_tag_limit(store, tmp_path):
    from remem.engine.events import MAX_TAGS

    def message(n_tags: int, at: str) -> str:
        return json.dumps({"v": 1, "at": at, "kind": "message", "session": "s1", "role": "user", "keep": True,
                           "id": f"m:{n_tags}", "text": "the staging database is read-only",
                           "tags": [f"t{i}" for i in range(n_tags)]}) + "\n"

    path = tmp_path / "m.jsonl"
    path.write_text(message(MAX_TAGS - 2, "2026-11-29T10:00:00Z") + message(MAX_TAGS - 1, "2026-11-29T10:00:01Z"))
    summary = ingest.ingest_events(store, path)
    assert summary["errors"] == [f"{path}:2: tags: at most {MAX_TAGS - 2} on a kept message (it adds two: "
                                 "message and role:user)"], summary
    tags = store.tags_of(f"m:{MAX_TAGS - 2}")
    assert len(tags) == MAX_TAGS and {"message", "role:user"} <= set(tags)


def test_the_cli_lists_no_token_from_an_event_tag(tmp_path, cli):
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"v": 1, "at": "2026-11-29T10:00:00Z", "kind": "note",
                                "text": "the deploy token rotates monthly", "tags": [TOKEN]}) + "\n")
    assert cli("ingest", "--source", "events", str(path)).exit_code == 0
    listed = cli("list", "--json")
    assert listed.exit_code == 0 and TOKEN.lower() not in listed.stdout.lower() and "[secret]" in listed.stdout
