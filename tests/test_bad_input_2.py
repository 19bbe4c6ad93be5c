"""Bad input, second round: empty values that fell back to a folder or a lifetime nobody named,
requests from a web page to the proxy, secrets in explicit events, and stored control characters
on the way to a terminal. Each fix has a test here that failed before it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.test_bad_input import one_line

HOSTILE = "\u001b]0;owned\u0007\u001b[2J FAILED test \u009b31m"
RAW = ("\u001b", "\u0007", "\u009b")  # what must never reach a terminal as it is


def _no_controls(text: str, where: Any = None) -> None:
    for char in RAW:
        assert char not in text, (where, char, text)


# --------------------------------------------------------------------------- 1. demo --dir ''

def test_demo_refuses_an_empty_dir_rather_than_building_in_the_default(home: Path, cli: Any,
                                                                       tmp_path: Path) -> None:
    for args in (["demo", "--dir", ""], ["demo", "--dir", "  "], ["demo", "--dir=", "--json"]):
        out = cli(*args)
        one_line(out, "--dir is empty")
        assert "remem demo --dir" in out.stderr
    assert not (tmp_path / "user" / ".remem-demo").exists()


# --------------------------------------------------------------------------- 2. hook --home ''

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


# --------------------------------------------------------------------------- 3. remember --ttl ''

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


# --------------------------------------------------------------------------- 4. config set -3

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


# --------------------------------------------------------------------------- 5. proxy: bind, Host/Origin

def test_the_proxy_checks_its_address_without_loading_the_mcp_server(home: Path) -> None:
    """The bind and token rules live in one module both edges use: `remem proxy` no longer
    imports `remem serve --http`'s module (and mcp with it) to check them."""
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom remem.cli import app\n"
            "r = CliRunner().invoke(app, ['proxy', '--upstream', 'http://127.0.0.1:9', '--host', '0.0.0.0'])\n"
            "print(r.exit_code, 'remem.server_http' in sys.modules, 'mcp' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=str(ROOT),
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.stdout.split() == ["1", "False", "False"], proc.stdout + proc.stderr
    from remem import bind, server_http

    assert server_http.check_bind is bind.check_bind and server_http.from_this_machine is bind.from_this_machine


def _start_proxy(home: Path, upstream_url: str) -> tuple[subprocess.Popen, str]:
    import httpx2

    from tests.fake_llm_api import free_port

    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remem", "proxy", "--upstream", upstream_url, "--port",
                             str(port), "--no-inject"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx2.get(url + "/remem/health").status_code == 200:
                return proc, url
        except httpx2.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(proc.stderr.read().decode())
        time.sleep(0.1)


def _inbox(home: Path) -> list[str]:
    return [line for f in sorted((home / "inbox").glob("*.jsonl")) for line in f.read_text().splitlines()
            if line.strip()]


def test_the_proxy_on_loopback_refuses_a_foreign_host_or_origin_and_records_nothing(home: Path) -> None:
    """DNS rebinding: a web page whose name now resolves to 127.0.0.1 makes the browser post to
    the proxy; its Host (or Origin) names the page's site. Refused as `serve --http` refuses it."""
    import httpx2

    from tests.fake_llm_api import REPLY, FakeAPI, ServerThread

    fake = FakeAPI()
    with ServerThread(fake.app) as upstream:
        proc, url = _start_proxy(home, upstream.url)
        try:
            body = {"model": "m", "messages": [{"role": "user", "content": "page-made question"}]}
            port = url.rsplit(":", 1)[1]
            for headers in ({"Host": f"evil.example:{port}"},
                            {"Origin": "http://evil.example"},
                            {"Host": f"127.0.0.1:{port}", "Origin": "https://rebind.evil.example:443"}):
                refused = httpx2.post(f"{url}/v1/chat/completions", json=body, headers=headers)
                assert refused.status_code == 403, (headers, refused.status_code, refused.text)
                assert "this machine" in refused.json()["error"]["message"]
                assert httpx2.get(f"{url}/v1/models", headers=headers).status_code == 403
            assert fake.received == []
            time.sleep(0.5)  # recording runs after the answer: give it the time it would take
            assert _inbox(home) == []
            # A local client (its Host is the address it dialled; a local page's Origin is local).
            question = "which installer does this project use?"
            for headers in ({}, {"Origin": "http://localhost:3000"}):
                ok = httpx2.post(f"{url}/v1/chat/completions", headers=headers,
                                 json={"model": "m", "messages": [{"role": "user", "content": question}]})
                assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == REPLY
            deadline = time.time() + 10
            while question not in "".join(_inbox(home)) and time.time() < deadline:
                time.sleep(0.05)
            assert question in "".join(_inbox(home))
            assert "page-made question" not in "".join(_inbox(home))
        finally:
            proc.terminate()
            proc.wait(30)


# --------------------------------------------------------------------------- 6. secrets in events

KEY = "sk-proj-AbCdEfGh1234IjKlMnOp5678QrStUvWxabcd"
GH = "ghp_1234567890abcdefghijABCDEFGHIJ0123"


def test_secrets_in_explicit_events_are_stored_redacted(home: Path, cli: Any, store: Any,
                                                        tmp_path: Path) -> None:
    from remem.engine import events

    raw = [
        {"v": 1, "kind": "note", "at": "2026-11-29T10:00:00Z", "title": f"deploy key {GH}",
         "text": f"the staging deploy uses OPENAI_API_KEY={KEY} for now", "detail": f"token {GH} rotates"},
        {"v": 1, "kind": "message", "role": "user", "session": "s1", "keep": True,
         "at": "2026-11-29T10:01:00Z", "text": f"keep this: staging deploy key {KEY}"},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in raw))
    assert cli("ingest", "--events", str(path)).exit_code == 0
    rows = store.rows("SELECT id, title, gist, detail FROM episodes")  # the session's own one too
    for row in rows:
        for field in ("title", "gist", "detail"):
            assert "sk-proj-" not in row[field] and "ghp_" not in row[field], (field, row[field])
    assert any("[secret]" in row["gist"] for row in rows) and any("[secret]" in row["title"] for row in rows)
    # Ids still hash the event as written: re-reading adds nothing, ids do not move.
    assert {events.episode_id(events.validate(e)) for e in raw} <= {r["id"] for r in rows}
    assert cli("ingest", "--events", str(path)).exit_code == 0
    assert store.one("SELECT count(*) AS n FROM episodes")["n"] == len(rows)
    for query in ("staging deploy key", "deploy key", KEY):
        out = cli("recall", query, "--json")
        assert out.exit_code == 0, out.output
        assert "sk-proj-" not in out.stdout and "ghp_" not in out.stdout, out.stdout
        assert "[secret]" in out.stdout


# --------------------------------------------------------------------------- 7. control characters

def _lesson(store: Any, text: str, cwd: str | None = None) -> str:
    from remem.engine import lessons

    return lessons.add_lesson(store, text, "correction", sources=["e1"], cwd=cwd, strength=1.5)["id"]


def test_lessons_show_edit_and_json_escape_stored_control_characters(home: Path, cli: Any, store: Any) -> None:
    lesson_id = _lesson(store, f"first words {HOSTILE}")
    edited = cli("lessons", "edit", lesson_id, "--text", f"Use uv {HOSTILE}")
    assert edited.exit_code == 0, edited.output
    _no_controls(edited.stdout, "edit")
    assert "FAILED test" in edited.stdout and "\\x1b" in edited.stdout
    assert cli("lessons", "veto", lesson_id, "--note", f"why {HOSTILE}").exit_code == 0
    shown = cli("lessons", "show", lesson_id)
    assert shown.exit_code == 0, shown.output
    _no_controls(shown.stdout, "show")
    assert shown.stdout.count("\\x1b]0;owned") == 3  # text, draft (the words before) and note
    as_json = cli("lessons", "show", lesson_id, "--json")
    _no_controls(as_json.stdout, "show --json")
    lesson = json.loads(as_json.stdout)  # JSON keeps the words as stored, escaped
    assert HOSTILE in lesson["text"] and HOSTILE in lesson["note"] and HOSTILE in lesson["draft"]


def test_json_output_escapes_c1_controls_in_an_event_title(home: Path, cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps({"v": 1, "kind": "note", "at": "2026-11-29T10:00:00Z", "title": HOSTILE,
                                "text": "the build FAILED again on the runner"}) + "\n")
    assert cli("ingest", "--events", str(path)).exit_code == 0
    for args in (["list", "--json"], ["recall", "build FAILED runner", "--json"]):
        out = cli(*args)
        assert out.exit_code == 0, out.output
        _no_controls(out.stdout, args)
        assert "\\u009b" in out.stdout
        assert HOSTILE in _strings(json.loads(out.stdout))  # the title as stored


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [s for item in items for s in _strings(item)]


def test_morning_and_context_escape_stored_control_characters(home: Path, cli: Any, store: Any,
                                                             tmp_path: Path) -> None:
    from remem import paths

    project = tmp_path / "shop"
    project.mkdir()
    _lesson(store, f"Build the image with make {HOSTILE}", cwd=str(project))
    out = cli("context", "--project", str(project))
    assert out.exit_code == 0, out.output
    assert "Build the image" in out.stdout
    _no_controls(out.stdout, "context")
    paths.morning_path().parent.mkdir(parents=True, exist_ok=True)
    paths.morning_path().write_text(f"# Morning\n\nlearned:\n\t- {HOSTILE}\n", encoding="utf-8")
    out = cli("morning")
    assert out.exit_code == 0, out.output
    _no_controls(out.stdout, "morning")
    assert "# Morning\n\nlearned:\n\t- \\x1b]0;owned" in out.stdout  # lines and tabs kept


def test_share_and_doctor_lines_escape_what_other_files_said(home: Path, cli: Any, capsys: Any,
                                                            monkeypatch: Any) -> None:
    from remem.commands.share import _print_receive
    from remem.engine import doctor

    _print_receive({
        "quarantined": [{"id": "abc", "origin": f"0123{HOSTILE}", "reasons": [f"secret: {HOSTILE}"]}],
        "rejected": [], "incomplete": [], "received": [],
        "activated": [{"id": "def", "why": f"corroborated {HOSTILE}"}],
        "revoked": [{"id": "ghi", "by": f"peer {HOSTILE}"}],
    })
    said = capsys.readouterr().out
    _no_controls(said, "share receive")
    assert said.count("\\x1b]0;owned") == 4

    def report(**_: Any) -> dict[str, Any]:
        return {"agents": [], "hooks": [], "store": {}, "schedule": {"wired": False, "how": "cron"},
                "problems": [{"problem": f"~/.claude/settings.json says {HOSTILE}", "fix": f"edit {HOSTILE}"}]}

    monkeypatch.setattr(doctor, "diagnose", report)
    out = cli("doctor", "--no-run")
    assert out.exit_code == 0, out.output
    _no_controls(out.stdout, "doctor")
    assert out.stdout.count("\\x1b]0;owned") == 2


def test_a_json_error_escapes_c1_controls_too(monkeypatch: Any, capsys: Any) -> None:
    import typer

    from remem import cli as cli_mod

    monkeypatch.setattr(cli_mod, "_json_errors", True)
    with pytest.raises(typer.Exit):
        cli_mod._fail(f"cannot use {HOSTILE}")
    out = capsys.readouterr().out
    _no_controls(out, "error JSON")
    assert json.loads(out) == {"error": f"cannot use {HOSTILE}"}
