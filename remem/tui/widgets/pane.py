"""What every tab pane shares: the key of a table's selected row, and running an action."""

from __future__ import annotations

from typing import Any, Callable

from textual.containers import Vertical
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist


class Pane(Vertical):
    """A tab's content. Subclasses implement reload()."""

    def reload(self) -> None:  # pragma: no cover - every pane overrides it
        raise NotImplementedError

    def selected_key(self, table_id: str | None = None) -> str | None:
        """The row key under the cursor of a table (the pane's first table by default)."""
        table = self.query_one(table_id, DataTable) if table_id else self.query_one(DataTable)
        if not table.row_count:
            return None
        try:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        except CellDoesNotExist:  # the cursor sits past the last row while a table refills
            return None

    def keep_cursor(self, table: DataTable, key: str | None) -> None:
        """Put the cursor back on the row it was on before a reload, if that row is still there."""
        if key is None:
            return
        try:
            table.move_cursor(row=table.get_row_index(key))
        except RowDoesNotExist:  # the row is gone (archived, deleted, filtered out)
            pass

    def run_action(self, message: str, action: Callable[[], Any]) -> None:
        """Run an engine call; show its refusal as a notification, never crash; then reload,
        and have every other tab read the database again when it is next shown (a delete here
        changes the Overview's counts, an accept in Shared the Lessons' statuses)."""
        try:
            action()
        except Exception as exc:
            self.app.notify(str(exc), severity="error", markup=False)
            return
        self.app.notify(message, markup=False)  # it may hold what was typed: a tag, an id
        self.reload()
        self.app.others_changed(self)

    def still_there(self, row_id: str, fetch: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """The selected row as it is now, or None (said, and the view reloaded) when another
        process deleted it or merged it into another since the view was drawn: an action
        must not crash on it, nor act on a different row than the one shown."""
        try:
            row = fetch()
        except Exception as exc:
            self.app.notify(f"{exc}; the view is reloaded", severity="warning", markup=False)
            self.reload()
            return None
        if row.get("id") != row_id:
            self.app.notify(f"{row_id} was merged into {row.get('id')} meanwhile; the view is reloaded",
                            severity="warning", markup=False)
            self.reload()
            return None
        return row

