"""Sleep: run it (or one pass) in a thread and watch every pass live; the history of runs."""

from __future__ import annotations

import threading
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, DataTable, Label, ProgressBar, RichLog, Select

from remem.tui.widgets.pane import Pane, failure_line
from remem.tui.widgets.columns import FitsItsWidth, fill, room_left, widest
from remem.tui.widgets.format import cut, since

HISTORY_COLUMNS = ("run", "started", "took", "status", "what changed")
# The fewest characters of a run's account its row shows, and how many before the table's
# width is known; else as many as the other columns leave.
CHANGES_WIDTH = (30, 160)


class SleepPane(FitsItsWidth, Pane):
    fitted_table = "#sleep-history"
    BINDINGS = [Binding("r", "run_sleep", "Run sleep")]
    sleep_running = False

    def compose(self) -> ComposeResult:
        from remem.engine.sleep import PASSES

        with Horizontal(classes="filters"):
            yield Select([(p, p) for p in PASSES], prompt="every pass", id="sleep-pass")
            yield Button("Run sleep (r)", id="sleep-run", variant="primary")
        with Horizontal(classes="split"):
            with Vertical(id="sleep-passes"):
                for name in PASSES:
                    with Horizontal(classes="pass-row"):
                        yield Label(name, classes="pass-name")
                        yield ProgressBar(total=1, show_eta=False, id=f"bar-{name}")
                        yield Label("", id=f"count-{name}", classes="pass-count")
            # min_width: RichLog lays lines out at least 78 wide by default, wider than the
            # log's half of the pane; the end of a long line was then out of sight.
            yield RichLog(id="sleep-log", wrap=True, markup=False, max_lines=2000, min_width=1)
        yield DataTable(id="sleep-history", cursor_type="row")

    def on_mount(self) -> None:
        self.log_lines: list[str] = []
        self.runs: list[list[str]] = []  # the history's rows as cell texts, newest first
        self.app.mounted(self)  # read when its tab is first shown

    def refit(self) -> None:
        self._fill()

    def reload(self) -> None:
        self.runs = []
        for run in self.app.engine("sleep").history(self.app.store, limit=20):
            took = "-"
            if run["finished"]:
                clock = self.app.engine("clock")
                took = f"{(clock.parse(run['finished']) - clock.parse(run['started'])).total_seconds():.1f}s"
            self.runs.append([str(run["id"]), since(run["started"]), took, run["status"],
                              run_changes(run) if run["status"] != "interrupted"
                              else (run["summary"].get("note", "") if isinstance(run["summary"], dict) else "")])
        self._fill()

    def _fill(self) -> None:
        """The history into its table, each run's account cut to the width the other columns
        leave."""
        table = self.query_one("#sleep-history", DataTable)
        self.fitted_to = table.size.width
        others = widest(HISTORY_COLUMNS[:-1], [texts[:-1] for texts in self.runs])
        width = room_left(table, others, len(HISTORY_COLUMNS), *CHANGES_WIDTH)
        fill(table, HISTORY_COLUMNS, [(texts[0], [*texts[:-1], cut(texts[-1], width)]) for texts in self.runs])

    @on(Button.Pressed, "#sleep-run")
    def _pressed(self) -> None:
        self.action_run_sleep()

    def action_run_sleep(self) -> None:
        if self.sleep_running:
            self.app.notify("sleep is already running")
            return
        if self.app.write_refused("run sleep once it is done"):  # one write at a time
            return
        choice = self.query_one("#sleep-pass", Select)
        passes = None if choice.is_blank() else [str(choice.value)]
        self.sleep_running = True
        self.query_one("#sleep-run", Button).disabled = True
        self._reset_passes()
        self.say(f"sleep: {'every pass' if not passes else passes[0]}")
        self.start_sleep(passes)

    def _reset_passes(self) -> None:
        """Every pass's bar and count back to nothing: what a run shows is its own (a pass the
        last run went through and this one does not keeps no full bar)."""
        from remem.engine.sleep import PASSES

        for name in PASSES:
            self.query_one(f"#bar-{name}", ProgressBar).update(total=1, progress=0)
            self.query_one(f"#count-{name}", Label).update("")

    def start_sleep(self, passes: list[str] | None) -> None:
        """Sleep in a daemon thread, on a connection of its own (the UI thread keeps the
        app's), telling each step to the pane as a message. Not a Textual worker: the app waits
        for those when it quits, and a run waiting for the memory (another process holds it)
        would keep `q` from quitting for the whole busy timeout. A run cut short by quitting
        leaves what a killed sleep leaves: its transactions commit whole or not at all, the
        kernel drops its sleep.lock, and the next sleep does what it did not."""
        from remem.engine import sleep
        from remem.engine.store import Store

        path = self.app.store.path

        def tell(message: Message) -> None:
            try:
                self.post_message(message)
            except RuntimeError:  # the app closed meanwhile: nobody to tell
                pass

        def run() -> None:
            error = None
            try:
                with Store(path) as store:
                    sleep.run_sleep_collect(store, passes, on_progress=lambda event: tell(self.Stepped(event)))
            except Exception as exc:
                error = failure_line(exc, "tui.sleep")
            tell(self.Ended(error))

        threading.Thread(target=run, name="remem-tui-sleep", daemon=True).start()

    class Stepped(Message, bubble=False):
        """A sleep run's progress event, from its thread."""

        def __init__(self, event: Any) -> None:
            super().__init__()
            self.event = event

    class Ended(Message, bubble=False):
        """A sleep run is over: error is its one line when it stopped, None when it finished."""

        def __init__(self, error: str | None) -> None:
            super().__init__()
            self.error = error

    def on_sleep_pane_stepped(self, message: Stepped) -> None:
        self.show_progress(message.event)

    def on_sleep_pane_ended(self, message: Ended) -> None:
        self.finished(message.error)

    def show_progress(self, event: Any) -> None:
        if event.pass_name != "sleep":
            try:
                bar = self.query_one(f"#bar-{event.pass_name}", ProgressBar)
            except Exception:
                bar = None
            if bar is not None:
                bar.update(total=max(event.total, 1), progress=event.done if event.total else 1)
                self.query_one(f"#count-{event.pass_name}", Label).update(f"{event.done}/{event.total}")
        if event.message:
            self.say(f"{event.pass_name}: {event.message}")

    def say(self, line: str) -> None:
        self.log_lines.append(line)
        self.query_one("#sleep-log", RichLog).write(line)

    def finished(self, error: str | None) -> None:
        self.sleep_running = False
        self.query_one("#sleep-run", Button).disabled = False
        if error:
            self.say(f"sleep stopped: {error}")
            self.app.notify(error, severity="error", markup=False)
        else:
            self.say("sleep finished")
            self.app.notify("sleep finished")
        self.safe_reload()
        self.app.refresh_all(except_sleep=True)


# What a person looks for after a sleep, first in a run's row: what it learned and checked;
# then the rest in pass order (the cell is cut at the table's edge).
LEARNING = ("lessons", "merge", "verify", "predict")


def run_changes(run: dict[str, Any]) -> str:
    """A finished run's history line: each pass that changed something, in the words `remem
    sleep` prints for it (sleep_describe.changed_passes), what it learned first."""
    from remem.engine.sleep_describe import changed_passes

    summary = run["summary"] if isinstance(run["summary"], dict) else {}
    changes = changed_passes(summary.get("passes", summary))
    changes.sort(key=lambda change: change[0] not in LEARNING)  # stable: pass order otherwise
    return "; ".join(f"{name}: {words}" for name, words in changes) or "nothing new"
