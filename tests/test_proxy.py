"""The proxy against a local server that answers like the OpenAI and Anthropic APIs,
driven by the official `openai` and `anthropic` clients; the address it listens on, and the
requests from a web page (a foreign Host or Origin) it refuses and never records."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fake_llm_api import REPLY, FakeAPI, ServerThread

LESSON = "Use uv, not pip, to install Python packages"
QUESTION = "How should I install the requests package for this project?"


@pytest.fixture
def servers(home: Path):
    from remem import config
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.store import Store
    from remem.proxy import create_app

    home.mkdir(parents=True, exist_ok=True)
    config.set_value("prime.holdout", False)
    embedder = get_embedder()
    with Store() as store:
        lessons.add_lesson(store, LESSON, "correction", sources=["e1"], strength=1.5,
                           space=embedder.space, embedding=to_blob(embedder.encode([LESSON])[0]))
    fake = FakeAPI()
    with ServerThread(fake.app) as upstream, \
            ServerThread(create_app(upstream.url, timeout_s=1.5)) as proxy:
        yield fake, proxy


def _inbox_events(home: Path, wait: float = 5.0) -> list[str]:
    deadline = time.time() + wait
    while time.time() < deadline:
        files = sorted((home / "inbox").glob("*.jsonl"))
        if files:
            return [line for f in files for line in f.read_text().splitlines() if line.strip()]
        time.sleep(0.05)
    return []


def test_openai_client_gets_the_upstream_answer_and_the_lesson_reaches_the_system_prompt(servers, home):
    import openai

    fake, proxy = servers
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test-key", max_retries=0)
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": QUESTION}])
    assert answer.choices[0].message.content == REPLY
    sent = fake.received[-1]["messages"]
    assert sent[0]["role"] == "system" and LESSON in sent[0]["content"]
    assert sent[-1] == {"role": "user", "content": QUESTION}
    assert fake.headers[-1]["authorization"] == "Bearer sk-test-key"
    lines = _inbox_events(home)
    assert any(REPLY in line for line in lines) and any(QUESTION in line for line in lines)


def test_openai_stream_arrives_whole_and_is_recorded(servers, home):
    import openai

    fake, proxy = servers
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
    stream = client.chat.completions.create(model="m", stream=True,
                                            messages=[{"role": "user", "content": QUESTION}])
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == REPLY
    assert any(REPLY in line for line in _inbox_events(home))


def test_anthropic_client_plain_and_streamed(servers):
    import anthropic

    fake, proxy = servers
    client = anthropic.Anthropic(base_url=proxy.url, api_key="ak-test", max_retries=0)
    message = client.messages.create(model="m", max_tokens=50, system="You are terse.",
                                     messages=[{"role": "user", "content": QUESTION}])
    assert message.content[0].text == REPLY
    system = fake.received[-1]["system"]
    assert system.startswith("You are terse.") and LESSON in system
    assert "ak-test" in (fake.headers[-1].get("x-api-key", "") + fake.headers[-1].get("authorization", ""))
    with client.messages.stream(model="m", max_tokens=50,
                                system=[{"type": "text", "text": "Blocks."}],
                                messages=[{"role": "user", "content": QUESTION}]) as stream:
        text = "".join(stream.text_stream)
    assert text == REPLY
    blocks = fake.received[-1]["system"]
    assert blocks[0] == {"type": "text", "text": "Blocks."} and LESSON in blocks[-1]["text"]


def test_memory_header_off_leaves_the_request_untouched(servers):
    import openai

    fake, proxy = servers
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0,
                           default_headers={"x-remem": "off"})
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": QUESTION}])
    assert fake.received[-1]["messages"] == [{"role": "user", "content": QUESTION}]
    assert "x-remem" not in fake.headers[-1]


def test_upstream_errors_and_timeouts_reach_the_client_as_such(servers):
    import openai

    fake, proxy = servers
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
    msgs = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="fail-429", messages=msgs)
    with pytest.raises(openai.InternalServerError) as boom:
        client.chat.completions.create(model="fail-500", messages=msgs)
    assert boom.value.status_code == 500
    with pytest.raises(openai.APIStatusError) as slow:
        client.chat.completions.create(model="slow", messages=msgs)
    assert slow.value.status_code == 504


def test_other_paths_pass_through_untouched(servers):
    import httpx2

    fake, proxy = servers
    reply = httpx2.get(proxy.url + "/v1/models", headers={"authorization": "Bearer z"})
    assert reply.status_code == 200 and reply.json()["data"][0]["id"] == "m"
    responses = httpx2.post(proxy.url + "/v1/responses", json={"model": "m", "input": QUESTION})
    assert responses.json()["output"][0]["content"][0]["text"] == REPLY
    assert LESSON in fake.received[-1]["instructions"]


def test_recorded_exchange_becomes_episodes_on_ingest(servers, home):
    import openai

    from remem.engine import events
    from remem.engine.store import Store

    fake, proxy = servers
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": QUESTION}])
    assert _inbox_events(home)
    with Store() as store:
        events.ingest_inbox(store)
        titles = [r["gist"] + r["title"] for r in store.rows("SELECT title, gist FROM episodes")]
    assert any("install" in t for t in titles)


def test_cli_proxy_on_a_busy_port_is_one_line_and_exit_1_without_claiming_to_run(home):
    """As `remem serve --http` does: the port is tried before anything says the proxy is on."""
    import socket

    from tests.conftest import run_remem

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = run_remem("proxy", "--upstream", "http://127.0.0.1:9", "--port", str(port), timeout=60)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stdout == ""  # no "remem proxy on …" line for a proxy that never listened
    assert res.stderr.startswith(f"remem: cannot listen on 127.0.0.1:{port} (")
    assert "pick another with --port" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_cli_proxy_says_it_is_on_once_it_listens(home):
    import os
    import subprocess
    import sys

    import httpx2

    from tests.conftest import ROOT
    from tests.fake_llm_api import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remem", "proxy", "--upstream", "http://127.0.0.1:9",
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=str(ROOT), env=dict(os.environ))
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"remem proxy on http://127.0.0.1:{port} -> http://127.0.0.1:9"), \
            line + proc.stderr.read() if proc.poll() is not None else line
        # Said only after binding: the port answers from the moment the line is out.
        deadline = time.time() + 20
        while True:
            try:
                health = httpx2.get(f"http://127.0.0.1:{port}/remem/health", timeout=2)
                break
            except httpx2.TransportError:
                assert time.time() < deadline and proc.poll() is None
                time.sleep(0.05)
        assert health.json()["ok"] is True
    finally:
        proc.terminate()
        proc.wait(20)
        proc.stdout.close()
        proc.stderr.close()


# --------------------------------------------------------------------------- who may reach it

def test_the_proxy_checks_its_address_without_loading_the_mcp_server(home: Path) -> None:
    """The bind and token rules live in one module both edges use: `remem proxy` no longer
    imports `remem serve --http`'s module (and mcp with it) to check them."""
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom remem.cli import app\n"
            "r = CliRunner().invoke(app, ['proxy', '--upstream', 'http://127.0.0.1:9', '--host', '0.0.0.0'])\n"
            "print(r.exit_code, 'remem.server_http' in sys.modules, 'mcp' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=str(ROOT),
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.stdout.split() == ["1", "False", "False"], proc.stdout + proc.stderr
    from remem import bind, server_http

    assert server_http.check_bind is bind.check_bind and server_http.from_this_machine is bind.from_this_machine


def _start_proxy(home: Path, upstream_url: str) -> tuple[subprocess.Popen, str]:
    import httpx2

    from tests.fake_llm_api import free_port

    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remem", "proxy", "--upstream", upstream_url, "--port",
                             str(port), "--no-inject"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx2.get(url + "/remem/health").status_code == 200:
                return proc, url
        except httpx2.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(proc.stderr.read().decode())
        time.sleep(0.1)


def _inbox_now(home: Path) -> list[str]:
    """The lines in the inbox now, without waiting for any."""
    return [line for f in sorted((home / "inbox").glob("*.jsonl")) for line in f.read_text().splitlines()
            if line.strip()]


def test_the_proxy_on_loopback_refuses_a_foreign_host_or_origin_and_records_nothing(home: Path) -> None:
    """DNS rebinding: a web page whose name now resolves to 127.0.0.1 makes the browser post to
    the proxy; its Host (or Origin) names the page's site. Refused as `serve --http` refuses it."""
    import httpx2

    from tests.fake_llm_api import REPLY, FakeAPI, ServerThread

    fake = FakeAPI()
    with ServerThread(fake.app) as upstream:
        proc, url = _start_proxy(home, upstream.url)
        try:
            body = {"model": "m", "messages": [{"role": "user", "content": "page-made question"}]}
            port = url.rsplit(":", 1)[1]
            for headers in ({"Host": f"evil.example:{port}"},
                            {"Origin": "http://evil.example"},
                            {"Host": f"127.0.0.1:{port}", "Origin": "https://rebind.evil.example:443"}):
                refused = httpx2.post(f"{url}/v1/chat/completions", json=body, headers=headers)
                assert refused.status_code == 403, (headers, refused.status_code, refused.text)
                assert "this machine" in refused.json()["error"]["message"]
                assert httpx2.get(f"{url}/v1/models", headers=headers).status_code == 403
            assert fake.received == []
            time.sleep(0.5)  # recording runs after the answer: give it the time it would take
            assert _inbox_now(home) == []
            # A local client (its Host is the address it dialled; a local page's Origin is local).
            question = "which installer does this project use?"
            for headers in ({}, {"Origin": "http://localhost:3000"}):
                ok = httpx2.post(f"{url}/v1/chat/completions", headers=headers,
                                 json={"model": "m", "messages": [{"role": "user", "content": question}]})
                assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == REPLY
            deadline = time.time() + 10
            while question not in "".join(_inbox_now(home)) and time.time() < deadline:
                time.sleep(0.05)
            assert question in "".join(_inbox_now(home))
            assert "page-made question" not in "".join(_inbox_now(home))
        finally:
            proc.terminate()
            proc.wait(30)
