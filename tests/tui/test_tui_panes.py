"""What a pane shows when what it reads is missing or broken: the Overview without a readable
morning report, and a lesson's or a memory's detail for a row deleted meanwhile (empty) or a
database error (raised, never hidden as an empty pane)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from remem import paths
from remem.engine import browse
from tests.tui.conftest import new_app, screen_text

pytestmark = pytest.mark.anyio


def _messages(app: Any) -> str:
    return " | ".join(str(n.message) for n in app._notifications)


# --------------------------------------------------------------------------- the Overview

async def test_an_unreadable_morning_report_does_not_break_the_overview(demo_home):
    paths.morning_path().unlink()
    paths.morning_path().mkdir()
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "No morning report yet" in text and "episodes" in text
        assert "overview:" not in _messages(app)


# --------------------------------------------------------------------------- a lesson's detail

async def test_the_lesson_pane_is_empty_for_a_lesson_gone_and_says_a_database_error(demo_home, monkeypatch):
    from remem.errors import NotFound

    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        pane = app.query_one("#lessons-pane")

        def gone(store: Any, lesson_id: str, **kw: Any) -> Any:
            raise NotFound(f"no lesson with id {lesson_id!r}")

        monkeypatch.setattr(browse, "lesson_detail", gone)
        pane.show_detail("L1")
        assert str(app.query_one("#lesson-detail-text").render()) == ""

        def broken(store: Any, lesson_id: str, **kw: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(browse, "lesson_detail", broken)
        with pytest.raises(sqlite3.OperationalError):
            pane.show_detail("L1")


# --------------------------------------------------------------------------- a memory's detail

async def test_the_episode_detail_is_empty_for_a_deleted_row_and_other_errors_are_not_hidden(demo_home):
    from remem.errors import NotFound

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
