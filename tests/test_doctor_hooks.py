"""`remem doctor` runs each wired hook once: a hook that fails open (exit 0, nothing shown, its
reason in one line on stderr) is a failure named with that reason, never `ok`. Hooks wired to
an older install still on disk do that once this install has upgraded the memory."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from tests.test_setup import agents_home  # noqa: F401  (fixture)

# An older remem left on disk: this code, with one migration fewer, so it refuses the memory
# this install has upgraded ("written by a newer remem"), as an older release does.
OLDER_INSTALL = f"""#!{sys.executable}
from remem.engine import store
store.MIGRATIONS = store.MIGRATIONS[:-1]
from remem.entry import main
main()
"""


def _claude_settings() -> Path:
    return Path(os.environ["HOME"]) / ".claude" / "settings.json"


def _wire_hooks_to(program: Path) -> int:
    """Claude Code's remem hooks, as setup wrote them, made to run `program` instead: what an
    earlier install's setup left there. Returns how many commands were changed."""
    from remem.engine.setup_edit import remem_argv

    ours = " ".join(shlex.quote(a) for a in remem_argv())
    path = _claude_settings()
    settings = json.loads(path.read_text())
    changed = 0
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                if hook["command"].startswith(ours + " "):
                    hook["command"] = shlex.quote(str(program)) + hook["command"][len(ours):]
                    changed += 1
    path.write_text(json.dumps(settings, indent=2))
    return changed


def _failures(report: dict) -> dict[str, str]:
    return {h["event"]: h["error"] for h in report["hooks"] if h["agent"] == "claude-code" and not h["ok"]}


def test_hooks_of_an_older_install_that_refuse_the_upgraded_memory_are_failures_until_setup_rewires_them(
        cli, agents_home, store, tmp_path):
    assert cli("setup", "--yes", "--agent", "claude-code").exit_code == 0
    older = tmp_path / "older-install" / "remem"
    older.parent.mkdir()
    older.write_text(OLDER_INSTALL)
    older.chmod(0o755)
    assert _wire_hooks_to(older) == 4

    res = cli("doctor", "--json")
    assert res.exit_code == 1
    report = json.loads(res.stdout)
    failed = _failures(report)
    # The prompt and pre-tool hooks open the memory and did nothing; each says why.
    assert set(failed) == {"UserPromptSubmit", "PreToolUse"}, report["hooks"]
    for error in failed.values():
        assert error.startswith("it did nothing: ") and "written by a newer remem" in error
    named = [p for p in report["problems"] if p["problem"].startswith("claude-code hook ")]
    assert {p["fix"] for p in named} == {"remem setup --agent claude-code"}
    assert all(f"it runs {older.resolve()}, not this install's " in p["problem"] for p in named)
    shown = cli("doctor").output
    assert "no: it did nothing" in shown and "upgrade remem" in shown

    # The fix named: setup wires this install's command again, and every hook runs.
    assert cli("setup", "--yes", "--agent", "claude-code").exit_code == 0
    assert str(older) not in _claude_settings().read_text()
    report = json.loads(cli("doctor", "--json").stdout)
    assert _failures(report) == {} and len(report["hooks"]) == 3


def test_this_installs_own_hook_failing_open_is_a_failure_without_naming_another_install(cli, agents_home, store):
    """A memory a newer remem wrote: this install's own hooks skip it. Named, and not blamed on
    another install."""
    from remem.engine.store import MIGRATIONS

    assert cli("setup", "--yes", "--agent", "claude-code").exit_code == 0
    store.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    report = json.loads(cli("doctor", "--json").stdout)
    failed = _failures(report)
    assert set(failed) == {"UserPromptSubmit", "PreToolUse"}
    assert all("written by a newer remem" in error for error in failed.values())
    assert not any("not this install's" in p["problem"] for p in report["problems"])


def test_what_a_hook_says_when_it_fails_open_is_read_as_its_reason():
    from remem.engine.doctor import failed_open

    assert failed_open("remem hook: prompt (codex) skipped: the memory is busy; try again\n") == \
        "the memory is busy; try again"
    assert failed_open("remem: hook skipped: --home is empty; name a folder") == "--home is empty; name a folder"
    assert failed_open("remem hook: unknown agent 'zed'; use one of claude-code, codex") == \
        "unknown agent 'zed'; use one of claude-code, codex"
    assert failed_open("") is None
    assert failed_open("DeprecationWarning: something a library said\n") is None
