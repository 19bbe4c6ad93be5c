"""The size of what remem's MCP tools and JSON API answer, and of what the JSON API takes in.

A `search` without a query lists the same compact hits a query finds (never the stored rows,
whose detail alone may be 64,000 characters); each hit's text and the echoed query are cut with
the truncation marker; a whole answer stays within its cap, the last hits left out and counted;
a request body past its cap is refused with 413. A real `remem serve --http` driven by the mcp
SDK's own client over streamable HTTP (whose reader refuses a message over 1 MiB), raw HTTP for
the JSON API, and the SDK's client in-process where no transport is in question."""

from __future__ import annotations

import http.client
import json
import os
import re
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest

from remem.engine.store import TRUNCATED
from tests.conftest import ROOT, call_ok, http_server, run_remem, server_in_process

TOKEN = "caps-token-9d2e"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BIG = 60  # memories of 3,500 characters of text and 60,000 of detail each
MANY_TAGS = 100  # memories with the most tags an event may carry: 100 hits are far past the cap
# What a listed hit carries: a found one's fields (recall's hits), less the score.
LISTED_KEYS = {"id", "type", "kind", "title", "text", "at", "cwd", "session_id", "memory_type", "archived",
               "tags"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _events() -> list[dict[str, Any]]:
    at = "2026-11-25T09:00:00Z"
    big = [{"v": 1, "at": at, "kind": "note", "title": f"bigdoc {i}", "text": f"doc{i} " + "word " * 700,
            "detail": f"doc{i} " + "log line kafka " * 4000, "tags": ["bigdoc"]} for i in range(BIG)]
    tagged = [{"v": 1, "at": at, "kind": "note", "title": f"tagged {i}", "text": f"tagged memory {i} " + "x" * 900,
               "tags": ["manytags"] + [f"{j:02d}" + "t" * 62 for j in range(31)]} for i in range(MANY_TAGS)]
    # 64,000 characters of four bytes each: a memory alone past the answer's cap
    emoji = [{"v": 1, "at": at, "kind": "note", "title": "emoji detail", "text": "a detail made of emoji",
              "detail": "\U0001F600" * 64_000, "tags": ["emoji"]}]
    return big + tagged + emoji


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of `remem serve --http` (token on) over a memory holding `_events()`."""
    base = tmp_path_factory.mktemp("caps")
    (base / "user").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env.update({"REMEM_HOME": str(base / "home"), "HOME": str(base / "user"), "HF_HUB_OFFLINE": "1"})
    events = base / "big.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in _events()), encoding="utf-8")
    done = run_remem("ingest", "--events", str(events), "--json", env=env)
    assert done.returncode == 0 and done.json()["malformed_lines"] == 0, done.stdout + done.stderr
    with http_server(base, {**env, "REMEM_TOKEN": TOKEN}, TOKEN, "--no-tasks", "--no-warm") as url:
        yield url


@asynccontextmanager
async def _client(url: str) -> AsyncIterator[Any]:
    """The mcp SDK's client over streamable HTTP."""
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=AUTH) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            yield client


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


# --------------------------------------------------------------------------- search, recall

@pytest.mark.anyio
async def test_search_without_a_query_lists_compact_hits_a_streamable_http_client_takes(served: str) -> None:
    """It listed whole rows: 3.8 MB for 60 memories, which the SDK's client refused to read
    ("Server-sent event exceeded the 1048576 byte limit")."""
    async with _client(served) as client:
        listed = await call_ok(client, "search", {"tags": ["bigdoc"], "k": 100})
        found = await call_ok(client, "search", {"query": "bigdoc word", "tags": ["bigdoc"], "k": 3})
    assert len(listed["hits"]) == BIG and "truncated" not in listed
    assert found["hits"] and set(found["hits"][0]) - {"score", "parts"} == LISTED_KEYS, found["hits"][0].keys()
    for hit in listed["hits"]:
        assert set(hit) == LISTED_KEYS, sorted(hit)  # no detail, gist, source, strength …
        assert hit["type"] == "episode" and hit["tags"] == ["bigdoc"] and hit["archived"] is False
        assert len(hit["text"]) == 1_000 and hit["text"].endswith(TRUNCATED), len(hit["text"])


@pytest.mark.anyio
async def test_recall_and_search_cut_each_hits_text_and_the_query_they_echo(served: str) -> None:
    query = "word kafka " + "q" * 5_000
    async with _client(served) as client:
        recalled = await call_ok(client, "recall", {"query": query, "k": 50})
        searched = await call_ok(client, "search", {"query": query, "k": 100, "mode": "keyword"})
    for answer in (recalled, searched):
        assert answer["query"] == query[:1_000 - len(TRUNCATED)] + TRUNCATED
        assert answer["hits"] and all(len(h["text"]) <= 1_000 for h in answer["hits"])
        assert any(h["text"].endswith(TRUNCATED) for h in answer["hits"])
        assert _size(answer) <= 200_000


@pytest.mark.anyio
async def test_an_answer_past_its_cap_leaves_out_the_last_hits_and_says_how_many(served: str) -> None:
    async with _client(served) as client:
        capped = await call_ok(client, "search", {"tags": ["manytags"], "k": 100})
        shown = len(capped["hits"])
        assert 0 < shown < MANY_TAGS and _size(capped) <= 200_000
        assert capped["truncated"] == (f"{TRUNCATED.strip()}: {MANY_TAGS - shown} of {MANY_TAGS} hits left "
                                       "out to keep the answer within 200,000 bytes; ask for a smaller k or "
                                       "narrow the filters")
        # the first ones, as asking for no more than fit gives them
        fewer = await call_ok(client, "search", {"tags": ["manytags"], "k": shown})
    assert [h["id"] for h in fewer["hits"]] == [h["id"] for h in capped["hits"]] and "truncated" not in fewer


@pytest.mark.anyio
async def test_a_memory_past_the_cap_on_its_own_has_its_detail_cut_with_the_marker(served: str) -> None:
    async with _client(served) as client:
        (hit,) = (await call_ok(client, "search", {"tags": ["emoji"]}))["hits"]
        memory = await call_ok(client, "get_memory", {"id": hit["id"]})
    # Cut by bytes, not by characters: the answer fills its cap (4 bytes an emoji), not 30,000 bytes of it.
    assert 199_000 < _size(memory) <= 200_000 and memory["gist"] == "a detail made of emoji"
    assert memory["detail"].endswith(TRUNCATED) and set(memory["detail"][:-len(TRUNCATED)]) == {"\U0001F600"}
    assert memory["truncated"].startswith(f"{TRUNCATED.strip()}: detail cut to keep the answer within 200,000 bytes")


@pytest.mark.anyio
async def test_lessons_past_the_cap_are_the_strongest_that_fit_and_say_how_many_are_left_out(store: Any) -> None:
    from mcp.client import Client

    from remem.engine.lessons import add_lesson

    ids = [add_lesson(store, f"lesson {i} " + "prefer the staging profile " * 70, "correction",
                      strength=2.0 - i / 1000)["id"] for i in range(150)]
    async with Client(server_in_process()) as client:
        got = await call_ok(client, "lessons", {"limit": 500})
    shown = len(got["lessons"])
    assert 0 < shown < 150 and [l["id"] for l in got["lessons"]] == ids[:shown]
    assert f"{150 - shown} of 150 lessons left out" in got["truncated"] and _size(got) <= 200_000


@pytest.mark.anyio
async def test_the_lessons_resource_past_the_cap_ends_with_a_line_saying_how_many_are_left_out(store: Any) -> None:
    from mcp.client import Client

    from remem.engine.lessons import add_lesson

    ids = [add_lesson(store, f"lesson {i} " + "prefer the staging profile " * 70, "correction",
                      cwd="/home/me/shop", strength=2.0 - i / 1000)["id"] for i in range(150)]
    async with Client(server_in_process()) as client:
        text = (await client.read_resource("remem://lessons/shop")).contents[0].text
    shown = [i for i in ids if f"id {i})" in text]
    assert 0 < len(shown) < 150 and shown == ids[:len(shown)] and len(text.encode()) <= 200_000
    assert text.rstrip().splitlines()[-1] == (
        f"{TRUNCATED.strip()}: {150 - len(shown)} of 150 lessons left out to keep the answer within 200,000 "
        "bytes; `remem lessons list --project shop` lists them all")


@pytest.mark.parametrize("detail, gist", [
    ("\U0001F600" * 64_000, "\u00e9" * 4_000),  # 4 bytes a character, and 2
    ('"' * 64_000 + "\u0001" * 64_000, "gist"),  # escaped in JSON: 2 bytes a character, and 6
], ids=["multi-byte", "escaped"])
def test_a_text_past_the_cap_is_cut_by_bytes_to_land_just_under_it(detail: str, gist: str) -> None:
    """Cut by its length in characters less the bytes over, a detail of emoji kept 22 of them
    in an answer of 8,153 bytes."""
    from remem.server_tools import MAX_ANSWER_BYTES, _answer

    got = _answer("get_memory", {"id": "x", "detail": detail, "gist": gist})
    assert MAX_ANSWER_BYTES - 1_000 < _size(got) <= MAX_ANSWER_BYTES, _size(got)
    assert got["gist"] == gist and got["detail"].endswith(TRUNCATED)
    assert detail.startswith(got["detail"][:-len(TRUNCATED)])
    assert got["truncated"].startswith(f"{TRUNCATED.strip()}: detail cut to keep the answer within 200,000 bytes")


def test_a_traverse_past_the_cap_counts_the_memories_it_left_out() -> None:
    """Its levels hold memories: "61 of 101 levels left out" named the wrong thing."""
    from remem.server_tools import _answer

    def node(i: int) -> dict[str, Any]:
        return {"id": f"{i:032x}", "kind": "note", "title": f"memory {i} " + "x" * 180, "via": None}

    levels = [[node(0)], [node(i) for i in range(1, 61)], [node(i) for i in range(61, 101)]]
    got = _answer("traverse", {"start": node(0)["id"], "depth": 2, "types": None, "levels": levels},
                  limit=10_000)
    shown = sum(len(level) for level in got["levels"])
    assert 0 < shown < 101 and _size(got) <= 10_000
    assert got["truncated"].startswith(f"{TRUNCATED.strip()}: {101 - shown} of 101 memories left out "), got["truncated"]


# --------------------------------------------------------------------------- the JSON API's body

def _post(url: str, path: str, body: bytes, *, chunked: bool = False) -> tuple[int, str]:
    """A POST as a keep-alive client sends it: with its length, or in chunks without one."""
    port = int(url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {**AUTH, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if chunked:
            pieces = (body[i:i + 65_536] for i in range(0, len(body), 65_536))
            conn.request("POST", path, body=pieces, headers=headers, encode_chunked=True)
        else:
            conn.request("POST", path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read().decode("utf-8")
    finally:
        conn.close()


@pytest.mark.parametrize("chunked", [False, True], ids=["with-length", "chunked"])
@pytest.mark.parametrize("path", ["/memory/recall", "/memory/remember", "/mcp"])
def test_a_body_past_the_cap_is_refused_with_413_and_one_line(served: str, path: str, chunked: bool) -> None:
    """A 30 MB query was read, searched for 7 s and echoed back whole."""
    body = json.dumps({"query": "a" * 2_000_001, "text": "x"}).encode()
    status, text = _post(served, path, body, chunked=chunked)
    assert status == 413, text[:300]
    assert json.loads(text) == {"error": "the request body is over 2,000,000 bytes; send less (remem keeps "
                                         "at most 4,000 characters of a memory's text and 64,000 of its detail)"}


def test_the_json_api_echoes_a_long_query_cut_with_the_marker(served: str) -> None:
    query = "kafka " + "a" * 100_000
    status, text = _post(served, "/memory/recall", json.dumps({"query": query, "k": 2}).encode())
    assert status == 200, text[:300]
    echoed = json.loads(text)["query"]
    assert echoed == query[:1_000 - len(TRUNCATED)] + TRUNCATED


# --------------------------------------------------------------------------- the docs

def test_the_limits_table_names_the_caps_the_edges_have() -> None:
    from remem.hooks import MAX_STDIN
    from remem.server_http import MAX_BODY_BYTES
    from remem.server_tools import MAX_ANSWER_BYTES, MAX_HIT_TEXT

    assert MAX_BODY_BYTES == MAX_STDIN  # one figure for what a hook and the server read
    text = (ROOT / "docs" / "RELIABILITY.md").read_text(encoding="utf-8")
    table = text.split("## Limits\n", 1)[1].split("\n## ", 1)[0]
    rows = {row.split(" | ")[0].strip("| "): row for row in re.findall(r"^\|.*\|$", table, re.MULTILINE)}
    hit = next(r for name, r in rows.items() if "hit's text" in name)
    answer = next(r for name, r in rows.items() if "tool's answer" in name)
    body = next(r for name, r in rows.items() if "request body" in name)
    assert f"{MAX_HIT_TEXT:,} characters" in hit
    assert f"{MAX_ANSWER_BYTES:,} bytes" in answer and "`truncated`" in answer
    assert f"{MAX_BODY_BYTES:,} bytes" in body and "413" in body
    mcp_doc = (ROOT / "docs" / "MCP.md").read_text(encoding="utf-8")
    assert f"{MAX_HIT_TEXT:,} characters" in mcp_doc and f"{MAX_ANSWER_BYTES:,} bytes" in mcp_doc
    assert f"413 (a body over\n{MAX_BODY_BYTES:,} bytes" in mcp_doc
