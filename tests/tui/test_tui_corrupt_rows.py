"""A corrupt row (a number column holding text, a time that is no time) is shown with "?" where
its value cannot be, and a read that fails says so in one line: the app never stops on it,
and the other rows stay listed. `remem tui` exits non-zero when the app did stop on an error."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from remem import paths
from tests.tui.conftest import new_app, settle

ERROR = "error"


def _corrupt(*statements: str) -> None:
    """Write what no remem code writes, straight into the database: a value of the wrong type
    in a column SQLite does not check."""
    db = sqlite3.connect(paths.db_path())
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def _errors(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications if n.severity == ERROR]


def _cell(app: Any, table_id: str, row: str, column: str) -> str:
    return app.query_one(table_id).get_cell(row, column).plain


@pytest.mark.anyio
async def test_corrupt_episodes_show_a_question_mark_and_a_failed_search_says_one_line(demo_home, monkeypatch):
    _corrupt("UPDATE episodes SET importance = 'x' WHERE id = 'e01'",
             "UPDATE episodes SET strength = 'abc' WHERE id = 'e02'",
             "UPDATE episodes SET at = 'not a date' WHERE id = 'e03'")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: table.row_count == 10)
        assert app.is_running and table.row_count == 10  # one bad row hides none of the others
        assert _cell(app, "#episode-table", "e02", "str") == "?"
        assert _cell(app, "#episode-table", "e01", "str") == "1.00"
        # The cursor down over every row and back: each detail is drawn; then on e01's.
        await pilot.press(*["down"] * table.row_count, *["up"] * table.row_count)
        table.move_cursor(row=table.get_row_index("e01"))
        await pilot.pause()
        detail = str(app.query_one("#episode-detail-text").render())
        assert "e01" in detail and "importance ?" in detail
        assert _errors(app) == []

        await pilot.press("slash", *"uv", "enter")
        await settle(pilot, lambda: "results for" in str(app.query_one("#episode-status").render()))
        assert app.is_running and _errors(app) == []  # recall reads a damaged row as old and weak
        assert table.row_count >= 1

        # A search whose read fails (here: the disk) says so in one line naming the tab, and
        # the page shown stays listed.
        from remem.engine import recall

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        await pilot.press("escape")
        await settle(pilot, lambda: table.row_count == 10)
        monkeypatch.setattr(recall, "recall", broken)
        await pilot.press("slash", *"uv", "enter")
        await settle(pilot, lambda: _errors(app))
        assert app.is_running
        said = _errors(app)
        assert len(said) == 1 and said[0].startswith("episodes: ") and "\n" not in said[0], said
        assert table.row_count == 10
        await pilot.press("s")  # the pages again, sorted: the failed search is not kept
        await pilot.pause()
        assert app.is_running and table.row_count == 10 and len(_errors(app)) == 1


@pytest.mark.anyio
async def test_a_corrupt_lesson_strength_leaves_the_lessons_listed(demo_home):
    _corrupt("UPDATE lessons SET strength = 'zz' WHERE id = 'L1'")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        table = app.query_one("#lesson-table")
        await settle(pilot, lambda: table.row_count == 3)
        assert app.is_running and table.row_count == 3
        assert _cell(app, "#lesson-table", "L1", "str") == "?"
        assert _cell(app, "#lesson-table", "L2", "str") == "1.20"
        assert _errors(app) == []


def test_remem_tui_exits_non_zero_when_the_app_stopped_on_an_error(demo_home, monkeypatch):
    """Textual prints the traceback of an error that stops the app and sets its return code;
    run() returned as if all went well, and `remem tui` exited 0."""
    from textual.app import App

    from remem.tui import run
    from remem.tui.app import RememApp

    def broken_help(self: RememApp) -> None:
        raise RuntimeError("a bug in a key's action")

    async def press_help(pilot: Any) -> None:
        await pilot.press("question_mark")

    monkeypatch.setattr(RememApp, "action_help", broken_help)
    # The real app, headless (the test has no terminal), its keys pressed by the autopilot.
    monkeypatch.setattr(RememApp, "run", lambda self: App.run(self, headless=True, auto_pilot=press_help))
    with pytest.raises(SystemExit) as stopped:
        run()
    assert stopped.value.code == 1


@pytest.mark.anyio
async def test_i_on_a_damaged_importance_asks_for_a_number_instead_of_stopping_the_app(demo_home):
    """`i` started its dialog with the stored value as a number: one that is text ended the app
    with "Unknown format code 'f' for object of type 'str'"."""
    from remem.engine.store import Store

    _corrupt("UPDATE episodes SET importance = 'high' WHERE id = 'e01'")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: "e01" in table.rows)
        table.move_cursor(row=table.get_row_index("e01"))
        await pilot.pause()
        await pilot.press("i")
        await pilot.pause()
        assert app.is_running and type(app.screen).__name__ == "AskValue"
        answer = app.screen.query_one("#answer")
        assert answer.value == ""  # never the damaged text, nor "?", to be saved as it stands
        detail = " ".join(str(app.screen.query_one("#detail").render()).split())
        assert "no number ('high')" in detail and "from 0 to 1" in detail
        answer.value = "0.7"
        await pilot.press("enter")
        from tests.tui.conftest import acted

        await acted(pilot)
        assert app.is_running and _errors(app) == []
    with Store() as store:
        assert store.scalar("SELECT importance FROM episodes WHERE id = 'e01'") == 0.7
