"""Bad input from a person or a script: one line naming the fix, a non-zero exit, no traceback,
nothing lost. Config values out of range, negative numbers taken for options, empty values
that must never fall back to a folder or a lifetime nobody named, write errors, huge numbers,
files of another kind in the way, the proxy's token, lone surrogates, errors under --json, and
what a bad event is told (beside them, cases that guard what works: `v: 2`, an `at` that is not
a time). Stored control characters on their way to a terminal are in test_terminal_escapes.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_remem


def one_line(result: Any, *words: str) -> str:
    """A CliRunner or subprocess result: exit 1, one `remem: ` line on stderr naming `words`."""
    code = getattr(result, "exit_code", getattr(result, "returncode", None))
    assert code == 1, (code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remem: "), result.stderr
    assert "Traceback" not in result.stderr and "unexpected error" not in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _remember(cli: Any, text: str, *args: str) -> str:
    out = cli("remember", text, *args, "--json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)["id"]


# --------------------------------------------------------------------------- 1. config ranges

@pytest.mark.parametrize("key, value, words", [
    ("lifecycle.archive_below", "5", ["from 0 to 1"]),
    ("recall.k", "0", ["from 1 to 100"]),
    ("recall.recency_half_life_days", "0", ["more than 0"]),
    ("recall.w_relevance", "nan", ["from 0 to 1", "nan"]),
    ("recall.w_recency", "inf", ["from 0 to 1"]),
    ("prime.max_chars", "-5", ["from 300"]),
    ("lifecycle.short_term_ttl", "forever", ["a duration", "'forever'"]),
    ("server.port", "99999", ["from 1 to 65,535"]),
    ("proxy.port", "0", ["from 1 to 65,535"]),
    ("tasks.consolidate", "-1", ["from 0"]),
    ("llm.timeout_s", "0", ["more than 0"]),
    ("llm.url", "localhost:11434", ["http://"]),
])
def test_config_set_refuses_a_value_outside_its_range(home: Path, cli: Any, key: str, value: str,
                                                      words: list[str]) -> None:
    from remem import config

    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("# mine\n")
    line = one_line(cli("config", "set", "--", key, value), f"{key} must be", *words)
    assert "left unchanged" in line
    assert path.read_text() == "# mine\n"
    assert config.get(key) == config.get(key, config.DEFAULTS)


def _bad_value(key: str) -> Any:
    from remem import config

    allowed = config.RANGES[key]
    return allowed.high + 1 if allowed.high < 10 ** 12 else allowed.low - 1


def test_every_number_has_a_range_and_every_default_is_in_it() -> None:
    from remem import config

    for section, keys in config.DEFAULTS.items():
        for key, default in keys.items():
            name = f"{section}.{key}"
            if isinstance(default, (int, float)) and not isinstance(default, bool):
                assert name in config.RANGES, f"{name} has no range"
                assert config.RANGES[name].holds(default), name
            elif name in config.SHAPES:
                assert config.SHAPES[name](default) is None, name
    assert config._problem(config.DEFAULTS, config.DEFAULTS) is None


def test_a_bad_value_already_in_config_toml_names_key_value_range_and_the_fix(home: Path) -> None:
    import tomlkit

    from remem import config
    from remem.errors import ConfigError

    home.mkdir(parents=True, exist_ok=True)
    for key in config.RANGES:
        section, leaf = key.split(".")
        bad = _bad_value(key)
        default = config.DEFAULTS[section][leaf]
        bad = int(bad) if isinstance(default, int) else float(bad)
        (home / "config.toml").write_text(tomlkit.dumps({section: {leaf: bad}}), encoding="utf-8")
        config._cache.clear()
        with pytest.raises(ConfigError) as caught:
            config.load()
        message = str(caught.value)
        assert "\n" not in message
        assert f"{key} must be" in message and repr(bad) in message, message
        assert config.RANGES[key].text() in message, message
        assert f"`remem config set {key} " in message, message
    for text in ("[recall]\nw_relevance = nan\n", "[recall]\nw_strength = inf\n",
                 "[lifecycle]\nshort_term_ttl = \"forever\"\n"):
        (home / "config.toml").write_text(text, encoding="utf-8")
        config._cache.clear()
        with pytest.raises(ConfigError, match="must be"):
            config.load()


def test_a_bad_value_in_the_file_is_named_by_the_command_that_meets_it(home: Path, cli: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[server]\nport = 99999\n", encoding="utf-8")
    line = one_line(cli("serve", "--http"), "server.port must be", "99999",
                    "remem config set server.port 4545")
    assert "--port" not in line  # no --port was given
    (home / "config.toml").write_text("[lifecycle]\nshort_term_ttl = \"forever\"\n", encoding="utf-8")
    one_line(cli("remember", "x", "--short-term"), "lifecycle.short_term_ttl", "'forever'",
             "remem config set lifecycle.short_term_ttl 7d")


def test_recall_never_prints_nan_json(home: Path, cli: Any) -> None:
    """recall.w_relevance nan once made `recall --json` print NaN, which is not JSON."""
    _remember(cli, "use pip for installs")
    one_line(cli("config", "set", "recall.w_relevance", "nan"))
    out = cli("recall", "pip", "--json")
    assert out.exit_code == 0
    json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"{c} in recall --json"))


# --------------------------------------------------------------------------- 2. negatives, repair

def test_config_set_takes_a_negative_value_as_a_value(home: Path, cli: Any) -> None:
    for args in (["recall.k", "-3"], ["--", "recall.k", "-3"], ["recall.w_relevance", "-0.5"]):
        line = one_line(cli("config", "set", *args), "must be")
        assert "no such option" not in line
    assert cli("config", "set", "recall.k", "7").exit_code == 0


def test_config_set_takes_a_negative_value_by_its_own_definition() -> None:
    """core.py says so itself: no patch after registration (cli.py) is needed."""
    import typer
    import typer.main

    from remem.commands import core

    app = typer.Typer()
    core.register(app)
    command = typer.main.get_command(app).commands["config"].commands["set"]  # type: ignore[attr-defined]
    assert command.context_settings.get("ignore_unknown_options") is True


def test_config_set_still_reads_a_negative_value_as_the_value(home: Path, cli: Any) -> None:
    line = one_line(cli("config", "set", "recall.k", "-3"), "recall.k must be")
    assert "no such option" not in line


def test_a_negative_number_read_as_an_option_says_to_use_double_dash(cli: Any) -> None:
    one_line(cli("forget", "-3"), "no such option: -3", "put -- before the arguments: remem forget -- …")


def test_config_set_repairs_the_key_that_is_broken(home: Path, cli: Any) -> None:
    from remem import config

    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("# keep me\n[recall]\nk = 0\n[lifecycle]\nshort_term_ttl = \"forever\"\n")
    one_line(cli("status"), "recall.k")
    cli("config", "set", "recall.k", "3")  # written; the next broken key is named
    assert "k = 3" in path.read_text()
    assert cli("config", "set", "lifecycle.short_term_ttl", "3d").exit_code == 0
    assert "# keep me" in path.read_text()
    config._cache.clear()
    assert config.load()["recall"]["k"] == 3 and config.load()["lifecycle"]["short_term_ttl"] == "3d"
    assert cli("status").exit_code == 0


# --------------------------------------------------------------------------- 3. empty values

def test_an_empty_home_is_refused_not_the_real_memory(home: Path, cli: Any, tmp_path: Path) -> None:
    _remember(cli, "in the memory REMEM_HOME names")
    for args in (["--home", "", "status"], ["--home=", "list"], ["--home", " ", "demo"]):
        out = cli(*args)
        one_line(out, "--home is empty")
        assert out.stdout == ""
    assert not (tmp_path / "user" / ".remem").exists() and not (tmp_path / "user" / ".remem-demo").exists()


def test_demo_refuses_an_empty_dir_rather_than_building_in_the_default(home: Path, cli: Any,
                                                                       tmp_path: Path) -> None:
    for args in (["demo", "--dir", ""], ["demo", "--dir", "  "], ["demo", "--dir=", "--json"]):
        out = cli(*args)
        one_line(out, "--dir is empty")
        assert "remem demo --dir" in out.stderr
    assert not (tmp_path / "user" / ".remem-demo").exists()


@pytest.mark.parametrize("flag", [["--home", ""], ["--home="], ["--home", " "]])
def test_a_hook_with_an_empty_home_fails_open_without_using_the_current_directory(
        home: Path, tmp_path: Path, flag: list[str]) -> None:
    here = tmp_path / "somewhere"
    here.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "remem", *flag, "hook", "prompt"], check=False,
                          input='{"prompt": "run the tests", "session_id": "s1"}', capture_output=True,
                          text=True, cwd=str(here), env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr and "--home is empty" in proc.stderr
    assert list(here.iterdir()) == []  # no memory, no logs folder in the current directory
    assert "--home is empty" in (home / "logs" / "remem.log").read_text()


def test_remember_refuses_an_empty_ttl_and_stores_nothing(home: Path, cli: Any, store: Any) -> None:
    for ttl in ("", "  "):
        one_line(cli("remember", "a note meant to expire", "--ttl", ttl), "--ttl is empty", "7d")
    assert store.one("SELECT count(*) AS n FROM episodes")["n"] == 0
    out = cli("remember", "a note that expires", "--ttl", "2h", "--json")
    assert out.exit_code == 0 and json.loads(out.stdout)["memory_type"] == "short_term"


def test_the_engine_reads_an_empty_ttl_as_none_for_mcp_clients(home: Path, store: Any) -> None:
    from remem.engine.memories import remember

    assert remember(store, "sent by a client that fills every field", ttl="")["memory_type"] == "long_term"
    assert remember(store, "and one without", ttl=None)["memory_type"] == "long_term"


# --------------------------------------------------------------------------- 4. write errors

def _to(target: Any, *args: str, stdin: Any = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "remem", *args], stdout=target, stderr=subprocess.PIPE,
                          stdin=stdin, check=False, text=True, cwd=str(ROOT), env=dict(os.environ), timeout=120)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_one_line_not_a_traceback(home: Path) -> None:
    assert run_remem("remember", "something to list").returncode == 0
    for args in (["status"], ["list", "--json"], ["list"], ["export"]):
        with open("/dev/full", "w") as full:
            res = _to(full, *args)
        assert res.returncode == 1, (args, res.stderr)
        assert res.stderr.strip() == "remem: could not write: No space left on device", (args, res.stderr)
    res = run_remem("export", "/dev/full")
    assert res.returncode == 1 and "Traceback" not in res.stderr and "No space left" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_reader_gone_ends_quietly(home: Path) -> None:
    assert run_remem("remember", "something to list").returncode == 0
    for args in (["list"], ["list", "--json"], ["status"]):
        proc = subprocess.Popen([sys.executable, "-m", "remem", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=str(ROOT), env=dict(os.environ))
        proc.stdout.close()  # `remem list | head -0`
        _, err = proc.communicate(timeout=120)
        assert err == b"", (args, err)
        assert proc.returncode in (0, 141), (args, proc.returncode)


# --------------------------------------------------------------------------- 5. huge numbers

@pytest.mark.parametrize("args, words", [
    (["list", "--offset", "99999999999999999999"], ["--offset must be at most"]),
    (["list", "--limit", "99999999999999999999"], ["--limit must be at most"]),
    (["experiment", "--limit", "99999999999999999999"], ["--limit must be a whole number from 1 to 1000"]),
    (["proxy", "--upstream", "http://127.0.0.1:9", "--port", "99999999999999999999"], ["--port must be between"]),
])
def test_huge_numbers_are_one_line_never_an_overflow(home: Path, cli: Any, args: list[str],
                                                     words: list[str]) -> None:
    _remember(cli, "one memory")
    one_line(cli(*args), *words)


# --------------------------------------------------------------------------- 6. experiment --limit

def test_experiment_limit_below_one_is_refused(home: Path, cli: Any, store: Any) -> None:
    from remem.engine import experiment

    for limit in ("0", "-1"):
        one_line(cli("experiment", "--limit", limit), "--limit must be a whole number from 1")
        one_line(cli("experiment", "--limit", limit, "--pairs", str(home / "p.jsonl")), "--limit")
    for limit in (0, -1, True):
        with pytest.raises(ValueError, match="--limit"):
            experiment.run(store, limit=limit, cfg={"llm": {"url": "http://127.0.0.1:9"}},
                           complete=lambda *a, **k: pytest.fail("the model was asked"))


# --------------------------------------------------------------------------- 7. overwriting files

def _keep_an_answer(store: Any) -> None:
    with store.write() as conn:
        conn.execute(
            "INSERT INTO experiments (at, lesson_id, test, model, with_reminder, passed, prompt, response) "
            "VALUES ('2026-01-01T00:00:00+00:00', 'x', 'behaviour', 'm', 1, 1, 'install requests', "
            "'I will run uv pip install requests.')")


def test_experiment_pairs_never_empties_or_replaces_a_file_of_another_kind(home: Path, cli: Any, store: Any,
                                                                           tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"messages": [], "lesson_id": "kept from before"}\n')
    out = cli("experiment", "--pairs", str(pairs))  # no model, no pair kept: nothing to write
    assert out.exit_code == 1 and "wrote 0" not in out.stdout and "not touched" in out.stdout
    assert "kept from before" in pairs.read_text()
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    _keep_an_answer(store)
    one_line(cli("experiment", "--pairs", str(notes)), str(notes), "--force")
    assert notes.read_text() == "my notes\n"
    assert cli("experiment", "--pairs", str(pairs)).exit_code == 1  # our own file: rewritten
    assert "uv pip install" in pairs.read_text() and "kept from before" not in pairs.read_text()
    assert cli("experiment", "--pairs", str(notes), "--force").exit_code == 1
    assert json.loads(notes.read_text().splitlines()[0])["messages"]


def test_backup_and_export_never_replace_a_file_of_another_kind(home: Path, cli: Any, tmp_path: Path) -> None:
    from remem import paths

    _remember(cli, "worth a backup")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    one_line(cli("backup", str(notes)), str(notes), "is not a remem backup", "--force")
    one_line(cli("export", str(notes)), str(notes), "is not a remem export", "--force")
    assert notes.read_text() == "my notes\n"
    one_line(cli("backup", str(paths.db_path())), "live memory")
    kept = tmp_path / "kept.db"
    for _ in range(2):  # an older backup of ours is replaced
        assert cli("backup", str(kept)).exit_code == 0
    exported = tmp_path / "memory.jsonl"
    for _ in range(2):
        assert cli("export", str(exported)).exit_code == 0
    assert cli("backup", str(notes), "--force").exit_code == 0
    assert notes.read_bytes().startswith(b"SQLite format 3\x00")


# --------------------------------------------------------------------------- 8. proxy and its token

def test_proxy_beyond_loopback_needs_a_token_as_serve_does(home: Path, cli: Any) -> None:
    line = one_line(cli("proxy", "--upstream", "http://127.0.0.1:9", "--host", "0.0.0.0"),
                    "0.0.0.0", "token")
    serve = cli("serve", "--http", "--host", "0.0.0.0")
    assert serve.exit_code == 1 and line in serve.stderr  # the same rule, the same line
    one_line(cli("proxy", "--upstream", "http://127.0.0.1:9", "--host", ""), "--host is empty")


def test_proxy_with_a_token_refuses_requests_without_it(home: Path) -> None:
    import httpx2

    from remem.proxy import create_app
    from tests.fake_llm_api import FakeAPI, ServerThread

    fake = FakeAPI()
    with ServerThread(fake.app) as upstream, \
            ServerThread(create_app(upstream.url, timeout_s=5, inject=False, record=False, token="s3cret")) as proxy:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        for headers in ({}, {"Proxy-Authorization": "Bearer wrong"}, {"Authorization": "Bearer s3cret"}):
            refused = httpx2.post(f"{proxy.url}/v1/chat/completions", json=body, headers=headers)
            assert refused.status_code == 407 and "Proxy-Authorization" in refused.text
        assert fake.received == []
        ok = httpx2.post(f"{proxy.url}/v1/chat/completions", json=body,
                         headers={"Proxy-Authorization": "Bearer s3cret", "Authorization": "Bearer sk-up"})
        assert ok.status_code == 200
        assert fake.headers[-1]["authorization"] == "Bearer sk-up"
        assert "proxy-authorization" not in fake.headers[-1]


# --------------------------------------------------------------------------- 9. call: surrogates

def test_call_sends_a_lone_surrogate_as_u_fffd(home: Path) -> None:
    out = run_remem("call", "remember", '{"text": "\\ud83d half"}')
    assert out.returncode == 0, out.stderr
    assert out.json()["gist"] == "\ufffd half"


# --------------------------------------------------------------------------- 10. --json errors

def test_json_commands_say_their_error_in_json_too(home: Path, cli: Any) -> None:
    _remember(cli, "one memory")
    for args, word in ((["list", "--json", "--offset", "-5"], "--offset"),
                       (["list", "--json", "--offset", "x"], "--offset"),
                       (["lessons", "show", "nope", "--json"], "nope"),
                       (["graph", "nope", "--json"], "nope")):
        out = cli(*args)
        line = one_line(out, word)
        assert json.loads(out.stdout) == {"error": line.removeprefix("remem: ")}, out.stdout
    plain = cli("list", "--offset", "-5")
    assert plain.exit_code == 1 and plain.stdout == ""
    text = cli("remember", "--", "--json")  # text that reads like the flag is text
    assert text.exit_code == 0


# --------------------------------------------------------------------------- 11. event messages

def _event(**fields: Any) -> dict[str, Any]:
    return {"v": 1, "kind": "note", "at": "2026-11-29T10:00:00Z", "text": "x", **fields}


@pytest.mark.parametrize("fields, words", [
    ({"v": "1"}, ["v: must be the integer 1"]),
    ({"v": 2}, ["unsupported version 2"]),
    ({"at": "9999-12-31T23:59:59-12:00"}, ["at: out of range"]),
    ({"at": "0001-01-01T00:00:00+05:00"}, ["at: out of range"]),
    ({"at": "last tuesday"}, ["not an ISO 8601 time"]),
    ({"id": "two words"}, ["id: must not hold spaces"]),
    ({"id": "a\u001b[2J"}, ["id: must not hold spaces or control characters"]),
])
def test_event_errors_say_what_is_wrong(fields: dict[str, Any], words: list[str]) -> None:
    from remem.engine.events import EventError, validate

    with pytest.raises(EventError) as caught:
        validate(_event(**fields))
    for word in words:
        assert word in str(caught.value), str(caught.value)


def test_the_undo_hint_works_for_an_id_that_looks_like_an_option(home: Path, cli: Any, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(_event(id="-rf", text="an id with a leading dash")) + "\n")
    assert cli("ingest", "--events", str(events)).exit_code == 0
    out = cli("forget", "--", "-rf")
    assert out.exit_code == 0, out.output
    hint = out.stdout.split("(", 1)[1].split(" brings it back")[0]
    assert hint == "remem forget --undo -- -rf"
    again = cli(*hint.split()[1:])
    assert again.exit_code == 0 and "restored -rf" in again.stdout
    plain = _remember(cli, "a plain id")
    assert f"remem forget {plain} --undo" in cli("forget", plain).stdout
