"""remem setup / doctor at the edges: symlinked configs, VS Code's JSONC, a home with a space
and a quote, the person's own Codex [features], systemd's order, commented cron lines, and
exit statuses with --json."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.test_setup import agents_home  # noqa: F401  (a fixture, used by name)

WIN = ("--yes", "--no-schedule")


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


# ------------------------------------------------------------------------------ symlinks

def test_a_symlinked_config_is_written_through_the_link_and_restored_there(cli, agents_home, tmp_path):
    link = agents_home["user"] / ".cursor" / "mcp.json"
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "cursor-mcp.json"
    target.write_bytes(link.read_bytes())
    link.unlink()
    link.symlink_to(target)
    original = target.read_bytes()

    assert cli("setup", *WIN, "--agent", "cursor").exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "remem" in json.loads(target.read_text())["mcpServers"]
    assert not list(link.parent.glob(".*remem-tmp")) and not list(dotfiles.glob(".*remem-tmp"))
    assert "nothing to change" in cli("setup", *WIN, "--agent", "cursor").output

    assert cli("setup", "--remove", *WIN, "--agent", "cursor").exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == original


def test_a_dangling_link_gets_its_file_and_remove_deletes_only_that(cli, agents_home, tmp_path):
    link = agents_home["user"] / ".codeium" / "windsurf" / "mcp_config.json"
    target = tmp_path / "dotfiles" / "windsurf.json"
    link.unlink()
    link.symlink_to(target)
    # a link into a folder that does not exist is refused: setup makes no folder a link names
    refused = cli("setup", *WIN, "--agent", "windsurf")
    assert refused.exit_code == 1 and "whose folder does not exist" in refused.output, refused.output
    assert not target.parent.exists()
    target.parent.mkdir()  # its folder there, the link gets its file
    assert cli("setup", *WIN, "--agent", "windsurf").exit_code == 0
    assert link.is_symlink() and "remem" in json.loads(target.read_text())["mcpServers"]
    assert cli("setup", "--remove", *WIN, "--agent", "windsurf").exit_code == 0
    assert link.is_symlink() and not target.exists()


# ------------------------------------------------------------------------------ VS Code's JSONC

VSCODE_JSONC = """{
  // my servers -- remem must keep this
  "servers": {
    "playwright": {"type": "stdio", "command": "npx", "args": ["@playwright/mcp"]}, /* pinned */
    "docs": {"url": "https://example.com//mcp"},
  },
  "inputs": [],
}
"""


def test_vscode_mcp_json_with_comments_and_trailing_commas_is_wired_keeping_them(cli, agents_home):
    from remem.engine.setup_json import parse_jsonc

    path = agents_home["user"] / ".config" / "Code" / "User" / "mcp.json"
    path.write_text(VSCODE_JSONC)
    res = cli("setup", *WIN, "--agent", "vscode")
    assert res.exit_code == 0, res.output
    text = path.read_text()
    assert "// my servers -- remem must keep this" in text and "/* pinned */" in text
    data = parse_jsonc(text)
    assert set(data["servers"]) == {"remem", "playwright", "docs"}
    assert data["servers"]["remem"]["type"] == "stdio" and data["servers"]["docs"]["url"].endswith("//mcp")
    again = cli("setup", *WIN, "--agent", "vscode")
    assert again.exit_code == 0 and "wired already" in again.output
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert next(a for a in report["agents"] if a["agent"] == "vscode")["mcp"]
    assert not any(str(path) in p["problem"] for p in report["problems"])
    assert cli("setup", "--remove", *WIN, "--agent", "vscode").exit_code == 0
    assert path.read_text() == VSCODE_JSONC


def test_remove_from_a_jsonc_file_changed_since_takes_out_only_remem(cli, agents_home):
    path = agents_home["user"] / ".config" / "Code" / "User" / "mcp.json"
    path.write_text(VSCODE_JSONC)
    assert cli("setup", *WIN, "--agent", "vscode").exit_code == 0
    path.write_text(path.read_text().replace('"inputs": [],', '"inputs": [], // added later'))
    assert cli("setup", "--remove", *WIN, "--agent", "vscode").exit_code == 0
    assert path.read_text() == VSCODE_JSONC.replace('"inputs": [],', '"inputs": [], // added later')


def test_jsonc_parsing_keeps_comment_marks_inside_strings():
    from remem.engine.setup_json import parse_jsonc

    assert parse_jsonc('{"a": "x // y", /* c */ "b": "/* z */", "c": [1, 2,],}') == {
        "a": "x // y", "b": "/* z */", "c": [1, 2]}
    for bad in ('{"a": 1 /* open', '{"a": "open}', '{"a": 1,,}'):
        with pytest.raises(ValueError):
            parse_jsonc(bad)


@pytest.mark.parametrize("text, kept", [
    ('{\n  "servers": {\n    "github": {"url": "u"}, // work account, keep\n'
     '    "remem": {"command": "remem"}\n  }\n}\n', "// work account, keep"),
    ('{ "servers": { "a": {}, /* keep */ "remem": {} } }', "/* keep */"),
    ('{ "servers": { "remem": {}, /* keep */ "a": {} } }', "/* keep */"),
])
def test_taking_remem_out_of_jsonc_keeps_every_comment(tmp_path, text, kept):
    from remem.engine import setup_json

    path = tmp_path / "mcp.json"
    path.write_text(text)
    edit = setup_json.json_edit("vscode", path, lambda d: setup_json.unset_server(d, "servers"), jsonc=True)
    assert edit.error is None and kept in edit.after
    expected = setup_json.parse_jsonc(text)
    del expected["servers"]["remem"]
    assert setup_json.parse_jsonc(edit.after) == expected


def test_remove_never_fails_over_a_file_setup_never_wrote(cli, agents_home):
    bad = agents_home["user"] / ".gemini" / "settings.json"
    bad.write_text("{not json")
    res = cli("setup", "--remove", *WIN)
    assert res.exit_code == 0, res.output
    assert bad.read_text() == "{not json"
    res = cli("setup", "--remove", *WIN, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["errors"] == []


# ------------------------------------------------------------------------------ a home with a space

def test_a_remem_home_with_a_space_and_a_quote_is_recognised(cli, agents_home, tmp_path, monkeypatch):
    odd = tmp_path / "my remem's \"home\""
    monkeypatch.setenv("REMEM_HOME", str(odd))
    settings = agents_home["user"] / ".claude" / "settings.json"
    assert cli("setup", *WIN, "--agent", "claude-code").exit_code == 0
    commands = [h["command"] for groups in json.loads(settings.read_text())["hooks"].values()
                for g in groups for h in g["hooks"]]
    assert any("'" in c and "remem's" in c.replace("'\"'\"'", "'") for c in commands), commands
    first = settings.read_bytes()
    again = cli("setup", *WIN, "--agent", "claude-code")
    assert again.exit_code == 0 and "wired already" in again.output
    assert settings.read_bytes() == first
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    claude = next(a for a in report["agents"] if a["agent"] == "claude-code")
    assert set(claude["hooks"]) == {"UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd"}


def test_is_ours_reads_a_quoted_home():
    from remem.engine.setup_edit import is_ours

    assert is_ours("'/opt/a b/remem' --home '/tmp/my home' hook prompt")
    assert is_ours("/usr/bin/remem --home '/tmp/it'\"'\"'s' hook stop --agent codex")
    assert is_ours('remem --home "/tmp/my home" hook pre-tool')
    assert not is_ours("/usr/bin/remembrance hook prompt")
    import time

    start = time.monotonic()  # a long path that is not ours fails fast (no nested repeats)
    assert not is_ours("remem --home " + "a" * 28 + " x")
    assert time.monotonic() - start < 2


# ------------------------------------------------------------------------------ Codex's [features]

def _codex(agents_home) -> Path:
    return agents_home["user"] / ".codex" / "config.toml"


def _touch_later(path: Path) -> None:
    """The person edits the file after setup, so --remove cannot restore the backup."""
    path.write_bytes(path.read_bytes() + b"# edited after setup\n")


def test_remove_keeps_the_features_table_the_person_had(cli, agents_home):
    path = _codex(agents_home)
    path.write_text('model = "o3"\n\n[features]\nhooks = true\n')
    assert cli("setup", *WIN, "--agent", "codex").exit_code == 0
    _touch_later(path)
    res = cli("setup", "--remove", *WIN, "--agent", "codex")
    assert res.exit_code == 0, res.output
    text = path.read_text()
    assert "[features]\nhooks = true\n" in text and "mcp_servers.remem" not in text
    assert "'remem' from mcp_servers" in res.output and "features.hooks" not in res.output


def test_remove_after_a_setup_by_an_earlier_release_still_takes_out_its_features_table(cli, agents_home):
    """A manifest without the features record: the table setup appended, holding only
    `hooks = true`, still goes."""
    from remem import paths

    path = _codex(agents_home)
    path.write_text('model = "o3"\n')
    assert cli("setup", *WIN, "--agent", "codex").exit_code == 0
    manifest = json.loads(paths.setup_manifest().read_text())
    for record in manifest["files"].values():
        record.pop("features", None)  # as an earlier release wrote it
    paths.setup_manifest().write_text(json.dumps(manifest))
    _touch_later(path)
    assert cli("setup", "--remove", *WIN, "--agent", "codex").exit_code == 0
    assert "[features]" not in path.read_text()


def test_remove_takes_out_only_the_hooks_key_setup_put_in_the_persons_table(cli, agents_home):
    path = _codex(agents_home)
    path.write_text('model = "o3"\n\n[features]\nweb_search = true\n')
    assert cli("setup", *WIN, "--agent", "codex").exit_code == 0
    assert "hooks = true" in path.read_text()
    _touch_later(path)
    res = cli("setup", "--remove", *WIN, "--agent", "codex")
    assert res.exit_code == 0, res.output
    assert "'remem' from mcp_servers, features.hooks" in res.output
    text = path.read_text()
    assert "[features]\nweb_search = true\n" in text and "hooks" not in text


def test_remove_takes_out_the_features_table_setup_appended(cli, agents_home):
    path = _codex(agents_home)
    assert cli("setup", *WIN, "--agent", "codex").exit_code == 0
    _touch_later(path)
    # A second setup rewrites the file (the person took remem's server out): the record of
    # what setup added survives it.
    import tomllib

    from remem.setup_toml import TomlkitEditor

    path.write_text(TomlkitEditor().remove_server(path.read_text(), "remem"))
    assert cli("setup", *WIN, "--agent", "codex").exit_code == 0
    _touch_later(path)
    res = cli("setup", "--remove", *WIN, "--agent", "codex")
    assert res.exit_code == 0 and "features.hooks" in res.output, res.output
    assert "features" not in tomllib.loads(path.read_text())


def test_a_crlf_config_toml_gets_crlf_tables(cli, agents_home):
    path = _codex(agents_home)
    original = path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(original)
    assert cli("setup", *WIN, "--agent", "codex").exit_code == 0
    data = path.read_bytes()
    assert b"[mcp_servers.remem]\r\n" in data and b"hooks = true\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")
    assert cli("setup", "--remove", *WIN, "--agent", "codex").exit_code == 0
    assert path.read_bytes() == original


# ------------------------------------------------------------------------------ systemd

STRICT_SYSTEMCTL = """#!/bin/sh
unit="$HOME/.config/systemd/user/$4"
if [ -f "$unit" ]; then there=yes; else there=no; fi
echo "$* unit-file:$there" >> "$FAKE_SYSTEMCTL_LOG"
if [ "$2" = disable ] && [ "$there" = no ]; then
  echo "Failed to disable unit: Unit file $4 does not exist." >&2; exit 1
fi
if [ "$2" = disable ] && [ -n "$FAIL_DISABLE" ]; then echo "Failed to connect to bus" >&2; exit 1; fi
exit 0
"""


@pytest.fixture
def systemd_only(home, tmp_path, monkeypatch):
    bin_dir = tmp_path / "only-systemd"
    bin_dir.mkdir()
    _exe(bin_dir / "systemctl", STRICT_SYSTEMCTL)
    log = tmp_path / "systemctl.log"
    monkeypatch.setenv("FAKE_SYSTEMCTL_LOG", str(log))
    monkeypatch.setenv("PATH", str(bin_dir))
    (Path(os.environ["HOME"]) / ".codeium" / "windsurf").mkdir(parents=True)
    return {"log": log, "units": Path(os.environ["HOME"]) / ".config" / "systemd" / "user"}


def test_remove_disables_the_timer_before_deleting_its_units(cli, systemd_only):
    units, log = systemd_only["units"], systemd_only["log"]
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    assert (units / "remem-sleep.timer").is_file()
    log.write_text("")
    res = cli("setup", "--remove", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    calls = log.read_text().splitlines()
    assert calls[0] == "--user disable --now remem-sleep.timer unit-file:yes", calls
    assert calls[-1].startswith("--user daemon-reload")
    assert not (units / "remem-sleep.timer").exists() and not (units / "remem-sleep.service").exists()


def test_a_failed_disable_keeps_the_units_and_names_the_disable_command(cli, systemd_only, monkeypatch):
    units = systemd_only["units"]
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    monkeypatch.setenv("FAIL_DISABLE", "1")
    res = cli("setup", "--remove", "--yes", "--agent", "windsurf")
    assert res.exit_code == 1
    assert "systemctl --user disable --now remem-sleep.timer" in res.output
    assert "enable --now" not in res.output
    assert (units / "remem-sleep.timer").is_file()  # so the named command still works


# ------------------------------------------------------------------------------ doctor

def test_doctor_names_an_agent_whose_hooks_are_gone(cli, agents_home):
    assert cli("setup", *WIN, "--agent", "claude-code").exit_code == 0
    (agents_home["user"] / ".claude" / "settings.json").unlink()
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert {"problem": "claude-code has remem's MCP server but none of its hooks",
            "fix": "remem setup --agent claude-code"} in report["problems"]
    assert cli("setup", *WIN, "--agent", "claude-code").exit_code == 0
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert not any("claude-code" in p["problem"] for p in report["problems"])


# ------------------------------------------------------------------------------ a commented cron line

def test_a_commented_out_cron_line_is_not_scheduled_and_setup_leaves_it_off(cli, agents_home):
    from remem.engine.schedule import cron_line

    cron = agents_home["cron"]
    cron.write_text(cron.read_text() + "# " + cron_line() + "\n")
    before = cron.read_bytes()
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    assert report["schedule"]["wired"] is False
    assert any("commented out" in p["problem"] and p["fix"].startswith("crontab -e") for p in report["problems"])
    res = cli("setup", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    assert cron.read_bytes() == before
    assert "commented out" in res.output
    res = cli("setup", "--yes", "--agent", "windsurf", "--json")
    assert any("commented out" in n for n in json.loads(res.stdout)["notes"])
    # Uncommented, it is the job again (and setup changes nothing).
    cron.write_text(cron.read_text().replace("# " + cron_line(), cron_line()))
    assert json.loads(cli("doctor", "--json", "--no-run").stdout)["schedule"]["wired"] is True
    assert "wired already" in cli("setup", "--yes", "--agent", "windsurf").output


# ------------------------------------------------------------------------------ --json exit status

def test_json_exits_1_whenever_errors_is_not_empty(cli, agents_home):
    (agents_home["user"] / ".gemini" / "settings.json").write_text("{not json")
    first = cli("setup", *WIN, "--json")
    assert first.exit_code == 1 and json.loads(first.stdout)["errors"]
    again = cli("setup", *WIN, "--json")  # nothing changes this time
    data = json.loads(again.stdout)
    assert data["changes"] == [] and data["errors"] and again.exit_code == 1
    dry = cli("setup", *WIN, "--json", "--dry-run")
    assert dry.exit_code == 1 and json.loads(dry.stdout)["errors"]
