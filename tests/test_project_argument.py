"""A project argument means one thing at every edge: the engine's `projects.resolve_project`.

An absolute or "~" path is that folder; a relative path is a folder seen from the shell (the
CLI only: a server's own folder means nothing to its caller); a bare name is the one known
project whose folder has that name. Anything else is refused with one line naming the fix,
never stored or filtered by as a relative `cwd` that no folder filter matches.

The CLI runs in-process, the MCP tools behind the SDK's own client, the JSON API through the
real Starlette app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call_tool, server_in_process

SHOP = "/home/you/code/shop-api"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _seed(store: Any) -> dict[str, str]:
    """Memories of the shop project, one of another project, and two projects named "api"."""
    from remem.engine.lessons import add_lesson
    from remem.engine.memories import remember

    ids = {
        "shop": remember(store, "the shop project note: deploy with the blue profile", cwd=SHOP)["id"],
        "other": remember(store, "the billing project note: deploy with the green profile",
                          cwd="/home/you/code/billing")["id"],
        "api-a": remember(store, "first api service note", cwd="/srv/a/api")["id"],
        "api-b": remember(store, "second api service note", cwd="/srv/b/api")["id"],
    }
    add_lesson(store, "Build the shop image with make image, not docker build", "correction", cwd=SHOP)
    return ids


def _out(result: Any) -> str:
    return result.output  # the runner's output holds stderr too


# --------------------------------------------------------------------------- the engine's rule

def test_a_path_or_one_known_name_resolves_and_anything_else_is_refused(store: Any, tmp_path: Path) -> None:
    from remem.engine.projects import resolve_project

    _seed(store)
    assert resolve_project(store, None) is None and resolve_project(store, "  ") is None
    assert resolve_project(store, "/home/you/code/shop-api/") == SHOP
    assert resolve_project(store, "/home/you/code/x/../shop-api") == SHOP
    assert resolve_project(store, "~/code/new") == str(Path.home() / "code" / "new")
    assert resolve_project(store, "/brand/new/project") == "/brand/new/project"  # a path needs no history
    assert resolve_project(store, "shop-api") == SHOP
    assert resolve_project(store, "-home-you-code-shop-api") == SHOP  # Claude Code's name for it
    (tmp_path / "here").mkdir()
    assert resolve_project(store, "here", here=str(tmp_path)) == str(tmp_path / "here")
    assert resolve_project(store, ".", here=str(tmp_path)) == str(tmp_path)
    with pytest.raises(ValueError, match=r"^no project named 'newproj'; give its folder path, e\.g\. "
                                         r"--project ~/code/newproj$"):
        resolve_project(store, "newproj", example="--project {}")
    with pytest.raises(ValueError, match=r"'api' fits 2 projects: /srv/a/api, /srv/b/api; give its folder path"):
        resolve_project(store, "api")
    # A relative path means nothing without the caller's folder, and one that is not there is refused.
    with pytest.raises(ValueError, match="'code/newproj' is a relative path; give the project's full folder path"):
        resolve_project(store, "code/newproj")
    with pytest.raises(ValueError, match=r"no folder 'code/newproj' in .*; give the project's full folder path"):
        resolve_project(store, "code/newproj", here=str(tmp_path))


def test_a_relative_cwd_an_older_release_stored_is_no_known_project(store: Any) -> None:
    from remem.engine.projects import resolve_project

    store.put_episodes([{"id": "old-relative", "kind": "note", "title": "x", "gist": "x", "cwd": "newproj"}])
    with pytest.raises(ValueError, match="no project named 'newproj'"):
        resolve_project(store, "newproj")


def test_remember_refuses_a_relative_folder_whatever_edge_calls_it(store: Any) -> None:
    from remem.engine.memories import remember

    with pytest.raises(ValueError, match="must be a full path, not 'shop-api'"):
        remember(store, "a note", cwd="shop-api")
    assert store.rows("SELECT id FROM episodes") == []


# --------------------------------------------------------------------------- the CLI

def test_cli_remember_stores_the_folder_a_project_argument_means(
        cli: Any, store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(store)
    monkeypatch.chdir(tmp_path)
    dot = json.loads(cli("remember", "a note here", "--project", ".", "--json").stdout)
    assert dot["cwd"] == str(tmp_path)
    named = json.loads(cli("remember", "a shop note", "--project", "shop-api", "--json").stdout)
    assert named["cwd"] == SHOP
    before = store.scalar("SELECT count(*) FROM episodes")
    for given, fix in (("newproj", "no project named 'newproj'; give its folder path, e.g. `--project ~/code/newproj`"),
                       ("api", "'api' fits 2 projects: /srv/a/api, /srv/b/api"),
                       ("code/newproj", "no folder 'code/newproj' in")):
        result = cli("remember", "a note", "--project", given)
        assert result.exit_code == 1 and fix in _out(result), _out(result)
        assert "Traceback" not in _out(result) and len(_out(result).strip().splitlines()) == 1
    assert store.scalar("SELECT count(*) FROM episodes") == before  # nothing stored with a relative cwd


def test_cli_recall_list_and_context_take_a_project_by_name(
        cli: Any, store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _seed(store)
    monkeypatch.chdir(tmp_path)  # no folder named shop-api here: the name is the known project
    hits = json.loads(cli("recall", "project note deploy profile", "--project", "shop-api", "--json").stdout)
    assert [h["id"] for h in hits if h["type"] == "episode"] == [ids["shop"]]
    listed = json.loads(cli("list", "--project", "shop-api", "--json").stdout)
    assert [r["id"] for r in listed] == [ids["shop"]]
    shown = json.loads(cli("context", "--project", "shop-api", "--json").stdout)
    assert shown["project"] == SHOP and "make image" in shown["text"]
    for args in (["recall", "deploy", "--project", "newproj"], ["list", "--project", "newproj"],
                 ["context", "--project", "newproj"]):
        result = cli(*args)
        assert result.exit_code == 1 and "no project named 'newproj'" in _out(result), (args, _out(result))


# --------------------------------------------------------------------------- MCP and the JSON API

@pytest.mark.anyio
async def test_mcp_tools_take_the_same_rule_and_report_the_folder(store: Any) -> None:
    from mcp.client import Client

    ids = _seed(store)
    async with Client(server_in_process()) as client:
        ok, memory = await call_tool(client, "remember", {"text": "another shop note", "project": "shop-api"})
        assert ok and memory["cwd"] == SHOP
        ok, memory = await call_tool(client, "remember", {"text": "a tilde note", "project": "~/code/new/"})
        assert ok and memory["cwd"] == str(Path.home() / "code" / "new")
        unknown = 'no project named \'newproj\'; give its folder path, e.g. `"project": "~/code/newproj"`'
        for given, fix in (("newproj", unknown),
                           ("code/newproj", "'code/newproj' is a relative path"),
                           (".", "'.' is a relative path"),
                           ("api", "'api' fits 2 projects")):
            for tool, args in (("remember", {"text": "a note"}), ("recall", {"query": "note"}),
                               ("search", {"query": ""}), ("search", {"query": "note"}),
                               ("lessons", {}), ("context", {})):
                ok, text = await call_tool(client, tool, {**args, "project": given})
                assert not ok and fix in text, (tool, given, text)
        ok, got = await call_tool(client, "recall", {"query": "project note deploy profile", "project": "shop-api"})
        assert ok and ids["shop"] in [h["id"] for h in got["hits"]] and ids["other"] not in [h["id"] for h in got["hits"]]
        ok, got = await call_tool(client, "context", {"project": "shop-api"})
        assert ok and got["project"] == SHOP and "make image" in got["text"]
    stored = {r["cwd"] for r in store.rows("SELECT cwd FROM episodes")}
    assert all(cwd.startswith("/") for cwd in stored), stored


async def _http(app: Any, method: str, path: str, body: dict[str, Any] | None = None,
                query: str = "") -> tuple[int, Any]:
    """One request to the ASGI app: (status, JSON answer)."""
    payload = json.dumps(body).encode() if body is not None else b""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": payload, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": method, "path": path, "raw_path": path.encode(),
               "query_string": query.encode(), "scheme": "http", "http_version": "1.1", "root_path": "",
               "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
               "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1)}, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))


@pytest.mark.anyio
async def test_the_json_api_takes_the_same_rule(store: Any) -> None:
    from remem.server_http import http_app

    _seed(store)
    app = http_app(server_in_process(), host="127.0.0.1", token="")
    status, answer = await _http(app, "POST", "/memory/remember", {"text": "a shop note", "project": "shop-api"})
    assert status == 200 and answer["cwd"] == SHOP, answer
    status, answer = await _http(app, "POST", "/memory/remember", {"text": "a note", "project": "newproj"})
    assert status == 400 and "no project named 'newproj'" in answer["error"], answer
    status, answer = await _http(app, "GET", "/memory/lessons", query="project=shop-api")
    assert status == 200 and [l["cwd"] for l in answer["lessons"]] == [SHOP], answer


def test_commands_without_a_project_work_from_a_folder_that_was_deleted(home: Path, tmp_path: Path) -> None:
    """No --project given: the shell's folder is never read, so a deleted one is no error."""
    import os
    import shlex
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    for args in (["remember", "a note from nowhere"], ["recall", "note"], ["list"]):
        command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "remem", *args])
        proc = subprocess.run(["sh", "-c", f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} "
                               f"&& {command}"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
        gone.mkdir()


def test_a_nul_in_a_project_argument_is_not_stored(store: Any, tmp_path: Path) -> None:
    from remem.engine.projects import resolve_project

    assert resolve_project(store, "/tmp/a\x00b") == "/tmp/ab"
