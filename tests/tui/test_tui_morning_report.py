"""The Overview shows the morning report as written: the lessons in it are stored text (some
from another memory), never read as Markdown. Read as Markdown, `__init__` lost its
underscores, HTML was dropped, and a link showed clickable words with its address hidden."""

from __future__ import annotations

import pytest

from remem import paths
from tests.tui.conftest import new_app, screen_text, settle

pytestmark = pytest.mark.anyio

STORED = [
    "- Call super().__init__(**kwargs) first in every *Pane subclass (correction, seen 2×, L9)",
    "- See [the docs](https://example.com/a_b) before _any_ deploy <b>x</b> (note, seen 1×, L8)",
    "- Keep [b]markup[/b] and \\[brackets] as they are; `code` too (note, seen 1×, L7)",
    "1. a numbered line > a quote | a | table |",
]


async def test_the_morning_report_shows_stored_text_as_written(demo_home):
    report = "# remem — morning report, 2026-11-20 03:00 UTC\n\n## Learned\n" + "\n".join(STORED) + "\n"
    paths.morning_path().write_text(report, encoding="utf-8")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, lambda: "Learned" in screen_text(app))
        shown = [line.strip() for line in screen_text(app).splitlines()]
        for line in STORED:
            assert line in shown, "\n".join(shown)
        # the headings are ours: shown as headings, without their markers
        assert "remem — morning report, 2026-11-20 03:00 UTC" in shown and "Learned" in shown
        assert not any(line.startswith("#") for line in shown)
