"""remem setup / --remove / the schedule's state on machines with no usable scheduler: no
crontab command, and a systemctl whose user manager does not answer (containers, WSL, CI, a
shell without a login session). Such a machine cannot be had in a test, so its systemctl is
faked: a shell script first on PATH that fails like the real one."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

# systemctl with no user bus, as the real one behaves there (systemd not the init): what it
# does from the unit files alone (enable, disable, is-enabled) works, and anything that asks
# the user manager prints the bus error and exits 1 (`enable --now` makes the link first).
BUSLESS_SYSTEMCTL = """#!/bin/sh
PATH=/usr/bin:/bin  # the test's PATH holds only this script
echo "$*" >> "$FAKE_SYSTEMCTL_LOG"
wants="$FAKE_UNIT_DIR/timers.target.wants"
for unit; do :; done
case "$2" in
  is-enabled) if [ -L "$wants/$unit" ]; then echo enabled; exit 0; fi; echo disabled; exit 1 ;;
  enable) mkdir -p "$wants"; ln -sf "../$unit" "$wants/$unit" ;;
  disable) rm -f "$wants/$unit" ;;
esac
case "$2 $3" in
  "enable --now"|"disable --now") ;;
  "enable "*|"disable "*) exit 0 ;;
esac
echo "Failed to connect to bus: No medium found" >&2
exit 1
"""

# systemctl whose user manager answers; enabling makes the link, unless FAIL_ENABLE is set
# (how units end up written but never enabled, as an earlier release left them).
ANSWERING_SYSTEMCTL = """#!/bin/sh
PATH=/usr/bin:/bin  # the test's PATH holds only this script
echo "$*" >> "$FAKE_SYSTEMCTL_LOG"
wants="$FAKE_UNIT_DIR/timers.target.wants"
for unit; do :; done
case "$2" in
  is-enabled) if [ -L "$wants/$unit" ]; then echo enabled; exit 0; fi; echo disabled; exit 1 ;;
  enable) if [ -n "$FAIL_ENABLE" ]; then echo "Failed to enable unit: Access denied" >&2; exit 1; fi
          mkdir -p "$wants"; ln -sf "../$unit" "$wants/$unit" ;;
  disable) rm -f "$wants/$unit" ;;
esac
exit 0
"""

WINDSURF = json.dumps({"mcpServers": {"linear": {"url": "https://mcp.linear.app/sse"}}}, indent=2) + "\n"


@pytest.fixture
def machine(home, tmp_path, monkeypatch):
    """HOME with Windsurf configured, and a PATH holding no crontab; `use(name)` puts a fake
    systemctl (or none) first on it."""
    from remem import paths

    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    user = Path(os.environ["HOME"])
    windsurf = user / ".codeium" / "windsurf" / "mcp_config.json"
    windsurf.parent.mkdir(parents=True)
    windsurf.write_text(WINDSURF)
    units = paths.systemd_user_dir()
    log = tmp_path / "systemctl.log"
    monkeypatch.setenv("FAKE_SYSTEMCTL_LOG", str(log))
    monkeypatch.setenv("FAKE_UNIT_DIR", str(units))
    bins = {}
    for name, script in (("busless", BUSLESS_SYSTEMCTL), ("answering", ANSWERING_SYSTEMCTL), ("none", None)):
        folder = tmp_path / f"bin-{name}"
        folder.mkdir()
        if script:
            exe = folder / "systemctl"
            exe.write_text(script)
            exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        bins[name] = folder

    def use(name: str) -> None:
        monkeypatch.setenv("PATH", str(bins[name]))

    return {"windsurf": windsurf, "units": units, "log": log, "use": use,
            "link": units / "timers.target.wants" / "remem-sleep.timer"}


def _unit_files(units: Path) -> list[str]:
    return sorted(p.name for p in units.glob("remem-sleep.*")) if units.is_dir() else []


# ------------------------------------------------------------------------------ setup

def test_setup_with_a_fake_busless_systemctl_wires_the_agents_writes_no_timer_and_names_what_works(cli, machine):
    machine["use"]("busless")
    res = cli("setup", "--yes", "--agent", "windsurf")
    # What the machine lacks is a note: everything setup can do here, it did.
    assert res.exit_code == 0, res.output
    assert "remem" in json.loads(machine["windsurf"].read_text())["mcpServers"]
    assert _unit_files(machine["units"]) == []  # none written that nothing could run
    assert "the nightly sleep could not be scheduled" in res.output
    assert "Failed to connect to bus: No medium found" in res.output
    assert "remem setup --no-schedule" in res.output and "sleep --quiet" in res.output
    # The old advice fails the same way on this machine.
    assert "daemon-reload" not in res.output and "enable --now" not in res.output
    # Starting a user manager helps only where systemd is the init.
    assert ("loginctl enable-linger" in res.output) == Path("/run/systemd/system").is_dir()

    again = cli("setup", "--yes", "--agent", "windsurf")
    assert again.exit_code == 0 and "wired already" not in again.output
    assert "could not be scheduled" in again.output
    data = json.loads(cli("setup", "--yes", "--agent", "windsurf", "--json").stdout)
    assert data["errors"] == [] and any("could not be scheduled" in n for n in data["notes"])
    # The named way out works.
    out = cli("setup", "--yes", "--agent", "windsurf", "--no-schedule")
    assert out.exit_code == 0 and "wired already" in out.output


def test_setup_with_no_crontab_and_no_systemctl_says_so_and_remove_exits_0(cli, machine):
    machine["use"]("none")
    res = cli("setup", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    assert "could not be scheduled: there is no crontab or systemctl command" in res.output
    assert "remem setup --no-schedule" in res.output
    # Nothing of the schedule's was ever made here, so there is nothing to fail --remove.
    res = cli("setup", "--remove", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    assert machine["windsurf"].read_text() == WINDSURF


def _units_written_but_never_enabled(cli, machine, monkeypatch) -> None:
    """What an earlier release left on a machine whose enable failed: setup's own units, in
    the manifest, not enabled. Then the machine has no user bus."""
    machine["use"]("answering")
    monkeypatch.setenv("FAIL_ENABLE", "1")
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 1
    assert _unit_files(machine["units"]) == ["remem-sleep.service", "remem-sleep.timer"]
    assert not machine["link"].is_symlink()
    monkeypatch.delenv("FAIL_ENABLE")
    machine["use"]("busless")


def test_setup_rerun_with_a_fake_busless_systemctl_takes_out_units_it_wrote_but_never_enabled(
        cli, machine, monkeypatch):
    _units_written_but_never_enabled(cli, machine, monkeypatch)
    res = cli("setup", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0 and "wired already" not in res.output
    assert "will delete" in res.output and "could not be scheduled" in res.output
    assert _unit_files(machine["units"]) == []
    from remem.engine.setup import load_manifest

    assert not any("remem-sleep" in p for p in load_manifest()["files"])
    again = cli("setup", "--yes", "--agent", "windsurf")
    assert again.exit_code == 0 and "will " not in again.output and "wired already" not in again.output
    assert "could not be scheduled" in again.output


def test_setup_with_a_fake_busless_systemctl_leaves_a_timer_enabled_elsewhere(cli, machine):
    machine["use"]("answering")
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    assert machine["link"].is_symlink()
    before = {p: p.read_bytes() for p in machine["units"].glob("remem-sleep.*")}
    # The same person in a shell with no user session (su): the timer runs in their login one.
    machine["use"]("busless")
    res = cli("setup", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    assert {p: p.read_bytes() for p in machine["units"].glob("remem-sleep.*")} == before
    assert machine["link"].is_symlink()
    assert "leaves the enabled nightly timer as it is" in res.output
    assert "wired already" not in res.output


def test_setup_says_a_disabled_timer_is_off_instead_of_wired_already(cli, machine):
    machine["use"]("answering")
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    machine["link"].unlink()  # `systemctl --user disable remem-sleep.timer`
    res = cli("setup", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    assert "wired already" not in res.output
    assert "written but not enabled" in res.output and "enable --now remem-sleep.timer" in res.output
    assert not machine["link"].is_symlink()  # the person's choice stays


# ------------------------------------------------------------------------------ --remove

def test_remove_with_a_fake_busless_systemctl_deletes_the_units_and_exits_0(cli, machine, monkeypatch):
    _units_written_but_never_enabled(cli, machine, monkeypatch)
    machine["log"].write_text("")
    res = cli("setup", "--remove", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    assert machine["windsurf"].read_text() == WINDSURF
    assert _unit_files(machine["units"]) == []
    assert "units are deleted" in res.output and "does not answer" in res.output
    assert "remem setup --remove` again" not in res.output
    assert "daemon-reload" not in machine["log"].read_text()  # it could only fail here
    assert "nothing to change" in cli("setup", "--remove", "--yes", "--agent", "windsurf").output


def test_remove_with_a_fake_busless_systemctl_takes_out_an_enabled_timer_and_its_link(cli, machine):
    machine["use"]("answering")
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    assert machine["link"].is_symlink()
    machine["use"]("busless")
    res = cli("setup", "--remove", "--yes", "--agent", "windsurf", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["errors"] == [] and any("units are deleted" in n for n in data["notes"])
    assert _unit_files(machine["units"]) == [] and not machine["link"].is_symlink()
    assert machine["windsurf"].read_text() == WINDSURF


# ------------------------------------------------------------------------------ the preview

def test_the_preview_says_create_for_a_file_setup_creates(cli, machine):
    machine["use"]("answering")
    machine["windsurf"].unlink()
    res = cli("setup", "--yes", "--agent", "windsurf")
    assert res.exit_code == 0, res.output
    assert f"will create {machine['windsurf']} (" in res.output
    assert f"will create {machine['units'] / 'remem-sleep.timer'} (" in res.output
    assert "will change" not in res.output
    machine["windsurf"].write_text(WINDSURF)
    assert f"will change {machine['windsurf']} (" in cli("setup", "--yes", "--agent", "windsurf").output


# ------------------------------------------------------------------------------ the state

def test_schedule_state_tells_no_scheduler_from_written_but_not_enabled_with_fake_systemctls(
        cli, machine, monkeypatch):
    from remem.engine.schedule import schedule_state

    machine["use"]("none")
    state = schedule_state()
    assert (state["wired"], state["how"], state["state"]) == (False, "none", "no scheduler on this machine")

    machine["use"]("busless")
    state = schedule_state()
    assert (state["wired"], state["state"]) == (False, "no scheduler on this machine")
    assert "does not answer (Failed to connect to bus: No medium found)" in state["problem"]
    assert "sleep --quiet" in state["fix"]

    _units_written_but_never_enabled(cli, machine, monkeypatch)
    state = schedule_state()
    assert state["wired"] is False and state["state"].startswith("written but not enabled")
    assert state["fix"].startswith("remem setup")

    machine["use"]("answering")
    state = schedule_state()
    assert (state["wired"], state["state"]) == (False, "written but not enabled")
    assert state["fix"] == "systemctl --user enable --now remem-sleep.timer"
    assert cli("setup", "--yes", "--agent", "windsurf").exit_code == 0
    state = schedule_state()
    assert (state["wired"], state["state"]) == (False, "written but not enabled")  # setup left it off
    machine["link"].parent.mkdir(parents=True, exist_ok=True)
    machine["link"].symlink_to("../remem-sleep.timer")
    assert schedule_state()["wired"] is True and schedule_state()["state"] == "timer enabled"
