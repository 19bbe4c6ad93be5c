"""Review findings, batch 3: logic the edges held moves into the engine, one helper where there
were several, and errors that were swallowed are let through."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from remem.engine.store import Store
from tests.conftest import run_remem

# --------------------------------------------------------------------------- 1: share accept/reject


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def demo_with_folder(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The TUI's demo store (candidate L3 from an untrusted peer), with a sync folder set."""
    from remem import config
    from tests.tui.conftest import NOW, build_demo_store

    monkeypatch.setenv("REMEM_NOW", NOW)
    home.mkdir(parents=True, exist_ok=True)
    with Store() as store:
        build_demo_store(store)
    folder = tmp_path / "sync"
    folder.mkdir()
    config.set_value("share.folder", str(folder))
    return folder


def _confirmation(folder: Path, lesson_id: str) -> Path:
    from remem.engine.lessons import get_lesson
    from remem.engine.share_sign import identity

    with Store() as store:
        text_hash = get_lesson(store, lesson_id)["hash"]
    return folder / identity().origin / "confirm" / f"{text_hash}.json"


@pytest.mark.anyio
async def test_accepting_in_the_tui_writes_the_confirmation_at_once(demo_with_folder):
    from tests.tui.conftest import new_app

    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        app.query_one("#candidate-table").focus()
        await pilot.press("a")
        await pilot.pause()
    confirm = _confirmation(demo_with_folder, "L3")
    assert confirm.is_file()  # not only at the next sync
    assert json.loads(confirm.read_text())["type"] == "confirm"


def test_rejecting_as_the_tui_does_withdraws_the_confirmation_at_once(demo_with_folder):
    from remem.engine import share

    with Store() as store:  # the calls the Shared tab makes: no folder passed
        share.accept(store, "L3")
        confirm = _confirmation(demo_with_folder, "L3")
        assert confirm.is_file()
        assert share.reject(store, "L3")["status"] == "vetoed"
    assert not confirm.exists()


def test_accept_uses_the_configured_folder_only_when_it_is_reachable(demo_with_folder):
    from remem.engine import share

    assert share.reachable_folder() == demo_with_folder.resolve()
    assert share.reachable_folder(demo_with_folder) == demo_with_folder.resolve()
    with pytest.raises(share.ShareError):  # a folder named that is not one is said
        share.reachable_folder(demo_with_folder / "nope")
    demo_with_folder.rmdir()  # the configured one gone (an unmounted drive): wait for a sync
    assert share.reachable_folder() is None
    with Store() as store:
        assert share.accept(store, "L3")["status"] == "active"


def test_the_cli_helper_for_the_folder_is_gone():
    import remem.commands.share as cli_share

    assert not hasattr(cli_share, "_folder_if_set")


# --------------------------------------------------------------------------- 2: one helper each

def test_the_hook_the_proxy_and_the_store_clean_text_alike():
    from remem.engine import proxying as px
    from remem.engine.store import clean_text
    from remem.hooks import adapters

    raw = "caf\udce9 latte"  # an escaped byte: the store repairs it to U+FFFD
    assert clean_text(raw) == "caf\ufffd latte"
    assert adapters.read("claude-code", "prompt", {"prompt": raw}).text == clean_text(raw)
    body = {"messages": [{"role": "user", "content": raw}]}
    events = px.exchange_events(body, px.CHAT, "done", "2026-01-01T00:00:00+00:00")
    assert events[0]["text"] == clean_text(raw)
    assert not hasattr(adapters, "_clean") and not hasattr(px, "_storable")


def test_a_tool_input_as_a_json_string_is_read_as_its_json():
    from remem.hooks import adapters

    as_text = adapters.tool_text("Bash", json.dumps({"command": "pip install x", "timeout": 5}))
    assert as_text == adapters.tool_text("Bash", {"command": "pip install x", "timeout": 5}) == "Bash pip install x"
    assert adapters.tool_text("Bash", "not json {") == "Bash not json {"
    assert not hasattr(adapters, "_input")


def test_content_text_is_one_function_with_the_part_types_as_a_parameter():
    from remem.engine import proxying as px
    from remem.engine import text, transcripts

    content = [{"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}, {"text": "c"},
               {"type": "image"}, "d"]
    assert transcripts.content_text is text.content_text
    assert text.content_text(content) == "a\nd"
    assert text.content_text(content, part_types=None) == "a\nb\nc\nd"
    assert px.messages_of({"messages": [{"role": "user", "content": content}]}, px.CHAT) == [("user", "a\nb\nc\nd")]
    assert not hasattr(px, "_text_of")


def test_the_project_name_of_a_folder_is_one_engine_function():
    from remem.engine import ingest
    from remem.engine.session import Session, Turn
    from remem.engine.projects import project_name

    assert project_name("/home/dev/shop/") == "shop" and project_name(None) == "" and project_name("/") == ""
    session = Session(id="s1", source="claude-code", cwd="/home/dev/shop/",
                      turns=[Turn(role="user", text="run the tests")])
    assert ingest.session_gist(session, {})[0] == "shop: run the tests"
    import remem.tui.screens.episodes as tui_episodes

    assert not hasattr(tui_episodes, "project_name") and not hasattr(ingest, "_project")


# --------------------------------------------------------------------------- 3: episodes in the engine

def _episodes(store: Store) -> None:
    store.put_episodes([
        {"id": "aaaa1111", "kind": "note", "title": "one", "gist": "one", "at": "2026-01-01T00:00:00+00:00",
         "tags": ["x"]},
        {"id": "bbbb2222", "kind": "note", "title": "two", "gist": "two", "at": "2026-01-02T00:00:00+00:00"},
    ])


def test_add_tags_keeps_the_ones_there_and_normalises(store):
    from remem.engine import memories
    from remem.errors import NotFound

    _episodes(store)
    done = memories.add_tags(store, "aaaa1111", [" Python", "tooling ", "", "x"])
    assert done["tags"] == ["python", "tooling", "x"] and "embedding" not in done
    assert memories.add_tags(store, "aaaa", ["more"])["tags"] == ["more", "python", "tooling", "x"]  # a prefix
    assert memories.add_tags(store, "bbbb2222", [])["tags"] == []
    with pytest.raises(NotFound):
        memories.add_tags(store, "nowhere-at-all", ["t"])


def test_episodes_by_ids_keeps_the_order_given_and_leaves_out_the_missing(store):
    from remem.engine import memories

    _episodes(store)
    rows = memories.episodes_by_ids(store, ["bbbb2222", "gone", "aaaa1111", "bbbb2222"])
    assert [r["id"] for r in rows] == ["bbbb2222", "aaaa1111"]
    assert rows[1]["tags"] == ["x"] and rows[0]["tags"] == []
    assert {"kind", "title", "cwd", "at", "strength", "recalls"} <= set(rows[0]) and "embedding" not in rows[0]
    assert memories.episodes_by_ids(store, []) == []


@pytest.mark.anyio
async def test_the_episode_detail_is_empty_for_a_deleted_row_and_other_errors_are_not_hidden(demo_with_folder):
    from remem.errors import NotFound
    from tests.tui.conftest import new_app

    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        pane = app.query_one("#episodes-pane")
        shown = app.query_one("#episode-detail-text")
        real = app.store.episode

        def gone(memory_id: str) -> Any:
            raise NotFound(f"no memory with id {memory_id!r}")

        app.store.episode = gone
        pane.show_detail("e01")
        assert str(shown.render()).strip() == ""

        def broken(memory_id: str) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        app.store.episode = broken
        with pytest.raises(sqlite3.OperationalError):
            pane.show_detail("e01")
        app.store.episode = real


@pytest.mark.anyio
async def test_search_hits_and_tags_in_the_tui_go_through_the_engine(demo_with_folder, monkeypatch):
    from remem.engine import memories
    from tests.tui.conftest import new_app

    calls: list[str] = []

    def counted(name: str) -> Any:
        real = getattr(memories, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return real(*args, **kwargs)
        return call

    for name in ("episodes_by_ids", "add_tags"):
        monkeypatch.setattr(memories, name, counted(name))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#episode-table")
        table.move_cursor(row=table.get_row_index("e06"))
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        app.screen.query_one("#answer").value = "Node, frontend"
        await pilot.press("enter")
        await pilot.pause()
        search = app.query_one("#episode-search")
        search.value = "pip install"
        search.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one("#episodes-pane").total > 0
    assert "add_tags" in calls and "episodes_by_ids" in calls
    with Store() as store:
        assert store.tags_of("e06") == ["frontend", "node"]


# --------------------------------------------------------------------------- 4: a malformed config is said

def _malformed_config(home: Path) -> None:
    from remem import paths

    home.mkdir(parents=True, exist_ok=True)
    paths.config_path().write_text("[llm\nurl = 'x'\n", encoding="utf-8")


def test_a_malformed_config_is_not_no_model(home):
    from remem.engine import llm
    from remem.errors import ConfigError

    assert llm.enabled({"llm": {"url": " "}}) is False
    assert llm.enabled({"llm": {"url": "http://127.0.0.1:1"}}) is True
    _malformed_config(home)
    with pytest.raises(ConfigError, match="not valid TOML"):
        llm.enabled()


def test_experiment_with_a_malformed_config_reports_the_config_error(home, tmp_path):
    _malformed_config(home)
    res = run_remem("experiment", "--pairs", str(tmp_path / "pairs.jsonl"))
    assert res.returncode != 0
    assert "not valid TOML" in res.stderr and "no model configured" not in res.stderr, res.stderr


# --------------------------------------------------------------------------- 5, 6: dead code, plain code

def test_disconnect_is_gone():
    from remem.engine import graph

    assert not hasattr(graph, "disconnect")


@pytest.mark.parametrize("extra, title", [
    ({"title": "T", "name": "N"}, "T"), ({"name": "N"}, "N"), ({"title": 3, "name": "N"}, "N"), ({}, None),
])
def test_a_chat_title_comes_from_title_then_name(extra, title):
    from remem.engine import chats

    conv = {"messages": [{"role": "user", "content": "hello there"}], **extra}
    meta = chats.conversation_to_session(conv, path="x").meta
    assert meta.get("title") == title and ("title" in meta) == (title is not None)


def test_the_last_offer_of_a_reply_is_the_one_found():
    from remem.engine.detect_corrections import offer_in

    reply = ("Should I run the tests? I looked at it. Done with the parser.\n"
             "Want me to also update the docs? Thanks")
    assert offer_in(reply) == "Want me to also update the docs?"
    assert offer_in("Nothing to offer here.") is None and offer_in("") is None


# --------------------------------------------------------------------------- 7: ingest's defaults in the engine

def test_default_places_and_the_source_check_are_the_engines(home):
    from remem import paths
    from remem.engine import ingest

    claude, codex, inbox = paths.claude_projects_dir(), paths.codex_home(), paths.inbox_dir()
    assert ingest.default_places() == [claude, codex, inbox]
    assert ingest.default_places("claude-code") == [claude]
    assert ingest.default_places("codex") == [codex]
    assert ingest.default_places("events") == [inbox]
    assert ingest.default_places("chats") == []
    with pytest.raises(ValueError, match="unknown source 'slack'"):
        ingest.check_source("slack")
    ingest.check_source(None)
    import remem.commands.ingest as cli_ingest

    assert not hasattr(cli_ingest, "_searched") and not hasattr(cli_ingest, "_fold")


def test_an_events_file_is_added_to_a_summary_given(store, tmp_path):
    from remem.engine import ingest

    events = tmp_path / "e.jsonl"
    events.write_text(json.dumps({"v": 1, "id": "n1", "at": "2026-01-01T00:00:00+00:00", "kind": "episode",
                                  "type": "note", "text": "the staging db is read-only"}) + "\n",
                      encoding="utf-8")
    summary = ingest.ingest_paths(store, [], source="events")
    files = summary["files"]
    same = ingest.ingest_events(store, events, into=summary)
    assert same is summary and summary["files"] == files + 1
    alone = ingest.ingest_events(store, events)
    assert alone is not summary and set(alone) == set(summary)
