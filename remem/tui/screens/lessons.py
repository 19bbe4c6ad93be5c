"""Lessons: what remem learned, a page at a time; edit, veto or restore, merge; sources,
predictions, primes."""

from __future__ import annotations

from typing import Any, Callable

from rich.cells import cell_len
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Label, Select, Static

from remem.errors import NotFound
from remem.engine.store import LESSON_STATUSES as STATUSES
from remem.tui.paging import PagedPane
from remem.tui.screens.modals import AskValue, Confirm, EditText
from remem.tui.widgets.columns import FitsItsWidth, fill, fits, room_left, widest
from remem.tui.widgets.format import cell, cut, figure, lines, markup, plain, sender, short_sender, since
from remem.tui.widgets.pane import ChangedMeanwhile

COLUMNS = ("kind", "status", "str", "seen", "lesson")
# The fewest and the most characters of a lesson's words the table shows (its detail has them
# all): between the two, as many as the table's width leaves beside the other columns.
LESSON_WIDTH = (24, 56)
# What saving an emptied lesson says, the editor left open (`remem lessons edit` names the veto
# command; here it is a key).
EMPTIED = "a lesson needs text; press v to veto it instead"


def lesson_words(lesson: dict[str, Any], width: int) -> str:
    """A lesson's words in the table, at most `width` characters. A received lesson's end in
    who sent it, as `remem lessons list` says it (" (from laptop)"), kept whole when its words
    are cut: the only sign in the list that another memory's author wrote them."""
    suffix = (f" (from {short_sender(lesson.get('origin'), lesson.get('origin_label'))})"
              if lesson.get("received") else "")
    return cut(lesson["text"], max(width - cell_len(suffix), 8)) + suffix


def edit_refused(lesson: dict[str, Any], refusal: str, ours: str | None) -> str:
    """The engine's refusal to edit a lesson (lessons.edit_refusal decides whether), worded for
    the app, where the CLI's commands are keys: a received lesson waiting for a decision is
    accepted or rejected in the Shared tab; a revoked lesson of our own names no command. The
    other refusals name none and are said as the engine says them."""
    lesson_id, status = lesson["id"], lesson["status"]
    received = bool(lesson.get("origin")) and lesson.get("origin") != ours
    if received and status == "candidate":
        return (f"{lesson_id} is a received lesson waiting for a decision, in its author's words: accept it "
                "first in the Shared tab (5, then a), then edit it here, or reject it there (x)")
    if received and status == "quarantined":
        return (f"{lesson_id} is a received lesson quarantined (its words failed the safety checks), in its "
                "author's words: accept it anyway first in the Shared tab (5, then A), then edit it here, "
                "or reject it there (x)")
    if status == "revoked" and not received:
        return (f"{lesson_id} is revoked: its words are withdrawn for good wherever they were shared, "
                "and it cannot come back; nothing to edit (edit an active lesson instead)")
    return refusal


def changed_meanwhile(shown: str, now: str) -> str:
    """What another process did to a lesson since its row was drawn (its status then, and now),
    for the line that says the view is reloaded instead of acting on it."""
    if now == "vetoed":
        return "was vetoed"
    if shown == "vetoed":
        return f"was restored (it is {now} now)"
    return f"became {now}"


def veto_said(lesson: dict[str, Any], exported: bool) -> str:
    """What `v` says after a veto: what `remem lessons veto` says, with the Shared tab's key
    in place of `remem share revoke`."""
    from remem.engine.render_vetoes import veto_said as said

    return said(lesson["id"], exported=exported, revoke="R in the Shared tab")


def edit_said(before: dict[str, Any], done: dict[str, Any]) -> str:
    """What `e` says once the words are saved, from the edit's result as `remem lessons edit`
    says it: a secret that became [secret], words cut at the most a lesson holds, the earlier
    words withdrawn where they were shared (or, for a received lesson, kept rejected as the
    author's), words revoked earlier that stay unshared."""
    from remem.engine.lessons import edit_notes

    if not done["changed"]:
        return "nothing to change"
    return "; ".join(["lesson saved", *edit_notes(done, was_received=bool(before.get("origin")),
                                                  sync="sync (y in the Shared tab)", edit="e")])


class LessonsPane(FitsItsWidth, PagedPane):
    BINDINGS = [
        Binding("e", "edit", "Edit"),
        Binding("v", "veto", "Veto/restore"),
        Binding("m", "merge", "Merge into…"),
    ]
    paged_table = "#lesson-table"
    detail_text = "#lesson-detail-text"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.changed_row: str | None = None  # the one row an action changed: redrawn alone
        self.shown: dict[str, dict[str, Any]] = {}  # the page's lessons, in order, with who sent them
        self.words_width = LESSON_WIDTH[1]  # how much of a lesson's words the page shows
        self.widths: list[int] = []  # the columns' widths as laid out

    def compose(self) -> ComposeResult:
        with Horizontal(classes="filters"):
            yield Select([(s, s) for s in STATUSES], prompt="any status", id="lesson-status")
        with Horizontal(classes="split list-detail"):
            yield DataTable(id="lesson-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="lesson-detail", classes="detail"):
                yield Static("", id="lesson-detail-text")
        yield Label("", id="lesson-status-line", classes="status")

    def on_mount(self) -> None:
        self.app.mounted(self)  # read when its tab is first shown

    def refit(self) -> None:
        self._fill(self.selected_id(), self.query_one(DataTable).cursor_row)

    def _statuses(self) -> list[str] | None:
        status = self.query_one("#lesson-status", Select)
        return None if status.is_blank() else [str(status.value)]

    @staticmethod
    def _fixed(r: dict[str, Any]) -> list[str]:
        """A lesson's cells but its words."""
        return [str(r["kind"]), str(r["status"]), figure(r["strength"]), str(r["seen"])]

    def _texts(self, r: dict[str, Any], width: int) -> list[str]:
        return [*self._fixed(r), lesson_words(r, width)]

    def _lesson_width(self) -> int:
        """How much of a lesson the table shows: what its width leaves beside the other columns,
        so the end of a line, where a received lesson names its sender, is in sight in 80
        columns too."""
        others = widest(COLUMNS[:-1], [self._fixed(r) for r in self.shown.values()])
        return min(LESSON_WIDTH[1], room_left(self.query_one(DataTable), others, len(COLUMNS), *LESSON_WIDTH))

    def _provenance(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows with who sent each received one (`received`, `origin_label`)."""
        return self.app.engine("memories").with_provenance(self.app.store, rows)

    def reload(self) -> None:
        changed, self.changed_row = self.changed_row, None
        if changed and self._redraw_row(changed):
            return
        keep = self.selected_id()
        place = self.cursor_place(self.query_one(DataTable))
        browse = self.app.engine("browse")
        statuses = self._statuses()
        rows = self.load_page(lambda limit, offset: browse.page_lessons(
            self.app.store, statuses=statuses, limit=limit, offset=offset))
        self.shown = {r["id"]: r for r in self._provenance(rows)}
        where = f"{self.page_span()} lessons · n/p page" if self.paged() else f"{self.total} lessons"
        self.query_one("#lesson-status-line", Label).update(
            f"{where} · e edit · v veto/restore · m merge into another")
        self._fill(keep, place)

    def _fill(self, keep: str | None, place: int | None = None) -> None:
        """The page's lessons into the table, their words cut for the table's width now."""
        table = self.query_one(DataTable)
        self.fitted_to = table.size.width
        self.words_width = self._lesson_width()
        self.widths = fill(table, COLUMNS, [(r["id"], self._texts(r, self.words_width))
                                            for r in self.shown.values()])
        self.keep_cursor(table, keep, place)
        self.safe_detail(self.selected_id())

    def _redraw_row(self, lesson_id: str) -> bool:
        """After an action on one lesson, that row alone is drawn again when it is still on the
        page, still passes the status filter and still fits the columns (False: the page is
        read again instead)."""
        table = self.query_one(DataTable)
        row = self.app.engine("browse").lesson_row(self.app.store, lesson_id)
        statuses = self._statuses()
        if row is None or lesson_id not in table.rows or (statuses and row["status"] not in statuses):
            return False
        (row,) = self._provenance([row])
        texts = self._texts(row, self.words_width)
        if not fits(self.widths, texts):  # "active" became "quarantined": lay the page out again
            return False
        self.shown[lesson_id] = row
        for label, text in zip(COLUMNS, texts):
            table.update_cell(lesson_id, label, cell(text))
        self.safe_detail(self.selected_id())
        return True

    def _row_action(self, message: str | Callable[[Any], str], lesson_id: str, action: Callable[[Any], Any],
                    done: Callable[[Any], None] | None = None,
                    failed: Callable[[BaseException], None] | None = None) -> None:
        """run_action for an action that changes one lesson: when it worked, the reload after
        it draws that row again rather than the page."""
        def worked(result: Any) -> None:
            self.changed_row = lesson_id
            if done:
                done(result)

        self.run_action(message, action, worked, failed)

    def selected_id(self) -> str | None:
        return self.selected_key()

    def show_detail(self, lesson_id: str | None) -> None:
        target = self.query_one(self.detail_text, Static)
        if not lesson_id:
            target.update("No lessons yet. `remem sleep` turns repeated corrections and errors into lessons.")
            return
        try:
            found = self.app.engine("browse").lesson_detail(self.app.store, lesson_id)
        except NotFound:  # gone (merged, deleted) since the list was drawn; a database error is said
            target.update("")
            return
        # Who sent a received lesson, by the label the person gave that peer (as `remem lessons
        # show` says it); a lesson carrying this memory's own origin id is ours, not received.
        (lesson,) = self.app.engine("memories").with_provenance(self.app.store, [found["lesson"]])
        parts: list[Content | str] = [
            markup("[b]$text[/b]", text=lesson["text"]),
            markup("[dim]$id · $kind · $status · learned $created[/dim]", id=lesson["id"], kind=lesson["kind"],
                   status=lesson["status"], created=str(lesson["created"])[:10]),
        ]
        if lesson.get("draft") and lesson["draft"] != lesson["text"]:
            # The words before the model's rewording or a person's edit (`remem lessons show`).
            parts.append(markup("[dim]earlier text: $draft[/dim]", draft=lesson["draft"]))
        if lesson.get("note"):
            parts.append(markup("note: $note", note=lesson["note"]))
        if lesson["received"]:
            parts.append(plain(f"from: {sender(lesson['origin'], lesson['origin_label'])}"))
            parts.append(plain("corroborated by: " + (", ".join(sender(o["origin"], o["label"])
                                                                for o in lesson["corroborated_by"])
                                                      or "no other memory yet")))
        parts += ["", f"[b]sources[/b] ({len(lesson['sources'])})"]
        parts += [plain(f"  {e['at'][:10]} {e['kind']}: {cut(e['title'], 60)}") for e in found["episodes"][:10]]
        parts += ["", "[b]predictions[/b]"]
        parts += [plain(f"  {p['made'][:10]} {p['outcome'] or 'open'}: {cut(p['text'], 60)}")
                  for p in found["predictions"]] or ["  none"]
        parts += ["", "[b]primed[/b]"]
        parts += [
            plain(f"  {since(p['at'])} {p['agent'] or '?'} {p['event']}" + (" (held out)" if p["held_out"] else ""))
            for p in found["primes"]
        ] or ["  never" if found.get("primes_window") is None
              else f"  not in the newest {found['primes_window']:,} decisions"]
        target.update(lines(parts))

    @on(DataTable.RowHighlighted, "#lesson-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.safe_detail(str(event.row_key.value) if event.row_key else None)

    @on(Select.Changed, "#lesson-status")
    def _filter(self) -> None:
        self.first_page()
        self.safe_reload()

    def action_edit(self) -> None:
        lesson_id = self.selected_for_write()
        if not lesson_id:
            return
        lessons = self.app.engine("lessons")
        current = self.still_there(lesson_id, lambda: lessons.get_lesson(self.app.store, lesson_id))
        if current is None:
            return
        if self._edit_refused(current):  # before the dialog: what is typed there is not lost
            return
        self._open_editor(current)

    def _open_editor(self, current: dict[str, Any], typed: str | None = None, title: str | None = None) -> None:
        """The editor over a lesson's words (or over `typed`: words given back after a save that
        could not be made); ctrl+s saves them (_save_edit)."""
        def done(text: str | None) -> None:
            if text and text != current["text"]:
                self._save_edit(current, text)

        self.app.push_screen(EditText(title or f"Edit lesson {current['id']}",
                                      current["text"] if typed is None else typed, empty=EMPTIED), done)

    def _save_edit(self, current: dict[str, Any], text: str) -> None:
        """Save words typed for a lesson (`current`, as it was when the editor opened). It may
        have changed while the editor was open (the Shared tab, another process): merged into
        another lesson (the words are not written there behind the person's back: said, and
        they go back into an editor, over the lesson it was merged into), or made a lesson that
        cannot be edited (said). A save that fails (the memory busy, read-only) gives the words
        back in the editor: nothing typed is lost."""
        lessons = self.app.engine("lessons")
        lesson_id = current["id"]
        try:
            now = lessons.get_lesson(self.app.store, lesson_id)
        except Exception:  # gone meanwhile: edit_text says so, as for any failed write
            now = None
        if now is not None and now["id"] != lesson_id:
            self.app.notify(f"{lesson_id} was merged into {now['id']} meanwhile; nothing saved",
                            severity="warning", markup=False)
            self.safe_reload()
            self._words_back(lesson_id, text)
            return
        if now is not None and self._edit_refused(now):
            return

        def save(store: Any) -> dict[str, Any]:
            # Once more in the write's own thread: a merge can land between the check above and
            # the write, and edit_text follows a merged-away id to the lesson it became.
            there = lessons.get_lesson(store, lesson_id)
            if there["id"] != lesson_id:
                raise ChangedMeanwhile(f"{lesson_id} was merged into {there['id']} meanwhile; nothing saved")
            return lessons.edit_text(store, lesson_id, text)

        def failed(exc: BaseException) -> None:
            if isinstance(exc, ChangedMeanwhile):  # merged meanwhile (said): over the lesson it became
                self._words_back(lesson_id, text)
            elif not isinstance(exc, NotFound):  # the words back, to save again (or Esc)
                self._open_editor(current, text)

        # The same words, spaced otherwise, change nothing (edit_text writes nothing).
        self._row_action(lambda done: edit_said(current, done), lesson_id, save, self._edited, failed)

    def _words_back(self, lesson_id: str, text: str) -> None:
        """Words typed for a lesson merged into another meanwhile (nothing saved): back in an
        editor over the lesson it became, which says so; ctrl+s saves them to that lesson, Esc
        drops them."""
        lessons = self.app.engine("lessons")
        try:
            now = lessons.get_lesson(self.app.store, lesson_id)
        except Exception as exc:  # gone altogether: nowhere to put them
            self.read_failed(exc)
            return
        if not self._edit_refused(now):
            self._open_editor(now, text, f"Your words for {lesson_id}, merged into {now['id']} meanwhile: "
                                         f"ctrl+s saves them to {now['id']}, Esc drops them")

    def _edited(self, done: dict[str, Any]) -> None:
        """An edit that kept the earlier words in a row of their own (a shared lesson of ours:
        a revoked row; a received one: its author's words, vetoed) added a lesson: the page
        is read again, its count and that row with it, not only the edited row."""
        if done.get("replaced"):
            self.changed_row = None

    def _edit_refused(self, lesson: dict[str, Any]) -> bool:
        """Whether the engine refuses to let the person edit this lesson (lessons.edit_refusal
        decides, as edit_text does when it saves), said in the app's terms when it does: as the
        veto key, at once. `ours` matters only for a lesson with an origin, and reading it loads
        cryptography."""
        ours = self.app.engine("share_sign").own_origin() if lesson.get("origin") else None
        refusal = self.app.engine("lessons").edit_refusal(lesson, ours)
        if refusal:
            self.app.notify(edit_refused(lesson, refusal, ours), severity="warning", markup=False)
        return bool(refusal)

    def action_veto(self) -> None:
        lesson_id = self.selected_id()
        if not lesson_id:
            return
        current = self.still_there(lesson_id, lambda: self.app.engine("lessons").get_lesson(self.app.store, lesson_id))
        if current is None:
            return
        # Veto or restore is decided by what the row shows: a lesson vetoed (or restored)
        # elsewhere since it was drawn would otherwise be silently undone by this key.
        shown = (self.shown.get(lesson_id) or current)["status"]
        if current["status"] != shown:
            self.app.notify(f"{lesson_id} {changed_meanwhile(shown, current['status'])} meanwhile (elsewhere); "
                            "the view is reloaded", severity="warning", markup=False)
            self.safe_reload()
            return
        vetoes = self.app.engine("render_vetoes")
        if shown != "vetoed":
            def veto(store: Any) -> tuple[dict[str, Any], bool]:
                """The lesson vetoed, and whether this memory had shared it (as the CLI says)."""
                # The engine refuses what cannot be vetoed (a received lesson waiting in the
                # Shared tab, a revoked one, one vetoed already) with the reason, which
                # run_action shows.
                lesson = vetoes.veto_lesson(store, lesson_id, how="remem tui")
                from remem.engine.share_export import exported_before  # loads cryptography: here

                try:
                    exported = exported_before(store, lesson)
                except Exception:  # the veto is done; only the hint about sharing is left out
                    exported = False
                return lesson, exported

            self._row_action(lambda done: veto_said(*done), lesson_id, veto)
            return

        def restored(lesson: dict[str, Any]) -> None:
            if lesson["status"] != "active":
                self.app.notify(f"{lesson_id} is {lesson['status']} again: accept or reject it in the Shared tab (5)",
                                severity="warning", markup=False)

        self._row_action(lambda lesson: "lesson restored; the next sleep renders it again"
                         if lesson["status"] == "active" else "lesson restored",
                         lesson_id, lambda store: vetoes.restore_lesson(store, lesson_id), restored)

    def action_merge(self) -> None:
        lesson_id = self.selected_for_write()
        if not lesson_id:
            return
        lessons = self.app.engine("lessons")

        def asked(target: str | None) -> None:
            if not target:
                return
            try:  # the engine refuses a merge into (or of) a lesson that is not active, with the fix
                theme, other = lessons.merge_check(self.app.store, target, lesson_id)
            except Exception as exc:  # that, an id no lesson has, an ambiguous prefix
                self.app.notify(str(exc), severity="error", markup=False)
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.run_action(f"merged {other['id']} into {theme['id']}",
                                    lambda store: lessons.merge_into(store, theme["id"], other["id"]))

            self.app.push_screen(Confirm(
                f"Merge {other['id']} into {theme['id']}?",
                f"{other['id']} (goes): {other['text']}\n\n{theme['id']} (stays): {theme['text']}\n\n"
                f"{theme['id']} keeps its words and takes {other['id']}'s sources and strength; {other['id']} "
                "becomes another name for it. A merge cannot be undone.", "Merge"), confirmed)

        self.app.push_screen(AskValue(f"Merge {lesson_id} into which lesson?", "lesson id"), asked)
