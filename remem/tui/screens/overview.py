"""Overview, the first screen: counts, last ingest and sleep, corrections per day, the
primed-versus-held-out comparison, and the morning report."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Label, Markdown, Sparkline, Static

from remem.tui.widgets.pane import Pane
from remem.tui.widgets.format import lines, markup, plain, since


class OverviewPane(Pane):
    def compose(self) -> ComposeResult:
        with Horizontal(id="overview-top"):
            yield Static("", id="overview-counts", classes="card")
            with Vertical(id="overview-trend", classes="card"):
                yield Label("Corrections per day (30 days)", classes="section")
                yield Sparkline([], id="overview-sparkline")
                yield Static("", id="overview-measure")
        with VerticalScroll(id="overview-morning"):
            yield Markdown("", id="overview-report")

    def on_mount(self) -> None:
        self.reload()

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
        measure = self.app.engine("measure").measure(store, 30)
        self.query_one("#overview-measure", Static).update(lines(
            [plain(line) for line in self.app.engine("measure").summary_lines(measure)]))
        text = self.app.engine("sleep").morning_report() or (
            "# No morning report yet\n\n`remem sleep` writes one: what was learned, merged, "
            "confirmed, failed and faded overnight.")
        self.query_one("#overview-report", Markdown).update(text)
