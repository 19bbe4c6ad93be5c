"""The proxy's request and response transforms, without HTTP."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from remem.engine import proxying as px

BLOCK = "<remem-memory>remembered: use uv</remem-memory>"


def test_chat_injection_goes_after_the_callers_own_system_messages():
    body = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
    out = px.inject(body, px.CHAT, BLOCK)
    assert [m["role"] for m in out["messages"]] == ["system", "system", "user"]
    assert out["messages"][1]["content"] == BLOCK
    assert body["messages"][0]["content"] == "be brief" and len(body["messages"]) == 2  # not mutated


def test_anthropic_injection_string_blocks_and_absent():
    assert px.inject({"messages": []}, px.ANTHROPIC, BLOCK)["system"] == BLOCK
    assert px.inject({"system": "S"}, px.ANTHROPIC, BLOCK)["system"] == f"S\n\n{BLOCK}"
    blocks = px.inject({"system": [{"type": "text", "text": "S"}]}, px.ANTHROPIC, BLOCK)["system"]
    assert blocks == [{"type": "text", "text": "S"}, {"type": "text", "text": BLOCK}]


def test_empty_block_changes_nothing():
    body = {"messages": [{"role": "user", "content": "x"}]}
    assert px.inject(body, px.CHAT, "") is body


def test_conversation_key_is_stable_across_turns():
    first = {"messages": [{"role": "user", "content": "fix the build"}]}
    later = {"messages": [{"role": "user", "content": "fix the build"},
                          {"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]}
    assert px.conversation_key(first, px.CHAT) == px.conversation_key(later, px.CHAT)
    assert px.query_text(later, px.CHAT) == "thanks"


def test_stream_assembly_for_each_style():
    chat = b"".join(
        f"data: {json.dumps({'choices': [{'delta': {'content': p}}]})}\n\n".encode() for p in ("a", "b")
    ) + b"data: [DONE]\n\n"
    assert px.response_text(px.CHAT, chat, True) == "ab"
    anth = b"event: content_block_delta\ndata: " + json.dumps(
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hi"}}).encode() + b"\n\n"
    assert px.response_text(px.ANTHROPIC, anth, True) == "hi"
    resp = b"data: " + json.dumps({"type": "response.output_text.delta", "delta": "yo"}).encode() + b"\n\n"
    assert px.response_text(px.RESPONSES, resp, True) == "yo"


def test_exchange_events_have_stable_ids_per_position():
    body = {"messages": [{"role": "user", "content": "q1"}]}
    events = px.exchange_events(body, px.CHAT, "a1", "2026-01-01T00:00:00+00:00")
    assert [e["role"] for e in events] == ["user", "assistant"]
    again = px.exchange_events(body, px.CHAT, "a1", "2026-01-02T00:00:00+00:00")
    assert [e["id"] for e in events] == [e["id"] for e in again]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                    max_leaves=20),
       st.sampled_from([px.CHAT, px.ANTHROPIC, px.RESPONSES]))
def test_odd_bodies_never_raise(body, style):
    if not isinstance(body, dict):
        body = {"messages": body, "input": body, "system": body}
    px.messages_of(body, style)
    px.query_text(body, style)
    px.conversation_key(body, style)
    px.exchange_events(body, style, "r", "2026-01-01T00:00:00+00:00")


@given(st.binary(max_size=300), st.sampled_from([px.CHAT, px.ANTHROPIC, px.RESPONSES]), st.booleans())
def test_garbage_responses_never_raise(payload, style, streamed):
    assert isinstance(px.response_text(style, payload, streamed), str)


def test_a_huge_message_is_shortened_with_a_marker_and_still_valid():
    from remem.engine.events import MAX_MESSAGE_TEXT, parse_event_lines
    from remem.engine.store import TRUNCATED

    body = {"messages": [{"role": "user", "content": "x" * (MAX_MESSAGE_TEXT + 5000)}]}
    events = px.exchange_events(body, px.CHAT, "ok", "2026-01-01T00:00:00+00:00")
    assert len(events[0]["text"]) == MAX_MESSAGE_TEXT and events[0]["text"].endswith(TRUNCATED)
    good, errors = parse_event_lines([json.dumps(e) for e in events])
    assert errors == [] and len(good) == 2


def test_answers_of_an_unexpected_shape_give_what_can_be_read_never_an_error():
    assert px.response_text(px.CHAT, b'{"choices": ["x"]}', False) == ""
    assert px.response_text(px.CHAT, b'{"choices": {"a": 1}}', False) == ""
    assert px.response_text(px.CHAT, b'{"choices": [{"message": "hi"}]}', False) == ""
    assert px.response_text(px.RESPONSES, b'{"output": 5}', False) == ""
    assert px.response_text(px.RESPONSES, b'{"output": [{"type": "message", "content": "ok"}]}', False) == "ok"
    assert px.response_text(px.ANTHROPIC, b'{"content": 7}', False) == ""
    stream = b'data: {"choices": ["x", {"delta": "y"}, {"delta": {"content": "z"}}]}\n\n'
    assert px.response_text(px.CHAT, stream, True) == "z"
    assert px.response_text(px.ANTHROPIC, b'data: {"type": "content_block_delta", "delta": 3}\n\n', True) == ""


def _ingested_turns(*exchanges: list[dict]) -> list[tuple[str, str, str]]:
    """What ingest keeps of these inbox events: the same dedupe, then per session."""
    from remem.engine.events import _dedupe_messages, message_sessions, parse_event_lines

    lines = [json.dumps(e) for events in exchanges for e in events]
    good, errors = parse_event_lines(lines)
    assert errors == []
    return sorted((s.id, t.role, t.text) for s in message_sessions(_dedupe_messages(good)) for t in s.turns)


def test_two_conversations_that_open_with_the_same_question_are_both_kept_and_resends_once():
    at, later = "2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00"
    opening = {"role": "user", "content": "why is the build failing?"}
    a = [opening, {"role": "assistant", "content": "node 18 is too old"}, {"role": "user", "content": "pin 20"}]
    b = [opening, {"role": "assistant", "content": "a flaky test"}, {"role": "user", "content": "retry it"}]
    a_more = [*a, {"role": "assistant", "content": "pinned"}, {"role": "user", "content": "thanks"}]
    kept = _ingested_turns(px.exchange_events({"messages": a}, px.CHAT, "pinned", at),
                           px.exchange_events({"messages": b}, px.CHAT, "retried", at),
                           px.exchange_events({"messages": a_more}, px.CHAT, "welcome", later))
    texts = [text for _, _, text in kept]
    for text in ("node 18 is too old", "pin 20", "pinned", "thanks", "welcome", "a flaky test",
                 "retry it", "retried"):
        assert texts.count(text) == 1, text  # every turn, and a resent one once
    assert texts.count("why is the build failing?") == 2  # once in each conversation
    sessions = {sid for sid, _, text in kept if text in ("pin 20", "welcome")}
    assert len(sessions) == 1 and len({sid for sid, _, _ in kept}) == 2


def test_a_lone_surrogate_neither_fails_the_keys_nor_the_recorded_text():
    body = json.loads('{"messages":[{"role":"user","content":"fix \\ud800 it"}]}')
    assert px.conversation_key(body, px.CHAT).startswith("proxy-")
    events = px.exchange_events(body, px.CHAT, "done", "2026-01-01T00:00:00+00:00")
    assert [e["text"] for e in events] == ["fix ? it", "done"]
    for event in events:
        json.dumps(event, ensure_ascii=False).encode("utf-8")  # writable to the inbox


def test_responses_turns_chained_by_id_or_conversation_share_one_thread():
    threads = px.Threads(size=2)
    assert threads.find({"input": "hi", "previous_response_id": "resp_unknown"}) is None
    threads.remember("resp_1", ("key-a", "session-a"))
    assert threads.find({"input": "more", "previous_response_id": "resp_1"}) == ("key-a", "session-a")
    threads.remember("resp_2", ("key-b", "session-b"))
    threads.remember("resp_3", ("key-c", "session-c"))
    assert threads.find({"previous_response_id": "resp_1"}) is None  # bounded: the oldest goes
    assert threads.find({"previous_response_id": "resp_2"}) == ("key-b", "session-b")
    one = threads.find({"input": "a", "conversation": "conv_9"})
    assert one == threads.find({"input": "b", "conversation": {"id": "conv_9"}}) and one[0] == one[1]


def test_response_id_of_a_plain_and_a_streamed_answer():
    assert px.response_id(b'{"id": "resp_7", "output": []}', False) == "resp_7"
    stream = (b'data: {"type": "response.created", "response": {"id": "resp_8"}}\n\n'
              b'data: {"type": "response.output_text.delta", "delta": "x"}\n\n')
    assert px.response_id(stream, True) == "resp_8"
    assert px.response_id(b"not json", False) is None and px.response_id(b"[" * 100_000, False) is None


def test_the_hook_the_proxy_and_the_store_clean_text_alike():
    from remem.engine import proxying as px
    from remem.engine.store import clean_text
    from remem.hooks import adapters

    raw = "caf\udce9 latte"  # an escaped byte: the store repairs it to U+FFFD
    assert clean_text(raw) == "caf\ufffd latte"
    assert adapters.read("claude-code", "prompt", {"prompt": raw}).text == clean_text(raw)
    body = {"messages": [{"role": "user", "content": raw}]}
    events = px.exchange_events(body, px.CHAT, "done", "2026-01-01T00:00:00+00:00")
    assert events[0]["text"] == clean_text(raw)
    assert not hasattr(adapters, "_clean") and not hasattr(px, "_storable")


def test_content_text_is_one_function_with_the_part_types_as_a_parameter():
    from remem.engine import proxying as px
    from remem.engine import text, transcripts

    content = [{"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}, {"text": "c"},
               {"type": "image"}, "d"]
    assert transcripts.content_text is text.content_text
    assert text.content_text(content) == "a\nd"
    assert text.content_text(content, part_types=None) == "a\nb\nc\nd"
    assert px.messages_of({"messages": [{"role": "user", "content": content}]}, px.CHAT) == [("user", "a\nb\nc\nd")]
    assert not hasattr(px, "_text_of")
