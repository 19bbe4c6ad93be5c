"""An empty or blank tag, kind or project is refused in one line, as an empty --since is: left
out silently, it lifted the filter and answered from every memory (an unset variable in a
script, or an agent's `"tags": [""]`, read as "everything").

One engine rule (lifecycle.check_filters) behind recall and list; the CLI runs in-process, the
MCP tools behind the SDK's own client, the JSON API through the real Starlette app."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conftest import call_tool, server_in_process

EMPTY_TAG = "tag is empty (an unset variable?); give a tag (deploy), or leave it out"
EMPTY_KIND = "kind is empty (an unset variable?)"
EMPTY_PROJECT = "project is empty (an unset variable?)"
NO_TYPE = "type must be short_term or long_term, not ''"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _seed(store: Any) -> None:
    """A tagged memory and an untagged one, so an unfiltered answer shows as two rows."""
    from remem.engine.memories import remember

    remember(store, "caching: keep the redis cache warm before a deploy", tags=["deploy"], cwd="/srv/shop")
    remember(store, "caching: the docs site has no cache at all", cwd="/srv/docs")


@pytest.mark.parametrize("args, line", [
    (["--tag", ""], EMPTY_TAG),
    (["--tag", "   "], EMPTY_TAG),
    (["--tag", "deploy", "--tag", ""], EMPTY_TAG),
    (["--kind", ""], EMPTY_KIND),
    (["--kind", " "], EMPTY_KIND),
    (["--project", ""], EMPTY_PROJECT),
    (["--project", "  "], EMPTY_PROJECT),
    (["--type", ""], NO_TYPE),
])
@pytest.mark.parametrize("command", [["recall", "caching"], ["list"]])
def test_cli_recall_and_list_refuse_a_blank_filter_in_one_line(
        cli: Any, store: Any, command: list[str], args: list[str], line: str) -> None:
    _seed(store)
    result = cli(*command, *args, "--json")
    assert result.exit_code == 1, (command, args, result.output)
    assert line in result.output and "Traceback" not in result.output, (command, args, result.output)


def test_the_engine_refuses_a_blank_filter_for_recall_and_list_alike(store: Any) -> None:
    from remem.engine.lifecycle import list_memories
    from remem.engine.recall import recall

    _seed(store)
    for given, line in (({"tags": [""]}, EMPTY_TAG), ({"tags": ["\t"]}, EMPTY_TAG),
                        ({"kinds": [""]}, EMPTY_KIND), ({"project": " "}, EMPTY_PROJECT),
                        ({"memory_type": ""}, NO_TYPE)):
        with pytest.raises(ValueError, match=r"^" + re.escape(line)):
            recall(store, "caching", 5, **given)
        with pytest.raises(ValueError, match=r"^" + re.escape(line)):
            list_memories(store, **given)
    with pytest.raises(ValueError, match=re.escape(EMPTY_KIND)):
        list_memories(store, kind="")
    # Filters given as a generator are read in full once, not used up by the check.
    assert [h["kind"] for h in recall(store, "caching", 5, tags=(t for t in ["deploy"]), lessons=False)] == ["note"]
    assert len(list_memories(store, tags=(t for t in ["deploy"]))) == 1
    assert len(list_memories(store, kinds=(k for k in ["note"]))) == 2


def test_real_filters_still_narrow(cli: Any, store: Any) -> None:
    _seed(store)
    rows = json.loads(cli("list", "--tag", "Deploy", "--json").stdout)
    assert [r["tags"] for r in rows] == [["deploy"]]
    hits = json.loads(cli("recall", "caching", "--project", "/srv/docs", "--json").stdout)
    assert [h["title"] for h in hits if h["type"] == "episode"] == ["caching: the docs site has no cache at all"]


@pytest.mark.anyio
async def test_mcp_recall_and_search_refuse_a_blank_tag_or_project(store: Any) -> None:
    from mcp.client import Client

    _seed(store)
    async with Client(server_in_process()) as client:
        for tool, args in (("recall", {"query": "caching"}), ("search", {"query": "caching"}), ("search", {})):
            for given, line in (({"tags": [""]}, EMPTY_TAG), ({"tags": ["deploy", "  "]}, EMPTY_TAG),
                                ({"project": "   "}, EMPTY_PROJECT)):
                ok, text = await call_tool(client, tool, {**args, **given})
                # A tool error of one line, as every refused engine ValueError is.
                assert not ok and text.startswith(line) and "\n" not in text, (tool, args, given, text)
            # "" is how MCP clients send an optional string left unset: every project.
            ok, got = await call_tool(client, tool, {**args, "project": ""})
            assert ok and len(got["hits"]) == 2, (tool, args, got)


@pytest.mark.anyio
async def test_the_json_api_refuses_a_blank_tag(store: Any) -> None:
    from remem.server_http import http_app
    from tests.test_project_argument import _http

    _seed(store)
    app = http_app(server_in_process(), host="127.0.0.1", token="")
    status, answer = await _http(app, "POST", "/memory/recall", {"query": "caching", "tags": [""]})
    assert status == 400 and answer["error"].startswith(EMPTY_TAG), answer
    status, answer = await _http(app, "POST", "/memory/recall", {"query": "caching", "tags": ["deploy"]})
    assert status == 200 and len(answer["hits"]) == 1, answer


# --------------------------------------------------------------------------- lessons

def _seed_lessons(store: Any) -> None:
    """A lesson learned in each of two projects, so an unfiltered answer shows as two."""
    from remem.engine.lessons import add_lesson

    add_lesson(store, "warm the redis cache before a deploy", "correction", cwd="/srv/shop")
    add_lesson(store, "build the docs site with the pinned theme", "correction", cwd="/srv/docs")


@pytest.mark.parametrize("blank", ["", "  "])
def test_cli_lessons_list_refuses_a_blank_project_in_one_line(cli: Any, store: Any, blank: str) -> None:
    _seed_lessons(store)
    for json_flag in ([], ["--json"]):
        result = cli("lessons", "list", "--project", blank, *json_flag)
        assert result.exit_code == 1, (blank, json_flag, result.output)
        assert EMPTY_PROJECT in result.output and "redis" not in result.output, (blank, result.output)
    shop = json.loads(cli("lessons", "list", "--project", "/srv/shop", "--json").stdout)
    assert [l["cwd"] for l in shop] == ["/srv/shop"]


@pytest.mark.anyio
async def test_mcp_lessons_and_the_json_api_refuse_a_blank_project_as_recall_does(store: Any) -> None:
    from mcp.client import Client

    from remem.server_http import http_app
    from tests.test_project_argument import _http

    _seed_lessons(store)
    async with Client(server_in_process()) as client:
        ok, text = await call_tool(client, "lessons", {"project": "  "})
        assert not ok and text.startswith(EMPTY_PROJECT) and "\n" not in text, text
        # "" is how MCP clients send an optional string left unset: every project, as for recall.
        ok, got = await call_tool(client, "lessons", {"project": ""})
        assert ok and len(got["lessons"]) == 2, got
    app = http_app(server_in_process(), host="127.0.0.1", token="")
    status, answer = await _http(app, "GET", "/memory/lessons", query="project=%20")
    assert status == 400 and answer["error"].startswith(EMPTY_PROJECT), answer
    status, answer = await _http(app, "GET", "/memory/lessons", query="project=%2Fsrv%2Fdocs")
    assert status == 200 and [l["cwd"] for l in answer["lessons"]] == ["/srv/docs"], answer
