"""Cursor gets remem over MCP only: its beforeSubmitPrompt hook can only let a prompt through or
stop it, so remem's entry there did nothing but start remem on every prompt. Setup wires none,
takes out the one an earlier release wrote (and only it), and doctor does not ask for it."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import setup
from remem.engine.setup_edit import command, sha
from remem.engine.setup_json import parse_json
from tests.conftest import run_remem
from tests.test_setup import agents_home  # noqa: F401  (fixture)

ONLY_CURSOR = ("--yes", "--agent", "cursor", "--no-schedule")


def old_entry() -> str:
    """The command an earlier release's setup wrote into Cursor's hooks.json."""
    return command("hook", "prompt", "--agent", "cursor")


def hooks_json(user: Path) -> Path:
    return user / ".cursor" / "hooks.json"


def the_persons_file_with(entry: str | None) -> str:
    """A hand-written hooks.json (odd layout, the person's own hooks), with remem's old entry
    on a line of its own when entry is given."""
    ours = f'      {{"command": {json.dumps(entry)}}},\n' if entry else ""
    return ('{\n  "version": 1,\n  "hooks": {\n    "beforeSubmitPrompt": [\n'
            + ours +
            '      {"command": "~/bin/guard.sh"}\n    ],\n'
            '    "afterFileEdit": [ {"command": "prettier --write"} ]\n  }\n}\n')


def test_setup_wires_no_cursor_hook_and_doctor_does_not_miss_it(cli, agents_home, store):
    user = agents_home["user"]
    res = cli("setup", *ONLY_CURSOR)
    assert res.exit_code == 0, res.output
    assert not hooks_json(user).exists()
    assert "remem" in json.loads((user / ".cursor" / "mcp.json").read_text())["mcpServers"]
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    cursor = next(a for a in report["agents"] if a["agent"] == "cursor")
    assert cursor["mcp"] and cursor["hooks"] == []
    assert not [p for p in report["problems"] if "cursor" in p["problem"] or "cursor" in p["fix"]], report["problems"]

    # An old wiring left in place (setup not run again since) still answers as it did, and
    # doctor runs it without calling anything a problem.
    hooks_json(user).write_text(the_persons_file_with(old_entry()))
    report = json.loads(cli("doctor", "--json").stdout)
    [ran] = [h for h in report["hooks"] if h["agent"] == "cursor"]
    assert ran["ok"], ran
    assert not [p for p in report["problems"] if "cursor" in p["problem"]], report["problems"]
    res = run_remem("hook", "prompt", "--agent", "cursor",
                    input=json.dumps({"prompt": "run the tests", "conversation_id": "c1"}))
    assert res.returncode == 0 and json.loads(res.stdout) == {"continue": True}
    # --remove takes it out, and only it.
    assert cli("setup", "--remove", *ONLY_CURSOR).exit_code == 0
    assert hooks_json(user).read_text() == the_persons_file_with(None)


def test_setup_takes_out_the_old_cursor_hook_and_keeps_every_other_byte(cli, agents_home):
    user = agents_home["user"]
    path = hooks_json(user)
    path.write_text(the_persons_file_with(old_entry()))
    res = cli("setup", *ONLY_CURSOR, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert path.read_text() == the_persons_file_with(None)
    [change] = [c for c in out["changes"] if c["path"] == str(path)]
    assert change["what"] == ["take out remem's old beforeSubmitPrompt hook"] and change["action"] == "update"
    assert any("beforeSubmitPrompt" in n and str(path) in n and "over MCP" in n for n in out["notes"]), out["notes"]
    assert str(path) not in setup.load_manifest()["files"]  # nothing of setup's is left in it
    backups = list((setup.paths.backups_dir() / "setup").iterdir())
    assert the_persons_file_with(old_entry()) in [b.read_text() for b in backups]
    again = cli("setup", *ONLY_CURSOR)
    assert again.exit_code == 0 and "nothing to change: remem is wired already" in again.output
    assert path.read_text() == the_persons_file_with(None)


def test_setup_says_in_its_summary_that_the_old_cursor_hook_goes(cli, agents_home):
    path = hooks_json(agents_home["user"])
    path.write_text(the_persons_file_with(old_entry()))
    dry = cli("setup", *ONLY_CURSOR, "--dry-run")
    assert dry.exit_code == 0 and path.read_text() == the_persons_file_with(old_entry())
    assert f'-      {{"command": {json.dumps(old_entry())}}},' in dry.stdout
    res = cli("setup", *ONLY_CURSOR)
    assert res.exit_code == 0, res.output
    assert f"will change {path} (take out remem's old beforeSubmitPrompt hook)" in res.stdout
    assert f"update: {path}" in res.stdout
    assert "Cursor gets no remem hook" in res.stderr and "over MCP" in res.stderr


def test_setup_deletes_a_cursor_hooks_json_an_earlier_setup_made_for_it_alone(cli, agents_home):
    path = hooks_json(agents_home["user"])
    text = json.dumps({"version": 1, "hooks": {"beforeSubmitPrompt": [{"command": old_entry()}]}}, indent=2) + "\n"
    path.write_text(text)
    # What that setup recorded in setup.json: it created the file.
    setup._save_manifest({"files": {str(path): {"created": True, "backup": None, "target": "cursor",
                                                "written": sha(text)}}})
    res = cli("setup", *ONLY_CURSOR)
    assert res.exit_code == 0, res.output
    assert not path.exists()
    assert str(path) not in setup.load_manifest()["files"]


def test_setup_puts_back_the_backup_of_a_cursor_hooks_json_unchanged_since_an_earlier_setup(cli, agents_home, home):
    path = hooks_json(agents_home["user"])
    mine = '{"version":1,"hooks":{"stop":[{"command":"say done"}]}}'  # on one line, no final newline
    backup = home / "backups" / "setup" / "earlier-cursor-hooks-json"
    backup.parent.mkdir(parents=True)
    backup.write_text(mine)
    text = json.dumps({"version": 1, "hooks": {"stop": [{"command": "say done"}],
                                               "beforeSubmitPrompt": [{"command": old_entry()}]}}, indent=2) + "\n"
    path.write_text(text)
    setup._save_manifest({"files": {str(path): {"created": False, "backup": str(backup), "target": "cursor",
                                                "written": sha(text)}}})
    res = cli("setup", *ONLY_CURSOR)
    assert res.exit_code == 0, res.output
    assert path.read_text() == mine
    assert str(path) not in setup.load_manifest()["files"]


# ------------------------------------------------------------------------------ any hooks.json

_COMMANDS = st.sampled_from(["~/bin/guard.sh", "say done", "remem-lint", "prettier --write", "x remem"])
_ENTRY = st.fixed_dictionaries({"command": _COMMANDS}, optional={"timeout": st.integers(1, 9)})
_EVENTS = st.sampled_from(["beforeSubmitPrompt", "afterFileEdit", "stop", "beforeShellExecution"])


@settings(max_examples=120, deadline=None)
# The person's lists hold an entry each: one that held only remem's entry goes with it (an empty
# list the person had there cannot be told from it).
@given(hooks=st.dictionaries(_EVENTS, st.lists(_ENTRY, min_size=1, max_size=3), max_size=4),
       where=st.lists(st.tuples(_EVENTS, st.integers(0, 3)), max_size=3),
       indent=st.sampled_from([2, 4, "\t", None]), extra=st.booleans())
def test_only_remems_cursor_entries_ever_go(hooks, where, indent, extra):
    """Whatever the person's hooks.json holds, the edit setup plans there takes out remem's
    entries and nothing else (it adds none); a file with none of them is left byte for byte."""
    data: dict = {"version": 1, "hooks": hooks}
    if extra:
        data["note"] = "mine"
    wired = json.loads(json.dumps(data))
    for event, at in where:
        entries = wired["hooks"].setdefault(event, [])
        entries.insert(min(at, len(entries)), {"command": "/opt/remem/bin/remem hook prompt --agent cursor"})
    path = setup.paths.cursor_hooks()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(wired, indent=indent) + "\n"
    path.write_text(text)
    [edit] = [e for e in setup.plan(["cursor"], schedule=False) if e.path == str(path)]
    assert edit.error is None
    if not where:
        assert edit.after == text
        return
    expected = json.loads(json.dumps(data))
    for event, _ in where:  # an event list that held only remem's entries goes with them
        if event not in hooks:
            expected["hooks"].pop(event, None)
    if not expected["hooks"]:
        del expected["hooks"]
        if set(expected) == {"version"}:
            del expected["version"]
    assert parse_json(edit.after) == expected
