"""`remem setup` and `--remove` keep what is the person's: their own Codex [features] table, the
keys they added to remem's entries, a write-protected or hard-linked config, the comments in
config.toml, another memory's wiring; and they name what stops them (a write the system
refuses, a damaged setup.json, a link into a missing folder) with the fix, writing nothing."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.test_setup import agents_home  # noqa: F401  (fixture)

WIN = ("--yes", "--no-schedule")


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


# ------------------------------------------------------------------------------ Codex [features]

def test_remove_keeps_a_codex_features_table_the_person_wrote(cli, agents_home, home):
    import tomlkit

    config = agents_home["user"] / ".codex" / "config.toml"
    config.write_text('model = "o3"\n\n[features]\ncodex_hooks = true\n')
    args = (*WIN, "--agent", "codex")
    assert cli("setup", *args).exit_code == 0
    assert tomllib.loads(config.read_text())["features"] == {"codex_hooks": True}  # theirs, as it was
    assert json.loads((home / "setup.json").read_text())["files"][str(config)]["features"] == "none"

    # Anything rewriting the file since (`codex mcp add foo -- foo-cmd`): no byte-for-byte restore.
    doc = tomlkit.parse(config.read_text())
    doc["mcp_servers"]["foo"] = {"command": "foo-cmd"}
    config.write_text(tomlkit.dumps(doc))
    assert cli("setup", "--remove", *args).exit_code == 0
    assert tomllib.loads(config.read_text()) == {"model": "o3", "features": {"codex_hooks": True},
                                                 "mcp_servers": {"foo": {"command": "foo-cmd"}}}

    # A setup.json from before "features" was recorded: that release appended the lone table,
    # which still becomes the current flag.
    config.write_text('model = "o3"\n\n[features]\ncodex_hooks = true\n')
    (home / "setup.json").write_text(json.dumps({"files": {str(config): {
        "created": False, "backup": None, "target": "codex", "written": "0" * 64}}}))
    assert cli("setup", *args).exit_code == 0
    assert tomllib.loads(config.read_text())["features"] == {"hooks": True}
    assert json.loads((home / "setup.json").read_text())["files"][str(config)]["features"] == "table"


# ------------------------------------------------------------------------------ the person's keys stay

def test_setup_again_keeps_what_the_person_added_to_remems_entries(cli, agents_home):
    user = agents_home["user"]
    assert cli("setup", *WIN).exit_code == 0
    added = {
        user / ".claude.json": ("mcpServers", {"env": {"HF_HOME": "/data/hf"}}),
        user / ".gemini" / "settings.json": ("mcpServers", {"trust": True, "timeout": 60000}),
        user / ".cursor" / "mcp.json": ("mcpServers", {"disabled": False, "alwaysAllow": ["recall"]}),
        user / ".codeium" / "windsurf" / "mcp_config.json": ("mcpServers", {"disabled": True}),
        user / ".config" / "Claude" / "claude_desktop_config.json": ("mcpServers", {"env": {"A": "1"}}),
        user / ".config" / "Code" / "User" / "mcp.json": ("servers", {"envFile": "${workspaceFolder}/.env"}),
    }
    for path, (key, extra) in added.items():
        data = _json(path)
        data[key]["remem"].update(extra, command="/old/install/bin/remem")  # an install moved since
        path.write_text(json.dumps(data, indent=2) + "\n")
    claude_settings = user / ".claude" / "settings.json"
    data = _json(claude_settings)
    prompt = next(h for g in data["hooks"]["UserPromptSubmit"] for h in g["hooks"] if "hook prompt" in h["command"])
    stop = next(h for g in data["hooks"]["Stop"] for h in g["hooks"] if "hook stop" in h["command"])
    prompt.update(timeout=30, statusMessage="remembering")  # a longer timeout: theirs to keep
    stop["timeout"] = 1  # shorter than remem's budget: the agent would kill the hook
    claude_settings.write_text(json.dumps(data, indent=2) + "\n")

    res = cli("setup", *WIN)
    assert res.exit_code == 0, res.output
    for path, (key, extra) in added.items():
        entry = _json(path)[key]["remem"]
        assert {k: entry[k] for k in extra} == extra, path
        assert entry["command"] != "/old/install/bin/remem" and entry["args"][-1] == "serve"
    data = _json(claude_settings)
    prompt = next(h for g in data["hooks"]["UserPromptSubmit"] for h in g["hooks"] if "hook prompt" in h["command"])
    stop = next(h for g in data["hooks"]["Stop"] for h in g["hooks"] if "hook stop" in h["command"])
    assert prompt["timeout"] == 30 and prompt["statusMessage"] == "remembering"
    assert stop["timeout"] == 5
    assert "nothing to change" in cli("setup", *WIN).output


def test_set_server_keeps_every_key_remem_does_not_own():
    from remem.engine.setup_json import set_server

    ours = {"type": "stdio", "command": "/new/remem", "args": ["serve"], "env": {}}
    keys = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8).filter(
        lambda k: k not in ("type", "command", "args", "env", "url", "httpUrl", "serverUrl"))
    values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                          lambda inner: st.lists(inner, max_size=3), max_leaves=5)

    @settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.dictionaries(keys, values, max_size=4), st.one_of(st.none(), st.dictionaries(st.just("A"), st.text())))
    def check(extra, env):
        current = {"command": "/old/remem", "args": ["x"], **extra, **({"env": env} if env is not None else {})}
        data = {"mcpServers": {"remem": current}}
        set_server(data, "mcpServers", ours)
        entry = data["mcpServers"]["remem"]
        assert {k: entry[k] for k in extra} == extra
        assert (entry["type"], entry["command"], entry["args"]) == ("stdio", "/new/remem", ["serve"])
        assert entry["env"] == (env if env is not None else {})
        assert set_server(data, "mcpServers", ours) == []  # a second run changes nothing

    check()


# ------------------------------------------------------------------------------ protected configs

def test_setup_leaves_a_write_protected_config_and_a_hard_linked_one(cli, agents_home, tmp_path):
    cursor = agents_home["user"] / ".cursor" / "mcp.json"
    dotfile = tmp_path / "dotfiles" / "mcp.json"
    dotfile.parent.mkdir()
    cursor.rename(dotfile)
    os.link(dotfile, cursor)
    before = dotfile.read_bytes()
    res = cli("setup", *WIN, "--agent", "cursor")
    assert res.exit_code == 1
    assert (f"{cursor} has 2 hard links, which replacing it would break; make it a symlink instead "
            "(remem writes through symlinks and keeps them), then run `remem setup` again") in res.stderr
    assert os.stat(cursor).st_nlink == 2 and dotfile.read_bytes() == before

    cursor.unlink()
    cursor.write_bytes(before)
    cursor.chmod(0o444)
    res = cli("setup", *WIN, "--agent", "cursor")
    assert res.exit_code == 1
    assert f"{cursor} is write-protected, so setup leaves it as it is; make it writable (chmod u+w" in res.stderr
    assert cursor.read_bytes() == before and cursor.stat().st_mode & 0o777 == 0o444


# ------------------------------------------------------------------------------ failed writes named

def _chattr(flag: str, path: Path) -> bool:
    try:
        return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0
    except OSError:
        return False


def test_an_immutable_folder_is_named_with_the_config_and_the_fix_needs_chattr(cli, agents_home, home):
    """Needs chattr (root, a file system with attributes): skipped where there is none."""
    folder = agents_home["user"] / ".claude"
    if not _chattr("+i", folder):
        pytest.skip("chattr +i is not available here")
    try:
        res = cli("setup", *WIN, "--agent", "claude-code")
    finally:
        _chattr("-i", folder)
    assert res.exit_code == 1
    line = next(l for l in res.stderr.splitlines() if "settings.json" in l)
    assert line == (f"remem: {folder / 'settings.json'} cannot be written (Operation not permitted); check the "
                    "permissions and attributes of it and its folder (`lsattr -d`: one marked i is immutable "
                    "until `chattr -i`), then run `remem setup` again")
    assert ".tmp" not in res.stderr


def test_a_setup_json_that_cannot_be_saved_stops_setup_before_any_config_changes(cli, agents_home, home):
    cursor = agents_home["user"] / ".cursor" / "mcp.json"
    before = cursor.read_bytes()
    home.mkdir(parents=True, exist_ok=True)
    (home / "setup.json").mkdir()
    res = cli("setup", *WIN, "--agent", "cursor")
    assert res.exit_code == 1
    assert (f"{home / 'setup.json'} cannot be read (Is a directory); move that folder aside, then run "
            "`remem setup` again") in res.stderr
    assert "setup.json.tmp" not in res.output and cursor.read_bytes() == before


def test_a_setup_json_that_cannot_be_written_stops_setup_first_needs_chattr(cli, agents_home, home):
    """Needs chattr (root, a file system with attributes): skipped where there is none."""
    cursor = agents_home["user"] / ".cursor" / "mcp.json"
    assert cli("setup", *WIN, "--agent", "windsurf").exit_code == 0  # setup.json is there
    before = cursor.read_bytes()
    if not _chattr("+i", home / "setup.json"):
        pytest.skip("chattr +i is not available here")
    try:
        res = cli("setup", *WIN, "--agent", "cursor")
    finally:
        _chattr("-i", home / "setup.json")
    assert res.exit_code == 1
    assert f"remem: {home / 'setup.json'} cannot be written (Operation not permitted)" in res.stderr
    assert cursor.read_bytes() == before  # not written without its record


# ------------------------------------------------------------------------------ another memory's wiring

def test_remove_takes_out_only_this_memorys_entries(cli, agents_home, tmp_path, monkeypatch):
    user = agents_home["user"]
    first, second = tmp_path / "memory-a", tmp_path / "memory-b"
    args = (*WIN, "--agent", "claude-code", "--agent", "codex")
    monkeypatch.setenv("REMEM_HOME", str(first))
    assert cli("setup", *args).exit_code == 0
    monkeypatch.setenv("REMEM_HOME", str(second))
    assert cli("setup", *args).exit_code == 0  # remem's entries now run the second memory
    wired = {p: p.read_bytes() for p in (user / ".claude" / "settings.json", user / ".claude.json",
                                         user / ".codex" / "config.toml", user / ".codex" / "hooks.json")}

    monkeypatch.setenv("REMEM_HOME", str(first))
    dry = cli("setup", "--remove", "--dry-run", *args)
    assert dry.exit_code == 0 and "nothing changed" in dry.stdout
    res = cli("setup", "--remove", *args)
    assert res.exit_code == 0, res.output
    assert {p: p.read_bytes() for p in wired} == wired
    notes = [l for l in res.stderr.splitlines() if "another memory" in l]
    assert len(notes) == 1 and f"run another memory ({second})" in notes[0]
    assert f"`remem --home {second} setup --remove` takes them out" in notes[0]

    monkeypatch.setenv("REMEM_HOME", str(second))
    assert cli("setup", "--remove", *args).exit_code == 0
    assert "remem" not in json.dumps(_json(user / ".claude" / "settings.json"))
    assert "remem" not in tomllib.loads((user / ".codex" / "config.toml").read_text()).get("mcp_servers", {})


def test_entries_without_a_home_belong_to_the_default_memory(agents_home, tmp_path, monkeypatch):
    from remem.engine.setup_json import unset_grouped_hooks, unset_server

    def data() -> dict:
        return {"mcpServers": {"remem": {"command": "/bin/remem", "args": ["serve"]}},
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/remem hook stop"}]}]}}

    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "elsewhere"))
    mine = data()
    assert unset_server(mine, "mcpServers") == [] and unset_grouped_hooks(mine) == []
    monkeypatch.setenv("REMEM_HOME", str(agents_home["user"] / ".remem"))
    assert unset_server(mine, "mcpServers") and unset_grouped_hooks(mine) and mine == {}
    monkeypatch.delenv("REMEM_HOME")
    mine = data()
    assert unset_server(mine, "mcpServers") and unset_grouped_hooks(mine) and mine == {}


_HOME_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(home=_HOME_TEXT)
def test_the_home_a_hook_command_names_reads_back_as_written(home):
    from remem.engine.setup_edit import hook_home, is_ours

    for cmd in (f"/usr/bin/remem --home {shlex.quote(home)} hook prompt --agent codex",
                f"'/opt/my tools/remem' --home={shlex.quote(home)} hook stop"):
        assert is_ours(cmd) and hook_home(cmd) == home
    assert hook_home("/usr/bin/remem hook prompt") is None


# ------------------------------------------------------------------------------ XDG_CONFIG_HOME

def test_vscode_and_claude_desktop_follow_xdg_config_home_on_linux(tmp_path, monkeypatch):
    from remem import paths

    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert paths.vscode_mcp_config() == tmp_path / "xdg" / "Code" / "User" / "mcp.json"
    assert paths.claude_desktop_config() == tmp_path / "xdg" / "Claude" / "claude_desktop_config.json"
    for ignored in ("relative/dir", ""):  # the spec ignores a relative value
        monkeypatch.setenv("XDG_CONFIG_HOME", ignored)
        assert paths.vscode_mcp_config() == paths.user_home() / ".config" / "Code" / "User" / "mcp.json"
        assert paths.claude_desktop_config().parent == paths.user_home() / ".config" / "Claude"


def test_setup_wires_vscode_where_xdg_config_home_puts_it(cli, home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    mcp = tmp_path / "xdg" / "Code" / "User" / "mcp.json"
    mcp.parent.mkdir(parents=True)
    mcp.write_text('{"servers": {}}\n')
    assert cli("setup", *WIN, "--agent", "vscode").exit_code == 0
    assert "remem" in _json(mcp)["servers"]


# ------------------------------------------------------------------------------ config.toml comments

def _args(home: Path) -> str:
    """The args of a server entry for this test's memory, as TOML."""
    return json.dumps(["--home", str(home), "serve"])


def test_remove_keeps_a_comment_written_after_remems_table(cli, agents_home):
    config = agents_home["user"] / ".codex" / "config.toml"
    args = (*WIN, "--agent", "codex")
    assert cli("setup", *args).exit_code == 0
    with config.open("a") as fh:
        fh.write("\n# my note: try o4 next week\n")
    assert cli("setup", "--remove", *args).exit_code == 0
    text = config.read_text()
    assert "# my note: try o4 next week" in text and "remem" not in text


def test_remove_cuts_a_quoted_remem_header_and_keeps_the_next_tables_comment(cli, agents_home, home):
    config = agents_home["user"] / ".codex" / "config.toml"
    config.write_text(f'model = "o3"\n\n[mcp_servers."remem"]\ncommand = "remem"\nargs = {_args(home)}\n\n'
                      '# keep me\n[projects."/home/dev/shop"]\ntrust_level = "trusted"\n')
    assert cli("setup", "--remove", *WIN, "--agent", "codex").exit_code == 0
    assert config.read_text() == 'model = "o3"\n\n# keep me\n[projects."/home/dev/shop"]\ntrust_level = "trusted"\n'


def test_remove_refuses_a_toml_edit_that_would_lose_a_comment(cli, agents_home, home):
    config = agents_home["user"] / ".codex" / "config.toml"
    # A header-like line inside a string: the cut as text misjudges where the table ends, and
    # the TOML editor would drop the comment above the next table.
    text = (f'[mcp_servers.remem]\ncommand = "remem"\nargs = {_args(home)}\nnote = """\n[looks.like.a.header]\n"""\n'
            '# keep me\n[other]\na = 1\n')
    config.write_text(text)
    res = cli("setup", "--remove", *WIN, "--agent", "codex")
    assert res.exit_code == 1
    assert (f"{config}: cannot take [mcp_servers.remem] out without losing a comment beside it; delete that "
            "table by hand, then run `remem setup --remove` again") in res.stderr
    assert config.read_text() == text


_COMMENT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20).map(
    lambda t: "#" + t.replace("\r", "").replace("\n", ""))


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(after=st.lists(st.one_of(_COMMENT, st.just("")), min_size=1, max_size=4),
       quoted=st.booleans(), next_table=st.booleans())
def test_cutting_remems_table_keeps_every_comment_after_it(after, quoted, next_table):
    from remem.setup_toml import TomlkitEditor

    header = '[mcp_servers."remem"]' if quoted else "[mcp_servers.remem]"
    tail = '[other]\na = 1\n' if next_table else ""
    text = ('model = "o3"\n\n' + header + '\ncommand = "remem"\nargs = ["serve"]\n'
            + "".join(line + "\n" for line in after) + tail)
    out = TomlkitEditor().remove_server(text, "remem")
    assert tomllib.loads(out) == ({"model": "o3", "other": {"a": 1}} if next_table else {"model": "o3"})
    for line in after:
        if line:
            assert line in out.splitlines()


# ------------------------------------------------------------------------------ setup.json

def test_a_damaged_setup_json_stops_setup_and_stays_as_it_is(cli, agents_home, home):
    cursor = agents_home["user"] / ".cursor" / "mcp.json"
    assert cli("setup", *WIN, "--agent", "cursor").exit_code == 0
    wired = cursor.read_bytes()
    manifest = home / "setup.json"
    manifest.write_text('{"files": ')
    for args in (("--remove", *WIN), WIN, ("--dry-run",)):
        res = cli("setup", *args, "--agent", "cursor")
        assert res.exit_code == 1
        assert res.stderr.startswith(f"remem: {manifest} is damaged (not JSON: ")
        assert "mend it, or move it aside" in res.stderr and len(res.stderr.splitlines()) == 1
        assert manifest.read_text() == '{"files": ' and cursor.read_bytes() == wired


def test_a_setup_json_entry_that_is_no_object_is_skipped(cli, agents_home, home):
    cursor = agents_home["user"] / ".cursor" / "mcp.json"
    assert cli("setup", *WIN, "--agent", "cursor").exit_code == 0
    (home / "setup.json").write_text(json.dumps({"files": {"x": 1, str(cursor): "junk"}}))
    res = cli("setup", "--remove", "--yes")
    assert res.exit_code == 0, res.output
    assert "remem" not in _json(cursor)["mcpServers"]


# ------------------------------------------------------------------------------ a link into nowhere

def test_a_link_into_a_missing_folder_is_refused_not_followed(cli, agents_home, tmp_path):
    cursor = agents_home["user"] / ".cursor" / "mcp.json"
    target = tmp_path / "nowhere" / "deeper" / "mcp.json"
    cursor.unlink()
    cursor.symlink_to(target)
    res = cli("setup", *WIN, "--agent", "cursor")
    assert res.exit_code == 1
    assert (f"{cursor} is a link to {target}, whose folder does not exist; point the link at a file, or "
            "delete it, then run `remem setup` again") in res.stderr
    assert not (tmp_path / "nowhere").exists() and cursor.is_symlink()
    assert cli("setup", "--remove", *WIN, "--agent", "cursor").exit_code == 0  # nothing of setup's there
