"""The remem app: five tabs over one store, driven from the keyboard."""

from __future__ import annotations

import importlib
from typing import Any, Iterable

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, TabbedContent, TabPane, Tabs

from remem.tui.screens.episodes import EpisodesPane
from remem.tui.screens.lessons import LessonsPane
from remem.tui.screens.modals import HelpScreen
from remem.tui.screens.overview import OverviewPane
from remem.tui.screens.shared import SharedPane
from remem.tui.screens.sleep import SleepPane

TABS = (("overview", "Overview"), ("episodes", "Episodes"), ("lessons", "Lessons"),
        ("sleep", "Sleep"), ("shared", "Shared"))

# (tab, action on that tab's pane, title in the command palette, help)
PALETTE = [
    ("episodes", "search", "Search memories", "Hybrid recall over every episode"),
    ("episodes", "archive", "Archive or restore memory", "Hide the selected episode from recall, or bring it back"),
    ("episodes", "forget", "Forget memory", "Archive or delete the selected episode for good"),
    ("episodes", "promote", "Promote memory", "Make the selected episode long-term"),
    ("episodes", "tag", "Tag memory", "Add tags to the selected episode"),
    ("episodes", "importance", "Set importance", "Set the selected episode's importance"),
    ("episodes", "connect", "Connect memories", "Connect the selected episode to another"),
    ("episodes", "sort", "Sort episodes", "Sort by the next column"),
    ("episodes", "next_page", "Next page of episodes", "Page down"),
    ("episodes", "prev_page", "Previous page of episodes", "Page up"),
    ("lessons", "edit", "Edit lesson", "Rewrite the selected lesson"),
    ("lessons", "veto", "Veto or restore lesson", "Never prime or render it again, or bring it back"),
    ("lessons", "merge", "Merge lessons", "Merge the selected lesson into another"),
    ("sleep", "run_sleep", "Run sleep", "Run every pass (or the chosen one) and watch it"),
    ("shared", "accept", "Accept shared lesson", "Trust the selected candidate"),
    ("shared", "reject", "Reject shared lesson", "Drop the selected candidate"),
    ("shared", "reject_origin", "Reject every lesson of an origin",
     "Reject every waiting lesson the selected candidate's origin (or peer) sent, asked first"),
    ("shared", "trust", "Trust or distrust peer",
     "Toggle trust of the selected candidate's origin (in the Peers table: the selected peer)"),
    ("shared", "sync", "Sync now", "Export, receive, confirm and revoke through the sync folder"),
    ("shared", "revoke", "Revoke one of our lessons", "Retire it in every memory that has it"),
]


# How long an engine write waits for the memory another process holds (the store tells the pane
# when it does) before the header says so: a hook holds it for a few milliseconds.
WAITING_AFTER = 0.5


class RememApp(App[None]):
    CSS_PATH = "app.tcss"
    # Below 140 columns the detail goes under its table, which then has the whole width
    # (Episodes' columns alone need about 90); from 140 on it sits beside it.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]
    TITLE = "remem"
    SUB_TITLE = "long-term memory for coding agents"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Keys"),
        Binding("ctrl+r", "reload", "Reload"),
        *[Binding(str(i + 1), f"show_tab('{tab}')", label, show=False) for i, (tab, label) in enumerate(TABS)],
    ]

    def __init__(self, store: Any = None) -> None:
        super().__init__()
        if store is None:
            from remem.engine.store import Store

            store = Store()
        self.store = store
        # Tabs to read again when next shown. At the start every tab but the first: the first
        # paint reads only what it shows (DESIGN: first paint <= 1.5 s with 100,000 episodes).
        self.stale: set[str] = {tab for tab, _ in TABS[1:]}
        self.acting = False  # an engine write is running in its thread (Pane.run_action)
        self._waiting: Any = None  # the timer that says, when a write waits long for the memory, so
        self._said_waiting = False  # the notification that says so was shown for this write

    def engine(self, name: str) -> Any:
        """An engine module (or remem.config), imported on first use."""
        return importlib.import_module("remem.config" if name == "config" else f"remem.engine.{name}")

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="overview"):
            with TabPane("Overview", id="overview"):
                yield OverviewPane(id="overview-pane")
            with TabPane("Episodes", id="episodes"):
                yield EpisodesPane(id="episodes-pane")
            with TabPane("Lessons", id="lessons"):
                yield LessonsPane(id="lessons-pane")
            with TabPane("Sleep", id="sleep"):
                yield SleepPane(id="sleep-pane")
            with TabPane("Shared", id="shared"):
                yield SharedPane(id="shared-pane")
        yield Footer()

    def pane(self, tab: str) -> Any:
        return self.query_one(f"#{tab}-pane")

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        if tab in self.stale:  # now, not when TabActivated comes: an action may follow at once
            self.reload_tab(tab)
        try:
            self.pane(tab).query(DataTable).first().focus()
        except NoMatches:
            # A tab without a table (the Overview): the tab bar takes the focus, as at start.
            # Left on the table of the tab before, now hidden, the focus would move to that
            # tab's next widget, and the tab before would come back in front.
            self.query_one(TabbedContent).query_one(Tabs).focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_reload(self) -> None:
        self.refresh_all()
        self.notify("reloaded")

    def refresh_all(self, except_sleep: bool = False) -> None:
        """Read the tab shown again now, and every other one when it is next shown."""
        shown = self.query_one(TabbedContent).active
        for tab, _ in TABS:
            if except_sleep and tab == "sleep":
                continue
            if tab == shown:
                self.reload_tab(tab)
            else:
                self.stale.add(tab)

    def mounted(self, pane: Any) -> None:
        """A pane just mounted reads the store now only if its tab is not waiting to be shown."""
        tab = (pane.id or "").removesuffix("-pane")
        if tab not in self.stale:
            self.reload_tab(tab)

    def reload_tab(self, tab: str) -> None:
        self.stale.discard(tab)
        self.pane(tab).safe_reload()  # a pane that cannot load says so; the rest go on

    def begin_work(self) -> None:
        """An engine write has started: the header says so at once (memory_held says, when it
        waits for another remem process, what it waits for)."""
        self.acting = True
        self.sub_title = "working…"
        self._said_waiting = False

    def memory_held(self, held: bool) -> None:
        """The write in its thread found the memory held by another remem process and waits for
        it (SQLite waits up to 5 s), or has it now. Once it has waited WAITING_AFTER, the header
        says what it waits for, until it has the memory. Never on time alone: a first write
        loading the embedder is slow, and waits for nobody."""
        self._stop_waiting()
        if not self.acting:
            return
        if held:
            self._waiting = self.set_timer(WAITING_AFTER, self._say_waiting)
        elif self.sub_title != self.SUB_TITLE:
            self.sub_title = "working…"

    def _stop_waiting(self) -> None:
        if self._waiting is not None:
            self._waiting.stop()
            self._waiting = None

    def _say_waiting(self) -> None:
        self._waiting = None
        if self.acting:
            self.sub_title = "waiting for the memory…"
            if self._said_waiting:  # a write of the same key waits again: the header says it
                return
            self._said_waiting = True
            self.notify("still working: waiting for the memory (another remem process is writing "
                        "to it). Keep browsing; q quits.", markup=False)

    def write_refused(self, then: str = "try again once it is done") -> bool:
        """Whether a write must not start now, said in one line: one at a time, a sleep run
        included (both wait for the same memory, on connections of their own). A key that asks
        something first checks this before its dialog opens, so what is typed there is never
        thrown away."""
        if self.acting:
            said = "still saving the last change"
        elif self.pane("sleep").sleep_running:
            said = "sleep is running"
        else:
            return False
        self.notify(f"{said}; {then}", severity="warning", markup=False)
        return True

    def end_work(self) -> None:
        self.acting = False
        self.sub_title = self.SUB_TITLE
        self._stop_waiting()

    def others_changed(self, pane: Any) -> None:
        """An action in one tab changed the database: the tab shown now, when it is another
        (the write ran in a thread while the person moved on), reads it again now; every other
        tab when it is next shown (not now: the Overview's measures are not free on a large
        store)."""
        shown = self.query_one(TabbedContent).active
        for tab, _ in TABS:
            if self.pane(tab) is pane:
                continue
            if tab == shown:
                self.reload_tab(tab)
            else:
                self.stale.add(tab)

    @on(TabbedContent.TabActivated)
    def _tab_shown(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id or ""
        if tab in self.stale:
            self.reload_tab(tab)

    def run_pane_action(self, tab: str, action: str) -> None:
        self.action_show_tab(tab)
        getattr(self.pane(tab), f"action_{action}")()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            # Textual's own "Keys" (its key panel) would come first when "keys" is typed;
            # it stays, under a name that does not hide remem's table of keys.
            yield command._replace(title="Key panel") if command.title == "Keys" else command
        for index, (tab, label) in enumerate(TABS):
            yield SystemCommand(f"Go to {label}", f"Show the {label} tab (key {index + 1})",
                                lambda tab=tab: self.action_show_tab(tab))
        for tab, action, title, help_text in PALETTE:
            yield SystemCommand(title, help_text, lambda tab=tab, action=action: self.run_pane_action(tab, action))
        yield SystemCommand("Keys", "Show every remem key (?)", self.action_help)
        yield SystemCommand("Reload", "Read everything again from the database", self.action_reload)

    def on_unmount(self) -> None:
        self.store.close()
