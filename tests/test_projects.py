"""One rule per question, in the engine, used by every edge: which lessons belong to a project
(MCP `lessons`, the remem://lessons resource and `context` agree), which memories lie in a
project folder (SQL and Python agree), recall's default k, and the context preview.

The MCP tests drive the server in-process behind the SDK's own client, through the tools'
public arguments only."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _server() -> Any:
    from remem.server import build_server

    return build_server(tasks=False, warm=False)


async def _ok(client: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, text
    return result.structured_content


async def _error(client: Any, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)


# --------------------------------------------------------------------------- a project's lessons

# Where each lesson was learned, relative to the project /work/shop.
PLACES = {
    "above": "/work",
    "same": "/work/shop",
    "same-slash": "/work/shop/",
    "below": "/work/shop/api",
    "sibling": "/work/shopfront",
    "elsewhere": "/elsewhere",
    "general": None,
}


def _seed_lessons(store: Any) -> dict[str, str]:
    """One active correction per place; returns {place: lesson id}."""
    from remem.engine.lessons import add_lesson

    return {place: add_lesson(store, f"Lesson learned {place}: run the checks first", "correction",
                              cwd=cwd)["id"]
            for place, cwd in PLACES.items()}


@pytest.mark.anyio
async def test_mcp_lessons_and_the_resource_list_exactly_what_context_would_inject(store: Any) -> None:
    ids = _seed_lessons(store)
    by_id = {v: k for k, v in ids.items()}
    from mcp.client import Client

    async with Client(_server()) as client:
        for project in ("/work/shop", "/work/shop/", "shop", "/work/shop/api/v2"):
            listed = {l["id"] for l in (await _ok(client, "lessons", {"project": project}))["lessons"]}
            injected = {l["id"] for l in (await _ok(client, "context", {"project": project}))["lessons"]}
            assert listed == injected, (project, sorted(by_id[i] for i in listed ^ injected))
        listed = {by_id[l["id"]] for l in (await _ok(client, "lessons", {"project": "/work/shop"}))["lessons"]}
        # Priming's rule (docs/HOOKS.md): learned in the folder or a folder above it, or general.
        assert listed == {"above", "same", "same-slash", "general"}
        resource = (await client.read_resource("remem://lessons/shop")).contents[0].text
        shown = {place for place, i in ids.items() if i in resource}
        assert shown == listed
        # A lesson learned below the project is not the project's (context never injects it
        # there); in its own folder both list it.
        deeper = {by_id[l["id"]] for l in (await _ok(client, "lessons", {"project": "/work/shop/api"}))["lessons"]}
        assert "below" in deeper and "sibling" not in deeper


def test_one_lesson_rule_for_priming_and_one_for_recall() -> None:
    from remem.engine.lessons import applies_in, filed_under

    # Priming: the lesson's folder at or above where the agent works.
    assert applies_in("/work", "/work/shop") and applies_in("/work/shop/", "/work/shop")
    assert not applies_in("/work/shop/api", "/work/shop") and not applies_in("/work/shop", "/work/shopfront")
    assert applies_in(None, None) and not applies_in("/work", None)  # unknown cwd: general only
    # Recall's project filter: the lesson's folder at or below the project, general ones pass.
    assert filed_under("/work/shop/api", "/work/shop") and filed_under(None, "/work/shop")
    assert not filed_under("/work", "/work/shop") and not filed_under("/work/shopfront", "/work/shop")


def test_priming_uses_the_same_rule(store: Any) -> None:
    from remem.engine import prime

    ids = _seed_lessons(store)
    by_id = {v: k for k, v in ids.items()}
    got = [by_id[l["id"]] for l in prime.for_project(store, "/work/shop")]
    assert set(got) == {"above", "same", "same-slash", "general"}
    assert got[-1] == "general"  # the project's own first
    assert [by_id[l["id"]] for l in prime.for_project(store, None)] == ["general"]


# --------------------------------------------------------------------------- at or below a folder

PATHS = ["/work/shop", "/work/shop/", "/work/shop/api", "/work/shopfront", "/work/shop0",
         "/work/Shop", "/WORK/SHOP/api", "/work", "/work/sh_p", "/work/sh%p/x", "/elsewhere",
         "/work/shop/é/ü", "shop", "", None]


@pytest.mark.parametrize("folder", ["/work/shop", "/work/shop/", "/work/sh_p", "/work/sh%p", "/", "/work/shop/é"])
def test_sql_and_python_agree_on_what_lies_under_a_folder(folder: str) -> None:
    from remem.engine.projects import is_under, under_sql

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (cwd TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [(p,) for p in PATHS])
    clause, params = under_sql("cwd", folder)
    in_sql = sorted(r[0] for r in conn.execute(f"SELECT cwd FROM t WHERE {clause}", params))
    in_py = sorted(p for p in PATHS if is_under(p, folder))
    assert in_sql == in_py
    if folder.rstrip("/") == "/work/shop":
        assert "/work/shop/api" in in_py and "/work/shopfront" not in in_py and "/work/Shop" not in in_py


def test_resolve_project_takes_a_path_or_a_known_folder_name(store: Any) -> None:
    from remem.engine.lessons import add_lesson
    from remem.engine.projects import resolve_project

    add_lesson(store, "Use make image", "correction", cwd="/home/me/shop")
    assert resolve_project(store, None) is None and resolve_project(store, "  ") is None
    assert resolve_project(store, "/home/me/shop/") == "/home/me/shop"
    assert resolve_project(store, "shop") == "/home/me/shop"
    assert resolve_project(store, "-home-me-shop") == "/home/me/shop"
    assert resolve_project(store, "unknown") == "unknown"


# --------------------------------------------------------------------------- search without a query

def _bulk(store: Any, rows: list[tuple[str, str, str | None, str]]) -> None:
    """(id, kind, cwd, at) rows straight into episodes, fast."""
    with store.write() as conn:
        conn.executemany(
            "INSERT INTO episodes (id, kind, title, gist, cwd, at, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(i, kind, f"memory {i}", f"memory {i}", cwd, at, at) for i, kind, cwd, at in rows])


@pytest.mark.anyio
async def test_search_without_a_query_filters_project_and_kinds_past_ten_thousand(store: Any) -> None:
    # Three old memories that match, under 10,050 newer ones that do not.
    wanted = [("want-a", "error", "/work/shop", "2020-01-01T00:00:01.000000+00:00"),
              ("want-b", "correction", "/work/shop/api", "2020-01-01T00:00:02.000000+00:00"),
              ("want-c", "error", "/work/shop", "2020-01-01T00:00:03.000000+00:00")]
    decoys = [("not-kind", "note", "/work/shop", "2020-01-01T00:00:04.000000+00:00"),
              ("not-project", "error", "/work/shopfront", "2020-01-01T00:00:05.000000+00:00"),
              ("not-case", "error", "/work/Shop", "2020-01-01T00:00:06.000000+00:00")]
    others = [(f"other-{n:05d}", "note" if n % 2 else "session", "/elsewhere",
               f"2024-01-01T00:00:00.{n:06d}+00:00") for n in range(10_050)]
    _bulk(store, wanted + decoys + others)
    from mcp.client import Client

    async with Client(_server()) as client:
        got = await _ok(client, "search", {"project": "/work/shop", "kinds": ["error", "correction"], "k": 10})
        assert [h["id"] for h in got["hits"]] == ["want-c", "want-b", "want-a"]  # newest first
        got = await _ok(client, "search", {"kinds": ["error", "correction"], "k": 10})
        assert [h["id"] for h in got["hits"]] == ["not-case", "not-project", "want-c", "want-b", "want-a"]
        got = await _ok(client, "search", {"project": "shop", "k": 2})
        assert [h["id"] for h in got["hits"]] == ["not-kind", "want-c"]


def test_list_memories_takes_kinds_and_a_project(store: Any) -> None:
    from remem.engine import lifecycle

    _bulk(store, [("a", "error", "/p", "2021-01-01T00:00:00.000000+00:00"),
                  ("b", "note", "/p/q", "2021-01-02T00:00:00.000000+00:00"),
                  ("c", "correction", "/pq", "2021-01-03T00:00:00.000000+00:00")])
    def ids(**kw: Any) -> list[str]:
        return [r["id"] for r in lifecycle.list_memories(store, field="at", **kw)]

    assert ids(project="/p") == ["b", "a"]
    assert ids(kinds=["error", "correction"]) == ["c", "a"]
    assert ids(kinds=["note"], project="/p/") == ["b"]
    with pytest.raises(ValueError, match="unknown kind"):
        lifecycle.list_memories(store, kinds=["nope"])


# --------------------------------------------------------------------------- recall's default k

def test_default_k_is_checked_in_one_place() -> None:
    from remem.engine.recall import default_k

    assert default_k({"recall": {"k": 7}}) == 7
    for bad in (0, -1, True, "5", 2.5):
        with pytest.raises(ValueError, match="config recall.k must be a whole number"):
            default_k({"recall": {"k": bad}})


@pytest.mark.anyio
async def test_the_cli_and_the_server_take_k_from_that_one_place(store: Any, cli: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client import Client

    from remem.engine import recall as recall_mod

    def refuse(cfg: Any = None) -> int:
        raise ValueError("the one default_k said no")

    monkeypatch.setattr(recall_mod, "default_k", refuse)
    result = cli("recall", "anything")
    assert result.exit_code == 1 and "the one default_k said no" in result.output
    async with Client(_server()) as client:
        assert "the one default_k said no" in await _error(client, "recall", {"query": "anything"})
        monkeypatch.setattr(recall_mod, "default_k", lambda cfg=None: 80)
        asked: list[int] = []
        real = recall_mod.recall
        monkeypatch.setattr(recall_mod, "recall", lambda s, q, k, **kw: asked.append(k) or real(s, q, k, **kw))
        await _ok(client, "remember", {"text": "the staging deploy uses profile number 3"})
        assert len((await _ok(client, "recall", {"query": "staging deploy profile"}))["hits"]) == 1
        assert asked == [50]  # the tool's own cap on the configured k


# --------------------------------------------------------------------------- the context preview

@pytest.mark.anyio
async def test_context_preview_is_the_same_for_the_cli_the_server_and_the_engine(store: Any, cli: Any) -> None:
    from remem.engine import prime
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.lessons import add_lesson

    emb = get_embedder()
    for text, cwd in (("Build the docker image with make image, not docker build", "/work/shop"),
                      ("Run pytest -n 2 before committing", None),
                      ("Deploy the billing service with the blue profile", "/work/billing")):
        add_lesson(store, text, "correction", cwd=cwd, space=emb.space, embedding=to_blob(emb.encode([text])[0]))
    from mcp.client import Client

    async with Client(_server()) as client:
        for prompt in ("", "build the docker image"):
            mine = prime.preview(store, "/work/shop", prompt, agent="mcp")
            served = await _ok(client, "context", {"project": "/work/shop", "prompt": prompt})
            assert served["lessons"] == mine["lessons"] and served["text"] == mine["text"]
            args = ["context", "--project", "/work/shop", "--json"] + (["--prompt", prompt] if prompt else [])
            printed = json.loads(cli(*args).stdout)
            assert printed["lessons"] == mine["lessons"] and printed["text"] == mine["text"]
        assert "make image" in mine["text"] and "billing" not in mine["text"]
    assert store.rows("SELECT * FROM primes") == []  # a preview records nothing
