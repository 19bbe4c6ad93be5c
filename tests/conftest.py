"""Every test gets its own REMEM_HOME, Claude/Codex homes and HOME under tmp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private home for remem and for every agent; nothing touches the real one."""
    user = tmp_path / "user"
    user.mkdir()
    rhome = tmp_path / "remem-home"
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("REMEM_HOME", str(rhome))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)  # Claude Code then uses ~/.claude
    monkeypatch.setenv("CODEX_HOME", str(user / ".codex"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("REMEM_NOW", raising=False)
    # A loaded test machine must not turn "shows the lesson" into "gave up at 4 s" where a test
    # sets prime.timeout_ms high; the cap's own tests take this off (tests/test_hook_budget.py).
    monkeypatch.setenv("REMEM_HOOK_CAP_MS", "60000")
    return rhome


@pytest.fixture
def fresh_vector_caches() -> Iterator[None]:
    """Recall's in-process vector caches emptied around a test, so none sees another's."""
    from remem.engine import vectors

    vectors.drop_caches()
    yield
    vectors.drop_caches()


@pytest.fixture
def store(home: Path):
    from remem.engine.store import Store

    with Store() as s:
        yield s


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_remem(*args: str, input: str | None = None, env: dict[str, str] | None = None,
              timeout: float = 120) -> CliResult:
    """Run the real `remem` executable (python -m remem) in a subprocess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "remem", *args], input=input, capture_output=True, text=True,
        env=full_env, timeout=timeout, cwd=str(ROOT),
    )
    return CliResult(proc)


@pytest.fixture
def remem_cli():
    return run_remem


@pytest.fixture
def cli():
    """The typer app in-process (fast); returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from remem.cli import app

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        result = runner.invoke(app, list(args), input=input)
        return result

    return invoke


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def http_server(base: Path, env: dict[str, str], token: str, *args: str) -> Iterator[str]:
    """`remem serve --http` on a free port (its output in base/http.err); yields its URL once
    /memory/health answers 200, and stops it afterwards."""
    import urllib.error
    import urllib.request

    def healthy(url: str) -> bool:
        request = urllib.request.Request(f"{url}/memory/health", headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.status == 200
        except (OSError, urllib.error.HTTPError):
            return False

    port = free_port()
    with open(base / "http.err", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--http", "--port", str(port), *args],
                                env=env, cwd=str(ROOT), stdout=log, stderr=log)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        try:
            while not healthy(url):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((base / "http.err").read_text())
                time.sleep(0.2)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def server_in_process() -> Any:
    """The MCP server built in this process (no background tasks, no warm-up), for the SDK's own
    client to drive through the tools' public arguments."""
    from remem.server import build_server

    return build_server(tasks=False, warm=False)


async def call_tool(client: Any, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    """(ok, the structured result, or the error's text) of one tool call."""
    result = await client.call_tool(name, args)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    return (not result.is_error, text if result.is_error else result.structured_content)


async def call_ok(client: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tool call that must succeed: its structured result (the tool's error text fails the test)."""
    ok, got = await call_tool(client, name, args)
    assert ok, got
    return got


def answer_remem_in_a_terminal(args: list[str], question: bytes, answer: bytes | None) -> tuple[int, bytes, bytes]:
    """`remem ARGS` with a terminal on stdin, answered once it asks `question`: `answer` typed
    (b"\\x04": Ctrl-D on an empty line, the end of input), or None for Ctrl-C (SIGINT, what the
    terminal sends its process). Its exit status, stdout and stderr."""
    import signal

    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "remem", *args],
                            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT),
                            env=dict(os.environ))
    os.close(slave)
    try:
        seen = b""
        while question not in seen:
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, f"remem {' '.join(args)} ended before asking: {seen!r} {proc.stderr.read()!r}"
            seen += chunk
        if answer is None:
            proc.send_signal(signal.SIGINT)
        else:
            os.write(master, answer)
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(master)
    return proc.returncode, seen + out, err
