"""Text helpers every reader shares: storable text and the text of a message's content.

Standard library only and no imports at all: the hooks and the proxy use it on their hot path.
"""

from __future__ import annotations

from typing import Any, Iterable


def clean_text(text: str, errors: str = "replace") -> str:
    """Text every tokenizer and SQLite accept. A shell argument in another encoding reaches
    Python as surrogate escapes ("caf\\udce9"), JSON can carry half an emoji ("\\ud83d"):
    the bytes that are not UTF-8 become U+FFFD (a lone surrogate "?"), so the rest is kept;
    with errors="backslashreplace" they show as \\xNN instead (a file name, to be told apart).
    NUL characters are dropped: a pipe that delivered stray bytes must not put them into a
    title or a query (SQLite keeps them, and every tool that reads the text stops there).
    Text that is already valid comes back as the same object."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", errors)
    except UnicodeEncodeError:  # a lone surrogate that is not an escaped byte
        return text.encode("utf-8", errors).decode("utf-8")


def content_text(content: Any, part_types: Iterable[str] | None = ("text",)) -> str:
    """Text of a message or tool-result content: a string, or a list of parts (plain strings,
    and dicts with a string "text" whose "type" is one of `part_types`; None takes every
    type, a part without one included), joined by newlines. Anything else is ""."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    types = None if part_types is None else frozenset(part_types)
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif (isinstance(part, dict) and isinstance(part.get("text"), str)
              and (types is None or part.get("type") in types)):
            parts.append(part["text"])
    return "\n".join(parts)
