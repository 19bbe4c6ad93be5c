"""Keys that change what agents are primed with act on what the person sees, say what they did,
and ask first when there is no way back: `m` merges only active lessons and shows both before
merging, `T` trusts the origin of the candidate selected (or the peer selected), `R` shows the
lesson before revoking it, `t` says which tags it added, `f` shows the memory it would delete."""

from __future__ import annotations

import json
from typing import Any

import pytest

from remem.engine import lessons
from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.store import Store
from remem.errors import NotFound
from tests.tui.conftest import acted, new_app

pytestmark = pytest.mark.anyio

LAPTOP = "b7e1c0ffee00aa11"  # the demo store's peer, origin of its candidate L3
DESKTOP = "0000aaaa0000aaaa"


def _messages(app: Any) -> list[str]:
    """What the app said, less the "still working" notice: a write that waits over half a
    second says it, which a loaded machine makes happen at any write."""
    return [str(n.message) for n in app._notifications if not str(n.message).startswith("still working:")]


def _shown(app: Any) -> str:
    """What the dialog on top says: its question and the text it shows (as one line: the
    dialog wraps it)."""
    said = [str(app.screen.query_one(part).render()) for part in ("#question", "#text")]
    return " ".join(" ".join(said).split())


async def _select(pilot: Any, table_id: str, key: str) -> None:
    table = pilot.app.query_one(table_id)
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()


async def _answer(pilot: Any, text: str) -> None:
    pilot.app.screen.query_one("#answer").value = text
    await pilot.press("enter")
    await pilot.pause()


def _lesson_or_none(lid: str) -> dict[str, Any] | None:
    with Store() as store:
        return store.one("SELECT id, status, sources, strength FROM lessons WHERE id = ?", (lid,))


# --------------------------------------------------------------------------- m: merge

def _add_retired() -> None:
    with Store() as store:
        add_lesson(store, "Never force-push; use --force-with-lease.", "correction", lesson_id="V1", status="vetoed")
        add_lesson(store, "Deploy on Fridays.", "correction", lesson_id="R1", status="revoked")


def test_the_engine_refuses_a_merge_into_or_of_a_lesson_that_is_not_active(demo_home):
    _add_retired()
    with Store() as store:
        for theme, other, said in (("V1", "L1", "`remem lessons restore V1`"),
                                   ("L3", "L1", "`remem share accept L3`"),
                                   ("R1", "L1", "R1: it is revoked"),
                                   ("L1", "V1", "cannot merge V1: it is vetoed")):
            with pytest.raises(ValueError) as refused:
                lessons.merge_into(store, theme, other)
            assert said in str(refused.value) and "\n" not in str(refused.value)
        assert get_lesson(store, "L1")["status"] == "active"
        assert {get_lesson(store, lid)["status"] for lid in ("V1", "L3", "R1")} == {"vetoed", "candidate", "revoked"}


@pytest.mark.parametrize("selected, target, said", [
    ("L1", "V1", "cannot merge into V1: it is vetoed; restore it first"),
    ("L1", "L3", "cannot merge into L3: it is a received lesson not yet accepted (candidate); accept it first"),
    ("L1", "R1", "cannot merge into R1: it is revoked"),
    ("L3", "L1", "cannot merge L3: it is a received lesson not yet accepted"),
])
async def test_m_into_or_of_a_lesson_not_active_is_refused_and_keeps_the_active_one(demo_home, cli, selected,
                                                                                    target, said):
    """Merging the active L1 into a vetoed, candidate or revoked lesson made it disappear from
    priming and from `remem lessons list --status all`, with no confirmation and no undo."""
    _add_retired()
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        await _select(pilot, "#lesson-table", selected)
        await pilot.press("m")
        await pilot.pause()
        await _answer(pilot, target)
        await acted(pilot)
        assert type(app.screen).__name__ != "Confirm"  # nothing to confirm: it is refused at once
        errors = [str(n.message) for n in app._notifications if n.severity == "error"]
        assert len(errors) == 1 and said in errors[0], errors
    assert _lesson_or_none("L1")["status"] == "active" and _lesson_or_none(target) is not None
    # As JSON: the table's lesson column, narrower since it has a "from" column, wraps the text.
    listed = json.loads(cli("lessons", "list", "--status", "all", "--json").stdout)
    assert "Install packages with uv, not pip." in [lesson["text"] for lesson in listed]


async def test_m_shows_both_lessons_before_merging_and_cancel_changes_nothing(demo_home):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        await _select(pilot, "#lesson-table", "L2")
        await pilot.press("m")
        await pilot.pause()
        await _answer(pilot, "L1")
        assert type(app.screen).__name__ == "Confirm"
        shown = _shown(app)
        assert "Merge L2 into L1?" in shown
        assert "L2 (goes): Before running tests, install pyyaml" in shown
        assert "L1 (stays): Install packages with uv, not pip." in shown
        await pilot.press("escape")
        await acted(pilot)
        assert _lesson_or_none("L2") is not None  # cancelled: both still there
        await pilot.press("m")
        await pilot.pause()
        await _answer(pilot, "L1")
        await pilot.press("enter")  # the focus starts on Cancel: enter out of habit merges nothing
        await acted(pilot)
        assert _lesson_or_none("L2") is not None
        await pilot.press("m")
        await pilot.pause()
        await _answer(pilot, "L1")
        await pilot.click("#yes")
        await acted(pilot)
        assert "merged L2 into L1" in _messages(app)
    assert _lesson_or_none("L2") is None
    with Store() as store:
        assert get_lesson(store, "L2")["id"] == "L1"  # the merged-away id finds the lesson it joined


# --------------------------------------------------------------------------- T: trust

def _add_desktop_peer() -> None:
    """A second peer, seen first: the Peers table's first row, above the candidate's origin."""
    with Store() as store, store.write() as conn:
        conn.execute("INSERT INTO peers (origin, public_key, trusted, first_seen, label) VALUES "
                     "(?, 'BBBB', 0, '2026-11-17T00:00:00+00:00', 'desktop')", (DESKTOP,))


def _trusted() -> dict[str, int]:
    with Store() as store:
        return {r["origin"]: r["trusted"] for r in store.rows("SELECT origin, trusted FROM peers")}


async def test_t_on_a_candidate_trusts_its_origin_and_says_which_peer(demo_home):
    """T trusted the peer under the Peers table's cursor (its first row, another peer) while
    the candidate table had the focus, and the notification named no peer."""
    _add_desktop_peer()
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        assert app.focused is app.query_one("#candidate-table")
        assert app.query_one("#shared-pane").selected_key("#peer-table") == DESKTOP
        await _select(pilot, "#candidate-table", "L3")
        await pilot.press("T")
        await acted(pilot)
        assert _trusted() == {LAPTOP: 1, DESKTOP: 0}
        assert "trusted laptop (b7e1c0ff)" in _messages(app)
        app.clear_notifications()
        await pilot.press("T")
        await acted(pilot)
        assert _trusted() == {LAPTOP: 0, DESKTOP: 0}
        assert "untrusted laptop (b7e1c0ff)" in _messages(app)


async def test_t_in_the_peers_table_acts_on_that_peer_again_and_again(demo_home):
    """After a T the peers were read again with the cursor back on the first row: a second T
    changed another peer."""
    _add_desktop_peer()
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        peers = app.query_one("#peer-table")
        peers.focus()
        await _select(pilot, "#peer-table", LAPTOP)
        await pilot.press("T")
        await acted(pilot)
        assert _trusted() == {LAPTOP: 1, DESKTOP: 0}
        assert app.query_one("#shared-pane").selected_key("#peer-table") == LAPTOP
        await pilot.press("T")
        await acted(pilot)
        assert _trusted() == {LAPTOP: 0, DESKTOP: 0}
        assert _messages(app)[-2:] == ["trusted laptop (b7e1c0ff)", "untrusted laptop (b7e1c0ff)"]


# --------------------------------------------------------------------------- R: revoke

async def _revoking(pilot: Any, cli: Any, folder: Any) -> None:
    """The Shared tab with a sync folder, R pressed: the dialog asking which lesson."""
    folder.mkdir()
    assert cli("config", "set", "share.folder", str(folder)).exit_code == 0
    await pilot.press("5")
    await pilot.pause()
    await pilot.press("R")
    await pilot.pause()


async def test_revoke_of_someone_elses_lesson_is_refused_before_the_dialog(demo_home, cli, tmp_path):
    # With the engine's own line (share_choices.revoke_check, the check revoke() makes itself),
    # before the "cannot be undone" dialog opens.
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _revoking(pilot, cli, tmp_path / "sync")
        await _answer(pilot, "L3")  # the demo's candidate from the laptop
        assert type(app.screen).__name__ != "Confirm"
        said: list[Any] = [n for n in app._notifications if n.severity == "error"]
        assert len(said) == 1
        assert str(said[0].message).startswith("lesson L3 came from b7e1c0ffee00aa11; only its author can revoke it")
    with Store() as store:
        assert get_lesson(store, "L3")["status"] == "candidate"


async def test_r_shows_the_lesson_before_revoking_it_and_says_when_it_already_was(demo_home, cli, tmp_path):
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await _revoking(pilot, cli, tmp_path / "sync")
        await _answer(pilot, "L1")
        assert type(app.screen).__name__ == "Confirm"
        shown = _shown(app)
        assert "Revoke L1 everywhere?" in shown and "Install packages with uv, not pip." in shown
        await pilot.press("escape")
        await acted(pilot)
        assert _lesson_or_none("L1")["status"] == "active"
        await pilot.press("R")
        await pilot.pause()
        await _answer(pilot, "L1")
        await pilot.click("#yes")
        await acted(pilot)
        assert _lesson_or_none("L1")["status"] == "revoked"
        await pilot.press("R")
        await pilot.pause()
        await _answer(pilot, "L1")
        assert type(app.screen).__name__ != "Confirm"
        assert _messages(app)[-1] == "L1 is already revoked"


# --------------------------------------------------------------------------- t: tag

async def test_t_says_the_tags_it_stored_and_when_it_added_none(demo_home):
    """The tag dialog said "tagged <what was typed>" even when nothing was added, and echoed
    the typing ("Node") rather than what was stored ("node")."""
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        await _select(pilot, "#episode-table", "e06")
        for typed in ("Node, frontend", "node", " , "):
            await pilot.press("t")
            await pilot.pause()
            await _answer(pilot, typed)
            await acted(pilot)
        assert _messages(app) == ["tagged e06: frontend, node",
                                  "no tag added: e06 has frontend, node",
                                  "no tag added: e06 has frontend, node"]
    with Store() as store:
        assert store.tags_of("e06") == ["frontend", "node"]


# --------------------------------------------------------------------------- f: forget

async def test_f_shows_the_whole_memory_before_a_delete_for_good(demo_home):
    title = "the staging database is read-only on Fridays and every deploy script has to check for it first"
    with Store() as store:
        store.put_episodes([{"id": "long1", "kind": "note", "title": title,
                             "gist": "Check the read-only flag before deploying to staging.",
                             "at": "2099-01-01T00:00:00+00:00"}])
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        await _select(pilot, "#episode-table", "long1")
        await pilot.press("f")
        await pilot.pause()
        shown = _shown(app)
        assert title in shown and "Check the read-only flag before deploying to staging." in shown
        assert "cannot be undone" in str(app.screen.query_one(".hint").render())
        await pilot.click("#hard")
        await acted(pilot)
    with Store() as store, pytest.raises(NotFound):
        store.episode("long1")
