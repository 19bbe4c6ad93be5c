"""SessionEnd: hand the session's transcript to a detached `remem ingest` and return at once.

Claude Code gives SessionEnd hooks a few seconds (their longest `timeout`; 1.5 s by default) and
Codex 3 s at most, far less than an ingest can take, so the work runs in its own session (it
outlives the hook and the agent) with stdin and stdout on /dev/null and stderr appended to
remem's log, where its one line lands when the session cannot be stored.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any


# The source each agent's transcript is read as, whatever its file is named: Gemini CLI's
# session files are its own chat records, Codex's transcript_path is its rollout. Claude Code's
# is guessed from the name (the guess reads a Claude Code transcript as one).
SOURCES = {"gemini": "chats", "codex": "codex"}


def ingest_command(transcript: str, agent: str | None = None) -> list[str]:
    source = ["--source", SOURCES[agent]] if agent in SOURCES else []
    # -P: `-m` would put the working folder (the agent's project) first on sys.path, and a
    # project holding a remem.py or a remem/ package would run instead of remem.
    return [sys.executable, "-P", "-m", "remem", "ingest", transcript, *source, "--quiet"]


def spawn_ingest(payload: dict[str, Any], agent: str | None = None) -> int | None:
    """Start the detached ingest; returns its pid, or None when there is nothing to read."""
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        raise ValueError("session-end input has no transcript_path; nothing to ingest")
    transcript = Path(path).expanduser()
    if not transcript.is_file():
        if not transcript.exists():
            raise FileNotFoundError(f"transcript {transcript} not found; nothing to ingest")
        # A folder, a device (/dev/zero) or a pipe: there, but nothing an ingest can read.
        raise ValueError(f"transcript {transcript} is not a regular file; nothing to ingest")
    env = dict(os.environ)
    if not env.get("REMEM_HOME", "x").strip():
        # Set but blank: the hooks use ~/.remem, as paths.home() does; the ingest, a command,
        # would refuse it (the command line names that mistake) and the session would be lost.
        del env["REMEM_HOME"]
    from remem.log import append_descriptor, log

    errors = append_descriptor()  # the ingest's one `remem: …` line, when it fails, lands in the log
    kwargs: dict[str, Any] = {
        "stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL if errors is None else errors, "close_fds": True, "env": env,
    }
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:  # pragma: no cover - Windows
        kwargs["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
            subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    try:
        proc = subprocess.Popen(ingest_command(str(transcript), agent), **kwargs)
    finally:
        if errors is not None:
            os.close(errors)  # the child has its own copy
    then = "; should it fail, its `remem: …` line is added below" if errors is not None else ""
    log("hook", f"session-end: ingesting {transcript} in the background (pid {proc.pid}){then}")
    return proc.pid

