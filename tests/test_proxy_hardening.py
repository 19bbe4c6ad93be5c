"""The real `remem proxy` process against a local upstream that answers with what broke it:
repeated headers, encoded slashes, replies the recorder could not read."""

from __future__ import annotations

import asyncio
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
        self.answered = 0

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
        elif scope["path"] == "/sized":
            out.append((b"content-length", b"2"))
        elif scope["path"].endswith("/responses"):
            self.answered += 1
            payload = json.dumps({"id": f"resp_{self.answered}", "object": "response", "output": [
                {"type": "message", "content": [{"type": "output_text", "text": ANSWER}]}]}).encode()
        elif scope["path"].endswith("/chat/completions"):
            try:
                model = json.loads(body).get("model")
            except (ValueError, RecursionError):
                model = None
            if model == "trickle":  # a long streamed answer, a piece at a time
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-type", b"text/event-stream")]})
                for _ in range(40):
                    piece = {"choices": [{"delta": {"content": "partial "}}]}
                    await send({"type": "http.response.body", "body": f"data: {json.dumps(piece)}\n\n".encode(),
                                "more_body": True})
                    await asyncio.sleep(0.05)
                await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
                return
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


# ------------------------------------------------------------------ response headers

def test_repeated_response_headers_arrive_apart_and_server_and_date_once(proxied):
    import httpx2

    upstream, url = proxied
    reply = httpx2.get(url + "/cookies")
    assert reply.headers.get_list("set-cookie") == ["a=1; Path=/", "b=2; Path=/; HttpOnly"]
    assert reply.headers.get_list("x-multi") == ["one", "two"]
    assert len(reply.headers.get_list("server")) == 1  # the upstream's, not the proxy's as well
    assert len(reply.headers.get_list("date")) == 1
    assert {c.name: c.value for c in reply.cookies.jar} == {"a": "1", "b": "2"}


# ------------------------------------------------------------------ the path as sent

def test_an_encoded_slash_in_the_path_reaches_upstream_encoded(proxied):
    import httpx2

    upstream, url = proxied
    assert httpx2.get(url + "/v1/files/a%2Fb?name=x%2Fy&z=1").status_code == 200
    assert upstream.seen[-1]["raw_path"] == b"/v1/files/a%2Fb"
    assert upstream.seen[-1]["query"] == b"name=x%2Fy&z=1"


# ------------------------------------------------------------------ what is recorded

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


# ------------------------------------------------------------------ no project behind a proxy

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


# ------------------------------------------------------------------ bodies memory cannot handle

BODY_START = '{"model":"m","messages":[{"role":"user","content":"pip install requests'


BODIES = {
    # Valid JSON that Python reads as a lone surrogate, which UTF-8 cannot hold.
    "lone surrogate": lambda: BODY_START + ' \\ud800"}]}',
    # Deeper than the JSON reader goes (RecursionError, not ValueError).
    "deep nesting": lambda: BODY_START + '"}],"x":' + "[" * 100_000 + "]" * 100_000 + "}",
    # Read as infinity; written again it would be `Infinity`, which is not JSON.
    "1e999": lambda: BODY_START + '"}],"temperature":1e999}',
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_body_memory_cannot_be_added_to_goes_upstream_as_sent_against_a_fake_upstream(
        project_and_general_lessons, injecting, name):
    import httpx2

    raw = BODIES[name]()
    upstream, url = injecting
    sent = raw.encode("utf-8")
    reply = httpx2.post(url + "/v1/chat/completions", content=sent,
                        headers={"content-type": "application/json"}, timeout=30)
    assert reply.status_code == 200, (name, reply.text)
    assert upstream.seen[-1]["body"] == sent  # byte for byte, no memory added, never a 500


def test_a_lone_surrogate_in_a_question_is_still_recorded_against_a_fake_upstream(proxied, home):
    import httpx2

    upstream, url = proxied
    raw = BODY_START.encode() + b' \\ud800 once"}]}'
    reply = httpx2.post(url + "/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert reply.status_code == 200
    texts = [(e["role"], e["text"]) for e in _inbox(home)]
    assert ("user", "pip install requests ? once") in texts and ("assistant", ANSWER) in texts


# ------------------------------------------------------------------ headers as the upstream sent them

def test_head_and_a_plain_answer_keep_the_upstreams_content_length_against_a_fake_upstream(proxied):
    import httpx2

    upstream, url = proxied
    head = httpx2.head(url + "/sized")
    assert head.headers.get("content-length") == "2" and "transfer-encoding" not in head.headers
    got = httpx2.get(url + "/sized")
    assert got.headers.get("content-length") == "2" and "transfer-encoding" not in got.headers
    assert got.content == b"{}"


# ------------------------------------------------------------------ a client that leaves mid-answer

def test_a_client_that_leaves_mid_stream_has_no_partial_answer_recorded_against_a_fake_upstream(proxied, home):
    import socket

    upstream, url = proxied
    question = "will the cut-short answer be kept as the answer?"
    body = json.dumps({"model": "trickle", "stream": True,
                       "messages": [{"role": "user", "content": question}]}).encode()
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        assert b"partial" in conn.recv(4096) + conn.recv(4096)
    # The question is kept; the half answer the client never finished reading is not.
    assert [(e["role"], e["text"]) for e in _inbox(home)] == [("user", question)]


# ------------------------------------------------------------------ Responses turns chained by id

def test_responses_turns_chained_by_previous_response_id_are_one_conversation_against_a_fake_upstream(
        project_and_general_lessons, injecting, home):
    import httpx2

    upstream, url = injecting
    first = httpx2.post(url + "/v1/responses", json={"model": "m", "input": "pip install requests"})
    first_id = first.json()["id"]
    assert project_and_general_lessons["general"] in json.loads(upstream.seen[-1]["body"])["instructions"]
    # The next turn carries only its new input: without the chain it would be a new conversation
    # (its own memory choice, from a question no lesson bears on, and its own recorded session).
    second = httpx2.post(url + "/v1/responses", json={"model": "m", "input": "thanks, and what day is it?",
                                                      "previous_response_id": first_id})
    assert second.status_code == 200
    sent = json.loads(upstream.seen[-1]["body"])
    assert project_and_general_lessons["general"] in sent["instructions"]
    httpx2.post(url + "/v1/responses", json={"model": "m", "input": "thanks, and what day is it?",
                                             "previous_response_id": second.json()["id"]})
    deadline = time.time() + 10
    while time.time() < deadline:
        found = _inbox(home)
        if len([e for e in found if e["role"] == "user"]) == 3:
            break
        time.sleep(0.05)
    # Recorded after each answer on a worker thread, the files may land in any order; each
    # turn is dated when its request arrived, which is the order ingest reads them in.
    users = sorted((e for e in found if e["role"] == "user"), key=lambda e: e["at"])
    assert [e["text"] for e in users] == ["pip install requests", "thanks, and what day is it?",
                                          "thanks, and what day is it?"]
    assert len({e["session"] for e in found}) == 1  # one conversation
    assert len({e["id"] for e in found}) == len(found) == 6  # the same words twice are two turns
