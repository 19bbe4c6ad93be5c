"""The real `remem proxy` process against a local upstream (standing in for the model APIs the
test machine cannot reach): an --upstream with a base path (`/v1`, Gemini's `/v1beta/openai`,
Azure's deployments, none) still gets memory and records; a client that gives up before a
plain answer has only its question kept; a client that leaves mid-body costs one log line; a
stop with a stream open ends; --upstream is checked as it will be used; and a huge message is
redacted by reading only the part that is kept."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_remem
from tests.fake_llm_api import ServerThread, free_port

ANSWER = "Pin the kafka client to 3.6."
LESSON = "Install Python packages with uv, never pip install."


class Upstream:
    """A raw ASGI app answering each style by the end of its path; `model` "held" waits for
    `release` before a plain answer, "endless" streams until `release`."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.release = threading.Event()

    async def _wait_release(self) -> None:
        while not self.release.is_set():
            await asyncio.sleep(0.02)

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
        self.seen.append({"path": scope["path"], "query": scope["query_string"], "body": body})
        try:
            model = json.loads(body).get("model")
        except (ValueError, AttributeError):
            model = None
        path = scope["path"]
        if model == "endless":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            while not self.release.is_set():
                piece = {"choices": [{"delta": {"content": "more "}}]}
                await send({"type": "http.response.body", "body": f"data: {json.dumps(piece)}\n\n".encode(),
                            "more_body": True})
                await asyncio.sleep(0.05)
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
            return
        if model == "held":
            await self._wait_release()
        if path.endswith("/chat/completions"):
            reply: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": ANSWER}}]}
        elif path.endswith("/messages"):
            reply = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": ANSWER}]}
        elif path.endswith("/responses"):
            reply = {"id": f"resp_{len(self.seen)}", "object": "response", "output": [
                {"type": "message", "content": [{"type": "output_text", "text": ANSWER}]}]}
        else:
            reply = {}
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(reply).encode()})


class Proxy:
    def __init__(self, proc: subprocess.Popen, port: int) -> None:
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> tuple[str, str]:
        """Stops it (if still running); its stdout and stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        out, err = self.proc.communicate(timeout=60)
        return out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _start(upstream_url: str, *flags: str) -> Proxy:
    import httpx2

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remem", "proxy", "--upstream", upstream_url,
                             "--port", str(port), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    proxy = Proxy(proc, port)
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
def upstream() -> Iterator[tuple[Upstream, str]]:
    app = Upstream()
    with ServerThread(app) as server:
        try:
            yield app, server.url
        finally:
            app.release.set()


@pytest.fixture
def lesson(home: Path) -> str:
    """A lesson of no project (the only kind a proxy shows), shown to every conversation."""
    from remem import config
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.store import Store

    home.mkdir(parents=True, exist_ok=True)
    config.set_value("prime.holdout", False)
    emb = get_embedder()
    with Store() as store:
        lessons.add_lesson(store, LESSON, "correction", space=emb.space, embedding=to_blob(emb.encode([LESSON])[0]))
    return LESSON


def _inbox(home: Path, wait: float = 15.0, count: int = 1) -> list[dict[str, Any]]:
    """The events in the inbox, once `count` of them are there (or after `wait`)."""
    deadline = time.time() + wait
    while True:
        files = sorted((home / "inbox").glob("*.jsonl"))
        events = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
        if len(events) >= count or time.time() > deadline:
            return events
        time.sleep(0.05)


def _log(home: Path) -> str:
    path = home / "logs" / "remem.log"
    return path.read_text() if path.exists() else ""


# ------------------------------------------------------------------ an upstream with a base path

def _body(style: str, question: str) -> dict[str, Any]:
    if style == "responses":
        return {"model": "m", "input": question}
    if style == "anthropic":
        return {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": question}]}
    return {"model": "m", "messages": [{"role": "user", "content": question}]}


# (the upstream's base path, the path the client posts to, the style), as each API's usual base URL
# gives them: OPENAI_BASE_URL=https://api.openai.com/v1, ANTHROPIC_BASE_URL with /v1, Gemini's
# OpenAI-compatible /v1beta/openai, an Azure deployment (its api-version in the query), DeepSeek's
# bare /chat/completions.
BASES = {
    "/v1": [("/chat/completions", "openai"), ("/messages", "anthropic"), ("/responses", "responses")],
    "/v1beta/openai/": [("/chat/completions", "openai")],
    "/openai/deployments/gpt-4o": [("/chat/completions?api-version=2024-10-21", "openai")],
    "": [("/chat/completions", "openai")],
}


@pytest.mark.parametrize("base", sorted(BASES))
def test_an_upstream_with_a_base_path_gets_memory_and_the_exchange_is_recorded(
        lesson: str, upstream: tuple[Upstream, str], home: Path, base: str) -> None:
    import httpx2

    app, url = upstream
    proxy = _start(url + base)
    try:
        for n, (path, style) in enumerate(BASES[base]):
            question = f"pip install requests, turn {n} ({style})"
            # Memory is chosen within 2 s; a turn that came before the model loaded goes without
            # it and the conversation's next turn tries again: the same turn is sent until it has it.
            for _ in range(10):
                reply = httpx2.post(proxy.url + path, json=_body(style, question), timeout=60)
                assert reply.status_code == 200, reply.text
                if lesson in app.seen[-1]["body"].decode("utf-8"):
                    break
            sent = app.seen[-1]
            assert sent["path"] == base.rstrip("/") + path.split("?")[0]  # forwarded where it was meant to go
            assert lesson in sent["body"].decode("utf-8"), (base, path)
            events = _inbox(home, count=2 * (n + 1))
            said = [(e["role"], e["text"]) for e in events]
            assert ("user", question) in said and ("assistant", ANSWER) in said, (base, path, said)
    finally:
        proxy.stop()


def test_a_message_added_to_an_assistants_thread_is_not_taken_for_anthropics_messages() -> None:
    from remem.engine.proxying import ANTHROPIC, style_of_path

    assert style_of_path("/v1/threads/thread_abc/messages") is None
    assert style_of_path("/anthropic/v1/messages") == ANTHROPIC


@given(prefix=st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12)
                       .filter(lambda s: s != "threads"), max_size=5),
       endpoint=st.sampled_from([("/chat/completions", "openai"), ("/responses", "responses"),
                                 ("/messages", "anthropic"), ("/models", None), ("/embeddings", None),
                                 ("/completions", None), ("/messages/count_tokens", None)]))
def test_the_style_of_a_path_is_its_endpoint_whatever_comes_before(prefix: list[str], endpoint: Any) -> None:
    from remem.engine.proxying import style_of_path

    path, style = endpoint
    assert style_of_path("".join("/" + p for p in prefix) + path) == style


def test_an_upstream_that_names_an_endpoint_is_warned_of_in_one_line(upstream: tuple[Upstream, str]) -> None:
    _, url = upstream
    proxy = _start(url + "/v1/chat/completions", "--no-inject", "--no-record")
    out, err = proxy.stop()
    assert out.startswith("remem proxy on ")
    warned = [line for line in err.splitlines() if "--upstream" in line]
    assert warned == ["remem proxy: --upstream ends in /chat/completions, an endpoint, and each request's path "
                      f"is added after it; give the API's base URL, e.g. --upstream {url}/v1"], err


# ------------------------------------------------------------------ a client that leaves

def test_a_client_that_gives_up_before_a_plain_answer_has_only_its_question_recorded(
        upstream: tuple[Upstream, str], home: Path) -> None:
    app, url = upstream
    proxy = _start(url + "/v1", "--no-inject")
    try:
        question = "will an answer nobody received be kept?"
        data = json.dumps({"model": "held", "messages": [{"role": "user", "content": question}]}).encode()
        with socket.create_connection(("127.0.0.1", proxy.port)) as conn:
            conn.sendall(b"POST /chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(data) + data)
            while not app.seen:  # the upstream has it, and holds its answer
                time.sleep(0.02)
        time.sleep(0.5)  # the client is gone; then the upstream answers, to no one
        app.release.set()
        assert [(e["role"], e["text"]) for e in _inbox(home)] == [("user", question)]
        assert "only its question is recorded" in _log(home)
    finally:
        proxy.stop()


def test_a_client_that_leaves_mid_body_costs_one_log_line_not_a_traceback(
        upstream: tuple[Upstream, str], home: Path) -> None:
    import httpx2

    app, url = upstream
    proxy = _start(url, "--no-inject")
    try:
        with socket.create_connection(("127.0.0.1", proxy.port)) as conn:
            conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"
                         b'{"model": "m", "mess')
        deadline = time.monotonic() + 30
        while "left before sending its whole request" not in _log(home) and time.monotonic() < deadline:
            time.sleep(0.05)
        reply = httpx2.post(proxy.url + "/v1/chat/completions", json=_body("openai", "still there?"), timeout=60)
        assert reply.status_code == 200
    finally:
        _, err = proxy.stop()
    assert "Traceback" not in err and "ClientDisconnect" not in err, err
    assert _log(home).count("left before sending its whole request to POST /v1/chat/completions") == 1
    assert [json.loads(s["body"])["messages"][0]["content"] for s in app.seen] == ["still there?"]  # nothing half sent


# ------------------------------------------------------------------ stopping

def test_ctrl_c_with_a_stream_open_stops_the_proxy_and_says_so(upstream: tuple[Upstream, str]) -> None:
    app, url = upstream
    proxy = _start(url, "--no-inject", "--no-record")
    data = json.dumps({"model": "endless", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()
    with socket.create_connection(("127.0.0.1", proxy.port)) as conn:
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(data) + data)
        got = b""
        while b"more" not in got:  # the stream is under way
            got += conn.recv(65536)
        proxy.proc.send_signal(signal.SIGINT)
        try:
            out, err = proxy.proc.communicate(timeout=60)  # the stream never ends: the proxy ends it
        except subprocess.TimeoutExpired:
            proxy.proc.kill()
            proxy.proc.communicate()
            raise AssertionError("the proxy did not stop while a stream was open") from None
    out_text, err_text = out.decode(), err.decode()
    assert "remem: stopping…" in out_text, out_text
    assert "Traceback" not in err_text and "CancelledError" not in err_text, err_text


# ------------------------------------------------------------------ --upstream as used

@pytest.mark.parametrize("given_url, said", [
    ("http://exa mple.com", "--upstream 'http://exa mple.com' has a space or a control character in it; remove it"),
    (" https://api.openai.com/v1", "--upstream must be an http:// or https:// URL"),
    ("http://exa\tmple.com", "has a space or a control character in it"),
    ("https://api.openai.com/v1?key=x", "has a query or fragment"),
    ("https://api.openai.com/v1#top", "has a query or fragment"),
    ("http://ex<a>mple.com", "names no valid host"),
])
def test_an_upstream_no_request_could_go_to_is_refused_in_one_line(given_url: str, said: str) -> None:
    res = run_remem("proxy", "--upstream", given_url, "--port", str(free_port()), timeout=60)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stderr.startswith("remem: ") and said in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "remem proxy on" not in res.stdout


def test_an_upstream_scheme_in_capitals_is_taken(upstream: tuple[Upstream, str], home: Path) -> None:
    import httpx2

    app, url = upstream
    proxy = _start(url.replace("http://", "HTTP://") + "/v1", "--no-inject")
    try:
        reply = httpx2.post(proxy.url + "/chat/completions", json=_body("openai", "capitals?"), timeout=60)
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == ANSWER
        assert app.seen[-1]["path"] == "/v1/chat/completions"
    finally:
        out, _ = proxy.stop()
    assert f"-> {url}/v1 " in out


# ------------------------------------------------------------------ a huge message, redacted

def _old_redacted(text: str, limit: int) -> str:
    """What remem.engine.scrub.redacted gave before it read only the kept part (the reference)."""
    from remem.engine.redaction import redact_secrets
    from remem.engine.store import cap

    for _ in range(4):
        again = cap(redact_secrets(text), limit)
        if again == text:
            break
        text = again
    return text


def _key(rng: random.Random) -> str:
    return "sk-" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(rng.randint(16, 40)))


def _filler(rng: random.Random, size: int) -> str:
    words, n = [], 0
    while n < size:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        words.append(word)
        n += len(word) + 1
    return " ".join(words)


@pytest.fixture
def redaction_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text scrub.redacted hands to redaction (the real one, watched)."""
    from remem.engine import scrub

    real, calls = scrub.redact_secrets, []

    def watched(text: str) -> str:
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(scrub, "redact_secrets", watched)
    return calls


def test_a_huge_message_is_redacted_by_reading_only_what_is_kept(redaction_calls: list[int]) -> None:
    from remem.engine import proxying
    from remem.engine.events import MAX_MESSAGE_TEXT
    from remem.engine.scrub import REDACT_MARGIN

    rng = random.Random(7)
    keys = [_key(rng) for _ in range(40)]
    # 5 MB: a pasted log, keys all through it, one straddling the point where the message is cut.
    cut = MAX_MESSAGE_TEXT - 30
    text = _filler(rng, cut - 10) + " " + keys[0] + " " + " ".join(
        _filler(rng, 120_000) + " " + key for key in keys[1:])
    body = {"messages": [{"role": "user", "content": text}]}
    events = proxying.exchange_events(body, proxying.CHAT, "", "2026-01-01T00:00:00Z")
    kept = events[0]["text"]
    assert len(kept) == MAX_MESSAGE_TEXT and kept.endswith("[truncated by remem]")
    assert not re.search(r"[A-Z2-9]{6,}", kept), "a piece of a key was kept"
    assert redaction_calls and max(redaction_calls) <= MAX_MESSAGE_TEXT + REDACT_MARGIN, redaction_calls


def test_a_huge_message_of_keys_is_read_a_bounded_amount_and_keeps_none(redaction_calls: list[int]) -> None:
    """Keys shrink as they are redacted ("[secret]"), so more than the kept part is read, never the whole."""
    from remem.engine.scrub import REDACT_MARGIN, redacted

    rng = random.Random(11)
    text = " ".join(_key(rng) if rng.random() < 0.5 else _filler(rng, 5) for _ in range(200_000))
    limit = 64_000
    kept = redacted(text, limit)
    assert len(kept) <= limit and "[secret]" in kept
    assert not re.search(r"[A-Z2-9]{6,}", kept), "a piece of a key was kept"
    assert sum(redaction_calls) <= 8 * (limit + REDACT_MARGIN) < len(text), redaction_calls


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), limit=st.integers(50, 3000), extra=st.integers(-3000, 20_000),
       places=st.lists(st.integers(-200, 9000), max_size=6))
def test_redacting_before_the_cut_stores_what_redacting_the_whole_stored(
        seed: int, limit: int, extra: int, places: list[int]) -> None:
    """The same words as before, for a text under the limit and over it; a key across the cut or
    just past the part read goes as it did."""
    from remem.engine.scrub import REDACT_MARGIN, redacted

    rng = random.Random(seed)
    text = _filler(rng, max(limit + extra, 1))
    for place in sorted({max(0, limit + p) for p in places}, reverse=True):
        for at in (place, place + REDACT_MARGIN):
            if at < len(text):
                text = text[:at] + " " + _key(rng) + " " + text[at:]
    assert redacted(text, limit) == _old_redacted(text, limit)
