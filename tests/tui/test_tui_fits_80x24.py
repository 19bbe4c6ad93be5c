"""At 80x24 the Sleep tab shows every pass (its last, render, was below the passes' rows, the
history under them taking 8 rows) and the Overview's measures card its last sentence whole
(the cards' row was held to 12 rows: the measures wrap to 8 lines in a 40-column card)."""

from __future__ import annotations

import re

import pytest

from remem.engine.sleep import PASSES
from remem.engine.store import Store
from tests.tui.conftest import new_app, screen_text, settle

pytestmark = pytest.mark.anyio


async def test_the_sleep_tab_shows_every_pass_and_the_newest_runs_at_80x24(demo_home):
    with Store() as store, store.write() as conn:  # a full history: it takes all the room it is given
        for day in range(1, 20):
            conn.execute("INSERT INTO runs (kind, started, finished, status, summary) VALUES ('sleep', ?, ?, 'ok', "
                         "'{\"lessons\": {\"learned\": 1}}')",
                         (f"2026-10-{day:02d}T03:00:00+00:00", f"2026-10-{day:02d}T03:00:02+00:00"))
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        table = app.query_one("#sleep-history")
        await settle(pilot, lambda: table.row_count == 20)
        shown = screen_text(app)
        for name in PASSES:
            assert re.search(rf"^ {name}\s", shown, re.MULTILINE), shown
        assert "what changed" in shown and re.search(r"^ 20\s+32d ago", shown, re.MULTILINE), shown


async def test_the_overview_shows_the_measures_whole_at_80x24(demo_home):
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        measure = app.query_one("#overview-measure")
        await settle(pilot, lambda: "measuring…" not in str(measure.render()))
        await app.workers.wait_for_complete()
        await pilot.pause()
        card = app.query_one("#overview-trend").region  # beside the counts card: its columns alone
        rows = [line[card.x:card.right] for line in screen_text(app).splitlines()[card.y:card.bottom]]
        in_card = " ".join(" ".join(row.strip(" │╭╮╰╯─") for row in rows).split())
        said = " ".join(str(measure.render()).split())
        assert said.startswith("Repeat-yourself rate") and said.endswith("needed)")
        assert in_card.endswith(said), "\n".join(rows)
        assert card.bottom <= app.query_one("#overview-morning").region.y  # the report under it, not over it
