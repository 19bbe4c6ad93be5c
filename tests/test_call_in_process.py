"""`remem call` talks to the server `remem serve` runs through a real MCP client session, built
in the calling process: no second Python, no background work, nothing left running; and every
answer and error line is the one a `remem serve` process gives over stdio."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

NOW = "2026-11-20T09:00:00+00:00"


def _remembered(cli: Any, text: str, *tags: str) -> str:
    args = ["remember", text, "--json"]
    for tag in tags:
        args += ["--tag", tag]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["id"]


def test_call_starts_no_process_no_background_work_and_leaves_no_thread(
        home: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.server_background import Background

    _remembered(cli, "the deploy goes through the staging profile first", "deploy")
    started: list[Any] = []

    class NoProcess(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
            started.append(args)
            raise OSError(f"a one-shot call started a process: {args}")

    monkeypatch.setattr(subprocess, "Popen", NoProcess)
    background: list[tuple[bool, bool]] = []
    real_start = Background.start

    def start(self: Background) -> None:
        background.append((self.tasks, self.warm))
        real_start(self)

    monkeypatch.setattr(Background, "start", start)
    threads_before = set(threading.enumerate())

    result = cli("call", "recall", '{"query": "which profile does the deploy use", "k": 2}')

    assert started == []
    assert result.exit_code == 0, result.stderr
    assert "staging profile" in result.stdout
    assert background == [(False, False)]  # the real server's lifespan ran, with no tasks, no warm-up
    left = [t for t in threading.enumerate() if t not in threads_before]
    for thread in left:  # the SDK's worker threads are told to stop when the call ends
        thread.join(timeout=60)
    assert [t.name for t in left if t.is_alive()] == []


# A `remem call` whose recall tool breaks outside the tool's own error handling, so the SDK
# logs the exception with its traceback (to stderr, in a process that has not set up logging).
BROKEN_RECALL = """
import sys
import remem.server_tools

def broken(tool, value):
    raise RuntimeError("the answer could not be built")

remem.server_tools._answer = broken
from remem.cli import run

sys.argv = ["remem", "call", "recall", '{"query": "note"}']
run()
"""


def test_a_server_side_traceback_stays_out_of_the_one_error_line(home: Path, cli: Any) -> None:
    _remembered(cli, "a note to recall")
    proc = subprocess.run([sys.executable, "-c", BROKEN_RECALL], capture_output=True, text=True,
                          env=dict(os.environ), cwd=str(ROOT), timeout=120)
    assert proc.returncode == 1 and json.loads(proc.stdout) == {"error": proc.stderr.strip().removeprefix("remem: ")}
    assert proc.stderr == "remem: Error executing tool recall\n", proc.stderr


def _stdio_answers(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, Any]]:
    """Each call's (ok, structured result or error text) from one SDK client session against
    a `remem serve --no-tasks --no-warm` process over stdio, in order. Lone surrogates are sent
    as U+FFFD: JSON over stdio cannot carry them."""
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from remem.server_stdio import scrub

    async def run() -> list[tuple[bool, Any]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "remem", "serve", "--no-tasks", "--no-warm"],
                                       env=dict(os.environ), cwd=str(ROOT))
        answers = []
        with open(os.devnull, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                for name, args in calls:
                    result = await client.call_tool(name, scrub(args))
                    text = " ".join(getattr(c, "text", "") for c in result.content)
                    answers.append((not result.is_error, text if result.is_error else result.structured_content))
        return answers

    return anyio.run(run)


def test_call_prints_what_a_remem_serve_process_answers_over_stdio(
        home: Path, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.commands._out import json_text

    monkeypatch.setenv("REMEM_NOW", NOW)  # both memories live the same calls at the same time
    first = _remembered(cli, "use uv, not pip, to install packages in this repo", "python")
    second = _remembered(cli, "the deploy goes through the staging profile first", "deploy")
    assert cli("connect", first, second, "--type", "related_to").exit_code == 0
    over_stdio, in_process = tmp_path / "over-stdio", tmp_path / "in-process"
    shutil.copytree(home, over_stdio)
    shutil.copytree(home, in_process)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("recall", {"query": "how do I install packages", "k": 2}),
        ("search", {"query": "deploy", "mode": "keyword"}),
        ("get_memory", {"id": first}),
        ("traverse", {"id": first}),
        ("lessons", {}),
        ("context", {"prompt": "pip install requests"}),
        ("get_memory", {"id": "nowhere-id"}),
        ("remember", {"text": "x", "importance": 7}),
        ("remember", {}),
        ("recall", {"qeury": "packages"}),
        ("search", {"query": "x", "since": "last tuesday"}),
        ("no_such_tool", {}),
        ("update_memory", {"id": second, "title": "deploys: staging first"}),
        ("delete_memory", {"id": first}),
        ("remember", {"text": "half an emoji \ud83d here", "tags": ["cli"]}),
    ]

    monkeypatch.setenv("REMEM_HOME", str(over_stdio))
    expected = _stdio_answers(calls)
    monkeypatch.setenv("REMEM_HOME", str(in_process))
    assert sum(ok for ok, _ in expected) == 9, expected  # the errors are errors, the rest answers
    for (name, args), (ok, answer) in zip(calls, expected):
        result = cli("call", name, json.dumps(args))
        if not ok:
            hint = " (`remem tools` lists them)" if answer.startswith("Unknown tool") else ""
            # call's output is JSON: its error is {"error": …} on stdout too, the line on stderr.
            assert (result.exit_code, json.loads(result.stdout), result.stderr) == (
                1, {"error": f"{answer}{hint}"}, f"remem: {answer}{hint}\n"), name
            continue
        assert result.exit_code == 0, (name, result.stderr)
        printed = result.stdout
        if name == "remember":  # a new memory's id is drawn at random on each side
            printed = printed.replace(json.loads(printed)["id"], answer["id"])
        assert printed == json_text(answer, indent=2) + "\n", name
