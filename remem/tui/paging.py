"""Paging for a pane whose table would be long: one page of rows at a time, read from the
engine with LIMIT/OFFSET (DESIGN: lists are paged, never loaded whole).

`n` / `p` turn the page, and so do pagedown / pageup on the page's table; where there is no
page to turn (the last page, a list the pane cannot page now: Episodes' search results) they
scroll the focused table as usual. With the focus on something else that scrolls (a row's
detail), they scroll that, a page at a time, and leave the list's page alone. Episodes, Lessons
and Shared page this way.
"""

from __future__ import annotations

from typing import Any, Callable

from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.widget import Widget
from textual.widgets import DataTable

from remem.tui.widgets.pane import Pane

PAGE_SIZE = 50


def paging_bindings(*, show: bool = False) -> list[Binding]:
    """The paging keys; show: n and p in the footer too."""
    return [
        Binding("n", "next_page", "Next page", show=show),
        Binding("p", "prev_page", "Prev page", show=show),
        # The focused table would scroll on these itself; here they turn the page, and scroll
        # the table where there is no page to turn.
        Binding("pagedown", "page_down", "Next page", show=False, priority=True),
        Binding("pageup", "page_up", "Prev page", show=False, priority=True),
    ]


class PagedPane(Pane):
    """A pane with one paged table (`paged_table`, a selector). Subclasses read a page with
    `load_page` in their reload(); `first_page()` before a reload that changes what is listed
    (a filter, a sort)."""

    BINDINGS = paging_bindings()
    page_size = PAGE_SIZE
    paged_table = "DataTable"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.page_start = 0
        self.total = 0
        self.stepped_back = False  # the last load_page showed the page before: the list shrank under it

    def can_page(self) -> bool:
        """Whether the list shown is paged now (a pane showing search results may say no)."""
        return True

    def first_page(self) -> None:
        self.page_start = 0
        self.new_list = True

    def load_page(self, fetch: Callable[[int, int], tuple[list[Any], int]]) -> list[Any]:
        """The rows of the page, from fetch(limit, offset) -> (rows, how many in all). When the
        list shrank under the page (a veto here, a delete elsewhere), its last page, whose last
        row the cursor goes to (keep_cursor): the row now nearest the one that went."""
        rows, self.total = fetch(self.page_size, self.page_start)
        self.stepped_back = not rows and bool(self.total) and self.page_start >= self.total
        if self.stepped_back:
            self.page_start = (self.total - 1) // self.page_size * self.page_size
            rows, self.total = fetch(self.page_size, self.page_start)
        return rows

    def keep_cursor(self, table: DataTable, key: str | None, place: int | None = None) -> None:
        """Pane.keep_cursor; when the page shown went and the one before it is shown instead
        (load_page), the row gone is past that page's end: the cursor goes to its last row."""
        if self.stepped_back and place is not None and table is self._table():
            place = table.row_count - 1
        self.stepped_back = False
        super().keep_cursor(table, key, place)

    def paged(self) -> bool:
        """Whether the list is longer than a page."""
        return self.total > self.page_size

    def page_span(self) -> str:
        """"51-100 of 2,055": where the page is in the list."""
        last = min(self.page_start + self.page_size, self.total)
        return f"{self.page_start + 1 if self.total else 0}-{last} of {self.total:,}"

    def _table(self) -> DataTable:
        return self.query_one(self.paged_table, DataTable)

    def _can_turn(self, forward: bool) -> bool:
        if not self.can_page():
            return False
        return self.page_start + self.page_size < self.total if forward else self.page_start > 0

    def action_next_page(self) -> None:
        if self._can_turn(True):
            self.page_start += self.page_size
            self.new_list = True
            self.safe_reload()

    def action_prev_page(self) -> None:
        if self._can_turn(False):
            self.page_start = max(0, self.page_start - self.page_size)
            self.new_list = True
            self.safe_reload()

    def _focused_scroller(self) -> Widget:
        """What pagedown / pageup act on: the pane's table that has the focus, or another
        widget of the pane that scrolls and has it (a row's detail); else the paged table."""
        focused = self.app.focused
        if focused is None or focused is self or self not in focused.ancestors:
            return self._table()
        if isinstance(focused, (DataTable, ScrollableContainer)):
            return focused
        return self._table()  # the search box, a filter: the keys turn the list's page

    def action_page_down(self) -> None:
        target = self._focused_scroller()
        if target is self._table() and self._can_turn(True):
            self.action_next_page()
        elif isinstance(target, DataTable):
            target.action_page_down()
        else:
            target.scroll_page_down()

    def action_page_up(self) -> None:
        target = self._focused_scroller()
        if target is self._table() and self._can_turn(False):
            self.action_prev_page()
        elif isinstance(target, DataTable):
            target.action_page_up()
        else:
            target.scroll_page_up()
