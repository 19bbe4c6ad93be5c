"""Below the documented 80x24, at 60x20: the forget and connect dialogs were wider than the
screen (their right edge cut, the id input with it), the Overview's morning report got no row
at all, and the Sleep tab's last passes (connect, render) were off the screen. Now a dialog is
never wider than the screen, the Overview scrolls to its report, and every pass is in sight."""

from __future__ import annotations

import re
from typing import Any

import pytest

from remem.engine.sleep import PASSES
from tests.tui.conftest import new_app, screen_text, settle

pytestmark = pytest.mark.anyio

SIZE = (60, 20)


def _inside(app: Any, selector: str) -> bool:
    region = app.screen.query_one(selector).region
    return region.x >= 0 and region.right <= SIZE[0] and region.bottom <= SIZE[1] and region.width > 0


@pytest.mark.parametrize(("key", "parts"), [("f", ("#soft", "#hard", "#cancel")),
                                            ("c", ("#target", "#type", "#ok", "#cancel"))])
async def test_the_forget_and_connect_dialogs_fit_at_60x20(demo_home, key, parts):
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        table = app.query_one("#episode-table")
        await settle(pilot, lambda: table.row_count == 10)
        await pilot.press(key)
        await pilot.pause()
        assert _inside(app, "#dialog"), app.screen.query_one("#dialog").region
        for part in parts:
            assert _inside(app, part), (part, app.screen.query_one(part).region)
        if key == "f":
            assert re.search(r"Archive\s+Delete for good\s+Cancel", screen_text(app)), screen_text(app)


async def test_the_overview_scrolls_to_its_morning_report_at_60x20(demo_home):
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        measure = app.query_one("#overview-measure")
        await settle(pilot, lambda: "measuring…" not in str(measure.render()))
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("tab")  # from the tab bar to the report, brought into sight
        await pilot.pause()
        assert app.focused is app.query_one("#overview-morning")
        shown = screen_text(app)
        assert "Good morning" in shown and "Learned" in shown, shown
        assert app.query_one("#overview-morning").region.height >= 4


async def test_the_sleep_tab_shows_every_pass_at_60x20(demo_home):
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        table = app.query_one("#sleep-history")
        await settle(pilot, lambda: table.row_count == 1)
        shown = screen_text(app)
        for name in PASSES:
            assert re.search(rf"^ {name}\s", shown, re.MULTILINE), shown
        assert "what changed" in shown, shown
