"""Blocks an agent's harness writes into the person's message, taken out of it.

Claude Code and Codex put notices, hook output, editor state and reminders into the same user
message the person typed, each as a tagged block (`<ide_opened_file>…</ide_opened_file>`,
`<task-notification>…`, `<skill>…`), before, after or between the person's words. `TaggedBlocks`
removes every block of the tags it is given, wherever it sits, and keeps the words around it.

A tag the person only mentions stays as typed: an opening tag with no closing tag after it,
one that another opening tag of the same name follows before any close (a mention before a
real block), and any tag inside `inline code` or a fenced code block.

Standard library only: the readers run on every ingest.
"""

from __future__ import annotations

import re
from typing import Collection, Mapping

# Markdown code the person wrote: a fenced block with its closing fence, or an inline span on
# one line. A tag inside it is quoted, not injected. A fence left open is no code here, or a
# block the harness appended after it would pass for quoted.
_CODE = (r"(?P<fenced>^[ \t]*(?P<fence>`{3,}|~{3,}).*?^[ \t]*(?P=fence)[ \t]*$)"
         r"|(?P<inline>(?P<tick>`{1,2})[^`\n]+(?P=tick))")


class TaggedBlocks:
    """Removes `<tag …>…</tag>` blocks of some tag names from text (see the module docstring).

    `names`: exact tag names; `families`: regex fragments a tag name may match as a whole
    (`"ide_[a-z_]+"`); `trailers`: per tag, a regex for harness text that follows its block
    and goes with it; `blank_only`: tags removed only when nothing but whitespace is inside.
    """

    def __init__(self, names: Collection[str], families: Collection[str] = (),
                 trailers: Mapping[str, str] | None = None, blank_only: Collection[str] = ()) -> None:
        alternatives = [re.escape(n) for n in sorted(names, key=len, reverse=True)] + list(families)
        tag = "|".join(alternatives)
        self._token = re.compile(rf"{_CODE}|(?P<open><(?P<tag>{tag})(?=[\s>])[^<>]*>)", re.M | re.S)
        self._open: dict[str, re.Pattern[str]] = {}  # tag name -> its opening tag, made on first use
        self._trailers = {name: re.compile(pattern) for name, pattern in (trailers or {}).items()}
        self._blank_only = frozenset(blank_only)

    def strip(self, text: str) -> str:
        """`text` without the blocks; whitespace where one was is merged with its neighbours'."""
        if "<" not in text:
            return text
        cuts: list[tuple[int, int]] = []
        unclosed: set[str] = set()  # tags never closed after some point: no need to look again
        pos = 0
        while True:
            m = self._token.search(text, pos)
            if m is None:
                break
            pos = m.end()
            if m.group("open") is None:
                continue  # code: kept whole, tags in it included
            end = self._block_end(text, m, unclosed)
            if end is not None:
                cuts.append((m.start(), end))
                pos = end
        if not cuts:
            return text
        starts = [start for start, _ in cuts[1:]] + [len(text)]
        return _join([text[:cuts[0][0]]] + [text[end:nxt] for (_, end), nxt in zip(cuts, starts)])

    def _block_end(self, text: str, m: re.Match[str], unclosed: set[str]) -> int | None:
        """Where the block opened by `m` ends (its trailer included); None if it is a mention."""
        name = m.group("tag")
        close_tag = f"</{name}>"
        close = -1 if name in unclosed else text.find(close_tag, m.end())
        if close < 0:
            unclosed.add(name)
            return None
        opener = self._open.get(name)
        if opener is None:
            opener = self._open[name] = re.compile(rf"<{re.escape(name)}(?=[\s>])[^<>]*>")
        if opener.search(text, m.end(), close):
            return None  # the same tag opens again before this one closes: this one is a mention
        if name in self._blank_only and text[m.end():close].strip():
            return None
        end = close + len(close_tag)
        trailer = self._trailers.get(name)
        if trailer is not None:
            follow = trailer.match(text, end)
            if follow:
                end = follow.end()
        return end


def _join(pieces: list[str]) -> str:
    """The pieces blocks stood between, joined: the whitespace around each cut becomes one separator.

    A line break stays a line break (a blank line at most, the next line's indent kept),
    spaces become one space, and words a block split with no space stay joined.
    """
    out: list[str] = []
    seam = ""  # the whitespace gathered since the last of the person's text
    for i, piece in enumerate(pieces):
        body = piece.strip()
        if not body:
            seam += piece  # nothing but whitespace between two blocks
            continue
        lead = piece[:len(piece) - len(piece.lstrip())]
        if i == 0:
            out.append(lead)
        else:
            out.append(_separator(seam + lead, lead))
        out.append(body)
        seam = piece[len(piece.rstrip()):]
    if seam:
        out.append(_separator(seam, ""))
    return "".join(out)


def _separator(seam: str, lead: str) -> str:
    if "\n" in seam:
        indent = lead[lead.rfind("\n") + 1:] if "\n" in lead else ""
        return ("\n\n" if seam.count("\n") > 1 else "\n") + indent
    return " " if seam else ""
