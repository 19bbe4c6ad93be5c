"""`remem ingest` as a person and a script run it: what it reads, what it says, its exit codes,
every refused event line in the log, and --events FILE reading that file alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from remem import paths
from tests.test_ingest_sessions import _failing_session, project  # noqa: F401 (project is a fixture)

FIX = Path(__file__).parent / "fixtures" / "claude_code"
KEYS = ["files", "skipped", "reread", "sessions", "episodes", "by_kind", "malformed_lines", "errors"]


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
    # nothing read, nothing stored, something said: a failure (as with event lines, below)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"remem: no transcripts found in {folder}")


def test_ingest_json_that_stores_nothing_says_its_error_on_stdout_and_stderr(cli, tmp_path):
    folder = tmp_path / "nothing-here"
    folder.mkdir()
    result = cli("ingest", str(folder), "--json")
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out["error"].startswith(f"no transcripts found in {folder}") and out["errors"] == [out["error"]]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"remem: {out['error']}"]


def test_ingest_with_nothing_found_names_only_the_places_the_source_searched(remem_cli):
    claude, codex, inbox = (str(paths.claude_projects_dir()), str(paths.codex_home()),
                            str(paths.inbox_dir()))
    gemini = str(paths.gemini_sessions_dir())
    for source, searched in (("codex", codex), ("claude-code", claude), ("events", inbox),
                             ("chats", gemini)):
        res = remem_cli("ingest", "--source", source)
        assert res.returncode == 0, res.stderr
        said = [line for line in res.stderr.splitlines() if "no agent sessions found" in line]
        assert said == [f"remem: no agent sessions found in {searched}; name a file or folder, "
                        "or try `remem demo`"], (source, res.stderr)
    every = remem_cli("ingest")
    assert f"found in {claude}, {codex}, {gemini} or {inbox};" in every.stderr


# --------------------------------------------------------------------------- refused event lines

def _events_file(tmp_path: Path, good: int, bad: int) -> Path:
    lines = [json.dumps({"v": 1, "kind": "note", "text": f"note {n}", "at": "2026-03-01T10:00:00Z"})
             for n in range(good)]
    lines += [json.dumps({"v": 1, "kind": "note", "at": f"not a time {n}"}) for n in range(bad)]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_refused_event_line_is_logged_and_the_message_says_where(cli, tmp_path):
    path = _events_file(tmp_path, good=3, bad=45)
    result = cli("ingest", "--events", str(path))
    assert result.exit_code == 0, result.output  # a partial success: the good lines are stored
    log = paths.log_file()
    assert f"… and 25 more errors (all of them are in {log})" in result.stderr
    logged = [line for line in log.read_text().splitlines() if " ingest " in line and "mixed.jsonl:" in line]
    assert len(logged) == 45


def test_quiet_still_says_in_one_line_that_lines_were_refused(cli, tmp_path):
    path = _events_file(tmp_path, good=3, bad=45)
    result = cli("ingest", "-q", "--events", str(path))
    assert result.exit_code == 0 and result.stdout == ""
    said = [line for line in result.stderr.splitlines() if line.strip()]
    assert said == [f"remem: 45 errors (lines refused or files not read); every one is in {paths.log_file()}"]


def test_nothing_stored_and_lines_refused_exits_1(cli, tmp_path):
    path = _events_file(tmp_path, good=0, bad=4)
    result = cli("ingest", "-q", "--events", str(path))
    assert result.exit_code == 1
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1


# --------------------------------------------------------------------------- --events alone

@pytest.mark.parametrize("args", [
    ("--events", ""),
    ("--events", " "),
    ("--events", "{file}", "--source", "events"),
    ("--events", "{file}", "--source", "codex"),
])
def test_events_reads_nothing_else_or_refuses(cli, tmp_path, args):
    path = _events_file(tmp_path, good=1, bad=0)
    inbox = paths.inbox_dir()
    inbox.mkdir(parents=True)
    (inbox / "waiting.jsonl").write_text(path.read_text())
    result = cli("ingest", *[a.format(file=path) for a in args])
    assert result.exit_code == 1, result.output
    said = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith("remem: --events"), result.stderr
    assert (inbox / "waiting.jsonl").exists()  # the inbox was not read
    assert not paths.db_path().exists() or _count_episodes() == 0


def _count_episodes() -> int:
    from remem.engine.store import Store

    with Store() as s:
        return int(s.scalar("SELECT count(*) FROM episodes"))


def test_events_with_files_named_for_another_source_reads_both(cli, tmp_path, project):
    path = _events_file(tmp_path, good=1, bad=0)
    sid = "66666666-6666-4666-8666-666666666666"
    transcript = project / f"{sid}.jsonl"
    transcript.write_text(_failing_session(sid))
    result = cli("ingest", "--json", "--events", str(path), "--source", "claude-code", str(transcript))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["by_kind"].get("note") == 1


@pytest.mark.parametrize("level", ["home", "tmp", "project"])
def test_a_gemini_cli_folder_named_reads_its_sessions_and_not_its_logs(cli, tmp_path, level):
    """~/.gemini, ~/.gemini/tmp or one project's folder named, with or without --source chats:
    its sessions are read; its logs.json and checkpoints are no conversation, and no error."""
    gemini = tmp_path / "saved" / ".gemini"
    project = gemini / "tmp" / "shopapi"
    (project / "chats").mkdir(parents=True)
    (project / "checkpoints").mkdir()
    (project / ".project_root").write_text("/home/dev/shop-api")
    (project / "chats" / "session-2025-10-03T09-00-7c1e2f3a.json").write_text(json.dumps(
        {"sessionId": "7c1e2f3a-1111-2222-3333-444455556666", "projectHash": "shopapi",
         "startTime": "2025-10-03T09:00:00.000Z", "messages": [
             {"id": "u1", "timestamp": "2025-10-03T09:00:00.000Z", "type": "user", "content": "add a discount"},
             {"id": "g1", "timestamp": "2025-10-03T09:00:05.000Z", "type": "gemini", "content": "Added it."}]}))
    (project / "logs.json").write_text(json.dumps([{"sessionId": "7c1e2f3a", "messageId": 0, "type": "user",
                                                    "message": "add a discount"}]))
    (project / "checkpoints" / "checkpoint-x.json").write_text("[]")
    folder = {"home": gemini, "tmp": gemini / "tmp", "project": project}[level]
    for args in ([], ["--source", "chats"]):
        res = cli("ingest", *args, str(folder), "--json")
        assert res.exit_code == 0, res.output
        summary = json.loads(res.stdout)
        assert summary["errors"] == [] and summary["files"] + summary["skipped"] == 1, summary
    from remem.engine.store import Store

    with Store() as store:
        assert store.scalar("SELECT cwd FROM episodes WHERE kind = 'session'") == "/home/dev/shop-api"
