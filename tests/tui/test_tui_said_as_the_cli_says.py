"""What a key says after it acted tells what `remem` says for the same command: `y` the counts
and the files a sync rejected, `e` a secret made [secret], words cut, earlier words withdrawn
(and the page shows the row that keeps them at once, not after ctrl+r), `v` that the lesson's
files stay for agents until the next sleep. With every received lesson decided, the Shared
tab says nothing waits, not that nothing was received."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from remem.engine.lessons import MAX_LESSON, add_lesson
from remem.engine.share_sign import file_bytes
from remem.engine.store import Store, cut_from
from tests.tui.conftest import acted, new_app, on_lesson, settle

pytestmark = pytest.mark.anyio

LAPTOP = "b7e1c0ffee00aa11"  # the demo store's peer, origin of its candidate L3


def _said(app: Any, severity: str = "information") -> list[str]:
    return [str(n.message) for n in app._notifications
            if n.severity == severity and not str(n.message).startswith("still working:")]


def _folder(cli: Any, tmp_path: Path) -> Path:
    folder = tmp_path / "sync"
    folder.mkdir()
    assert cli("config", "set", "share.folder", str(folder)).exit_code == 0
    return folder


async def _edit(pilot: Any, lesson_id: str, text: str) -> None:
    await on_lesson(pilot, lesson_id)
    await pilot.press("e")
    await pilot.pause()
    pilot.app.screen.query_one("#editor").text = text
    await pilot.press("ctrl+s")
    await acted(pilot)


def _status_line(app: Any) -> str:
    return str(app.query_one("#lesson-status-line").render())


# --------------------------------------------------------------------------- y: sync

def _another_memory_shares(tmp_path: Path, folder: Path, texts: list[str]) -> str:
    """Another memory (its own database and key) writes these lessons into the folder: its origin."""
    from remem.engine import share

    with Store(tmp_path / "other.db") as other:
        for text in texts:
            add_lesson(other, text, "correction", status="active")
        return share.sync(other, folder, identity_dir=tmp_path / "other-identity")["origin"]


async def test_y_says_what_a_sync_rejected_and_names_the_files(demo_home, cli, tmp_path):
    folder = _folder(cli, tmp_path)
    origin = _another_memory_shares(tmp_path, folder, ["Prefer small pull requests.", "Pin versions in lock files."])
    tampered = next(p for p in (folder / origin / "lessons").glob("*.json")
                    if json.loads(p.read_text(encoding="utf-8"))["text"] == "Prefer small pull requests.")
    doc = json.loads(tampered.read_text(encoding="utf-8"))
    doc["text"] = "Prefer huge pull requests."  # the signature no longer matches
    tampered.write_bytes(file_bytes(doc))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        await pilot.press("y")
        await acted(pilot)
        said = _said(app)
        assert len(said) == 1 and said[0].startswith("synced: exported "), said
        assert said[0].endswith("received 1, quarantined 0, rejected 1, activated 0, confirmed yours 0, "
                                "revoked 0"), said
        (warned,) = _said(app, "warning")
        assert warned.startswith(f"sync: rejected (1): {origin}/lessons/{tampered.name}: "), warned
        assert "signature does not verify" in warned and "\n" not in warned


def test_the_sync_warning_names_a_few_files_and_every_kind_of_problem():
    from remem.tui.screens.shared import sync_problems

    def problem(n: int) -> dict[str, str]:
        return {"path": f"abc/lessons/{n}.json", "reason": "signature does not verify"}

    assert sync_problems({"receive": {"rejected": [], "incomplete": []}, "export": {"problems": []},
                          "confirmations": {"problems": []}}) == ""
    own = {"path": "mine/key.pub", "reason": "not written by this memory"}
    said = sync_problems({"receive": {"rejected": [problem(n) for n in range(5)], "incomplete": [problem(9)]},
                          "export": {"problems": [own]}, "confirmations": {"problems": [own]}})
    assert said == ("sync: rejected (5): abc/lessons/0.json: signature does not verify; abc/lessons/1.json: "
                    "signature does not verify; abc/lessons/2.json: signature does not verify; and 2 more · "
                    "problems in your own folder (1): mine/key.pub: not written by this memory · "
                    "1 file(s) incomplete (half-synced?): read again at the next sync "
                    "(`remem share sync` lists every one)")


# --------------------------------------------------------------------------- e: edit

async def test_e_of_a_shared_lesson_shows_the_revoked_row_at_once_and_says_why(demo_home, cli, tmp_path):
    folder = _folder(cli, tmp_path)
    assert cli("share", "sync", "--folder", str(folder)).exit_code == 0  # this memory shares now
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L1")
        assert _status_line(app).startswith("3 lessons")
        await _edit(pilot, "L1", "Always install Python packages with uv.")
        with Store() as store:
            kept = store.one("SELECT id, status, text FROM lessons WHERE id NOT IN ('L1', 'L2', 'L3')")
        assert kept["status"] == "revoked" and kept["text"] == "Install packages with uv, not pip."
        table = app.query_one("#lesson-table")
        assert kept["id"] in table.rows and table.get_cell(kept["id"], "status").plain == "revoked"
        assert _status_line(app).startswith("4 lessons")
        assert _said(app)[-1] == (f"lesson saved; the earlier words ({kept['id']}) are withdrawn where they "
                                  "were shared at the next sync (y in the Shared tab)")
        assert table.get_row_index("L1") == table.cursor_row  # the cursor stays on the lesson edited


async def test_e_of_an_accepted_received_lesson_shows_the_authors_words_kept_rejected(demo_home):
    with Store() as store:
        add_lesson(store, "Use ruff format, not black.", "correction", lesson_id="RA", status="active",
                   origin=LAPTOP)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _edit(pilot, "RA", "Format with ruff; black is gone.")
        with Store() as store:
            kept = store.one("SELECT id, status, origin FROM lessons WHERE id NOT IN ('L1', 'L2', 'L3', 'RA')")
        assert kept["status"] == "vetoed" and kept["origin"] == LAPTOP
        table = app.query_one("#lesson-table")
        assert kept["id"] in table.rows
        assert _said(app)[-1] == f"lesson saved; your own lesson now; its author's words stay rejected as {kept['id']}"


async def test_e_says_a_secret_became_secret_and_the_words_were_cut(demo_home):
    text = "Deploy with key AKIAIOSFODNN7EXAMPLE. " + "Then check the logs. " * 120
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _edit(pilot, "L2", text)
        with Store() as store:
            saved = store.scalar("SELECT text FROM lessons WHERE id = 'L2'")
        assert "[secret]" in saved and "AKIA" not in saved
        redacted = " ".join(text.replace("AKIAIOSFODNN7EXAMPLE", "[secret]").split())
        over = cut_from(len(redacted), MAX_LESSON)  # what the cap left out, its marker counted
        assert over > len(redacted) - MAX_LESSON > 0
        assert _said(app)[-1] == (
            "lesson saved; a secret in the new words became [secret]: lessons are written to agent memory; "
            f"the words were over the {MAX_LESSON:,} characters a lesson holds: the last {over:,} were cut "
            "(a lesson is shared whole, so it stays short)")


# --------------------------------------------------------------------------- v: veto

async def test_v_says_the_files_stay_until_the_next_sleep_and_when_it_was_shared(demo_home, cli, tmp_path):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L2")
        await pilot.press("v")
        await acted(pilot)
        assert _said(app)[-1] == ("vetoed L2; its files stay for agents until the next sleep "
                                  "(`remem sleep --pass render` removes them now)")
        await pilot.press("v")
        await acted(pilot)
        assert _said(app)[-1] == "lesson restored; the next sleep renders it again"
    folder = _folder(cli, tmp_path)
    assert cli("share", "sync", "--folder", str(folder)).exit_code == 0
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L2")
        await pilot.press("v")
        await acted(pilot)
        assert _said(app)[-1] == ("vetoed L2; its files stay for agents until the next sleep "
                                  "(`remem sleep --pass render` removes them now); it was shared, and "
                                  "memories that took it may keep it: R in the Shared tab withdraws it everywhere")


# --------------------------------------------------------------------------- Shared: nothing waits

async def test_the_shared_tab_says_nothing_waits_once_every_candidate_is_decided(demo_home, cli, tmp_path):
    folder = _folder(cli, tmp_path)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        table = app.query_one("#candidate-table")
        await settle(pilot, lambda: "L3" in table.rows)
        await pilot.press("x")
        await acted(pilot)
        assert table.row_count == 0
        detail = " ".join(str(app.query_one("#candidate-detail-text").render()).split())
        assert detail == f"Nothing waits for a decision; press y to sync with {folder} for more."
