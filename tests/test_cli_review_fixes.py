"""What a new person meets following the README and docs/CLI.md: setup's dry run on the demo
refuses as the run would, `remem list` stays readable in a pipe, doctor passes a healthy new
memory, a lesson's id gets a hint that fits the command, an empty page says why, an empty
peer list says so, the hook's skip line names the home it reads, `config show` hides the
secrets it holds, and `remem` alone is help, not an error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine.lessons import add_lesson
from remem.engine.memories import remember
from remem.engine.store import Store
from tests.conftest import ROOT, run_remem

ROOT_DOCS = ROOT / "docs"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    assert run_remem("demo", "--dir", str(folder)).returncode == 0
    return folder


# --------------------------------------------------------------------------- setup on the demo

def test_setup_dry_run_on_the_demo_exits_1_with_the_refusal_in_errors(demo: Path) -> None:
    out = run_remem("--home", str(demo), "setup", "--dry-run", "--json")
    assert out.returncode == 1, out.stderr
    errors = out.json()["errors"]
    assert errors and "is the demo memory" in errors[0] and "without --home" in errors[0], errors
    text = run_remem("--home", str(demo), "setup", "--dry-run")
    assert text.returncode == 1 and "is the demo memory" in text.stderr
    # The run it previews is refused alike.
    assert run_remem("--home", str(demo), "setup", "--yes").returncode == 1


def test_setup_on_the_demo_named_by_remem_home_names_remem_home(demo: Path) -> None:
    out = run_remem("setup", "--dry-run", "--json", env={"REMEM_HOME": str(demo)})
    assert out.returncode == 1
    [refusal] = [e for e in out.json()["errors"] if "is the demo memory" in e]
    assert "REMEM_HOME" in refusal and "--home" not in refusal, refusal
    run = run_remem("setup", "--yes", env={"REMEM_HOME": str(demo)})
    assert run.returncode == 1 and "unset REMEM_HOME" in run.stderr and "without --home" not in run.stderr


# --------------------------------------------------------------------------- list in a pipe

def _listed_memories() -> list[str]:
    ids = []
    for text, tag in [("run the worker in the background with nohup so it survives logout", "ops"),
                      ("the deploy script lives in ops/deploy.sh and needs the VPN", "deploy"),
                      ("use uv, not pip, to install packages in this repository", "python")]:
        ids.append(run_remem("remember", text, "--tag", tag, "--json").json()["id"])
    return ids


def test_list_in_an_80_column_pipe_keeps_words_and_dates_whole(home: Path) -> None:
    ids = _listed_memories()
    out = run_remem("list", env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert [line for line in lines if "background" in line], out.stdout  # greppable: not "backgro/und"
    for memory_id in ids:
        assert any(memory_id[:8] in line for line in lines)
    # each row's date whole on the row's first line, never folded
    firsts = [line for line in lines if any(memory_id[:8] in line for memory_id in ids)]
    assert all(re.search(r"│ \d\d-\d\d │", line) for line in firsts), out.stdout
    header = next(line for line in lines if "memory" in line and "id" in line)
    assert "v/a" not in header and "str" not in header


def test_list_leaves_out_columns_only_as_the_terminal_narrows(home: Path) -> None:
    _listed_memories()

    def header(columns: str) -> list[str]:
        out = run_remem("list", env={"COLUMNS": columns}).stdout
        line = next(line for line in out.splitlines() if " id " in line)
        return [cell.strip() for cell in line.strip("┃ ").split("┃")]

    assert header("200") == ["id", "kind", "type", "imp", "hp", "str", "v/a", "when", "memory"]
    assert header("110") == ["id", "kind", "type", "imp", "hp", "when", "memory"]
    assert header("80") == ["id", "kind", "type", "when", "memory"]


# --------------------------------------------------------------------------- doctor, fresh

def test_doctor_passes_a_healthy_fresh_install(home: Path) -> None:
    """fresh home -> ingest -> sleep -> setup --no-schedule -> doctor: no lesson yet with nothing
    to run is a note, not a problem."""
    assert run_remem("ingest").returncode == 0
    assert run_remem("sleep", "--quiet").returncode == 0
    assert run_remem("setup", "--no-schedule", "--yes").returncode == 0
    out = run_remem("doctor", "--no-run", "--json")
    report = out.json()
    assert report["problems"] == [] and report["ok"], report["problems"]
    assert out.returncode == 0
    assert any(n.startswith("no active lessons yet") and "nothing to run" in n for n in report["notes"])
    text = run_remem("doctor", "--no-run")
    assert text.returncode == 0 and "no problems found" in text.stdout
    assert "note: no active lessons yet" in text.stdout


def test_doctor_still_sends_waiting_corrections_to_sleep(store) -> None:
    from tests.test_sleep_says_what_happened import seen_once

    store.put_episodes(seen_once())
    out = run_remem("doctor", "--no-run", "--json")
    [problem] = [p for p in out.json()["problems"] if p["problem"].startswith("no active lessons")]
    assert problem["fix"].startswith("remem sleep") and out.returncode == 1


# --------------------------------------------------------------------------- --help defaults

def test_cli_md_says_what_help_shows_for_a_default_read_from_config(home: Path) -> None:
    cli_md = (ROOT_DOCS / "CLI.md").read_text()
    assert "with the defaults in effect" not in cli_md
    assert run_remem("config", "set", "recall.k", "8").returncode == 0
    helped = " ".join(run_remem("recall", "--help", env={"COLUMNS": "200"}).stdout.split())
    # CLI.md quotes help's words for -k, and names where the value in effect is
    quoted = re.search(r'\(`-k` says "([^"]+)"\)', cli_md)
    assert quoted and quoted.group(1) in helped, helped
    assert "`remem config show` has the value in effect" in " ".join(cli_md.split())


# --------------------------------------------------------------------------- a lesson's id

@pytest.fixture
def lesson_id(home: Path) -> str:
    with Store() as store:
        remember(store, "the deploy script needs the VPN")
        return add_lesson(store, "Install packages with uv, never pip.", "correction")["id"]


@pytest.mark.parametrize("words, says", [
    (["graph", "{id}"], "graph walks memories' connections; `remem lessons show {id}` shows the memories "
                        "it came from"),
    (["promote", "{id}"], "only memories are short- or long-term; `remem lessons show {id}` reads it"),
    (["connect", "{id}", "{memory}", "--type", "related_to"],
     "connect joins memories; `remem lessons show {id}` reads it, with the memories it came from"),
    (["connect", "{memory}", "{id}", "--type", "related_to"],
     "connect joins memories; `remem lessons show {id}` reads it, with the memories it came from"),
    (["forget", "{id}", "--undo"], "`forget --undo` brings back archived memories; `remem lessons restore "
                                   "{id}` brings back a vetoed lesson (`remem lessons show {id}` reads it)"),
    (["forget", "{id}"], "`remem lessons veto {id}` hides it (`remem lessons show {id}` reads it)"),
])
def test_a_lesson_id_gets_the_hint_of_the_command_it_was_given_to(cli, lesson_id: str, words, says) -> None:
    with Store() as store:
        memory = store.one("SELECT id FROM episodes")["id"]
    res = cli(*[w.format(id=lesson_id, memory=memory) for w in words])
    assert res.exit_code == 1
    assert res.stderr.strip() == f"remem: {lesson_id} is a lesson, not a memory: {says.format(id=lesson_id)}"
    as_json = cli(*[w.format(id=lesson_id, memory=memory) for w in words], "--json")
    assert json.loads(as_json.stdout)["error"] == f"{lesson_id} is a lesson, not a memory: {says.format(id=lesson_id)}"


# --------------------------------------------------------------------------- an empty page

def test_an_offset_past_the_end_says_how_many_match(cli, store) -> None:
    for i in range(3):
        remember(store, f"note number {i} about the build")
    res = cli("list", "--offset", "100")
    assert res.exit_code == 0
    assert res.stdout.strip() == "--offset 100 is past the end: 3 memories match; --offset 2 shows the last"
    assert "--archived" not in res.stdout
    assert "note number 0" in cli("list", "--offset", "2").stdout  # the hint holds
    assert cli("list", "--offset", "100", "--json").stdout.strip() == "[]"


def test_archived_ones_are_named_only_when_some_match(cli, store) -> None:
    remember(store, "use uv, not pip", tags=["python"])
    gone = remember(store, "the old deploy host was build-7", tags=["deploy"])
    assert cli("forget", gone["id"]).exit_code == 0
    nothing = cli("list", "--tag", "python", "--type", "short_term")
    assert nothing.exit_code == 0 and nothing.stdout.strip() == "no memories match"
    archived = cli("list", "--tag", "deploy")
    assert "--archived" in archived.stdout, archived.stdout
    assert gone["id"][:8] in cli("list", "--tag", "deploy", "--archived").stdout  # following it finds it


# --------------------------------------------------------------------------- share peers

def test_share_peers_with_none_says_so_and_json_stays_a_list(home: Path) -> None:
    out = run_remem("share", "peers")
    assert out.returncode == 0
    assert out.stdout.startswith("no peers yet: ") and "remem share sync" in out.stdout
    assert "┏" not in out.stdout  # no empty table
    assert run_remem("share", "peers", "--json").json() == []


# --------------------------------------------------------------------------- hook skip line

def _hook(env: dict[str, str], *home_flag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "remem", *home_flag, "hook", "prompt", "--agent", "codex"],
                          input=json.dumps({"prompt": "run the tests please", "session_id": "s1"}),
                          capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=120)


def test_the_hooks_skip_line_names_the_home_it_reads(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-home"
    done = _hook(dict(os.environ), "--home", str(missing))
    assert done.returncode == 0
    assert f"run `remem --home {missing} ingest` first" in done.stderr, done.stderr
    assert not missing.exists()
    # The default home is named as the bare command.
    env = {k: v for k, v in os.environ.items() if k != "REMEM_HOME"}
    default = _hook(env)
    assert "run `remem ingest` first" in default.stderr, default.stderr


# --------------------------------------------------------------------------- config show secrets

TOKEN = "abcdefghijklmnopqrstuvwxyz012345"


def test_config_show_hides_the_token_and_the_api_key(home: Path) -> None:
    assert run_remem("config", "set", "server.token", TOKEN).returncode == 0
    assert run_remem("config", "set", "llm.api_key", "sk-secret-9").returncode == 0
    shown = run_remem("config", "show")
    assert TOKEN not in shown.stdout and "sk-secret-9" not in shown.stdout
    parsed = tomllib.loads(shown.stdout)  # still TOML
    assert parsed["server"]["token"] == "<hidden: 32 characters>"
    assert parsed["llm"]["api_key"] == "<hidden: 11 characters>"
    assert "--show-secrets" in shown.stdout
    as_json = run_remem("config", "show", "--json")
    assert TOKEN not in as_json.stdout and as_json.json()["server"]["token"] == "<hidden: 32 characters>"
    asked = run_remem("config", "show", "--show-secrets", "--json").json()
    assert asked["server"]["token"] == TOKEN and asked["llm"]["api_key"] == "sk-secret-9"
    assert tomllib.loads(run_remem("config", "show", "--show-secrets").stdout)["server"]["token"] == TOKEN


def test_config_show_with_no_secret_set_shows_every_value_as_it_is(home: Path) -> None:
    shown = tomllib.loads(run_remem("config", "show").stdout)
    assert shown["server"]["token"] == "" and shown["llm"]["api_key"] == ""
    assert shown == tomllib.loads(run_remem("config", "show", "--show-secrets").stdout)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60)
       .filter(lambda s: s.strip()))
def test_any_secret_is_hidden_by_length_and_shown_when_asked(cli, home: Path, secret: str) -> None:
    home.mkdir(exist_ok=True)
    set_ = cli("config", "set", "server.token", secret)
    assert set_.exit_code == 0, set_.output
    shown = cli("config", "show")
    assert tomllib.loads(shown.stdout)["server"]["token"] == f"<hidden: {len(secret)} characters>"
    assert json.loads(cli("config", "show", "--json").stdout)["server"]["token"] == \
        f"<hidden: {len(secret)} characters>"
    assert json.loads(cli("config", "show", "--json", "--show-secrets").stdout)["server"]["token"] == secret


# --------------------------------------------------------------------------- bare commands

@pytest.mark.parametrize("group", [[], ["lessons"], ["share"], ["config"]], ids=["remem", "lessons", "share", "config"])
def test_a_bare_command_prints_its_help_and_exits_0(home: Path, group: list[str]) -> None:
    bare = run_remem(*group)
    assert bare.returncode == 0, bare.stderr
    assert bare.stderr == ""
    first = bare.stdout.splitlines()[0]  # "python -m remem" as the tests run it
    assert first.startswith("Usage: ") and first.endswith(" ".join(["remem", *group, "[OPTIONS] COMMAND [ARGS]..."]))
    assert bare.stdout.strip() == run_remem(*group, "--help").stdout.strip()
