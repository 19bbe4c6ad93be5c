"""Wide characters (Chinese, Japanese, Korean, most emoji) take two terminal cells: a cut
measures cells, as the tables' columns do. Cut by characters, a received lesson in Chinese ran
past the screen's edge in 80 columns and lost the "(from laptop)" that says another memory
wrote it, and its table scrolled sideways."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from remem.engine import lessons
from remem.engine.store import Store
from remem.tui.widgets.format import cut, plain
from tests.tui.conftest import new_app, screen_text, settle

STRIPPED = "\x07\x08\x0b\x0c\x0d"  # control characters Textual drops (test_tui_text)
ANY_TEXT = st.text(alphabet=st.characters(blacklist_characters=STRIPPED, blacklist_categories=("Cs",)))
# Wide characters, with narrow ones, zero-width joiners, variation selectors and combining
# marks among them, so the awkward joins come up often.
WIDE_TEXT = st.lists(st.sampled_from(
    list("安装软件包时请使用而不是") + list("ａｂ한국어テスト") + ["👍", "👨\u200d👩\u200d👧", "☺\ufe0f", "e\u0301",
                                                     "\u200d", "\ufe0f", "a", " ", "…", "x y"])).map("".join)
CHINESE = "安装软件包时请使用uv而不是pip，否则依赖版本会和锁文件不一致并导致测试失败"
LAPTOP = "b7e1c0ffee00aa11"  # the demo store's peer, labelled "laptop"


def _as_shown(text: str) -> str:
    """A text as one line, as cut() shows it when it fits."""
    return " ".join(plain(text).plain.split())


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(ANY_TEXT, WIDE_TEXT), width=st.integers(min_value=1, max_value=120))
@example(text="\u200d\u200d\u2e80" + "0", width=2)  # joiners before a wide character: kept whole by chop_cells
def test_a_cut_never_takes_more_cells_than_its_width(text, width):
    short = cut(text, width)
    assert cell_len(short) <= width
    whole = _as_shown(text)
    if cell_len(whole) <= width:
        assert short == whole  # text that fits is kept as it is
    else:
        assert short.endswith("…") and whole.startswith(short[:-1])


@pytest.mark.parametrize("width", [1, 2, 3, 10, 11, 40])
def test_a_cut_never_splits_a_wide_character(width):
    short = cut(CHINESE, width)
    assert cell_len(short) <= width and CHINESE.startswith(short[:-1])
    assert cell_len(short) >= width - 1  # a wide character that does not fit leaves one cell at most


@pytest.mark.anyio
@pytest.mark.parametrize("label", ["laptop", "笔记本电脑"])  # a peer's label can be wide too
async def test_a_received_lesson_in_chinese_names_its_sender_at_80x24(demo_home, label):
    with Store() as store:
        lessons.add_lesson(store, CHINESE, "correction", lesson_id="LZH", status="candidate", origin=LAPTOP)
        store.conn.execute("UPDATE peers SET label = ? WHERE origin = ?", (label, LAPTOP))
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        table = app.query_one("#lesson-table")
        await settle(pilot, lambda: "LZH" in table.rows)
        await pilot.pause()
        row = [line for line in screen_text(app).splitlines() if "安装" in line]
        assert len(row) == 1 and row[0].rstrip().endswith(f"… (from {label})"), row
        assert table.virtual_size.width <= table.size.width  # no row scrolls sideways
