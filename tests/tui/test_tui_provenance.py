"""Where a received lesson came from, in the Lessons and Shared tabs, in the words `remem lessons
show` uses (the sender by the label the person gave it, the other memories that sent it too,
"earlier text" for a draft), and X in the Shared tab: every waiting lesson of one origin
rejected in one step, asked first. The lessons come through a real share folder from two other
memories, as tests/test_share.py makes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.engine import lessons, share
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, on_lesson, screen_text, settle

pytestmark = pytest.mark.anyio

SUITE = "Run the full test suite before handing back work"
TABS = "Prefer tabs over spaces in Makefiles"


def _messages(app) -> str:  # noqa: ANN001
    return " | ".join(str(n.message) for n in app._notifications)


def _send(tmp_path: Path, name: str, texts: list[str], folder: Path) -> str:
    """Another memory, with its own store and identity, publishing `texts` to the share folder.
    Returns its origin id."""
    idir = tmp_path / name / "identity"
    with Store(tmp_path / name / "memory.db") as other:
        for text in texts:
            lessons.add_lesson(other, text, "correction", strength=1.5)
        share.sync(other, folder, identity_dir=idir)
    return share.identity(idir).origin


@pytest.fixture
def received(demo_home: Path, tmp_path: Path, cli) -> dict[str, str]:  # noqa: ANN001
    """The demo memory after a sync that brought SUITE from two memories (one the person
    labelled "work", one without a label) and TABS from "work" alone: both wait as
    candidates, beside the demo store's own candidate L3."""
    folder = tmp_path / "share"
    folder.mkdir()
    work = _send(tmp_path, "work", [SUITE, TABS], folder)
    desk = _send(tmp_path, "desk", [SUITE], folder)
    assert cli("config", "set", "share.folder", str(folder)).exit_code == 0
    with Store() as store:
        share.sync(store, folder)
        with store.write() as conn:  # named, not trusted (`share trust --label` would trust it)
            conn.execute("UPDATE peers SET label = 'work' WHERE origin = ?", (work,))
        suite = lessons.by_hash(store, lessons.lesson_hash(SUITE, "correction"))
        tabs = lessons.by_hash(store, lessons.lesson_hash(TABS, "correction"))
    assert suite["status"] == tabs["status"] == "candidate" and tabs["origin"] == work
    # SUITE's sender is whichever of the two was read first; the other corroborates it.
    named = {work: f"work ({work})", desk: desk}
    also = desk if suite["origin"] == work else work
    return {"work": work, "desk": desk, "suite": suite["id"], "tabs": tabs["id"],
            "suite_from": named[suite["origin"]], "suite_also": named[also],
            "from_work": [r["id"] for r in (suite, tabs) if r["origin"] == work]}


async def _lesson_detail(pilot, lesson_id: str) -> str:  # noqa: ANN001
    await on_lesson(pilot, lesson_id)
    return str(pilot.app.query_one("#lesson-detail-text").render())


async def test_a_received_lessons_detail_names_its_sender_by_label_and_the_others_that_sent_it(received):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        shown = await _lesson_detail(pilot, received["suite"])
        assert f"from: {received['suite_from']}" in shown
        # The sender is no corroboration of itself; the other memory is.
        assert f"corroborated by: {received['suite_also']}\n" in shown
        shown = await _lesson_detail(pilot, received["tabs"])
        assert f"from: work ({received['work']})" in shown
        assert "corroborated by: no other memory yet" in shown


async def test_a_lesson_of_our_own_names_no_sender_even_with_our_origin_on_it(received):
    # A lesson of ours can carry this memory's own origin id (read back from the share folder
    # after the memory was rebuilt with the same identity): it is still nobody else's.
    with Store() as store, store.write() as conn:
        conn.execute("UPDATE lessons SET origin = ?, origins = ? WHERE id = 'L1'",
                     (share.identity().origin, f'["{share.identity().origin}", "{received["desk"]}"]'))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        shown = await _lesson_detail(pilot, "L1")
        assert "from:" not in shown and "corroborated by" not in shown


async def test_an_edited_lessons_draft_is_called_the_earlier_text_as_the_cli_calls_it(demo_home):
    with Store() as store:
        lessons.edit_text(store, "L1", "Install packages with uv; pip is not used here.")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        shown = await _lesson_detail(pilot, "L1")
        assert "earlier text: Install packages with uv, not pip." in shown
        assert "deterministic" not in shown


async def _shared_on(pilot, lesson_id: str) -> None:  # noqa: ANN001
    await pilot.press("5")
    table = pilot.app.query_one("#candidate-table")
    await settle(pilot, lambda: lesson_id in table.rows)
    table.focus()
    table.move_cursor(row=table.get_row_index(lesson_id))
    await pilot.pause()


async def test_the_shared_tab_names_the_sender_by_label_and_the_others_that_sent_it(received):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _shared_on(pilot, received["tabs"])
        table = app.query_one("#candidate-table")
        assert str(table.get_row(received["tabs"])[1]) == "work"
        shown = str(app.query_one("#candidate-detail-text").render())
        assert f"from work ({received['work']}) (not trusted)" in shown
        assert "corroborated by: no other memory yet" in shown
        table.move_cursor(row=table.get_row_index(received["suite"]))
        await pilot.pause()
        shown = str(app.query_one("#candidate-detail-text").render())
        assert f"from {received['suite_from']} (not trusted)" in shown
        # The sender is no corroboration of itself; the other memory is.
        assert f"corroborated by: {received['suite_also']}\n" in shown


async def test_trusting_the_second_sender_says_one_lesson_activated_with_its_full_origin(received):
    with Store() as store:
        share.trust(store, received["work"])
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _shared_on(pilot, received["suite"])
        peers = app.query_one("#peer-table")
        peers.focus()
        peers.move_cursor(row=peers.get_row_index(received["desk"]))
        await pilot.press("T")
        await acted(pilot)
        assert f"trusted {received['desk'][:8]}; 1 lesson activated" in _messages(app)
    with Store() as store:
        assert store.scalar("SELECT trusted FROM peers WHERE origin = ?", (received["desk"],)) == 1
        assert store.scalar("SELECT status FROM lessons WHERE id = ?", (received["suite"],)) == "active"


def _statuses(ids: list[str]) -> list[str]:
    with Store() as store:
        return [store.scalar("SELECT status FROM lessons WHERE id = ?", (i,)) for i in ids]


async def test_x_rejects_every_waiting_lesson_of_the_selected_origin_once_confirmed(received):
    ids = [received["suite"], received["tabs"]]
    mine = received["from_work"]  # TABS, and SUITE when work was read first
    many = f"{len(mine)} lesson{'s' if len(mine) > 1 else ''}"
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _shared_on(pilot, received["tabs"])
        await pilot.press("X")
        await pilot.pause()
        question = str(app.screen.query_one("#question").render())
        assert question == f"Reject {many} waiting from work ({received['work']})?"
        await pilot.press("escape")  # cancelled: nothing changes
        await acted(pilot)
        assert _statuses(ids) == ["candidate", "candidate"]
        await pilot.press("X")
        await pilot.pause()
        await pilot.click("#yes")
        await acted(pilot)
        assert f"rejected {many} from work ({received['work']})" in _messages(app)
        assert app.query_one("#candidate-table").row_count == 3 - len(mine)  # L3 too
    # Every lesson work sent is rejected; one the other memory sent first still waits.
    assert _statuses(ids) == ["vetoed" if i in mine else "candidate" for i in ids]


async def test_x_on_a_peer_with_nothing_waiting_says_so_and_asks_nothing(received):
    with Store() as store:  # the other memory's lesson (if it sent SUITE first) decided on
        for lesson_id in {received["suite"], received["tabs"]} - set(received["from_work"]):
            share.accept(store, lesson_id)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _shared_on(pilot, received["tabs"])
        peers = app.query_one("#peer-table")
        peers.focus()
        peers.move_cursor(row=peers.get_row_index(received["desk"]))
        await pilot.press("X")
        await pilot.pause()
        assert f"nothing from {received['desk']} waits for a decision" in _messages(app)
        assert len(app.screen_stack) == 1
    assert _statuses(received["from_work"]) == ["candidate"] * len(received["from_work"])


async def test_x_is_in_the_keys_and_the_command_palette(received):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert "reject every waiting lesson" in app.screen.query_one("Markdown").source
        await pilot.press("escape")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Reject every lesson of an origin" in titles


async def test_the_shared_status_line_keeps_every_key_and_the_folder_in_80_columns(received, tmp_path):
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await settle(pilot, lambda: app.query_one("#candidate-table").row_count == 3)
        shown = screen_text(app)
        assert "R revoke" in shown and "X reject all from origin" in shown
        # A path longer than the line is folded onto the next: read without the line ends.
        assert str(tmp_path / "share") in "".join(shown.split())
