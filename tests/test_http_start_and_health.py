"""`remem serve --http` and `remem proxy` at start, and what /memory/health promises.

/memory/health says ok only when a call can work (config, memory, model), else the call's own
503 line; the port is held before the start line is printed; an error line keeps its closing
quote over MCP and HTTP; a query field given twice is refused; a body over the cap is refused
whatever the method; a token no HTTP client can send (by the proxy only beyond loopback, where
it is used), and an --upstream with no host or a broken IPv6 address, are refused at start in
one line. Real servers on free ports, a real store, a real MCP client
session, raw HTTP."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, free_port, http_server, run_remem

TOKEN = "start-and-health-5e2b"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env.update({"REMEM_HOME": str(home), "HF_HUB_OFFLINE": "1", "REMEM_TOKEN": TOKEN})
    return env


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(url, REMEM_HOME) of `remem serve --http --no-tasks` on its own fresh home."""
    home = tmp_path / "served-home"
    assert run_remem("remember", "deploys go through the staging profile first",
                     env={"REMEM_HOME": str(home)}).returncode == 0
    with http_server(tmp_path, _env(home), TOKEN, "--no-tasks") as url:
        yield url, home


def _request(url: str, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None, chunked: bool = False) -> tuple[int, dict[str, Any]]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request(method, path, body=iter([body]) if chunked and body is not None else body,
                     headers={**AUTH, **(headers or {})}, encode_chunked=chunked)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        conn.close()


# --------------------------------------------------------------------------- health

def test_health_is_503_with_the_calls_line_once_the_config_no_longer_reads(served: tuple[str, Path]) -> None:
    url, home = served
    assert _request(url, "GET", "/memory/health")[0] == 200
    with open(home / "config.toml", "a") as config:
        config.write("broken = [\n")
    status, recalled = _request(url, "POST", "/memory/recall", b'{"query": "deploy"}')
    assert status == 503 and "config.toml is not valid TOML" in recalled["error"], recalled
    status, health = _request(url, "GET", "/memory/health")
    assert status == 503, health
    assert health == {"status": "error", "error": recalled["error"]}


def test_health_is_503_with_the_calls_line_when_the_model_does_not_load(served: tuple[str, Path]) -> None:
    url, home = served
    missing = home.parent / "no-such-model"
    (home / "config.toml").write_text(f'[embed]\nmodel = "{missing}"\n')
    status, recalled = _request(url, "POST", "/memory/recall", b'{"query": "deploy"}')
    assert status == 503 and str(missing) in recalled["error"], recalled
    status, health = _request(url, "GET", "/memory/health")
    assert status == 503 and health["error"] == recalled["error"], health
    (home / "config.toml").write_text("")  # put right: ok again, without a restart
    assert _request(url, "GET", "/memory/health")[0] == 200


# --------------------------------------------------------------------------- the port

def test_of_two_servers_started_on_one_port_at_once_one_serves_and_one_says_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_remem("remember", "x", env={"REMEM_HOME": str(home)}).returncode == 0
    port = str(free_port())
    command = [sys.executable, "-m", "remem", "serve", "--http", "--port", port, "--no-tasks", "--no-warm"]
    procs = [subprocess.Popen(command, env=_env(home), cwd=str(ROOT), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        # The loser ends on its own; the winner serves until stopped.
        loser, deadline = None, time.monotonic() + 120  # a safety net, not a measure
        while loser is None and time.monotonic() < deadline:
            for proc in procs:
                try:
                    proc.wait(timeout=0.2)
                    loser = proc
                except subprocess.TimeoutExpired:
                    pass
        assert loser is not None, "neither server ended"
        winner = procs[1 - procs.index(loser)]
        out, err = loser.communicate()
        assert loser.returncode == 1, err
        assert err.startswith(f"remem: cannot listen on 127.0.0.1:{port} (") and err.count("\n") == 1, err
        assert "pick another with --port" in err and "serving" not in err + out
        line = winner.stderr.readline()
        assert line.startswith(f"remem: serving http://127.0.0.1:{port}/mcp"), line
        # Said once the port is held: nothing else can take it now.
        with socket.socket() as other:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with pytest.raises(OSError):
                other.bind(("127.0.0.1", int(port)))
                other.listen()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            proc.communicate()


# --------------------------------------------------------------------------- error lines

@pytest.mark.anyio
async def test_an_error_line_keeps_its_closing_quote_over_mcp_http_and_call(served: tuple[str, Path]) -> None:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    url, home = served
    expected = "ttl must be from 1s to 36500d, not '-5d'"
    async with create_mcp_http_client(headers=AUTH) as client_http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=client_http)) as client:
            result = await client.call_tool("remember", {"text": "x", "ttl": "-5d"})
    assert result.is_error
    assert " ".join(getattr(c, "text", "") for c in result.content) == expected
    status, answer = _request(url, "POST", "/memory/remember", b'{"text": "x", "ttl": "-5d"}')
    assert (status, answer) == (400, {"error": expected})
    out = run_remem("call", "remember", '{"text": "x", "ttl": "-5d"}', env={"REMEM_HOME": str(home)})
    assert out.returncode == 1 and out.stderr.strip() == f"remem: {expected}", out.stderr


# --------------------------------------------------------------------------- the query

def test_a_query_field_given_twice_is_refused_by_name(served: tuple[str, Path]) -> None:
    url, home = served
    status, answer = _request(url, "GET", "/memory/lessons?kind=correction&kind=error")
    assert status == 400 and "'kind' more than once" in answer["error"], answer
    status, memory = _request(url, "POST", "/memory/remember", b'{"text": "kept as it is"}')
    assert status == 200
    status, answer = _request(url, "DELETE", f"/memory/{memory['id']}?hard=true&hard=false")
    assert status == 400 and "'hard' more than once" in answer["error"], answer
    status, after = _request(url, "GET", f"/memory/{memory['id']}")
    assert status == 200 and after["archived"] is False  # neither archived nor deleted
    assert _request(url, "GET", "/memory/lessons?kind=correction&limit=")[0] == 200  # once: as before


# --------------------------------------------------------------------------- bodies

@pytest.mark.parametrize("method", ["DELETE", "GET"])
@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_a_body_over_the_cap_is_413_whatever_the_method(served: tuple[str, Path], method: str,
                                                        chunked: bool) -> None:
    from remem.server_http import MAX_BODY_BYTES

    url, _ = served
    status, answer = _request(url, method, "/memory/deadbeef", b"x" * (MAX_BODY_BYTES + 1), chunked=chunked)
    assert status == 413 and "over 2,000,000 bytes" in answer["error"], answer
    status, answer = _request(url, method, "/memory/deadbeef", b'{"hard": true}', chunked=chunked)
    assert status == 400 and "takes no body" in answer["error"], answer  # a small one: as before


# --------------------------------------------------------------------------- tokens

# The proxy asks for its token beyond loopback only (`serve --http` asks for it everywhere).
@pytest.mark.parametrize("command", [["serve", "--http"],
                                     ["proxy", "--upstream", "http://127.0.0.1:9", "--host", "0.0.0.0"]])
@pytest.mark.parametrize("token", ["s3crét", "clé-🔑-7f3a", "tab\tinside"])
def test_a_token_no_http_client_can_send_is_refused_at_start(command: list[str], token: str) -> None:
    res = run_remem(*command, "--port", str(free_port()), env={"REMEM_TOKEN": token}, timeout=60)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stderr.startswith("remem: the token (REMEM_TOKEN or server.token) has a character no "
                                 "HTTP client can send"), res.stderr
    assert res.stderr.count("\n") == 1 and token.strip() not in res.stderr  # one line, no secret shown
    assert "serving" not in res.stderr and "remem proxy on" not in res.stdout


def test_the_proxy_on_loopback_starts_whatever_the_token_it_does_not_use(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env.update({"REMEM_HOME": str(tmp_path / "home"), "REMEM_TOKEN": "tökén"})
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remem", "proxy", "--upstream", "http://127.0.0.1:9",
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=str(ROOT), env=env)
    try:
        line = proc.stdout.readline()  # "" if it stopped instead
        assert line.startswith(f"remem proxy on http://127.0.0.1:{port} -> http://127.0.0.1:9"), \
            line + (proc.stderr.read() if proc.poll() is not None else "")
        assert "token required" not in line
    finally:
        proc.terminate()
        proc.wait(20)
        proc.stdout.close()
        proc.stderr.close()


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_a_token_is_taken_exactly_when_an_http_client_can_send_it(token: str) -> None:
    """Taken: the mcp SDK's HTTP client (httpx) sends it, and the server's check matches it.
    Refused: it holds a character that is not printable ASCII."""
    import httpx2

    from remem.bind import bearer_matches
    from remem.errors import RememError
    from remem.proxy import check_token

    try:
        check_token(token)
    except RememError:
        assert any(not 32 <= ord(c) < 127 for c in token.strip(" \t\n\r\x0b\x0c"))
        return
    header = httpx2.Headers({"Authorization": f"Bearer {token.strip()}"}).raw[0][1]
    assert bearer_matches(header, token)


# --------------------------------------------------------------------------- the proxy's upstream

@pytest.mark.parametrize("upstream", ["http://", "https://", "http://:8080", "http:///v1"])
def test_an_upstream_without_a_host_is_refused_at_start(upstream: str) -> None:
    res = run_remem("proxy", "--upstream", upstream, "--port", str(free_port()), timeout=60)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stderr == f"remem: --upstream {upstream} names no host; give the API's address, " \
                         "e.g. --upstream https://api.openai.com\n"
    assert "remem proxy on" not in res.stdout


@pytest.mark.parametrize("upstream", ["http://[::1", "https://[::1:8080/v1", "http://[not-an-address]", "http://]::1"])
def test_an_upstream_with_a_broken_ipv6_address_is_refused_in_a_line_that_names_the_fix(upstream: str) -> None:
    res = run_remem("proxy", "--upstream", upstream, "--port", str(free_port()), timeout=60)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stderr == f"remem: --upstream {upstream} has no valid address; write an IPv6 address in " \
                         "brackets, e.g. --upstream http://[::1]:8080\n"
    assert "remem proxy on" not in res.stdout
