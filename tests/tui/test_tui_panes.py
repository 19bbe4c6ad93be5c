"""What a pane shows when what it reads is missing or broken: the Overview without a readable
morning report, and a lesson's or a memory's detail for a row deleted meanwhile (empty) or a
database error (raised, never hidden as an empty pane)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from remem import paths
from remem.engine import browse
from tests.tui.conftest import new_app, screen_text, slept

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


# --------------------------------------------------------------------------- Sleep

async def test_the_sleep_log_wraps_a_long_line_to_its_own_width(demo_home):
    """The log laid lines out at least 78 columns wide, wider than its half of the pane: the
    middle of a long line was out of sight."""
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        log = app.query_one("#sleep-log")
        assert log.scrollable_content_region.width < 78
        app.query_one("#sleep-pane").say("render: " + " ".join(f"word{i:02d}" for i in range(30)) + " END")
        await pilot.pause()
        assert log.virtual_size.width <= log.scrollable_content_region.width
        shown = screen_text(app)
        assert "word00" in shown and "word15" in shown and "END" in shown


def _passes(app: Any) -> dict[str, tuple[float, str]]:
    from remem.engine.sleep import PASSES

    return {name: (app.query_one(f"#bar-{name}").progress, str(app.query_one(f"#count-{name}").render()))
            for name in PASSES}


async def test_a_sleep_run_starts_with_every_bar_and_count_empty(demo_home):
    """A run of one pass after a run of every pass left the others' full bars and counts on
    screen, as if this run had gone through them."""
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4", "r")
        await slept(pilot)
        await pilot.pause()
        after_all = _passes(app)
        assert after_all["expire"][1] and after_all["render"][0] > 0
        app.query_one("#sleep-pass").value = "verify"
        await pilot.pause()
        await pilot.press("r")
        await slept(pilot)
        await pilot.pause()
        assert app.query_one("#sleep-pane").log_lines[-1] == "sleep finished"
        shown = _passes(app)
        assert shown.pop("verify")[1]
        assert set(shown.values()) == {(0, "")}, shown


# --------------------------------------------------------------------------- Episodes: archived

async def test_with_archived_shows_archived_memories_beside_the_live_ones_browsing_and_searching(demo_home):
    """The checkbox meant "only archived" on the pages and "archived too" in a search."""
    from remem.engine import lifecycle
    from remem.engine.store import Store

    with Store() as store:
        lifecycle.archive(store, "e05")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        pane = app.query_one("#episodes-pane")
        table = app.query_one("#episode-table")

        def listed() -> set[str]:
            return {str(key.value) for key in table.rows}

        assert "e05" not in listed() and "e08" in listed()
        assert str(app.query_one("#episode-archived").label) == "with archived"
        app.query_one("#episode-archived").value = True
        await pilot.pause()
        assert {"e05", "e08"} <= listed() and pane.total == 10
        assert str(table.get_row("e05")[1]).startswith("(archived) turns out the staging database")
        await pilot.press("slash", *"staging database read-only", "enter")
        await pilot.pause()
        assert "e05" in listed() and len(listed()) > 1  # archived ones too, beside the live ones
        app.query_one("#episode-archived").value = False
        await pilot.pause()
        assert "e05" not in listed() and listed()


# --------------------------------------------------------------------------- tables laid out at once

def _widths(table: Any) -> dict[str, int]:
    """Each column's width as it is drawn now, padding left out."""
    return {str(c.label): c.get_render_width(table) - 2 * table.cell_padding for c in table.ordered_columns}


async def test_the_tables_are_laid_out_when_filled_not_when_next_idle(demo_home):
    # A modal opened just after a tab shows (3, then e at once) sits over that tab as it is
    # drawn then, and the screen under a modal is not drawn again: columns measured only when
    # the table is next idle were as narrow as their headers ("cor…").
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        for pane_id, tables in (("#lessons-pane", {"#lesson-table": "kind"}),
                                ("#sleep-pane", {"#sleep-history": "what changed"}),
                                ("#shared-pane", {"#candidate-table": "lesson", "#peer-table": "origin"})):
            app.query_one(pane_id).reload()  # no await after it: the tables have had no idle since
            for table_id, column in tables.items():
                table = app.query_one(table_id)
                widths = _widths(table)
                assert table.row_count
                for key in table.rows:
                    for label, value in zip(widths, table.get_row(key)):
                        assert len(str(value)) <= widths[label], (table_id, label, str(value))
                assert widths[column] > len(column)  # its cells', not its header's


async def test_a_row_redrawn_wider_than_its_column_lays_the_page_out_again(demo_home):
    from remem.engine.lessons import set_status
    from remem.engine.store import Store
    from tests.tui.conftest import acted, on_lesson

    with Store() as store:  # a received lesson rejected in the Shared tab: a restore sends it back there
        set_status(store, "L3", "vetoed")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L3")
        table = app.query_one("#lesson-table")
        assert _widths(table)["status"] == len("vetoed")
        await pilot.press("v")
        await acted(pilot)
        assert str(table.get_cell("L3", "status")) == "candidate"
        assert _widths(table)["status"] == len("candidate")  # drawn whole, not "candi…"
