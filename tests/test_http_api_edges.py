"""`remem serve --http` (and `remem proxy`, which shares its token rules) at the edges: the
token on every route (a header of bytes that are not ASCII refused, not a crash), a token of
only whitespace, one Host/Origin rule for /mcp and
/memory/*, a busy memory answered 503 (not "bad arguments"), query fields a DELETE does not
take refused rather than ignored (and empty ones read as unset), a lesson's id read by
GET /memory/{id}, and a body nested too deep answered 400. Real servers, a real store, raw HTTP."""

from __future__ import annotations

import http.client
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import ROOT, run_remem
from tests.fake_llm_api import FakeAPI, ServerThread, free_port

# Printable ASCII, as every token must be (one that is not is refused at start:
# tests/test_http_start_and_health.py).
TOKEN = "cle-key-7f3a"
AUTH = f"Bearer {TOKEN}".encode("utf-8")
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-06-18"}


def _request(port: int, method: str, path: str, body: bytes | None = None,
             headers: dict[str, Any] | None = None) -> tuple[int, str, dict[str, str]]:
    """One request with exactly these headers (Host included, when given), values as given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        given = dict(headers or {})
        conn.putrequest(method, path, skip_host="Host" in given, skip_accept_encoding=True)
        for name, value in given.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        answer = conn.getresponse()
        return answer.status, answer.read().decode("utf-8"), {k.lower(): v for k, v in answer.getheaders()}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """(port, REMEM_HOME) of `remem serve --http` on loopback with a token."""
    base = tmp_path_factory.mktemp("http-edges")
    (base / "user").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env.update({"REMEM_HOME": str(base / "home"), "HOME": str(base / "user"), "HF_HUB_OFFLINE": "1",
                "REMEM_TOKEN": TOKEN})
    port = free_port()
    with open(base / "http.err", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--http", "--port", str(port),
                                 "--no-tasks", "--no-warm"], env=env, cwd=str(ROOT), stdout=err, stderr=err)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if _request(port, "GET", "/memory/health", headers={"Authorization": AUTH})[0] == 200:
                        break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((base / "http.err").read_text())
                time.sleep(0.2)
            yield port, base / "home"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


# --------------------------------------------------------------------------- tokens

def test_the_token_is_accepted_on_every_route_and_nothing_else(served: tuple[int, Path]) -> None:
    port, _ = served
    assert _request(port, "GET", "/memory/health", headers={"Authorization": AUTH})[0] == 200
    status, text, _ = _request(port, "POST", "/mcp", json.dumps(INIT).encode(),
                               {**MCP_HEADERS, "Authorization": AUTH})
    assert status == 200, text
    for wrong in (b"Bearer cl\xe9-7f3a", b"Bearer " + TOKEN.encode("utf-8")[:-1], b""):
        status, text, _ = _request(port, "GET", "/memory/health", headers={"Authorization": wrong})
        assert status == 401 and "bearer token" in json.loads(text)["error"], wrong


@pytest.mark.parametrize("command", [["serve", "--http"], ["proxy", "--upstream", "http://127.0.0.1:9"]])
@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1"])
def test_a_token_of_only_whitespace_is_refused_at_start(command: list[str], host: str) -> None:
    """No request can send it (a header's value is trimmed): every one would be refused."""
    res = run_remem(*command, "--host", host, "--port", str(free_port()), env={"REMEM_TOKEN": "   "},
                    timeout=60)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stderr.startswith("remem: the token (REMEM_TOKEN or server.token) is only whitespace")
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "remem proxy on" not in res.stdout


def test_the_proxy_asks_for_its_token() -> None:
    from remem.proxy import create_app

    fake = FakeAPI()
    with ServerThread(fake.app) as upstream, ServerThread(create_app(upstream.url, token=TOKEN)) as proxy:
        status, text, _ = _request(proxy.port, "GET", "/v1/models", headers={"Proxy-Authorization": AUTH})
        assert status == 200 and json.loads(text)["data"][0]["id"] == "m", text
        for wrong in (b"Bearer not-it", b"Bearer cl\xc3\xa9-key-7f3a"):
            status, text, _ = _request(proxy.port, "GET", "/v1/models", headers={"Proxy-Authorization": wrong})
            assert status == 407 and json.loads(text)["error"]["type"] == "remem_token"


# --------------------------------------------------------------------------- one Host rule

@pytest.mark.parametrize("host,origin", [
    ("localhost", None),                  # no port
    ("127.5.5.5:{port}", None),           # loopback, though not 127.0.0.1
    ("[::1]", None),
    ("localhost:{port}", "https://localhost"),
    ("127.0.0.1:{port}", "http://127.0.0.1:3000"),
])
def test_mcp_and_the_json_api_accept_the_same_local_hosts(served: tuple[int, Path], host: str,
                                                         origin: str | None) -> None:
    port, _ = served
    headers: dict[str, Any] = {"Host": host.format(port=port), "Authorization": AUTH}
    if origin:
        headers["Origin"] = origin
    assert _request(port, "GET", "/memory/health", headers=headers)[0] == 200
    status, text, _ = _request(port, "POST", "/mcp", json.dumps(INIT).encode(), {**MCP_HEADERS, **headers})
    assert status == 200, text


@pytest.mark.parametrize("host,origin", [("evil.example:{port}", None),
                                         ("127.0.0.1:{port}", "https://evil.example")])
def test_mcp_and_the_json_api_refuse_a_foreign_host_alike_with_the_documented_403(
        served: tuple[int, Path], host: str, origin: str | None) -> None:
    port, _ = served
    headers: dict[str, Any] = {"Host": host.format(port=port), "Authorization": AUTH}
    if origin:
        headers["Origin"] = origin
    for method, path, body, extra in (("GET", "/memory/health", None, {}),
                                      ("POST", "/mcp", json.dumps(INIT).encode(), MCP_HEADERS)):
        status, text, _ = _request(port, method, path, body, {**extra, **headers})
        assert status == 403, (path, status, text)
        assert "requests must come from this machine" in json.loads(text)["error"], path


# --------------------------------------------------------------------------- status and fields

def test_a_busy_memory_is_503_with_retry_after_not_a_bad_argument(served: tuple[int, Path]) -> None:
    port, home = served
    writer = sqlite3.connect(home / "memory.db", isolation_level=None, timeout=0)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another remem process writing (a sleep, an ingest)
        status, text, headers = _request(port, "POST", "/memory/remember", b'{"text": "busy http"}',
                                         {"Authorization": AUTH, "Content-Type": "application/json"})
    finally:
        writer.close()
    assert status == 503, text
    assert json.loads(text)["error"].startswith("the memory is busy")
    assert headers.get("retry-after") == "1"
    # Once the other writer is done, the same request goes through.
    status, text, _ = _request(port, "POST", "/memory/remember", b'{"text": "busy http"}',
                               {"Authorization": AUTH, "Content-Type": "application/json"})
    assert status == 200, text


def _remember(port: int, text: str) -> str:
    status, body, _ = _request(port, "POST", "/memory/remember", json.dumps({"text": text}).encode(),
                               {"Authorization": AUTH, "Content-Type": "application/json"})
    assert status == 200, body
    return json.loads(body)["id"]


def _get(port: int, memory_id: str, query: str = "") -> tuple[int, Any]:
    status, text, _ = _request(port, "GET", f"/memory/{memory_id}{query}", headers={"Authorization": AUTH})
    return status, json.loads(text)


def test_a_misspelt_delete_field_is_refused_and_the_memory_left_as_it_was(served: tuple[int, Path]) -> None:
    port, _ = served
    memory_id = _remember(port, "a note meant to be deleted for good")
    status, text, _ = _request(port, "DELETE", f"/memory/{memory_id}?hrad=true", headers={"Authorization": AUTH})
    assert status == 400, text
    assert "unknown field 'hrad' (did you mean 'hard'?)" in json.loads(text)["error"]
    status, memory = _get(port, memory_id)
    assert status == 200 and memory["archived"] is False  # not archived in place of the delete meant
    status, text, _ = _request(port, "DELETE", f"/memory/{memory_id}?id=other", headers={"Authorization": AUTH})
    assert status == 400 and "unknown field 'id'" in json.loads(text)["error"]
    status, text, _ = _request(port, "DELETE", f"/memory/{memory_id}?hard=true", headers={"Authorization": AUTH})
    assert status == 200 and json.loads(text)["hard"] is True, text
    assert _get(port, memory_id)[0] == 404


def test_a_delete_with_a_body_is_refused_and_the_memory_left_as_it_was(served: tuple[int, Path]) -> None:
    """{"hard": true} in the body was read by no one: the memory was archived, not deleted."""
    port, _ = served
    memory_id = _remember(port, "a note meant to be erased")
    status, text, _ = _request(port, "DELETE", f"/memory/{memory_id}", json.dumps({"hard": True}).encode(),
                               {"Authorization": AUTH, "Content-Type": "application/json"})
    assert status == 400 and json.loads(text)["error"] == (
        f"DELETE /memory/{memory_id} takes no body; give hard as ?hard=true"), text
    status, memory = _get(port, memory_id)
    assert status == 200 and memory["archived"] is False
    status, text, _ = _request(port, "DELETE", f"/memory/{memory_id}?hard=true", b"",
                               {"Authorization": AUTH})  # an empty body is no body
    assert status == 200 and json.loads(text)["hard"] is True, text


def test_get_memory_refuses_a_query_field_too(served: tuple[int, Path]) -> None:
    port, _ = served
    memory_id = _remember(port, "a note read back with a stray field")
    status, answer = _get(port, memory_id, "?full=1")
    assert status == 400 and "unknown field 'full'" in answer["error"]
    assert _get(port, memory_id)[0] == 200


def test_a_broken_config_or_model_is_the_servers_fault_503_not_a_bad_request() -> None:
    from remem.engine.embed import EmbedModelError
    from remem.engine.store import StoreBusy
    from remem.errors import ConfigError
    from remem.server_http import error_status

    def raised(cause: BaseException) -> BaseException:
        try:
            raise ValueError("the tool failed") from cause
        except ValueError as exc:
            return exc

    assert error_status(raised(EmbedModelError("/x", "no such folder"))) == 503
    assert error_status(raised(ConfigError("recall.k must be from 1 to 100"))) == 503
    assert error_status(raised(StoreBusy("the memory is busy"))) == 503
    assert error_status(raised(ValueError("k must be a number"))) == 400


def test_an_empty_query_value_is_unset_as_the_documented_form_sends_it(served: tuple[int, Path]) -> None:
    """`?kind=&project=&status=&limit=` (the form docs/MCP.md shows) and `?hard=` were refused:
    '' is no kind, status, number or boolean."""
    port, _ = served
    memory_id = _remember(port, "a note archived with an empty hard field")
    status, text, _ = _request(port, "GET", "/memory/lessons?kind=&project=&status=&limit=",
                               headers={"Authorization": AUTH})
    assert status == 200 and "lessons" in json.loads(text), text
    status, text, _ = _request(port, "DELETE", f"/memory/{memory_id}?hard=", headers={"Authorization": AUTH})
    assert status == 200 and json.loads(text)["hard"] is False, text  # archived, as with no field
    status, memory = _get(port, memory_id)
    assert status == 200 and memory["archived"] is True
    # A field the tool does not take is refused, empty or not.
    status, text, _ = _request(port, "DELETE", f"/memory/{memory_id}?hrad=", headers={"Authorization": AUTH})
    assert status == 400 and "unknown field 'hrad'" in json.loads(text)["error"], text
    status, text, _ = _request(port, "GET", "/memory/lessons?kind=&limti=", headers={"Authorization": AUTH})
    assert status == 400 and "unknown field 'limti'" in json.loads(text)["error"], text


def test_get_memory_over_the_json_api_reads_a_lesson(served: tuple[int, Path]) -> None:
    from remem.engine.lessons import add_lesson
    from remem.engine.store import Store

    port, home = served
    with Store(home / "memory.db") as store:
        lesson = add_lesson(store, "Deploy the shop with the blue profile", "correction")
    status, got = _get(port, lesson["id"])
    assert status == 200 and got["type"] == "lesson" and got["text"] == lesson["text"], got
    status, text, _ = _request(port, "DELETE", f"/memory/{lesson['id']}", headers={"Authorization": AUTH})
    assert status == 400 and json.loads(text)["error"].startswith(f"{lesson['id']} is a lesson, not a memory")


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_body_nested_too_deep_is_a_400_and_the_server_stays_up(served: tuple[int, Path]) -> None:
    """Nested deeper than Python parses, with a lone surrogate (scrubbed first), /mcp answered a
    plain-text 500; /memory/* a plain-text 500 with a traceback. Each is a 400 in JSON now."""
    port, _ = served
    status, text, headers = _request(port, "POST", "/mcp", json.dumps(INIT).encode(),
                                     {**MCP_HEADERS, "Authorization": AUTH})
    assert status == 200, text
    session = {"mcp-session-id": headers["mcp-session-id"]} if "mcp-session-id" in headers else {}
    deep_call = ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"recall",'
                 '"arguments":{"query":"\\ud83d x","k":' + _nested(3000) + '}}}').encode()
    status, text, headers = _request(port, "POST", "/mcp", deep_call, {**MCP_HEADERS, **session, "Authorization": AUTH})
    assert status == 400 and headers["content-type"] == "application/json", (status, text)
    answer = json.loads(text)
    assert answer["id"] == 7 and answer["error"]["code"] == -32600, answer
    assert answer["error"]["message"].startswith("the request has lists or objects nested more than 100 levels")
    for body in ('{"query": "\\ud83d x", "k": ' + _nested(3000) + "}", '{"query": "x", "k": ' + _nested(3000) + "}"):
        status, text, headers = _request(port, "POST", "/memory/recall", body.encode(),
                                         {"Authorization": AUTH, "Content-Type": "application/json"})
        assert status == 400 and headers["content-type"] == "application/json", (status, text)
        assert json.loads(text) == {"error": "the body has lists or objects nested more than 100 levels deep; "
                                             "no remem tool takes more than a list of strings: send flatter JSON"}
    assert _request(port, "GET", "/memory/health", headers={"Authorization": AUTH})[0] == 200
