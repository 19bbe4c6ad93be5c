"""Modal screens: confirm, ask for a value, edit text, pick a forget mode, show the keys.

A dialog is never taller than the screen leaves it (app.tcss: #dialog), whatever the text it
shows: that text scrolls in the dialog's body, and its buttons (or its input) are docked at the
dialog's bottom, in sight at 80x24 with a lesson or a memory of any length above them."""

from __future__ import annotations

from typing import Iterable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Markdown, Select, Static, TextArea


class ConfirmForget(ModalScreen[str | None]):
    """Forget a memory: archive (soft, can be restored) or delete for good (hard). text: what
    the question's cut title leaves out (the whole title, the gist), read before it goes."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, title: str, text: str = "") -> None:
        super().__init__()
        self.memory_title = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"Forget “{self.memory_title}”?", id="question", markup=False)
            with VerticalScroll(classes="body"):
                if self.text:
                    yield Static(self.text, id="text", classes="shown", markup=False)
                yield Static("Archive hides it from recall and keeps it; delete removes it from every index "
                             "and cannot be undone.", classes="hint", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Archive", id="soft", variant="primary")
                yield Button("Delete for good", id="hard", variant="error")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        # Archive, the choice that can be undone, not the body the text scrolls in (first in the
        # focus chain): enter archives, in sight of the button that says so.
        self.query_one("#soft", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "cancel" else event.button.id)


class Confirm(ModalScreen[bool]):
    """Yes or no to a change that cannot be undone, with the text it changes shown (detail,
    wrapped to the dialog's width): a merge, a revocation."""

    BINDINGS = [Binding("escape", "dismiss(False)", "Cancel")]

    def __init__(self, question: str, detail: str, yes: str) -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="wide"):
            yield Label(self.question, id="question", markup=False)
            with VerticalScroll(classes="body"):
                yield Static(self.detail, id="text", classes="shown", markup=False)
            with Horizontal(classes="buttons"):
                yield Button(self.yes, id="yes", variant="error")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()  # enter pressed out of habit changes nothing

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class AskValue(ModalScreen[str | None]):
    """One line of input (a tag, an importance, an id, a folder); detail: what the person needs
    to know to answer, below the question, wrapped to the dialog's width."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, question: str, placeholder: str = "", value: str = "", detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.placeholder = placeholder
        self.value = value
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question, id="question", markup=False)
            if self.detail:  # a Static, not a Label: it wraps instead of being cut at the edge
                with VerticalScroll(classes="body"):
                    yield Static(self.detail, id="detail", classes="hint", markup=False)
            with Vertical(classes="foot"):
                yield Input(value=self.value, placeholder=self.placeholder, id="answer")
                yield Label("Enter to save, Esc to cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#answer", Input).focus()  # not the detail's body, first in the focus chain

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)


class ConnectTo(ModalScreen[tuple[str, str] | None]):
    """Connect the selected memory to another one, with a type; target and kind: what was
    typed and chosen before (a connection that could not be made, asked again)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, types: Iterable[str], target: str = "", kind: str = "related_to") -> None:
        super().__init__()
        self.types = list(types)
        self.target = target
        self.kind = kind if kind in self.types else "related_to"

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Connect to which memory?", id="question")
            yield Input(value=self.target, placeholder="id (a prefix of 6+ characters is enough)", id="target")
            yield Select([(t, t) for t in self.types], value=self.kind, allow_blank=False, id="type")
            with Horizontal(classes="buttons"):
                yield Button("Connect", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def _done(self) -> None:
        target = self.query_one("#target", Input).value.strip()
        kind = self.query_one("#type", Select).value
        self.dismiss((target, str(kind)) if target else None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._done()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._done()
        else:
            self.dismiss(None)


class EditText(ModalScreen[str | None]):
    """Edit a lesson's text in a TextArea. empty: what saving no text says, the editor left
    open (nothing saved, nothing closed); without it, saving no text cancels."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel"), Binding("ctrl+s", "save", "Save")]

    def __init__(self, title: str, text: str, empty: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.empty = empty

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="wide"):
            yield Label(self.title_text, id="question", markup=False)
            yield TextArea(self.text, id="editor", soft_wrap=True)
            with Horizontal(classes="buttons"):
                yield Button("Save (ctrl+s)", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    def action_save(self) -> None:
        text = self.query_one(TextArea).text.strip()
        if not text and self.empty:
            self.app.notify(self.empty, severity="warning", markup=False)
            return
        self.dismiss(text or None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.dismiss(None)


HELP = """\
# Keys

| key | where | what |
| --- | --- | --- |
| 1-5 | anywhere | Overview, Episodes, Lessons, Sleep, Shared |
| ctrl+p | anywhere | command palette: every action by name |
| / | Episodes | search with hybrid recall (Esc clears) |
| n / p | $paged | next / previous page (pagedown / pageup too) |
| s | Episodes | sort by the next column |
| a | Episodes | archive or restore |
| f | Episodes | forget (archive or delete for good) |
| P | Episodes | promote to long-term |
| t / i / c | Episodes | tag, set importance, connect |
| e / v / m | Lessons | edit, veto or restore, merge into another |
| r | Sleep | run sleep (the chosen pass or all) |
| a / x | Shared | accept / reject a candidate (A: accept a quarantined one after reading why) |
| X | Shared | reject every waiting lesson of the selected candidate's origin (or peer), asked first |
| T / y / R | Shared | trust or distrust the selected candidate's origin (or peer), sync now, revoke one of ours |
| ctrl+r | anywhere | reload from the database |
| q | anywhere | quit |
"""


class HelpScreen(ModalScreen[None]):
    """The keys, in a dialog that scrolls (up/down, pageup/pagedown, home/end) when the
    terminal is too short for it, as 80x24 is."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss(None)", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog", classes="wide"):
            yield Markdown(HELP.replace("$paged", self.paged_tabs()))

    def paged_tabs(self) -> str:
        """The tabs whose table n / p page: those whose pane is a PagedPane."""
        from remem.tui.app import TABS  # the app imports this module
        from remem.tui.paging import PagedPane

        paged = {pane.id for pane in self.app.screen_stack[0].query(PagedPane)}
        return ", ".join(label for tab, label in TABS if f"{tab}-pane" in paged)

    def on_mount(self) -> None:
        self.query_one("#dialog", VerticalScroll).focus()
