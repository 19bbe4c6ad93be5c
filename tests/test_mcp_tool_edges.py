"""Edges of the MCP tools a reviewer found with demo stores: secrets typed into `remember` and
`update_memory`, the time window of a `search` without a query, the lessons resource without a
project, and the start `traverse` reports.

The tools run behind the SDK's own client against the real server; the CLI in-process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import call_tool, server_in_process

API_KEY = "sk-proj-Qw3rTy7UiOp9AsDfGh2JkL5zXc"
API_KEY_WORD = "Qw3rTy7UiOp9AsDfGh2JkL5zXc"  # the part full-text search indexes as one word
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _stored_words(store: Any) -> str:
    """Every word the store keeps of its memories, and what its full-text index holds."""
    rows = store.rows("SELECT title, gist, detail FROM episodes")
    return json.dumps(rows) + json.dumps(store.rows("SELECT * FROM episodes_fts"))


# --------------------------------------------------------------------------- secrets

@pytest.mark.anyio
async def test_a_secret_typed_into_remember_or_update_memory_is_stored_redacted(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        ok, memory = await call_tool(client, "remember", {
            "text": f"call the billing API with the key {API_KEY}", "title": f"billing key {GITHUB_TOKEN}"})
        assert ok, memory
        assert API_KEY_WORD not in json.dumps(memory) and GITHUB_TOKEN not in json.dumps(memory)
        assert "[secret]" in memory["gist"] and "[secret]" in memory["title"]
        ok, other = await call_tool(client, "remember", {"text": "the deploy note"})
        ok, updated = await call_tool(client, "update_memory", {
            "id": other["id"], "text": f"deploy with token={GITHUB_TOKEN}", "title": f"deploy {API_KEY}"})
        assert ok and "[secret]" in updated["gist"] and "[secret]" in updated["title"], updated
        for query in ("billing API key", "deploy token", API_KEY_WORD):
            ok, got = await call_tool(client, "recall", {"query": query})
            hits = json.dumps(got["hits"])  # (the query is echoed as typed)
            assert ok and got["hits"] and API_KEY_WORD not in hits and GITHUB_TOKEN not in hits
    words = _stored_words(store)
    assert API_KEY_WORD not in words and GITHUB_TOKEN not in words


def test_a_secret_typed_into_cli_remember_is_stored_redacted(cli: Any, store: Any) -> None:
    memory = json.loads(cli("remember", f"the staging password=Zq8vLm2RxPelicanWing and {API_KEY}",
                            "--json").stdout)
    assert memory["gist"] == "the staging password=[secret] and [secret]"
    assert "Zq8vLm2RxPelicanWing" not in _stored_words(store) and API_KEY_WORD not in _stored_words(store)


# --------------------------------------------------------------------------- search's time window

@pytest.mark.anyio
async def test_search_checks_its_time_window_with_or_without_a_query(store: Any) -> None:
    from mcp.client import Client

    from remem.engine.memories import remember

    remember(store, "a memory inside every window", at="2024-06-01T00:00:00+00:00")
    async with Client(server_in_process()) as client:
        for query in ("", "memory"):
            ok, text = await call_tool(client, "search", {"query": query, "since": "2027-01-01", "until": "2020-01-01"})
            assert not ok and "is after until" in text and "swap them" in text, (query, text)
            for bound in ("since", "until"):
                # "" is how MCP clients send an optional string left unset: no filter
                ok, got = await call_tool(client, "search", {"query": query, bound: ""})
                assert ok and len(got["hits"]) == 1, (query, bound, got)
                ok, text = await call_tool(client, "search", {"query": query, bound: "  "})
                assert not ok and f"{bound} is empty" in text, (query, bound, text)
            ok, got = await call_tool(client, "search", {"query": query, "since": "2024-01-01", "until": "2024-12-31"})
            assert ok and len(got["hits"]) == 1, (query, got)


def test_cli_list_refuses_an_empty_or_inverted_window(cli: Any, store: Any) -> None:
    from remem.engine.memories import remember

    remember(store, "a memory")
    for args, line in ((["--since", ""], "since is empty"), (["--until", " "], "until is empty"),
                       (["--since", "2027-01-01", "--until", "2020-01-01"], "swap them")):
        result = cli("list", *args)
        assert result.exit_code == 1 and line in result.output, (args, result.output)


# --------------------------------------------------------------------------- the lessons resource

@pytest.mark.anyio
async def test_the_lessons_resource_without_a_project_names_its_form(store: Any) -> None:
    from mcp.client import Client
    from mcp.shared.exceptions import MCPError

    from remem.engine.lessons import add_lesson

    add_lesson(store, "Run the shop checks first", "correction", cwd="/work/shop")
    add_lesson(store, "Deploy billing with the blue profile", "correction", cwd="/work/billing")
    async with Client(server_in_process()) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("remem://lessons/")
        message = str(caught.value)
        assert "remem://lessons/{project}" in message and "\n" not in message, message
        assert "billing" not in message
        shop = (await client.read_resource("remem://lessons/shop")).contents[0].text
        assert "shop checks" in shop and "billing" not in shop
        with pytest.raises(MCPError, match="no project named 'nowhere'"):
            await client.read_resource("remem://lessons/nowhere")


# --------------------------------------------------------------------------- traverse

@pytest.mark.anyio
async def test_traverse_reports_the_full_id_of_its_start(store: Any) -> None:
    from mcp.client import Client

    from remem.engine.memories import remember

    start = remember(store, "the start of a walk")["id"]
    async with Client(server_in_process()) as client:
        ok, got = await call_tool(client, "traverse", {"id": start[:6]})
    assert ok and got["start"] == start and got["levels"][0][0]["id"] == start, got
