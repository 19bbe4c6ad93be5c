"""Overview, the first screen: counts, last ingest and sleep, corrections per day, the
primed-versus-held-out comparison, and the morning report (shown as written, line by line:
never read as Markdown, since the lessons in it may come from another memory).

The measures read every correction, error and prime decision (most of a second at 100,000
episodes), so they are worked out in a thread after the rest is drawn: the first paint does
not wait for them."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.content import Content
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Label, Sparkline, Static

from remem.tui.widgets.pane import Pane
from remem.tui.widgets.format import lines, markup, plain, since

NO_REPORT = ("# No morning report yet\n\n`remem sleep` writes one: what was learned, merged, confirmed, "
             "failed and faded overnight.")


def report_lines(text: str) -> Content:
    """A morning report as it reads: its headings ("# ", "## ") in bold, every other line as
    written. Read as Markdown, a lesson in it lost its dunders (`__init__` came out as "init"),
    its HTML, and a link's address behind clickable words."""
    shown: list[Content | str] = []
    for line in text.splitlines():
        if line.startswith("# "):
            shown.append(markup("[b $accent]$title[/]", title=line[2:]))
        elif line.startswith("## "):
            shown.append(markup("[b]$title[/b]", title=line[3:]))
        else:
            shown.append(plain(line))
    return lines(shown)


class OverviewPane(Pane):
    def compose(self) -> ComposeResult:
        with Horizontal(id="overview-top"):
            yield Static("", id="overview-counts", classes="card")
            with Vertical(id="overview-trend", classes="card"):
                yield Label("Corrections per day (30 days)", classes="section")
                yield Sparkline([], id="overview-sparkline")
                yield Static("", id="overview-measure")
        with VerticalScroll(id="overview-morning"):
            yield Static("", id="overview-report")

    def on_mount(self) -> None:
        self.app.mounted(self)

    def reload(self) -> None:
        store = self.app.store
        facts = self.app.engine("status").summary(store)
        counts = facts["counts"]
        parts = [
            markup("[b]$n[/b] episodes  $kinds", n=counts["episodes"],
                   kinds=" ".join(f"{k} {v}" for k, v in facts["episodes_by_kind"].items())),
            markup("[b]$n[/b] lessons  $statuses", n=counts["lessons"],
                   statuses=" ".join(f"{k} {v}" for k, v in facts["lessons_by_status"].items())),
            f"[b]{counts['predictions']}[/b] predictions · {counts['connections']} connections · "
            f"{counts['sessions']} sessions",
            f"last ingest: {since(facts['last_ingest']) if facts['last_ingest'] else 'never'}",
            f"last sleep:  {since(facts['last_sleep']) if facts['last_sleep'] else 'never'}",
        ]
        self.query_one("#overview-counts", Static).update(lines(parts))
        browse = self.app.engine("browse")
        self.query_one("#overview-sparkline", Sparkline).data = browse.corrections_by_day(store, 30)
        self.query_one("#overview-measure", Static).update(plain("measuring…"))
        self.call_after_refresh(self._measure, store.path)  # once the rest is on screen
        text = self.app.engine("sleep").morning_report() or NO_REPORT
        self.query_one("#overview-report", Static).update(report_lines(text))

    @work(thread=True, exclusive=True, group="overview-measure")
    def _measure(self, db: Any) -> None:
        """The measures, on a connection of their own (the UI thread keeps the app's)."""
        from textual.worker import get_current_worker

        from remem.engine import measure
        from remem.engine.store import Store

        try:
            with Store(db) as store:
                shown = [plain(line) for line in measure.summary_lines(measure.measure(store, 30))]
        except Exception as exc:  # said where the measures go; the rest of the Overview stands
            shown = [plain(f"cannot measure: {exc}")]
        if get_current_worker().is_cancelled:  # a newer reload's measures come instead
            return
        try:  # a message, not call_from_thread: that would wait for ever on an app that closed
            self.post_message(self.Measured(shown))
        except RuntimeError:  # the app's loop closed meanwhile: nobody to show them to
            pass

    class Measured(Message):
        """The measures' lines, worked out in the thread."""

        def __init__(self, shown: list[Content]) -> None:
            super().__init__()
            self.shown = shown

    def on_overview_pane_measured(self, message: Measured) -> None:
        self.query_one("#overview-measure", Static).update(lines(message.shown))
