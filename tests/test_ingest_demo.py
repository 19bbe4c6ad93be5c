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
