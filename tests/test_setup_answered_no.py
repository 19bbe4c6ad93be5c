"""Answering no to a confirmation in a terminal (`remem setup`'s "Go ahead?", `remem restore`'s
"Replace the current memory?") is an answer, not an error: one line, "nothing changed", exit 0,
and nothing written. Only stdin is a terminal here (a pseudo-terminal), which is all the
commands ask of one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from remem import paths
from tests.conftest import ROOT
from tests.test_setup import agents_home  # noqa: F401  (fixture)


def answer_in_a_terminal(answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run remem with a terminal on stdin that already holds the answer's line."""
    master, slave = os.openpty()
    try:
        os.write(master, answer.encode() + b"\n")
        return subprocess.run([sys.executable, "-m", "remem", *args], stdin=slave, capture_output=True,
                              text=True, timeout=120, cwd=str(ROOT), env=dict(os.environ))
    finally:
        os.close(slave)
        os.close(master)


def test_no_to_setup_changes_nothing_and_exits_0(agents_home):
    windsurf = agents_home["user"] / ".codeium" / "windsurf" / "mcp_config.json"
    before = windsurf.read_bytes()
    res = answer_in_a_terminal("n", "setup", "--no-schedule", "--agent", "windsurf")
    assert res.returncode == 0, res.stderr
    assert "Go ahead?" in res.stdout and res.stdout.rstrip().endswith("nothing changed")
    assert "Aborted" not in res.stdout + res.stderr and res.stderr == ""
    assert windsurf.read_bytes() == before
    assert not paths.setup_manifest().exists()  # not even the choice of no schedule
    assert not paths.home().exists()  # nor remem's home, nor its log folder
    # The same question answered yes goes ahead: the answer above was read, not skipped.
    res = answer_in_a_terminal("y", "setup", "--no-schedule", "--agent", "windsurf")
    assert res.returncode == 0, res.stderr
    assert "remem" in json.loads(windsurf.read_text())["mcpServers"]


def test_no_to_restore_keeps_the_memory_and_exits_0(store, cli):
    from remem.engine.memories import remember

    remember(store, "the staging database is on port 5433")
    backup = Path(cli("backup").stdout.split("backed up to ", 1)[1].strip())
    remember(store, "the api deploys from the release branch")
    res = answer_in_a_terminal("n", "restore", str(backup))
    assert res.returncode == 0, res.stderr
    assert "Replace the current memory" in res.stdout and res.stdout.rstrip().endswith("nothing changed")
    assert "Aborted" not in res.stdout + res.stderr
    assert not list(paths.db_path().parent.glob("memory.db.before-restore-*"))
    assert store.scalar("SELECT count(*) FROM episodes") == 2  # the later memory is still there
