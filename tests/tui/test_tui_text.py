"""Stored text is shown as written, never read as markup: for any text, in every helper, and
through the real app (a "[" a cut left behind used to pair with a later "[b]…[/b]" and stop
the app with a MarkupError, even at startup)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from textual.content import Content

from remem.engine.store import Store
from remem.tui.widgets.format import cell, cut, lines, markup, plain
from tests.tui.conftest import screen_text

# Textual drops these control characters from whatever it shows; everything else is kept.
STRIPPED = "\x07\x08\x0b\x0c\x0d"
TEXT = st.text(alphabet=st.characters(blacklist_characters=STRIPPED, blacklist_categories=("Cs",)))
# Text made of the characters markup is made of, so the awkward cases come up often.
MARKUPISH = st.lists(st.sampled_from(list("[]/\\$@=bi #:.") + ["[b]", "[/b]", "[/]", "\\[", "$text"])).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(TEXT, MARKUPISH), width=st.integers(min_value=1, max_value=80))
def test_any_text_in_our_markup_parses_and_is_shown_as_written(text, width):
    shown = markup("[b]$text[/b] · [dim]$text[/dim]", text=text)
    assert shown.plain == f"{text} · {text}"
    short = cut(text, width)
    assert cell_len(short) <= width and "\n" not in short  # terminal cells, as the columns measure
    assert markup("[b]$short[/b][dim]x[/dim]", short=short).plain == f"{short}x"
    assert cell(text, width).plain == short
    assert plain(text).plain == text
    assert lines([plain(text), "[b]x[/b]", markup("$t[b]y[/b]", t=text)]).plain == f"{text}\nx\n{text}y"
    # and the whole of it renders (what Static.update and Label.update do with it)
    list(Content.from_markup(shown).render_segments())


@pytest.mark.parametrize("text", [
    "test_ttl_expiry[redis-cluster] - ConnectionError and more words after it",
    "on Windows or POSIX alike, split every path on [/\\\\] with re.split",
    "Use re [",
    "loop with arr[i and j",
    "C:\\dir\\",
    "ends in a backslash \\",
    "[b]bold[/b] [/] [@click=app.quit]q[/] $text ${text}",
])
def test_the_reported_texts(text):
    for width in (5, 10, 20, 40, 60):
        assert markup("[b]$t[/b]", t=cut(text, width)).plain == cut(text, width)
    assert markup("$t[b]x[/b]", t=text).plain == text + "x"


def test_control_characters_textual_drops_do_not_move_the_styles():
    shown = markup("[b]$t[/b]x", t="a\rb\x07")
    assert shown.plain == "abx" and [(span.start, span.end) for span in shown.spans] == [(0, 2)]


FAILED = "pytest failed: FAILED tests/test_cache.py::test_ttl_expiry[redis-cluster] - ConnectionError"
AWKWARD_LESSON = "`FAILED tests/test_cache.py::test_ttl_expiry[redis-cluster] -…` failed here; find out why."
SPLIT = "on Windows or POSIX alike, split every path on [/\\\\] with re.split"
ENDS_IN_BACKSLASH = "the folder is C:\\dir\\"
QUERY = "how to split Windows, POSIX paths on [/\\]"


def _awkward_store() -> None:
    from remem.engine import lessons

    with Store() as store:
        store.put_episodes([
            {"id": "fail1", "kind": "error", "title": FAILED, "gist": FAILED, "at": "2026-11-17T00:00:00+00:00"},
            {"id": "odd1", "kind": "error", "title": SPLIT, "gist": SPLIT, "at": "2099-01-02T00:00:00+00:00"},
            {"id": "odd2", "kind": "note", "title": ENDS_IN_BACKSLASH, "gist": ENDS_IN_BACKSLASH,
             "detail": "Use re [" + " and more" * 100, "at": "2099-01-01T00:00:00+00:00"},
        ])
        lessons.add_lesson(store, AWKWARD_LESSON, "error", sources=["fail1"], lesson_id="LX", strength=3.0)
        lessons.add_lesson(store, "Use re [", "correction", lesson_id="LY", strength=2.5)
        with store.write() as conn:
            conn.execute("INSERT INTO predictions (id, lesson_id, text, made) VALUES ('PX', 'LX', ?, "
                         "'2026-11-18T20:00:00+00:00')",
                         ("Within 14 days this error will come again: " + AWKWARD_LESSON,))


@pytest.mark.anyio
async def test_the_app_shows_brackets_cut_anywhere_without_stopping(demo_home):
    """The reported cases: a lesson and its prediction with a "[" (the app stopped at startup),
    the forget dialog's title cut after "[/", a search for "[/\\]", a title ending in "\\"."""
    from remem.tui.app import RememApp

    _awkward_store()
    app = RememApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one("#lesson-table")
        for lid, text in (("LX", AWKWARD_LESSON), ("LY", "Use re [")):
            table.move_cursor(row=table.get_row_index(lid))
            await pilot.pause()
            detail = str(app.query_one("#lesson-detail-text").render())
            assert detail.startswith(text + "\n")
        table.move_cursor(row=table.get_row_index("LX"))
        await pilot.pause()
        detail = str(app.query_one("#lesson-detail-text").render())
        assert f"error: {cut(FAILED, 60)}" in detail and cut(FAILED, 60).endswith("expiry[…")
        await pilot.press("2")
        await pilot.pause()
        episodes = app.query_one("#episode-table")
        for eid, title in (("odd1", SPLIT), ("odd2", ENDS_IN_BACKSLASH)):
            episodes.move_cursor(row=episodes.get_row_index(eid))
            await pilot.pause()
            await pilot.press("f")
            await pilot.pause()
            assert str(app.screen.query_one("#question").render()) == f"Forget “{cut(title, 50)}”?"
            await pilot.press("escape")
            await pilot.pause()
        detail = str(app.query_one("#episode-detail-text").render())
        assert detail.startswith(ENDS_IN_BACKSLASH + "\n") and "Use re [ and more" in detail
        await pilot.press("slash")
        await pilot.press(*QUERY)
        await pilot.press("enter")
        await pilot.pause()
        assert f"“{cut(QUERY, 40)}”" in str(app.query_one("#episode-status").render())
        assert app.is_running
    # the lesson that stopped the app at startup, on screen
    async with RememApp().run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        assert "test_ttl_expiry[redis-cluster]" in screen_text(pilot.app)
