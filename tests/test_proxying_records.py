"""What the proxy records of an exchange and what it adds to a request, without HTTP: secrets
redacted, a conversation's turns written once, and a field of a type the API does not take
left as sent."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from remem.engine import proxying as px
from tests.test_proxying import BLOCK, _ingested_turns

API_KEY = "sk-proj-Qw3rTy7UiOp9AsDfGh2JkL5zXc"
PASSWORD = "Zq8vLm2RxPelican"
AT, LATER = "2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00"


def _chat(*texts: str) -> dict:
    roles = ("user", "assistant")
    return {"messages": [{"role": roles[i % 2], "content": text} for i, text in enumerate(texts)]}


def test_a_key_or_a_password_in_an_exchange_is_in_no_event():
    body = _chat(f"my key is {API_KEY}, why the 401?", "rotate it", f"done, password={PASSWORD} now")
    events = px.exchange_events(body, px.CHAT, f"try {API_KEY} again", AT)
    written = json.dumps(events)
    assert len(events) == 4 and API_KEY not in written and PASSWORD not in written
    assert events[0]["text"] == "my key is [secret], why the 401?"


def test_redaction_keeps_the_ids_so_a_resent_history_with_a_key_is_ingested_once():
    first = px.exchange_events(_chat(f"my key is {API_KEY}, why the 401?"), px.CHAT, "rotate it", AT)
    again = px.exchange_events(_chat(f"my key is {API_KEY}, why the 401?", "rotate it", "done"), px.CHAT,
                               "good", LATER)
    assert [e["id"] for e in again[:2]] == [e["id"] for e in first]
    # The ids hash the words as sent: two keys that redact alike are still two conversations.
    other = px.exchange_events(_chat("my key is sk-proj-AnotherKeyEntirely0123456, why the 401?"), px.CHAT,
                               "rotate it", AT)
    assert other[0]["id"] != first[0]["id"]
    texts = [text for _, _, text in _ingested_turns(first, again)]
    assert texts.count("my key is [secret], why the 401?") == 1 and texts.count("rotate it") == 1


def test_a_later_request_of_a_conversation_gives_its_new_turns_from_the_persons_turn_before():
    recorded = px.Recorded()
    first = px.exchange_events(_chat("which kafka client?"), px.CHAT, "3.6", AT, recorded=recorded)
    recorded.remember(first)
    history = _chat("which kafka client?", "3.6", "and the broker?", "3.7", "and zookeeper?")
    second = px.exchange_events(_chat(*[m["content"] for m in history["messages"][:3]]), px.CHAT, "3.7", LATER,
                                recorded=recorded)
    recorded.remember(second)
    third = px.exchange_events(history, px.CHAT, "3.8", LATER, recorded=recorded)
    assert [(e["role"], e["text"]) for e in third] == [
        ("user", "and the broker?"), ("assistant", "3.7"), ("user", "and zookeeper?"), ("assistant", "3.8")]
    whole = px.exchange_events(history, px.CHAT, "3.8", LATER)
    assert third == whole[2:]  # the same events, ids included
    # A history edited before the last turn written is written whole again (ingest reads the
    # turns it already has once).
    edited = px.exchange_events(_chat("which kafka client?", "3.5", "and the broker?"), px.CHAT, "3.7", LATER,
                                recorded=recorded)
    assert len(edited) == 4


def test_a_correction_is_found_when_ingest_ran_between_two_exchanges(store):
    from remem.engine import events

    def ingest(exchange: list[dict]) -> None:  # as `remem ingest` reads the inbox: parsed, then stored
        good, errors = events.parse_event_lines([json.dumps(e) for e in exchange])
        assert errors == []
        events.ingest_events(store, good)

    recorded = px.Recorded()
    asked = "Set up a virtualenv for this project and install requests."
    answer = "Done: I ran pip install requests in a new venv."
    pushback = "No, don't use pip here, we always use uv for this project (uv add requests)."
    first = px.exchange_events(_chat(asked), px.CHAT, answer, AT, recorded=recorded)
    recorded.remember(first)
    ingest(first)
    second = px.exchange_events(_chat(asked, answer, pushback), px.CHAT, "Understood, I used uv add requests.",
                                LATER, recorded=recorded)
    ingest(second)
    corrections = store.rows("SELECT gist FROM episodes WHERE kind = 'correction'")
    assert any("uv" in r["gist"] for r in corrections), corrections


def test_the_turns_written_are_remembered_for_a_bounded_number_of_conversations():
    recorded = px.Recorded(size=2)
    for n in range(3):
        recorded.remember(px.exchange_events(_chat(f"question {n}"), px.CHAT, "answer", AT))
    sessions = [px.session_key([("user", f"question {n}"), ("assistant", "answer")], px.CHAT) for n in range(3)]
    assert [recorded.last(s) is not None for s in sessions] == [False, True, True]


@pytest.mark.parametrize("style, body", [
    (px.RESPONSES, {"input": "hi", "instructions": ["a"]}),
    (px.RESPONSES, {"input": "hi", "instructions": {"text": "a"}}),
    (px.ANTHROPIC, {"messages": [{"role": "user", "content": "hi"}], "system": 5}),
    (px.ANTHROPIC, {"messages": [{"role": "user", "content": "hi"}], "system": {"text": "a"}}),
    (px.CHAT, {"messages": "hi"}),
    (px.CHAT, {"messages": {"role": "user", "content": "hi"}}),
])
def test_a_field_of_a_type_the_api_does_not_take_goes_as_sent_without_memory(style, body):
    sent = copy.deepcopy(body)
    assert not px.can_inject(body, style)
    assert px.inject(body, style, BLOCK) == sent


@pytest.mark.parametrize("style, body, field", [
    (px.RESPONSES, {"input": "hi"}, "instructions"),
    (px.RESPONSES, {"input": "hi", "instructions": None}, "instructions"),
    (px.ANTHROPIC, {"messages": [], "system": [{"type": "text", "text": "a"}]}, "system"),
    (px.ANTHROPIC, {"messages": [], "system": None}, "system"),
    (px.CHAT, {"messages": None}, "messages"),
])
def test_a_missing_or_usual_field_still_takes_memory(style, body, field):
    assert BLOCK in json.dumps(px.inject(body, style, BLOCK)[field])


def test_the_ids_are_still_a_hash_of_the_words_as_sent():
    """The id scheme is unchanged by redaction: `session-index-hash of the history so far`."""
    events = px.exchange_events(_chat(f"key {API_KEY}"), px.CHAT, "", AT)
    data = f"user\nkey {API_KEY}".encode()
    running = hashlib.sha1(px.CHAT.encode())
    running.update(f"{len(data)}:".encode() + data)
    assert events[0]["id"].endswith(running.hexdigest()[:16])
