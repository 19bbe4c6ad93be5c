"""The home a command runs on: a folder named by --home that is not there (a typo, most often)
is refused by the commands that read a memory and made by the ones that start one; a REMEM_HOME
not made yet is used as it is (an agent's MCP entry names it before the first ingest); an empty
REMEM_HOME and a file given as the home are refused in one line; hooks never refuse."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_remem
from tests.test_cli_journey import one_line_error

# A transcript the ingest reads (its session id is in the file).
TRANSCRIPT = Path(__file__).parent / "fixtures" / "claude_code" / "v2_tools.jsonl"


def _named(how: str, typo: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """`remem ARGS` on the home `typo`, named by --home or by REMEM_HOME."""
    if how == "--home":
        return ["--home", str(typo), *args], {}
    return list(args), {"REMEM_HOME": str(typo)}


@pytest.mark.parametrize("how", ["--home"])
@pytest.mark.parametrize("args", [["recall", "uv", "--json"], ["export", "-"], ["status"], ["serve"],
                                  ["serve", "--http", "--port", "1"]])
def test_a_reading_command_on_a_home_that_is_not_there_is_refused_and_makes_nothing(tmp_path, how, args):
    typo = tmp_path / "remem-hmoe"
    words, env = _named(how, typo, *args)
    # stdin is empty: a stdio server that started anyway would answer and end, not hang.
    result = run_remem(*words, env=env, input="")
    line = one_line_error(result, "no memory at", str(typo), f"check {how}")
    assert "ingest" in line  # how to start one there
    assert not typo.exists()
    if "--json" in args:
        assert json.loads(result.stdout) == {"error": line.removeprefix("remem: ")}


@pytest.mark.parametrize("how", ["--home"])
def test_config_set_on_a_home_that_is_not_there_is_refused_until_the_folder_is_made(tmp_path, how):
    typo = tmp_path / "remem-hmoe"
    words, env = _named(how, typo, "config", "set", "recall.k", "8")
    one_line_error(run_remem(*words, env=env), "no memory at", f"check {how}", f"mkdir -p {typo}")
    assert not typo.exists()
    typo.mkdir()  # a new memory configured before its first ingest, on purpose
    result = run_remem(*words, env=env)
    assert result.returncode == 0, result.stderr
    assert "k = 8" in (typo / "config.toml").read_text()


@pytest.mark.parametrize("how", ["--home"])
def test_setup_on_a_home_that_is_not_there_says_so_in_one_line_and_goes_on(tmp_path, how):
    typo = tmp_path / "remem-hmoe"
    words, env = _named(how, typo, "setup", "--agent", "claude-code", "--dry-run", "--no-schedule")
    result = run_remem(*words, env=env)
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if str(typo) in line]
    assert len(said) == 1 and "does not exist yet" in said[0] and f"check {how}" in said[0], result.stderr
    assert str(typo) in result.stdout  # the agent is wired to it, as asked
    assert not typo.exists()  # a dry run makes nothing


def test_a_REMEM_HOME_not_made_yet_is_used_as_it_is(tmp_path):
    # An agent's MCP entry or a script names the memory before its first ingest.
    new = tmp_path / "work-memory"
    result = run_remem("config", "set", "recall.k", "8", env={"REMEM_HOME": str(new)})
    assert result.returncode == 0, result.stderr
    assert "k = 8" in (new / "config.toml").read_text()
    result = run_remem("status", "--json", env={"REMEM_HOME": str(new)})
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("args", [["remember", "we use uv here"], ["ingest", str(TRANSCRIPT), "--json"],
                                  ["import", "-"]])
def test_the_commands_that_start_a_memory_still_make_a_home_named_by_REMEM_HOME(tmp_path, args):
    new = tmp_path / "new-home"
    result = run_remem(*args, env={"REMEM_HOME": str(new)}, input="")
    assert result.returncode == 0, result.stderr
    assert new.is_dir()


def test_demo_still_builds_in_a_home_named_by_home_that_is_not_there(tmp_path):
    new = tmp_path / "new-demo"
    result = run_remem("--home", str(new), "demo", "--json")
    assert result.returncode == 0, result.stderr
    assert (new / "memory.db").exists()


def test_the_default_home_is_made_on_first_use(home, monkeypatch):
    monkeypatch.delenv("REMEM_HOME")
    default = home.parent / "user" / ".remem"  # HOME is the test's own
    result = run_remem("status", "--json")
    assert result.returncode == 0, result.stderr
    assert (default / "memory.db").exists()


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_REMEM_HOME_is_refused_instead_of_using_the_default(home, value):
    one_line_error(run_remem("status", env={"REMEM_HOME": value}), "REMEM_HOME is set but empty",
                   "unset REMEM_HOME")
    assert not (home.parent / "user" / ".remem").exists()  # ~/.remem, the test's own


def test_an_empty_REMEM_HOME_never_stops_a_hook(home):
    payload = json.dumps({"prompt": "run the tests", "session_id": "s1"})
    result = run_remem("hook", "prompt", env={"REMEM_HOME": ""}, input=payload)
    assert result.returncode == 0
    assert "REMEM_HOME is set but empty" not in result.stderr  # fails open: the default home, as before


@pytest.mark.parametrize("how", ["--home", "REMEM_HOME"])
def test_a_hook_on_a_home_that_is_not_there_fails_open_and_makes_nothing(tmp_path, how):
    typo = tmp_path / "remem-hmoe"
    words, env = _named(how, typo, "hook", "prompt")
    result = run_remem(*words, env=env, input=json.dumps({"prompt": "run the tests", "session_id": "s1"}))
    assert result.returncode == 0
    assert result.stdout.strip() in ("", '{"continue": true}')
    assert not typo.exists()


@pytest.mark.parametrize("how", ["--home", "REMEM_HOME"])
def test_a_file_given_as_the_home_is_named_as_a_file(tmp_path, how):
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    words, env = _named(how, afile, "status")
    one_line_error(run_remem(*words, env=env), f"{afile} is a file, not a folder", "give a folder")
    assert afile.read_text() == "not a folder"


def test_call_errors_are_json_on_stdout_as_its_output_is(home):
    home.mkdir()
    result = run_remem("call", "no_such_tool", "{}")
    line = one_line_error(result, "no_such_tool")
    assert json.loads(result.stdout) == {"error": line.removeprefix("remem: ")}
    result = run_remem("call", "recall", "not json")
    line = one_line_error(result, "must be a JSON object")
    assert json.loads(result.stdout) == {"error": line.removeprefix("remem: ")}


@pytest.mark.parametrize("args", [["--port", "0"], ["--host", ""]])
def test_serve_without_http_refuses_a_port_or_host_even_a_falsy_one(home, args):
    home.mkdir()
    # stdin is empty: a stdio server that started anyway would answer and end, not hang.
    one_line_error(run_remem("serve", *args, input=""), "go with --http")


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(("args", "target", "words"), [
    (["sleep", "--quiet"], "remem.engine.sleep.run_sleep_collect",
     ["sleep interrupted", "the passes it finished are kept", "remem sleep"]),
    (["sleep", "--dry-run", "--quiet"], "remem.engine.sleep.run_sleep_collect",
     ["sleep --dry-run interrupted", "nothing was changed"]),
    (["ingest", "--json"], "remem.engine.ingest.ingest_paths",
     ["ingest interrupted", "what it read so far is kept", "run the same command again"]),
    (["import", "-"], "remem.engine.backup.import_jsonl",
     ["import interrupted", "run the same `remem import` again"]),
])
def test_ctrl_c_names_the_command_what_was_kept_and_what_to_run(cli, store, monkeypatch, args, target, words):
    monkeypatch.setattr(target, _interrupt)
    result = cli(*args, input="")
    assert result.exit_code == 130, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remem: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_an_interrupted_ingest_keeps_what_it_read_and_skips_it_when_run_again(cli, store, monkeypatch, tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in ("v2_tools.jsonl", "v2_stream.jsonl"):
        shutil.copy(TRANSCRIPT.parent / name, folder / name)
    from remem.engine import ingest as ingest_mod

    real = ingest_mod.ingest_file
    calls: list[Path] = []

    def second_is_interrupted(*args: object, **kwargs: object) -> None:
        calls.append(args[1])  # type: ignore[arg-type]
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(*args, **kwargs)

    monkeypatch.setattr(ingest_mod, "ingest_file", second_is_interrupted)
    result = cli("ingest", str(folder), "--json")
    assert result.exit_code == 130 and "ingest interrupted" in result.stderr
    monkeypatch.setattr(ingest_mod, "ingest_file", real)
    again = cli("ingest", str(folder), "--json")
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert summary["skipped"] == 1 and summary["files"] == 1, summary  # the first one was kept


def test_an_embedding_model_that_cannot_be_loaded_is_refused_before_it_is_written(home, cli):
    home.mkdir()
    assert cli("config", "set", "recall.k", "8").exit_code == 0
    before = (home / "config.toml").read_text()
    for bad in ["bogus", "/no/such/model", str(home / "config.toml"), str(home)]:
        result = cli("config", "set", "embed.model", bad)
        assert result.exit_code == 1, (bad, result.output)
        assert "cannot be loaded" in result.stderr and "config.toml was left unchanged" in result.stderr
        assert (home / "config.toml").read_text() == before


def test_an_embedding_model_that_loads_is_written_by_its_whole_path(home, cli, tmp_path, monkeypatch):
    from remem.engine.embed import MODEL_DIR

    home.mkdir()
    shutil.copytree(MODEL_DIR, tmp_path / "models" / "m2v")
    monkeypatch.chdir(tmp_path)
    result = cli("config", "set", "embed.model", "models/m2v")
    assert result.exit_code == 0, result.output
    # Hooks run in each project's folder: a relative folder would name another one there.
    assert f'"{tmp_path / "models" / "m2v"}"' in (home / "config.toml").read_text()
    for good in ["hashed", ""]:
        assert cli("config", "set", "embed.model", good).exit_code == 0


def test_an_interrupted_export_leaves_no_half_file(cli, store, monkeypatch, tmp_path):
    from remem.engine import backup

    def half_then_interrupted(store: object, out: object) -> None:
        out.write('{"type": "episode"}\n')  # type: ignore[attr-defined]
        raise KeyboardInterrupt

    monkeypatch.setattr(backup, "export_jsonl", half_then_interrupted)
    target = tmp_path / "memory.jsonl"
    result = cli("export", str(target))
    assert result.exit_code == 130 and "export interrupted" in result.stderr
    assert not target.exists() and not list(tmp_path.glob("*.partial"))
