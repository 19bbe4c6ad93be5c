"""The text render writes: a lesson's file, and remem's section of MEMORY.md.

MEMORY.md is the person's file (Claude Code's own memory writes its index lines into it too).
remem's section is one `<!-- remem:begin -->` line, remem's lines, and one `<!-- remem:end -->`
line. A marker counts only as a line of its own (spaces around it aside): the marker quoted in
a note is text. A file whose marker lines are anything else (an end line lost in a merge, a
begin line pasted twice) raises MarkersOutOfPlace, naming the fix, and is left alone: guessing
where the section ends could replace the person's lines. A line inside the section that is not
remem's (its heading, an index line of a `remem-*.md` file, its "… more" line, a blank line) is
the person's, or Claude Code's, and moves to just after the end marker. The section is written
with the line ending most of the file's lines have (a CRLF file stays CRLF).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from remem.engine.lesson_text import clip
from remem.engine.render_files import _name_tag, lesson_filename, memory_tag

BEGIN = "<!-- remem:begin -->"
END = "<!-- remem:end -->"
HEADING = "## Lessons remem learned (delete a file to veto it)"
DESCRIPTION_CHARS = 150  # a lesson file's frontmatter description, at most
INDEX_CHARS = 120  # a lesson's line in MEMORY.md's index, at most (the link aside)
_TYPE = {"correction": "feedback", "error": "feedback", "surprise": "project", "note": "project"}
# A lesson's line in MEMORY.md's index, and the file it links to.
_INDEX_LINE = re.compile(r"- \[.*\]\((remem-[^()/\\\s]+\.md)\)\s*")
# The section's heading: "## Lessons remem learned (…)", as remem writes it, or any "## Lessons…"
# heading in its place (a person inside remem's section adds index lines, not this heading).
_HEADING_LINE = re.compile(r"## Lessons\b.*")
# The line that ends a memory's index cut at render.index_lines / render.index_bytes.
_MORE_LINE = re.compile(r"- … [\d,]+ more lessons? \(remem ([0-9a-f]+)\): .*")
_AROUND_MARKER = " \t\ufeff"  # spaces, and a byte order mark, on a marker's line


class MarkersOutOfPlace(ValueError):
    """MEMORY.md's marker lines are not one begin line followed by one end line: the file is
    left alone. The message (no path: the caller adds it) says what to put right."""


@dataclass(frozen=True)
class _Span:
    """Where remem's section is: `begin`..`end` runs from the begin marker's first character to
    the end marker's last (the bytes render replaces); `inner` is the lines between the marker
    lines; `line_start`..`line_stop` is the marker lines whole, their line breaks included, and
    `end_words` where the end line's words end (any spaces after the marker aside)."""

    line_start: int
    begin: int
    inner_start: int
    inner_end: int
    end: int
    end_words: int
    line_stop: int


def _lines(text: str, offset: int = 0) -> list[tuple[int, int, int]]:
    """Each line of `text` as (start, end of its words, end with its line break), plus `offset`.
    Only "\n" ends a line ("\r\n" too: the "\r" belongs to the break), never the other
    characters str.splitlines splits at: a lesson's words may hold them."""
    out: list[tuple[int, int, int]] = []
    pos = 0
    while pos < len(text):
        brk = text.find("\n", pos)
        if brk < 0:
            out.append((offset + pos, offset + len(text), offset + len(text)))
            break
        words_end = brk - 1 if brk > pos and text[brk - 1] == "\r" else brk
        out.append((offset + pos, offset + words_end, offset + brk + 1))
        pos = brk + 1
    return out


def newline_of(text: str) -> str:
    """The line break most of the text's lines end with: "\r\n" or "\n" (a new file's)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def _out_of_place(begins: int, ends: int, reversed_: bool) -> str:
    """What is wrong with MEMORY.md's marker lines, and how to put it right."""
    b, e = f"`{BEGIN}`", f"`{END}`"
    either = "or delete the section; remem leaves the file alone until then"
    if begins == 1 and not ends:
        return (f"remem's section has its {b} line but no {e} line: restore {e} on a line of its own "
                f"after remem's lines, {either}")
    if ends == 1 and not begins:
        return (f"remem's section has its {e} line but no {b} line: restore {b} on a line of its own "
                f"before remem's lines, {either}")
    if begins == 1 and ends == 1 and reversed_:
        return f"the {e} line comes before the {b} line: put {e} after remem's lines, {either}"
    return (f"{begins} {b} lines and {ends} {e} lines, where remem's section has one of each: keep one "
            "pair, around remem's lines (a marker quoted in your notes must share its line with other "
            f"words), {either}")


def _section_span(original: str) -> _Span | None:
    """Where remem's section is in MEMORY.md (None: no marker line at all). Raises
    MarkersOutOfPlace unless there is exactly one begin line and one end line after it."""
    begins: list[tuple[int, int, int]] = []
    ends: list[tuple[int, int, int]] = []
    for line in _lines(original):
        words = original[line[0]:line[1]].strip(_AROUND_MARKER)
        if words == BEGIN:
            begins.append(line)
        elif words == END:
            ends.append(line)
    if not begins and not ends:
        return None
    reversed_ = bool(begins and ends and ends[0][0] < begins[0][0])
    if len(begins) != 1 or len(ends) != 1 or reversed_:
        raise MarkersOutOfPlace(_out_of_place(len(begins), len(ends), reversed_))
    (b_start, _, b_stop), (e_start, e_words_end, e_stop) = begins[0], ends[0]
    begin = original.index(BEGIN, b_start)
    end = original.rindex(END, e_start, e_words_end) + len(END)
    return _Span(b_start, begin, b_stop, e_start, end, e_words_end, e_stop)


def has_section(original: str) -> bool:
    """Whether MEMORY.md has remem's section. Raises MarkersOutOfPlace."""
    return _section_span(original) is not None


def _section_lines(original: str, span: _Span) -> list[tuple[str, str, str | None]]:
    """The lines between the marker lines: each one's words, its line break, and the lesson file
    it links to when it is an index line (None: anything else)."""
    out: list[tuple[str, str, str | None]] = []
    for start, words_end, stop in _lines(original[span.inner_start:span.inner_end], span.inner_start):
        words = original[start:words_end]
        found = _INDEX_LINE.fullmatch(words.rstrip())
        out.append((words, original[words_end:stop], found.group(1) if found else None))
    return out


def _is_remems(words: str) -> bool:
    """Whether a line inside the section is remem's to rewrite: its heading, an index line of
    a lesson file (any memory's), a memory's "… more" line, or a blank line."""
    bare = words.strip()
    return (not bare or bool(_INDEX_LINE.fullmatch(bare) or _HEADING_LINE.fullmatch(bare)
                             or _MORE_LINE.fullmatch(bare)))


def _persons_lines(original: str, span: _Span) -> list[str]:
    """The lines inside the section that are not remem's (`_is_remems`), each without its line
    break: the person's, or Claude Code's own memory's, added there."""
    return [words for words, _, _ in _section_lines(original, span) if not _is_remems(words)]


def replace_section(original: str, body: str) -> str:
    """MEMORY.md with only remem's marked section replaced (appended when there is none), in the
    file's own line ending. The person's lines inside it move to just after its end marker.
    Raises MarkersOutOfPlace (the file must then be left alone)."""
    nl = newline_of(original)
    inner = body.rstrip().split("\n") if body.strip() else []
    section = nl.join([BEGIN, *(line.rstrip("\r") for line in inner), END])
    span = _section_span(original)
    if span is not None:
        moved = "".join(nl + words for words in _persons_lines(original, span))
        return (original[:span.begin] + section + original[span.end:span.end_words] + moved
                + original[span.end_words:])
    if not original:
        return section + nl
    if not original.endswith("\n"):
        sep = nl + nl
    else:  # a blank line before the section: one there already, else one more line break
        last = original[:-2] if original.endswith("\r\n") else original[:-1]
        sep = "" if not last or last.endswith("\n") else nl
    return original + sep + section + nl


def _line_tag(line: str) -> str:
    """The memory tag of an index line's linked file, or of a "… more" line ("" when none)."""
    found = _INDEX_LINE.fullmatch(line)
    if found:
        return _name_tag(found.group(1))
    more = _MORE_LINE.fullmatch(line)
    return more.group(1) if more else ""


def more_line(count: int, tag: str, listing: str) -> str:
    """The line that ends an index cut short: how many more lessons, and the command that lists
    them. It carries the memory's tag, so each memory keeps (and rewrites) only its own."""
    return f"- … {count:,} more lesson{'' if count == 1 else 's'} (remem {tag}): `{quoted_markup(listing)}`"


def _capped(lines: list[str], most_lines: int, most_bytes: int) -> list[str]:
    """The first lines (the strongest lessons' first) while there are at most `most_lines` of
    them and they take at most `most_bytes` bytes (UTF-8, a line break each)."""
    kept: list[str] = []
    used = 0
    for line in lines:
        size = len(line.encode("utf-8")) + 1
        if len(kept) >= most_lines or used + size > most_bytes:
            break
        kept.append(line)
        used += size
    return kept


def section_body(lessons: list[dict[str, Any]], tag: str | None = None,
                 others: list[str] | None = None, *, most_lines: int | None = None,
                 most_bytes: int | None = None, listing: str = "remem lessons list --limit 0") -> str:
    """MEMORY.md's section: an index line per lesson, and the lines of other memories rendering
    into the same folder (`others`, kept from the section as it was). Lines are grouped by the
    memory tag in their file names, so two memories write the same section, not turn about.

    With `most_lines` / `most_bytes` this memory's index is cut to the first lessons (`lessons`
    come strongest first) that fit, and a last line says how many more and names `listing`,
    the command that lists them: Claude Code reads only the start of a MEMORY.md."""
    tag = tag or memory_tag()
    own = [f"- [{_at_most(l['text'], INDEX_CHARS)}]({lesson_filename(l['id'], tag)})" for l in lessons]
    if most_lines is not None or most_bytes is not None:
        kept = _capped(own, most_lines if most_lines is not None else len(own),
                       most_bytes if most_bytes is not None else 1 << 62)
        if len(kept) < len(own):
            kept.append(more_line(len(own) - len(kept), tag, listing))
        own = kept
    lines = [(tag, line) for line in own]
    lines += [(_line_tag(line), line) for line in others or []]
    if not lines:
        return ""
    lines.sort(key=lambda pair: pair[0])  # stable: each memory's own order stays
    return "\n".join([HEADING, *(l for _, l in lines)])


def others_lines(original: str, folder: Path, tag: str, owned_names: set[str]) -> list[str]:
    """The lines in MEMORY.md's section that another memory rendered: each index line that links
    to a lesson file still in the folder that is neither this memory's name (`tag`) nor one it
    owned (`owned_names`: its files named before names carried the memory), and each other
    memory's "… more" line. Raises MarkersOutOfPlace."""
    span = _section_span(original)
    if span is None:
        return []
    kept: list[str] = []
    seen: set[str] = set()
    for words, _, name in _section_lines(original, span):
        bare = words.strip()
        more = _MORE_LINE.fullmatch(bare)
        if more:
            if more.group(1) != tag and bare not in seen:
                seen.add(bare)
                kept.append(bare)
            continue
        if name is None:
            continue  # the heading, a blank line, or the person's (replace_section moves those)
        if (name in seen or _name_tag(name) == tag or name in owned_names
                or not (folder / name).is_file()):
            continue
        seen.add(name)
        kept.append(words.rstrip())
    return kept


def without_own_lines(original: str, tag: str, owned: set[str]) -> str:
    """MEMORY.md without this memory's lines (index lines with its `tag` in the linked name, or a
    name it owned, in `owned`; its "… more" line). Once no memory has a line left, the section
    goes whole: the marker lines and, when the section ended the file, the blank line render
    put before it; the person's lines inside it stay, where it was. Every other byte is kept.
    Raises MarkersOutOfPlace (the file must then be left alone)."""
    span = _section_span(original)
    if span is None:
        return original

    def own(words: str, name: str | None) -> bool:
        if name:
            return _name_tag(name) == tag or name in owned
        more = _MORE_LINE.fullmatch(words.strip())
        return bool(more and more.group(1) == tag)

    lines = [(words, brk, name) for words, brk, name in _section_lines(original, span) if not own(words, name)]
    if any(name or _MORE_LINE.fullmatch(words.strip()) for words, _, name in lines):
        # another memory's lines: the section stays, and so does every other line in it
        return original[:span.inner_start] + "".join(w + b for w, b, _ in lines) + original[span.inner_end:]
    persons = "".join(w + b for w, b, _ in lines if not _is_remems(w))
    before, after = original[:span.line_start], original[span.line_stop:]
    if not before and original.startswith("\ufeff"):
        before = "\ufeff"  # the file's byte-order mark, on the marker's line: the file's, not the section's
    if not after and not persons:
        brk = 2 if before.endswith("\r\n") else 1 if before.endswith("\n") else 0
        if brk and before[:-brk].endswith("\n"):
            before = before[:-brk]  # the blank line render put before the section
    return before + persons + after


# --------------------------------------------------------------------------- a lesson's file

def _date(stamp: str | None) -> str:
    return (stamp or "")[:10]


def quoted_markup(text: str) -> str:
    """The text with `<!--` and `-->` written as `<\\!--` and `--\\>` (backslash escapes: a
    Markdown reader shows them as written): an HTML comment opened in a lesson's words hides
    what follows from whoever reads the file rendered, and remem's own markers in them must
    never read as the section's. Neither sequence is left in the result."""
    return text.replace("<!--", "<\\!--").replace("-->", "--\\>")


def _at_most(text: str, most: int) -> str:
    """The text on one line in at most `most` characters, cut at a word boundary: an agent
    reads these lines, and a word cut in half ("never push to ma…") can change the meaning.
    Markup that opens or closes an HTML comment is quoted (quoted_markup)."""
    flat = quoted_markup(" ".join(text.split()))
    return flat if len(flat) <= most else clip(flat, most - 1)  # "…" is the last character


def lesson_file(lesson: dict[str, Any], provenance: list[tuple[str, str]], tag: str | None = None) -> str:
    """The text of one remem-<memory>-<id>.md: frontmatter, the lesson, its provenance."""
    text = lesson["text"]
    desc = _at_most(text, DESCRIPTION_CHARS)
    # A source no longer in the memory (forgotten, expired, deleted) has no date to show.
    shown = ", ".join(f"{eid} ({_date(at) or 'forgotten'})" for eid, at in provenance[:8])
    more = f" and {len(provenance) - 8} more" if len(provenance) > 8 else ""
    noun = lesson["kind"] + ("s" if lesson["seen"] != 1 else "")
    lines = [
        "---",
        f"name: {lesson_filename(lesson['id'], tag)[:-len('.md')]}",
        f"description: {json.dumps(desc, ensure_ascii=False)}",
        f"type: {_TYPE.get(lesson['kind'], 'project')}",
        "---",
        "",
        quoted_markup(text),
        "",
        f"Provenance: learned by remem from {lesson['seen']} {noun}"
        + (f": {shown}{more}." if shown else ".")
        + f" Lesson {lesson['id']}. Delete this file to veto it.",
    ]
    return "\n".join(lines) + "\n"
