"""What a new person meets first with setup, doctor and backup: a Gemini CLI settings.json with
comments (Gemini CLI reads them), doctor's exit status when it finds a problem, a backup into a
folder that does not exist, the empty memory folder sleep made left after `setup --remove`, and
"Go ahead?" answered with Ctrl-D or Ctrl-C."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remem import paths
from remem.engine import render_files
from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.setup_json import parse_jsonc
from tests.conftest import answer_remem_in_a_terminal, run_remem
from tests.test_setup import FAKE_CRONTAB, agents_home  # noqa: F401  (agents_home: a fixture)

WIN = ("--yes", "--no-schedule")
GEMINI_WITH_COMMENTS = '{\n // my theme\n "theme": "Dracula" /* dark */\n}\n'


# ------------------------------------------------------------------------------ Gemini CLI's comments

def gemini_settings(text: str) -> Path:
    path = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_gemini_settings_with_comments_is_wired_keeping_them_and_remove_restores_it(cli):
    path = gemini_settings(GEMINI_WITH_COMMENTS)
    dry = cli("setup", "--agent", "gemini", "--no-schedule", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "not valid JSON" not in dry.output and path.read_text() == GEMINI_WITH_COMMENTS

    res = cli("setup", "--agent", "gemini", *WIN)
    assert res.exit_code == 0, res.output
    text = path.read_text()
    assert "// my theme" in text and "/* dark */" in text
    data = parse_jsonc(text)
    assert data["theme"] == "Dracula" and "remem" in data["mcpServers"]
    assert {"BeforeAgent", "AfterAgent", "SessionEnd"} <= set(data["hooks"])
    assert "wired already" in cli("setup", "--agent", "gemini", *WIN).output

    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    gemini = next(a for a in report["agents"] if a["agent"] == "gemini")
    assert gemini["mcp"] and gemini["hooks"]
    assert not any(str(path) in p["problem"] for p in report["problems"])

    assert cli("setup", "--remove", "--agent", "gemini", *WIN).exit_code == 0
    assert path.read_bytes() == GEMINI_WITH_COMMENTS.encode()  # byte for byte


def test_remove_from_gemini_settings_changed_since_takes_out_only_remem_and_keeps_comments(cli):
    path = gemini_settings(GEMINI_WITH_COMMENTS)
    assert cli("setup", "--agent", "gemini", *WIN).exit_code == 0
    # Gemini CLI (or the person) changed the file since: the backup is no restore point now.
    path.write_text(path.read_text().replace('"theme": "Dracula"', '"theme": "Dracula", // mine\n "vimMode": true'))
    assert cli("setup", "--remove", "--agent", "gemini", *WIN).exit_code == 0
    text = path.read_text()
    assert "// my theme" in text and "/* dark */" in text and "// mine" in text
    assert parse_jsonc(text) == {"theme": "Dracula", "vimMode": True}


@pytest.mark.parametrize("text", ['{\n  // mine\n  "theme": "dark",\n  "hooks": {}\n}\n',
                                  '{"theme": "dark", "hooks": {"BeforeTool": []}}\n'])
def test_remove_leaves_empty_hooks_the_person_wrote_where_remem_never_was(cli, text):
    path = gemini_settings(text)
    out = cli("setup", "--remove", "--agent", "gemini", *WIN)
    assert out.exit_code == 0, out.output
    assert path.read_text() == text


def test_remove_takes_out_what_it_emptied_and_keeps_the_persons_empty_event():
    from remem.engine.setup_json import gemini_hooks, set_grouped_hooks, unset_grouped_hooks

    data = {"hooks": {"Notification": []}}
    set_grouped_hooks(data, gemini_hooks())
    assert unset_grouped_hooks(data)
    assert data == {"hooks": {"Notification": []}}


# ------------------------------------------------------------------------------ doctor's exit status

def test_doctor_exits_1_when_it_finds_a_problem_with_or_without_json(cli, store):
    res = cli("doctor", "--json", "--no-run")
    problems = json.loads(res.stdout)["problems"]
    assert problems  # a new memory: no lessons yet, no nightly sleep
    assert res.exit_code == 1
    plain = cli("doctor", "--no-run")
    assert "problems:" in plain.output and plain.exit_code == 1


def test_doctor_exits_0_when_it_finds_none(cli, store, tmp_path, monkeypatch):
    # No agent found, the nightly line in a crontab, one active lesson: nothing to fix.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "crontab").write_text(FAKE_CRONTAB)
    (bin_dir / "crontab").chmod(0o755)
    monkeypatch.setenv("FAKE_CRONTAB_FILE", str(tmp_path / "crontab.txt"))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert cli("setup", "--yes").exit_code == 0
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    res = cli("doctor", "--json", "--no-run")
    assert json.loads(res.stdout)["problems"] == [], res.stdout
    assert res.exit_code == 0
    plain = cli("doctor", "--no-run")
    assert plain.exit_code == 0 and "no problems found" in plain.output


# ------------------------------------------------------------------------------ backup into a missing folder

def test_backup_into_a_folder_that_does_not_exist_is_refused_as_export_is(store, tmp_path):
    missing = tmp_path / "nonexistent" / "dir"
    backup = run_remem("backup", str(missing / "b.db"))
    export = run_remem("export", str(missing / "x.jsonl"))
    for res in (backup, export):
        assert res.returncode == 1
        assert res.stderr.strip() == f"remem: no folder {missing}; create it first or name another file"
    assert not (tmp_path / "nonexistent").exists()  # no folder made on the way
    # A folder named as one (ending in /) is still made, and the folder that exists still works.
    assert run_remem("backup", str(missing) + "/").returncode == 0 and missing.is_dir()
    assert run_remem("backup", str(missing / "b.db")).returncode == 0 and (missing / "b.db").is_file()


# ------------------------------------------------------------------------------ the memory folder sleep made

def claude_project(cwd: str) -> Path:
    """A project's folder as Claude Code makes it: without a memory/ folder of its own."""
    folder = paths.claude_projects_dir() / paths.project_folder_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_remove_deletes_the_empty_memory_folder_sleep_made_and_keeps_every_other(store, cli):
    made = claude_project("/home/u/new") / "memory"  # sleep makes it
    had = claude_project("/home/u/old") / "memory"  # there before sleep wrote in it
    had.mkdir()
    used = claude_project("/home/u/used") / "memory"  # sleep makes it, then the person adds a file
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    res = cli("sleep", "--quiet")
    assert res.exit_code == 0, res.output
    assert all(list(f.glob("remem-*.md")) for f in (made, had, used))
    (used / "notes.md").write_text("mine\n")

    dry = cli("setup", "--remove", "--dry-run", "--no-schedule")
    assert dry.exit_code == 0, dry.output
    assert f"delete {made} " in dry.output and f"delete {had} " not in dry.output
    assert f"delete {used} " not in dry.output and made.is_dir()
    assert json.loads(cli("setup", "--remove", "--dry-run", "--no-schedule", "--json").stdout)[
        "rendered"]["folders"] == [str(made)]

    res = cli("setup", "--remove", *WIN)
    assert res.exit_code == 0, res.output
    assert "1 empty memory folder sleep made" in res.output
    assert not made.exists() and made.parent.is_dir()  # Claude Code's project folder stays
    assert had.is_dir() and list(had.iterdir()) == []
    assert [p.name for p in used.iterdir()] == ["notes.md"]
    # Only the folder still holding the person's file is still known as sleep's.
    assert json.loads(render_files.written_path().read_text())["folders"] == [str(used)]
    # The next sleep makes it again, and knows it made it.
    assert cli("sleep", "--quiet").exit_code == 0 and list(made.glob("remem-*.md"))
    assert cli("setup", "--remove", *WIN).exit_code == 0 and not made.exists()


def test_a_memory_folder_holding_a_veto_not_yet_taken_stays(store, cli):
    """The person deleted the lesson file: a veto, which the next sleep takes only while its
    folder is there, so the remove keeps the folder even though it is empty."""
    made = claude_project("/home/u/new") / "memory"
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    assert cli("sleep", "--quiet").exit_code == 0
    (made / render_files.lesson_filename(lesson["id"])).unlink()
    assert cli("setup", "--remove", *WIN).exit_code == 0
    assert made.is_dir() and list(made.iterdir()) == []
    assert cli("sleep", "--quiet").exit_code == 0
    assert get_lesson(store, lesson["id"])["status"] == "vetoed"


# ------------------------------------------------------------------------------ Ctrl-D and Ctrl-C at "Go ahead?"

SETUP_WINDSURF = ["setup", "--no-schedule", "--agent", "windsurf"]


def test_ctrl_d_at_go_ahead_is_a_no(agents_home):
    windsurf = agents_home["user"] / ".codeium" / "windsurf" / "mcp_config.json"
    before = windsurf.read_bytes()
    code, out, err = answer_remem_in_a_terminal(SETUP_WINDSURF, b"Go ahead?", b"\x04")
    assert code == 0, err
    assert out.decode().rstrip().endswith("nothing changed")
    assert b"Aborted" not in out + err and err == b""
    assert windsurf.read_bytes() == before and not paths.setup_manifest().exists()


def test_ctrl_c_at_go_ahead_says_interrupted_and_exits_130(agents_home):
    windsurf = agents_home["user"] / ".codeium" / "windsurf" / "mcp_config.json"
    before = windsurf.read_bytes()
    code, out, err = answer_remem_in_a_terminal(SETUP_WINDSURF, b"Go ahead?", None)
    assert code == 130, err
    assert err.decode().strip() == "remem: interrupted"
    assert b"Aborted" not in out + err
    assert windsurf.read_bytes() == before and not paths.setup_manifest().exists()
