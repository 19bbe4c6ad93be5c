"""Blocks an agent's harness writes into the person's message, taken out of it.

Claude Code and Codex put notices, hook output, editor state and reminders into the same user
message the person typed, each as a tagged block (`<ide_opened_file>…</ide_opened_file>`,
`<task-notification>…`, `<skill>…`), before, after or between the person's words. `TaggedBlocks`
removes every block of the tags it is given, wherever it sits, and keeps the words around it.

A tag the person only mentions stays as typed: an opening tag with no closing tag after it,
one that another opening tag of the same name follows before any close (a mention before a
real block), and any tag inside `inline code` or a fenced code block.

Code the person left open quotes nothing, or a block the harness appended after it would pass
for quoted: a fence with no closing fence after it is no code, and neither is one whose closing
fence is a block's own, inside a block that opened after the fence (an editor selection, a
reminder quoting a file) — unless that block's closing tag is itself in the person's code (they
quote both tags, each in its own code).

Each pass over the text is linear, or n log n: the readers run on every ingest, over
transcripts of many megabytes, and a message holds whatever the person pasted.
Standard library only.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Collection, Mapping

# Markdown code the person wrote: a line opening a fenced block (its closing fence is looked
# up apart, see `_Reading.fence_close`), or an inline span on one line.
_CODE = re.compile(r"(?P<fence>^[ \t]*(?P<run>`{3,}|~{3,}))[^\n]*|(?P<tick>`{1,2})[^`\n]+(?P=tick)", re.M)
_INLINE = re.compile(r"(`{1,2})[^`\n]+\1")
# A line that is a fence alone: it closes a block opened with the same run of backticks or tildes.
_FENCE_ALONE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*$", re.M)


class TaggedBlocks:
    """Removes `<tag …>…</tag>` blocks of some tag names from text (see the module docstring).

    `names`: the exact tag names, a closed list (a person's pasted HTML of other names stays);
    `trailers`: per tag, a regex for harness text that follows its block and goes with it;
    `blank_only`: tags removed only when nothing but whitespace is inside.
    """

    def __init__(self, names: Collection[str], trailers: Mapping[str, str] | None = None,
                 blank_only: Collection[str] = ()) -> None:
        tag = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        self._opener = re.compile(rf"<(?P<tag>{tag})(?=[\s>])[^<>]*>")
        self._closer = re.compile(rf"</(?P<tag>{tag})>")
        self._trailers = {name: re.compile(pattern) for name, pattern in (trailers or {}).items()}
        self._blank_only = frozenset(blank_only)

    def strip(self, text: str) -> str:
        """`text` without the blocks; whitespace where one was is merged with its neighbours'."""
        if "<" not in text:
            return text
        openers = list(self._opener.finditer(text))
        if not openers:
            return text
        cuts = _Reading(text, [m.start() for m in openers], *self._blocks(text, openers)).cuts()
        if not cuts:
            return text
        starts = [start for start, _ in cuts[1:]] + [len(text)]
        return _join([text[:cuts[0][0]]] + [text[end:nxt] for (_, end), nxt in zip(cuts, starts)])

    def _blocks(self, text: str, openers: list[re.Match[str]]) -> tuple[list[int], list[int]]:
        """For each opening tag, where its closing tag starts and where its block ends (its
        trailer included); -1 and -1 for a mention. Each on its own, code or not."""
        opens_of: dict[str, list[int]] = {}
        for m in openers:
            opens_of.setdefault(m.group("tag"), []).append(m.start())
        closes_of: dict[str, list[int]] = {}
        for m in self._closer.finditer(text):
            closes_of.setdefault(m.group("tag"), []).append(m.start())
        close_tags: list[int] = []
        ends: list[int] = []
        for m in openers:
            name = m.group("tag")
            close = _first_at(closes_of.get(name, []), m.end())
            again = _first_at(opens_of[name], m.end())
            if (close < 0 or 0 <= again < close  # none, or the same tag opens again first: a mention
                    or (name in self._blank_only and text[m.end():close].strip())):
                close_tags.append(-1)
                ends.append(-1)
                continue
            end = close + len(name) + 3  # </name>
            trailer = self._trailers.get(name)
            follow = trailer.match(text, end) if trailer is not None else None
            close_tags.append(close)
            ends.append(follow.end() if follow else end)
        return close_tags, ends


class _Reading:
    """One text read left to right: which blocks stand outside the person's code (`cuts`).

    `starts`, `close_tags`, `ends`: per opening tag, first to last (see `TaggedBlocks._blocks`).
    """

    def __init__(self, text: str, starts: list[int], close_tags: list[int], ends: list[int]) -> None:
        self.text, self.starts, self.close_tags, self.ends = text, starts, close_tags, ends
        self._fence_closes: dict[str, list[tuple[int, int]]] | None = None
        self._farthest: _FarthestEnd | None = None
        self._code: re.Match[str] | None = None  # the first code at or after `_code_from`
        self._code_from = -1
        self._quoted: dict[int, bool] = {}

    def cuts(self) -> list[tuple[int, int]]:
        """(start, end) of each block to take out, first to last."""
        starts, ends = self.starts, self.ends
        cuts: list[tuple[int, int]] = []
        pos = k = 0
        while True:
            k = bisect_left(starts, pos, k)
            while k < len(starts) and ends[k] < 0:
                k += 1
            if k == len(starts):
                return cuts
            code = self._code_at(pos)
            if code is None or code.start() > starts[k]:
                cuts.append((starts[k], ends[k]))
                pos = ends[k]
                continue
            if code.group("fence") is None:
                pos = code.end()  # inline code: a tag in it is quoted
                continue
            close = self.fence_close(code)
            if close is None or self._left_open_by_block(k, close):
                pos = code.start() + 1  # no code: read on (its second backtick may open a span)
                continue
            pos = close[1]

    def _code_at(self, pos: int) -> re.Match[str] | None:
        """The first code at or after `pos`; looked for again only once `pos` passed the last answer."""
        if self._code_from < 0 or (self._code is not None and self._code.start() < pos):
            self._code, self._code_from = _CODE.search(self.text, pos), pos
        return self._code

    def fence_close(self, opening: re.Match[str]) -> tuple[int, int] | None:
        """(start, end) of the first line closing the fence `opening` opens, if one does."""
        if self._fence_closes is None:
            self._fence_closes = {}
            for m in _FENCE_ALONE.finditer(self.text):
                self._fence_closes.setdefault(m.group(1), []).append((m.start(), m.end()))
        lines = self._fence_closes.get(opening.group("run"), [])
        at = bisect_left(lines, (opening.end(), opening.end()))
        return lines[at] if at < len(lines) else None

    def _left_open_by_block(self, first: int, close: tuple[int, int]) -> bool:
        """Whether the fence closing at `close` is the person's fence left open: the closing line
        is inside a block that opened after the fence (`first` on), the block's own code."""
        holder = self._holder(first, close[0])
        return holder is not None and not self._closing_tag_quoted(holder, close[1])

    def _holder(self, first: int, at: int) -> int | None:
        """The opening tag, `first` or later, of a block that holds position `at`, if one does."""
        last = bisect_left(self.starts, at, first)
        if last == first:
            return None
        if self._farthest is None:
            self._farthest = _FarthestEnd(self.close_tags)
        found = self._farthest.of(first, last)
        return found if self.close_tags[found] > at else None

    def _closing_tag_quoted(self, block: int, after: int) -> bool:
        """Whether the person quotes the block's closing tag, past `after`, in code of theirs: an
        inline span holding it, or a fence holding it whose own close is no other block's."""
        if block not in self._quoted:
            self._quoted[block] = self._in_code(self.close_tags[block], after)
        return self._quoted[block]

    def _in_code(self, at: int, after: int) -> bool:
        text = self.text
        line_end = text.find("\n", at)
        for span in _INLINE.finditer(text, text.rfind("\n", 0, at) + 1, len(text) if line_end < 0 else line_end):
            if span.start() < at < span.end():
                return True
        pos = after
        while True:
            code = _CODE.search(text, pos, at)
            if code is None:
                return False
            if code.group("fence") is None:
                pos = code.end()
                continue
            close = self.fence_close(code)
            if close is None:
                pos = code.end()
            elif close[0] < at:
                pos = close[1]
            else:
                return self._holder(bisect_left(self.starts, code.start()), close[0]) is None


class _FarthestEnd:
    """Of a range of opening tags, the one whose block reaches farthest: a sparse table, built in
    n log n, asked in one step (a walk over the blocks in the range, asked once per fence, is
    quadratic on a paste of many fences)."""

    def __init__(self, reach: list[int]) -> None:
        self.reach = reach
        self.levels = [list(range(len(reach)))]  # level l, index i: the farthest of i .. i + 2**l - 1
        width = 1
        while 2 * width <= len(reach):
            below = self.levels[-1]
            self.levels.append([a if reach[a] >= reach[b] else b for a, b in zip(below, below[width:])])
            width *= 2

    def of(self, lo: int, hi: int) -> int:
        """The farthest reaching of lo .. hi - 1 (hi > lo)."""
        level = (hi - lo).bit_length() - 1
        a, b = self.levels[level][lo], self.levels[level][hi - (1 << level)]
        return a if self.reach[a] >= self.reach[b] else b


def _first_at(positions: list[int], at: int) -> int:
    """The first of the sorted `positions` at or after `at`; -1 if none."""
    i = bisect_left(positions, at)
    return positions[i] if i < len(positions) else -1


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
