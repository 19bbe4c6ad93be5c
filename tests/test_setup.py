"""remem setup / doctor / context against a fake HOME holding every agent's real-looking config."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import run_remem

CODEX_TOML = """\
# Codex settings — hand-written, keep my comments
model = "gpt-5-codex"   # the default model
approval_policy = "on-request"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]  # keep this one
env = { GITHUB_TOKEN = "ghp_example" }

# projects I trust
[projects."/home/dev/shop"]
trust_level = "trusted"
"""

FAKE_CRONTAB = """#!/bin/sh
F="$FAKE_CRONTAB_FILE"
case "$1" in
  -l) if [ -f "$F" ]; then cat "$F"; else echo "no crontab for tester" >&2; exit 1; fi ;;
  -r) rm -f "$F" ;;
  -) cat > "$F" ;;
esac
"""

FAKE_SYSTEMCTL = """#!/bin/sh
echo "$@" >> "$FAKE_SYSTEMCTL_LOG"
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def agents_home(home, tmp_path, monkeypatch):
    """HOME with Claude Code, Codex, Gemini CLI, Cursor, Windsurf, Claude Desktop and VS Code."""
    user = Path(os.environ["HOME"])
    files = {
        user / ".claude" / "settings.json": json.dumps({
            "$schema": "https://json.schemastore.org/claude-code-settings.json",
            "model": "opus",
            "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "~/bin/guard.sh", "timeout": 10}]}]},
        }, indent=2) + "\n",
        user / ".claude.json": json.dumps({
            "numStartups": 42, "theme": "dark",
            "projects": {"/home/dev/shop": {"allowedTools": [], "hasTrustDialogAccepted": True}},
            "mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "gh-mcp"], "env": {}}},
        }, indent=2),
        user / ".codex" / "config.toml": CODEX_TOML,
        user / ".gemini" / "settings.json": json.dumps({
            "theme": "GitHub", "selectedAuthType": "oauth-personal",
            "mcpServers": {"fs": {"command": "npx", "args": ["fs-mcp"]}},
        }, indent=4) + "\n",
        user / ".cursor" / "mcp.json": json.dumps({"mcpServers": {"linear": {"url": "https://mcp.linear.app/sse"}}}, indent=2) + "\n",
        user / ".codeium" / "windsurf" / "mcp_config.json": json.dumps({"mcpServers": {}}, indent=2) + "\n",
        user / ".config" / "Claude" / "claude_desktop_config.json": json.dumps({
            "globalShortcut": "", "mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "fs", "/home/dev"]}},
        }, indent=2) + "\n",
        user / ".config" / "Code" / "User" / "mcp.json": json.dumps({
            "servers": {"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]}}, "inputs": [],
        }, indent="\t") + "\n",
    }
    for path, text in files.items():
        _write(path, text)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cron = bin_dir / "crontab"
    cron.write_text(FAKE_CRONTAB)
    cron.chmod(cron.stat().st_mode | stat.S_IEXEC)
    cron_file = tmp_path / "crontab.txt"
    cron_file.write_text("MAILTO=dev@example.com\n0 9 * * 1 /home/dev/bin/weekly.sh\n")
    monkeypatch.setenv("FAKE_CRONTAB_FILE", str(cron_file))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return {"user": user, "files": files, "cron": cron_file, "bin": bin_dir}


def snapshot(paths):
    return {p: (p.read_bytes() if p.exists() else None) for p in paths}


# Claude Code's documented hooks schema (settings.json), checked by hand.
CLAUDE_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "Notification", "UserPromptSubmit",
                 "Stop", "SubagentStart", "SubagentStop", "PreCompact", "SessionStart", "SessionEnd",
                 "PermissionRequest"}
MATCHER_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "Notification",
                  "PreCompact", "SessionStart", "SubagentStart", "SubagentStop"}


def validate_claude_hooks(settings: dict) -> None:
    hooks = settings["hooks"]
    assert isinstance(hooks, dict)
    for event, groups in hooks.items():
        assert event in CLAUDE_EVENTS, event
        assert isinstance(groups, list) and groups
        for group in groups:
            assert isinstance(group, dict) and set(group) <= {"matcher", "hooks"}, group
            if "matcher" in group:
                assert isinstance(group["matcher"], str)
                assert event in MATCHER_EVENTS, f"{event} takes no matcher"
            assert isinstance(group["hooks"], list) and group["hooks"]
            for hook in group["hooks"]:
                assert set(hook) <= {"type", "command", "timeout", "statusMessage", "once", "async"}, hook
                assert hook["type"] == "command"
                assert isinstance(hook["command"], str) and hook["command"].strip()
                if "timeout" in hook:
                    assert isinstance(hook["timeout"], (int, float)) and hook["timeout"] > 0


def test_setup_wires_every_agent_and_a_second_run_changes_nothing(cli, agents_home, home):
    before = snapshot(agents_home["files"])
    res = cli("setup", "--yes")
    assert res.exit_code == 0, res.output
    user = agents_home["user"]

    settings = json.loads((user / ".claude" / "settings.json").read_text())
    validate_claude_hooks(settings)
    assert settings["model"] == "opus" and settings["permissions"]["deny"] == ["Read(./.env)"]
    assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "~/bin/guard.sh"
    events = {e: [h["command"] for g in groups for h in g["hooks"]] for e, groups in settings["hooks"].items()}
    assert any(c.endswith("hook prompt") for c in events["UserPromptSubmit"])
    assert any(c.endswith("hook session-end") for c in events["SessionEnd"])
    remem_cmd = events["UserPromptSubmit"][0].split()[0]
    assert os.path.isabs(remem_cmd) and os.path.exists(remem_cmd)

    claude_json = json.loads((user / ".claude.json").read_text())
    assert claude_json["numStartups"] == 42 and "github" in claude_json["mcpServers"]
    assert claude_json["mcpServers"]["remem"]["args"][-1] == "serve"
    assert os.path.isabs(claude_json["mcpServers"]["remem"]["command"])

    toml = (user / ".codex" / "config.toml").read_text()
    assert toml.startswith(CODEX_TOML) and "[mcp_servers.remem]" in toml and "\nhooks = true" in toml
    assert "codex_hooks" not in toml  # the deprecated name of the flag
    assert "next: Codex runs new or changed hooks only once you trust them" in res.stdout
    codex_hooks = json.loads((user / ".codex" / "hooks.json").read_text())
    assert "--agent codex" in codex_hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]

    gemini = json.loads((user / ".gemini" / "settings.json").read_text())
    assert gemini["theme"] == "GitHub" and {"fs", "remem"} <= set(gemini["mcpServers"])
    assert set(gemini["hooks"]) == {"BeforeAgent", "AfterAgent", "SessionEnd"}
    assert (user / ".gemini" / "settings.json").read_text().startswith('{\n    "theme"')  # indent kept

    # Cursor takes remem over MCP only: its beforeSubmitPrompt hook could carry nothing.
    assert not (user / ".cursor" / "hooks.json").exists()
    assert "remem" in json.loads((user / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert "remem" in json.loads((user / ".codeium" / "windsurf" / "mcp_config.json").read_text())["mcpServers"]
    assert "remem" in json.loads((user / ".config" / "Claude" / "claude_desktop_config.json").read_text())["mcpServers"]
    vscode_text = (user / ".config" / "Code" / "User" / "mcp.json").read_text()
    assert json.loads(vscode_text)["servers"]["remem"]["type"] == "stdio" and "\t\"servers\"" in vscode_text

    cron = agents_home["cron"].read_text()
    assert cron.startswith("MAILTO=dev@example.com\n0 9 * * 1 /home/dev/bin/weekly.sh\n")
    assert "sleep" in cron and "# remem: nightly sleep" in cron

    backups = list((home / "backups" / "setup").iterdir())
    assert len(backups) >= len([p for p, b in before.items() if b is not None])

    after_first = snapshot([*agents_home["files"], user / ".codex" / "hooks.json", user / ".cursor" / "hooks.json",
                            agents_home["cron"]])
    again = cli("setup", "--yes")
    assert again.exit_code == 0 and "nothing to change" in again.output
    assert snapshot(list(after_first)) == after_first


def test_remove_restores_every_file_byte_for_byte(cli, agents_home):
    user = agents_home["user"]
    created = [user / ".codex" / "hooks.json", user / ".cursor" / "hooks.json"]
    before = snapshot([*agents_home["files"], *created, agents_home["cron"]])
    assert cli("setup", "--yes").exit_code == 0
    res = cli("setup", "--remove", "--yes")
    assert res.exit_code == 0, res.output
    assert snapshot(list(before)) == before
    assert cli("setup", "--remove", "--yes").output.startswith("nothing to change")


def test_remove_after_the_person_edited_takes_out_only_remem(cli, agents_home):
    user = agents_home["user"]
    assert cli("setup", "--yes", "--agent", "claude-code", "--no-schedule").exit_code == 0
    path = user / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify-send done"}]})
    data["model"] = "sonnet"
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert cli("setup", "--remove", "--yes", "--agent", "claude-code", "--no-schedule").exit_code == 0
    left = json.loads(path.read_text())
    assert left["model"] == "sonnet"
    assert left["hooks"] == {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 10}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    }
    assert "remem" not in json.loads((user / ".claude.json").read_text())["mcpServers"]


def test_dry_run_prints_the_diff_and_writes_nothing(cli, agents_home, home):
    before = snapshot([*agents_home["files"], agents_home["cron"]])
    res = cli("setup", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "+++" in res.output and "remem" in res.output and "hook prompt" in res.output
    assert snapshot(list(before)) == before
    assert not (home / "setup.json").exists()


def test_malformed_json_is_reported_and_left_untouched(cli, agents_home):
    user = agents_home["user"]
    bad = user / ".cursor" / "mcp.json"
    bad.write_text('{"mcpServers": {"linear": {"url": "x"},}  // trailing comma\n')
    original = bad.read_bytes()
    res = cli("setup", "--yes", "--no-schedule")
    assert res.exit_code == 1
    assert "mcp.json is not valid JSON" in res.output
    assert bad.read_bytes() == original
    assert "remem" in json.loads((user / ".claude.json").read_text())["mcpServers"]  # the rest went ahead


def test_one_agent_only_and_unknown_agent(cli, agents_home):
    user = agents_home["user"]
    gem_before = (user / ".gemini" / "settings.json").read_bytes()
    assert cli("setup", "--yes", "--agent", "vscode", "--no-schedule").exit_code == 0
    assert "remem" in json.loads((user / ".config" / "Code" / "User" / "mcp.json").read_text())["servers"]
    assert (user / ".gemini" / "settings.json").read_bytes() == gem_before
    assert "# remem" not in agents_home["cron"].read_text()
    bad = cli("setup", "--agent", "emacs")
    assert bad.exit_code == 1 and "unknown agent" in bad.output


def only_systemd(tmp_path: Path, monkeypatch) -> Path:
    """A PATH with the fake systemctl alone (no crontab); returns the file it logs its calls to."""
    bin_dir = tmp_path / "only-systemd"
    bin_dir.mkdir()
    systemctl = bin_dir / "systemctl"
    systemctl.write_text(FAKE_SYSTEMCTL)
    systemctl.chmod(systemctl.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "systemctl.log"
    monkeypatch.setenv("FAKE_SYSTEMCTL_LOG", str(log))
    monkeypatch.setenv("PATH", str(bin_dir))
    return log


def test_systemd_timer_where_there_is_no_cron(cli, home, tmp_path, monkeypatch):
    log = only_systemd(tmp_path, monkeypatch)
    res = cli("setup", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    units = Path(os.environ["HOME"]) / ".config" / "systemd" / "user"
    assert "OnCalendar=" in (units / "remem-sleep.timer").read_text()
    assert "sleep" in (units / "remem-sleep.service").read_text()
    assert "enable --now remem-sleep.timer" in log.read_text()
    assert cli("setup", "--remove", "--yes", "--agent", "windsurf").exit_code == 0
    assert not (units / "remem-sleep.timer").exists()
    assert "disable --now remem-sleep.timer" in log.read_text()


def test_setup_never_waits_for_an_answer_without_a_terminal(agents_home):
    res = run_remem("setup", "--no-schedule", "--agent", "windsurf", input="", timeout=60)
    assert res.returncode == 0, res.stderr
    path = agents_home["user"] / ".codeium" / "windsurf" / "mcp_config.json"
    assert "remem" in json.loads(path.read_text())["mcpServers"]


def test_setup_json_output(cli, agents_home):
    res = cli("setup", "--yes", "--json", "--agent", "cursor", "--no-schedule")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {c["path"].rsplit("/", 1)[-1] for c in data["changes"]} == {"mcp.json"}
    assert data["errors"] == []


def test_doctor_reports_wiring_hook_runs_and_store_health(cli, agents_home, store):
    assert cli("setup", "--yes", "--agent", "claude-code").exit_code == 0
    res = cli("doctor", "--json")
    assert res.exit_code == 1, res.output  # Codex is installed but not wired: a problem
    report = json.loads(res.stdout)
    claude = next(a for a in report["agents"] if a["agent"] == "claude-code")
    assert claude["mcp"] and set(claude["hooks"]) == {"UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd"}
    ran = {h["event"]: h for h in report["hooks"] if h["agent"] == "claude-code"}
    assert set(ran) == {"UserPromptSubmit", "PreToolUse", "Stop"}
    assert all(h["ok"] and h["ms"] > 0 for h in ran.values()), ran
    assert report["store"]["integrity"] == "ok"
    assert report["store"]["fts"] == {"episodes_fts": "ok", "lessons_fts": "ok"}
    assert report["schedule"]["wired"]
    fixes = {p["fix"] for p in report["problems"]}
    assert "remem setup --agent codex" in fixes  # Codex is installed but not wired
    assert store.scalar("SELECT count(*) FROM primes") == 0  # doctor's runs are previews


def test_doctor_names_the_fix_for_a_broken_fts_index(cli, store):
    store.conn.execute("INSERT INTO lessons_fts(rowid, text) VALUES (999, 'orphan row')")
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert report["store"]["fts"]["lessons_fts"] != "ok"
    assert any(p["fix"] == "remem doctor --repair-fts" for p in report["problems"])
    fixed = json.loads(cli("doctor", "--json", "--no-run", "--repair-fts").stdout)
    assert fixed["store"]["fts"]["lessons_fts"] == "ok"


def test_doctor_reports_a_memory_it_cannot_read_instead_of_failing(cli, store):
    """A table gone (or a damaged index page) used to end `remem doctor` with a one-line error
    telling the person to run `remem doctor`: now it is reported (exit 1, as any problem)."""
    from remem import paths

    store.conn.execute("DROP TABLE tags")
    res = cli("doctor", "--json", "--no-run")
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    report = json.loads(res.stdout)
    assert report["store"]["ok"] is False
    assert any("cannot be read" in p["problem"] and "no such table: tags" in p["problem"]
               and p["fix"] == f"no good backup in {paths.backups_dir()}; move {paths.db_path()} aside to start anew"
               for p in report["problems"])


def test_context_lists_project_lessons_first_and_records_nothing(cli, store, tmp_path):
    from tests.test_hooks import seed

    project = tmp_path / "shop"
    project.mkdir()
    seed(store, [("Build images with make image here", "correction", str(project)),
                 ("The docker build needs --platform linux/amd64", "error", None),
                 ("Elsewhere we use bazel", "correction", "/somewhere/else")])
    res = cli("context", "--project", str(project), "--json")
    data = json.loads(res.stdout)
    assert [l["text"] for l in data["lessons"]] == ["Build images with make image here",
                                                    "The docker build needs --platform linux/amd64"]
    assert data["text"].startswith(f"Lessons that may be shown in {project}.") and "<remem-memory>" not in data["text"]
    prompt = json.loads(cli("context", "--project", str(project), "--prompt", "build the docker image", "--json").stdout)
    assert prompt["lessons"] and store.scalar("SELECT count(*) FROM primes") == 0


def test_help_says_setup_schedules_an_ingest_then_a_sleep(cli):
    for args in (["--help"], ["setup", "--help"]):
        said = " ".join(cli(*args).output.split())
        assert "`remem ingest` before each nightly `remem sleep`" in said, said


def test_hook_help_through_typer(cli):
    res = cli("hook", "--help")
    assert res.exit_code == 0 and "prompt|pre-tool|stop|session-end" in res.output


def test_engine_setup_never_imports_tomlkit():
    engine = Path(__file__).resolve().parent.parent / "remem" / "engine"
    for module in [*engine.glob("setup*.py"), engine / "schedule.py"]:
        src = module.read_text()
        assert "import tomlkit" not in src and "from tomlkit" not in src, module.name


def test_remove_keeps_edits_made_between_two_setups(cli, agents_home):
    user = agents_home["user"]
    path = user / ".claude" / "settings.json"
    assert cli("setup", "--yes", "--agent", "claude-code", "--no-schedule").exit_code == 0
    data = json.loads(path.read_text())
    del data["hooks"]["Stop"]  # the person drops one of remem's hooks and changes a setting
    data["model"] = "sonnet"
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert cli("setup", "--yes", "--agent", "claude-code", "--no-schedule").exit_code == 0
    assert "Stop" in json.loads(path.read_text())["hooks"]
    assert cli("setup", "--remove", "--yes", "--agent", "claude-code", "--no-schedule").exit_code == 0
    left = json.loads(path.read_text())
    assert left["model"] == "sonnet" and set(left["hooks"]) == {"PreToolUse"}


def test_a_non_utf8_agent_config_is_named_and_the_rest_goes_ahead(cli, agents_home):
    user = agents_home["user"]
    bad = user / ".gemini" / "settings.json"
    bad.write_bytes(b'{"theme": "caf\xe9"}')
    res = run_remem("setup", "--no-schedule", "--json", "--yes")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    data = res.json()  # the JSON report is still printed, naming the file
    assert any(str(bad) in e and "UTF-8" in e for e in data["errors"]), data["errors"]
    assert bad.read_bytes() == b'{"theme": "caf\xe9"}'
    assert "remem" in json.loads((user / ".claude.json").read_text())["mcpServers"]  # the rest went ahead
    report = run_remem("doctor", "--json", "--no-run")
    assert report.returncode == 1 and "Traceback" not in report.stderr, report.stderr
    assert any(str(bad) in p["problem"] for p in report.json()["problems"])


def test_a_json_config_with_a_utf8_bom_is_wired_and_restored_byte_for_byte(cli, agents_home):
    user = agents_home["user"]
    path = user / ".cursor" / "mcp.json"
    original = "\ufeff".encode() + path.read_bytes()
    path.write_bytes(original)
    res = cli("setup", "--yes", "--agent", "cursor", "--no-schedule")
    assert res.exit_code == 0, res.output
    text = path.read_bytes().decode("utf-8-sig")
    assert {"linear", "remem"} <= set(json.loads(text)["mcpServers"])
    assert path.read_bytes().startswith("\ufeff".encode())  # the file keeps its BOM
    wired = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert next(a for a in wired["agents"] if a["agent"] == "cursor")["mcp"]
    assert cli("setup", "--remove", "--yes", "--agent", "cursor", "--no-schedule").exit_code == 0
    assert path.read_bytes() == original


def test_setup_never_changes_the_matcher_of_a_group_the_person_shares(cli, agents_home):
    user = agents_home["user"]
    claude = user / ".claude" / "settings.json"
    claude.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "/home/me/bin/block-rm.sh"},
        {"type": "command", "command": "remem hook pre-tool"}]}]}}, indent=2) + "\n")
    codex = user / ".codex" / "hooks.json"
    codex.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "/home/me/bin/audit.sh"},
        {"type": "command", "command": "remem hook pre-tool --agent codex"}]}]}}, indent=2) + "\n")
    args = ("--yes", "--agent", "claude-code", "--agent", "codex", "--no-schedule")
    assert cli("setup", *args).exit_code == 0

    groups = json.loads(claude.read_text())["hooks"]["PreToolUse"]
    assert groups[0] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "/home/me/bin/block-rm.sh"}]}
    assert len(groups) == 2 and groups[1]["matcher"] == "*"
    assert groups[1]["hooks"][0]["command"].endswith("hook pre-tool")
    validate_claude_hooks(json.loads(claude.read_text()))
    groups = json.loads(codex.read_text())["hooks"]["PreToolUse"]
    assert groups[0] == {"matcher": "*", "hooks": [{"type": "command", "command": "/home/me/bin/audit.sh"}]}
    assert len(groups) == 2 and groups[1]["matcher"] == "Bash"

    after_first = snapshot([claude, codex])
    again = cli("setup", *args)
    assert again.exit_code == 0 and "nothing to change" in again.output
    assert snapshot([claude, codex]) == after_first
    assert cli("setup", "--remove", *args).exit_code == 0
    # The files held an earlier wiring of remem's: --remove takes remem's hooks out rather than
    # put that one back, and the person's hooks keep their groups and matchers.
    assert json.loads(claude.read_text()) == {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "/home/me/bin/block-rm.sh"}]}]}}
    assert json.loads(codex.read_text()) == {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "/home/me/bin/audit.sh"}]}]}}

    # Alone in its group, remem's hook gets remem's matcher.
    claude.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "remem hook pre-tool"}]}]}}, indent=2) + "\n")
    assert cli("setup", *args).exit_code == 0
    groups = json.loads(claude.read_text())["hooks"]["PreToolUse"]
    assert len(groups) == 1 and groups[0]["matcher"] == "*"


def test_setup_says_wired_already_only_when_it_is(cli, agents_home, tmp_path, monkeypatch):
    args = ("--yes", "--no-schedule")
    assert cli("setup", *args).exit_code == 0
    (agents_home["user"] / ".gemini" / "settings.json").write_text("{not json")
    res = cli("setup", *args)
    assert res.exit_code == 1 and "wired already" not in res.output
    assert "settings.json is not valid JSON" in res.output

    empty = tmp_path / "nobody"
    empty.mkdir()
    for var, where in (("HOME", empty), ("CLAUDE_CONFIG_DIR", empty / ".claude"), ("CODEX_HOME", empty / ".codex")):
        monkeypatch.setenv(var, str(where))
    monkeypatch.setenv("PATH", str(empty))
    res = cli("setup", *args)
    assert "wired already" not in res.output and "no agent found" in res.output


def test_the_codex_flag_an_earlier_release_wrote_becomes_the_current_one(cli, agents_home, home):
    from remem.setup_toml import TomlkitEditor

    editor = TomlkitEditor()
    legacy = 'model = "o3"\n\n[features]\ncodex_hooks = true\n'
    assert editor.enable_hooks(legacy) == 'model = "o3"\n\n[features]\nhooks = true\n'
    mine = 'model = "o3"\n\n[features]\nhooks = false\n'  # the person's own choice stays
    assert editor.enable_hooks(mine) == mine
    assert editor.disable_hooks(editor.enable_hooks('model = "o3"\n')) == 'model = "o3"\n'
    import tomllib

    for written in ('features.codex_hooks = true\n', 'features = { codex_hooks = true }\n'):
        assert editor.enable_hooks(written) == written  # not a table setup can cut: left as it is
        tomllib.loads(editor.enable_hooks(written))


def test_an_earlier_codex_wiring_gets_the_session_end_hook_within_the_3_s_codex_allows(
        cli, agents_home, store, monkeypatch):
    """Earlier releases wired no SessionEnd hook for Codex, so its sessions waited for the
    nightly ingest: setup adds it to such a wiring, with a timeout Codex takes as it is (it
    clamps SessionEnd hooks to 3 s and warns on every run about a longer one); doctor finds
    nothing wrong with it, and --remove still restores the files byte for byte."""
    from remem.engine import setup, setup_json

    codex_dir = agents_home["user"] / ".codex"
    hooks_json = codex_dir / "hooks.json"
    before = snapshot([codex_dir / "config.toml", hooks_json])
    args = ("--yes", "--agent", "codex", "--no-schedule")
    with monkeypatch.context() as m:
        m.setattr(setup, "codex_hooks", lambda: {event: group for event, group in setup_json.codex_hooks().items()
                                                 if event != "SessionEnd"})
        assert cli("setup", *args).exit_code == 0
    earlier = json.loads(hooks_json.read_text())["hooks"]
    assert set(earlier) == {"UserPromptSubmit", "PreToolUse", "Stop"}

    upgrade = cli("setup", *args)
    assert upgrade.exit_code == 0, upgrade.output
    assert "Hooks need review" in upgrade.stdout  # Codex runs the new hook only once trusted
    hooks = json.loads(hooks_json.read_text())["hooks"]
    assert {event: hooks[event] for event in earlier} == earlier
    [group] = hooks["SessionEnd"]
    [hook] = group["hooks"]
    assert "matcher" not in group and hook["type"] == "command"
    assert hook["command"].endswith(" hook session-end --agent codex")
    assert isinstance(hook["timeout"], int) and 0 < hook["timeout"] <= 3
    assert "nothing to change" in cli("setup", *args).output

    report = json.loads(cli("doctor", "--json").stdout)
    codex = next(a for a in report["agents"] if a["agent"] == "codex")
    assert codex["mcp"] and set(codex["hooks"]) == {"UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd"}
    assert not [p for p in report["problems"] if p["fix"] == "remem setup --agent codex"], report["problems"]

    assert cli("setup", "--remove", *args).exit_code == 0
    assert snapshot(list(before)) == before


def test_with_claude_config_dir_the_mcp_server_goes_beside_its_settings(cli, agents_home, home, monkeypatch, tmp_path):
    """Claude Code keeps its user config in CLAUDE_CONFIG_DIR/.claude.json when that is set."""
    alt = tmp_path / "alt-claude"
    alt.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(alt))
    res = cli("setup", "--agent", "claude-code", "--no-schedule", "--yes")
    assert res.exit_code == 0, res.output
    assert "remem" in json.loads((alt / ".claude.json").read_text())["mcpServers"]
    assert "hooks" in json.loads((alt / "settings.json").read_text())



def test_setup_makes_the_folder_the_nightly_sleep_logs_to_and_doctor_checks_it(cli, agents_home, home):
    """The cron line appends to ~/.remem/logs/sleep.log; with no such folder the shell refused
    it every night while doctor said the sleep was scheduled."""
    import shutil

    from remem import paths

    shutil.rmtree(paths.logs_dir(), ignore_errors=True)
    assert cli("setup", "--yes").exit_code == 0
    assert paths.logs_dir().is_dir()
    shutil.rmtree(paths.logs_dir())
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert any("does not exist" in p["problem"] and "sleep" in p["problem"] for p in report["problems"])
    assert "wired already" in cli("setup", "--yes").stdout  # nothing else to change, and yet
    assert paths.logs_dir().is_dir()  # the folder doctor's fix names is made again


# ------------------------------------------------------------------------------ the nightly job

OLD_CRON_LINE = ("17 3 * * * /opt/old/bin/remem sleep --quiet >> /home/dev/.remem/logs/sleep.log 2>&1 "
                 "# remem: nightly sleep\n")


def _marked(text: str) -> list[str]:
    return [line for line in text.splitlines() if "# remem: nightly sleep" in line]


def test_the_nightly_job_ingests_then_sleeps_and_sleeps_even_when_ingest_fails(home, tmp_path, monkeypatch):
    """Sleep reads nothing new: without the ingest, Codex sessions, the inbox and sessions
    whose SessionEnd hook never fired were never read."""
    import subprocess

    from remem.engine import schedule, setup_edit

    line = schedule.cron_line()
    assert line.startswith(schedule.CRON_TIME + " ") and line.endswith(" # remem: nightly sleep")
    assert "ingest --quiet" in line and "sleep --quiet" in line
    assert line.index("ingest --quiet") < line.index("sleep --quiet")
    # What the shell does with it: ingest fails, sleep still runs, both append to the log.
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "fake-remem"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\necho "ran $*"\n'
                    'case "$*" in *" ingest --quiet") echo "ingest broke" >&2; exit 3 ;; esac\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.setattr(setup_edit, "remem_argv", lambda: [str(fake)])
    (home / "logs").mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["/bin/sh", "-c", schedule.nightly_command()], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    ran = calls.read_text().splitlines()
    assert len(ran) == 2 and ran[0].endswith("ingest --quiet") and ran[1].endswith("sleep --quiet")
    log = (home / "logs" / "sleep.log").read_text()
    assert "ran" in log and "ingest broke" in log and log.index("ingest broke") < log.rindex("sleep --quiet")


def test_setup_writes_the_ingest_and_sleep_line(cli, agents_home):
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    mine = _marked(agents_home["cron"].read_text())
    assert len(mine) == 1 and " ingest --quiet >> " in mine[0] and " sleep --quiet >> " in mine[0]


def test_an_earlier_sleep_only_line_is_replaced_not_doubled_and_doctor_names_it(cli, agents_home):
    cron = agents_home["cron"]
    cron.write_text(cron.read_text() + OLD_CRON_LINE + "30 6 * * * /home/dev/bin/backup.sh\n")
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert any("without ingesting" in p["problem"] and p["fix"].startswith("remem setup")
               for p in report["problems"])
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    text = cron.read_text()
    mine = _marked(text)
    assert len(mine) == 1 and "ingest --quiet" in mine[0] and "/opt/old/bin" not in mine[0]
    assert text.startswith("MAILTO=dev@example.com\n0 9 * * 1 /home/dev/bin/weekly.sh\n"
                           "30 6 * * * /home/dev/bin/backup.sh\n")
    after = cron.read_bytes()
    assert "nothing to change" in cli("setup", "--yes", "--agent", "windsurf").output
    assert cron.read_bytes() == after
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert not any("without ingesting" in p["problem"] for p in report["problems"])


def _setup_as_an_earlier_release(cli, monkeypatch):
    """Run setup as a release whose nightly line was `remem sleep` alone."""
    import shlex

    from remem import paths
    from remem.engine import schedule, setup_edit

    def old() -> str:
        log = shlex.quote(str(paths.logs_dir() / "sleep.log"))
        return f"{setup_edit.command('sleep', '--quiet')} >> {log} 2>&1"

    with monkeypatch.context() as m:
        m.setattr(schedule, "nightly_command", old)
        assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0


def test_remove_after_an_upgrade_restores_the_crontab_byte_for_byte(cli, agents_home, monkeypatch):
    cron = agents_home["cron"]
    original = cron.read_bytes()
    _setup_as_an_earlier_release(cli, monkeypatch)
    assert "ingest" not in _marked(cron.read_text())[0]
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0  # the upgrade
    assert "ingest --quiet" in _marked(cron.read_text())[0]
    assert cli("setup", "--remove", "--yes", "--agent", "windsurf").exit_code == 0
    assert cron.read_bytes() == original


def test_remove_after_an_upgrade_keeps_a_line_the_person_added_in_between(cli, agents_home, monkeypatch):
    cron = agents_home["cron"]
    _setup_as_an_earlier_release(cli, monkeypatch)
    cron.write_text(cron.read_text() + "45 7 * * * /home/dev/bin/report.sh\n")
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0  # the upgrade
    assert cli("setup", "--remove", "--yes", "--agent", "windsurf").exit_code == 0
    assert cron.read_text() == ("MAILTO=dev@example.com\n0 9 * * 1 /home/dev/bin/weekly.sh\n"
                                "45 7 * * * /home/dev/bin/report.sh\n")


def test_the_systemd_service_ingests_then_sleeps_and_an_old_one_is_replaced(cli, home, tmp_path, monkeypatch):
    import shlex

    only_systemd(tmp_path, monkeypatch)
    units = Path(os.environ["HOME"]) / ".config" / "systemd" / "user"
    service = units / "remem-sleep.service"
    _write(service, "[Unit]\nDescription=remem nightly sleep (consolidate memories into lessons)\n\n"
                    "[Service]\nType=oneshot\nExecStart=/bin/sh -c '/opt/old/bin/remem sleep --quiet'\n")
    _write(units / "remem-sleep.timer", "[Timer]\nOnCalendar=*-*-* 03:17:00\n")
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert any("without ingesting" in p["problem"] for p in report["problems"])
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    exec_lines = [l for l in service.read_text().splitlines() if l.startswith("ExecStart")]
    assert len(exec_lines) == 1  # one shell: a second ExecStart would not run after a failed ingest
    argv = shlex.split(exec_lines[0].split("=", 1)[1])
    assert argv[:2] == ["/bin/sh", "-c"] and len(argv) == 3
    script = argv[2]
    assert "; " in script and script.index("ingest --quiet") < script.index("sleep --quiet")
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert not any("without ingesting" in p["problem"] for p in report["problems"])
    assert cli("setup", "--remove", "--yes", "--agent", "windsurf").exit_code == 0
    assert "/opt/old/bin/remem sleep" in service.read_text()  # put back as it was before setup


def test_doctor_after_a_deliberate_remove_notes_it_instead_of_calling_it_a_problem(cli, agents_home, home):
    from remem.engine import doctor

    def not_wired(report):
        return {p["problem"].split(" is installed")[0] for p in report["problems"]
                if "is installed but remem is not wired" in p["problem"]}

    before = doctor.diagnose(run_hooks=False)
    assert "claude-code" in not_wired(before)  # never set up: a problem, with its fix
    assert cli("setup", "--yes", "--no-schedule").exit_code == 0
    assert cli("setup", "--remove", "--yes", "--agent", "claude-code").exit_code == 0
    after = doctor.diagnose(run_hooks=False)
    assert "claude-code" not in not_wired(after)
    assert any(n.startswith("claude-code: remem was taken out with `remem setup --remove`")
               for n in after["notes"])
    out = cli("doctor", "--no-run").output
    assert "note: claude-code: remem was taken out" in out
    assert cli("setup", "--yes", "--no-schedule", "--agent", "claude-code").exit_code == 0
    again = doctor.diagnose(run_hooks=False)  # wired again: nothing to note
    assert not any(n.startswith("claude-code") for n in again["notes"])
