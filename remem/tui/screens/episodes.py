"""Episodes: a paged, sortable table over every memory, hybrid search, a detail pane, actions."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Checkbox, DataTable, Input, Label, Select, Static

from remem.engine.store import MAX_DETAIL, MAX_GIST, MAX_TITLE
from remem.errors import NotFound
from remem.tui.paging import PagedPane, paging_bindings
from remem.tui.screens.modals import AskValue, ConfirmForget, ConnectTo
from remem.tui.widgets.columns import FitsItsWidth, room_left, widest
from remem.tui.widgets.format import ago, cell, cut, figure, lines, markup, plain, whole

SORTS = ("when", "kind", "title", "project", "strength", "recalls")
# The table's columns and their widths: None is as wide as its values; the title gets what
# the others leave of the table's width (the detail is beside the table from 140 columns on,
# under it below), so every column is on screen without scrolling sideways, even in 80x24.
COLUMNS = (("kind", 8), ("title", None), ("project", 10), ("when", None), ("str", None), ("rec", None),
           ("tags", 10))
TITLE_WIDTH = (12, 34)  # the narrowest title, and the title before the table has a width
FORGET_TITLE = 50  # the forget dialog's question cuts a title here; the whole memory goes under it
# The most of a memory's detail the detail beside the table shows (drawn again at every move of
# the cursor: much more would slow it); the forget dialog shows it all (the store keeps
# MAX_DETAIL characters).
DETAIL_SHOWN = 16_000


# Its own list of keys, PagedPane's paging keys among them (not inherited): the footer shows
# them in this order, n and p after / as ever.
class EpisodesPane(FitsItsWidth, PagedPane, inherit_bindings=False):
    BINDINGS = [
        Binding("slash", "search", "Search"),
        *paging_bindings(show=True),
        Binding("s", "sort", "Sort"),
        Binding("a", "archive", "Archive/restore"),
        Binding("f", "forget", "Forget"),
        Binding("P", "promote", "Promote"),
        Binding("t", "tag", "Tag"),
        Binding("i", "importance", "Importance"),
        Binding("c", "connect", "Connect"),
    ]
    paged_table = "#episode-table"
    detail_text = "#episode-detail-text"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sort = "when"
        self.descending = True
        self.query_text = ""
        self.hits: dict[str, dict[str, Any]] = {}
        self.shown: list[tuple[str, list[str]]] = []  # the page's rows as (id, cell texts)
        self.archived_shown: dict[str, bool] = {}  # whether each row of the page showed as archived
        self.kinds: list[str] | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="episode-filters", classes="filters"):
            yield Input(placeholder="/ search memories (hybrid recall)", id="episode-search")
            yield Select([], prompt="any kind", id="episode-kind")
            # Archived memories shown too, beside the live ones: browsing and search alike.
            yield Checkbox("with archived", id="episode-archived")
        with Horizontal(classes="split list-detail"):
            yield DataTable(id="episode-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="episode-detail", classes="detail"):
                yield Static("", id="episode-detail-text")
        yield Label("", id="episode-status", classes="status")

    def on_mount(self) -> None:
        self.app.mounted(self)  # read when its tab is first shown

    def refit(self) -> None:
        self._fill(self.selected_id(), self.query_one(DataTable).cursor_row)

    def _refresh_kinds(self) -> None:
        """The kind filter offers every kind in the store now (ingest and hooks add kinds
        while the app is open), and keeps the kind chosen."""
        kinds, _ = self.app.engine("browse").kinds_and_projects(self.app.store)
        select = self.query_one("#episode-kind", Select)
        chosen = None if select.is_blank() else str(select.value)
        if chosen and chosen not in kinds:
            kinds = sorted([*kinds, chosen])  # its last episode went: still the filter in use
        if kinds == self.kinds:
            return
        self.kinds = kinds
        with self.prevent(Select.Changed):
            select.set_options([(cell(k), k) for k in kinds])
            if chosen:
                select.value = chosen

    # -- data ----------------------------------------------------------------------------
    def _filters(self) -> dict[str, Any]:
        """kind: the one kind shown (None: every kind); archived: archived memories are shown
        too (never only them)."""
        kind = self.query_one("#episode-kind", Select)
        return {
            "kind": None if kind.is_blank() else str(kind.value),
            "archived": self.query_one("#episode-archived", Checkbox).value,
        }

    def reload(self, keep_selection: bool = True) -> None:
        keep = self.selected_id() if keep_selection else None
        place = self.cursor_place(self.query_one(DataTable))
        self._refresh_kinds()
        store = self.app.store
        filters = self._filters()
        if self.query_text:
            recall = self.app.engine("recall")
            hits = recall.recall(store, self.query_text, self.page_size, touch=False, lessons=False,
                                 kinds=[filters["kind"]] if filters["kind"] else None,
                                 archived=filters["archived"])
            self.hits = {h["id"]: h for h in hits}
            rows = self.app.engine("memories").episodes_by_ids(store, [h["id"] for h in hits])
            self.total = len(rows)
            status = markup("$n results for “$query” (best first; Esc clears)", n=len(rows),
                            query=cut(self.query_text, 40))
        else:
            self.hits = {}
            browse = self.app.engine("browse")
            rows = self.load_page(lambda limit, offset: browse.page_episodes(
                store, kind=filters["kind"], archived=None if filters["archived"] else False, sort=self.sort,
                descending=self.descending, limit=limit, offset=offset))
            arrow = "↓" if self.descending else "↑"
            status = plain(f"{self.page_span()} · sorted by {self.sort} {arrow} · n/p page · s sort")
        project_name = self.app.engine("projects").project_name
        self.shown = [(r["id"], _cells(r, project_name)) for r in rows]
        self.archived_shown = {r["id"]: bool(r.get("archived")) for r in rows}
        self.query_one("#episode-status", Label).update(status)
        self._fill(keep, place)

    def _fill(self, keep: str | None, place: int | None = None) -> None:
        """The page's rows into the table, its columns laid out for the table's width now."""
        table = self.query_one(DataTable)
        self.fitted_to = table.size.width
        widths = self._widths(table)
        table.clear(columns=True)
        for (label, _), width in zip(COLUMNS, widths):
            table.add_column(label, width=width, key=label)
        for key, texts in self.shown:
            table.add_row(*(cell(text, width) for text, width in zip(texts, widths)), key=key)
        self.keep_cursor(table, keep, place)
        self.safe_detail(self.selected_id())

    def _widths(self, table: DataTable) -> list[int]:
        measured = widest([label for label, _ in COLUMNS], [texts for _, texts in self.shown])
        widths = [fixed or width for (_, fixed), width in zip(COLUMNS, measured)]
        title = COLUMNS.index(("title", None))
        widths[title] = room_left(table, widths[:title] + widths[title + 1:], len(COLUMNS), *TITLE_WIDTH)
        return widths

    def selected_id(self) -> str | None:
        return self.selected_key()

    def can_page(self) -> bool:
        """Search results are one list, best first: n/p do nothing, the page keys scroll it."""
        return not self.query_text

    def show_detail(self, memory_id: str | None) -> None:
        target = self.query_one(self.detail_text, Static)
        if not memory_id:
            target.update("Nothing here yet. `remem ingest` reads your sessions.")
            return
        store = self.app.store
        try:
            row = store.episode(memory_id)
        except NotFound:  # deleted by another process since the row was drawn
            target.update("")
            return
        edges = self.app.engine("graph").edges_of(store, memory_id)
        parts: list[Content | str] = [
            markup("[b]$title[/b]", title=row["title"]),
            markup("[dim]$id · $kind · $type · $at[/dim]", id=row["id"], kind=row["kind"],
                   type=row["memory_type"], at=str(row["at"])[:16]),
            "",
            plain(whole(row["gist"] or "", MAX_GIST)),
        ]
        if row["detail"]:  # whole, its lines as written: a command's output, a traceback
            parts += ["", plain(whole(row["detail"], DETAIL_SHOWN,
                                      "f shows the whole memory, and Cancel there changes nothing"))]
        parts += [
            "",
            # A stored value that is no number (a corrupt row) shows as "?", the rest as ever.
            plain(f"strength {figure(row['strength'])} · recalls {row['recalls']} · "
                  f"health {figure(row['health'], '.0f')} · importance {figure(row['importance'])}"),
            plain(f"valence {figure(row['valence'], '+.1f')} · arousal {figure(row['arousal'], '.1f')}"
                  + (f" · flashbulb until {str(row['flashbulb_until'])[:10]}" if row.get("flashbulb_until") else "")
                  + (f" · expires {str(row['expires_at'])[:16]}" if row.get("expires_at") else "")),
            markup("tags: $tags", tags=", ".join(row["tags"]) or "-"),
            markup("session: $session ($source)", session=row["session_id"] or "-", source=row["source"] or "-")
            + (markup(" · said by $who", who=row["speaker"]) if row.get("speaker") else ""),
            markup("project: $cwd", cwd=row["cwd"] or "-"),
            "archived" if row["archived"] else "",
        ]
        hit = self.hits.get(memory_id)
        if hit:
            scores = " · ".join(f"{k} {v:.2f}" for k, v in hit["parts"].items() if isinstance(v, (int, float)))
            parts += [markup("[b]score $score[/b]: $parts", score=f"{hit['score']:.3f}", parts=scores)]
        if edges:
            parts += ["", "[b]connections[/b]"]
            for e in edges[:12]:
                other = e["dst"] if e["src"] == memory_id else e["src"]
                parts.append(plain(f"  {e['type']} → {other[:10]} ({e['origin']})"))
        target.update(lines(parts))

    # -- events --------------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#episode-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.safe_detail(str(event.row_key.value) if event.row_key else None)

    @on(Input.Submitted, "#episode-search")
    def _search(self, event: Input.Submitted) -> None:
        before = self.query_text, self.page_start, self.new_list, self.hits, self.total
        self.query_text = event.value.strip()
        self.first_page()
        if not self.safe_reload(keep_selection=False):  # a new search starts at its best result
            # It failed (said): the list shown, its page among them, stays what n/p and s act on.
            self.query_text, self.page_start, self.new_list, self.hits, self.total = before
        self.query_one(DataTable).focus()

    @on(Select.Changed, "#episode-kind")
    @on(Checkbox.Changed, "#episode-archived")
    def _filter(self) -> None:
        self.first_page()
        self.safe_reload()

    def key_escape(self) -> None:
        """Esc clears the search: what was typed in the box (searched or not), the results
        shown, and the focus goes back to the table, where 1-5 and q are keys again."""
        search = self.query_one("#episode-search", Input)
        had_focus = search.has_focus
        search.value = ""
        if had_focus:
            self.query_one(DataTable).focus()
        if self.query_text:
            self.query_text = ""
            self.first_page()
            self.safe_reload()

    # -- actions -------------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one("#episode-search", Input).focus()

    def action_sort(self) -> None:
        index = SORTS.index(self.sort)
        if self.descending:
            self.descending = False
        else:
            self.sort = SORTS[(index + 1) % len(SORTS)]
            self.descending = True
        self.first_page()
        self.safe_reload()

    def _act(self, verb: str, fn: Any, *args: Any, failed: Any = None) -> None:
        memory_id = self.selected_id()
        if memory_id:
            self.run_action(f"{verb} {memory_id[:10]}", lambda store: fn(store, memory_id, *args), failed=failed)

    def _ask_again(self, memory_id: str, ask: Any) -> Any:
        """What a write that failed does with what was typed for it (run_action's `failed`):
        the dialog opens again holding it, to save again or drop with Esc; unless the memory
        itself is gone (said, and the view reloaded), when there is nowhere to put it."""
        def failed(exc: BaseException) -> None:
            try:
                self.app.store.episode(memory_id)
            except NotFound:
                return
            ask()

        return failed

    def _selected_episode(self) -> dict[str, Any] | None:
        """The selected memory as stored now; None (and the view told) when it is gone."""
        memory_id = self.selected_id()
        if not memory_id:
            return None
        return self.still_there(memory_id, lambda: self.app.store.episode(memory_id))

    def action_archive(self) -> None:
        row = self._selected_episode()
        if row is None:
            return
        archived = bool(row["archived"])
        if archived != self.archived_shown.get(row["id"], archived):
            # Archived or restored elsewhere (`remem forget`, another app) since the row was
            # drawn: `a` would undo that behind the person's back, in either view. Said, and
            # the view shows the memory as it is now; nothing else is done.
            self.app.notify(f"{row['id'][:10]} was {'archived' if archived else 'restored'} meanwhile "
                            "(elsewhere); the view is reloaded", severity="warning", markup=False)
            self.safe_reload()
            return
        life = self.app.engine("lifecycle")
        self._act("restored" if archived else "archived", life.restore if archived else life.archive)

    def action_promote(self) -> None:
        row = self._selected_episode()
        if row is None:
            return
        memory_id, life = row["id"], self.app.engine("lifecycle")

        def promote(store: Any) -> bool:
            """Promoted; whether it was long-term already (promote leaves it as it is then)."""
            before = store.episode(memory_id)
            already = before["memory_type"] == "long_term" and not before["expires_at"]
            life.promote(store, memory_id)
            return already

        self.run_action(lambda already: f"{memory_id[:10]} is already long-term" if already
                        else f"promoted {memory_id[:10]}: it is long-term now", promote)

    def action_forget(self) -> None:
        if self.app.write_refused():  # before the dialog: what is chosen there is not lost
            return
        row = self._selected_episode()
        if row is None:
            return
        title = row["title"] if isinstance(row["title"], str) else str(row["title"])

        def done(choice: str | None) -> None:
            if choice:
                life = self.app.engine("lifecycle")
                self._act("deleted" if choice == "hard" else "archived", life.forget, choice == "hard")

        # The whole memory, not only the title as the question cuts it: what a delete for good
        # takes (a command's output, a traceback in its detail) is read before it goes, its
        # lines as written; the dialog's body scrolls.
        text = [whole(title, MAX_TITLE)] if cut(title, FORGET_TITLE) != title else []
        if row["gist"] and row["gist"] != title:
            text.append(whole(row["gist"], MAX_GIST))
        if row["detail"] and row["detail"] not in (title, row["gist"]):
            text.append(whole(row["detail"], MAX_DETAIL))
        self.app.push_screen(ConfirmForget(cut(title, FORGET_TITLE), "\n\n".join(text)), done)

    def action_tag(self) -> None:
        if self.app.write_refused():  # before the dialog: what is typed there is not lost
            return
        row = self._selected_episode()  # one deleted elsewhere: said, and the view reloaded, first
        if row is not None:
            self._ask_tags(row["id"])

    def _ask_tags(self, memory_id: str, typed: str = "") -> None:
        memories = self.app.engine("memories")

        def add(store: Any, tags: list[str]) -> tuple[list[str], list[str]]:
            """The tags this added (as stored: normalised, new ones only), and all it has now."""
            before = set(store.tags_of(memory_id))
            now = memories.add_tags(store, memory_id, tags)["tags"]
            return [t for t in now if t not in before], now

        def said(result: tuple[list[str], list[str]]) -> str:
            added, now = result
            if added:
                return f"tagged {memory_id[:10]}: {', '.join(added)}"
            return f"no tag added: {memory_id[:10]} has {', '.join(now) or 'no tags'}"

        def done(value: str | None) -> None:
            if value:
                self.run_action(said, lambda store: add(store, value.split(",")),
                                failed=self._ask_again(memory_id, lambda: self._ask_tags(memory_id, value)))

        self.app.push_screen(AskValue("Add tags (comma separated)", "python, tooling", value=typed), done)

    def action_importance(self) -> None:
        if self.app.write_refused():  # before the dialog: what is typed there is not lost
            return
        row = self._selected_episode()
        if row is not None:
            self._ask_importance(row)

    def _ask_importance(self, row: dict[str, Any], typed: str | None = None) -> None:
        # A stored value that is no number (a corrupt row) shows as "?" in the detail: the
        # dialog starts empty then, and says why.
        current = figure(row["importance"])
        damaged = current == "?"

        def done(value: str | None) -> None:
            if not value:
                return
            again = lambda: self._ask_importance(row, value)  # noqa: E731 - what was typed, back
            try:
                number = float(value)
            except ValueError:
                self.app.notify("importance is a number from 0 to 1", severity="error")
                again()
                return
            self._act(f"importance {number}", _set_importance, number, failed=self._ask_again(row["id"], again))

        self.app.push_screen(AskValue(
            "Importance (0 to 1)", "0.5", value=typed if typed is not None else "" if damaged else current,
            detail=f"The stored importance is no number ({cut(repr(row['importance']), 40)}): give one "
                   "from 0 to 1 to mend it." if damaged else ""), done)

    def action_connect(self) -> None:
        if self.app.write_refused():  # before the dialog: what is typed there is not lost
            return
        row = self._selected_episode()  # one deleted elsewhere: said, and the view reloaded, first
        if row is not None:
            self._ask_connection(row["id"])

    def _ask_connection(self, memory_id: str, typed: tuple[str, str] | None = None) -> None:
        from remem.engine.store import CONNECTION_TYPES

        def done(answer: tuple[str, str] | None) -> None:
            if answer:
                target, kind = answer
                graph = self.app.engine("graph")
                # A target no memory has, the memory itself: the dialog again, with what was typed.
                self.run_action(f"connected ({kind}) {memory_id[:10]}",
                                lambda store: graph.connect(store, memory_id, target, kind),
                                failed=self._ask_again(memory_id, lambda: self._ask_connection(memory_id, answer)))

        self.app.push_screen(ConnectTo(CONNECTION_TYPES, *(typed or ())), done)


def _cells(r: dict[str, Any], project_name: Any) -> list[str]:
    """An episode's cells in the table; a stored value that is no number (a corrupt row) shows
    as "?", and the page's other rows as ever."""
    title = r["title"] if isinstance(r["title"], str) else str(r["title"])
    return [str(r["kind"]), f"(archived) {title}" if r.get("archived") else title, project_name(r.get("cwd")),
            ago(r["at"]) if isinstance(r["at"], str) else "?", figure(r["strength"]), str(r["recalls"]),
            ",".join(r.get("tags", []))]


def _set_importance(store: Any, memory_id: str, value: float) -> None:
    from remem.engine.memories import update_memory

    update_memory(store, memory_id, importance=value)
