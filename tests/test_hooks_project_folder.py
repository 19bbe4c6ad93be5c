"""remem starting itself from an agent's project folder runs remem, never the project's code.

Agents run hooks and the MCP server in the project's folder, and `python -m` puts the working
folder first on sys.path: a project holding a remem.py (or a remem/ package) would run in
remem's place, with the person's rights, and the session would silently go unremembered.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SESSION_ID = "33333333-3333-4333-8333-333333333333"  # the one in the transcript below
TRANSCRIPT = ROOT / "tests" / "fixtures" / "claude_code" / "v2_tools.jsonl"


def _project_shadowing_remem(tmp_path: Path, shape: str) -> tuple[Path, Path]:
    """A project folder whose own `remem` (a module or a package) would leave a marker; returns
    (the folder, the marker)."""
    project, marker = tmp_path / "project", tmp_path / "project-code-ran"
    project.mkdir()
    code = f"open({str(marker)!r}, 'w').write('the project ran, not remem')\n"
    if shape == "module":
        (project / "remem.py").write_text(code)
    else:
        (project / "remem").mkdir()
        (project / "remem" / "__init__.py").write_text(code)
        (project / "remem" / "__main__.py").write_text(code)
    return project, marker


def _hook(event: str, payload: dict, project: Path) -> subprocess.CompletedProcess[str]:
    # As the installed `remem` script runs it: its own folder, not the project, is on its path
    # (-P). What the hook then starts is what is tested.
    return subprocess.run([sys.executable, "-P", "-m", "remem", "hook", event], input=json.dumps(payload),
                          capture_output=True, text=True, cwd=str(project), env=dict(os.environ), timeout=120)


@pytest.mark.parametrize("shape", ["module", "package"])
def test_session_end_in_a_project_with_its_own_remem_ingests_with_remem(home, tmp_path, shape):
    from tests.real_agents import ingest_pid, running, wait_for_ingest

    project, marker = _project_shadowing_remem(tmp_path, shape)
    transcript = tmp_path / f"{SESSION_ID}.jsonl"
    transcript.write_bytes(TRANSCRIPT.read_bytes())
    try:
        res = _hook("session-end", {"transcript_path": str(transcript), "session_id": SESSION_ID,
                                    "cwd": str(project), "hook_event_name": "SessionEnd"}, project)
        assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res.stderr
        episodes = wait_for_ingest(home, SESSION_ID)
    finally:  # the detached ingest never outlives the test
        pid = ingest_pid(home)
        if pid is not None and running(pid):
            os.kill(pid, signal.SIGTERM)
    assert not marker.exists(), "the project's remem ran instead of remem's ingest"
    assert episodes, "the session was not ingested"


def test_the_servers_lifecycle_tasks_in_a_project_with_its_own_remem_run_remem(home, tmp_path, monkeypatch):
    from remem import paths
    from remem.server import Background, Memory

    project, marker = _project_shadowing_remem(tmp_path, "module")
    monkeypatch.chdir(project)  # the MCP server runs where the agent started it
    memory = Memory()
    try:
        worker = Background(memory, tasks=True, warm=False)
        worker._run_tasks_once()
    finally:
        memory.close()
    assert not marker.exists(), "the project's remem ran instead of `remem tasks`"
    assert worker.runs == 1
    assert "server.tasks ran" in paths.log_file().read_text()  # remem's report, logged


def test_a_setup_without_a_remem_on_path_wires_hooks_that_run_remem_in_any_project(store, tmp_path, monkeypatch):
    """With no `remem` script to name (run as `python -m remem setup`, its folder not on PATH),
    setup writes this Python running remem into every hook and the MCP server entry."""
    from remem import config
    from remem.engine import setup_edit
    from tests.test_hooks import seed, session_in_arm

    seed(store)
    config.set_value("prime.timeout_ms", 30000)  # a loaded machine must not turn "shows" into "gave up"
    monkeypatch.setenv("REMEM_HOOK_CAP_MS", "60000")  # nor the cap on it (config.HOOK_CAP_ENV)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "remem" / "__main__.py"), "setup"])
    monkeypatch.setenv("PATH", str(tmp_path / "no-remem-here"))
    hook_command = setup_edit.command("hook", "prompt")
    assert shlex.split(hook_command)[0] == str(Path(sys.executable).absolute())  # the fallback, reached
    assert setup_edit.is_ours(hook_command)  # still recognised as remem's (doctor, --remove)

    project, marker = _project_shadowing_remem(tmp_path, "module")
    payload = {"prompt": "build the docker image for the api service", "cwd": str(project),
               "session_id": session_in_arm(False, "fallback")}
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    res = subprocess.run(hook_command, shell=True, input=json.dumps(payload), capture_output=True, text=True,
                         cwd=str(project), env=env, timeout=120)
    assert not marker.exists(), "the project's remem ran instead of remem's hook"
    assert res.returncode == 0, res.stderr
    assert "docker build needs --platform" in json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]


def test_session_end_with_a_blank_REMEM_HOME_ingests_into_the_default_home(home, tmp_path, monkeypatch):
    """The hooks read a blank REMEM_HOME as ~/.remem; the ingest they start is a command, which
    refuses it: it must be started on ~/.remem too, or every session is silently lost."""
    import os
    import signal

    from tests.real_agents import ingest_pid, running, wait_for_ingest
    from tests.test_hooks import CODEX_ROLLOUT, run_hook

    session_id = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
    rollout = tmp_path / f"{session_id}.jsonl"
    rollout.write_bytes(CODEX_ROLLOUT.read_bytes())
    default = home.parent / "user" / ".remem"  # HOME is the test's own
    payload = {"session_id": session_id, "transcript_path": str(rollout), "cwd": "/home/dev/shop",
               "hook_event_name": "SessionEnd", "reason": "other"}
    try:
        res = run_hook("session-end", payload, agent="codex", env={"REMEM_HOME": "  "})
        assert res.returncode == 0 and res.stdout == "", res.stderr
        monkeypatch.setenv("REMEM_HOME", str(default))  # where wait_for_ingest reads the episodes
        episodes = wait_for_ingest(default, session_id)
    finally:  # the detached ingest never outlives the test
        pid = ingest_pid(default)
        if pid is not None and running(pid):
            os.kill(pid, signal.SIGTERM)
    assert episodes and {e["source"] for e in episodes} == {"codex"}
