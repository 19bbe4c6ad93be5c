"""Each fix `remem doctor` names is one that works: followed as written, the problem is gone.
A memory too damaged to open names the newest good backup to restore (or, with none, the file
to move aside), never `remem doctor` itself; a key of another shape in an agent's settings
names the file and the key to mend before `remem setup --agent`; a backups path that is a
file names the move that lets `remem backup` make its folder."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_setup import agents_home  # noqa: F401  (a fixture, used by name)

WIN = ("--yes", "--no-schedule")


def _doctor(cli) -> dict:
    res = cli("doctor", "--json", "--no-run")
    assert "Traceback" not in res.output, res.output
    return json.loads(res.stdout)


def _command(fix: str) -> list[str]:
    """The command a fix names, without the words in parentheses after it."""
    return shlex.split(fix.split("   (")[0])


def _remembered(cli) -> None:
    res = cli("remember", "We use uv here, not pip: uv pip install, never pip install")
    assert res.exit_code == 0, res.output


def _damage(db: Path, how: str) -> None:
    if how == "truncated":
        with open(db, "r+b") as f:
            f.truncate(db.stat().st_size // 4)
    elif how == "emptied":
        db.write_bytes(b"")
    else:  # overwritten with bytes that are no database
        db.write_bytes(b"not a database at all " * 300)


# ------------------------------------------------------------------------------ 1. a memory too damaged to open
# Each command in a process of its own, as the person runs them (a process that made the memory
# itself opens an empty file it made as new).

def _run(remem_cli, *args: str):
    res = remem_cli(*args)
    assert "Traceback" not in res.stderr, res.stderr
    return res


def _doctor_run(remem_cli) -> dict:
    return json.loads(_run(remem_cli, "doctor", "--json", "--no-run").stdout)


def _seeded(remem_cli) -> None:
    res = _run(remem_cli, "remember", "We use uv here, not pip: uv pip install, never pip install")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("how", ["truncated", "emptied", "overwritten"])
def test_a_memory_too_damaged_to_open_names_the_newest_good_backup_and_restoring_it_works(remem_cli, home, how):
    from remem import paths

    _seeded(remem_cli)
    assert _run(remem_cli, "backup").returncode == 0
    [good] = sorted(paths.backups_dir().glob("memory-*.db"))
    _damage(paths.db_path(), how)

    report = _doctor_run(remem_cli)
    assert "integrity" not in report["store"]  # it could not be opened at all
    [problem] = report["store"]["problems"]
    assert "remem doctor" not in problem["problem"] and "remem doctor" not in problem["fix"]
    assert str(paths.db_path()) in problem["problem"]
    assert problem["fix"].startswith(f"remem restore {shlex.quote(str(good))} --yes")
    assert report["ok"] is False

    argv = _command(problem["fix"])
    assert argv[0] == "remem"
    res = _run(remem_cli, *argv[1:])
    assert res.returncode == 0, res.stderr
    after = _doctor_run(remem_cli)
    assert after["store"]["ok"] is True and after["store"]["integrity"] == "ok", after["store"]
    assert after["store"]["counts"]["episodes"] == 1


@pytest.mark.parametrize("backups", ["missing", "empty", "only a damaged one"])
def test_a_memory_too_damaged_to_open_with_no_good_backup_says_so_and_moving_it_aside_works(
        remem_cli, home, backups):
    from remem import paths

    _seeded(remem_cli)
    folder = paths.backups_dir()
    if backups == "empty":
        folder.mkdir(parents=True)
    elif backups == "only a damaged one":
        assert _run(remem_cli, "backup").returncode == 0
        [made] = folder.glob("memory-*.db")
        _damage(made, "truncated")
    _damage(paths.db_path(), "truncated")

    report = _doctor_run(remem_cli)
    [problem] = report["store"]["problems"]
    assert "remem doctor" not in problem["problem"] and "remem restore" not in problem["fix"]
    assert f"no good backup in {folder}" in problem["problem"]
    assert problem["fix"] == f"no good backup in {folder}; move {paths.db_path()} aside to start anew"
    assert report["ok"] is False

    paths.db_path().rename(paths.db_path().with_name("memory.db.damaged"))  # as the fix says
    after = _doctor_run(remem_cli)
    [left] = after["store"]["problems"]
    assert left["problem"].startswith("no memory yet") and left["fix"].startswith("remem ingest")
    _seeded(remem_cli)  # a new memory starts
    assert _doctor_run(remem_cli)["store"]["ok"] is True


def test_other_causes_that_stop_the_memory_opening_keep_their_own_fix(remem_cli, home):
    """A memory written by a newer remem is no damage: no restore (it would lose what the newer
    one wrote), and no `remem doctor` either."""
    import sqlite3

    from remem import paths
    from remem.engine.store import MIGRATIONS

    _seeded(remem_cli)
    conn = sqlite3.connect(paths.db_path())
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    conn.close()
    [problem] = _doctor_run(remem_cli)["store"]["problems"]
    assert "newer remem" in problem["problem"]
    assert problem["fix"] == "upgrade remem"


# ------------------------------------------------------------------------------ 2. a key of another shape

SHAPES = {
    "hooks a list": (".claude/settings.json", {"hooks": [1, 2]}, '"hooks"'),
    "an event an object": (".claude/settings.json", {"hooks": {"Stop": {"matcher": "x"}}}, '"hooks.Stop"'),
    "servers null": (".claude.json", {"mcpServers": None}, '"mcpServers"'),
}


def _follow(fix: str, path: Path) -> None:
    """Do what a mend fix says, from its words alone: make a key an object (an empty one), or
    wrap its value in a list."""
    data = json.loads(path.read_text())
    made = re.match(r'edit (?P<path>.+?): make "(?P<key>[^"]+)" an object', fix)
    wrapped = re.match(r'edit (?P<path>.+?): wrap the value of "(?P<key>[^"]+)" in \[ \]', fix)
    found = made or wrapped
    assert found is not None, fix
    assert found.group("path") == str(path)
    *above, last = found.group("key").split(".")
    parent = data
    for key in above:
        parent = parent[key]
    parent[last] = {} if made else [parent[last]]
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_settings_key_of_another_shape_is_named_with_its_file_and_mending_it_then_setup_works(
        cli, agents_home, shape):
    name, data, key = SHAPES[shape]
    path = agents_home["user"] / name
    assert cli("setup", *WIN).exit_code == 0
    path.write_text(json.dumps(data))
    assert cli("setup", "--agent", "claude-code", *WIN).exit_code == 1  # what doctor used to name

    report = _doctor(cli)
    mine = [p for p in report["problems"] if "claude-code" in p["problem"] or "claude-code" in p["fix"]]
    assert len(mine) == 1, mine
    [problem] = mine
    assert str(path) in problem["problem"] and key in problem["problem"]
    assert problem["fix"].startswith(f"edit {path}: ") and key in problem["fix"]
    assert problem["fix"].endswith("; then remem setup --agent claude-code")

    _follow(problem["fix"], path)
    then = problem["fix"].rpartition("; then ")[2]
    res = cli(*shlex.split(then)[1:], *WIN)
    assert res.exit_code == 0, res.output
    after = _doctor(cli)
    assert not [p for p in after["problems"] if "claude-code" in p["problem"] or "claude-code" in p["fix"]]
    assert next(a for a in after["agents"] if a["agent"] == "claude-code")["hooks"]


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hooks=_JSON, event_value=_JSON, servers=_JSON)
def test_following_the_mend_a_shape_error_names_always_lets_setup_write_its_entries(hooks, event_value, servers, tmp_path):
    """Whatever shape the person's values have where remem's entries go, the mend named for the
    error, done as it says, lets the edit through (one key at a time, as setup reports them)."""
    from remem.engine.setup_json import Misshapen, claude_hooks, mend, set_grouped_hooks, set_server

    path = tmp_path / "settings.json"
    cases = [
        ({"mcpServers": servers}, lambda d: set_server(d, "mcpServers", {"command": "remem"})),
        ({"hooks": hooks}, lambda d: set_grouped_hooks(d, claude_hooks())),
        ({"hooks": {"PreToolUse": event_value}}, lambda d: set_grouped_hooks(d, claude_hooks())),
    ]
    for data, change in cases:
        for _ in range(5):
            trial = json.loads(json.dumps(data))
            try:
                change(trial)
            except Misshapen as exc:
                error = f"{path}: {exc}"
                how = mend(error)
                assert how is not None and "\n" not in how, error
                path.write_text(json.dumps(data))
                _follow(f"edit {path}: {how}; then remem setup --agent claude-code", path)
                data = json.loads(path.read_text())
                continue
            break
        else:
            raise AssertionError(f"still refused after five mends: {data}")


def test_mend_names_nothing_for_an_error_that_is_no_shape_error():
    from remem.engine.setup_json import mend

    assert mend("/x/settings.json is not valid JSON (Expecting value); fix it by hand") is None
    assert mend("") is None


# ------------------------------------------------------------------------------ 3. a backups path that is a file

def test_a_backups_path_that_is_a_file_is_named_with_the_move_that_lets_backup_work(cli, home):
    from remem import paths

    _remembered(cli)
    folder = paths.backups_dir()
    folder.write_text("my notes, not a folder\n")
    assert cli("config", "set", "backup.nightly", "true").exit_code == 0
    cli("sleep")  # its nightly backup fails on the file, and the sleep records that
    assert cli("backup").exit_code == 1

    report = _doctor(cli)
    said = [p for p in report["problems"] if str(folder) in p["problem"]]
    assert len(said) == 1, report["problems"]
    [problem] = said
    assert "is a file, not a folder" in problem["problem"]
    assert not [p for p in report["problems"] if p["fix"].startswith("remem backup")]
    argv = _command(problem["fix"])
    assert argv[0] == "mv" and argv[1] == str(folder)

    subprocess.run(argv, check=True)
    assert Path(argv[2]).read_text() == "my notes, not a folder\n"  # nothing lost
    res = cli("backup")
    assert res.exit_code == 0, res.output
    after = _doctor(cli)
    assert not [p for p in after["problems"] if "backup" in p["problem"]], after["problems"]


def test_a_backups_link_to_nothing_is_named_too(cli, home):
    from remem import paths

    _remembered(cli)
    folder = paths.backups_dir()
    folder.symlink_to(home / "gone")
    [problem] = [p for p in _doctor(cli)["problems"] if str(folder) in p["problem"]]
    assert "a link to nothing" in problem["problem"] and _command(problem["fix"])[0] == "mv"
