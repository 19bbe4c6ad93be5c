"""Shared: lessons received from other memories (a page at a time), the project each is for
(and, when this memory cannot place it, why it waits: accepting one asks for its folder here),
peers and their trust, sync, revoke."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Label, Static

from remem.errors import NotFound
from remem.tui.paging import PagedPane
from remem.tui.screens.modals import AskValue, Confirm
from remem.tui.widgets.columns import fill
from remem.tui.widgets.format import cut, lines, markup, plain, sender
from remem.tui.widgets.pane import ChangedMeanwhile


CANDIDATE_COLUMNS = ("status", "origin", "signature", "safety", "project", "lesson")
PEER_COLUMNS = ("origin", "trusted", "first seen", "lessons", "label")
WAITING = ("candidate", "quarantined")  # a received lesson's statuses while it waits for a decision


def decided_meanwhile(lesson_id: str, status: str) -> str:
    """What became of a candidate decided elsewhere (`remem share accept`, another app) since
    its row was drawn, by its status now: for the line that says nothing was done."""
    how = {"active": "was accepted (it is active now)", "vetoed": "was rejected",
           "revoked": "was revoked by its author"}.get(status, f"became {status}")
    return f"{lesson_id} {how} meanwhile (elsewhere)"


def project_cell(c: dict[str, Any]) -> str:
    """A candidate's project in the table: its name ("every" for a lesson of every project),
    marked when this memory cannot place it."""
    return f"{c['project']} (waits)" if c["waits"] else c["project"] or "every"


def project_line(c: dict[str, Any]) -> str:
    """A candidate's project in the detail: which, where it applies here, or why it waits."""
    if c["waits"]:
        return f"project: {c['project']} · waits {c['waits']}"
    if c["folder"]:
        return f"project: {c['project']}, applies in {c['folder']}"
    return "project: every project"


def trust_said(out: dict[str, Any]) -> str:
    """What T did, from share.trust's answer: which peer (its label and short id), trusted or
    not, and the lessons that changed with it."""
    who = f"{out['label']} ({out['origin'][:8]})" if out.get("label") else out["origin"][:8]
    said = f"{'trusted' if out['trusted'] else 'untrusted'} {who}"
    if out.get("activated"):
        said += f"; {lessons(len(out['activated']))} activated"
    if out.get("demoted"):
        said += f"; {lessons(len(out['demoted']))} back to candidate"
    return said


def lessons(count: int) -> str:
    """'1 lesson', '3 lessons'."""
    return f"{count} lesson{'' if count == 1 else 's'}"


def origin_cell(c: dict[str, Any]) -> str:
    """A candidate's sender in the table, as `remem lessons list` names it: the label the
    person gave that peer, else the first 8 digits of its origin id."""
    return cut(c["origin_label"], 12) if c.get("origin_label") else (c["origin"] or "?")[:8]


def sync_said(out: dict[str, Any]) -> str:
    """What y says once a sync is done: its counts, as `remem share sync` prints them."""
    from remem.engine.share import summary_changes, summary_line

    changes = summary_changes(out["summary"])
    return f"synced: {summary_line(out['summary'])}" + (f" ({', '.join(changes)})" if changes else "")


# The most files a sync's warning names (`remem share sync` lists them all).
NAMED_PROBLEMS = 3


def sync_problems(out: dict[str, Any]) -> str:
    """What a sync found wrong, in one warning, or "" when nothing was: the files it rejected
    (a bad signature, a tampered or malformed file) and the problems in our own folder, each
    named with its reason (the first few; `remem share sync` lists every one), and the files
    it found half-synced, read again next time. Paths and reasons come from other machines'
    files: they reach the notification as plain text."""
    received = out.get("receive") or {}
    own = [*(out.get("export") or {}).get("problems", []), *(out.get("confirmations") or {}).get("problems", [])]
    said = []
    for title, items in (("rejected", received.get("rejected") or []),
                         ("problems in your own folder", list({(p["path"], p["reason"]): p for p in own}.values()))):
        if not items:
            continue
        named = "; ".join(f"{cut(p['path'], 100)}: {cut(p['reason'], 200)}" for p in items[:NAMED_PROBLEMS])
        more = len(items) - NAMED_PROBLEMS
        said.append(f"{title} ({len(items)}): {named}" + (f"; and {more} more" if more > 0 else ""))
    incomplete = len(received.get("incomplete") or [])
    if incomplete:
        said.append(f"{incomplete} file(s) incomplete (half-synced?): read again at the next sync")
    if not said:
        return ""
    listed = " (`remem share sync` lists every one)" if any(
        len(items) > NAMED_PROBLEMS for items in (received.get("rejected") or [], own)) else ""
    return "sync: " + " · ".join(said) + listed


class SharedPane(PagedPane):
    BINDINGS = [
        Binding("a", "accept", "Accept"),
        Binding("A", "accept_quarantined", "Accept anyway", show=False),
        Binding("x", "reject", "Reject"),
        Binding("X", "reject_origin", "Reject all from origin", show=False),
        Binding("T", "trust", "Trust peer"),
        Binding("y", "sync", "Sync now"),
        Binding("R", "revoke", "Revoke ours"),
    ]
    paged_table = "#candidate-table"
    detail_text = "#candidate-detail-text"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.candidates: dict[str, dict[str, Any]] = {}  # the page's, by id
        self.peers: list[dict[str, Any]] = []
        self.sync_folder: str | None = None  # the share folder set when the tab was last read

    def compose(self) -> ComposeResult:
        yield Label("Candidates (received, not yet trusted)", classes="section")
        with Horizontal(classes="split list-detail"):
            yield DataTable(id="candidate-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="candidate-detail", classes="detail"):
                yield Static("", id="candidate-detail-text")
        yield Label("Peers", classes="section")
        yield DataTable(id="peer-table", cursor_type="row")
        yield Label("", id="shared-status", classes="status")

    def on_mount(self) -> None:
        self.app.mounted(self)  # read when its tab is first shown

    def reload(self) -> None:
        share, store = self.app.engine("share"), self.app.store
        # What deciding on a candidate needs (its checks, our closest lesson) is worked out for
        # the page's candidates alone.
        count = self.app.engine("share_choices").count_candidates
        page = self.load_page(lambda limit, offset: (share.candidates(store, limit=limit, offset=offset),
                                                     count(store)))
        self.candidates = {c["id"]: c for c in page}
        table = self.query_one("#candidate-table", DataTable)
        keep = self.selected_key("#candidate-table")
        place = self.cursor_place(table)
        fill(table, CANDIDATE_COLUMNS, [
            (c["id"], [c["status"], origin_cell(c), c["signature"], "ok" if c["safety"]["ok"] else "quarantined",
                       cut(project_cell(c), 20), cut(c["text"], 60)])
            for c in page])
        peers = self.query_one("#peer-table", DataTable)
        keep_peer = self.selected_key("#peer-table")  # a second T acts on the same peer
        peer_place = peers.cursor_row
        self.peers = share.peers(self.app.store)
        fill(peers, PEER_COLUMNS, [
            (p["origin"], [p["origin"], "yes" if p["trusted"] else "no", str(p["first_seen"] or "")[:10],
                           ", ".join(f"{k} {v}" for k, v in p["lessons"].items()) or "-", p.get("label") or ""])
            for p in self.peers])
        self.keep_cursor(table, keep, place)
        self.keep_cursor(peers, keep_peer, peer_place)
        self.sync_folder = self.app.engine("config").load()["share"]["folder"] or None
        folder = self.sync_folder or "not set (remem config set share.folder PATH)"
        where = f"candidates {self.page_span()} · n/p page · " if self.paged() else ""
        # The keys first, the folder (a path of any length) last: in 80 columns the line wraps.
        self.query_one("#shared-status", Label).update(
            plain(f"{where}a accept · x reject · X reject all from origin · T trust · y sync · R revoke"
                  f" · sync folder: {folder}"))
        self.safe_detail(self.selected_key("#candidate-table"))

    def show_detail(self, lesson_id: str | None) -> None:
        target = self.query_one(self.detail_text, Static)
        c = self.candidates.get(lesson_id or "")
        if not c:
            target.update(plain(self.nothing_waiting()))
            return
        corr = c["corroboration"]
        closest = corr["closest_own"]
        labels = {p["origin"]: p.get("label") for p in self.peers}
        # The other memories that sent it too (the engine's list holds its sender as well), as
        # `remem lessons show` says it.
        others = [sender(o, labels.get(o)) + (" (trusted)" if o in corr["trusted_origins"] else "")
                  for o in corr["origins"] if o != c["origin"]]
        parts: list[Content | str] = [
            markup("[b]$text[/b]", text=c["text"]),
            markup("[dim]$id · $kind · from $origin ($trusted)[/dim]", id=c["id"], kind=c["kind"],
                   origin=sender(c["origin"], c.get("origin_label")),
                   trusted="trusted" if c["origin_trusted"] else "not trusted"),
            plain(f"signature: {c['signature']}"),
            plain("safety: " + ("ok" if c["safety"]["ok"] else "; ".join(c["safety"]["reasons"]) or c.get("note")
                                or "quarantined")),
            plain(project_line(c)),
            plain(f"corroborated by: {', '.join(others) or 'no other memory yet'}"),
            # The engine's words name the CLI's --project; here, `a` asks for the folder.
            plain(f"needs: its project's folder here: press {'A' if c['status'] == 'quarantined' else 'a'} "
                  "and name it (corroboration never activates it before)" if c["waits"]
                  else f"needs: {corr['needed']}"),
        ]
        if closest:
            parts.append(plain(f"closest lesson of yours: {closest['id']} (cosine {closest['cosine']}, cut {closest['cut']})"))
        target.update(lines(parts))

    def nothing_waiting(self) -> str:
        """The detail with no candidate to show: nothing received yet, or nothing left waiting
        for a decision (every received lesson accepted or rejected)."""
        decided = any(p["lessons"] for p in self.peers)  # lessons came from a peer: all were decided
        if not self.sync_folder:
            return ("Nothing waits for a decision. " if decided else "Nothing received. ") + \
                "Set a sync folder and press y to sync."
        if decided:
            return f"Nothing waits for a decision; press y to sync with {self.sync_folder} for more."
        return f"Nothing received yet from {self.sync_folder}; press y to sync."

    @on(DataTable.RowHighlighted, "#candidate-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.safe_detail(str(event.row_key.value) if event.row_key else None)

    def still_waiting(self, lesson_id: str) -> dict[str, Any] | None:
        """The selected candidate as stored now, when it still waits for a decision; else None,
        said, and the view read again: accepted or rejected elsewhere since its row was drawn,
        a key here must not undo that (x vetoing a lesson accepted meanwhile)."""
        lesson = self.still_there(lesson_id, lambda: self.app.engine("lessons").get_lesson(self.app.store, lesson_id))
        if lesson is None:
            return None
        if lesson["status"] not in WAITING:
            self.app.notify(f"{decided_meanwhile(lesson_id, lesson['status'])}: nothing done; the view is reloaded",
                            severity="warning", markup=False)
            self.safe_reload()
            return None
        return lesson

    def decide(self, lesson_id: str, decision: Any) -> Any:
        """decision(store), run in the write's thread once the candidate is read there again
        and found still waiting (ChangedMeanwhile otherwise: another process decided on it
        between the key and the write)."""
        lessons = self.app.engine("lessons")

        def act(store: Any) -> Any:
            status = lessons.get_lesson(store, lesson_id)["status"]
            if status not in WAITING:
                raise ChangedMeanwhile(f"{decided_meanwhile(lesson_id, status)}: nothing done; the view is reloaded")
            return decision(store)

        return act

    def share_warned(self, done: dict[str, Any]) -> None:
        """What an accept or a reject could not do in the share folder (its confirmation there
        waits for the next sync), said as `remem share accept`/`reject` says it."""
        if done.get("warning"):
            self.app.notify(done["warning"], severity="warning", markup=False)

    def action_accept(self) -> None:
        lesson_id = self.selected_key("#candidate-table")
        if not lesson_id:
            return
        lesson = self.still_waiting(lesson_id)
        if lesson is None:
            return
        if lesson["status"] == "quarantined":
            self.app.notify(f"{lesson_id} is quarantined: read why on the right, then press A to accept it anyway",
                            severity="warning", markup=False)
            return
        self.accept(lesson_id)

    def action_accept_quarantined(self) -> None:
        lesson_id = self.selected_key("#candidate-table")
        if lesson_id and self.still_waiting(lesson_id) is not None:
            self.accept(lesson_id, force=True)

    def accept(self, lesson_id: str, *, force: bool = False, typed: str = "") -> None:
        """Accept a candidate; one waiting for its project first asks for the folder it
        belongs to here (the CLI's `--project`): a path, or the name of a project remem knows.
        typed: the answer given before (a folder refused, an accept that failed), asked again."""
        if self.app.write_refused():  # before the dialog: what is typed there is not lost
            return
        share = self.app.engine("share")
        c = self.candidates.get(lesson_id)
        if c is None:  # off the page read again since (decided elsewhere, said)
            return
        if not c["waits"]:
            self.run_action(f"accepted {lesson_id}", self.decide(
                lesson_id, lambda store: share.accept(store, lesson_id, force=force)), self.share_warned)
            return

        def done(answer: str | None) -> None:
            if not answer:
                return

            def again(exc: BaseException | None = None) -> None:
                if not isinstance(exc, (ChangedMeanwhile, NotFound)):  # decided elsewhere, gone (said)
                    self.accept(lesson_id, force=force, typed=answer)

            try:
                where = self.app.engine("projects").resolve_project(self.app.store, answer)
            except ValueError as exc:  # the engine's one line naming what to give instead
                self.app.notify(str(exc), severity="error", markup=False)
                again()
                return
            self.run_action(f"accepted {lesson_id}: applies in {where}", self.decide(
                lesson_id, lambda store: share.accept(store, lesson_id, force=force, project=where)),
                self.share_warned, again)

        self.app.push_screen(AskValue(
            f"Accept {lesson_id} for which folder here?", f"~/code/{c['project']}", value=typed,
            detail=f"It waits {c['waits']}. Give its folder (a full path), or the name of a project "
                   "remem knows."), done)

    def action_reject(self) -> None:
        lesson_id = self.selected_key("#candidate-table")
        if not lesson_id or self.still_waiting(lesson_id) is None:
            return
        share = self.app.engine("share")
        self.run_action(f"rejected {lesson_id}", self.decide(lesson_id, lambda store: share.reject(store, lesson_id)),
                        self.share_warned)

    def _trust_target(self, what: str = "trust") -> tuple[str, bool] | None:
        """The origin T (or X) acts on, all 16 digits, and whether it is trusted now: the peer
        under the Peers table's cursor when that table has the focus, else the selected
        candidate's origin (never a peer the person is not looking at). what: the action the
        hint names when there is nothing to act on."""
        if self.app.focused is self.query_one("#peer-table", DataTable):
            origin = self.selected_key("#peer-table")
            if not origin:
                self.app.notify("no peers yet: press y to sync", severity="warning", markup=False)
                return None
            return origin, next((p["trusted"] for p in self.peers if p["origin"] == origin), False)
        candidate = self.candidates.get(self.selected_key("#candidate-table") or "")
        if not candidate or not candidate["origin"]:
            self.app.notify(f"select a candidate to {what} its origin, or a peer in the Peers table "
                            f"({self.tabs_to_peers()})", severity="warning", markup=False)
            return None
        return candidate["origin"], bool(candidate["origin_trusted"])

    def tabs_to_peers(self) -> str:
        """How to get the focus to the Peers table from where it is: tab moves along the focus
        chain, which passes the candidate's detail (it scrolls) on the way."""
        chain = self.screen.focus_chain
        peers = self.query_one("#peer-table", DataTable)
        if peers not in chain:
            return "tab moves there"
        here = chain.index(self.app.focused) if self.app.focused in chain else -1
        presses = (chain.index(peers) - here) % len(chain) or len(chain)
        return {1: "tab moves there", 2: "tab twice moves there"}.get(presses, f"tab {presses} times moves there")

    def action_trust(self) -> None:
        target = self._trust_target()
        if target is None:
            return
        origin, trusted = target
        share = self.app.engine("share")
        self.run_action(trust_said, lambda store: share.trust(store, origin, not trusted))

    def action_reject_origin(self) -> None:
        """X: reject every lesson the selected origin sent that still waits for a decision
        (`remem share reject --origin`), asked first: a flood from one sender goes in one step."""
        if self.app.write_refused():  # before the dialog: the answer is not lost
            return
        target = self._trust_target("reject the waiting lessons of")
        if target is None:
            return
        origin = target[0]
        peer = next((p for p in self.peers if p["origin"] == origin), {})
        who = sender(origin, peer.get("label"))
        held = peer.get("lessons") or {}
        waiting = int(held.get("candidate") or 0) + int(held.get("quarantined") or 0)
        if not waiting:
            self.app.notify(f"nothing from {who} waits for a decision", severity="warning", markup=False)
            return
        share_choices = self.app.engine("share_choices")

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.run_action(lambda out: f"rejected {lessons(len(out[1]))} from {who}",
                                lambda store: share_choices.reject_origin(store, origin))

        self.app.push_screen(Confirm(
            f"Reject {lessons(waiting)} waiting from {who}?",
            f"Every lesson {who} sent that waits for a decision (candidate or quarantined) is "
            "rejected: none of them comes back, and none reaches your agents. What it sends later "
            "arrives as new candidates. Its lessons already accepted or active stay.", "Reject all"),
            confirmed)

    def has_folder(self) -> bool:
        """Whether a sync folder is set; when not, say how to set one (the engine's own message
        names the CLI's --folder, which the app does not have)."""
        if self.app.engine("config").load()["share"]["folder"]:
            return True
        self.app.notify("no sync folder: set one with `remem config set share.folder PATH`, then press y",
                        severity="warning", markup=False)
        return False

    def action_sync(self) -> None:
        if not self.has_folder():
            return
        share = self.app.engine("share")

        def warned(out: dict[str, Any]) -> None:
            problems = sync_problems(out)
            if problems:
                self.app.notify(problems, severity="warning", markup=False)

        self.run_action(sync_said, lambda store: share.sync(store), warned)

    def action_revoke(self) -> None:
        if self.app.write_refused():  # before the dialog: what is typed there is not lost
            return
        if not self.has_folder():
            return
        share = self.app.engine("share")

        def asked(answer: str | None) -> None:
            if not answer:
                return
            try:  # the engine's check before the dialog: a lesson another memory wrote is not ours to revoke
                lesson = self.app.engine("share_choices").revoke_check(self.app.store, answer)
            except Exception as exc:  # that, an id no lesson has, an ambiguous prefix: the engine's line
                self.app.notify(str(exc), severity="error", markup=False)
                return
            lesson_id = lesson["id"]
            if lesson["status"] == "revoked":
                self.app.notify(f"{lesson_id} is already revoked", severity="warning", markup=False)
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.run_action(f"revoked {lesson_id}",
                                    lambda store: share.revoke(store, lesson_id, share.resolve_folder()))

            self.app.push_screen(Confirm(
                f"Revoke {lesson_id} everywhere?",
                f"{lesson['text']}\n\nIt is retired here, and in every memory that holds it at its next "
                "sync. A revocation cannot be undone.", "Revoke"), confirmed)

        self.app.push_screen(AskValue("Revoke which of your lessons everywhere?", "lesson id"), asked)
