"""What the real-agent tests (tests/test_*_real_agent_fake_model.py) share: the scenario each
agent plays, finding the agent's binary, the scratch project and environment it runs in,
running it, and waiting for the detached ingest its SessionEnd hook starts.

Each agent's test keeps what is its own: how its model's requests look, its flags, its
settings and what it prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_hooks import seed

REQUIRE_ENV = "REMEM_REQUIRE_AGENTS"
INGEST_TIMEOUT_S = 120  # the detached ingest, polled

PROMPT = "Install the requests package for this project"
COMMAND = "pip install requests"
HAND_BACK = "Installed requests with pip, and pushed it straight to main with git push --force."
FINAL = "Understood: I will open a pull request instead of force-pushing to main."
# One lesson per hook: the prompt bears on the first (and, at 0.65, on neither other), the
# shell call on the error lesson about its command, the hand-back on the force-push correction.
PROMPT_LESSON = "Use uv, not pip, to install packages"
TOOL_LESSON = ("`pip install` failed here (error: externally-managed-environment); "
               "run `uv pip install` instead.")
STOP_LESSON = "Do not use git push --force on main; open a pull request instead"
LESSONS = [(PROMPT_LESSON, "correction", None), (TOOL_LESSON, "error", None),
           (STOP_LESSON, "correction", None)]


def agent_binary(bin_env: str, command: str, product: str, install: str) -> str:
    """The agent CLI to drive: `$bin_env`, else `command` on PATH; skips (or, with
    REMEM_REQUIRE_AGENTS=1, fails) without one."""
    explicit = os.environ.get(bin_env)
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            pytest.fail(f"{bin_env}={explicit} is not an executable file; point it at the `{command}` "
                        f"binary or unset it")
        return explicit
    found = shutil.which(command)
    if found:
        return found
    reason = f"no {product}: set {bin_env} or put `{command}` on PATH ({install})"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires it")
    pytest.skip(reason)


def session_in_shown_arm() -> str:
    """A UUID (the agents that take a session id take only those) whose session remem primes,
    never holds out."""
    from remem.engine.prime import is_held_out

    for i in range(1000):
        sid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"remem-real-agent-{i}"))
        if not is_held_out(sid):
            return sid
    raise AssertionError("no session id in the shown arm")


def count_in(haystack: Any, needle: str) -> int:
    """How often needle occurs in the JSON text of haystack (needle escaped the same way)."""
    return json.dumps(haystack).count(json.dumps(needle)[1:-1])


def scratch_folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The scratch project, a bin folder with a stand-in `pip`, and a TMPDIR, all made."""
    project, stub_bin, tmp = tmp_path / "shop", tmp_path / "bin", tmp_path / "tmp"
    for folder in (project, stub_bin, tmp):
        folder.mkdir()
    # The model asks for `pip install requests`; the agent runs it for real, so `pip` here is a
    # stand-in that installs nothing.
    (stub_bin / "pip").write_text('#!/bin/sh\necho "stub pip: would run pip $*"\n')
    (stub_bin / "pip").chmod(0o755)
    return project, stub_bin, tmp


def scratch_env(base: dict[str, str], *, drop: tuple[str, ...], stub_bin: Path,
                keep: tuple[str, ...] = (), **settings: str) -> dict[str, str]:
    """base without the variables starting with `drop` (but those named in `keep`), so nothing
    of a real setup of the agent leaks in; then `settings`, and the stand-in `pip` first on PATH."""
    env = {k: v for k, v in base.items() if not k.startswith(drop) or k in keep}
    env.update(settings)
    env["PATH"] = f"{stub_bin}{os.pathsep}{base.get('PATH', '')}"
    return env


def seed_lessons_and_warm_up() -> tuple[int, int, int]:
    """LESSONS in the memory, and the hooks ready to show them; their ids (prompt, tool, stop)."""
    from remem import config
    from remem.engine.embed import get_embedder
    from remem.engine.store import Store

    with Store() as store:
        prompt_id, tool_id, stop_id = (lesson["id"] for lesson in seed(store, LESSONS))
    # A loaded test machine must not turn "shows the lesson" into "gave up at 1 s" (the budget's
    # own behaviour is tested in test_hooks), and the first hook need not build the tokenizer
    # cache while the agent waits.
    config.set_value("prime.timeout_ms", 30000)
    get_embedder().encode_py("warm up")
    return prompt_id, tool_id, stop_id


def run_agent(args: list[str], *, cwd: Path, env: dict[str, str], name: str, timeout_s: int,
              kill_leftovers: bool = False) -> subprocess.CompletedProcess[str]:
    """The agent in its own process group, all of it killed if it outlives timeout_s (its MCP
    server and hooks with it; the detached ingest has a session of its own), and with
    kill_leftovers also once it is done, should anything of it linger."""
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # An empty stdin: these CLIs append whatever they read there to the prompt.
        out, err = proc.communicate(input="", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{name} did not finish in {timeout_s} s; stderr: {err[-2000:]}")
    finally:
        if kill_leftovers:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def ingest_pid(home: Path) -> int | None:
    """The pid of the ingest the session-end hook started, from remem's log."""
    log = home / "logs" / "remem.log"
    found = re.search(r"session-end: ingesting .* \(pid (\d+)\)", log.read_text()) if log.exists() else None
    return int(found.group(1)) if found else None


def running(pid: int) -> bool:
    """Alive and not a zombie (a finished detached child waits as one until its adopter reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return state != "Z"


@pytest.fixture
def no_stray_ingest(home: Path) -> Iterator[None]:
    """The detached ingest never outlives the test, whatever failed before it was waited for."""
    yield
    pid = ingest_pid(home)
    if pid is not None and running(pid):
        os.kill(pid, signal.SIGTERM)


def wait_for_ingest(home: Path, session_id: str) -> list[dict[str, Any]]:
    """The session's episodes once the detached ingest has stored them and exited (bounded)."""
    from remem.engine.store import Store

    deadline = time.monotonic() + INGEST_TIMEOUT_S
    pid = None
    while time.monotonic() < deadline:
        pid = pid or ingest_pid(home)
        if pid is not None and not running(pid):
            break
        time.sleep(0.25)
    else:
        log = home / "logs" / "remem.log"
        pytest.fail(f"the session-end ingest did not finish in {INGEST_TIMEOUT_S} s "
                    f"(pid {pid}); log: {log.read_text() if log.exists() else 'none'}")
    with Store() as store:
        return [dict(r) for r in store.rows("SELECT * FROM episodes WHERE session_id = ?", (session_id,))]
