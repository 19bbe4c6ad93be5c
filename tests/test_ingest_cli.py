"""`remem ingest` as a person and a script run it."""

from __future__ import annotations

import shutil
from pathlib import Path

from remem import paths

FIX = Path(__file__).parent / "fixtures" / "claude_code"
KEYS = ["files", "skipped", "sessions", "episodes", "by_kind", "malformed_lines", "errors"]


def _projects() -> Path:
    folder = paths.claude_projects_dir() / "-home-dev-projects-shop"
    folder.mkdir(parents=True)
    for name in ("v1_sidechain", "v2_stream", "v2_tools"):
        shutil.copy(FIX / f"{name}.jsonl", folder)
    return folder


def test_ingest_json_real_process(remem_cli):
    _projects()
    first = remem_cli("ingest", "--json")
    assert first.returncode == 0, first.stderr
    data = first.json()
    assert list(data) == KEYS
    assert data["files"] == 3 and data["episodes"] == 23 and data["by_kind"]["correction"] == 3
    again = remem_cli("ingest", "--json").json()
    assert again["skipped"] == 3 and again["episodes"] == 0


def test_ingest_prints_a_summary(cli):
    folder = _projects()
    result = cli("ingest", str(folder / "v2_tools.jsonl"))
    assert result.exit_code == 0, result.output
    assert "episodes added" in result.stdout and "environment" in result.stdout


def test_ingest_quiet_prints_nothing(cli):
    _projects()
    result = cli("ingest", "--quiet")
    assert result.exit_code == 0 and result.stdout == ""


def test_ingest_bad_source_is_one_line(remem_cli):
    result = remem_cli("ingest", "--source", "slack")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("remem: unknown source 'slack'")
    assert "Traceback" not in result.stderr


def test_ingest_with_nothing_to_read(remem_cli):
    result = remem_cli("ingest", "--json")
    assert result.returncode == 0
    assert result.json()["files"] == 0


def test_ingest_an_empty_folder_says_so_in_one_line(cli, tmp_path):
    folder = tmp_path / "nothing-here"
    folder.mkdir()
    result = cli("ingest", str(folder))
    # nothing read, nothing stored, something said: a failure (test_ingest_f8, exit codes)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"remem: no transcripts found in {folder}")


def test_ingest_with_nothing_found_names_only_the_places_the_source_searched(remem_cli):
    claude, codex, inbox = (str(paths.claude_projects_dir()), str(paths.codex_home()),
                            str(paths.inbox_dir()))
    for source, searched in (("codex", codex), ("claude-code", claude), ("events", inbox)):
        res = remem_cli("ingest", "--source", source)
        assert res.returncode == 0, res.stderr
        said = [line for line in res.stderr.splitlines() if "no agent sessions found" in line]
        assert said == [f"remem: no agent sessions found in {searched}; name a file or folder, "
                        "or try `remem demo`"], (source, res.stderr)
    every = remem_cli("ingest")
    assert f"found in {claude}, {codex} or {inbox};" in every.stderr
