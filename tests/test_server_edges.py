"""The MCP server at its edges: text that is not valid Unicode, a request nested too deep to
parse, a memory.db deleted, replaced or read-only under a running server, misspelt arguments, a
damaged store behind a resource, and the HTTP side's errors, token scheme and limits. Each
against the real server: a `remem serve` subprocess (stdio or HTTP) or, for the tools, the server
in-process behind the SDK's own client."""

from __future__ import annotations

import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, http_server

TOKEN = "edge-token-9b2e"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def _ok(client: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, _text(result)
    return result.structured_content


async def _error(client: Any, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error, result
    message = _text(result)
    assert "\n" not in message.strip() and "unexpectedly" not in message
    return message


def _server() -> Any:
    from remem.server import build_server

    return build_server(tasks=False, warm=False)


def _stdio_params(**env: str) -> Any:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "remem", "serve", "--no-tasks", "--no-warm"],
                                 env={**os.environ, **env}, cwd=str(ROOT))


def _damage(db: Path, table: str) -> None:
    """Overwrite the first page of `table` (the file checkpointed first)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    conn.close()
    with open(db, "r+b") as fh:
        fh.seek((root - 1) * size)
        fh.write(b"\xff" * size)


# --------------------------------------------------------------------------- lone surrogates

def _raw_stdio_call(lines: list[str], timeout: float = 120) -> list[dict[str, Any]]:
    """Send raw JSON-RPC lines to `remem serve` over stdio; the replies to the requests with
    an id (initialize first), or fewer when the server never answers within `timeout`."""
    # Unbuffered: with a buffered reader, two replies arriving together would leave the second
    # in Python's buffer, where select() cannot see it.
    proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--no-tasks", "--no-warm"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=str(ROOT), bufsize=0)
    replies: list[dict[str, Any]] = []
    try:
        assert proc.stdin and proc.stdout
        for line in [json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                     *lines]:
            proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()
        wanted = 1 + len(lines)
        deadline = time.monotonic() + timeout
        while len(replies) < wanted:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                break
            raw = proc.stdout.readline()
            if not raw:
                break
            replies.append(json.loads(raw))
    finally:
        proc.kill()
        proc.wait(timeout=10)
    return replies


def test_a_lone_surrogate_over_stdio_is_answered_and_stored_replaced(home: Path) -> None:
    # Written by hand: a Node-based agent sends half an emoji as "\ud83d".
    half = ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember",'
            '"arguments":{"text":"half an emoji \\ud83d here","tags":["mood\\udc00"]}}}')
    whole = ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"remember",'
             '"arguments":{"text":"a whole emoji \\ud83d\\ude00 here"}}}')
    replies = {r.get("id"): r for r in _raw_stdio_call([half, whole])}  # answered in any order
    assert sorted(replies) == [1, 2, 3], replies  # no request left unanswered
    first = replies[2]["result"]
    assert not first.get("isError"), first
    assert first["structuredContent"]["gist"] == "half an emoji \ufffd here"
    assert first["structuredContent"]["tags"] == ["mood\ufffd"]
    assert replies[3]["result"]["structuredContent"]["gist"] == "a whole emoji \U0001F600 here"
    from remem.engine.store import Store

    with Store() as store:  # stored, not just echoed
        gists = {r["gist"] for r in store.rows("SELECT gist FROM episodes")}
    assert gists == {"half an emoji \ufffd here", "a whole emoji \U0001F600 here"}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_request_nested_too_deep_over_stdio_gets_an_error_and_the_server_stays_up(home: Path) -> None:
    """A line with a lone surrogate and 500 levels of nesting stopped the server (RecursionError
    while scrubbing it); one nested 200 levels deep without one got no reply at all (the SDK's
    parser gives up there and drops the line). Each is answered with an error for its id."""
    with_surrogate = ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall",'
                      '"arguments":{"query":"\\ud83d x","k":' + _nested(500) + '}}}')
    past_the_parser = ('{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"recall",'
                       '"arguments":{"query":"x","tags":' + _nested(200) + '}}}')
    # The id after the params: found all the same.
    id_last = ('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"recall","arguments":'
               '{"query":"x","tags":' + _nested(150) + '}},"id":4}')
    then = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                       "params": {"name": "remember", "arguments": {"text": "still answering"}}})
    replies = {r.get("id"): r for r in _raw_stdio_call([with_surrogate, past_the_parser, id_last, then])}
    assert sorted(replies, key=str) == sorted([1, 2, "three", 4, 5], key=str), replies
    for request in (2, "three", 4):
        error = replies[request]["error"]
        assert error["code"] == -32600, error
        assert error["message"].startswith("the request has lists or objects nested more than 100 levels deep")
    assert replies[5]["result"]["structuredContent"]["gist"] == "still answering"


def test_too_deep_reads_brackets_in_strings_as_text() -> None:
    from remem.server_stdio import request_id, too_deep

    assert too_deep(_nested(100)) is None and too_deep(_nested(101))
    assert too_deep(json.dumps({"text": _nested(5000)})) is None  # a string: no nesting
    assert too_deep(b'{"t": "\\"' + b"[" * 300 + b'"}') is None  # an escaped quote ends no string
    assert request_id('{"params": {"id": 9, "a": ' + _nested(300) + '}, "id": "x"}') == "x"
    assert request_id('{"method": "notifications/x", "params": ' + _nested(300) + "}") is None


def test_scrub_json_leaves_clean_lines_alone() -> None:
    from remem.server import scrub_json

    assert scrub_json('{"text": "plain"}') is None
    assert scrub_json('{"text": "\\ud83d\\ude00"}') == '{"text":"\U0001F600"}'  # a valid pair
    assert scrub_json(b'{"t": "a\\uDBFF"}') == '{"t":"a\ufffd"}'
    assert scrub_json('{"t": "\\ud800" broken') is None  # not JSON: the transport says so


# --------------------------------------------------------------------------- memory.db under a server

@pytest.mark.anyio
@pytest.mark.parametrize("which", ["memory.db", "memory.db*"])  # its -wal and -shm left, or not
async def test_a_memory_deleted_under_the_server_is_reopened_not_written_into_the_void(home: Path,
                                                                                     which: str) -> None:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    from remem.engine.store import Store

    with open(home.parent / "stdio.err", "w") as errlog:
        async with Client(stdio_client(_stdio_params(), errlog=errlog)) as client:
            await _ok(client, "remember", {"text": "written before the file went away"})
            for f in home.glob(which):
                f.unlink()
            m = await _ok(client, "remember", {"text": "the release branch is cut on Tuesdays"})
            found = await _ok(client, "search", {"query": "release branch Tuesdays", "mode": "keyword"})
            assert [h["id"] for h in found["hits"]] == [m["id"]]
            with Store() as store:  # on disk, where every other remem process looks
                assert store.scalar("SELECT count(*) FROM episodes WHERE id = ?", (m["id"],)) == 1
                assert store.scalar("SELECT count(*) FROM episodes") == 1  # a fresh memory


@pytest.mark.anyio
async def test_a_memory_replaced_under_the_server_is_the_one_it_answers_from(home: Path) -> None:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    from remem.engine.store import Store

    with open(home.parent / "stdio.err", "w") as errlog:
        async with Client(stdio_client(_stdio_params(), errlog=errlog)) as client:
            old = await _ok(client, "remember", {"text": "a memory only the old file holds"})
            other = home / "other.db"
            with Store(other) as store:
                store.put_episodes([{"id": "feedfacefeedface", "kind": "note", "title": "from the new file",
                                     "gist": "from the new file"}])
            os.replace(other, home / "memory.db")  # a copy put over it (a new inode)
            got = await _ok(client, "get_memory", {"id": "feedfacefeedface"})
            assert got["title"] == "from the new file"
            assert "no memory" in await _error(client, "get_memory", {"id": old["id"]})


@pytest.mark.anyio
async def test_a_replaced_memory_is_searched_by_its_own_vectors(home: Path) -> None:
    """The vector cache on disk belongs to the old file: read through it, the new file's rows
    got the old file's vectors (and its scores)."""
    from mcp.client import Client

    from remem.engine.memories import remember
    from remem.engine.store import Store

    async with Client(_server()) as client:
        for text in ("deploy with the blue profile", "deploy on fridays is frozen", "the deploy key rotates"):
            await _ok(client, "remember", {"text": text})
        before = await _ok(client, "search", {"query": "deploy profile", "mode": "semantic"})
        assert before["hits"][0]["title"] == "deploy with the blue profile"
        other = home / "other.db"
        with Store(other) as store:
            for text in ("cats like fish", "bread rises overnight", "the garden needs water"):
                remember(store, text)
        os.replace(other, home / "memory.db")
        after = await _ok(client, "search", {"query": "cats like fish", "mode": "semantic"})
        assert after["hits"][0]["title"] == "cats like fish"
        assert after["hits"][0]["score"] > 0.9


@pytest.mark.anyio
async def test_a_memory_folder_removed_under_the_server_is_one_line(home: Path) -> None:
    from mcp.client import Client

    async with Client(_server()) as client:
        await _ok(client, "remember", {"text": "kept until the folder goes"})
        shutil.rmtree(home)
        for _ in range(2):  # the log's folder, made again meanwhile, is not the memory
            message = await _error(client, "remember", {"text": "where would this go"})
            assert "was removed while `remem serve` was running" in message
        assert not (home / "memory.db").exists()


def test_database_problem_names_the_fix_for_a_read_only_memory(home: Path) -> None:
    from remem.engine.store import Store
    from remem.errors import database_problem

    with Store():
        pass
    conn = sqlite3.connect(f"file:{home / 'memory.db'}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.execute("INSERT INTO tags VALUES ('x', 'y')")
    conn.close()
    line = database_problem(caught.value)
    assert line and "read-only" in line and f"chmod u+w {home / 'memory.db'}" in line


@pytest.mark.anyio
async def test_a_read_only_memory_still_recalls_and_refuses_writes_with_the_fix(home: Path) -> None:
    from mcp.client import Client

    mcp = _server()
    async with Client(mcp) as client:
        m = await _ok(client, "remember", {"text": "the staging database listens on port 5433"})
        with mcp.memory.store() as store:  # what a read-only file or folder does to the server
            store.conn.execute("PRAGMA query_only = ON")
        got = await _ok(client, "recall", {"query": "which port does staging listen on"})
        assert got["hits"][0]["id"] == m["id"]  # answered, without strengthening
        message = await _error(client, "remember", {"text": "cannot be stored"})
        assert "is read-only" in message and "chmod u+w" in message


# --------------------------------------------------------------------------- tools

UNKNOWN = [
    ("delete_memory", {"id": "x", "hrad": True}, "unknown field 'hrad' (did you mean 'hard'?)"),
    ("search", {"kind": "error"}, "unknown field 'kind' (did you mean 'kinds'?)"),
    ("recall", {"query": "x", "limit": 1}, "unknown field 'limit' (recall takes query, k,"),
    ("remember", {"text": "x", "tag": ["a"]}, "unknown field 'tag' (did you mean 'tags'?)"),
]


@pytest.mark.anyio
async def test_an_argument_a_tool_does_not_take_is_refused_not_ignored(home: Path) -> None:
    from mcp.client import Client

    async with Client(_server()) as client:
        m = await _ok(client, "remember", {"text": "a memory that must survive a typo"})
        for tool, args, fragment in UNKNOWN:
            args = {**args, "id": m["id"]} if tool == "delete_memory" else args
            message = await _error(client, tool, args)
            assert message.startswith(f"invalid arguments for {tool}: ") and fragment in message, message
        assert (await _ok(client, "get_memory", {"id": m["id"]}))["archived"] is False  # untouched
        for t in (await client.list_tools()).tools:
            assert t.input_schema.get("additionalProperties") is False, t.name


@pytest.mark.anyio
async def test_archived_is_true_or_false_everywhere(home: Path) -> None:
    from mcp.client import Client

    async with Client(_server()) as client:
        m = await _ok(client, "remember", {"text": "an archived note about the build cache", "tags": ["cache"]})
        assert m["archived"] is False
        await _ok(client, "delete_memory", {"id": m["id"]})
        assert (await _ok(client, "get_memory", {"id": m["id"]}))["archived"] is True
        listed = await _ok(client, "search", {"tags": ["cache"], "include_archived": True})
        found = await _ok(client, "search", {"query": "build cache", "mode": "keyword", "include_archived": True})
        for hits in (listed["hits"], found["hits"]):
            assert [h["archived"] for h in hits if h["id"] == m["id"]] == [True]


# --------------------------------------------------------------------------- tool errors, recall's k

MISSING = "no memory with id 'nowhere-id'; `remem list` shows the ids"  # as docs/MCP.md


@pytest.mark.anyio
async def test_a_missing_id_is_the_tools_own_line_without_the_sdk_prefix(home: Path) -> None:
    from mcp.client import Client

    async with Client(_server()) as client:
        for tool, args in (("get_memory", {"id": "nowhere-id"}),
                           ("update_memory", {"id": "nowhere-id", "title": "t"}),
                           ("delete_memory", {"id": "nowhere-id"})):
            message = await _error(client, tool, args)
            assert message == MISSING, message
        message = await _error(client, "search", {"query": "x", "since": "last tuesday"})
        assert message.startswith("since: "), message  # every tool error, not only a missing id


def test_remem_call_prints_a_missing_id_as_documented(home: Path) -> None:
    from tests.conftest import run_remem

    res = run_remem("call", "get_memory", '{"id": "nowhere-id"}')
    assert res.returncode == 1
    assert res.stderr.strip() == f"remem: {MISSING}", res.stderr


@pytest.mark.anyio
async def test_recall_takes_its_default_k_from_config(home: Path) -> None:
    from mcp.client import Client

    from remem import config

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[recall]\nk = 2\n", encoding="utf-8")
    config._cache.clear()
    async with Client(_server()) as client:
        for n in range(4):
            await _ok(client, "remember", {"text": f"the staging deploy uses profile number {n}"})
        assert len((await _ok(client, "recall", {"query": "staging deploy profile"}))["hits"]) == 2
        assert len((await _ok(client, "recall", {"query": "staging deploy profile", "k": 3}))["hits"]) == 3
        (schema,) = [t.input_schema for t in (await client.list_tools()).tools if t.name == "recall"]
        k = schema["properties"]["k"]
        assert k.get("default") is None and "recall.k" in k["description"], k
        assert "k" not in schema.get("required", [])


@pytest.mark.anyio
async def test_a_resource_on_a_damaged_memory_is_the_one_line_fix(home: Path) -> None:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    from remem.engine.lessons import add_lesson
    from remem.engine.store import Store

    with Store() as store:
        for i in range(5):
            add_lesson(store, f"lesson {i}: run the tests before committing", "correction", cwd="/work/shop")
    _damage(home / "memory.db", "lessons")
    errpath = home.parent / "stdio.err"
    with open(errpath, "w") as errlog:
        async with Client(stdio_client(_stdio_params(), errlog=errlog)) as client:
            with pytest.raises(MCPError) as caught:
                await client.read_resource("remem://lessons/shop")
    message = str(caught.value)
    assert "is damaged" in message and "remem restore" in message and "\n" not in message
    assert "Traceback" not in errpath.read_text()


# --------------------------------------------------------------------------- HTTP

@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("edges")
    (base / "user").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env.update({"REMEM_HOME": str(base / "home"), "HOME": str(base / "user"), "HF_HUB_OFFLINE": "1",
                "REMEM_TOKEN": TOKEN})
    with http_server(base, env, TOKEN, "--no-tasks", "--no-warm") as url:
        yield url


def _http(method: str, url: str, body: bytes | None = None, auth: str | None = f"Bearer {TOKEN}",
          headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    if auth:
        req.add_header("Authorization", auth)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def test_a_lone_surrogate_over_the_json_api_is_stored_replaced(http_url: str) -> None:
    body = b'{"text": "x \\ud800 y", "tags": ["a\\udfff"]}'
    status, text, _ = _http("POST", f"{http_url}/memory/remember", body)
    assert status == 200, text
    m = json.loads(text)
    assert m["gist"] == "x \ufffd y" and m["tags"] == ["a\ufffd"]


def test_a_lone_surrogate_over_streamable_http_is_stored_replaced(http_url: str) -> None:
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    status, _, got = _http("POST", f"{http_url}/mcp", json.dumps(INIT).encode(), headers=headers)
    assert status == 200
    headers["Mcp-Session-Id"] = {k.lower(): v for k, v in got.items()}["mcp-session-id"]
    _http("POST", f"{http_url}/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers)
    call = (b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember",'
            b'"arguments":{"text":"half an emoji \\ud83d over http"}}}')
    status, text, _ = _http("POST", f"{http_url}/mcp", call, headers=headers)
    assert status == 200, text
    data = [l[5:] for l in text.splitlines() if l.startswith("data:")] or [text]
    reply = json.loads(data[-1])
    assert reply["id"] == 2 and not reply["result"].get("isError"), reply
    assert reply["result"]["structuredContent"]["gist"] == "half an emoji \ufffd over http"


def test_an_unknown_field_over_the_json_api_is_400(http_url: str) -> None:
    status, text, _ = _http("POST", f"{http_url}/memory/recall", b'{"query": "x", "limit": 3}')
    assert status == 400 and "unknown field 'limit'" in json.loads(text)["error"]


def test_a_missing_id_over_the_json_api_is_404_with_the_tools_line(http_url: str) -> None:
    status, text, _ = _http("GET", f"{http_url}/memory/nowhere-id")
    assert status == 404, text
    assert json.loads(text) == {"error": MISSING}, text
    status, text, _ = _http("DELETE", f"{http_url}/memory/nowhere-id")
    assert status == 404 and json.loads(text) == {"error": MISSING}, text


def test_404_and_405_are_json(http_url: str) -> None:
    status, text, _ = _http("GET", f"{http_url}/nowhere")
    assert status == 404 and "no such endpoint" in json.loads(text)["error"]
    status, text, headers = _http("PUT", f"{http_url}/memory/health", b"{}")
    assert status == 405 and "PUT is not allowed" in json.loads(text)["error"]
    assert "GET" in {k.lower(): v for k, v in headers.items()}["allow"]


def test_the_bearer_scheme_is_case_insensitive(http_url: str) -> None:
    for auth in (f"bearer {TOKEN}", f"BEARER {TOKEN}", f"Bearer  {TOKEN}"):
        assert _http("GET", f"{http_url}/memory/health", auth=auth)[0] == 200, auth
    for auth in (f"Bearer {TOKEN.upper()}", f"Basic {TOKEN}", TOKEN, "bearer", f"Bearer {TOKEN}x"):
        status, text, _ = _http("GET", f"{http_url}/memory/health", auth=auth)
        assert status == 401 and "bearer" in json.loads(text)["error"], auth


def test_serve_stops_at_once_on_ctrl_c_while_its_client_keeps_stdin_open(home) -> None:
    """Claude Code ends a session's MCP server with SIGINT, then SIGTERM 100 ms later; a person
    presses Ctrl-C. The server must stop on the interrupt, not wait for stdin to close."""
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT, run_remem

    proc = subprocess.Popen([sys.executable, "-m", "remem", "serve"], cwd=str(ROOT),  # as agents start it
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert "serving MCP over stdio" in proc.stderr.readline().decode()
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        proc.stdin.write((json.dumps(hello) + "\n").encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving: its reader waits on stdin
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 128 + signal.SIGINT  # stdin is still open
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert run_remem("status").returncode == 0
