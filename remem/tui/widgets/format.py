"""Text helpers for cells: relative times from the engine's clock, cut with an ellipsis, and
stored text made safe to show where Textual reads markup."""

from __future__ import annotations

from textual.markup import escape

from remem.engine import clock


def plain(text: object) -> str:
    """Stored text as itself where markup is read (tables, labels, details): a memory saying
    "[/b]" or "[@click=quit]" is shown, not obeyed."""
    return escape(str("" if text is None else text))


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


def cut(text: str | None, width: int) -> str:
    """One line of at most `width` characters, markup escaped (see plain)."""
    text = " ".join(str(text or "").split())
    return plain(text if len(text) <= width else text[: max(1, width - 1)] + "…")
