"""The sample sessions remem ships, and `remem demo` ingesting them in its own folder."""

from __future__ import annotations

import os

from remem import paths
from remem.engine import demo
from remem.engine.ingest import ingest_paths


def test_sample_sessions_hold_what_the_demo_promises(store):
    summary = ingest_paths(store, [demo.SAMPLES / "claude-code"], source="claude-code")
    assert summary["sessions"] == 4 and summary["malformed_lines"] == 0 and summary["errors"] == []
    assert summary["by_kind"] == {"session": 4, "correction": 4, "error": 4, "surprise": 2, "environment": 3}
    corrections = [r["gist"] for r in store.rows("SELECT gist FROM episodes WHERE kind = 'correction' ORDER BY at")]
    # the same correction twice, in other words
    assert corrections[:2] == ["no, we use uv here, not pip", "installs go through uv add in this repo, never pip"]
    # the same error in two sessions: same title, two episodes
    errors = store.rows("SELECT title, count(*) AS n FROM episodes WHERE kind = 'error' GROUP BY title")
    assert sorted(r["n"] for r in errors) == [2, 2]
    envs = {r["title"] for r in store.rows("SELECT title FROM episodes WHERE kind = 'environment'")}
    assert envs == {"version: python 3.12.4", "tool missing: rg"}


def test_demo_ingests_into_its_own_claude_home(tmp_path, home):
    before = os.environ.get("CLAUDE_CONFIG_DIR")
    result = demo.build_demo(tmp_path / "demo")
    assert os.environ.get("CLAUDE_CONFIG_DIR") == before  # the demo sets nothing for the person
    assert not paths.claude_projects_dir().exists()  # the person's (test) Claude home untouched
    copied = list((tmp_path / "demo" / "claude" / "projects").glob("*/*.jsonl"))
    assert len(copied) == 4
    text = "\n".join(result["lines"])
    assert "4 sample sessions ingested" in text
    assert "correction: no, we use uv here, not pip" in text
    assert result["counts"]["sessions"] == 4


def test_the_demo_wins_over_the_agent_homes_the_person_names(tmp_path, home):
    """Someone who sets CLAUDE_CONFIG_DIR and CODEX_HOME (multi-account setups do) and browses
    the demo memory: its paths and its sleep stay in the demo's own agent homes, never theirs."""
    from pathlib import Path

    from tests.conftest import run_remem

    target = tmp_path / "demo"
    demo.build_demo(target)
    real_claude, real_codex = tmp_path / "real-claude", tmp_path / "real-codex"
    real_project = real_claude / "projects" / paths.project_folder_name(demo.DEMO_PROJECT)
    real_project.mkdir(parents=True)  # the demo's project, as if the person had one by that name
    real_codex.mkdir()
    env = {"REMEM_HOME": str(target), "CLAUDE_CONFIG_DIR": str(real_claude), "CODEX_HOME": str(real_codex)}
    res = run_remem("paths", "--json", env=env)
    assert res.returncode == 0, res.stderr
    agent_paths = {k: v for k, v in res.json().items() if k.startswith(("claude_", "codex_")) and k != "claude_desktop"}
    assert len(agent_paths) == 7
    for name, where in agent_paths.items():
        assert Path(where).is_relative_to(target), (name, where)
    res = run_remem("sleep", "-q", "--pass", "render", env=env)
    assert res.returncode == 0, res.stderr
    assert list(real_project.iterdir()) == [] and list(real_codex.iterdir()) == []
