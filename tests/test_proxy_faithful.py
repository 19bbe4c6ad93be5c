"""The real `remem proxy` process against an upstream that answers over a raw socket, so the
test sees every header that reaches it and can break an answer off mid-way: the proxy adds
nothing of its own to a request (no cookie it kept, no default header), an answer the upstream
breaks off reaches the client cut short and leaves only its question recorded, and what it
records holds no secret and no turn twice."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.fake_llm_api import free_port

ANSWER = "Pin the kafka client to 3.6."
API_KEY = "sk-proj-Qw3rTy7UiOp9AsDfGh2JkL5zXc"
API_KEY_WORD = "Qw3rTy7UiOp9AsDfGh2JkL5zXc"


class RawUpstream(BaseHTTPRequestHandler):
    """Answers by path and model; keeps each request's headers (as sent, in order) in `seen`."""

    protocol_version = "HTTP/1.1"
    seen: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(size) if size else b""
        self.seen.append({"path": self.path, "headers": [(k.lower(), v) for k, v in self.headers.items()],
                          "body": body})
        try:
            model = json.loads(body).get("model") if body else None
        except ValueError:
            model = None
        if self.path == "/cookie":
            self._send(b"{}", [("Set-Cookie", "sid=from-upstream; Path=/")])
        elif model == "cut-stream":  # two events of a stream, then the connection goes
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in ("Hel", "lo "):
                event = f"data: {json.dumps({'choices': [{'delta': {'content': piece}}]})}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self._cut()
        elif model == "cut-body":  # half the bytes its Content-Length promises
            payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": ANSWER}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self._cut()
        elif self.path.endswith("/chat/completions"):
            self._send(json.dumps({"choices": [{"message": {"role": "assistant", "content": ANSWER}}]}).encode())
        else:
            self._send(b"{}")

    def _send(self, payload: bytes, headers: list[tuple[str, str]] = ()) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _cut(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    do_GET = do_POST = _answer


@pytest.fixture
def upstream() -> Iterator[tuple[list[dict[str, Any]], str]]:
    seen: list[dict[str, Any]] = []
    handler = type("Handler", (RawUpstream,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class Proxy:
    def __init__(self, proc: subprocess.Popen, url: str) -> None:
        self.proc, self.url = proc, url
        self.port = int(url.rsplit(":", 1)[1])

    def stop(self) -> str:
        """Stops it; its stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return err.decode("utf-8", "replace")


def _start(home: Path, upstream_url: str, *flags: str) -> Proxy:
    import httpx2

    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remem", "proxy", "--upstream", upstream_url,
                             "--port", str(port), *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
    proxy = Proxy(proc, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx2.get(proxy.url + "/remem/health").status_code == 200:
                return proxy
        except httpx2.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(proxy.stop())
        time.sleep(0.1)


@pytest.fixture
def proxy(home: Path, upstream) -> Iterator[tuple[list[dict[str, Any]], Proxy]]:
    """(what the upstream saw, the proxy): recording, memory off."""
    seen, url = upstream
    started = _start(home, url, "--no-inject")
    try:
        yield seen, started
    finally:
        started.stop()


def _raw(port: int, request: bytes) -> bytes:
    """Everything the proxy sends back on one connection, until it closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request)
        out = b""
        while chunk := conn.recv(65536):
            out += chunk
    return out


def _post(path: str, body: dict[str, Any], *headers: str) -> bytes:
    """A request with only the headers given (and Host, Content-Length, Connection: close)."""
    data = json.dumps(body).encode()
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(data)}", "Connection: close",
             *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def _inbox_files(home: Path, count: int, wait: float = 10.0) -> list[list[dict[str, Any]]]:
    """The events of each inbox file, in the order written, once there are `count` files."""
    deadline = time.time() + wait
    while True:
        files = sorted((home / "inbox").glob("*.jsonl"))
        if len(files) >= count or time.time() > deadline:
            return [[json.loads(line) for line in f.read_text().splitlines() if line.strip()] for f in files]
        time.sleep(0.05)


def _names(seen: dict[str, Any]) -> list[str]:
    return [name for name, _ in seen["headers"]]


# ------------------------------------------------------------------ nothing of the proxy's own

def test_a_cookie_the_upstream_set_never_goes_back_upstream(proxy):
    import httpx2

    seen, started = proxy
    first = httpx2.get(started.url + "/cookie")
    assert first.headers.get("set-cookie") == "sid=from-upstream; Path=/"  # the client's to keep
    httpx2.get(started.url + "/v1/models")
    assert "cookie" not in _names(seen[-1])  # not kept by the proxy for every later client
    httpx2.get(started.url + "/v1/models", headers={"cookie": "mine=1"})
    assert [v for k, v in seen[-1]["headers"] if k == "cookie"] == ["mine=1"]  # the client's alone, once


def test_a_request_without_accept_encoding_or_user_agent_reaches_upstream_without_them(proxy, home):
    seen, started = proxy
    question = "which kafka client version?"
    reply = _raw(started.port, _post("/v1/chat/completions",
                                     {"model": "m", "messages": [{"role": "user", "content": question}]},
                                     "Content-Type: application/json"))
    assert reply.startswith(b"HTTP/1.1 200") and ANSWER.encode() in reply  # plain JSON, as from upstream
    assert not {"accept-encoding", "user-agent", "accept"} & set(_names(seen[-1]))
    # A client that does say what it reads still has it narrowed to what the recorder reads.
    _raw(started.port, _post("/v1/chat/completions",
                             {"model": "m", "messages": [{"role": "user", "content": question}]},
                             "Content-Type: application/json", "Accept-Encoding: zstd, br, gzip"))
    assert [v for k, v in seen[-1]["headers"] if k == "accept-encoding"] == ["gzip"]


# ------------------------------------------------------------------ an answer broken off

@pytest.mark.parametrize("model", ["cut-stream", "cut-body"])
def test_an_answer_the_upstream_breaks_off_reaches_the_client_cut_and_only_its_question_is_kept(
        home, upstream, model):
    seen, url = upstream
    started = _start(home, url, "--no-inject")
    try:
        question = f"will the {model} answer be kept?"
        body = {"model": model, "stream": model == "cut-stream",
                "messages": [{"role": "user", "content": question}]}
        reply = _raw(started.port, _post("/v1/chat/completions", body, "Content-Type: application/json"))
        head, _, rest = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        if model == "cut-stream":
            # The events that came, and no last chunk: the client knows the answer is not whole.
            assert b"Hel" in rest and b"lo " in rest and not rest.endswith(b"0\r\n\r\n")
        else:
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            assert 0 < len(rest) < length
        assert [[(e["role"], e["text"]) for e in f] for f in _inbox_files(home, 1)] == [[("user", question)]]
    finally:
        err = started.stop()
    assert "traceback" not in err.lower() and "error" not in err.lower(), err  # one line, in remem.log
    assert "the upstream broke off its answer" in (home / "logs" / "remem.log").read_text()


# ------------------------------------------------------------------ what is recorded

def test_a_later_turn_of_a_conversation_writes_its_exchange_and_the_one_before_not_the_whole(proxy, home):
    import httpx2

    seen, started = proxy
    first = [{"role": "user", "content": "which kafka client version?"}]
    httpx2.post(started.url + "/v1/chat/completions", json={"model": "m", "messages": first})
    assert len(_inbox_files(home, 1)) == 1
    second = [*first, {"role": "assistant", "content": ANSWER}, {"role": "user", "content": "and the broker?"}]
    httpx2.post(started.url + "/v1/chat/completions", json={"model": "m", "messages": second})
    third = [*second, {"role": "assistant", "content": ANSWER}, {"role": "user", "content": "and zookeeper?"}]
    httpx2.post(started.url + "/v1/chat/completions", json={"model": "m", "messages": third})
    files = _inbox_files(home, 3)
    # Each file from the person's turn before the new ones (a correction is read against the
    # answer it pushes back on), never the whole history again.
    assert [[(e["role"], e["text"]) for e in f] for f in files] == [
        [("user", "which kafka client version?"), ("assistant", ANSWER)],
        [("user", "which kafka client version?"), ("assistant", ANSWER), ("user", "and the broker?"),
         ("assistant", ANSWER)],
        [("user", "and the broker?"), ("assistant", ANSWER), ("user", "and zookeeper?"), ("assistant", ANSWER)],
    ]
    assert len({e["session"] for f in files for e in f}) == 1


@pytest.fixture
def lesson(home: Path) -> str:
    """A lesson without a project that a question about installing packages bears on."""
    from remem import config
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.store import Store

    home.mkdir(parents=True, exist_ok=True)
    config.set_value("prime.holdout", False)
    text = "Install Python packages with uv, never pip install."
    emb = get_embedder()
    with Store() as store:
        lessons.add_lesson(store, text, "correction", space=emb.space, embedding=to_blob(emb.encode([text])[0]))
    return text


def test_a_key_in_a_proxied_conversation_is_nowhere_in_the_memory_after_ingest(lesson, upstream, home):
    """Not in the inbox, not in what ingest keeps of it (inbox/done/), not in the lesson
    choice's logged query, not in the database."""
    import httpx2

    from tests.conftest import run_remem

    seen, url = upstream
    started = _start(home, url)
    try:
        question = f"pip install requests fails with my key {API_KEY}, why?"
        for messages in ([{"role": "user", "content": question}],
                         [{"role": "user", "content": question}, {"role": "assistant", "content": ANSWER},
                          {"role": "user", "content": f"the password=Zq8vLm2RxPelican and {API_KEY} again"}]):
            reply = httpx2.post(started.url + "/v1/chat/completions", json={"model": "m", "messages": messages},
                                timeout=60)
            assert reply.status_code == 200
        assert lesson in seen[0]["body"].decode()  # memory went in, so a choice was logged
        assert len(_inbox_files(home, 2)) == 2
    finally:
        started.stop()
    done = run_remem("ingest", "--json")
    assert done.returncode == 0, done.stderr
    assert list((home / "inbox" / "done").glob("*.jsonl"))
    from remem.engine.store import Store

    with Store() as store:
        queries = [r["query"] for r in store.rows("SELECT query FROM primes")]
        said = [r["gist"] for r in store.rows("SELECT gist FROM episodes")]
    assert queries and any("[secret]" in q for q in queries)
    assert any("[secret]" in g for g in said)
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert API_KEY_WORD.encode() not in data and b"Zq8vLm2RxPelican" not in data, path
