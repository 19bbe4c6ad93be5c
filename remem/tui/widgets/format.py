"""Text helpers: relative times from the engine's clock, one-line cuts with an ellipsis, and
stored text shown as written.

Stored text (titles, lessons, tags, paths, ids, whatever an agent or a person typed) is never
read as markup. It reaches a widget as Content (plain(), or markup() with the text as a
template value, which Textual inserts after the markup is parsed) and a table as Rich Text
(cell()). Escaping it into a markup string is not safe: Textual's escape() only escapes whole
"[tag]"s, so a "[" left over by a cut paired with a later "[b]…[/b]" and the app stopped with
a MarkupError; and a text ending in a backslash swallows the "[" of the tag after it.
"""

from __future__ import annotations

from rich.cells import cell_len, chop_cells
from rich.text import Text
from textual.content import Content

from remem.engine import clock


def _text(value: object) -> str:
    """The characters a widget shows for a value: control codes Textual strips are stripped
    here first, so the styles a template puts around a value stay where they belong."""
    return Content("" if value is None else str(value)).plain


def plain(text: object) -> Content:
    """Stored text as itself: a memory saying "[/b]" or "[@click=quit]" is shown, not obeyed."""
    return Content(_text(text))


def markup(template: str, **values: object) -> Content:
    """Our markup with stored text in it: `markup("[b]$title[/b]", title=row["title"])`.
    The template is ours and is read as markup; every value is shown as written."""
    return Content.from_markup(template, **{name: _text(value) for name, value in values.items()})


def lines(parts: list[Content | str]) -> Content:
    """Lines joined with newlines. A str among them is ours and read as markup."""
    return Content("\n").join(Content.from_markup(p) if isinstance(p, str) else p for p in parts)


def cell(text: object, width: int | None = None) -> Text:
    """A table cell shown as written (a str cell would be read as Rich markup), cut to `width`."""
    shown = cut(text, width) if width else _text(text)
    return Text(shown, end="", no_wrap=True, overflow="ellipsis")


def figure(value: object, spec: str = ".2f") -> str:
    """A stored number as a cell or a detail shows it; "?" for a value that is no number (a
    corrupt row): one bad value never keeps a page, or the rest of a detail, from being shown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    return format(value, spec)


def ago(stamp: str | None) -> str:
    """'3m', '5h', '12d', '2y' before the engine's now (frozen in tests)."""
    if not stamp:
        return "-"
    try:
        seconds = (clock.now() - clock.parse(stamp)).total_seconds()
    except ValueError:
        return stamp[:10]
    if seconds < 0:
        return "soon"
    for unit, size in (("y", 31_536_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


def since(stamp: str | None) -> str:
    """'5h ago', 'just now', or '-' when there is no time: for sentences, where ago() reads oddly."""
    short = ago(stamp)
    if short == "now":
        return "just now"
    if short[:-1].isdigit() and short[-1:] in ("y", "d", "h", "m"):
        return f"{short} ago"
    return short  # '-', 'soon', or a date it could not read


def sender(origin: str | None, label: str | None = None) -> str:
    """Another memory, as `remem lessons show` names it (`memories.sender_name`)."""
    from remem.engine.memories import sender_name

    return sender_name(origin, label)


def short_sender(origin: str | None, label: str | None = None) -> str:
    """Another memory after a received lesson's words, as `remem lessons list` names it."""
    from remem.engine.memories import sender_name

    return sender_name(origin, label, brief=True)


def whole(text: object, limit: int, where: str = "") -> str:
    """Stored text shown whole, its lines as written (a command's output, a traceback), plain
    text as cut() gives it; past `limit` characters it stops, saying how much it left out (and
    `where` the rest is read, when it is read elsewhere)."""
    text = _text(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters{': ' + where if where else ''})"


def cut(text: object, width: int) -> str:
    """One line of at most `width` terminal cells (a wide character, as in Chinese or Japanese,
    takes two: what the table's columns measure), plain text (not markup: pass it to markup()
    as a value, or to cell() or plain()). Text that fits is kept as it is; the rest is cut
    between two characters, never through a wide one, and ends in "…"."""
    text = " ".join(_text(text).split())
    if cell_len(text) <= width:
        return text
    room = max(0, width - 1)
    # A cut never needs more characters than this (only text thick with zero-width marks gets
    # cut a little short), so a long memory is not measured whole to show its start.
    lines = chop_cells(text[: 4 * room + 4], room) if room else []
    kept = lines[0] if lines else ""
    while cell_len(kept) > room:  # chop_cells keeps a joined sequence whole, wider than the room
        kept = kept[:-1]
    return kept + "…"
