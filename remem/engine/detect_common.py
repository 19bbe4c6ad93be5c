"""What every detector shares: the Finding it returns, how findings are shortened, quoted,
redacted and deduplicated, and what a tool call or an offer does (the command it ran, its
action kind).

Finding text is shown to agents (recall) and people and turned into lessons, so it is made
safe where it is made: `shorten` redacts what it keeps (before cutting, so a key is never
cut short of what the patterns recognise), and a Finding redacts its title, text and detail
when it is built. Redaction is redaction.redact_secrets, deterministic: the same words
give the same title, so episode ids stay stable across re-reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from remem.engine.redaction import redact_secrets
from remem.engine.session import ToolCall
from remem.engine.shell_words import program_words, shell_command


@dataclass
class Finding:
    kind: str  # correction, error, surprise, environment
    title: str  # stable for the same finding across re-reads of the session
    text: str  # what it says: for a correction, the person's words alone
    detail: str = ""
    at: str | None = None
    turn: int = -1
    tags: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The one place every detector's words pass: no secret is stored, recalled or learned.
        self.title = redact_secrets(self.title)
        self.text = redact_secrets(self.text)
        self.detail = redact_secrets(self.detail)


# A secret the patterns recognise is shorter than this; a fragment of one left at the end of
# a redacted head (a key cut where the head ends) is never longer.
_SECRET_TAIL = 64
# The longest secret the patterns see whole from its telling start to its end: a PEM private
# key (an RSA-4096 one is about 3,300 characters), a JWT, a certificate chain's block.
_SECRET_SPAN = 8192
_WHITESPACE = re.compile(r"\s")


# How much of a long message the detectors' patterns read: its start and its end. A 60 MB
# paste read whole took the surprise pattern alone 28 s; what a person says about the work
# sits before or after what they pasted.
SCAN_EDGE = 64 * 1024


def scan_text(text: str) -> str:
    """The part of `text` the detectors' patterns read: all of it, or its first and last
    SCAN_EDGE characters when it is longer."""
    if len(text) <= 2 * SCAN_EDGE:
        return text
    return f"{text[:SCAN_EDGE]}\n{text[-SCAN_EDGE:]}"


def redacted_head(text: str | None, width: int) -> str:
    """The first `width` characters of the text with its secrets redacted, as if the whole
    text had been redacted first: a key that straddles the cut is redacted, not cut in half.
    Only a head a little longer than `width` is read, so a huge tool output costs little."""
    text = text or ""
    size = width + 2 * _SECRET_TAIL
    while True:
        head = text[:size]
        done = redact_secrets(head)
        if size >= len(text) or len(done) > width + _SECRET_TAIL:
            return done[:width]
        size *= 2


def redacted_tail(text: str | None, width: int) -> str:
    """The last `width` characters of the text with its secrets redacted. A secret's telling
    start (a key's "-----BEGIN" line, a token's prefix) may lie before the cut, so the
    _SECRET_SPAN characters before it are redacted with it; and the tail starts at a word
    boundary, so no fragment of a token cut at its start shows."""
    text = text or ""
    if width <= 0:
        return ""
    done = redact_secrets(text[-(width + _SECRET_SPAN):])
    tail = done[-width:]
    if len(done) > width:
        boundary = _WHITESPACE.search(tail, 0, _SECRET_TAIL * 4)
        if boundary:
            tail = tail[boundary.end():]
    return tail


def redacted_ends(text: str | None, width: int) -> str:
    """The text with its secrets redacted, in about `width` characters: a longer one keeps its
    first and its last half-width, with a line saying how much was left out between them. A
    build log says what failed at its end, a traceback its exception; only the ends are read,
    so a huge tool output costs little."""
    text = text or ""
    if len(text) <= width:
        return redacted_head(text, width)
    half = width // 2
    return (f"{redacted_head(text, half)}\n… {len(text) - 2 * half:,} characters left out …\n"
            f"{redacted_tail(text, half)}")


def shorten(text: str | None, width: int = 100) -> str:
    """The text on one line in at most `width` characters, secrets redacted, cut at a word
    boundary with "…". A word is cut in the middle only when it is huge (longer than half
    the width: a long path, a URL), where cutting before it would lose most of the line."""
    text = " ".join((text or "").split())
    text = redacted_head(text, width + 1)  # one more: is the character after the cut a space?
    if len(text) <= width:
        return text
    room = max(width - 1, 0)  # the "…" takes one
    if text[room] == " ":  # the cut falls between two words
        head = text[:room]
    else:
        head = text[:room].rsplit(" ", 1)[0] if " " in text[:room] else ""
        if len(head) < room // 2:  # the word cut is huge: keep its start rather than lose the line
            head = text[:room]
    # Cut, a word may read as a key it was not (`AKIA` and 16 capitals, then the cut): the
    # head is redacted once more, so shortening what was shortened changes nothing.
    head = redact_secrets(head)[:room]
    return head.rstrip(" ,;:") + "…"


# --------------------------------------------------------------------------- the agent's words

# Markdown structure an agent writes and a one-line quote cannot show: fences, rules, table
# rules and pipes, headings, blockquotes, bold, italic and strikethrough. Inline code stays.
_DROPPED_LINE = re.compile(
    r"^(?:```|~~~)|"  # a code fence (its language too); the code between is kept
    r"^(?:([-*_])\s*(?:\1\s*){2,})$|"  # a horizontal rule: ---, ***, ___
    r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?$|^\|\s*:?-+:?\s*\|$"  # a table's rule: |---|:--:|
)
_LINE_MARK = re.compile(r"^(?:#{1,6}(?:\s+|$)|>\s?)")  # a heading's #s, a blockquote's >
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
# Emphasis markers that open after a space or punctuation and close before one, around words:
# not the * of `a*b`, `src/*/x`, `**kwargs` or a bullet ("* item"), nor underscores (dunders).
_EMPHASIS = re.compile(
    r"(?<![A-Za-z0-9_*~\\/])(\*\*|\*|~~)(?=[^\s*~])(.+?)(?<=[^\s*~\\])\1(?![A-Za-z0-9_*~/])")


def _code_spans(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in _CODE_SPAN.finditer(line)]


def _in_code(at: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= at < end for start, end in spans)


def _unemphasise(line: str) -> str:
    spans = _code_spans(line)

    def keep_code(m: re.Match[str]) -> str:
        if spans and (_in_code(m.start(), spans) or _in_code(m.end() - 1, spans)):
            return m.group(0)  # a marker inside inline code is code
        return m.group(2)
    return _EMPHASIS.sub(keep_code, line)


def _table_row(line: str) -> str:
    """A table row ("| a | b |") as "a, b;" (a pipe inside inline code stays)."""
    spans = _code_spans(line)
    cells, start = [], 0
    for i, ch in enumerate(line):
        if ch == "|" and not _in_code(i, spans):
            cells.append(line[start:i])
            start = i + 1
    cells.append(line[start:])
    cells = [c.strip() for c in cells if c.strip()]
    return ", ".join(cells) + ";" if cells else ""


_END_MARK = (".", ":", "!", "?", ";", ",", "…")


def _plain_line(line: str) -> str:
    while True:  # every step shortens the line or ends: the result is a fixed point
        before = line
        line = line.strip()
        if _DROPPED_LINE.match(line):
            return ""
        mark = _LINE_MARK.match(line)
        if mark:
            line = line[mark.end():].strip()
            if mark.group(0).startswith("#") and line and not line.endswith(_END_MARK):
                line += ":"  # a heading introduces what follows: "Problem: Spotter has no…"
        if line.startswith("|") and line.count("|") >= 2:
            line = _table_row(line)
        line = _unemphasise(line)
        if line == before:
            return line


def _plain(text: str | None, most: int | None) -> tuple[str, bool]:
    """The plain text, and whether it stopped early (after `most` characters, spaces
    collapsed) with lines left unread."""
    out: list[str] = []
    size = 0
    lines = (text or "").splitlines()
    for n, line in enumerate(lines):
        line = _plain_line(line)
        if line:
            out.append(line)
            size += len(" ".join(line.split())) + 1
            if most is not None and size > most and n + 1 < len(lines):
                return "\n".join(out), True
    return "\n".join(out), False


def plain(text: str | None) -> str:
    """The agent's Markdown as plain text, for a quote of what it said: no headings' #
    (a heading ends with ":" instead), blockquotes' >, table rules and pipes (a row reads
    "a, b;"), fences, horizontal rules, bold, italic or strikethrough markers. Inline code
    keeps its backticks; underscores, globs and `a*b` are left alone. Idempotent."""
    return _plain(text, None)[0]


def quote(text: str | None, width: int) -> str:
    """What the agent said, quoted in a summary: plain text (see `plain`), secrets redacted,
    on one line, cut at a word boundary to at most `width` characters. A long reply is read
    only as far as the quote needs."""
    most = width + 2 + 2 * _SECRET_TAIL
    while True:
        done, cut = _plain(text, most)
        flat = " ".join(done.split())
        # Redaction shortens: read on while what is left may not fill the quote.
        if not cut or len(redact_secrets(flat)) > width + 1:
            return shorten(flat, width)
        most *= 2


# Where one sentence ends and the next starts: surprises are read a sentence at a time, and a
# message whose first sentence asks is a question, not a correction.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def describe_call(call: ToolCall) -> str:
    """A call as a title names it: the tool and what it ran or touched ("Bash: git push")."""
    inp = call.input if isinstance(call.input, dict) else {}
    arg = command_of(inp) or inp.get("file_path") or inp.get("path") or inp.get("pattern") \
        or inp.get("url") or inp.get("query") or ""
    return f"{call.name}: {shorten(str(arg), 80)}" if arg else call.name


def dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per title within a session: the same error repeated is one episode."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        key = (f.kind, f.title)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


# --------------------------------------------------------------------------- action kinds

_TEST_CMD = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?test|cargo\s+test|go\s+test|mix\s+test|make\s+(test|check)|"
    r"gradle\w*\s+test|mvn\s+test|dotnet\s+test)\b"
)
_INSTALL_CMD = re.compile(
    r"\b(pip3?\s+install|uv\s+(add|pip\s+install|sync)|poetry\s+add|pipx\s+install|conda\s+install|"
    r"(npm|pnpm|bun)\s+(install|i|add)\b|yarn\s+add|cargo\s+(add|install)|go\s+(get|install)|"
    r"gem\s+install|bundle\s+install|brew\s+install|(apt|apt-get|dnf|yum|pacman|apk)\s+(install|add|-S)|"
    r"mix\s+deps\.get)"
)
# Tools that change a file (Claude Code, Codex, Gemini CLI, Cursor …), by their lower-case name.
# Gemini CLI's edit tool is `replace` (old_string → new_string in file_path).
EDIT_TOOLS = frozenset(("edit", "write", "multiedit", "notebookedit", "str_replace_based_edit_tool",
                        "apply_patch", "create_file", "edit_file", "write_file", "str_replace", "replace"))
PATCH_PROGRAMS = frozenset(("apply_patch", "applypatch"))
# The files a Codex patch changes: its "*** Update File: src/order.js" headers, Add and Delete too.
_PATCH_FILE = re.compile(r"^\s*\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.M)


def patch_of(call: ToolCall) -> str | None:
    """The patch text of a Codex apply_patch call: its own tool (the patch as its input, or
    {"input": patch} in older rollouts) or a shell command that runs it (`apply_patch <<'EOF'
    …`, ["apply_patch", patch]); None for any other call."""
    if call.name.lower() in PATCH_PROGRAMS:
        inp = call.input
        patch = inp.get("input") or inp.get("patch") if isinstance(inp, dict) else inp
        return patch if isinstance(patch, str) else ""
    command = shell_command(call.name, call.input)
    if command and (program_words(command, most=1) in {(p,) for p in PATCH_PROGRAMS}
                    or command.startswith("*** Begin Patch")):  # a patch sent as the command
        return command
    return None


def patched_files(patch: str | None) -> list[str]:
    """The paths a patch names in its file headers, in order, each once."""
    return list(dict.fromkeys(_PATCH_FILE.findall(patch or "")))


_TEXT_KINDS = (
    ("push", re.compile(r"\bpush(ing)?\b|\bopen (a |the )?(pull request|pr)\b|\bdeploy\b", re.I)),
    ("commit", re.compile(r"\bcommit(ting)?\b", re.I)),
    ("install", re.compile(r"\binstall(ing)?\b|\badd (it |them |this )?(as )?(a )?(dependency|dependencies|package)\b", re.I)),
    ("run_tests", re.compile(r"\b(run|rerun|re-run)(ning)? (the |all |your )?(unit |integration )?(tests?|test suite|specs?)\b|\btest suite\b", re.I)),
    ("edit", re.compile(
        r"\b(edit|change|update|fix|modify|refactor|rename|rewrite|write|create|implement|apply|"
        r"add|remove|delete|replace|patch|move|clean up|convert|migrate|make the change)\b", re.I)),
)


def command_of(tool_input: Any) -> str:
    """The shell command a tool call ran, as one string ('' if it ran none).

    Claude Code gives a string; Codex a list, usually ["bash", "-lc", "<script>"].
    """
    if not isinstance(tool_input, dict):
        return ""
    cmd = tool_input.get("command") or tool_input.get("cmd") or ""
    if isinstance(cmd, list):
        parts = [str(p) for p in cmd]
        if len(parts) >= 3 and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and parts[1] in ("-lc", "-c"):
            return parts[-1]
        return " ".join(parts)
    return str(cmd)


def action_kind(item: Any) -> str:
    """The kind of action an offer (text) or a tool call proposes: edit, run_tests, commit,
    install, push or other. Accepts a ToolCall, a {"name", "input"} dict, or text."""
    name = None
    tool_input: Any = None
    if isinstance(item, ToolCall):
        name, tool_input = item.name, item.input
    elif isinstance(item, dict):
        name, tool_input = item.get("name"), item.get("input")
    if name is not None:
        lname = str(name).lower()
        if lname in EDIT_TOOLS:
            return "edit"
        command = ""
        if isinstance(tool_input, dict):
            command = command_of(tool_input)
        elif isinstance(tool_input, (str, list)):
            command = " ".join(tool_input) if isinstance(tool_input, list) else tool_input
        if command:
            return _command_kind(command)
        return "other"
    return _text_kind(str(item or ""))


def _command_kind(command: str) -> str:
    if re.search(r"\bgit\s+push\b", command):
        return "push"
    if re.search(r"\bgit\s+commit\b", command):
        return "commit"
    if _INSTALL_CMD.search(command):
        return "install"
    if _TEST_CMD.search(command):
        return "run_tests"
    if re.search(r"\bsed\s+-i\b|>\s*\S+\.\w+\s*$|\btee\s+\S", command):
        return "edit"
    return "other"


def _text_kind(text: str) -> str:
    for kind, pattern in _TEXT_KINDS:
        if pattern.search(text):
            return kind
    return "other"


FINDING_KINDS = ("correction", "error", "surprise", "environment")

# How a finding's episode feels, for the lifecycle: corrections matter most.
FINDING_WEIGHT = {
    "correction": {"importance": 0.7, "valence": -0.4, "arousal": 0.4},
    "error": {"importance": 0.5, "valence": -0.3, "arousal": 0.3},
    "surprise": {"importance": 0.6, "valence": 0.0, "arousal": 0.4},
    "environment": {"importance": 0.5, "valence": 0.0, "arousal": 0.0},
}
