"""remem setup / doctor: --remove --agent and the nightly job, configs of an unexpected shape,
what doctor checks of the MCP server, the nightly job and the memory the agents are wired to,
`%` in a home, --json, and --dry-run's diff."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import setup
from tests.test_setup import agents_home  # noqa: F401  (a fixture, used by name)

WIN = ("--yes", "--no-schedule")


def _cron(agents_home) -> str:
    return agents_home["cron"].read_text() if agents_home["cron"].exists() else ""


# ------------------------------------------------------------------------------ 1. --remove --agent

def test_remove_of_one_agent_keeps_the_nightly_job_other_agents_use_with_a_fake_crontab(cli, agents_home):
    assert cli("setup", "--yes").exit_code == 0
    assert "# remem: nightly sleep" in _cron(agents_home)

    res = cli("setup", "--remove", "--yes", "--agent", "cursor", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert "# remem: nightly sleep" in _cron(agents_home)
    assert not [c for c in out["changes"] if c["target"] == "schedule"]
    assert any("stay scheduled" in n and "claude-code" in n for n in out["notes"])
    assert setup.load_manifest()["schedule_off"] is None

    # An agent remem was never wired into: nothing taken out, nothing recorded as removed.
    cli("setup", "--remove", "--yes", "--agent", "vscode")
    cli("setup", "--remove", "--yes", "--agent", "vscode")
    assert setup.load_manifest()["schedule_off"] is None
    assert "# remem: nightly sleep" in _cron(agents_home)

    # The last agents, named: the job goes with them.
    rest = [a for a in setup.AGENTS if a != "cursor"]
    assert cli("setup", "--remove", "--yes", *[w for a in rest for w in ("--agent", a)]).exit_code == 0
    assert "# remem: nightly sleep" not in _cron(agents_home)
    assert setup.load_manifest()["schedule_off"] == "removed"


def test_remove_that_takes_no_job_out_records_no_removal_with_a_fake_crontab(cli, agents_home):
    assert cli("setup", "--yes").exit_code == 0
    crontab = agents_home["cron"].read_text()
    agents_home["cron"].write_text("".join(l for l in crontab.splitlines(keepends=True) if "remem" not in l))
    assert cli("setup", "--remove", "--yes").exit_code == 0
    assert setup.load_manifest().get("schedule_off") is None


# ------------------------------------------------------------------------------ 2. unexpected shapes

def test_a_value_of_an_unexpected_shape_is_named_and_its_file_left_as_it_is(cli, agents_home):
    user = agents_home["user"]
    shapes = {
        # An object where Claude Code wants a list of groups: the person's own guard hook.
        user / ".claude" / "settings.json": ({"hooks": {"PreToolUse": {"matcher": "Bash", "hooks": [
            {"type": "command", "command": "~/bin/guard.sh"}]}}}, '"hooks.PreToolUse" is an object'),
        user / ".codeium" / "windsurf" / "mcp_config.json": ({"mcpServers": [1, 2]}, '"mcpServers" is a list'),
        user / ".config" / "Claude" / "claude_desktop_config.json": ({"mcpServers": None}, '"mcpServers" is null'),
        user / ".gemini" / "settings.json": ({"hooks": []}, '"hooks" is a list'),
    }
    for path, (data, _) in shapes.items():
        path.write_text(json.dumps(data))
    before = {path: path.read_bytes() for path in shapes}
    # Cursor's hooks.json gets nothing of remem's: an odd shape there is none of setup's business.
    cursor_hooks = user / ".cursor" / "hooks.json"
    cursor_hooks.write_text(json.dumps({"version": 1, "hooks": {"beforeSubmitPrompt": {"command": "mine.sh"}}}))
    cursor_before = cursor_hooks.read_bytes()

    res = cli("setup", *WIN, "--json")
    assert res.exit_code == 1
    out = json.loads(res.output)
    for path, (_, said) in shapes.items():
        assert path.read_bytes() == before[path]
        error = next(e for e in out["errors"] if e.startswith(str(path)))
        assert said in error and "then run `remem setup` again" in error and "\n" not in error
    assert cursor_hooks.read_bytes() == cursor_before
    assert not [e for e in out["errors"] if e.startswith(str(cursor_hooks))]
    # The rest went ahead.
    assert "remem" in json.loads((user / ".claude.json").read_text())["mcpServers"]


# ------------------------------------------------------------------------------ 3. hooks before any memory

def test_doctor_names_a_missing_memory_once_not_as_hooks_that_setup_would_fix(cli, agents_home, home):
    from remem.engine import doctor

    assert cli("setup", *WIN).exit_code == 0
    assert not (home / "memory.db").exists()
    report = doctor.diagnose()
    assert any(not h["ok"] and "no memory yet" in h["error"] for h in report["hooks"])  # still shown there
    said = [p for p in report["problems"] if "no memory yet" in p["problem"]]
    assert len(said) == 1 and said[0]["fix"].startswith("remem ingest")
    assert not [p for p in report["problems"] if p["fix"].startswith("remem setup")]


# ------------------------------------------------------------------------------ 4. the MCP server's program

def test_doctor_names_an_mcp_server_entry_that_runs_a_missing_program(cli, agents_home):
    from remem.engine import doctor
    from remem.engine.setup_edit import server_entry

    assert cli("setup", *WIN).exit_code == 0
    user = agents_home["user"]
    for path in (user / ".claude.json", user / ".codeium" / "windsurf" / "mcp_config.json"):
        data = json.loads(path.read_text())
        data["mcpServers"]["remem"]["command"] = "/old/venv/bin/remem"
        path.write_text(json.dumps(data, indent=2))
    toml = user / ".codex" / "config.toml"
    ours = f"command = {json.dumps(server_entry()['command'])}"
    assert ours in toml.read_text()
    toml.write_text(toml.read_text().replace(ours, 'command = "/old/venv/bin/remem"'))
    report = doctor.diagnose(run_hooks=False)
    missing = {p["fix"] for p in report["problems"] if "MCP server runs a missing program: /old/venv/bin/remem" in p["problem"]}
    assert missing == {"remem setup --agent claude-code", "remem setup --agent windsurf", "remem setup --agent codex"}
    assert next(a for a in report["agents"] if a["agent"] == "windsurf")["mcp"]

    assert cli("setup", *WIN).exit_code == 0
    report = doctor.diagnose(run_hooks=False)
    assert not [p for p in report["problems"] if "MCP server" in p["problem"]]


# ------------------------------------------------------------------------------ 5. the nightly job's program

def test_doctor_names_a_nightly_crontab_line_that_runs_a_missing_program_with_a_fake_crontab(cli, agents_home):
    from remem.engine import doctor
    from remem.engine.setup_edit import remem_argv

    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    assert not doctor.diagnose(run_hooks=False)["schedule"].get("missing")
    cron = agents_home["cron"]
    cron.write_text(cron.read_text().replace(remem_argv()[0], "/old/venv/bin/remem"))
    report = doctor.diagnose(run_hooks=False)
    said = [p for p in report["problems"] if "nightly job runs a missing program" in p["problem"]]
    assert len(said) == 1 and "/old/venv/bin/remem" in said[0]["problem"] and said[0]["fix"].startswith("remem setup")
    assert "missing" in report["schedule"]["state"]


def test_doctor_names_a_nightly_systemd_service_that_runs_a_missing_program_with_a_fake_systemctl(
        cli, home, tmp_path, monkeypatch):
    from remem.engine import doctor
    from remem.engine.setup_edit import remem_argv
    from tests.test_setup import only_systemd

    only_systemd(tmp_path, monkeypatch)
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    service = Path(os.environ["HOME"]) / ".config" / "systemd" / "user" / "remem-sleep.service"
    assert not doctor.diagnose(run_hooks=False)["schedule"].get("missing")
    service.write_text(service.read_text().replace(remem_argv()[0], "/old/venv/bin/python"))
    said = [p for p in doctor.diagnose(run_hooks=False)["problems"] if "nightly job runs a missing" in p["problem"]]
    assert len(said) == 1 and "/old/venv/bin/python" in said[0]["problem"]


# ------------------------------------------------------------------------------ 6. `%` in a home

def _as_cron_reads(command: str) -> str:
    """A crontab command as cron hands it to the shell: `\\%` is `%`, and a bare `%` ends the
    command (what follows is its stdin)."""
    out, i = [], 0
    while i < len(command):
        if command[i] == "\\" and command[i + 1:i + 2] == "%":
            out.append("%")
            i += 2
            continue
        if command[i] == "%":
            break
        out.append(command[i])
        i += 1
    return "".join(out)


_HOME_NAMES = st.text(alphabet=st.sampled_from("abc %h\\'\" $"), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_HOME_NAMES)
def test_a_home_with_percent_signs_reaches_cron_and_systemd_as_it_is(tmp_path, monkeypatch, name):
    import shlex

    from remem.engine import schedule

    home_dir = tmp_path / name
    monkeypatch.setenv("REMEM_HOME", str(home_dir))
    line = schedule.cron_line()
    command = line[len(schedule.CRON_TIME) + 1:-len(schedule.CRON_MARK) - 1]
    assert _as_cron_reads(command) == schedule.nightly_command()
    assert shlex.split(_as_cron_reads(command))[2] == str(home_dir)  # remem --home HOME ingest
    service, _ = schedule._unit_texts()
    exec_start = next(l for l in service.splitlines() if l.startswith("ExecStart="))
    assert "%" not in exec_start.replace("%%", "")  # no `%h` or the like for systemd to expand
    assert schedule._exec_command(exec_start) == schedule.nightly_command()


def test_setup_with_a_percent_in_the_home_writes_a_cron_line_that_runs_it_with_a_fake_crontab(
        cli, agents_home, tmp_path, monkeypatch):
    import shlex

    from remem.engine import schedule

    home_dir = tmp_path / "50% memory"
    monkeypatch.setenv("REMEM_HOME", str(home_dir))
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    line = next(l for l in agents_home["cron"].read_text().splitlines() if schedule.CRON_MARK in l)
    words = shlex.split(_as_cron_reads(line.split(None, 5)[5]))
    assert words[words.index("--home") + 1] == str(home_dir)
    assert "nothing to change" in cli("setup", "--yes", "--agent", "windsurf").output


# ------------------------------------------------------------------------------ 7. --json in a terminal

def test_setup_json_in_a_terminal_writes_only_with_yes(agents_home):
    from remem import paths
    from tests.test_setup_answered_no import answer_in_a_terminal

    windsurf = agents_home["user"] / ".codeium" / "windsurf" / "mcp_config.json"
    before = windsurf.read_bytes()
    res = answer_in_a_terminal("n", "setup", "--no-schedule", "--agent", "windsurf", "--json")
    assert res.returncode == 1
    assert "--yes" in json.loads(res.stdout)["error"] and "--yes" in res.stderr
    assert windsurf.read_bytes() == before and not paths.setup_manifest().exists()
    res = answer_in_a_terminal("", "setup", "--no-schedule", "--agent", "windsurf", "--json", "--yes")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["changes"] and "remem" in json.loads(windsurf.read_text())["mcpServers"]


# ------------------------------------------------------------------------------ 8. --dry-run's diff, --json

def test_dry_run_marks_a_file_with_no_final_newline_so_the_next_diff_starts_on_its_own_line(cli, agents_home):
    user = agents_home["user"]
    for path in (user / ".codeium" / "windsurf" / "mcp_config.json",
                 user / ".config" / "Claude" / "claude_desktop_config.json"):
        path.write_text(path.read_text().rstrip("\n"))
    res = cli("setup", "--dry-run", "--no-schedule", "--agent", "windsurf", "--agent", "claude-desktop")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines.count("\\ No newline at end of file") == 2  # each file's last line, "}", as context
    assert len([l for l in lines if l.startswith("--- ")]) == 2
    assert not [l for l in lines if "--- " in l and not l.startswith("--- ")]


@settings(max_examples=80, deadline=None)
@given(before=st.text(alphabet="ab\n\r\u2028", max_size=20), after=st.text(alphabet="ab\n\r\u2028", max_size=20))
def test_the_dry_run_diff_is_one_patch_reads_back(before, after, tmp_path_factory):
    import shutil
    import subprocess

    import pytest

    from remem.engine.setup_edit import Edit

    if not shutil.which("patch"):
        pytest.skip("no patch command on this machine")
    if before == after:
        return
    folder = tmp_path_factory.mktemp("patch")
    (folder / "file").write_bytes(before.encode())
    (folder / "diff").write_bytes(Edit("t", "file", before, after).diff().encode())
    res = subprocess.run(["patch", "-s", "-o", str(folder / "out"), str(folder / "file"), str(folder / "diff")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (folder / "out").read_bytes() == after.encode()


def test_setup_json_always_has_next_steps_and_says_when_no_agent_is_found(cli, home):
    res = cli("setup", "--json", "--yes", "--no-schedule")
    out = json.loads(res.stdout)
    assert out["next_steps"] == [] and any("no agent found" in n for n in out["notes"])
    out = json.loads(cli("setup", "--json", "--dry-run", "--no-schedule").stdout)
    assert "next_steps" in out and any("no agent found" in n for n in out["notes"])


# ------------------------------------------------------------------------------ 9. another memory

def test_doctor_names_agents_wired_to_another_memory_than_it_checks_with_a_fake_crontab(
        cli, agents_home, home, tmp_path, monkeypatch):
    from remem.engine import doctor

    assert cli("setup", "--yes", "--agent", "claude-code", "--agent", "windsurf").exit_code == 0
    assert not [p for p in doctor.diagnose(run_hooks=False)["problems"] if "wired to the memory" in p["problem"]]
    other = tmp_path / "other memory"
    monkeypatch.setenv("REMEM_HOME", str(other))
    report = doctor.diagnose()
    said = [p for p in report["problems"] if "wired to the memory" in p["problem"]]
    assert len(said) == 1
    assert str(home) in said[0]["problem"] and str(other) in said[0]["problem"]
    assert all(w in said[0]["problem"] for w in ("claude-code", "windsurf", "the nightly job"))
    assert said[0]["fix"] == f"remem --home {home} doctor"
    # Its hooks find no memory at their own home: the fix names that home, not this one.
    fixes = [p["fix"] for p in report["problems"] if "hook" in p["problem"] and "no memory yet" in p["problem"]]
    assert fixes and all(f == f"remem --home {home} ingest" for f in fixes)
    assert not [p for p in report["problems"] if "logs to" in p["problem"]]  # the job logs into its own home


# ------------------------------------------------------------------------------ 10. comments in emptied containers

GEMINI_JSONC = """{
  "theme": "GitHub",
  // servers I took out for now
  "mcpServers": {
    // "old": {"command": "old-mcp"}
  },
  "hooks": {
    "BeforeAgent": [ /* none yet */ ]
  }
}
"""


def test_remove_keeps_an_emptied_object_or_list_that_holds_a_comment(cli, agents_home):
    from remem.engine.setup_json import parse_jsonc

    path = agents_home["user"] / ".gemini" / "settings.json"
    path.write_text(GEMINI_JSONC)
    assert cli("setup", *WIN, "--agent", "gemini").exit_code == 0
    # Changed since setup (Gemini CLI wrote it): --remove takes remem's entries out, as text.
    path.write_text(path.read_text().replace('"GitHub"', '"Dracula"'))
    res = cli("setup", "--remove", *WIN, "--agent", "gemini")
    assert res.exit_code == 0, res.output
    text = path.read_text()
    assert '// "old": {"command": "old-mcp"}' in text and "/* none yet */" in text
    assert "// servers I took out for now" in text and "remem" not in text
    assert parse_jsonc(text) == {"theme": "Dracula", "mcpServers": {}, "hooks": {"BeforeAgent": []}}


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(hooks=_JSON, event_value=_JSON, servers=_JSON)
def test_setup_never_drops_a_value_of_a_shape_it_does_not_expect(hooks, event_value, servers):
    """Whatever the person's config holds where remem's entries go, each value is either kept
    (remem's added beside it) or refused with a message naming its key: never replaced."""
    import copy

    from remem.engine.setup_json import Misshapen, claude_hooks, set_grouped_hooks, set_server

    def kept(before, after):  # every element or member of before is still in after
        if isinstance(before, list):
            return isinstance(after, list) and all(x in after for x in before)
        if isinstance(before, dict):
            return isinstance(after, dict) and all(k in after for k in before)
        return False

    cases = [
        ({"mcpServers": servers}, lambda d: set_server(d, "mcpServers", {"command": "remem"}), ("mcpServers",)),
        ({"hooks": hooks}, lambda d: set_grouped_hooks(d, claude_hooks()), ("hooks",)),
        ({"hooks": {"PreToolUse": event_value}}, lambda d: set_grouped_hooks(d, claude_hooks()),
         ("hooks", "PreToolUse")),
    ]
    for data, change, where in cases:
        before = data
        for key in where:
            before = before[key]
        new = copy.deepcopy(data)
        try:
            change(new)
        except Misshapen as exc:
            assert f'"{".".join(where)}"' in str(exc) and "\n" not in str(exc)
            continue
        after = new
        for key in where:
            after = after[key]
        assert kept(before, after), (data, new)
