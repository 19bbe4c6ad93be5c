"""One rule, one place: what the CLI, the TUI and the HTTP server share comes from the engine.

Each test drives an edge (or the engine function that edge calls) and checks it gets the
engine's behaviour: the nightly backup of a full sleep, the veto and restore rules, a lesson's
detail, the status numbers, the morning report, the per-pass counts, and the lesson pane's
errors.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from remem import paths
from remem.engine import browse, render, sleep
from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.store import Store
from tests.tui.conftest import demo_home, new_app, screen_text  # noqa: F401 - demo_home is a fixture

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _backups() -> list[Path]:
    folder = paths.backups_dir()
    return sorted(folder.glob("memory-*.db")) if folder.is_dir() else []


def _messages(app: Any) -> str:
    return " | ".join(str(n.message) for n in app._notifications)


# ----------------------------------------------------------------- 1. a full sleep's backup

def test_a_full_sleep_through_the_engine_makes_a_rotated_backup_and_says_so(store):
    """run_sleep_collect is what the TUI's Sleep tab runs: every pass makes the backup."""
    seen: list[str] = []
    summary = sleep.run_sleep_collect(store, on_progress=lambda e: seen.append(e.pass_name))
    [made] = _backups()
    assert summary["backup"] == {"path": str(made), "rotated_out": 0}
    assert "backup" in seen
    assert sleep.history(store, 1)[0]["summary"]["backup"]["path"] == str(made)  # the run's record too
    with Store(made) as copy:  # the copy holds this run as finished, with its watermark
        assert copy.scalar("SELECT status FROM runs ORDER BY id DESC LIMIT 1") == "ok"


def test_only_a_full_real_sleep_with_nightly_on_makes_a_backup(store):
    from remem import config

    assert "backup" not in sleep.run_sleep_collect(store, passes=["lessons"])
    assert "backup" not in sleep.run_sleep_collect(store, dry_run=True)
    cfg = config.load()
    cfg["backup"]["nightly"] = False
    assert "backup" not in sleep.run_sleep_collect(store, cfg=cfg)
    assert _backups() == []


def test_a_failed_backup_keeps_the_nights_work_and_names_the_fix(store, cli):
    paths.backups_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.backups_dir().write_text("not a folder")
    summary = sleep.run_sleep_collect(store)
    assert summary["backup"]["error"].startswith("backup failed (")
    assert summary["backup"]["error"].endswith("run `remem backup` by hand")
    assert sleep.history(store, 1)[0]["status"] == "ok"
    res = cli("sleep", "--quiet")  # the CLI only tells it
    assert res.exit_code == 0 and "remem: backup failed (" in res.stderr


def test_cli_sleep_prints_the_engines_backup(home, cli):
    res = cli("sleep", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["backup"]["path"] == str(_backups()[0])
    out = cli("sleep").stdout
    assert f"backed up to {_backups()[-1]}" in out


@pytest.mark.anyio
async def test_a_full_sleep_in_the_tui_makes_the_backup(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4", "r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.query_one("#sleep-pane")
        assert pane.log_lines[-1] == "sleep finished"
        [made] = _backups()
        assert f"backup: backed up to {made}" in pane.log_lines


# ----------------------------------------------------------------- 2. veto and restore rules

def _received(store: Store, status: str, lid: str) -> dict[str, Any]:
    return add_lesson(store, f"Use ruff format, not black ({lid}).", "correction", lesson_id=lid,
                      status=status, origin="b7e1c0ffee00aa11")


@pytest.mark.parametrize("status", ["candidate", "quarantined"])
def test_a_lesson_waiting_in_the_share_gate_is_neither_vetoed_nor_restored(store, cli, status):
    lesson = _received(store, status, "R1")
    for act in (render.veto_lesson, render.restore_lesson):
        with pytest.raises(ValueError, match=r"waiting for a decision .* `remem share accept\|reject R1`"):
            act(store, "R1")
    res = cli("lessons", "veto", "R1")
    assert res.exit_code == 1 and "remem share accept|reject R1" in res.output
    assert get_lesson(store, "R1") == lesson and not render.vetoed_path().exists()


def test_a_revoked_lesson_is_neither_vetoed_nor_restored(store, cli):
    lesson = _received(store, "revoked", "R2")
    for act in (render.veto_lesson, render.restore_lesson):
        with pytest.raises(ValueError, match="revoked by its author"):
            act(store, "R2")
    assert cli("lessons", "veto", "R2").exit_code == 1
    assert get_lesson(store, "R2") == lesson


def test_a_second_veto_and_a_restore_of_what_no_veto_holds_are_nothing_to_do(store):
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    with pytest.raises(render.NothingToDo, match="active, not vetoed: nothing to restore"):
        render.restore_lesson(store, lesson["id"])
    render.veto_lesson(store, lesson["id"])
    with pytest.raises(render.NothingToDo, match="vetoed already: nothing to do"):
        render.veto_lesson(store, lesson["id"])
    assert isinstance(render.NothingToDo("x"), ValueError)  # edges that only know ValueError


def test_has_veto_knows_a_veto_by_id_and_by_text(store):
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    assert not render.has_veto(lesson)
    render.record_veto({**lesson, "id": "another"})  # the same text vetoed under another id
    assert render.has_veto(lesson)
    render.clear_veto(lesson)
    render.record_veto(lesson)
    assert render.has_veto(lesson)


@pytest.mark.anyio
async def test_the_tui_shows_the_engines_refusal(demo_home):
    """`v` on the demo's candidate L3, and on a revoked lesson: the engine's message."""
    with Store() as store:
        _received(store, "revoked", "R2")
        want = {}
        for lid in ("L3", "R2"):
            with pytest.raises(ValueError) as refused:
                render.veto_lesson(store, lid)
            want[lid] = str(refused.value)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one("#lesson-table")
        for lid in ("L3", "R2"):
            table.move_cursor(row=table.get_row_index(lid))
            await pilot.pause()
            await pilot.press("v")
            await pilot.pause()
            assert want[lid] in _messages(app)
    with Store() as store:
        assert get_lesson(store, "L3")["status"] == "candidate"
        assert get_lesson(store, "R2")["status"] == "revoked"


# ----------------------------------------------------------------- 3. a lesson's detail

def test_lesson_detail_has_aliases_and_a_sources_limit_and_the_cli_shows_it(store, cli):
    from remem.engine.lessons import merge_into

    store.put_episodes([{"id": f"s{i:03d}", "kind": "correction", "title": f"use uv {i}",
                         "gist": f"use uv {i}", "at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00"}
                        for i in range(230)])
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=[f"s{i:03d}" for i in range(220)])
    other = add_lesson(store, "Install with uv.", "correction", sources=["s225"])
    merge_into(store, lesson["id"], other["id"])
    found = browse.lesson_detail(store, lesson["id"])
    assert len(found["episodes"]) == 50 and [a["old"] for a in found["aliases"]] == [other["id"]]
    assert len(browse.lesson_detail(store, lesson["id"], sources_limit=200)["episodes"]) == 200
    shown = json.loads(cli("lessons", "show", lesson["id"], "--json").stdout)
    assert len(shown["source_episodes"]) == 200 and [a["old"] for a in shown["aliases"]] == [other["id"]]
    assert f"merged into it: {other['id']}" in cli("lessons", "show", lesson["id"]).stdout


def test_lessons_show_lists_every_prediction_oldest_first(store, cli):
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=[])
    with store.write() as conn:
        for i in range(25):
            conn.execute("INSERT INTO predictions (id, lesson_id, text, made) VALUES (?, ?, ?, ?)",
                         (f"P{i:02d}", lesson["id"], f"prediction {i}", f"2026-01-{i + 1:02d}T00:00:00+00:00"))
    assert len(browse.lesson_detail(store, lesson["id"])["predictions"]) == 20  # the TUI's newest 20
    shown = json.loads(cli("lessons", "show", lesson["id"], "--json").stdout)
    assert [p["id"] for p in shown["predictions"]] == [f"P{i:02d}" for i in range(25)]
    assert set(shown["predictions"][0]) == {"id", "text", "made", "resolved", "outcome", "evidence"}


# ----------------------------------------------------------------- 4. the status numbers

FAKE = {"home": "/fake/home", "database": "/fake/home/memory.db", "db_bytes": 4_000_000,
        "counts": {"episodes": 7, "sessions": 1, "lessons": 3, "predictions": 2, "aliases": 0, "tags": 0,
                   "connections": 5, "primes": 0, "peers": 0},
        "episodes_by_kind": {"correction": 4, "note": 3}, "lessons_by_status": {"active": 2, "vetoed": 1},
        "tasks": {"decay": "2026-01-01T00:00:00+00:00"}, "last_ingest": None, "last_sleep": None}


def test_status_summary_counts_what_the_store_holds(store):
    from remem.engine import status

    store.put_episodes([{"id": "n1", "kind": "note", "title": "a", "gist": "a", "at": "2026-01-01T00:00:00+00:00"}])
    add_lesson(store, "Use uv, not pip.", "correction", sources=["n1"])
    facts = status.summary(store)
    assert facts["counts"]["episodes"] == 1 and facts["episodes_by_kind"] == {"note": 1}
    assert facts["lessons_by_status"] == {"active": 1} and facts["database"] == str(store.path)
    assert set(facts) >= {"home", "db_bytes", "tasks", "last_ingest", "last_sleep"}


def test_cli_status_is_the_engines_summary(home, cli, monkeypatch):
    from remem.engine import status

    cli("remember", "one note")
    monkeypatch.setattr(status, "summary", lambda store: dict(FAKE))
    info = json.loads(cli("status", "--json").stdout)
    assert {k: info[k] for k in FAKE} == FAKE and "model" not in info and info["space"]
    assert "episodes by kind: correction 4, note 3" in cli("status").stdout


@pytest.mark.anyio
async def test_the_overview_and_health_are_the_engines_summary(demo_home, monkeypatch):
    from remem.engine import status
    from remem.server import build_server
    from remem.server_http import http_app

    monkeypatch.setattr(status, "summary", lambda store: dict(FAKE))
    async with new_app().run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(pilot.app)
        assert "7 episodes  correction 4 note 3" in text and "3 lessons  active 2 vetoed 1" in text
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    app = http_app(build_server(tasks=False, warm=False), host="127.0.0.1", token="")
    await app({"type": "http", "method": "GET", "path": "/memory/health", "raw_path": b"/memory/health",
               "query_string": b"", "headers": [(b"host", b"127.0.0.1")], "scheme": "http",
               "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1), "root_path": "",
               "http_version": "1.1"}, receive, send)
    body = json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
    assert body["counts"] == FAKE["counts"] and body["tasks"] == FAKE["tasks"]
    assert body["home"] == FAKE["home"]


# ----------------------------------------------------------------- 5. the morning report

def test_morning_report_is_none_when_absent_or_unreadable(home):
    home.mkdir(parents=True, exist_ok=True)
    assert sleep.morning_report() is None
    paths.morning_path().mkdir()  # unreadable as a file (a directory: root reads any mode)
    assert sleep.morning_report() is None
    paths.morning_path().rmdir()
    paths.morning_path().write_bytes(b"# report \xff\n")  # bytes that are not UTF-8: still shown
    assert sleep.morning_report() == "# report \ufffd\n"


def test_cli_morning_with_an_unreadable_report_says_there_is_none(home, cli):
    cli("remember", "one note")
    paths.morning_path().mkdir()
    res = cli("morning")
    assert res.exit_code == 1 and "no morning report yet" in res.output
    assert json.loads(cli("morning", "--json").stdout)["report"] is None


@pytest.mark.anyio
async def test_an_unreadable_morning_report_does_not_break_the_overview(demo_home):
    paths.morning_path().unlink()
    paths.morning_path().mkdir()
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "No morning report yet" in text and "episodes" in text
        assert "overview:" not in _messages(app)


# ----------------------------------------------------------------- 6. per-pass counts

def test_describe_counts_is_the_non_zero_numbers():
    counts = {"created": 2, "joined": 0, "space": "m2v:x", "ids": ["a"], "merged": 1, "dry": True}
    assert sleep.describe_counts(counts) == "created 2, merged 1"
    assert sleep.describe_counts(counts, most=1) == "created 2"
    assert sleep.describe_counts({"joined": 0}) == "nothing to do"
    assert sleep.describe_counts({}, empty="") == ""


def test_cli_and_tui_show_the_engines_counts(store, cli):
    from remem.tui.screens.sleep import _changes

    store.put_episodes([{"id": "n1", "kind": "note", "title": "a", "gist": "a", "at": "2026-01-01T00:00:00+00:00"}])
    res = cli("sleep")
    assert res.exit_code == 0, res.output
    passes = sleep.history(store, 1)[0]["summary"]["passes"]
    table = " ".join(res.stdout.split())
    for name, counts in passes.items():
        assert f"│ {name} │ {sleep.describe_counts(counts)} │" in table, (name, table)
    assert _changes({"embed": {"episodes": 0, "space": "m2v"}, "expire": {"ran": 5, "decayed": 2, "archived": 1},
                     "connect": {"memories": 1}}) == "expire: ran 5, decayed 2; connect: memories 1"
    assert _changes({"embed": {"episodes": 0}}) == "nothing to do"


# ----------------------------------------------------------------- 7. the lesson pane's errors

@pytest.mark.anyio
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
