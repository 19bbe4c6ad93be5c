"""Tables laid out by their pane, each column as wide as its widest cell, so a table is drawn
right from its first frame. Left to DataTable, columns are measured when the table is next
idle: a modal opened before that (a key pressed just after the tab) sits over a table whose
columns are still as narrow as their headers, and the screen under a modal is not redrawn."""

from __future__ import annotations

from typing import Any, Hashable, Sequence

from rich.cells import cell_len
from textual.widgets import DataTable

from remem.tui.widgets.format import cell


def shown_width(text: object) -> int:
    """The terminal cells a table cell's text takes as shown (a wide character takes two)."""
    return cell_len(cell(text).plain)


def widest(labels: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[int]:
    """Each column's width: its label's or its widest cell's, whichever is wider."""
    return [max([len(label), *(shown_width(texts[i]) for texts in rows)]) for i, label in enumerate(labels)]


def room_left(table: DataTable, others: Sequence[int], columns: int, least: int, unknown: int) -> int:
    """The width the table leaves one column beside `others` (each of the `columns` with a cell
    of padding each side, and room kept for the scrollbar), at least `least`; `unknown` before
    the table has a width."""
    if not table.size.width:
        return unknown
    room = (table.size.width - table.styles.scrollbar_size_vertical - sum(others)
            - 2 * table.cell_padding * columns)
    return max(least, room)


def fill(table: DataTable, labels: Sequence[str], rows: Sequence[tuple[Hashable, Sequence[Any]]]) -> list[int]:
    """The table emptied and filled with `rows` (key, cell texts), its columns as wide as
    their widest cell; the widths, for cells drawn again later (fits)."""
    widths = widest(labels, [texts for _, texts in rows])
    table.clear(columns=True)
    for label, width in zip(labels, widths):
        table.add_column(label, width=width, key=label)
    for key, texts in rows:
        table.add_row(*(cell(text) for text in texts), key=key)
    return widths


def fits(widths: Sequence[int], texts: Sequence[Any]) -> bool:
    """Whether a row's new cell texts fit the columns as laid out."""
    return all(shown_width(text) <= width for text, width in zip(texts, widths))


class FitsItsWidth:
    """A pane whose table is laid out for the table's width (`fitted_table`): laid out again,
    by the pane's `refit`, when that width changes."""

    fitted_table = "DataTable"
    fitted_to = -1  # the table width the columns were last laid out for

    def on_resize(self) -> None:
        self.call_after_refresh(self._refit)  # type: ignore[attr-defined]

    def _refit(self) -> None:
        if self.query_one(self.fitted_table, DataTable).size.width != self.fitted_to:  # type: ignore[attr-defined]
            self.guarded(self.refit)  # type: ignore[attr-defined]  # Pane.guarded: a failure said, not raised

    def refit(self) -> None:
        raise NotImplementedError
