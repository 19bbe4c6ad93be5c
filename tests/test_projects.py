"""What belongs to a project, decided once in the engine and used by every edge: the lessons of a
project (priming, MCP `lessons`, the remem://lessons resource and `context` agree), the memories
at or below a project folder (SQL and Python agree, search and list filter by it), a project
named by its path or by its folder's name.

The MCP tests drive the server in-process behind the SDK's own client, through the tools'
public arguments only."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from tests.conftest import call_ok, server_in_process


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


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

    async with Client(server_in_process()) as client:
        for project in ("/work/shop", "/work/shop/", "shop", "/work/shop/api/v2"):
            listed = {l["id"] for l in (await call_ok(client, "lessons", {"project": project}))["lessons"]}
            injected = {l["id"] for l in (await call_ok(client, "context", {"project": project}))["lessons"]}
            assert listed == injected, (project, sorted(by_id[i] for i in listed ^ injected))
        listed = {by_id[l["id"]] for l in (await call_ok(client, "lessons", {"project": "/work/shop"}))["lessons"]}
        # Priming's rule (docs/HOOKS.md): learned in the folder or a folder above it, or general.
        assert listed == {"above", "same", "same-slash", "general"}
        resource = (await client.read_resource("remem://lessons/shop")).contents[0].text
        shown = {place for place, i in ids.items() if i in resource}
        assert shown == listed
        # A lesson learned below the project is not the project's (context never injects it
        # there); in its own folder both list it.
        deeper = {by_id[l["id"]] for l in (await call_ok(client, "lessons", {"project": "/work/shop/api"}))["lessons"]}
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
    with pytest.raises(ValueError, match="no project named 'unknown'"):
        resolve_project(store, "unknown")  # refused, never stored as a folder nothing matches


def test_the_project_name_of_a_folder_is_one_engine_function():
    from remem.engine import session_episodes
    from remem.engine.session import Session, Turn
    from remem.engine.projects import project_name

    assert project_name("/home/dev/shop/") == "shop" and project_name(None) == "" and project_name("/") == ""
    session = Session(id="s1", source="claude-code", cwd="/home/dev/shop/",
                      turns=[Turn(role="user", text="run the tests")])
    assert session_episodes.session_gist(session, {})[0] == "shop: run the tests"
    import remem.tui.screens.episodes as tui_episodes

    assert not hasattr(tui_episodes, "project_name") and not hasattr(session_episodes, "_project")


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

    async with Client(server_in_process()) as client:
        got = await call_ok(client, "search", {"project": "/work/shop", "kinds": ["error", "correction"], "k": 10})
        assert [h["id"] for h in got["hits"]] == ["want-c", "want-b", "want-a"]  # newest first
        got = await call_ok(client, "search", {"kinds": ["error", "correction"], "k": 10})
        assert [h["id"] for h in got["hits"]] == ["not-case", "not-project", "want-c", "want-b", "want-a"]
        got = await call_ok(client, "search", {"project": "shop", "k": 2})
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



# --------------------------------------------------------------------------- one spelling of a folder

def test_a_lesson_whose_folder_ends_in_a_slash_is_rendered_into_its_project(home: Any) -> None:
    """A chat export (or an older memory) may name its folder "/work/beta/": Claude Code's
    folder for it is the one of "/work/beta", where render must put the lesson."""
    from remem import paths
    from remem.engine.lessons import add_lesson
    from remem.engine.store import Store
    from tests.conftest import run_remem

    memory = paths.claude_projects_dir() / "-work-beta" / "memory"
    memory.parent.mkdir(parents=True)
    with Store() as store:
        lesson = add_lesson(store, "In beta, never commit the generated stubs.", "correction", cwd="/work/beta/")
    res = run_remem("sleep", "--pass", "render", "--json")
    assert res.returncode == 0, res.stderr
    assert res.json()["passes"]["render"]["no_project_folder"] == 0
    assert any(lesson["id"] in f.name for f in memory.iterdir())
    assert paths.project_folder_name("/") == "-" and paths.project_folder_name("") == ""


def _before_normal_folders() -> int:
    """The schema an older release left: every migration before the folders' one spelling."""
    from remem.engine.schema import MIGRATIONS

    return [fn.__name__ for fn in MIGRATIONS].index("_m008_normal_folders")


# As an older release stored them (an event's cwd as written) -> as they are stored now.
SPELLINGS = {"/work/beta/": "/work/beta", "/work/./beta//": "/work/beta", "/work/x/../gamma": "/work/gamma",
             "/work/gamma": "/work/gamma", "/": "/", "//": "/", "": "", None: None}


def test_an_older_memory_stores_its_folders_in_one_spelling_once_opened(home: Any) -> None:
    from remem.engine.lessons import add_lesson
    from remem.engine.store import Store
    from tests.conftest import run_remem

    with Store(migrate_upto=_before_normal_folders()) as old:
        old.put_episodes([{"id": f"e{n}", "kind": "note", "title": f"note {n}", "gist": "the db resets",
                           "cwd": cwd} for n, cwd in enumerate(SPELLINGS)])
        made = {add_lesson(old, f"Lesson {n}: run the checks first.", "correction", cwd=cwd)["id"]: cwd
                for n, cwd in enumerate(SPELLINGS)}
    res = run_remem("lessons", "list", "--status", "all", "--json")  # the first open upgrades it
    assert res.returncode == 0, res.stderr
    assert {l["id"]: l["cwd"] for l in res.json()} == {i: SPELLINGS[cwd] for i, cwd in made.items()}
    with Store() as store:
        episodes = {r["id"]: r["cwd"] for r in store.rows("SELECT id, cwd FROM episodes")}
    assert episodes == {f"e{n}": want for n, want in enumerate(SPELLINGS.values())}


def test_every_source_stores_a_folder_in_one_spelling(store):
    # Chat exports and imports name the folder as they like; the store keeps one spelling.
    store.put_episodes([{"id": "c1", "kind": "note", "title": "t", "gist": "g", "cwd": "/srv/shop/"},
                        {"id": "c2", "kind": "note", "title": "t", "gist": "g", "cwd": "/srv/shop/./api/.."}])
    assert {r["cwd"] for r in store.rows("SELECT cwd FROM episodes")} == {"/srv/shop"}
