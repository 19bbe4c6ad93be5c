"""MCP tools at their edges, on demo stores: a memory with thousands of tags (which
emptied every answer that ranked it), `context` without a project, what `update_memory` says it
stored otherwise, an id prefix of a memory and a lesson given to the tools that change memories,
secrets in tags, what `remember` answers with, a home moved away under the running server, an
expired short-term memory listed without a query, and numbers with float noise.

The tools run behind the SDK's own client against the real server, on the real store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import call_ok, call_tool, server_in_process

KEY = "sk-ant-api03-" + "a1B2c3D4" * 12
MANY_TAGS = [f"tag{i:04d}-" + "x" * 63 for i in range(5000)]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


# --------------------------------------------------------------------------- many tags

@pytest.mark.anyio
async def test_more_tags_than_an_event_may_carry_are_refused_in_one_line_naming_the_limit(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        ok, text = await call_tool(client, "remember", {"text": "many tags memory about caching",
                                                        "tags": MANY_TAGS})
        assert not ok and text == "at most 32 tags a memory, not 5,000; keep the ones you would search by", text
        memory = await call_ok(client, "remember", {"text": "a few tags", "tags": MANY_TAGS[:32]})
        assert len(memory["tags"]) == 32
        ok, text = await call_tool(client, "update_memory", {"id": memory["id"], "tags": MANY_TAGS[:33]})
        assert not ok and "at most 32 tags a memory, not 33" in text, text
    assert store.scalar("SELECT count(*) FROM episodes") == 1  # nothing stored for the refused call
    assert len(store.tags_of(memory["id"])) == 32  # the refused update changed nothing


@pytest.mark.anyio
async def test_a_memory_kept_with_thousands_of_tags_still_comes_back_in_recall_and_search(store: Any) -> None:
    """Tagged before the cap, its 5,000 tags made each hit larger than a whole answer: recall
    answered no hits at all ("3 of 3 hits left out"), and so did a search by one of the tags."""
    from mcp.client import Client

    from remem.engine.memories import remember

    many = remember(store, "many tags memory about caching")
    with store.write() as conn:  # as a memory kept from before the cap holds them
        conn.executemany("INSERT INTO tags (memory_id, tag) VALUES (?, ?)", [(many["id"], t) for t in MANY_TAGS])
    remember(store, "the cache memory of another kind", tags=["cache"])
    async with Client(server_in_process()) as client:
        got = await call_ok(client, "recall", {"query": "many tags memory caching", "k": 3})
        hit = next(h for h in got["hits"] if h["id"] == many["id"])
        assert hit["tags"] == sorted(MANY_TAGS)[:32] and hit["more_tags"] == 5000 - 32
        assert "truncated" not in got and len(got["hits"]) == 2
        found = await call_ok(client, "search", {"tags": [MANY_TAGS[0]]})
        assert [h["id"] for h in found["hits"]] == [many["id"]] and found["hits"][0]["more_tags"] == 4968
        found = await call_ok(client, "search", {"query": "caching", "tags": [MANY_TAGS[0]]})
        assert [h["id"] for h in found["hits"]] == [many["id"]]


def test_an_item_too_large_to_fit_on_its_own_is_passed_over_not_the_end_of_the_list() -> None:
    from remem.server_tools import MAX_ANSWER_BYTES, _answer

    small = [{"id": f"m{i}", "text": "a small hit"} for i in range(4)]
    huge = {"id": "huge", "text": "x" * (MAX_ANSWER_BYTES + 10)}
    got = _answer("recall", {"query": "q", "hits": [small[0], huge, *small[1:]]})
    assert [h["id"] for h in got["hits"]] == ["m0", "m1", "m2", "m3"]
    assert "1 of 5 hits left out" in got["truncated"] and _size(got) <= MAX_ANSWER_BYTES


# --------------------------------------------------------------------------- context without a project

@pytest.mark.anyio
async def test_context_with_no_lesson_to_give_says_where_the_lessons_are(store: Any) -> None:
    """Every lesson of the demo is for one project: `context` without one answered an empty
    block and nothing else, where `remem context` names the project that has them."""
    from mcp.client import Client

    from remem.engine.lessons import add_lesson

    add_lesson(store, "Deploy the shop with the blue profile", "correction", cwd="/home/me/shop")
    async with Client(server_in_process()) as client:
        got = await call_ok(client, "context", {})
        assert got["lessons"] == [] and got["text"] == ""
        assert "no project given" in got["note"] and "pass `project`" in got["note"], got
        got = await call_ok(client, "context", {"project": "/home/me/other"})
        assert got["note"] == ('no lessons apply in /home/me/other; 1 active lesson is for other projects, '
                               'e.g. "project": "/home/me/shop"'), got
        got = await call_ok(client, "context", {"project": "/home/me/shop"})
        assert [l["text"] for l in got["lessons"]] == ["Deploy the shop with the blue profile"]
        assert "note" not in got


@pytest.mark.anyio
async def test_context_without_a_project_in_a_memory_with_no_lessons_says_nothing_more(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        assert await call_ok(client, "context", {}) == {"project": None, "lessons": [], "text": ""}


@pytest.mark.anyio
async def test_context_for_a_prompt_names_the_lessons_it_came_close_to(store: Any, tmp_path: Path) -> None:
    from mcp.client import Client

    from tests.test_hooks import seed

    seed(store, [("We use uv here, never pip (uv add / uv sync)", "correction", str(tmp_path))])
    async with Client(server_in_process()) as client:
        got = await call_ok(client, "context", {"project": str(tmp_path), "prompt": "add the requests library"})
    assert got["lessons"] == [] and got["near_misses"][0]["text"].startswith("We use uv here")


# --------------------------------------------------------------------------- what update_memory says

@pytest.mark.anyio
async def test_update_memory_says_what_it_stored_otherwise_as_remember_does(store: Any) -> None:
    from mcp.client import Client

    long_text = " ".join(f"step {i} of the release checklist" for i in range(400))
    async with Client(server_in_process()) as client:
        memory = await call_ok(client, "remember", {"text": "the deploy note"})
        got = await call_ok(client, "update_memory", {"id": memory["id"], "text": f"deploy with {KEY}"})
        assert got["note"] == "a secret in the text was stored as [secret] (memories are handed to agents)"
        got = await call_ok(client, "update_memory", {"id": memory["id"], "text": long_text})
        assert got["note"] == (f"the text is {len(long_text):,} characters: recall shows the first 1,000, "
                               "and `get_memory` reads it whole"), got
        got = await call_ok(client, "update_memory", {"id": memory["id"], "importance": 0.9})
        assert "note" not in got  # nothing to say: nothing said


def test_update_memory_of_a_memory_with_its_own_detail_says_its_words_were_cut(store: Any) -> None:
    """A failed call's memory keeps its output as the detail: new words past a gist are cut."""
    from remem.engine.memories import remember, update_memory_noting
    from remem.engine.store import MAX_GIST, TRUNCATED

    memory = remember(store, "the upload test failed", kind="error")
    with store.write() as conn:  # as ingest keeps a failed call: its output in the detail
        conn.execute("UPDATE episodes SET detail = 'Traceback: AssertionError' WHERE id = ?", (memory["id"],))
    words = "the upload test fails when the bucket is missing " * 100
    got, note = update_memory_noting(store, memory["id"], text=words)
    lost = len(words.strip()) - (MAX_GIST - len(TRUNCATED))
    assert got["detail"] == "Traceback: AssertionError" and got["gist"].endswith(TRUNCATED)
    assert note is not None and note.startswith(
        f"the text is {len(words.strip()):,} characters, over the {MAX_GIST:,} cap: its last {lost:,} were cut"), note


# --------------------------------------------------------------------------- ids of a memory and a lesson

@pytest.mark.anyio
@pytest.mark.parametrize("tool, args", [
    ("update_memory", {"importance": 0.9}),
    ("delete_memory", {"hard": True}),
    ("promote", {}),
    ("traverse", {}),
])
async def test_a_prefix_of_a_memory_and_a_lesson_is_refused_before_any_tool_acts(
        store: Any, tool: str, args: dict[str, Any]) -> None:
    from mcp.client import Client

    from remem.engine.lessons import add_lesson
    from remem.engine.memories import remember

    memory = remember(store, "a short-term note about the cache", ttl="7d", memory_id="abcd1111aaaa2222")
    lesson = add_lesson(store, "Warm the cache before a deploy", "correction", lesson_id="abcd9999bbbb")
    async with Client(server_in_process()) as client:
        ok, text = await call_tool(client, tool, {"id": "abcd", **args})
    assert not ok and text == (f"ambiguous id 'abcd': matches memory {memory['id']} and lesson "
                               f"{lesson['id']}; give more characters"), text
    row = store.one("SELECT importance, memory_type, archived FROM episodes WHERE id = ?", (memory["id"],))
    assert row == {"importance": 0.5, "memory_type": "short_term", "archived": 0}  # left as it was


# --------------------------------------------------------------------------- secrets in tags

@pytest.mark.anyio
async def test_a_secret_in_a_tag_is_stored_as_secret_and_said(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        memory = await call_ok(client, "remember", {"text": "the staging deploy", "tags": [KEY, "deploy"]})
        assert memory["tags"] == ["[secret]", "deploy"]
        assert memory["note"] == "a secret in a tag was stored as [secret]"
        other = await call_ok(client, "remember", {"text": "the prod deploy"})
        got = await call_ok(client, "update_memory", {"id": other["id"], "tags": [f"token {KEY}"]})
        assert got["tags"] == ["token [secret]"] and got["note"] == "a secret in a tag was stored as [secret]"
    stored = json.dumps(store.rows("SELECT * FROM tags"))
    assert KEY.lower() not in stored and KEY not in stored


# --------------------------------------------------------------------------- what remember answers

@pytest.mark.anyio
async def test_remember_answers_with_the_details_length_and_words_for_where_hits_are_read(store: Any) -> None:
    """It echoed the whole detail back (up to 64,000 characters) and said "recall shows the first
    4,000", where a hit over MCP shows 1,000."""
    from mcp.client import Client

    long_text = " ".join(f"step {i} of the release checklist" for i in range(1000))  # ~32,000
    async with Client(server_in_process()) as client:
        memory = await call_ok(client, "remember", {"text": long_text})
        assert "detail" not in memory and memory["detail_chars"] == len(long_text)
        assert memory["note"] == (f"the text is {len(long_text):,} characters: recall shows the first 1,000, "
                                  "and `get_memory` reads it whole")
        assert _size(memory) < 6_000  # the gist (4,000 characters) and the fields, not the detail again
        assert (await call_ok(client, "get_memory", {"id": memory["id"]}))["detail"] == long_text
        short = await call_ok(client, "remember", {"text": "a short note, no more than a hit shows"})
        assert short["detail_chars"] == 0 and "note" not in short


# --------------------------------------------------------------------------- a home moved away

@pytest.mark.anyio
async def test_a_home_moved_away_under_the_server_is_not_made_again_by_its_log(
        store: Any, home: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The refusal's log line made $REMEM_HOME/logs/ again: moved back, the home was nested in it."""
    from mcp.client import Client

    store.close()
    aside = tmp_path / "aside"
    async with Client(server_in_process()) as client:
        await call_ok(client, "remember", {"text": "before the move"})
        os.rename(home, aside)
        ok, text = await call_tool(client, "remember", {"text": "while the home is gone"})
        assert not ok and "was removed while `remem serve` was running" in text, text
        assert not home.exists()  # nothing made it again
        assert "refused: " in capfd.readouterr().err  # the log line went to stderr instead
        os.rename(aside, home)  # put back: the server goes on with it
        got = await call_ok(client, "search", {"query": "before the move", "mode": "keyword"})
        assert [h["text"] for h in got["hits"]] == ["before the move"]


# --------------------------------------------------------------------------- an expired short-term memory

@pytest.mark.anyio
async def test_an_expired_short_term_memory_is_hidden_with_or_without_a_query(
        store: Any, monkeypatch: pytest.MonkeyPatch, cli: Any) -> None:
    from mcp.client import Client

    from remem.engine.memories import remember

    monkeypatch.setenv("REMEM_NOW", "2025-01-01T00:00:00+00:00")
    remember(store, "the staging host is down for the night", ttl="1h")
    live = remember(store, "the staging host moves next week", ttl="30d")
    monkeypatch.setenv("REMEM_NOW", "2025-01-02T00:00:00+00:00")  # a day on: the first has expired
    async with Client(server_in_process()) as client:
        for query in ("staging host", ""):
            got = await call_ok(client, "search", {"query": query, "memory_type": "short_term"})
            assert [h["id"] for h in got["hits"]] == [live["id"]], (query, got)
    listed = json.loads(cli("list", "--type", "short_term", "--json").stdout)
    assert [m["id"] for m in listed] == [live["id"]]


# --------------------------------------------------------------------------- numbers

@pytest.mark.anyio
async def test_numbers_are_answered_without_float_noise(store: Any) -> None:
    from mcp.client import Client

    from remem.engine.memories import remember

    memory = remember(store, "a note with a noisy importance")
    with store.write() as conn:
        conn.execute("UPDATE episodes SET importance = 0.49999999336525697 WHERE id = ?", (memory["id"],))
    async with Client(server_in_process()) as client:
        got = await call_ok(client, "get_memory", {"id": memory["id"]})
    assert got["importance"] == 0.5


# --------------------------------------------------------------------------- tags, as any edge gives them

@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=120), st.just(KEY), st.builds(lambda t: f"{t} {KEY}", st.text(max_size=20))),
                max_size=40))
def test_stored_tags_are_at_most_the_limit_normalised_and_free_of_secrets(tags: list[str]) -> None:
    from remem.engine.events import MAX_TAGS
    from remem.engine.memories import stored_tags
    from remem.engine.store import MAX_TAG

    try:
        kept, secret = stored_tags(tags)
    except ValueError as exc:
        assert str(exc).startswith(f"at most {MAX_TAGS} tags a memory, not ")
        return
    assert len(kept) <= MAX_TAGS and len(set(kept)) == len(kept)
    assert all(t.strip() and len(t) <= MAX_TAG and t == t.lower() for t in kept)
    assert not any(KEY.lower()[:20] in t for t in kept)
    assert secret == any(KEY in t for t in tags)


# --------------------------------------------------------------------------- adding tags counts those kept

@pytest.mark.anyio
async def test_adding_tags_counts_the_ones_a_memory_has_and_its_own_tags_still_update(store: Any) -> None:
    """Adding 32 tags twice (the browser's add-tags) left 66, and then update_memory with the
    memory's own tags was refused."""
    from mcp.client import Client

    from remem.engine.memories import add_tags, remember

    memory = remember(store, "a note tagged twice", tags=["first", "second"])
    with pytest.raises(ValueError) as refused:
        add_tags(store, memory["id"], [f"more{i}" for i in range(32)])
    assert str(refused.value) == "at most 32 tags a memory, not 34; keep the ones you would search by"
    assert store.tags_of(memory["id"]) == ["first", "second"]  # nothing added by the refused call
    tagged = add_tags(store, memory["id"], [f"more{i}" for i in range(30)] + ["first"])
    assert len(tagged["tags"]) == 32
    async with Client(server_in_process()) as client:
        again = await call_ok(client, "update_memory", {"id": memory["id"], "tags": tagged["tags"]})
    assert sorted(again["tags"]) == sorted(tagged["tags"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.integers(0, 99).map(lambda i: f"t{i}"), min_size=10, max_size=33), min_size=2, max_size=6))
def test_a_memory_never_has_more_tags_than_the_limit_however_they_are_added(store: Any, batches: list[list[str]]) -> None:
    from remem.engine.events import MAX_TAGS
    from remem.engine.memories import add_tags, remember

    memory = remember(store, "a note tagged in batches")  # a new memory each example: one store serves all
    for batch in batches:
        before = store.tags_of(memory["id"])
        try:
            add_tags(store, memory["id"], batch)
        except ValueError as exc:
            assert str(exc).startswith(f"at most {MAX_TAGS} tags a memory, not ")
            assert store.tags_of(memory["id"]) == before
        assert len(store.tags_of(memory["id"])) <= MAX_TAGS


# --------------------------------------------------------------------------- what a ttl may be, told

@pytest.mark.anyio
async def test_the_ttl_range_and_the_flashbulb_note_are_told_where_clients_read(store: Any) -> None:
    """The ttl field said only "30s, 10m, 2h, 7d"; docs/MCP.md named neither the range nor the
    note a flashbulb memory's answer carries."""
    from mcp.client import Client

    docs = (Path(__file__).resolve().parent.parent / "docs" / "MCP.md").read_text(encoding="utf-8")
    async with Client(server_in_process()) as client:
        [tool] = [t for t in (await client.list_tools()).tools if t.name == "remember"]
        ttl = tool.input_schema["properties"]["ttl"]["description"]
        ok, refused = await call_tool(client, "remember", {"text": "a note for a while", "ttl": "3600"})
        memory = await call_ok(client, "remember", {"text": "the outage that lost the orders table",
                                                    "arousal": 0.9, "ttl": "2h"})
    assert "1s to 36500d" in ttl and "M is refused" in ttl
    assert not ok and "3600s" in refused, refused
    assert "from 1s to 36500d" in docs and "the unit is required" in docs and "`M` is not one" in docs
    assert memory["note"] in docs.replace("\n", " "), memory["note"]
