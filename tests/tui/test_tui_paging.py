"""A big memory in the TUI: Episodes, Lessons and Shared page through PagedPane (one paging logic:
n/p, pagedown/pageup, the last page when the list shrank under it, a row redrawn in place), each
asks the engine for one page (Shared: limit/offset and a count), the keys dialog says so, and a
tab reads the store only when first shown (the Overview's measures in a thread), so the first
paint reads the Overview alone."""

from __future__ import annotations

import pytest

from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app, screen_text, settle

pytestmark = pytest.mark.anyio

OWN_ORIGIN = "b7e1c0ffee00aa11"  # the demo store's peer


def _status(app, selector: str = "#episode-status") -> str:
    return str(app.query_one(selector).render())


def _add_episodes(n: int) -> list[str]:
    """n notes older than the demo's ten, newest first (the table's default sort)."""
    ids = [f"bulk{i:03d}" for i in range(n)]
    with Store() as store:
        store.put_episodes([{"id": eid, "kind": "note", "title": f"bulk note {i}", "gist": f"bulk note {i}",
                             "at": f"2026-10-01T{23 - i // 60:02d}:{59 - i % 60:02d}:00+00:00"}
                            for i, eid in enumerate(ids)])
    return ids


def _page_ids(app) -> list[str]:
    return [str(key.value) for key in app.query_one("#episode-table").rows]


# --------------------------------------------------------------------------- Episodes' paging

def test_the_episodes_pane_pages_with_the_one_paging_logic():
    """Episodes had its own copy of n/p, pagedown/pageup and the jump to the last page."""
    from remem.tui.paging import PagedPane
    from remem.tui.screens.episodes import EpisodesPane

    assert issubclass(EpisodesPane, PagedPane)
    for name in ("action_next_page", "action_prev_page", "action_page_down", "action_page_up", "load_page"):
        assert getattr(EpisodesPane, name) is getattr(PagedPane, name), name


async def test_n_and_p_turn_the_episodes_pages(demo_home):
    bulk = _add_episodes(120)  # with the demo's ten: 130, three pages
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#episode-table")
        assert table.row_count == 50 and _status(app).startswith("1-50 of 130 · sorted by when ↓ · n/p page")
        await pilot.press("n")
        await pilot.pause()
        assert _page_ids(app) == bulk[40:90] and _status(app).startswith("51-100 of 130")
        await pilot.press("n")
        await pilot.pause()
        assert _page_ids(app) == bulk[90:] and _status(app).startswith("101-130 of 130")
        await pilot.press("n")  # the last page: nothing to turn
        await pilot.pause()
        assert _status(app).startswith("101-130 of 130")
        await pilot.press("p")
        await pilot.pause()
        assert _page_ids(app) == bulk[40:90] and _status(app).startswith("51-100 of 130")
        await pilot.press("p", "p")  # the first page, and nothing before it
        await pilot.pause()
        assert _status(app).startswith("1-50 of 130") and _page_ids(app)[:10] == [f"e{i:02d}" for i in range(1, 11)]
        # A sort starts at the first page.
        await pilot.press("n", "s")
        await pilot.pause()
        assert _status(app).startswith("1-50 of 130 · sorted by when ↑")


async def test_the_episodes_page_jumps_to_the_last_page_when_the_list_shrank_under_it(demo_home):
    from remem.engine import lifecycle

    bulk = _add_episodes(120)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2", "n", "n")
        await pilot.pause()
        assert _status(app).startswith("101-130 of 130")
        with Store() as store:  # another process deletes 40 of them
            for memory_id in bulk[:40]:
                lifecycle.forget(store, memory_id, hard=True)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert _status(app).startswith("51-90 of 90") and _page_ids(app) == bulk[80:]
        # An archive of the last page's only row: the page before it.
        with Store() as store:
            for memory_id in bulk[80:119]:
                lifecycle.forget(store, memory_id, hard=True)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert _status(app).startswith("51-51 of 51") and _page_ids(app) == [bulk[119]]
        await pilot.press("a")
        await acted(pilot)
        assert _status(app).startswith("1-50 of 50") and _page_ids(app)[0] == "e01"


async def test_search_results_are_not_paged_and_escape_goes_back_to_the_pages(demo_home):
    _add_episodes(120)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2", "n")
        await pilot.pause()
        await pilot.press("slash", *"which installer", "enter")
        await acted(pilot)
        pane = app.query_one("#episodes-pane")
        assert "results for “which installer”" in _status(app) and pane.hits
        shown = _page_ids(app)
        await pilot.press("n")  # search results are one list: n turns nothing
        await pilot.pause()
        assert _page_ids(app) == shown and "results for" in _status(app) and pane.page_start == 0
        await pilot.press("escape")
        await pilot.pause()
        assert _status(app).startswith("1-50 of 130") and not pane.hits


# --------------------------------------------------------------------------- Lessons' paging

def _add_lessons(n: int, **kw) -> list[str]:
    """n lessons weaker than the demo's three (they come after them), strongest first."""
    with Store() as store:
        return [add_lesson(store, f"Paged lesson {i}: use tool{i}.", "correction", sources=[f"p{i}"],
                           strength=0.5 - i / 1000, **kw)["id"] for i in range(n)]


async def test_the_lessons_tab_is_paged(demo_home):
    """It held every lesson (2,055 rows, each veto read them all again: 0.54 s)."""
    ids = _add_lessons(120)  # weaker than the demo's three: they come after them
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one("#lesson-table")
        assert table.row_count == 50
        assert _status(app, "#lesson-status-line").startswith("1-50 of 123 lessons · n/p page · e edit")
        await pilot.press("n")
        await pilot.pause()
        assert table.row_count == 50 and str(table.get_row(ids[47])[4]).startswith("Paged lesson 47")
        assert _status(app, "#lesson-status-line").startswith("51-100 of 123 lessons")
        await pilot.press("pagedown")
        await pilot.pause()
        assert table.row_count == 23 and _status(app, "#lesson-status-line").startswith("101-123 of 123")
        await pilot.press("pagedown")  # no page to turn: the table scrolls
        await pilot.pause()
        assert table.cursor_row > 0 and _status(app, "#lesson-status-line").startswith("101-123")
        await pilot.press("p", "p")
        await pilot.pause()
        assert _status(app, "#lesson-status-line").startswith("1-50 of 123")
        # A filter starts at its first page.
        await pilot.press("n")
        await pilot.pause()
        app.query_one("#lesson-status").value = "candidate"
        await pilot.pause()
        assert table.row_count == 1 and _status(app, "#lesson-status-line").startswith("1 lessons · e edit")


async def test_a_veto_redraws_its_row_and_reads_no_page(demo_home, monkeypatch):
    from remem.engine import browse

    _add_lessons(60)
    pages = []
    real = browse.page_lessons
    monkeypatch.setattr(browse, "page_lessons", lambda *a, **k: pages.append(k) or real(*a, **k))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one("#lesson-table")
        table.move_cursor(row=table.get_row_index("L2"))
        await pilot.pause()
        read = len(pages)
        await pilot.press("v")
        await acted(pilot)
        assert len(pages) == read  # the row alone was drawn again
        assert str(table.get_row("L2")[1]) == "vetoed" and table.row_count == 50
        assert "vetoed" in screen_text(app)
        await pilot.press("v")  # restore
        await acted(pilot)
        assert len(pages) == read and str(table.get_row("L2")[1]) == "active"
        with Store() as store:
            assert get_lesson(store, "L2")["status"] == "active"
        # Filtered to active lessons, a vetoed one leaves the page: the page is read again.
        app.query_one("#lesson-status").value = "active"
        await pilot.pause()
        table.move_cursor(row=table.get_row_index("L2"))
        await pilot.pause()
        read = len(pages)
        await pilot.press("v")
        await acted(pilot)
        assert len(pages) == read + 1 and "L2" not in [str(k.value) for k in table.rows]
        assert table.row_count == 50  # the next active lesson came up into the page


# --------------------------------------------------------------------------- read when first shown

async def test_the_episodes_tab_reads_the_store_only_when_first_shown(demo_home, monkeypatch):
    """It read its page (and the store's kinds) at mount, behind the Overview, and again
    when shown."""
    from remem.engine import browse

    calls: dict[str, int] = {"page_episodes": 0, "kinds_and_projects": 0}

    def spy(name):
        real = getattr(browse, name)

        def wrapped(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapped

    for name in calls:
        monkeypatch.setattr(browse, name, spy(name))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert calls == {"page_episodes": 0, "kinds_and_projects": 0}
        assert app.query_one("#episode-table").row_count == 0 and "episodes" in app.stale
        await pilot.press("2")
        await pilot.pause()
        assert calls == {"page_episodes": 1, "kinds_and_projects": 1}
        assert app.query_one("#episode-table").row_count == 10
        await pilot.press("1", "2")
        await pilot.pause()
        assert calls["page_episodes"] == 1  # read once, not at each show


async def test_the_episodes_tab_reads_at_mount_when_it_is_the_tab_shown(demo_home, monkeypatch):
    from remem.engine import browse

    pages = []
    real = browse.page_episodes
    monkeypatch.setattr(browse, "page_episodes", lambda *a, **k: pages.append(k) or real(*a, **k))
    app = new_app()
    app.stale.discard("episodes")  # as if it were the first tab: not waiting to be shown
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert len(pages) == 1 and app.query_one("#episode-table").row_count == 10


async def test_the_first_paint_reads_only_the_overview_and_measures_off_the_ui_thread(demo_home, monkeypatch):
    """Every pane read the store at mount: the Overview's measures (most of a second at
    100,000 episodes), every lesson, every candidate. Now only the tab shown is read, and the
    measures are worked out in a thread once the rest is drawn."""
    import threading

    from remem.engine import browse, measure, share

    calls: dict[str, list[bool]] = {"measure": [], "lessons": [], "candidates": []}

    def spy(name, real):
        def wrapped(*args, **kwargs):
            calls[name].append(threading.current_thread() is threading.main_thread())
            return real(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(measure, "measure", spy("measure", measure.measure))
    monkeypatch.setattr(browse, "page_lessons", spy("lessons", getattr(browse, "page_lessons", None)), raising=False)
    monkeypatch.setattr(share, "candidates", spy("candidates", share.candidates))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if calls["measure"]:
                break
        assert calls["measure"] == [False]  # once, in a thread
        assert "Repeat-yourself" in str(app.query_one("#overview-measure").render())
        assert calls["lessons"] == [] and calls["candidates"] == []
        assert app.query_one("#lesson-table").row_count == 0
        assert app.query_one("#candidate-table").row_count == 0
        assert app.query_one("#sleep-history").row_count == 0
        assert app.stale == {"episodes", "lessons", "sleep", "shared"}
        await pilot.press("3")
        await pilot.pause()
        assert len(calls["lessons"]) == 1 and app.query_one("#lesson-table").row_count == 3
        await pilot.press("5")
        await pilot.pause()
        assert len(calls["candidates"]) == 1 and app.query_one("#candidate-table").row_count == 1
        await pilot.press("3", "5")
        await pilot.pause()
        assert len(calls["lessons"]) == 1 and len(calls["candidates"]) == 1  # read once, not at each show
        # ctrl+r reads the tab shown now, the others when they are next shown.
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert len(calls["candidates"]) == 2 and len(calls["lessons"]) == 1
        assert app.stale == {"overview", "episodes", "lessons", "sleep"}


async def test_an_action_from_the_palette_on_a_tab_not_yet_shown_acts_on_its_row(demo_home):
    """The palette shows the tab and runs the action at once: the tab is read first."""
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.run_pane_action("lessons", "veto")  # the strongest lesson, L1, is under the cursor
        await pilot.pause()
        with Store() as store:
            assert get_lesson(store, "L1")["status"] == "vetoed"


# --------------------------------------------------------------------------- the keys dialog

async def test_the_keys_dialog_says_n_p_page_episodes_lessons_and_shared(demo_home):
    from textual.widgets import Markdown

    from remem.tui.screens.modals import HelpScreen

    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        source = app.screen.query_one(Markdown).source
        assert "| n / p | Episodes, Lessons, Shared | next / previous page (pagedown / pageup too) |" in source


# --------------------------------------------------------------------------- Shared: a page from the engine

def _add_candidates(n: int) -> list[str]:
    """n lessons received from the demo's peer, waiting as candidates after the demo's L3."""
    return _add_lessons(n, status="candidate", origin=OWN_ORIGIN)


def test_candidates_gives_a_page_and_a_count_and_checks_only_that_page(demo_home, monkeypatch):
    from remem.engine import share, share_choices, share_safety

    ids = _add_candidates(60)
    with Store() as store:
        every = share.candidates(store)
        assert [c["id"] for c in every] == ["L3", *ids]  # the demo's candidate is the strongest
        assert share_choices.count_candidates(store) == 61 == len(every)
        assert share_choices.count_candidates(store, include_quarantined=False) == 61
        assert share.candidates(store, limit=50, offset=0) == every[:50]
        assert share.candidates(store, limit=50, offset=50) == every[50:]
        assert share.candidates(store, limit=50, offset=100) == []
        assert share.candidates(store, offset=58) == every[58:]
        with pytest.raises(ValueError):
            share.candidates(store, limit=-1)
        checked = []
        real = share_safety.incoming
        monkeypatch.setattr(share_safety, "incoming", lambda text: checked.append(text) or real(text))
        assert len(share.candidates(store, limit=5, offset=10)) == 5
        assert len(checked) == 5  # the checks were worked out for the page alone


async def test_the_shared_tab_asks_the_engine_for_one_page(demo_home, monkeypatch):
    from remem.engine import share_choices
    from remem.engine.lessons import update_lesson

    ids = _add_candidates(60)
    asked = []
    real = share_choices.candidates

    def spy(*args, **kwargs):
        rows = real(*args, **kwargs)
        asked.append((kwargs.get("limit"), kwargs.get("offset"), len(rows)))
        return rows

    app = new_app()
    # The spy sits where the pane looks the engine up (app.engine), not on a module attribute
    # that another test in the same process may have imported or swapped meanwhile.
    real_engine = app.engine

    class ShareWithSpy:
        candidates = staticmethod(spy)

        def __getattr__(self, name: str):
            return getattr(real_engine("share"), name)

    monkeypatch.setattr(app, "engine", lambda name: ShareWithSpy() if name == "share" else real_engine(name))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        table = app.query_one("#candidate-table")
        await settle(pilot, lambda: table.row_count == 50)
        assert asked == [(50, 0, 50)] and table.row_count == 50
        assert _status(app, "#shared-status").startswith("candidates 1-50 of 61 · n/p page")
        await pilot.press("n")
        await settle(pilot, lambda: table.row_count == 11)
        assert asked[-1] == (50, 50, 11) and table.row_count == 11
        assert _status(app, "#shared-status").startswith("candidates 51-61 of 61")
        assert [str(k.value) for k in table.rows] == ids[49:]
        # Rejected elsewhere, the list shrank under the page: its last page (here the first).
        with Store() as store:
            for lesson_id in ids[:20]:
                update_lesson(store, lesson_id, status="vetoed")
        await pilot.press("ctrl+r")
        await settle(pilot, lambda: table.row_count == 41)
        assert asked[-2:] == [(50, 50, 0), (50, 0, 41)]
        assert table.row_count == 41 and _status(app, "#shared-status").startswith("a accept")  # one page


async def test_the_shared_candidates_table_is_paged(demo_home):
    _add_candidates(60)
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        table = app.query_one("#candidate-table")
        assert table.row_count == 50
        assert _status(app, "#shared-status").startswith("candidates 1-50 of 61 · n/p page · a accept")
        await pilot.press("n")
        await pilot.pause()
        assert table.row_count == 11 and _status(app, "#shared-status").startswith("candidates 51-61 of 61")
        table.move_cursor(row=3)
        await pilot.pause()
        chosen = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        await pilot.press("x")  # reject the one under the cursor, on the second page
        await acted(pilot)
        with Store() as store:
            assert get_lesson(store, chosen)["status"] != "candidate"
        assert table.row_count == 10
