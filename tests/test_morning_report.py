"""The morning report covers every sleep since the person last read it: a second sleep in a day
adds to the report instead of replacing it; reading it (`remem morning`, the TUI's Overview)
starts the next span; scripts (`--json`) and agents do not count as reading; the report says
the span it covers and what it left out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from remem import paths
from remem.engine import clock
from tests.test_sleep import _at, episode, run

PNPM = ("use pnpm not npm in this repo", "no, use pnpm not npm here")
UV = ("use uv, not pip, to install packages", "no, install dependencies with uv instead of pip")


def _learned(report: str) -> list[str]:
    return report.split("## Learned\n")[1].split("\n\n")[0].splitlines()


def _lesson_text(store: Any, words: str) -> str:
    [row] = [r for r in store.rows("SELECT text FROM lessons WHERE status = 'active'")
             if words in r["text"].lower()]
    return row["text"]


def _corrections(store: Any, prefix: str, texts: tuple[str, str], hours: float) -> None:
    store.put_episodes([episode(f"{prefix}{n}", "correction", text, hours=hours + n)
                        for n, text in enumerate(texts)])


def test_a_second_sleep_the_same_day_keeps_what_the_first_learned(store):
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        assert len(run(store)["events"]["learned"]) == 1
        clock.advance(hours=3)
        second = run(store)
    assert second["events"]["learned"] == []  # the second run itself learned nothing
    report = paths.morning_path().read_text()
    learned = _learned(report)
    assert len(learned) == 1 and _lesson_text(store, "pnpm") in learned[0], report
    assert "2 runs, every sleep so far (no report was read before this one)." in report
    assert second["morning_covers"]["runs"] == 2


def test_each_sleep_adds_to_an_unread_report_and_a_lesson_is_listed_once(store):
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(hours=2)
        _corrections(store, "u", UV, hours=4)
        run(store)
        clock.advance(hours=2)
        store.put_episodes([episode("p9", "correction", "I said pnpm, never npm in this repo", hours=7)])
        third = run(store)
    report = paths.morning_path().read_text()
    learned = _learned(report)
    assert len(learned) == 2, report  # pnpm, seen again by the third run, is still listed once
    assert any(_lesson_text(store, "pnpm") in line and "seen 3×" in line for line in learned)
    assert any(_lesson_text(store, "uv") in line for line in learned)
    assert "seen 3×" not in report.split("## Seen again\n")[1].split("\n\n")[0]
    assert f"Since {clock.parse(_at(10)).strftime('%A %Y-%m-%d %H:%M')} UTC: 3 runs" in report
    assert third["morning_covers"]["runs"] == 3


def test_reading_the_report_starts_the_next_span(store, cli):
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(hours=1)
        shown = cli("morning")
        assert shown.exit_code == 0 and "pnpm" in shown.stdout.lower()
        clock.advance(hours=1)
        run(store)
    report = paths.morning_path().read_text()
    assert _learned(report) == ["Nothing new."], report
    read = clock.parse(_at(11)).strftime("%A %Y-%m-%d %H:%M")
    assert f"1 run, every sleep since the report before this one was read ({read} UTC)." in report


def test_a_run_that_wrote_no_report_after_the_one_read_is_in_the_next(store, cli):
    """Read after a `--pass lessons` run: what that run learned was in no report the person
    saw, so the next report still tells it."""
    with clock.frozen(_at(10)):
        store.put_episodes([episode("e0", "correction", "keep commit subjects short", hours=1)])
        run(store)
        clock.advance(hours=1)
        _corrections(store, "p", PNPM, hours=3)
        assert run(store, passes=["lessons"])["morning"] is False
        clock.advance(hours=1)
        assert cli("morning").exit_code == 0  # the first report: without the pnpm lesson
        clock.advance(hours=1)
        run(store)
    learned = _learned(paths.morning_path().read_text())
    assert len(learned) == 1 and _lesson_text(store, "pnpm") in learned[0]


def test_json_agrees_with_the_report_and_does_not_count_as_read(store, cli):
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(hours=1)
        out = json.loads(cli("morning", "--json").stdout)
        assert not paths.morning_path().with_name("morning.read").exists()  # not read by a person
        assert out["report"] == paths.morning_path().read_text() == cli("morning").stdout
        assert out["covers"]["runs"] == 1 and out["read_at"] is None
        assert out["runs"][0]["summary"]["morning_covers"] == out["covers"]
        assert json.loads(cli("morning", "--json").stdout)["read_at"] == _at(11)


def test_the_span_a_report_tells_stays_true_once_it_is_read(store, cli):
    """The span is written into morning.md at sleep and shown unchanged: read once, the report
    must not go on saying it was not read, nor --json's span contradict `read_at`."""
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(hours=1)
        first = cli("morning")
        clock.advance(hours=1)
        again = cli("morning")
        out = json.loads(cli("morning", "--json").stdout)
    assert first.exit_code == 0 and again.exit_code == 0
    assert "1 run, every sleep so far (no report was read before this one)." in again.stdout
    assert "not read" not in again.stdout, again.stdout
    assert out["read_at"] == _at(12)  # the last `remem morning` (a --json read is no reading)
    assert out["covers"] == {"since": _at(10), "runs": 1, "previous_read": None, "left_out": 0}


def test_a_vetoed_lesson_is_told_by_its_words(store):
    """Deleting a lesson's file is a veto: the report names the lesson as every section does,
    its words and its id, not its id alone."""
    from remem.engine import render_files
    from tests.test_sleep import PROJECT

    folder = paths.claude_projects_dir() / paths.project_folder_name(PROJECT) / "memory"
    folder.mkdir(parents=True)
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        lesson = _lesson_text(store, "pnpm")
        lid = store.scalar("SELECT id FROM lessons WHERE text = ?", (lesson,))
        (folder / render_files.lesson_filename(lid)).unlink()  # the person's veto
        clock.advance(hours=1)
        assert run(store)["passes"]["render"]["vetoed"] == 1
    vetoed = paths.morning_path().read_text().split("## Vetoed\n")[1].split("\n\n")[0].splitlines()
    assert vetoed == [f"- {lesson} (correction, seen 2×, {lid})"], vetoed


def test_a_script_reading_json_does_not_end_the_span(store, cli):
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(hours=1)
        assert cli("morning", "--json").exit_code == 0
        clock.advance(hours=1)
        run(store)
        out = json.loads(cli("morning", "--json").stdout)
    assert len(_learned(out["report"])) == 1 and "pnpm" in out["report"].lower()
    assert out["covers"]["runs"] == 2 and out["read_at"] is None


def test_an_unread_report_reaches_back_seven_days_and_says_what_it_left_out(store):
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(days=10)
        _corrections(store, "u", UV, hours=24 * 10)
        run(store)
    report = paths.morning_path().read_text()
    learned = _learned(report)
    assert len(learned) == 1 and _lesson_text(store, "uv") in learned[0], report
    assert ("1 older unread run left out: a report covers at most 7 days and 50 runs." in report)


def test_an_unread_report_keeps_the_newest_runs_up_to_its_cap(store, monkeypatch):
    from remem.engine import render_morning

    monkeypatch.setattr(render_morning, "REPORT_RUNS_MAX", 2)  # 50 sleeps would take minutes
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(hours=1)
        _corrections(store, "u", UV, hours=3)
        run(store)
        clock.advance(hours=1)
        third = run(store)
    report = paths.morning_path().read_text()
    learned = _learned(report)
    assert len(learned) == 1 and _lesson_text(store, "uv") in learned[0], report
    assert "1 older unread run left out: a report covers at most 7 days and 2 runs." in report
    assert third["morning_covers"] == {"since": _at(11), "runs": 2, "previous_read": None, "left_out": 1}


def test_a_render_alone_keeps_the_report_and_its_span(store):
    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(hours=1)
        run(store)
        report = paths.morning_path().read_text()
        clock.advance(hours=1)
        assert run(store, passes=["render"])["morning"] is False
    assert paths.morning_path().read_text() == report


# --------------------------------------------------------------------------- the TUI's Overview

@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_overview_shows_the_report_and_counts_as_read(store):
    from textual.widgets import Static

    from remem.tui.app import RememApp
    from remem.tui.screens.overview import report_lines

    with clock.frozen(_at(10)):
        _corrections(store, "p", PNPM, hours=1)
        run(store)
        clock.advance(hours=1)
        app = RememApp()
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            shown = app.query_one("#overview-report", Static).render().plain
        assert shown == report_lines(paths.morning_path().read_text()).plain  # the report, as written
        clock.advance(hours=1)
        run(store)
    report = paths.morning_path().read_text()
    assert _learned(report) == ["Nothing new."], report
    assert "since the report before this one was read" in report
