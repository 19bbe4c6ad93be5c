"""Whatever the lines hold, parsing never raises and never loses the valid lines around them."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine.transcripts import parse_lines

GOOD = [
    {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "first words"}},
    {"type": "assistant", "uuid": "a1", "message": {"id": "m1", "role": "assistant", "content": [
        {"type": "text", "text": "calling"}, {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}},
    {"type": "user", "uuid": "u2", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt", "is_error": False}]}},
    {"type": "assistant", "uuid": "a2", "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "done"}]}},
    {"type": "user", "uuid": "u3", "message": {"role": "user", "content": "last words"}},
]
GOOD_LINES = [json.dumps(r) + "\n" for r in GOOD]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "message", "content", "role", "id", "uuid", "text", "tool_use_id",
                         "is_error", "isSidechain", "isMeta", "name", "input", "timestamp", "x"]),
        inner, max_size=6),
    max_leaves=20,
)
# records with the right keys and wrong types in them
shaped = st.builds(
    lambda t, m: {"type": t, "message": m},
    st.sampled_from(["user", "assistant", "system", "progress", None, 3]),
    json_values,
)
garbage_line = st.one_of(
    st.text(max_size=60).map(lambda s: s.replace("\n", " ") + "\n"),
    st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ") + b"\n"),
    json_values.map(lambda v: json.dumps(v) + "\n"),
    shaped.map(lambda v: json.dumps(v) + "\n"),
    st.sampled_from(GOOD_LINES).map(lambda s: s[: len(s) // 2] + "\n"),  # truncated JSON
)


def _as_bytes(line):
    return line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(GOOD)), garbage_line), max_size=8))
def test_garbage_between_valid_lines_never_loses_them(inserts):
    lines = [l.encode() for l in GOOD_LINES]
    for pos, junk in sorted(inserts, key=lambda x: -x[0]):
        lines.insert(pos, _as_bytes(junk))
    session = parse_lines(lines)
    texts = [t.text for t in session.turns]
    for words in ("first words", "calling", "done", "last words"):
        assert words in texts
    calls = [c for c in session.tool_calls() if c.id == "t1"]
    assert calls and calls[0].result == "a.txt"
    assert not session.torn_tail


@settings(max_examples=150, deadline=None)
@given(st.lists(json_values, max_size=10))
def test_any_json_records_never_raise(records):
    session = parse_lines([json.dumps(r) + "\n" for r in records])
    assert session.malformed_lines <= len(records)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200))
def test_a_cut_at_any_byte_is_torn_or_complete_never_malformed(cut):
    data = "".join(GOOD_LINES).encode()
    cut = min(cut * 3, len(data))
    session = parse_lines(data[:cut].splitlines(keepends=True))
    assert session.malformed_lines == 0
    assert session.meta["complete_bytes"] <= cut
    assert session.torn_tail == (session.meta["complete_bytes"] < cut)
