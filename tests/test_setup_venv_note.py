"""`remem setup` run from a remem inside a virtual environment (a clone's .venv, where the
README's first line installs it) says, in one line, that every hook now points into that venv,
and what keeps remem in place; it still wires everything. The venvs here are real (`python -m
venv`); the `remem` in each is a two-line script that runs this remem, as a console script would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_remem
from tests.test_setup import agents_home  # noqa: F401  (fixture)

WINDSURF = ("--agent", "windsurf", "--no-schedule")


def a_remem_in(folder: Path) -> Path:
    """folder/bin/remem, running this remem."""
    program = folder / "bin" / "remem"
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(f'#!/bin/sh\nexec {sys.executable} -m remem "$@"\n')
    program.chmod(0o755)
    return program


def a_venv_with_remem(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    return a_remem_in(folder)


def setup_from(program: Path, *args: str):
    """`remem setup` as the person runs it: the first `remem` on PATH is that one."""
    return run_remem("setup", *args, env={"PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}"})


def wired_command(agents_home) -> str:
    path = agents_home["user"] / ".codeium" / "windsurf" / "mcp_config.json"
    return json.loads(path.read_text())["mcpServers"]["remem"]["command"]


def test_setup_from_a_venv_says_so_in_one_line_and_still_wires(agents_home, tmp_path):
    venv = tmp_path / "clone" / ".venv"
    program = a_venv_with_remem(venv)
    res = setup_from(program, "--yes", *WINDSURF)
    assert res.returncode == 0, res.stderr
    assert wired_command(agents_home) == str(program)
    said = [l for l in res.stderr.splitlines() if "virtual environment" in l]
    assert len(said) == 1, res.stderr
    assert str(venv) in said[0] and "pipx install" in said[0] and "uv tool install" in said[0]
    assert "virtual environment" not in res.stdout
    # Nothing to write the second time: nothing new points into it, nothing said.
    again = setup_from(program, "--yes", *WINDSURF)
    assert again.returncode == 0 and "remem is wired already" in again.stdout
    assert "virtual environment" not in again.stderr


def test_setup_json_from_a_venv_puts_the_line_in_notes_not_on_stderr(agents_home, tmp_path):
    program = a_venv_with_remem(tmp_path / ".venv")
    res = setup_from(program, "--yes", "--json", *WINDSURF)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert any("virtual environment" in n and str(tmp_path / ".venv") in n for n in out["notes"]), out["notes"]
    assert "virtual environment" not in res.stderr
    dry = setup_from(program, "--dry-run", "--json", *("--agent", "vscode", "--no-schedule"))
    assert any("virtual environment" in n for n in json.loads(dry.stdout)["notes"])


def test_only_a_venv_that_may_go_is_named_pipx_and_uv_tool_ones_by_their_marker_files_written_by_hand(
        agents_home, tmp_path):
    """pipx and `uv tool` keep the program in place, in a venv of their own marked by
    pipx_metadata.json or uv-receipt.toml at its root (written here by hand: neither tool is
    run); a remem in no venv at all is not named either."""
    cases = [(a_venv_with_remem(tmp_path / "clone" / ".venv"), True)]
    for marker in ("pipx_metadata.json", "uv-receipt.toml"):
        venv = tmp_path / marker / "remem"
        cases.append((a_venv_with_remem(venv), False))
        (venv / marker).write_text("{}\n" if marker.endswith(".json") else "[tool]\n")
    cases.append((a_remem_in(tmp_path / "opt"), False))
    for program, named in cases:
        res = setup_from(program, "--yes", *WINDSURF)  # each rewires Windsurf with its own program
        assert res.returncode == 0, res.stderr
        assert wired_command(agents_home) == str(program)
        assert ("virtual environment" in res.stderr) is named, (program, res.stderr)


def test_remove_from_a_venv_says_nothing_of_it(agents_home, tmp_path):
    program = a_venv_with_remem(tmp_path / ".venv")
    wired = setup_from(program, "--yes", *WINDSURF)
    assert wired.returncode == 0 and "virtual environment" in wired.stderr
    res = setup_from(program, "--remove", "--yes", *WINDSURF)
    assert res.returncode == 0, res.stderr
    assert "virtual environment" not in res.stderr
