"""What the MCP server echoes and what it keeps, as a review found it: an error line repeated a
bad argument whole (a 500,000-character `k` came back as a 500 KB error, and went into the log
whole); a blank tag given to `update_memory` erased every tag of the memory, and `remember`
dropped one without a word; a blank project was taken as none by `remember` and `context` (and
`remem context --project "  "` used the shell's folder); a tag over 100 characters was stored cut,
with the truncation marker in it; `connect` kept an edge's weight without saying so; a line on
stdin that is not JSON got no reply.

The tools run behind the SDK's own client against the real server (in this process, and over
stdio as agents start it); the JSON API through its ASGI app."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import call_ok, call_tool, server_in_process

EMPTY_TAG = "tag is empty (an unset variable?); give a tag (deploy), or leave it out"
EMPTY_PROJECT = "project is empty (an unset variable?)"
LONG_TAG = "tags: at most 32 tags of at most 100 characters"
LINE = 2_000  # what an error line may hold, at most
SHOWN = re.compile(r"… \(([0-9,]+) chars\)")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _log_lines(home: Path) -> list[str]:
    log = home / "logs" / "remem.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _counts(text: str) -> list[int]:
    """The lengths an error line gives for the values it shortened."""
    return [int(n.replace(",", "")) for n in SHOWN.findall(text)]


# --------------------------------------------------------------------------- errors echo a value's start

HUGE_CALLS = [
    # (tool, arguments, what the line starts with, what it still ends with, the long value's length)
    ("recall", {"query": "x", "k": "9" * 500_000}, "invalid arguments for recall: k:", "chars))", 500_000),
    ("remember", {"text": "x", "kind": "y" * 500_000}, "invalid arguments for remember: kind: Input should be",
     "chars))", 500_000),
    ("get_memory", {"id": "f" * 300_000}, "no memory with id 'ffff", "`remem list` shows the ids", 300_000),
    ("recall", {"query": "x", "project": "p" * 300_000}, "no project named 'pppp", "chars)\"`", 300_000),
    ("search", {"since": "s" * 300_000}, "since: not a time: 'ssss", "a duration back from now: 7d, 2h)", 300_000),
    ("recall", {"query": "x", "a" * 200_000: 1}, "invalid arguments for recall: unknown field 'aaaa",
     "(recall takes query, k, kinds, tags, project)", 200_000),
]


@pytest.mark.anyio
async def test_an_error_line_shows_a_huge_argument_by_its_start_and_length(home: Path) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        for tool, args, start, end, length in HUGE_CALLS:
            ok, text = await call_tool(client, tool, args)
            assert not ok, (tool, text[:300])
            assert len(text) <= LINE, (tool, len(text), text[:300])
            assert text.startswith(start) and text.endswith(end), (tool, text)
            # every long value echoed is shown by its first 100 characters and its length
            assert _counts(text) and all(n >= length for n in _counts(text)), (tool, text)
            assert re.search(r"(.)\1{99}'?… \(", text), (tool, text)
    lines = _log_lines(home)
    refusals = [l for l in lines if " refused: " in l]
    assert len(refusals) == len(HUGE_CALLS), lines  # each refusal leaves one line...
    assert all(len(l) <= LINE + 200 for l in lines), [len(l) for l in lines]  # ...as short as the error


@pytest.mark.anyio
async def test_an_unknown_tool_with_a_huge_name_is_a_short_line(home: Path) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        ok, text = await call_tool(client, "nosuch" + "z" * 300_000, {})
    assert not ok and text.startswith("Unknown tool: nosuchzzz") and len(text) <= LINE, text[:300]
    assert _counts(text) == [300_006], text  # "nosuch" and the z's


@pytest.mark.anyio
async def test_the_json_api_answers_a_huge_kind_with_a_short_400(home: Path) -> None:
    from remem.server_http import http_app
    from tests.test_project_argument import _http

    app = http_app(server_in_process(), host="127.0.0.1", token="")
    status, answer = await _http(app, "POST", "/memory/remember", {"text": "x", "kind": "k" * 1_500_000})
    assert status == 400, (status, str(answer)[:300])
    line = answer["error"]
    assert line.startswith("invalid arguments for remember: kind: Input should be") and len(line) <= LINE, line[:300]
    assert _counts(line) == [1_500_000], line
    status, answer = await _http(app, "GET", "/memory/" + "f" * 5_000)  # (an id as long as a URL may be)
    assert status == 404 and len(answer["error"]) <= LINE and _counts(answer["error"]) == [5_000], answer
    assert answer["error"].endswith("`remem list` shows the ids"), answer
    assert all(len(l) <= LINE + 200 for l in _log_lines(home))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab '\";`.é\u00a0"), max_size=6_000),
       st.integers(min_value=300, max_value=3_000))
def test_a_capped_line_is_within_its_limit_and_keeps_its_start(text: str, limit: int) -> None:
    from remem.log import capped, shown

    line = capped(text, limit)
    assert len(line) <= limit
    if len(text) <= 200:
        assert line == text  # a short line is left as it is
    else:
        words = text.split()
        first = words[0] if words else ""
        assert line[:1] == text[:1] and line.lstrip().startswith(first[:100])
    value = shown(text)
    assert len(value) <= len(repr(text[:100])) + len(f"… ({len(text):,} chars)")
    assert value == repr(text) if len(text) <= 200 else value.endswith(f"… ({len(text):,} chars)")


# --------------------------------------------------------------------------- blank tags and projects

@pytest.mark.anyio
async def test_a_blank_tag_is_refused_and_an_empty_list_still_clears_the_tags(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        memory = await call_ok(client, "remember", {"text": "deploy with the blue profile",
                                                    "tags": ["deploy", "blue"]})
        for tags in ([""], [" "], ["deploy", "\t"]):
            ok, text = await call_tool(client, "update_memory", {"id": memory["id"], "tags": tags})
            assert not ok and text == EMPTY_TAG, (tags, text)
            assert sorted(store.tags_of(memory["id"])) == ["blue", "deploy"]  # nothing erased
            ok, text = await call_tool(client, "remember", {"text": "a note tagged by an unset variable",
                                                            "tags": tags})
            assert not ok and text == EMPTY_TAG, (tags, text)
        cleared = await call_ok(client, "update_memory", {"id": memory["id"], "tags": []})
        assert cleared["tags"] == [] and store.tags_of(memory["id"]) == []
    assert store.one("SELECT COUNT(*) AS n FROM episodes")["n"] == 1  # no memory stored by a refused call


@pytest.mark.anyio
async def test_a_blank_project_is_refused_by_remember_and_context(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        for tool, args in (("remember", {"text": "a note"}), ("context", {})):
            ok, text = await call_tool(client, tool, {**args, "project": "   "})
            assert not ok and text.startswith(EMPTY_PROJECT), (tool, text)
        # "" is how clients send it left unset: no project
        memory = await call_ok(client, "remember", {"text": "a note for every project", "project": ""})
        assert memory["cwd"] is None
        shown = await call_ok(client, "context", {"project": ""})
        assert shown["project"] is None
    assert store.one("SELECT COUNT(*) AS n FROM episodes")["n"] == 1


def test_cli_context_refuses_a_blank_project_as_remember_does(cli: Any, store: Any) -> None:
    remembered = cli("remember", "a note", "--project", "  ")
    shown = cli("context", "--project", "  ")
    assert remembered.exit_code == 1 and shown.exit_code == 1, shown.output
    assert EMPTY_PROJECT in shown.output and "no lessons would be injected" not in shown.output, shown.output
    assert cli("context", "--project", "/srv/shop").exit_code == 0


# --------------------------------------------------------------------------- a tag too long

@pytest.mark.anyio
async def test_a_tag_over_100_characters_is_refused_not_cut(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        ok, text = await call_tool(client, "remember", {"text": "a long-tagged note", "tags": ["t" * 150]})
        assert not ok and text.startswith(LONG_TAG) and "150" in text, text
        memory = await call_ok(client, "remember", {"text": "a tagged note", "tags": ["T" * 100]})
        assert memory["tags"] == ["t" * 100]  # at the limit: kept whole, no marker
        ok, text = await call_tool(client, "update_memory", {"id": memory["id"], "tags": ["deploy", "u" * 101]})
        assert not ok and text.startswith(LONG_TAG), text
    assert store.tags_of(memory["id"]) == ["t" * 100]
    assert not store.one("SELECT 1 FROM tags WHERE tag LIKE '%truncated by remem%'")


# --------------------------------------------------------------------------- connect's weight

@pytest.mark.anyio
async def test_connecting_again_with_another_weight_says_the_weight_is_kept(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        [tool] = [t for t in (await client.list_tools()).tools if t.name == "connect"]
        assert "more than 0, at most 1" in tool.input_schema["properties"]["weight"]["description"]
        a = await call_ok(client, "remember", {"text": "the deploy failed on Friday"})
        b = await call_ok(client, "remember", {"text": "the disk of the build host was full"})
        made = await call_ok(client, "connect", {"source": a["id"], "target": b["id"], "type": "caused_by",
                                                 "weight": 0.3})
        assert made["new"] and "note" not in made
        same = await call_ok(client, "connect", {"source": a["id"], "target": b["id"], "type": "caused_by",
                                                 "weight": 0.3})
        assert not same["new"] and "note" not in same
        other = await call_ok(client, "connect", {"source": a["id"], "target": b["id"], "type": "caused_by",
                                                  "weight": 0.8})
    assert not other["new"] and other["weight"] == 0.3
    assert "exists already, with weight 0.3: kept" in other["note"] and "0.8" in other["note"], other
    assert store.one("SELECT weight FROM connections")["weight"] == 0.3


# --------------------------------------------------------------------------- recall's k, told

@pytest.mark.anyio
async def test_recalls_default_k_is_said_to_be_capped_at_50(home: Path) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        [tool] = [t for t in (await client.list_tools()).tools if t.name == "recall"]
    assert "recall.k" in tool.input_schema["properties"]["k"]["description"]
    assert "capped at 50" in tool.input_schema["properties"]["k"]["description"]
    docs = (Path(__file__).resolve().parent.parent / "docs" / "MCP.md").read_text(encoding="utf-8")
    assert "config `recall.k` (5) capped at 50" in docs


# --------------------------------------------------------------------------- a line that is not JSON

def test_a_line_that_is_not_json_gets_a_parse_error_over_stdio(home: Path) -> None:
    from tests.test_server_edges import _raw_stdio_call

    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    replies = _raw_stdio_call(["this is not json", ping])
    # initialize, the parse error and the ping: the server answered each and stayed up
    assert len(replies) == 3, replies
    errors = [r for r in replies if "error" in r]
    assert errors == [{"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32700, "message": "the line is not JSON: send one JSON-RPC "
                                                            "message per line"}}], replies
    assert any(r.get("id") == 2 and r.get("result") == {} for r in replies), replies
    said = [l for l in _log_lines(home) if "not JSON" in l]
    assert len(said) == 1 and "'this is not json'" in said[0], said
