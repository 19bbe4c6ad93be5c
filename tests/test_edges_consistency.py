"""The CLI, the MCP tools and the JSON API say the same things the same way: `archived` is
true/false from every edge, and a project's lessons (of one status, or of all) are the same
lessons from `remem lessons list --project`, the `lessons` tool and GET /memory/lessons.

The CLI in-process, the tools behind the mcp SDK's own client, the JSON API over real HTTP from a
real `remem serve --http`."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call_ok, call_tool, http_server, server_in_process

TOKEN = "consistency-token-51ac"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --------------------------------------------------------------------------- archived

def _archived(memories: list[dict[str, Any]]) -> list[bool]:
    """Each memory's `archived`, which must be true or false (0 and 1 compare equal to them)."""
    flags = [m["archived"] for m in memories]
    assert all(type(flag) is bool for flag in flags), flags
    return flags


def test_cli_json_prints_archived_as_true_or_false(cli: Any) -> None:
    """remember, list and graph --json printed the store's 0/1 where MCP and HTTP print false/true."""
    kept = cli("remember", "the cache lives in /var/cache/shop", "--json")
    assert '"archived": false' in kept.stdout, kept.stdout
    first = _json(kept)
    second = _json(cli("remember", "the cache is cleared on every deploy", "--json"))
    _json(cli("connect", first["id"], second["id"], "--type", "related_to", "--json"))
    _json(cli("forget", second["id"], "--json"))
    assert _archived(_json(cli("list", "--archived", "--json"))) == [True]
    assert _archived(_json(cli("list", "--json"))) == [False]
    levels = _json(cli("graph", first["id"], "--json"))
    assert [_archived(level) for level in levels] == [[False], [True]]
    assert _archived([_json(cli("forget", second["id"], "--undo", "--json"))]) == [False]
    assert _archived([_json(cli("promote", second["id"], "--json"))]) == [False]


@pytest.mark.anyio
async def test_traverse_over_mcp_prints_archived_as_true_or_false(home: Path) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        a = await call_ok(client, "remember", {"text": "the build uses a warm cache"})
        b = await call_ok(client, "remember", {"text": "the warm cache is primed nightly"})
        await call_ok(client, "connect", {"source": a["id"], "target": b["id"]})
        await call_ok(client, "delete_memory", {"id": b["id"]})
        walked = await call_ok(client, "traverse", {"id": a["id"]})
    assert [_archived(level) for level in walked["levels"]] == [[False], [True]]


# --------------------------------------------------------------------------- a project's lessons

def _lessons(store: Any) -> dict[str, str]:
    """Lessons in, above and beside the shop project, one that applies everywhere, and a
    candidate in the shop: name -> id."""
    from remem.engine.lessons import add_lesson
    from remem.engine.memories import remember

    remember(store, "the shop runs on port 8080", cwd="/home/me/shop")  # so "shop" names a project
    made = {
        "shop": ("run the shop's tests with make check", "/home/me/shop", "active", 3.0),
        "above": ("keep every project's secrets out of git", "/home/me", "active", 2.5),
        "everywhere": ("answer in English", None, "active", 2.0),
        "beside": ("deploy the blog with hugo", "/home/me/blog", "active", 1.5),
        "below": ("the shop's api takes JSON only", "/home/me/shop/api", "active", 1.2),
        "candidate": ("the shop's staging needs a VPN", "/home/me/shop", "candidate", 1.0),
    }
    return {name: add_lesson(store, text, "correction", cwd=cwd, status=status, strength=strength)["id"]
            for name, (text, cwd, status, strength) in made.items()}


def _http_lessons(url: str, query: str) -> list[str]:
    request = urllib.request.Request(f"{url}/memory/lessons?{query}", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return [l["id"] for l in json.loads(answer.read())["lessons"]]


@pytest.mark.anyio
async def test_a_projects_lessons_are_the_same_from_the_cli_mcp_and_http(store: Any, cli: Any, tmp_path: Path) -> None:
    """`remem lessons list` had no --project, and MCP and HTTP refused the CLI's --status all."""
    from mcp.client import Client

    ids = _lessons(store)
    in_shop = [ids["shop"], ids["above"], ids["everywhere"]]  # strongest first
    in_shop_any_status = in_shop + [ids["candidate"]]
    every = [ids[n] for n in ("shop", "above", "everywhere", "beside", "below", "candidate")]
    cases = [  # (CLI options, tool arguments, query string, the lessons)
        (["--project", "shop"], {"project": "shop"}, "project=shop", in_shop),
        (["--project", "/home/me/shop/"], {"project": "/home/me/shop/"}, "project=/home/me/shop/", in_shop),
        (["--project", "shop", "--status", "all"], {"project": "shop", "status": "all"},
         "project=shop&status=all", in_shop_any_status),
        (["--status", "all"], {"status": "all"}, "status=all", every),
    ]
    for options, _, _, expected in cases:
        assert [l["id"] for l in _json(cli("lessons", "list", *options, "--json"))] == expected, options
    # Only the person asks for the lessons waiting for a decision: an agent is never handed a
    # received one (memories.for_agents), so MCP and HTTP take no such status.
    waiting = cli("lessons", "list", "--status", "candidate", "--project", "shop", "--json")
    assert [l["id"] for l in _json(waiting)] == [ids["candidate"]]
    async with Client(server_in_process()) as client:
        for options, arguments, _, expected in cases:
            got = await call_ok(client, "lessons", arguments)
            assert [l["id"] for l in got["lessons"]] == expected, arguments
        ok, refused = await call_tool(client, "lessons", {"status": "candidate", "project": "shop"})
        assert not ok and "status" in refused and "\n" not in refused
        ok, refused = await call_tool(client, "lessons", {"project": "nowhere"})
        assert not ok and refused == 'no project named \'nowhere\'; give its folder path, e.g. `"project": "~/code/nowhere"`'
    env = {**os.environ, "REMEM_TOKEN": TOKEN}  # this test's REMEM_HOME and HOME
    with http_server(tmp_path, env, TOKEN, "--no-tasks", "--no-warm") as url:
        for _, _, query, expected in cases:
            assert _http_lessons(url, query) == expected, query


def test_cli_lessons_list_refuses_a_project_it_cannot_name_with_the_fix(store: Any, cli: Any) -> None:
    _lessons(store)
    result = cli("lessons", "list", "--project", "nowhere")
    assert result.exit_code == 1
    assert result.stderr.strip() == "remem: no project named 'nowhere'; give its folder path, e.g. `--project ~/code/nowhere`"
    shown = cli("lessons", "list", "--project", "/home/me/blog/posts", "--kind", "error")
    assert shown.exit_code == 0 and shown.stdout.strip() == (
        "no active lessons of kind error apply in /home/me/blog/posts; without --project every project's are listed")
