"""The MCP server driven by the mcp SDK's own client: over stdio (a real `python -m remem serve`
subprocess) and over streamable HTTP (a real `remem serve --http` subprocess), one server of each
per module, both on one store. Plus the /memory/* JSON API, the token rule, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, free_port, run_remem
from tests.conftest import http_server as http_server_at

TOKEN = "test-token-4f1c"
TOOLS = {"recall", "remember", "search", "get_memory", "update_memory", "delete_memory",
         "promote", "connect", "traverse", "lessons", "context"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One private home for the module's servers and the CLI calls that check them."""
    base = tmp_path_factory.mktemp("mcp")
    user = base / "user"
    user.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env.update({
        "REMEM_HOME": str(base / "home"), "HOME": str(user), "HF_HUB_OFFLINE": "1",
        "CLAUDE_CONFIG_DIR": str(user / ".claude"), "CODEX_HOME": str(user / ".codex"),
    })
    return {"base": base, "env": env, "home": base / "home"}


@pytest.fixture(scope="module")
def http_server(shared: dict[str, Any]) -> Any:
    """`remem serve --http` with a token, started once; waits until /memory/health answers."""
    with http_server_at(shared["base"], {**shared["env"], "REMEM_TOKEN": TOKEN}, TOKEN) as url:
        yield url


@pytest.fixture(scope="module", params=["stdio", "http"])
async def client(request: pytest.FixtureRequest, shared: dict[str, Any]) -> Any:
    """An initialized mcp SDK client session against each transport."""
    from mcp.client import Client

    if request.param == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        errlog = open(shared["base"] / "stdio.err", "w")
        params = StdioServerParameters(command=sys.executable, args=["-m", "remem", "serve"],
                                       env=shared["env"], cwd=str(ROOT))
        async with Client(stdio_client(params, errlog=errlog)) as c:
            c.transport_name = "stdio"
            yield c
        errlog.close()
    else:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        url = request.getfixturevalue("http_server")
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as c:
                c.transport_name = "http"
                yield c


async def call(client: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, text
    assert json.loads(text) == result.structured_content  # text and structure agree
    return result.structured_content


async def call_error(client: Any, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)


def _http(method: str, url: str, body: Any = None, token: str | None = TOKEN,
          headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _store(shared: dict[str, Any]) -> Any:
    from remem.engine.store import Store

    return Store(shared["home"] / "memory.db")


# --------------------------------------------------------------------------- MCP

@pytest.mark.anyio
async def test_initialize_and_list_tools_with_hints(client: Any) -> None:
    assert client.server_info.name == "remem"
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.description and len(t.description) > 40  # written for the model
        assert t.annotations is not None and t.annotations.read_only_hint is not None
        assert t.annotations.destructive_hint is not None
    assert tools["search"].annotations.read_only_hint is True
    assert tools["get_memory"].annotations.read_only_hint is True
    assert tools["delete_memory"].annotations.destructive_hint is True
    assert tools["remember"].annotations.read_only_hint is False
    assert tools["remember"].annotations.destructive_hint is False
    assert "mode" in tools["search"].input_schema["properties"]


@pytest.mark.anyio
async def test_remember_recall_search_get(client: Any) -> None:
    t = client.transport_name  # both transports share one store: keep their memories apart
    m = await call(client, "remember", {
        "text": f"the {t} staging deploy needs AWS_PROFILE=staging-{t}-admin exported first",
        "kind": "environment", "tags": ["deploy", "aws", t], "importance": 0.7})
    assert m["kind"] == "environment" and m["tags"] == sorted(["aws", "deploy", t]) and m["source"] == "mcp"
    got = await call(client, "recall", {"query": f"which AWS profile for the {t} staging deploy", "k": 3})
    assert got["hits"][0]["id"] == m["id"]
    for mode in ("semantic", "keyword", "hybrid"):
        found = await call(client, "search", {"query": f"staging-{t}-admin profile", "mode": mode, "k": 5})
        assert m["id"] in [h["id"] for h in found["hits"]], mode
    tagged = await call(client, "search", {"query": "staging deploy", "tags": [t, "aws"], "all_tags": True})
    assert [h["id"] for h in tagged["hits"]] == [m["id"]]
    listed = await call(client, "search", {"tags": ["deploy"], "since": "1d", "k": 50})
    assert m["id"] in [h["id"] for h in listed["hits"]]
    old = await call(client, "search", {"tags": ["deploy"], "until": "2000-01-01"})
    assert old["hits"] == []
    full = await call(client, "get_memory", {"id": m["id"]})
    assert full["gist"] == m["gist"] and "embedding" not in full


@pytest.mark.anyio
async def test_flashbulb_short_term_promote_and_update(client: Any) -> None:
    flash = await call(client, "remember", {"text": "rm -rf wiped the build cache on prod", "kind": "error",
                                            "arousal": 0.9, "short_term": True})
    assert flash["memory_type"] == "long_term" and flash["flashbulb_until"] and flash["importance"] >= 0.9
    short = await call(client, "remember", {"text": "the CI runner is down today", "ttl": "2h"})
    assert short["memory_type"] == "short_term" and short["expires_at"]
    promoted = await call(client, "promote", {"id": short["id"]})
    assert promoted["memory_type"] == "long_term" and promoted["expires_at"] is None
    calm = await call(client, "remember", {"text": "a calm observation about tabs", "short_term": True})
    updated = await call(client, "update_memory", {"id": calm["id"], "arousal": 0.95, "tags": ["style"],
                                                  "text": "indent with tabs in the Makefile"})
    assert updated["arousal"] == 0.95 and updated["flashbulb_until"] is None  # creation only
    assert updated["tags"] == ["style"] and updated["gist"] == "indent with tabs in the Makefile"


@pytest.mark.anyio
async def test_delete_soft_then_hard(client: Any) -> None:
    m = await call(client, "remember", {"text": "temporary note to be forgotten soon"})
    soft = await call(client, "delete_memory", {"id": m["id"]})
    assert soft["hard"] is False
    assert (await call(client, "get_memory", {"id": m["id"]}))["archived"] == 1
    hits = await call(client, "search", {"query": "temporary note to be forgotten", "mode": "keyword"})
    assert m["id"] not in [h["id"] for h in hits["hits"]]
    await call(client, "delete_memory", {"id": m["id"], "hard": True})
    assert "no memory" in await call_error(client, "get_memory", {"id": m["id"]})


@pytest.mark.anyio
async def test_connect_and_traverse(client: Any) -> None:
    a = await call(client, "remember", {"text": "the migration failed on the orders table"})
    b = await call(client, "remember", {"text": "a missing index made the migration time out"})
    c = await call(client, "remember", {"text": "add indexes before large migrations"})
    await call(client, "connect", {"source": a["id"], "target": b["id"], "type": "caused_by"})
    await call(client, "connect", {"source": a["id"], "target": b["id"], "type": "caused_by"})  # no dup
    await call(client, "connect", {"source": b["id"], "target": c["id"], "type": "supports"})
    walk = await call(client, "traverse", {"id": a["id"], "depth": 2})
    levels = [{n["id"]: n for n in level} for level in walk["levels"]]
    assert list(levels[0]) == [a["id"]]
    assert levels[1][b["id"]]["via"]["type"] == "caused_by"
    assert c["id"] in {**levels[1], **levels[2]}  # by supports (depth 2) or an auto similar_to edge
    caused = await call(client, "traverse", {"id": a["id"], "depth": 2, "types": ["caused_by"]})
    assert [[n["id"] for n in level] for level in caused["levels"]] == [[a["id"]], [b["id"]]]
    only = await call(client, "traverse", {"id": a["id"], "depth": 2, "types": ["supports"]})
    assert [[n["id"] for n in level] for level in only["levels"]] == [[a["id"]]]


@pytest.mark.anyio
async def test_lessons_context_and_resources(client: Any, shared: dict[str, Any]) -> None:
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.lessons import add_lesson, list_lessons

    text = "Run the test suite with pytest -n 2 before committing"
    with _store(shared) as store:
        if not any(l["text"] == text for l in list_lessons(store)):
            emb = get_embedder()
            add_lesson(store, text, "correction", cwd="/work/shop", strength=1.5, space=emb.space,
                       embedding=to_blob(emb.encode([text])[0]))
    got = await call(client, "lessons", {"kind": "correction"})
    assert text in [l["text"] for l in got["lessons"]]
    mine = await call(client, "lessons", {"project": "shop"})
    assert text in [l["text"] for l in mine["lessons"]]
    other = await call(client, "lessons", {"project": "/elsewhere"})
    assert text not in [l["text"] for l in other["lessons"]]
    ctx = await call(client, "context", {"project": "/work/shop"})
    assert text in ctx["text"]
    ctx = await call(client, "context", {"project": "shop", "prompt": "run pytest before I commit"})
    assert text in ctx["text"] and ctx["lessons"]
    resources = {str(r.uri) for r in (await client.list_resources()).resources}
    assert "remem://morning" in resources
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert "remem://lessons/{project}" in templates
    (shared["home"] / "morning.md").write_text("# Morning\n\nLearned 1 lesson.\n", encoding="utf-8")
    morning = await client.read_resource("remem://morning")
    assert "Learned 1 lesson." in morning.contents[0].text
    lessons = await client.read_resource("remem://lessons/shop")
    assert text in lessons.contents[0].text


BAD_ARGS = [
    ("recall", {}, "query: Field required"),
    ("recall", {"query": "x", "k": 0}, "k:"),
    ("remember", {"text": ""}, "text:"),
    ("remember", {"text": "x", "kind": "rumour"}, "kind:"),
    ("remember", {"text": "x", "arousal": 2}, "arousal:"),
    ("remember", {"text": "x", "ttl": "soon"}, "not a duration"),
    ("search", {"query": "x", "mode": "fuzzy"}, "mode:"),
    ("search", {"since": "last tuesday"}, "since"),
    ("search", {"since": "9999999999d"}, "since: '9999999999d' is too far back"),
    ("remember", {"text": "x", "ttl": "99999999999d"}, "ttl must be from 1s to 36500d"),
    ("get_memory", {}, "id: Field required"),
    ("get_memory", {"id": "does-not-exist"}, "no memory"),
    ("update_memory", {"id": "does-not-exist", "title": "t"}, "no memory"),
    ("update_memory", {"id": "does-not-exist", "importance": 5}, "importance:"),
    ("delete_memory", {"id": "does-not-exist"}, "no memory"),
    ("delete_memory", {"id": "x", "hard": "perhaps"}, "hard:"),
    ("promote", {"id": "does-not-exist"}, "no memory"),
    ("connect", {"source": "a", "target": "b", "type": "likes"}, "type:"),
    ("connect", {"source": "does-not-exist", "target": "nor-this-one"}, "no memory"),
    ("traverse", {"id": "x", "depth": 9}, "depth:"),
    ("lessons", {"status": "forgotten"}, "status:"),
    ("context", {"project": 5}, "project:"),
]


@pytest.mark.anyio
@pytest.mark.parametrize("tool,args,fragment", BAD_ARGS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_ARGS)])
async def test_bad_arguments_are_clear_tool_errors(client: Any, tool: str, args: dict[str, Any],
                                                   fragment: str) -> None:
    message = await call_error(client, tool, args)
    assert fragment in message
    assert "\n" not in message.strip() and "Traceback" not in message


@pytest.mark.anyio
async def test_every_tool_has_a_bad_argument_case(client: Any) -> None:
    assert {t for t, _, _ in BAD_ARGS} == TOOLS


# --------------------------------------------------------------------------- one store, the CLI

@pytest.mark.anyio
async def test_remember_over_mcp_then_recall_from_the_cli(client: Any, shared: dict[str, Any]) -> None:
    t = client.transport_name
    m = await call(client, "remember", {"text": f"the {t} office printer only accepts PDFs sent from Firefox"})
    out = run_remem("recall", f"{t} printer accepts which files", "-k", "3", "--json", env=shared["env"])
    assert out.returncode == 0, out.stderr
    assert m["id"] in [h["id"] for h in out.json()]


def test_stdio_stdout_carries_only_protocol(shared: dict[str, Any]) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}
    proc = subprocess.run([sys.executable, "-m", "remem", "serve", "--no-tasks"],
                          input=json.dumps(init) + "\n", capture_output=True, text=True,
                          env=shared["env"], cwd=str(ROOT), timeout=60)
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    assert lines, proc.stderr
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert json.loads(lines[0])["result"]["serverInfo"]["name"] == "remem"
    assert "serving MCP over stdio" in proc.stderr


def test_tools_command_lists_every_tool(shared: dict[str, Any]) -> None:
    result = run_remem("tools", "--json", env=shared["env"])
    assert result.returncode == 0, result.stderr
    found = {t["name"]: t for t in result.json()}
    assert set(found) == TOOLS
    assert found["search"]["read_only"] and found["delete_memory"]["destructive"]
    assert all(t["summary"] for t in found.values())


def test_call_command_goes_through_a_client_session(shared: dict[str, Any]) -> None:
    out = run_remem("call", "remember", '{"text": "call from the command line", "tags": ["cli"]}',
                    env=shared["env"])
    assert out.returncode == 0, out.stderr
    assert out.json()["tags"] == ["cli"]
    bad = run_remem("call", "remember", '{"text": "x", "importance": 7}', env=shared["env"])
    assert bad.returncode == 1 and json.loads(bad.stdout) == {"error": bad.stderr.strip().removeprefix("remem: ")}
    assert bad.stderr.count("\n") == 1 and "importance" in bad.stderr
    junk = run_remem("call", "recall", "{not json", env=shared["env"])
    assert junk.returncode == 1 and "JSON object" in junk.stderr


# --------------------------------------------------------------------------- HTTP JSON API

def test_json_api(http_server: str) -> None:
    status, health = _http("GET", f"{http_server}/memory/health")
    assert status == 200 and health["status"] == "ok" and "episodes" in health["counts"]
    status, m = _http("POST", f"{http_server}/memory/remember",
                      {"text": "the API answers on /memory", "kind": "note", "tags": ["api"]})
    assert status == 200 and m["id"] and m["tags"] == ["api"]
    status, got = _http("POST", f"{http_server}/memory/recall", {"query": "which path does the API answer on", "k": 3})
    assert status == 200 and m["id"] in [h["id"] for h in got["hits"]]
    status, one = _http("GET", f"{http_server}/memory/{m['id']}")
    assert status == 200 and one["id"] == m["id"]
    status, lessons = _http("GET", f"{http_server}/memory/lessons?limit=5")
    assert status == 200 and isinstance(lessons["lessons"], list)
    status, _ = _http("DELETE", f"{http_server}/memory/{m['id']}")
    assert status == 200
    assert _http("GET", f"{http_server}/memory/{m['id']}")[1]["archived"] == 1
    status, _ = _http("DELETE", f"{http_server}/memory/{m['id']}?hard=true")
    assert status == 200
    status, err = _http("GET", f"{http_server}/memory/{m['id']}")
    assert status == 404 and "no memory" in err["error"]
    status, err = _http("POST", f"{http_server}/memory/recall", {"k": 3})
    assert status == 400 and "query" in err["error"]
    status, err = _http("POST", f"{http_server}/memory/remember", b"not json")
    assert status == 400 and "JSON object" in err["error"]


def test_token_is_required_on_every_request(http_server: str) -> None:
    for method, path in (("GET", "/memory/health"), ("GET", "/memory/lessons"), ("POST", "/mcp")):
        status, body = _http(method, f"{http_server}{path}", {} if method == "POST" else None, token=None)
        assert status == 401 and "bearer" in body["error"]
    status, _ = _http("GET", f"{http_server}/memory/health", token="wrong")
    assert status == 401


def test_foreign_host_header_is_refused(http_server: str) -> None:
    status, body = _http("GET", f"{http_server}/memory/health", headers={"Host": "evil.example:80"})
    assert status == 403


def test_a_named_route_with_the_wrong_method_is_405_not_a_memory_id(http_server: str) -> None:
    for method, path, allowed in (("GET", "/memory/recall", "POST"), ("DELETE", "/memory/remember", "POST"),
                                  ("DELETE", "/memory/lessons", "GET")):
        status, body = _http(method, f"{http_server}{path}")
        assert status == 405 and allowed in body["error"], (method, path, body)


def test_background_tasks_run_in_the_server(http_server: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tasks = _http("GET", f"{http_server}/memory/health")[1]["tasks"]
        if tasks.get("expire_short_term") and tasks.get("discover_connections"):
            break
        time.sleep(0.3)
    assert tasks.get("expire_short_term") and tasks.get("discover_connections")


def test_non_loopback_without_token_refuses_to_start(shared: dict[str, Any]) -> None:
    env = {**shared["env"], "REMEM_TOKEN": ""}
    out = run_remem("serve", "--http", "--host", "0.0.0.0", "--port", str(free_port()), env=env, timeout=60)
    assert out.returncode == 1
    assert "token" in out.stderr and out.stderr.count("\n") == 1


def test_a_port_in_use_is_one_clear_line(http_server: str, shared: dict[str, Any]) -> None:
    port = http_server.rsplit(":", 1)[1]
    out = run_remem("serve", "--http", "--port", port, env={**shared["env"], "REMEM_TOKEN": TOKEN}, timeout=60)
    assert out.returncode == 1 and "cannot listen" in out.stderr and out.stderr.count("\n") == 1


def test_a_failing_background_task_is_logged_not_fatal(home: Path) -> None:
    from remem import paths
    from remem.server import Background, Memory

    failing = (sys.executable, "-c", "import sys; sys.stderr.write('disk full (simulated)\\n'); sys.exit(1)")
    memory = Memory()
    worker = Background(memory, tasks=True, warm=False, command=failing)
    worker.start()
    log = paths.log_file()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (log.exists() and "disk full (simulated)" in log.read_text()):
        time.sleep(0.05)
    assert "lifecycle tasks failed (disk full (simulated))" in log.read_text()
    assert worker._thread.is_alive()  # still ticking after the failure
    worker.stop()
    memory.close()
    assert not worker._thread.is_alive()


@pytest.mark.anyio
@pytest.mark.parametrize("headers,token,loopback,status", [
    ({"host": "127.0.0.1:4545"}, "", True, 200),
    ({"host": "localhost:4545", "origin": "http://localhost:3000"}, "", True, 200),
    ({"host": "[::1]:4545"}, "", True, 200),
    ({"host": "[::1]"}, "", True, 200),  # bracketed IPv6 without a port
    ({"host": "localhost"}, "", True, 200),
    ({"host": "[::1]:4545", "origin": "http://[::1]:3000"}, "", True, 200),
    ({"host": "evil.example:4545"}, "", True, 403),
    ({"host": "127.0.0.1:4545", "origin": "https://evil.example"}, "", True, 403),
    ({"host": "10.0.0.5:4545"}, "s3cret", False, 401),
    ({"host": "10.0.0.5:4545", "authorization": "Bearer s3cret"}, "s3cret", False, 200),
    ({"host": "10.0.0.5:4545", "authorization": "Bearer s3cret-not"}, "s3cret", False, 401),
])
async def test_guard_in_front_of_every_route(headers: dict[str, str], token: str, loopback: bool,
                                             status: int) -> None:
    from remem.server_http import Guard

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/memory/health",
             "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
    await Guard(app, token=token, loopback=loopback)(scope, None, send)
    assert sent[0]["status"] == status


def test_call_names_why_the_server_could_not_start(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[recall\nk = 3\n")
    out = run_remem("call", "recall", '{"query": "x"}')
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert json.loads(out.stdout) == {"error": out.stderr.strip().removeprefix("remem: ")}
    assert "config.toml is not valid TOML" in out.stderr and "Connection closed" not in out.stderr


@pytest.mark.anyio
async def test_call_tool_shows_the_last_line_the_server_printed_when_it_stopped(home: Path) -> None:
    from remem.errors import RememError
    from remem.server import call_tool

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[recall]\nk = 'many'\n")  # found by the child, not here
    with pytest.raises(RememError) as caught:
        await call_tool("recall", {"query": "x"}, timeout=60)
    message = str(caught.value)
    assert "`remem serve` stopped" in message and "recall.k must be a whole number" in message
    assert "\n" not in message


def test_a_damaged_memory_gets_the_same_fix_over_mcp_as_on_the_command_line(home: Path) -> None:
    import sqlite3

    for i in range(3):
        assert run_remem("remember", f"note {i} about the docker build").returncode == 0
    db = home / "memory.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'episodes'").fetchone()[0]
    conn.close()
    with open(db, "r+b") as fh:  # the episodes table's first page, overwritten
        fh.seek((root - 1) * size)
        fh.write(b"\xff" * size)
    cli_line = run_remem("recall", "docker").stderr
    assert "is damaged" in cli_line and "remem restore" in cli_line
    out = run_remem("call", "recall", '{"query": "docker"}')
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert "is damaged" in out.stderr and "remem restore" in out.stderr
    assert "unexpectedly" not in out.stderr
