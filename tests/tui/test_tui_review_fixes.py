"""What a review of the app found, each under pilot over a real store:

- an edit saved after its lesson was merged into another (sleep's merge pass) overwrote the
  lesson it became with the words typed for the other;
- an edit, a tag, a connection whose save failed (the memory busy) lost what was typed;
- pagedown/pageup turned the list's page with the focus in the row's detail;
- the forget dialog and the detail cut a memory's detail to 600 cells on one line;
- `P` said "promoted" of a memory long-term already;
- saving an emptied lesson did nothing, silently;
- `t` and `c` on a memory deleted elsewhere opened their dialog, and left the row listed;
- `x` and `a` in Shared acted on a candidate accepted or rejected elsewhere;
- the hint "(tab moves there)" took two presses of tab.
"""

from __future__ import annotations

from typing import Any

import pytest

from remem.engine import lessons
from remem.engine import store as store_module
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, on_lesson, settle

pytestmark = pytest.mark.anyio


def _said(app: Any, severity: str | None = None) -> list[str]:
    return [str(n.message) for n in app._notifications
            if (severity is None or n.severity == severity) and not str(n.message).startswith("still working:")]


def _lesson_text(lesson_id: str) -> str:
    with Store() as store:
        return store.scalar("SELECT text FROM lessons WHERE id = ?", (lesson_id,))


def _status(lesson_id: str) -> str:
    with Store() as store:
        return store.scalar("SELECT status FROM lessons WHERE id = ?", (lesson_id,))


async def _type_into_editor(pilot: Any, text: str) -> None:
    editor = pilot.app.screen.query_one("#editor")
    editor.text = ""
    await pilot.pause()
    editor.focus()
    await pilot.press(*text)
    await pilot.pause()


async def _on_episode(pilot: Any, memory_id: str) -> None:
    await pilot.press("2")
    table = pilot.app.query_one("#episode-table")
    await settle(pilot, lambda: memory_id in table.rows)
    table.move_cursor(row=table.get_row_index(memory_id))
    await pilot.pause()


# --------------------------------------------------------------------------- e: merged meanwhile

async def test_an_edit_saved_after_its_lesson_was_merged_elsewhere_leaves_the_other_lesson_alone(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L2")
        await pilot.press("e")
        await pilot.pause()
        assert str(app.screen.query_one("#question").render()) == "Edit lesson L2"
        with Store() as other:  # another process: sleep's merge pass
            lessons.merge_into(other, "L1", "L2")
        await _type_into_editor(pilot, "words for L2")
        await pilot.press("ctrl+s")
        await acted(pilot)
        assert _lesson_text("L1") == "Install packages with uv, not pip."  # not overwritten
        assert "L2 was merged into L1 meanwhile; nothing saved" in _said(app, "warning")
        assert "lesson saved" not in " ".join(_said(app))
        # The words typed are not lost: back in an editor, over the lesson L2 became, which says so.
        assert type(app.screen).__name__ == "EditText"
        assert app.screen.query_one("#editor").text == "words for L2"
        assert "merged into L1" in str(app.screen.query_one("#question").render())
        await pilot.press("escape")
        await pilot.pause()
        assert "L2" not in app.query_one("#lesson-table").rows  # the view read again
    assert _lesson_text("L1") == "Install packages with uv, not pip."


# --------------------------------------------------------------------------- a failed save loses nothing

@pytest.fixture
def busy(held: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The memory held by another process for longer than the app's write waits for it: a
    write fails with "the memory is busy" until the test lets it go (held.execute("COMMIT"))."""
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 1)
    return held


async def test_an_edit_whose_save_fails_gives_the_words_back_in_the_editor(busy):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L2")
        await pilot.press("e")
        await pilot.pause()
        await _type_into_editor(pilot, "Install pyyaml before the tests.")
        await pilot.press("ctrl+s")
        await acted(pilot)
        assert any("busy" in m for m in _said(app, "error")), _said(app)
        assert type(app.screen).__name__ == "EditText"
        assert app.screen.query_one("#editor").text == "Install pyyaml before the tests."
        busy.execute("COMMIT")  # the other process is done: saved again, it is saved
        await pilot.press("ctrl+s")
        await acted(pilot)
        assert type(app.screen).__name__ != "EditText"
        assert any(m.startswith("lesson saved") for m in _said(app))
    assert _lesson_text("L2") == "Install pyyaml before the tests."


async def test_a_tag_an_importance_and_a_connection_whose_save_fails_are_asked_again_with_what_was_typed(busy):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_episode(pilot, "e05")
        await pilot.press("t")
        await pilot.pause()
        await pilot.press(*"staging")
        await pilot.press("enter")
        await acted(pilot)
        assert type(app.screen).__name__ == "AskValue"
        assert app.screen.query_one("#answer").value == "staging"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("i")
        await pilot.pause()
        app.screen.query_one("#answer").value = "0.9"
        await pilot.press("enter")
        await acted(pilot)
        assert type(app.screen).__name__ == "AskValue"
        assert app.screen.query_one("#answer").value == "0.9"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        app.screen.query_one("#type").value = "supports"
        await pilot.press(*"e06")
        await pilot.press("enter")
        await acted(pilot)
        assert type(app.screen).__name__ == "ConnectTo"
        assert app.screen.query_one("#target").value == "e06"
        assert app.screen.query_one("#type").value == "supports"
        busy.execute("COMMIT")
        await pilot.press("enter")
        await acted(pilot)
        assert "connected (supports) e05" in _said(app)
    with Store() as store:
        assert store.scalar("SELECT count(*) FROM connections WHERE src = 'e05' AND dst = 'e06'") == 1


# --------------------------------------------------------------------------- pagedown in the detail

def _long_memories(n: int) -> None:
    with Store() as store:
        store.put_episodes([{"id": f"m{i:03d}", "kind": "note", "title": f"memory {i}", "gist": f"memory {i}",
                             "detail": "\n".join(f"line {j} of the output" for j in range(80)),
                             "at": f"2099-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00"} for i in range(n)])


def _long_lessons(n: int) -> None:
    with Store() as store:
        for i in range(n):
            lessons.add_lesson(store, f"Paged lesson {i}: " + "use the tool with care " * 30, "correction",
                               sources=[f"p{i}"], strength=0.5 - i / 1000)


@pytest.mark.parametrize("tab, detail, status", [("2", "#episode-detail", "#episode-status"),
                                                 ("3", "#lesson-detail", "#lesson-status-line")])
async def test_pagedown_with_the_focus_in_the_detail_scrolls_it_and_keeps_the_page(demo_home, tab, detail, status):
    _long_memories(60)
    _long_lessons(60)
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(tab)
        await pilot.pause()
        scroller = app.query_one(detail)
        line = app.query_one(status)
        await settle(pilot, lambda: str(line.render()).startswith("1-50 of") and scroller.max_scroll_y > 0)
        for _ in range(6):  # tab, as the person does, until the detail has the focus
            if app.focused is scroller:
                break
            await pilot.press("tab")
            await pilot.pause()
        assert app.focused is scroller
        await pilot.press("pagedown")
        await settle(pilot, lambda: scroller.scroll_y > 0)
        assert scroller.scroll_y > 0
        assert str(line.render()).startswith("1-50 of")  # the list's page stays
        await pilot.press("pageup")
        await settle(pilot, lambda: scroller.scroll_y == 0)
        assert scroller.scroll_y == 0 and str(line.render()).startswith("1-50 of")


# --------------------------------------------------------------------------- f: the whole memory

OUTPUT = "\n".join([f"  File \"app/step{i}.py\", line {i}, in run\n    do_[b]thing[/b]({i})" for i in range(60)]
                   + ["ValueError: the last line of a long traceback"])


def _traceback() -> None:
    assert len(OUTPUT) > 600
    with Store() as store:
        store.put_episodes([{"id": "tb1", "kind": "error", "title": "the deploy failed", "gist": "deploy failed",
                             "detail": OUTPUT, "at": "2099-01-01T00:00:00+00:00"}])


async def test_the_detail_shows_the_whole_detail_with_its_lines(demo_home):
    _traceback()
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_episode(pilot, "tb1")
        shown = str(app.query_one("#episode-detail-text").render())
        assert OUTPUT in shown  # whole, its lines as written, its brackets shown, not obeyed


async def test_a_detail_longer_than_the_pane_shows_says_how_much_more_and_forget_shows_it_all(demo_home):
    from remem.tui.screens.episodes import DETAIL_SHOWN

    long = "\n".join(f"output line {i:05d}" for i in range(DETAIL_SHOWN // 10))
    assert len(long) > DETAIL_SHOWN
    with Store() as store:
        store.put_episodes([{"id": "out1", "kind": "error", "title": "a long build log", "gist": "the build failed",
                             "detail": long, "at": "2099-01-01T00:00:00+00:00"}])
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_episode(pilot, "out1")
        shown = str(app.query_one("#episode-detail-text").render())
        assert long[:DETAIL_SHOWN] in shown
        assert f"… ({len(long) - DETAIL_SHOWN:,} more characters: f shows the whole memory" in shown
        await pilot.press("f")
        await pilot.pause()
        assert long in str(app.screen.query_one("#text").render())
        await pilot.press("escape")
        await pilot.pause()


async def test_forget_shows_the_whole_memory_its_detail_too(demo_home):
    _traceback()
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_episode(pilot, "tb1")
        await pilot.press("f")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmForget"
        text = str(app.screen.query_one("#text").render())
        assert "deploy failed" in text and OUTPUT in text
        await pilot.press("escape")
        await pilot.pause()


# --------------------------------------------------------------------------- P: long-term already

async def test_promote_says_when_a_memory_was_long_term_already(demo_home):
    with Store() as store:
        store.put_episodes([{"id": "st1", "kind": "note", "title": "for a day", "gist": "for a day",
                             "at": "2026-11-20T11:00:00+00:00", "memory_type": "short_term",
                             "expires_at": "2026-11-21T11:00:00+00:00"}])
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_episode(pilot, "e05")
        await pilot.press("P")
        await acted(pilot)
        assert _said(app) == ["e05 is already long-term"]
        await _on_episode(pilot, "st1")
        await pilot.press("P")
        await acted(pilot)
        assert _said(app)[-1] == "promoted st1: it is long-term now"
    with Store() as store:
        assert store.episode("st1")["memory_type"] == "long_term"


# --------------------------------------------------------------------------- e: an emptied lesson

async def test_saving_an_emptied_lesson_says_to_veto_it_and_keeps_the_editor(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await on_lesson(pilot, "L2")
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#editor").text = "   \n "
        await pilot.press("ctrl+s")
        await acted(pilot)
        assert _said(app, "warning") == ["a lesson needs text; press v to veto it instead"]
        assert type(app.screen).__name__ == "EditText"  # nothing closed
    assert _lesson_text("L2").startswith("Before running tests, install pyyaml")


# --------------------------------------------------------------------------- t, c: deleted elsewhere

@pytest.mark.parametrize("key", ["t", "c"])
async def test_tag_and_connect_on_a_memory_deleted_elsewhere_say_so_before_their_dialog(demo_home, key):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_episode(pilot, "e05")
        with Store() as other:  # another process: `remem forget --hard e05`
            app.engine("lifecycle").forget(other, "e05", True)
        await pilot.press(key)
        await pilot.pause()
        assert type(app.screen).__name__ not in ("AskValue", "ConnectTo")  # nothing typed in vain
        assert any("e05" in m and "the view is reloaded" in m for m in _said(app, "warning")), _said(app)
        assert "e05" not in app.query_one("#episode-table").rows


async def test_a_tag_for_a_memory_deleted_while_its_dialog_was_open_reloads_the_view(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_episode(pilot, "e05")
        await pilot.press("t")
        await pilot.pause()
        with Store() as other:
            app.engine("lifecycle").forget(other, "e05", True)
        await pilot.press(*"staging")
        await pilot.press("enter")
        await acted(pilot)
        assert any("no memory with id 'e05'" in m for m in _said(app, "error")), _said(app)
        assert "e05" not in app.query_one("#episode-table").rows  # the row deleted is not left listed
        assert type(app.screen).__name__ != "AskValue"  # nowhere to put the tag: not asked again


# --------------------------------------------------------------------------- Shared: decided elsewhere

async def _on_candidate(pilot: Any, lesson_id: str) -> None:
    await pilot.press("5")
    table = pilot.app.query_one("#candidate-table")
    await settle(pilot, lambda: lesson_id in table.rows)
    table.move_cursor(row=table.get_row_index(lesson_id))
    await pilot.pause()


async def test_x_on_a_candidate_accepted_elsewhere_leaves_it_active(demo_home, cli):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_candidate(pilot, "L3")
        assert cli("share", "accept", "L3").exit_code == 0  # meanwhile, in another terminal
        await pilot.press("x")
        await acted(pilot)
        assert _status("L3") == "active"  # not vetoed behind the person's back
        assert _said(app, "warning") == [
            "L3 was accepted (it is active now) meanwhile (elsewhere): nothing done; the view is reloaded"]
        assert "L3" not in app.query_one("#candidate-table").rows


async def test_a_on_a_candidate_rejected_elsewhere_leaves_it_rejected(demo_home, cli):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_candidate(pilot, "L3")
        assert cli("share", "reject", "L3").exit_code == 0
        await pilot.press("a")
        await acted(pilot)
        assert _status("L3") == "vetoed"
        assert _said(app, "warning") == ["L3 was rejected meanwhile (elsewhere): nothing done; the view is reloaded"]


@pytest.mark.parametrize("key, said, status", [("a", "accepted L3", "active"), ("x", "rejected L3", "vetoed")])
async def test_accept_and_reject_name_the_lesson(demo_home, key, said, status):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_candidate(pilot, "L3")
        await pilot.press(key)
        await acted(pilot)
        assert said in _said(app)
    assert _status("L3") == status


# --------------------------------------------------------------------------- Shared: the way to the peers

async def test_the_hint_to_the_peers_table_counts_the_presses_of_tab(demo_home, cli):
    assert cli("share", "reject", "L3").exit_code == 0  # no candidate left to select
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        peers = app.query_one("#peer-table")
        assert app.focused is app.query_one("#candidate-table")
        await pilot.press("T")
        await pilot.pause()
        hint = _said(app, "warning")[-1]
        assert "(tab twice moves there)" in hint, hint
        await pilot.press("tab")
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        assert "(tab moves there)" in _said(app, "warning")[-1]
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is peers  # as the hints said


async def test_an_accept_whose_confirmation_cannot_reach_the_share_folder_says_so(demo_home, cli, tmp_path):
    """As `remem share accept` says it: accepted here, the confirmation written at a later sync."""
    from remem.engine.share_sign import identity

    folder = tmp_path / "share"
    folder.mkdir()
    assert cli("config", "set", "share.folder", str(folder)).exit_code == 0
    origin = identity().origin
    (folder / origin).symlink_to(tmp_path)  # a link where our own folder goes: refused, never followed
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _on_candidate(pilot, "L3")
        await pilot.press("a")
        await acted(pilot)
        assert "accepted L3" in _said(app)
        assert any(m.startswith("accepted here, but your confirmation of it could not be written")
                   for m in _said(app, "warning")), _said(app)
    assert _status("L3") == "active"


async def test_the_folder_an_accept_asks_for_is_asked_again_when_it_cannot_be_taken(demo_home, tmp_path):
    """A folder that is not there, or an accept that fails (the memory busy): the dialog again,
    holding what was typed, to mend it."""
    with Store() as store:
        lessons.add_lesson(store, "Run the billing migrations before the tests.", "correction", lesson_id="W1",
                           status="candidate", origin="b7e1c0ffee00aa11", cwd="billing")
    app = new_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _on_candidate(pilot, "W1")
        await pilot.press("a")
        await pilot.pause()
        typo = str(tmp_path / "dev" / "biling")
        app.screen.query_one("#answer").value = typo
        await pilot.press("enter")
        await acted(pilot)
        assert type(app.screen).__name__ == "AskValue"
        assert app.screen.query_one("#answer").value == typo
    assert _status("W1") == "candidate"
