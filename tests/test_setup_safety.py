"""`remem setup`, `setup --remove` and `doctor` keep the person's configs safe: a config that
cannot be read stops nothing else, a write an agent makes while setup waits is kept, a table
cut out of config.toml takes nothing of the next one, an earlier wiring is never put back,
backups are the owner's alone, JSON is edited line by line, and a switch that turns every hook
off is named."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_setup import agents_home  # noqa: F401  (fixture)

WIN = ("--yes", "--no-schedule")


def _problems(cli) -> list[dict[str, str]]:
    res = cli("doctor", "--json", "--no-run")
    return json.loads(res.stdout)["problems"]


# ------------------------------------------------------------------------------ unreadable configs

def test_a_config_replaced_by_a_folder_stops_neither_remove_nor_doctor(cli, agents_home):
    user = agents_home["user"]
    assert cli("setup", *WIN).exit_code == 0
    windsurf = user / ".codeium" / "windsurf" / "mcp_config.json"
    windsurf.unlink()
    windsurf.mkdir()

    res = cli("setup", "--remove", *WIN)
    assert res.exit_code == 1
    assert f"{windsurf} cannot be read (Is a directory); move that folder aside" in res.stderr
    assert "remem" not in json.loads((user / ".claude.json").read_text())["mcpServers"]  # the rest went ahead
    assert windsurf.is_dir()

    problems = _problems(cli)
    assert [p for p in problems if str(windsurf) in p["problem"]] == [
        {"problem": f"{windsurf} cannot be read (Is a directory); move that folder aside, then run "
                    "`remem setup` again", "fix": f"fix {windsurf} by hand"}]


def test_a_link_to_itself_is_skipped_by_remove_and_named_by_setup(cli, agents_home):
    user = agents_home["user"]
    cursor = user / ".cursor" / "mcp.json"
    cursor.unlink()
    cursor.symlink_to(cursor)  # a loop: ELOOP on every open
    res = cli("setup", "--remove", *WIN)
    assert res.exit_code == 0, res.output  # setup never wrote it: nothing of setup's to take out
    res = cli("setup", *WIN)
    assert res.exit_code == 1
    assert f"{cursor} cannot be read" in res.stderr and "point the link at a file, or delete it" in res.stderr
    assert "remem" in json.loads((user / ".claude.json").read_text())["mcpServers"]
    assert cursor.is_symlink()


# ------------------------------------------------------------------------------ a write while setup waits

def _answer_after(args: list[str], meanwhile, answer: bytes = b"y\n") -> subprocess.CompletedProcess[bytes]:
    """`remem ARGS` in a terminal: once it asks "Go ahead?", meanwhile() runs (an agent writing
    its config), then the answer is typed."""
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "remem", *args], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=str(ROOT), env=dict(os.environ))
    os.close(slave)
    try:
        seen = b""
        while b"Go ahead?" not in seen:
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, f"ended before asking: {seen!r} {proc.stderr.read()!r}"
            seen += chunk
        meanwhile()
        os.write(master, answer)
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(master)
    return subprocess.CompletedProcess(args, proc.returncode, seen + out, err)


def test_a_write_an_agent_makes_while_setup_waits_is_kept_and_backed_up(agents_home, home):
    claude_json = agents_home["user"] / ".claude.json"

    def agent_writes() -> None:
        data = json.loads(claude_json.read_text())
        data["numStartups"] = 43
        data["oauthAccount"] = {"emailAddress": "me@example.com"}
        claude_json.write_text(json.dumps(data, indent=2))

    res = _answer_after(["setup", "--no-schedule", "--agent", "claude-code"], agent_writes)
    assert res.returncode == 0, res.stderr
    data = json.loads(claude_json.read_text())
    assert data["oauthAccount"] == {"emailAddress": "me@example.com"} and data["numStartups"] == 43
    assert "remem" in data["mcpServers"]
    backup = next(p for p in (home / "backups" / "setup").iterdir() if p.name.endswith("claude-json"))
    assert json.loads(backup.read_text())["oauthAccount"] == {"emailAddress": "me@example.com"}


# ------------------------------------------------------------------------------ Codex's config.toml

def test_remove_cuts_remems_codex_table_and_nothing_of_the_next(cli, agents_home):
    config = agents_home["user"] / ".codex" / "config.toml"
    original = tomllib.loads(config.read_text())
    assert cli("setup", *WIN, "--agent", "codex").exit_code == 0
    text = config.read_text().replace("[mcp_servers.remem]\n", "[mcp_servers.remem]\n# long-term memory\n")
    # As Codex writes a project it is told to trust; its own comment block above it.
    config.write_text(text + '\n# trusted by codex\n[projects."/home/u/code"]\ntrust_level = "trusted"\n')
    assert cli("setup", "--remove", *WIN, "--agent", "codex").exit_code == 0
    after = config.read_text()
    assert tomllib.loads(after) == {**original, "projects": {
        **original["projects"], "/home/u/code": {"trust_level": "trusted"}}}
    assert '# trusted by codex\n[projects."/home/u/code"]' in after
    assert "long-term memory" not in after and "remem" not in after


# ------------------------------------------------------------------------------ an earlier wiring

def test_remove_takes_out_an_earlier_wiring_instead_of_restoring_it(cli, agents_home):
    settings = agents_home["user"] / ".claude" / "settings.json"
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "/old/venv/bin/remem hook prompt", "timeout": 5}]}]}}, indent=2) + "\n")
    assert cli("setup", *WIN, "--agent", "claude-code").exit_code == 0
    assert "/old/venv" not in settings.read_text()  # rewritten, as documented
    assert cli("setup", "--remove", *WIN, "--agent", "claude-code").exit_code == 0
    assert "remem" not in settings.read_text() and json.loads(settings.read_text()) == {}
    assert not any("missing program" in p["problem"] for p in _problems(cli))


def test_remove_takes_out_an_earlier_crontab_line_instead_of_restoring_it(cli, agents_home):
    from tests.test_setup import OLD_CRON_LINE, _marked

    cron = agents_home["cron"]
    cron.write_text(cron.read_text() + OLD_CRON_LINE)  # an earlier install's line, no record of it
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    assert "/opt/old/bin" not in cron.read_text()
    assert cli("setup", "--remove", "--yes", "--agent", "windsurf").exit_code == 0
    assert _marked(cron.read_text()) == []  # not the dead /opt/old/bin line back
    assert cron.read_text() == "MAILTO=dev@example.com\n0 9 * * 1 /home/dev/bin/weekly.sh\n"


def test_a_systemd_unit_that_cannot_be_read_stops_nothing_else(cli, home, tmp_path, monkeypatch):
    from tests.test_setup import only_systemd

    only_systemd(tmp_path, monkeypatch)
    units = Path(os.environ["HOME"]) / ".config" / "systemd" / "user"
    (units / "remem-sleep.service").mkdir(parents=True)  # a folder where the unit goes
    windsurf = Path(os.environ["HOME"]) / ".codeium" / "windsurf" / "mcp_config.json"
    result = cli("setup", "--yes", "--agent", "windsurf")
    assert result.exit_code == 1
    assert "remem-sleep.service cannot be read" in result.stderr and "Traceback" not in result.output
    assert "remem" in json.loads(windsurf.read_text())["mcpServers"]  # the rest went ahead


# ------------------------------------------------------------------------------ backups hold tokens

def test_backups_of_a_private_config_are_private(cli, agents_home, home):
    claude_json = agents_home["user"] / ".claude.json"
    claude_json.chmod(0o600)
    home.mkdir(mode=0o755)
    assert cli("setup", *WIN, "--agent", "claude-code").exit_code == 0
    folder = home / "backups" / "setup"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    backups = list(folder.iterdir())
    assert backups and all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in backups)
    assert stat.S_IMODE(claude_json.stat().st_mode) == 0o600  # the config keeps its mode
    assert not list(claude_json.parent.glob(f".{claude_json.name}.*"))  # no temp file left


# ------------------------------------------------------------------------------ JSON edited as text

CLAUDE_SETTINGS = """{
  "permissions": {
    "allow": ["Bash(npm test:*)"]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          { "type": "command", "command": "~/bin/guard.sh" }
        ]
      }
    ]
  },
  "model": "opus"
}
"""


def test_strict_json_gets_only_remems_lines_added(cli, agents_home):
    settings = agents_home["user"] / ".claude" / "settings.json"
    settings.write_text(CLAUDE_SETTINGS)
    dry = cli("setup", "--dry-run", "--no-schedule", "--agent", "claude-code")
    assert dry.exit_code == 0, dry.output
    removed = [line for line in dry.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert removed == []  # not one of the person's lines is rewritten
    assert cli("setup", *WIN, "--agent", "claude-code").exit_code == 0
    lines = settings.read_text().splitlines()
    kept = iter(lines)
    assert all(line in kept for line in CLAUDE_SETTINGS.splitlines())  # each, in order
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"] == [
        {"type": "command", "command": "~/bin/guard.sh"}]
    settings.write_text(settings.read_text() + "\n")  # changed since: --remove takes out remem's lines only
    assert cli("setup", "--remove", *WIN, "--agent", "claude-code").exit_code == 0
    assert settings.read_text() == CLAUDE_SETTINGS + "\n"


# ------------------------------------------------------------------------------ doctor and config.toml

def test_doctor_names_a_codex_config_that_is_not_toml(cli, agents_home):
    config = agents_home["user"] / ".codex" / "config.toml"
    assert cli("setup", *WIN, "--agent", "codex").exit_code == 0
    config.write_text('model = "dup"\n' + config.read_text())
    problems = _problems(cli)
    assert any(p["problem"].startswith(f"{config} is not valid TOML (") and "fix it by hand" in p["problem"]
               for p in problems)
    assert not any("has no remem MCP server" in p["problem"] for p in problems)


def test_an_inline_mcp_servers_table_is_named_and_codex_gets_no_next_step(cli, agents_home):
    config = agents_home["user"] / ".codex" / "config.toml"
    config.write_text('mcp_servers = { github = { command = "npx" } }\n')
    res = cli("setup", *WIN, "--agent", "codex")
    assert res.exit_code == 1
    assert (f"{config}: mcp_servers is an inline table; write it as [mcp_servers.NAME] tables, then run "
            "`remem setup` again") in res.stderr
    assert "not valid TOML" not in res.output and "next: Codex" not in res.output
    assert config.read_text() == 'mcp_servers = { github = { command = "npx" } }\n'


# ------------------------------------------------------------------------------ a relative REMEM_HOME

def test_a_relative_remem_home_is_written_into_configs_as_an_absolute_path(agents_home, tmp_path):
    env = dict(os.environ, REMEM_HOME="relhome")
    res = subprocess.run([sys.executable, "-m", "remem", "setup", *WIN, "--agent", "windsurf"], env=env,
                         cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    windsurf = agents_home["user"] / ".codeium" / "windsurf" / "mcp_config.json"
    args = json.loads(windsurf.read_text())["mcpServers"]["remem"]["args"]
    assert args[args.index("--home") + 1] == str(tmp_path / "relhome")


# ------------------------------------------------------------------------------ hooks switched off

@pytest.mark.parametrize("agent, file, switch, named", [
    ("codex", ".codex/config.toml", "\n[features]\nhooks = false\n", "`hooks = false` under [features]"),
    ("claude-code", ".claude/settings.json", None, '`"disableAllHooks": true`'),
])
def test_hooks_the_agent_switched_off_are_said_and_a_doctor_problem(cli, agents_home, agent, file, switch, named):
    path = agents_home["user"] / file
    if switch is None:
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "disableAllHooks": True}, indent=2) + "\n")
    else:
        path.write_text(path.read_text() + switch)
    res = cli("setup", *WIN, "--agent", agent)
    assert res.exit_code == 0, res.output
    assert named in res.stderr and "remem's hooks do not run there" in res.stderr
    problem = next(p for p in _problems(cli) if named in p["problem"])
    assert str(path) in problem["fix"]
