"""Lessons: what remem learned; edit, veto or restore, merge; sources, predictions, primes."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Label, Select, Static

from remem.errors import NotFound
from remem.tui.screens.modals import AskValue, EditText
from remem.tui.widgets.pane import Pane
from remem.tui.widgets.format import cell, cut, lines, markup, plain, since

STATUSES = ("active", "candidate", "vetoed", "revoked", "quarantined")


class LessonsPane(Pane):
    BINDINGS = [
        Binding("e", "edit", "Edit"),
        Binding("v", "veto", "Veto/restore"),
        Binding("m", "merge", "Merge into…"),
    ]

    def compose(self) -> ComposeResult:
        with Horizontal(classes="filters"):
            yield Select([(s, s) for s in STATUSES], prompt="any status", id="lesson-status")
        with Horizontal(classes="split list-detail"):
            yield DataTable(id="lesson-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="lesson-detail", classes="detail"):
                yield Static("", id="lesson-detail-text")
        yield Label("", id="lesson-status-line", classes="status")

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("kind", "status", "str", "seen", "lesson")
        self.reload()

    def reload(self) -> None:
        table = self.query_one(DataTable)
        keep = self.selected_id()
        table.clear()
        status = self.query_one("#lesson-status", Select)
        statuses = None if status.is_blank() else [str(status.value)]
        rows = self.app.engine("lessons").list_lessons(self.app.store, statuses=statuses)
        for r in rows:
            table.add_row(cell(r["kind"]), cell(r["status"]), f"{r['strength']:.2f}", str(r["seen"]),
                          cell(r["text"], 56), key=r["id"])
        self.query_one("#lesson-status-line", Label).update(
            f"{len(rows)} lessons · e edit · v veto/restore · m merge into another")
        self.keep_cursor(table, keep)
        self.show_detail(self.selected_id())

    def selected_id(self) -> str | None:
        return self.selected_key()

    def show_detail(self, lesson_id: str | None) -> None:
        target = self.query_one("#lesson-detail-text", Static)
        if not lesson_id:
            target.update("No lessons yet. `remem sleep` turns repeated corrections and errors into lessons.")
            return
        try:
            found = self.app.engine("browse").lesson_detail(self.app.store, lesson_id)
        except NotFound:  # gone (merged, deleted) since the list was drawn; a database error is said
            target.update("")
            return
        lesson = found["lesson"]
        parts: list[Content | str] = [
            markup("[b]$text[/b]", text=lesson["text"]),
            markup("[dim]$id · $kind · $status · learned $created[/dim]", id=lesson["id"], kind=lesson["kind"],
                   status=lesson["status"], created=lesson["created"][:10]),
        ]
        if lesson.get("draft") and lesson["draft"] != lesson["text"]:
            parts.append(markup("[dim]deterministic text: $draft[/dim]", draft=lesson["draft"]))
        if lesson.get("note"):
            parts.append(markup("note: $note", note=lesson["note"]))
        if lesson.get("origin"):
            parts.append(plain(f"from {lesson['origin']}; corroborated by {', '.join(lesson['origins']) or 'nobody yet'}"))
        parts += ["", f"[b]sources[/b] ({len(lesson['sources'])})"]
        parts += [plain(f"  {e['at'][:10]} {e['kind']}: {cut(e['title'], 60)}") for e in found["episodes"][:10]]
        parts += ["", "[b]predictions[/b]"]
        parts += [plain(f"  {p['made'][:10]} {p['outcome'] or 'open'}: {cut(p['text'], 60)}")
                  for p in found["predictions"]] or ["  none"]
        parts += ["", "[b]primed[/b]"]
        parts += [
            plain(f"  {since(p['at'])} {p['agent'] or '?'} {p['event']}" + (" (held out)" if p["held_out"] else ""))
            for p in found["primes"]
        ] or ["  never"]
        target.update(lines(parts))

    @on(DataTable.RowHighlighted, "#lesson-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail(str(event.row_key.value) if event.row_key else None)

    @on(Select.Changed, "#lesson-status")
    def _filter(self) -> None:
        self.reload()

    def action_edit(self) -> None:
        lesson_id = self.selected_id()
        if not lesson_id:
            return
        lessons = self.app.engine("lessons")
        current = self.still_there(lesson_id, lambda: lessons.get_lesson(self.app.store, lesson_id))
        if current is None:
            return

        def done(text: str | None) -> None:
            if text and text != current["text"]:
                self.run_action("lesson saved", lambda: lessons.edit_text(self.app.store, lesson_id, text))

        self.app.push_screen(EditText(f"Edit lesson {lesson_id}", current["text"]), done)

    def action_veto(self) -> None:
        lesson_id = self.selected_id()
        if not lesson_id:
            return
        current = self.still_there(lesson_id, lambda: self.app.engine("lessons").get_lesson(self.app.store, lesson_id))
        if current is None:
            return
        render = self.app.engine("render")
        if current["status"] != "vetoed":
            # The engine refuses what cannot be vetoed (a received lesson waiting in the Shared
            # tab, a revoked one) with the reason, which run_action shows.
            self.run_action("lesson vetoed", lambda: render.veto_lesson(self.app.store, lesson_id, how="remem tui"))
            return

        def restore() -> None:
            back = render.restore_lesson(self.app.store, lesson_id)["status"]
            if back != "active":
                self.app.notify(f"{lesson_id} is {back} again: accept or reject it in the Shared tab (5)",
                                severity="warning", markup=False)

        self.run_action("lesson restored", restore)

    def action_merge(self) -> None:
        lesson_id = self.selected_id()
        if not lesson_id:
            return
        lessons = self.app.engine("lessons")

        def done(target: str | None) -> None:
            if target:
                self.run_action(f"merged into {target}", lambda: lessons.merge_into(self.app.store, target, lesson_id))

        self.app.push_screen(AskValue(f"Merge {lesson_id} into which lesson?", "lesson id"), done)
