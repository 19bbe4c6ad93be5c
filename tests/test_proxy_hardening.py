"""The real `remem proxy` process against a local upstream that answers with what broke it:
repeated headers, encoded slashes, replies the recorder could not read."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fake_llm_api import ServerThread, free_port

ANSWER = "Pin the kafka client to 3.6."


class Upstream:
    """A raw ASGI app, so the test controls every header and byte it sends."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.seen.append({"raw_path": scope["raw_path"], "query": scope["query_string"], "headers": headers,
                          "body": body})
        status, out, payload = 200, [(b"content-type", b"application/json")], b"{}"
        if scope["path"] == "/cookies":
            out += [(b"set-cookie", b"a=1; Path=/"), (b"set-cookie", b"b=2; Path=/; HttpOnly"),
                    (b"x-multi", b"one"), (b"x-multi", b"two")]
        elif scope["path"].endswith("/chat/completions"):
            model = json.loads(body).get("model")
            reply = {"choices": [{"message": {"role": "assistant", "content": ANSWER}}]}
            if model == "bad-choices":
                reply = {"choices": ["x"]}
            payload = json.dumps(reply).encode()
            accepted = headers.get("accept-encoding", "")
            if model == "compressed" and "zstd" in accepted:  # what a real API picks when offered
                import zstandard

                payload = zstandard.ZstdCompressor().compress(payload)
                out.append((b"content-encoding", b"zstd"))
            elif model == "compressed" and "gzip" in accepted:
                payload = gzip.compress(payload)
                out.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": payload})


@pytest.fixture
def proxied(home: Path):
    """(upstream, proxy url): `remem proxy` started as a user would, recording, memory off."""
    yield from _proxy(home, "--no-inject")


@pytest.fixture
def injecting(home: Path):
    """(upstream, proxy url): `remem proxy` with memory on."""
    yield from _proxy(home)


def _proxy(home: Path, *flags: str):
    import httpx2

    home.mkdir(parents=True, exist_ok=True)
    upstream = Upstream()
    with ServerThread(upstream) as server:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "remem", "proxy", "--upstream", server.url, "--port", str(port),
             *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx2.get(url + "/remem/health").status_code == 200:
                        break
                except httpx2.TransportError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.1)
            yield upstream, url
        finally:
            proc.terminate()
            proc.wait(30)


def _inbox(home: Path, wait: float = 10.0) -> list[dict[str, Any]]:
    deadline = time.time() + wait
    while time.time() < deadline:
        files = sorted((home / "inbox").glob("*.jsonl"))
        if files:
            return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
        time.sleep(0.05)
    return []


# ------------------------------------------------------------------ 6: response headers

def test_repeated_response_headers_arrive_apart_and_server_and_date_once(proxied):
    import httpx2

    upstream, url = proxied
    reply = httpx2.get(url + "/cookies")
    assert reply.headers.get_list("set-cookie") == ["a=1; Path=/", "b=2; Path=/; HttpOnly"]
    assert reply.headers.get_list("x-multi") == ["one", "two"]
    assert len(reply.headers.get_list("server")) == 1  # the upstream's, not the proxy's as well
    assert len(reply.headers.get_list("date")) == 1
    assert {c.name: c.value for c in reply.cookies.jar} == {"a": "1", "b": "2"}


# ------------------------------------------------------------------ 7: the path as sent

def test_an_encoded_slash_in_the_path_reaches_upstream_encoded(proxied):
    import httpx2

    upstream, url = proxied
    assert httpx2.get(url + "/v1/files/a%2Fb?name=x%2Fy&z=1").status_code == 200
    assert upstream.seen[-1]["raw_path"] == b"/v1/files/a%2Fb"
    assert upstream.seen[-1]["query"] == b"name=x%2Fy&z=1"


# ------------------------------------------------------------------ 8: what is recorded

def test_a_reply_compressed_in_a_coding_the_recorder_cannot_read_is_never_asked_for(proxied, home):
    import httpx2

    upstream, url = proxied
    question = "which kafka client version?"
    reply = httpx2.post(url + "/v1/chat/completions",
                        json={"model": "compressed", "messages": [{"role": "user", "content": question}]},
                        headers={"accept-encoding": "zstd, br, gzip"})
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == ANSWER
    assert "zstd" not in upstream.seen[-1]["headers"]["accept-encoding"]
    texts = [(e["role"], e["text"]) for e in _inbox(home)]
    assert ("user", question) in texts and ("assistant", ANSWER) in texts


def test_a_malformed_answer_still_records_the_question(proxied, home):
    import httpx2

    upstream, url = proxied
    question = "does the malformed answer lose my question?"
    reply = httpx2.post(url + "/v1/chat/completions",
                        json={"model": "bad-choices", "messages": [{"role": "user", "content": question}]})
    assert reply.status_code == 200 and reply.json() == {"choices": ["x"]}  # the client gets it as sent
    assert [(e["role"], e["text"]) for e in _inbox(home)] == [("user", question)]


# ------------------------------------------------------------------ 9: no project behind a proxy

@pytest.fixture
def project_and_general_lessons(home: Path):
    from remem import config
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.store import Store

    home.mkdir(parents=True, exist_ok=True)
    config.set_value("prime.holdout", False)
    emb = get_embedder()
    texts = {"project": ("We use uv here, not pip, to install packages.", "/home/you/code/shop-api"),
             "general": ("Install Python packages with uv, never pip install.", None)}
    with Store() as store:
        for text, cwd in texts.values():
            lessons.add_lesson(store, text, "correction", cwd=cwd, space=emb.space,
                               embedding=to_blob(emb.encode([text])[0]))
    return {k: v[0] for k, v in texts.items()}


def test_a_proxy_knows_no_project_so_it_shows_no_projects_lesson(project_and_general_lessons, injecting):
    """A client behind the proxy may be in any project: a lesson tied to one never reaches it."""
    import httpx2

    upstream, url = injecting
    reply = httpx2.post(url + "/v1/chat/completions",
                        json={"model": "m", "messages": [{"role": "user", "content": "pip install requests"}]})
    assert reply.status_code == 200
    sent = upstream.seen[-1]["body"].decode("utf-8")
    assert project_and_general_lessons["general"] in sent  # memory is on, general lessons come
    assert project_and_general_lessons["project"] not in sent
