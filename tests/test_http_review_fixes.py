"""`remem serve --http` where a review found it wanting: a query field on a POST route (and a
body on GET /memory/lessons) refused rather than read by no one, a loopback name in any case
or with its trailing dot taken as this machine, a body that is not UTF-8 told so, a client
that leaves mid-body costing one log line, and a stop that ends what is still open (a
half-sent request, an MCP session's stream) in a few seconds, saying so, without tracebacks.
Real servers on free ports, a fresh store, raw HTTP and the mcp SDK's own client."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ROOT, free_port, run_remem


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env.update({"REMEM_HOME": str(home), "HF_HUB_OFFLINE": "1"})
    return env


class Served:
    def __init__(self, proc: subprocess.Popen, port: int, home: Path, err: Path) -> None:
        self.proc, self.port, self.home, self.err = proc, port, home, err

    def stop(self) -> str:
        """Stops it (if still running); what it wrote."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.err.read_text()


def _serve(base: Path, *args: str) -> Served:
    """`remem serve --http` on loopback (no token), on a fresh memory; its output in base/http.err."""
    home = base / "home"
    assert run_remem("remember", "deploys go through the staging profile first",
                     env={"REMEM_HOME": str(home)}).returncode == 0
    port = free_port()
    err = base / "http.err"
    with open(err, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--http", "--port", str(port), *args],
                                env=_env(home), cwd=str(ROOT), stdout=out, stderr=out)
    served = Served(proc, port, home, err)
    deadline = time.monotonic() + 60
    while True:
        try:
            if _request(port, "GET", "/memory/health")[0] == 200:
                return served
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(served.stop())
        time.sleep(0.2)


def _request(port: int, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One request with these headers (Host included, when given); the status and the JSON answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        given_headers = dict(headers or {})
        conn.putrequest(method, path, skip_host="Host" in given_headers, skip_accept_encoding=True)
        for name, value in given_headers.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        conn.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    started = _serve(tmp_path_factory.mktemp("http-review"), "--no-tasks", "--no-warm")
    try:
        yield started
    finally:
        started.stop()


def _log(home: Path) -> str:
    path = home / "logs" / "remem.log"
    return path.read_text() if path.exists() else ""


# --------------------------------------------------------------------------- query fields on POST

def test_a_query_field_on_recall_is_refused_not_ignored(served: Served) -> None:
    status, answer = _request(served.port, "POST", "/memory/recall?k=1&bogus=2", b'{"query": "staging"}')
    assert status == 400, answer
    assert answer["error"].startswith("POST /memory/recall takes no query field (got 'k'); "
                                      "give fields in the JSON body")
    status, answer = _request(served.port, "POST", "/memory/recall", b'{"query": "staging", "k": 1}')
    assert status == 200 and len(answer["hits"]) == 1  # in the body, as documented


def test_a_query_field_on_remember_is_refused_and_nothing_is_stored(served: Served) -> None:
    before = _request(served.port, "GET", "/memory/health")[1]["counts"]
    status, answer = _request(served.port, "POST", "/memory/remember?short_term=true&ttl=1h",
                              b'{"text": "a note meant to expire within the hour"}')
    assert status == 400 and "give fields in the JSON body" in answer["error"], answer
    assert _request(served.port, "GET", "/memory/health")[1]["counts"] == before


def test_a_body_on_get_lessons_is_refused_not_ignored(served: Served) -> None:
    status, answer = _request(served.port, "GET", "/memory/lessons", b'{"kind": "error", "limit": 1}')
    assert (status, answer) == (400, {"error": "GET /memory/lessons takes no body; give its fields in the query, "
                                               "e.g. /memory/lessons?kind=error&limit=1"})
    assert _request(served.port, "GET", "/memory/lessons?kind=error&limit=1")[0] == 200
    assert _request(served.port, "GET", "/memory/lessons", b"  ")[0] == 200  # nothing but space: no body


# --------------------------------------------------------------------------- loopback names

@pytest.mark.parametrize("host", ["LOCALHOST", "localhost.", "LocalHost.:{port}", "127.0.0.1.", "[::1]"])
def test_a_loopback_name_in_any_case_or_with_its_trailing_dot_is_this_machine(served: Served, host: str) -> None:
    host = host.format(port=served.port)
    assert _request(served.port, "GET", "/memory/health", headers={"Host": host})[0] == 200
    origin = {"Host": "localhost", "Origin": f"http://{host}"}
    assert _request(served.port, "GET", "/memory/health", headers=origin)[0] == 200


@pytest.mark.parametrize("host", ["evil.example.", "localhost..", "LOCALHOST.evil.example", "localhost.evil."])
def test_another_machine_is_still_refused(served: Served, host: str) -> None:
    status, answer = _request(served.port, "GET", "/memory/health", headers={"Host": host})
    assert status == 403, answer


@given(name=st.sampled_from(["localhost", "127.0.0.1", "::1", "127.8.9.1"]), flips=st.lists(st.booleans()),
       dot=st.booleans(), port=st.one_of(st.none(), st.integers(1, 65535)))
def test_from_this_machine_whatever_the_case_and_a_trailing_dot(name: str, flips: list[bool], dot: bool,
                                                                port: int | None) -> None:
    from remem.bind import from_this_machine

    spelt = "".join(c.upper() if flip else c for c, flip in zip(name, flips + [False] * len(name)))
    host = (f"[{spelt}]" if ":" in spelt else spelt) + ("." if dot and ":" not in spelt else "")
    host += f":{port}" if port else ""
    assert from_this_machine(host, f"https://{host}")


# --------------------------------------------------------------------------- bodies

def test_a_body_that_is_not_utf8_is_told_so(served: Served) -> None:
    status, answer = _request(served.port, "POST", "/memory/recall", '{"query": "café"}'.encode("latin-1"),
                              {"Host": "localhost", "Content-Type": "application/json; charset=latin-1"})
    assert (status, answer) == (400, {"error": "the body is not UTF-8; send UTF-8 JSON"})


def test_a_client_that_leaves_mid_body_costs_one_log_line_not_a_traceback(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port)) as conn:
        conn.sendall(b"POST /memory/recall HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n"
                     b'{"query"')
    deadline = time.monotonic() + 30
    line = "a client left before sending its whole request to /memory/recall"
    while line not in _log(served.home) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _log(served.home).count(line) == 1
    assert _request(served.port, "POST", "/memory/recall", b'{"query": "staging"}')[0] == 200
    output = served.err.read_text()
    assert "Traceback" not in output and "ClientDisconnect" not in output, output


# --------------------------------------------------------------------------- stopping

def _stopped(served: Served, sig: int) -> str:
    """Its output once `sig` stopped it; fails if it does not stop."""
    served.proc.send_signal(sig)
    try:
        served.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        served.proc.kill()
        served.proc.wait()
        raise AssertionError(f"still running 60 s after the signal:\n{served.err.read_text()}") from None
    return served.err.read_text()


@pytest.mark.parametrize("twice", [False, True], ids=["once", "twice"])
def test_ctrl_c_while_a_client_holds_a_half_sent_request_stops_the_server(tmp_path: Path, twice: bool) -> None:
    served = _serve(tmp_path, "--no-tasks", "--no-warm")
    try:
        with socket.create_connection(("127.0.0.1", served.port)) as conn:
            conn.sendall(b"POST /memory/recall HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n"
                         b'{"query"')
            if twice:
                served.proc.send_signal(signal.SIGINT)
                deadline = time.monotonic() + 30
                while "stopping" not in served.err.read_text() and time.monotonic() < deadline:
                    time.sleep(0.05)
            output = _stopped(served, signal.SIGINT)
    finally:
        served.stop()
    assert "remem: stopping… (open requests get 5 s; Ctrl-C again stops now)" in output, output
    assert "Traceback" not in output and "CancelledError" not in output and "ERROR" not in output, output


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-06-18"}


def test_stopping_with_an_mcp_sessions_stream_open_says_so_and_nothing_else(tmp_path: Path) -> None:
    """A client keeps a session's stream of server messages open (GET /mcp) as long as it runs."""
    served = _serve(tmp_path, "--no-tasks", "--no-warm")
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=60)
        conn.request("POST", "/mcp", json.dumps(init), MCP_HEADERS)
        answer = conn.getresponse()
        session = answer.getheader("mcp-session-id")
        answer.read()
        assert answer.status == 200 and session
        conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                     {**MCP_HEADERS, "mcp-session-id": session})
        conn.getresponse().read()
        with socket.create_connection(("127.0.0.1", served.port)) as stream:
            stream.sendall(f"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n"
                           f"mcp-session-id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n".encode())
            assert stream.recv(65536).startswith(b"HTTP/1.1 200")  # the stream is open
            output = _stopped(served, signal.SIGINT)
        conn.close()
    finally:
        served.stop()
    assert "remem: stopping… (open requests get 5 s; Ctrl-C again stops now)" in output, output
    assert "ERROR" not in output and "Traceback" not in output, output
