"""What every tab pane shares: the key of a table's selected row, and running an action (an
engine write, in a thread: the UI never waits for the memory)."""

from __future__ import annotations

import threading
from typing import Any, Callable

from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist

from remem.engine.store import Store
from remem.errors import NotFound
from remem.tui.widgets.format import plain


class ChangedMeanwhile(ValueError):
    """A write refused in its thread because another process changed its row since the view
    was drawn (a lesson merged into another, a candidate accepted elsewhere): said as a
    warning, and the view is read again."""


def failure_line(exc: BaseException, component: str) -> str:
    """What an engine write (or a sleep run) that raised in its thread says, in one line, and
    logged to remem's log: an expected refusal (the engine's own line naming the fix) or
    SQLite's (the memory is busy, read-only, full) as that line; anything else, a bug, with its
    traceback, and the line says where that went."""
    from remem.errors import RememError, database_problem
    from remem.log import log, log_exception

    said = database_problem(exc)
    if said is None and isinstance(exc, (RememError, ValueError)):
        said = str(exc).strip() or type(exc).__name__
    if said is None:
        where = log_exception(component, exc)
        said = f"unexpected error: {type(exc).__name__}: {exc} (traceback in {where})"
    else:
        log(component, said)
    return " ".join(said.split())  # one line, however the exception spelled it


class Pane(Vertical):
    """A tab's content. Subclasses implement reload()."""

    new_list = False  # the next reload shows another list: its cursor starts at the top (cursor_place)
    # The last read failure (read_failed): the row whose detail it was (None: the list's
    # reload), and its line, said once.
    last_failure: tuple[str | None, str] | None = None
    detail_text: str | None = None  # the selector of the Static show_detail writes the detail into

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

    def selected_for_write(self) -> str | None:
        """The selected row's key when a write may start now, else None. Checked before a
        key's dialog opens, so what is typed there is never thrown away (app.write_refused)."""
        if self.app.write_refused():
            return None
        return self.selected_key()

    def cursor_place(self, table: DataTable) -> int | None:
        """Where a table's cursor is, read before a reload for keep_cursor; None when that
        reload shows another list (a page turned, a filter or a sort changed: new_list), whose
        cursor starts at the top."""
        if self.new_list:
            self.new_list = False
            return None
        return table.cursor_row

    def keep_cursor(self, table: DataTable, key: str | None, place: int | None = None) -> None:
        """Put the cursor back on the row it was on before a reload; when that row is gone
        (archived, deleted, rejected, filtered out), on the row now in its place (the one that
        followed it, or the last): a key pressed again acts on a row next to the one the person
        picked, never on the first row of the page. `place`: the cursor's row before the
        reload (cursor_place)."""
        if key is None:
            return
        try:
            table.move_cursor(row=table.get_row_index(key))
        except RowDoesNotExist:  # table.clear() put the cursor back on the first row
            if place is not None and table.row_count:
                table.move_cursor(row=min(place, table.row_count - 1))

    def guarded(self, read: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        """read(*args, **kwargs), a failure said in one line instead of stopping the app: a
        corrupt row, a database that cannot be read. Every key and event that reads the store
        again goes through here (safe_reload, safe_detail). Whether it worked."""
        try:
            read(*args, **kwargs)
        except Exception as exc:
            self.read_failed(exc)
            return False
        return True

    def safe_reload(self, **kwargs: Any) -> bool:
        """reload(), guarded: whether it worked. Once it works, a failure of the list's reload
        is said again when it comes back (a row's detail that failed within it is not: the
        cursor's next move onto that row would say it twice)."""
        worked = self.guarded(self.reload, **kwargs)
        if worked and self.last_failure is not None and self.last_failure[0] is None:
            self.last_failure = None
        return worked

    def safe_detail(self, key: str | None) -> None:
        """show_detail(key), guarded: a row that cannot be shown leaves the others listed, and
        its detail says why (never the detail of the row shown before it, as if it were this
        one's). Once a detail is shown, a failure is said again when it comes back (the cursor
        back on a bad row)."""
        try:
            self.show_detail(key)
        except Exception as exc:
            line = self.read_failed(exc, key)
            if self.detail_text:
                self.query_one(self.detail_text, Static).update(plain(f"cannot show this row: {line}"))
            return
        self.last_failure = None

    def show_detail(self, key: str | None) -> None:  # pragma: no cover - panes with a detail override it
        pass

    def read_failed(self, exc: BaseException, key: str | None = None) -> str:
        """A read failed (the list's, or the detail of row `key`): said in one line, logged
        (failure_line), naming the tab; that line. The same line again before a read works
        (the cursor back on the same bad row, every row of a damaged database) is not said
        twice in a row."""
        line = failure_line(exc, "tui.read")
        said_already = self.last_failure is not None and self.last_failure[1] == line
        self.last_failure = (key, line)
        if not said_already:
            tab = (self.id or "").removesuffix("-pane")
            self.app.notify(f"{tab}: {line}", severity="error", markup=False)
        return line

    def run_action(self, message: str | Callable[[Any], str], action: Callable[[Any], Any],
                   done: Callable[[Any], None] | None = None,
                   failed: Callable[[BaseException], None] | None = None) -> None:
        """Run an engine write, action(store), in a thread of its own on a connection of its own:
        while another remem process holds the memory the write waits up to the store's busy
        timeout, and the UI must not wait with it (the header says it is working, then that it
        waits for the memory; `q` quits at once). One write at a time, a sleep run included: a
        key pressed meanwhile is told to wait (a key that asks something first is told before
        its dialog opens: app.write_refused). When it is done, on the UI thread: its refusal is
        shown as a notification, never a crash (and logged); or done(result), the message (or
        message(result)), a reload, and the other tabs read the database again: the one shown
        now, every other when it is next shown (a delete here changes the Overview's counts, an
        accept in Shared the Lessons' statuses). When it failed, after its line: the view read
        again if its row is gone or changed elsewhere (NotFound, ChangedMeanwhile), and
        failed(exception), which gives back what the person typed for it (a dialog opened
        again with it), so a write that could not be made loses nothing."""
        if self.app.write_refused():
            if failed is not None:  # what was typed for it is not thrown away either
                self.guarded(failed, RuntimeError("another write is running"))
            return
        path = self.app.store.path
        self.app.begin_work()

        def tell(message: Message) -> None:
            try:
                self.post_message(message)
            except RuntimeError:  # the app closed meanwhile: nobody to tell
                pass

        def work() -> None:
            try:
                # Told when another process holds the memory and this write waits for it.
                with Store(path, on_wait=lambda held: tell(Pane.MemoryHeld(held))) as store:
                    outcome = Pane.ActionDone(message, done, result=action(store), failed=failed)
            except Exception as exc:
                outcome = Pane.ActionDone(message, done, error=failure_line(exc, "tui.write"), exc=exc,
                                          failed=failed)
            tell(outcome)

        # A daemon thread: quitting never waits for a write stuck behind another process's lock
        # (SQLite rolls back what it had not committed).
        threading.Thread(target=work, name="remem-tui-write", daemon=True).start()

    class ActionDone(Message, bubble=False):
        """An engine write run by run_action finished: its result, or its refusal."""

        def __init__(self, message: str | Callable[[Any], str], done: Callable[[Any], None] | None, *,
                     result: Any = None, error: str | None = None, exc: BaseException | None = None,
                     failed: Callable[[BaseException], None] | None = None) -> None:
            super().__init__()
            self.said, self.then, self.result, self.error = message, done, result, error
            self.exc, self.failed = exc, failed

    class MemoryHeld(Message, bubble=False):
        """The write in its thread found the memory held by another connection and waits for
        it (held), or has it now (not held)."""

        def __init__(self, held: bool) -> None:
            super().__init__()
            self.held = held

    def on_pane_memory_held(self, event: MemoryHeld) -> None:
        self.app.memory_held(event.held)

    def on_pane_action_done(self, event: ActionDone) -> None:
        self.app.end_work()
        if event.error is not None:
            # Its row gone, or not what the view shows: the view shows it as it is now.
            stale = isinstance(event.exc, (NotFound, ChangedMeanwhile))
            self.app.notify(event.error, markup=False,
                            severity="warning" if isinstance(event.exc, ChangedMeanwhile) else "error")
            if stale:
                self.safe_reload()
            if event.failed is not None and event.exc is not None:
                self.guarded(event.failed, event.exc)
            return
        if event.then:  # the write is done: whatever this says, the view is read again
            self.guarded(event.then, event.result)
        said = event.said(event.result) if callable(event.said) else event.said
        if said:
            self.app.notify(said, markup=False)  # it may hold what was typed: a tag, an id
        self.safe_reload()
        self.app.others_changed(self)

    def still_there(self, row_id: str, fetch: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """The selected row as it is now, or None (said, and the view reloaded) when another
        process deleted it or merged it into another since the view was drawn: an action
        must not crash on it, nor act on a different row than the one shown."""
        try:
            row = fetch()
        except Exception as exc:
            self.app.notify(f"{exc}; the view is reloaded", severity="warning", markup=False)
            self.safe_reload()
            return None
        if row.get("id") != row_id:
            self.app.notify(f"{row_id} was merged into {row.get('id')} meanwhile; the view is reloaded",
                            severity="warning", markup=False)
            self.safe_reload()
            return None
        return row

