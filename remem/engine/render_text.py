"""The text render writes: a lesson's file, and remem's section of MEMORY.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from remem.engine.lesson_text import clip
from remem.engine.render_files import _name_tag, lesson_filename, memory_tag

BEGIN = "<!-- remem:begin -->"
END = "<!-- remem:end -->"
DESCRIPTION_CHARS = 150  # a lesson file's frontmatter description, at most
INDEX_CHARS = 120  # a lesson's line in MEMORY.md's index, at most (the link aside)
_TYPE = {"correction": "feedback", "error": "feedback", "surprise": "project", "note": "project"}
# A lesson's line in MEMORY.md's index, and the file it links to.
_INDEX_LINE = re.compile(r"- \[.*\]\((remem-[^()/\\\s]+\.md)\)\s*")


# --------------------------------------------------------------------------- MEMORY.md's section

def _section_span(original: str) -> tuple[int, int] | None:
    """Where remem's section is in MEMORY.md: the offsets of its BEGIN marker and of the first
    END marker after it (None: the file has no whole section)."""
    start = original.find(BEGIN)
    end = original.find(END, start + len(BEGIN)) if start >= 0 else -1
    return (start, end) if start >= 0 and end >= 0 else None


def _section_lines(original: str, span: tuple[int, int]) -> list[tuple[str, str | None]]:
    """The lines between the markers, each with its line break, and the lesson file it links
    to when it is an index line (None: the heading, or anything else)."""
    start, end = span
    out: list[tuple[str, str | None]] = []
    for line in original[start + len(BEGIN):end].splitlines(keepends=True):
        found = _INDEX_LINE.fullmatch(line.rstrip())
        out.append((line, found.group(1) if found else None))
    return out


def replace_section(original: str, body: str) -> str:
    """MEMORY.md with only remem's marked section replaced (appended when there is none)."""
    section = f"{BEGIN}\n{body.rstrip()}\n{END}" if body.strip() else f"{BEGIN}\n{END}"
    span = _section_span(original)
    if span is not None:
        start, end = span
        return original[:start] + section + original[end + len(END):]
    if not original:
        return section + "\n"
    sep = "" if original.endswith("\n\n") else ("\n" if original.endswith("\n") else "\n\n")
    return original + sep + section + "\n"


def _line_tag(line: str) -> str:
    """The memory tag of the file an index line of MEMORY.md links to ("" when none)."""
    found = _INDEX_LINE.fullmatch(line)
    return _name_tag(found.group(1)) if found else ""


def section_body(lessons: list[dict[str, Any]], tag: str | None = None,
                 others: list[str] | None = None) -> str:
    """MEMORY.md's section: an index line per lesson, and the lines of other memories rendering
    into the same folder (`others`, kept from the section as it was). Lines are grouped by the
    memory tag in their file names, so two memories write the same section, not turn about."""
    tag = tag or memory_tag()
    lines = [(tag, f"- [{_at_most(l['text'], INDEX_CHARS)}]({lesson_filename(l['id'], tag)})")
             for l in lessons]
    lines += [(_line_tag(line), line) for line in others or []]
    if not lines:
        return ""
    lines.sort(key=lambda pair: pair[0])  # stable: each memory's own order stays
    return "\n".join(["## Lessons remem learned (delete a file to veto it)", *(l for _, l in lines)])


def others_lines(original: str, folder: Path, tag: str, owned_names: set[str]) -> list[str]:
    """The index lines in MEMORY.md's section that another memory rendered: each links to a
    lesson file that is still in the folder and is neither this memory's name (`tag`) nor one
    it owned (`owned_names`: its files named before names carried the memory)."""
    span = _section_span(original)
    if span is None:
        return []
    kept: list[str] = []
    seen: set[str] = set()
    for line, name in _section_lines(original, span):
        if name is None:
            continue  # the heading, or anything else: rewritten
        if (name in seen or _name_tag(name) == tag or name in owned_names
                or not (folder / name).is_file()):
            continue
        seen.add(name)
        kept.append(line.rstrip())
    return kept


def without_own_lines(original: str, tag: str, owned: set[str]) -> str:
    """MEMORY.md without this memory's index lines (its `tag` in the linked name, or a name it
    owned, in `owned`). Once no memory has a line left, the section goes whole: the markers,
    the line break after them and, when the section ended the file, the blank line render put
    before it. Every other byte is kept."""
    span = _section_span(original)
    if span is None:
        return original
    start, end = span
    kept = [(line, name) for line, name in _section_lines(original, span)
            if not (name and (_name_tag(name) == tag or name in owned))]
    if any(name for _, name in kept):  # another memory's lines: the section stays
        return original[:start + len(BEGIN)] + "".join(line for line, _ in kept) + original[end:]
    before, after = original[:start], original[end + len(END):]
    after = after[2:] if after.startswith("\r\n") else after.removeprefix("\n")
    if not after and before.endswith("\n\n"):
        before = before[:-1]
    return before + after


# --------------------------------------------------------------------------- a lesson's file

def _date(stamp: str | None) -> str:
    return (stamp or "")[:10]


def _at_most(text: str, most: int) -> str:
    """The text on one line in at most `most` characters, cut at a word boundary: an agent
    reads these lines, and a word cut in half ("never push to ma…") can change the meaning."""
    flat = " ".join(text.split())
    return flat if len(flat) <= most else clip(flat, most - 1)  # "…" is the last character


def lesson_file(lesson: dict[str, Any], provenance: list[tuple[str, str]], tag: str | None = None) -> str:
    """The text of one remem-<memory>-<id>.md: frontmatter, the lesson, its provenance."""
    text = lesson["text"]
    desc = _at_most(text, DESCRIPTION_CHARS)
    shown = ", ".join(f"{eid} ({_date(at)})" for eid, at in provenance[:8])
    more = f" and {len(provenance) - 8} more" if len(provenance) > 8 else ""
    noun = lesson["kind"] + ("s" if lesson["seen"] != 1 else "")
    lines = [
        "---",
        f"name: {lesson_filename(lesson['id'], tag)[:-len('.md')]}",
        f"description: {json.dumps(desc, ensure_ascii=False)}",
        f"type: {_TYPE.get(lesson['kind'], 'project')}",
        "---",
        "",
        text,
        "",
        f"Provenance: learned by remem from {lesson['seen']} {noun}"
        + (f": {shown}{more}." if shown else ".")
        + f" Lesson {lesson['id']}. Delete this file to veto it.",
    ]
    return "\n".join(lines) + "\n"
