"""What went wrong and what was learned about the machine, from tool results and replies.

- errors: failed tool results, classified (see ERROR_CLASSES); not a command whose exit
  status 1 only answered no (grep found nothing, diff found a difference: answers_no), nor
  the harness telling the agent how its call broke the harness's rules ("File has not been
  read yet", "InputValidationError", Codex's "apply_patch verification failed: Failed to
  find expected lines": harness_rule);
- surprises: stated surprises ("unexpectedly", "turns out", "that's odd", "I assumed … but");
- environment: facts about the machine (a tool or module missing, a version, the OS, a path).
"""

from __future__ import annotations

import re
import shlex
from typing import Collection

from remem.engine.detect_common import (SCAN_EDGE, SENTENCE_END, Finding, action_kind, command_of, dedupe,
                                        describe_call, patch_of, plain, quote, redact_secrets, redacted_ends,
                                        redacted_head, redacted_tail, scan_text, shorten)
from remem.engine.session import Session, ToolCall
from remem.engine.shell_words import DIRECTORY_CHANGES, ENV_ASSIGN, shell_command, split_commands
from remem.engine.toolresult import EXIT_LINE, TOOL_USE_ERRORS, exit_code, permission_not_granted

ERROR_CLASSES = (
    "command_not_found", "module_not_found", "permission_denied", "test_failure",
    "syntax_type_error", "timeout", "network", "git_conflict", "file_not_found", "other",
)


# --------------------------------------------------------------------------- errors

_ERROR_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("command_not_found", re.compile(
        r"command not found|: not found\s*$|is not recognized as an internal or external command|"
        r"executable file not found|no such command|Unknown command|not installed", re.I | re.M)),
    ("module_not_found", re.compile(
        r"ModuleNotFoundError|No module named|Cannot find module|ImportError|Could not resolve dependency|"
        r"unresolved import|package [\w./-]+ is not in (GOROOT|std)|cannot find package|"
        r"can't resolve '[^']+'|Module not found|LoadError|could not find (gem|crate)", re.I)),
    ("permission_denied", re.compile(
        r"permission denied|EACCES|EPERM|Operation not permitted|requested permissions? to|"
        r"haven't granted it|access is denied|not permitted|read-only file system", re.I)),
    ("git_conflict", re.compile(
        r"CONFLICT \(|merge conflict|Automatic merge failed|needs merge|unmerged (files|paths)|"
        r"non-fast-forward|\[rejected\]|cannot (rebase|pull) with rebase|would be overwritten by (merge|checkout)",
        re.I)),
    ("test_failure", re.compile(
        r"(?<!port )\b\d+ (failed|failing)\b|^FAILED\b|^FAIL\b|AssertionError|tests? failed|test result: FAILED|"
        r"\bfailures?: [1-9]|assert(ion)? failed|Expected: .*\n\s*Received:", re.I | re.M)),
    ("syntax_type_error", re.compile(
        r"SyntaxError|IndentationError|TabError|TypeError|type error|error TS\d+|"
        r"invalid syntax|Unexpected token|ParseError|parse error|mismatched types|"
        r"is not assignable to|cannot find name|expected .{1,40}, found|"
        r"has no attribute|NameError|undefined (method|variable|function)|error\[E\d+\]", re.I)),
    ("timeout", re.compile(r"timed? ?out|timeout|deadline exceeded|ETIMEDOUT", re.I)),
    # ENOTFOUND (Node's DNS failure) is matched as a capitalised word: read regardless of case,
    # Python's FileNotFoundError holds it ("fileNOTFOUNDerror") and would be a network error.
    ("network", re.compile(
        r"Connection refused|ECONNREFUSED|ECONNRESET|Could not resolve host|Name or service not known|"
        r"Temporary failure in name resolution|Network is unreachable|getaddrinfo|(?-i:\bENOTFOUND\b)|"
        r"SSL(Error|: )|certificate verify failed|Failed to connect|HTTP(Error| error)? 5\d\d|"
        r"\b50[234] (Bad Gateway|Service Unavailable|Gateway Timeout)|connection reset", re.I)),
    ("file_not_found", re.compile(
        r"No such file or directory|ENOENT|FileNotFoundError|File does not exist|"
        r"does not exist|cannot find the (file|path)|not found", re.I)),
]
_CMD_MISSING = [
    re.compile(r"^(?:[\w./-]+: )?(?:line \d+: )?([\w.+-]+): command not found\s*$", re.M),
    re.compile(r"command not found: ([\w.+-]+)"),
    re.compile(r"'([\w.+-]+)' is not recognized as an internal or external command"),
    re.compile(r"exec: \"([\w.+-]+)\": executable file not found"),
    re.compile(r"(?:^|\n)(?:/bin/)?sh: \d+: ([\w.+-]+): not found"),
]
_MODULE_MISSING = [
    re.compile(r"No module named '?([\w.]+)'?"),
    re.compile(r"Cannot find module '([^']+)'"),
]


# Literal pieces (lowercase) that every match of a class's pattern contains. A substring test
# is a hundred times cheaper than a case-insensitive alternation, and most outputs hit none.
# A piece only lets the pattern be tried: "enotfound" is also inside "filenotfounderror",
# and the pattern, which wants the word ENOTFOUND, then says no.
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "command_not_found": ("not found", "not recognized", "no such command", "unknown command", "not installed"),
    "module_not_found": ("module", "importerror", "could not resolve", "unresolved import", "cannot find package",
                         "can't resolve", "loaderror", "could not find", "is not in"),
    "permission_denied": ("permission", "eacces", "eperm", "not permitted", "haven't granted", "access is denied",
                          "read-only file system"),
    "git_conflict": ("conflict", "needs merge", "unmerged", "non-fast-forward", "[rejected]", "cannot rebase",
                     "cannot pull", "would be overwritten"),
    "test_failure": ("fail", "assert", "received:"),
    "syntax_type_error": ("error", "invalid syntax", "unexpected token", "mismatched types", "not assignable",
                          "cannot find name", "expected", "has no attribute", "undefined"),
    "timeout": ("timed out", "time out", "timeout", "timedout", "deadline exceeded"),
    "network": ("connect", "reset", "resolve host", "name or service", "name resolution", "unreachable",
                "getaddrinfo", "enotfound", "ssl", "certificate", "http", "bad gateway", "service unavailable",
                "gateway timeout"),
    "file_not_found": ("no such file", "enoent", "filenotfounderror", "does not exist", "cannot find the", "not found"),
}


# A refused connection is no failing test: a test run whose database is not up prints both,
# and libpq names the port it tried ("port 5432 failed: Connection refused"). Read before
# test_failure, unless a test's own assertion failed (a retry logged on the way, or a test
# about refused connections: "--- FAIL: TestDial … connection refused").
_REFUSED = re.compile(r"Connection refused|ECONNREFUSED", re.I)
_ASSERTED = re.compile(r"AssertionError|^\s*assert |--- FAIL:|_test\.go:\d+:|\bexpected\b.*\bgot\b", re.M)


def error_class(text: str) -> str:
    """The class of a failed tool result's text (see ERROR_CLASSES)."""
    text = text or ""
    head = text[:4000] + ("\n" + text[-2000:] if len(text) > 6000 else "")
    low = head.lower()
    for name, pattern in _ERROR_PATTERNS:
        if name == "test_failure" and "refused" in low and _REFUSED.search(head) and not _ASSERTED.search(head):
            return "network"
        if any(t in low for t in _TRIGGERS[name]) and pattern.search(head):
            return name
    return "other"


# What a missing module or command error is missing, read from the words kept of it (a
# title, a gist, a lesson's words): the module or the command named. The last name wins:
# "command not found: zsh: command not found: fd" is about fd.
_MISSING_NAME = {
    "module_not_found": (re.compile(r"No module named '?([\w.]+)"), re.compile(r"Cannot find module '([^']+)'")),
    "command_not_found": (
        # zsh's "command not found: fd"; not a label before another message ("…: Error: …")
        re.compile(r"command not found: ([\w.+-]+)(?![\w.+:-])"),
        # A name is read from its first character (not from each one inside it): a long word
        # with no ": command not found" after it costs one pass, not one per character.
        re.compile(r"(?<![\w.+-])([\w.+-]+): command not found"),
        re.compile(r"'([\w.+-]+)' is not recognized"), re.compile(r"exec: \"([\w.+-]+)\": executable file not found"),
        re.compile(r"(?<![\w.+-])([\w.+-]+): not found\b")),
}


def missing_name(cls: str, text: str) -> str:
    """The module (its top-level package) or command a module_not_found or command_not_found
    error names as missing ('' when it names none, or for another class): the same thing
    missing is the same error whatever command met it."""
    for pattern in _MISSING_NAME.get(cls, ()):
        found = pattern.findall(text or "")
        if found:
            name = found[-1]
            return name.split(".")[0] if cls == "module_not_found" and not name.startswith(".") else name
    return ""


_LABEL = {
    "command_not_found": "command not found", "module_not_found": "module not found",
    "permission_denied": "permission denied", "test_failure": "tests failed",
    "syntax_type_error": "syntax/type error", "timeout": "timed out", "network": "network error",
    "git_conflict": "git conflict", "file_not_found": "file not found", "other": "failed",
}
CLASS_OF_LABEL = {label: cls for cls, label in _LABEL.items()}  # an error title's label: its class
# Lines that name no error: an exit status, a bare "Error:", a traceback's header, a rule of
# dashes (IPython draws one above its tracebacks).
_NOISE = re.compile(
    r"^(Exit code:? -?\d+|Error:?|Traceback \(most recent call last\):|error:?|-{10,}|"
    r"[A-Za-z_][\w.]*\s+Traceback \(most recent call last\))\s*$", re.I)
_TRACEBACK = "Traceback (most recent call last):"
_TRACEBACK_WORDS = "Traceback (most recent call last)"  # in either header
# IPython's header (Jupyter, ChatGPT's code interpreter) names the exception before the words
# and has no colon: "KeyError                                  Traceback (most recent call last)".
_IPYTHON_HEADER = re.compile(r"^[ \t]*([A-Za-z_][\w.]*)[ \t]+Traceback \(most recent call last\)[ \t]*$", re.M)
# The exception line that closes a Python traceback: `KeyError: 'amount'`, `psycopg.OperationalError`.
_EXCEPTION_LINE = re.compile(
    r"^[\s|]*[A-Za-z_][\w.]*(Error|Exception|Warning|Interrupt|Exit|Iteration|Group)\b(:|\s*$)")


def _traceback_exception(text: str) -> str:
    """The exception a Python traceback ends with ('' when the text holds no traceback).

    The last traceback counts (a chained one ends with the exception raised last). After its
    header come the frames, indented deeper than the header; the first line back at the
    header's depth is the exception. A traceback cut short falls back to its last line that
    names an exception, else its last non-empty line. IPython's frames are not indented: its
    exception is the last line that starts with the name its header gives, else as above.
    """
    at = text.rfind(_TRACEBACK)
    ipython = None
    for ipython in _IPYTHON_HEADER.finditer(text, max(at, 0)):
        pass  # the last IPython header, if one comes after the last plain header
    if ipython is not None:
        return _ipython_exception(ipython.group(1), text[ipython.end():])
    if at < 0:
        return ""
    start = text.rfind("\n", 0, at) + 1
    prefix = text[start:at]
    lines = text[at + len(_TRACEBACK):].splitlines()
    readable = True
    if prefix.strip():  # a prefixed log ("web_1  | Traceback …"): read its lines without it
        readable = all(ln.startswith(prefix) for ln in lines if ln.strip())
        lines = [ln[len(prefix):] if ln.startswith(prefix) else ln for ln in lines]
    rest = [ln for ln in lines if ln.strip()]
    depth = 0 if prefix.strip() else len(prefix)
    for ln in rest if readable else ():  # prefixes that vary (timestamps): by name below
        if len(ln) - len(ln.lstrip()) <= depth and not _NOISE.match(ln.strip()):
            return ln.strip()
    return _named_exception(rest)


def _named_exception(rest: list[str]) -> str:
    """The last line of a traceback's body that names an exception, else its last non-empty line."""
    named = [ln for ln in rest if _EXCEPTION_LINE.match(ln)]
    if named:
        return named[-1].strip()
    rest = [ln for ln in rest if ln.strip() and not _NOISE.match(ln.strip())]
    return rest[-1].strip() if rest else ""


def _ipython_exception(name: str, body: str) -> str:
    """The exception line of an IPython traceback whose header names `name`."""
    rest = [ln for ln in body.splitlines() if ln.strip()]
    own = [ln.strip() for ln in rest if ln.strip() == name or ln.strip().startswith(f"{name}:")]
    return own[-1] if own else _named_exception(rest)


# How much of each line of a failed output the telling line is looked for in. With SCAN_EDGE
# (its first and last 64 KB, as the patterns read a person's long message): a failed command
# that printed 20 MB on one line took 13 s to read whole. What went wrong is said at an end of
# the output, and at the start of its line; the title shows 120 characters of it.
LINE_EDGE = 4096


def _scanned(text: str) -> str:
    """The part of a failed output the telling line is looked for in: all of it, or its first
    and last SCAN_EDGE characters when it is longer; a line longer than LINE_EDGE, its first
    LINE_EDGE characters. Where it is cut, it is redacted as if the whole had been, so no
    fragment of a key cut in two shows (detect_common.redacted_head, redacted_tail)."""
    if len(text) > 2 * SCAN_EDGE:
        text = f"{redacted_head(text, SCAN_EDGE)}\n{redacted_tail(text, SCAN_EDGE)}"
    lines = text.splitlines()
    if all(len(ln) <= LINE_EDGE for ln in lines):
        return text
    return "\n".join(redacted_head(ln, LINE_EDGE) if len(ln) > LINE_EDGE else ln for ln in lines)


def _error_line(text: str, cls: str) -> str:
    """The most telling line of an error output: for a traceback, the exception it ends with;
    otherwise the line its class matched, else the first. A line that only leads in to the
    next ("… failed due to the following issue:") comes with that next line. Of a huge output
    only its ends are read, and of a huge line its start (_scanned)."""
    return _line_of(_scanned(text or ""), cls)


def _line_of(text: str, cls: str) -> str:
    """_error_line of the text as given, whatever its size."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _NOISE.match(ln.strip())]
    at = _telling_line(text, cls, lines)
    if at is None:
        return ""
    line, index = at
    if line.endswith(":") and index + 1 < len(lines):
        line = f"{line} {lines[index + 1]}"
    return line


def _telling_line(text: str, cls: str, lines: list[str]) -> tuple[str, int] | None:
    """The telling line (see _error_line) and where it stands among `lines`."""
    exception = _traceback_exception(text) if _TRACEBACK_WORDS in text else ""
    pattern = dict(_ERROR_PATTERNS).get(cls)

    def last(line: str) -> tuple[str, int]:  # a traceback's exception closes it: the last such line
        where = [n for n, ln in enumerate(lines) if ln == line]
        return line, where[-1] if where else len(lines)
    if exception and (pattern is None or pattern.search(exception)):
        return last(exception)
    if cls == "test_failure":
        go = _go_test_line(lines)
        if go is not None:
            return go
    if pattern is not None:
        hits = [n for n, ln in enumerate(lines) if pattern.search(ln)]
        if cls == "test_failure":  # a bare "FAIL" summary names nothing: any other line first
            hits = [n for n in hits if lines[n] != "FAIL"] or hits
        if hits:
            # A traceback ends with the exception that matters; test runners name the test first.
            n = hits[-1] if cls in ("module_not_found", "syntax_type_error") else hits[0]
            return lines[n], n
    if exception:
        return last(exception)
    return _first_telling(lines)


# `go test` ends every failing run with the same lines, "FAIL" and "FAIL\t<package>\t0.01s";
# the test that failed is named above them ("--- FAIL: TestName (0.00s)"), with where and why
# ("    math_test.go:12: got 4, want 3").
_GO_FAIL = re.compile(r"--- FAIL: \S")
_GO_TEST_LINE = re.compile(r"[\w.-]+_test\.go:\d+: \S")


def _go_test_line(lines: list[str]) -> tuple[str, int] | None:
    """The first `--- FAIL: TestName` line of a `go test` output, else its first
    `file_test.go:N:` line (None when it has neither)."""
    for pattern in (_GO_FAIL, _GO_TEST_LINE):
        for n, line in enumerate(lines):
            if pattern.match(line):
                return line, n
    return None


# A command-line tool given a wrong flag or argument prints its usage, then the error:
# argparse's "usage: prog [-h] …" and "prog: error: unrecognized arguments: --dry", pytest's
# "ERROR: usage: pytest [options] …" and "pytest: error: …". The banner is the same whatever
# went wrong; the error line names the flag.
_USAGE_BANNER = re.compile(r"^(error:\s*)?usage:\s", re.I)
_TOOL_ERROR = re.compile(r"^([\w.-]+(\s+-m\s+[\w.]+)?:\s+)?error:\s+\S", re.I)


def _first_telling(lines: list[str]) -> tuple[str, int] | None:
    """When no class or exception points at a line: a tool's own error line ("prog: error:
    …"), else the first line that is not a usage banner, else the first line."""
    for n, line in enumerate(lines):
        if _TOOL_ERROR.match(line) and not _USAGE_BANNER.match(line):
            return line, n
    for n, line in enumerate(lines):
        if not _USAGE_BANNER.match(line):
            return line, n
    return (lines[0], 0) if lines else None


# A number standing on its own: digits (and a dotted version or decimal, `v` in front allowed)
# touching no letter, digit or underscore. `python3`, `utf8`, `ES2022`, `x86_64` are names
# and stay; counts, ports, line numbers, attempt numbers and versions are blanked.
_NUMBER = re.compile(r"(?<![\w])(?:v\d+(?:\.\d+)+|\d+(?:\.\d+)*)(?![\w])")
# A quantity with its unit: a duration (12ms, 3.5s, 2min) or a size (512MB, 4KiB).
_QUANTITY = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?(?:ns|us|µs|ms|s|sec|secs|min|mins|h|[KMGT]i?B|B)(?![\w])", re.I)
_TEMP_PATH = re.compile(r"((?:/private)?/var/folders|/tmp|/var/tmp)/[^\s'\"]+")


def _normalise(line: str) -> str:
    """Drop what differs between two occurrences of the same error: numbers (counts, ports,
    line numbers, versions), hex and hashes, temporary paths, durations and sizes."""
    line = re.sub(r"0x[0-9a-f]+|\b[0-9a-f]{8,}\b", "…", line, flags=re.I)
    line = _TEMP_PATH.sub(lambda m: f"{m.group(1)}/…", line)
    line = _QUANTITY.sub("…", line)
    line = _NUMBER.sub("…", line)
    return shorten(line, 120)


# What Claude Code answers itself, before the tool runs (inside <tool_use_error>), when a call
# breaks one of its rules (an edit before a read, a parameter missing, a parallel call
# cancelled with its sibling): the agent's slip, and the answer already says what to do, so
# the agent does it at the next call (it reads the file, sends the parameter). Nothing about
# the project or the machine is learned and the person took no part: no error. A fact about
# the project the harness answers the same way ("File does not exist.") is still an error, and
# so is the same wording printed by a tool that ran (a script's own InputValidationError).
_HARNESS_RULES = re.compile(
    r"(?:<tool_use_error>)?\s*(?:Error:\s*)?(?:"
    r"File has not been read yet\b|File has been (?:unexpectedly )?modified since read\b|"
    r"InputValidationError\b|Sibling tool call errored\b|No such tool available\b|"
    r"String to replace not found in file\b|Found \d+ matches of the string to replace\b|"
    r"No changes to make: old_string and new_string\b|Cannot create new file - file already exists\b|"
    r"File is a Jupyter Notebook\. Use the \w+ to edit)")


# Codex's answer to an apply_patch whose patch it cannot apply as written, checked before
# anything is changed: the lines or the context to replace are not in the file (Claude Code's
# "String to replace not found in file"), or the patch is not in the format. The agent reads
# the file again and sends a patch that fits. A file that is not there ("Failed to read …") is
# a fact about the project: still an error.
_PATCH_RULES = re.compile(
    r"\s*(?:Error:\s*)?(?:apply_patch verification failed:\s*)?(?:"
    r"Failed to find (?:expected lines|context)\b|invalid patch\b|invalid hunk at line \d|"
    r"patch detected without explicit call to apply_patch\b|patch rejected: empty patch\b)", re.I)


def harness_rule(call: ToolCall, by_harness: Collection[str] = ()) -> bool:
    """The harness answered the call itself, telling the agent how it broke one of the
    harness's rules (see _HARNESS_RULES, _PATCH_RULES): not a failure of the tool, no error is
    learned. `by_harness`: the ids of the calls the harness answered (a Claude Code
    transcript's TOOL_USE_ERRORS, whose results lost their tags); a result that kept them says
    so itself. Codex's answer to a patch it cannot apply is read from an apply_patch call's
    result alone: no tool ran to print those words."""
    result = call.result or ""
    if patch_of(call) is not None and _PATCH_RULES.match(result):
        return True
    answered = call.id in by_harness or result.lstrip().startswith("<tool_use_error>")
    return answered and _HARNESS_RULES.match(result) is not None


def errors(session: Session) -> list[Finding]:
    found: list[Finding] = []
    by_harness = frozenset(session.meta.get(TOOL_USE_ERRORS) or ())
    for i, turn in enumerate(session.turns):
        for call in turn.tool_calls:
            if not call.is_error or call.rejected or call.result is None or answers_no(call) \
                    or harness_rule(call, by_harness) or permission_not_granted(call.result):
                continue  # permission_not_granted: a refusal (a source that did not mark it so)
            cls = error_class(call.result)
            # redacted before numbers and hashes are blanked, which could leave half a key
            line = _normalise(redact_secrets(_error_line(call.result, cls)))
            what = describe_call(call)
            title = f"{call.name} {_LABEL[cls]}: {line}" if line else f"{call.name} {_LABEL[cls]}"
            found.append(Finding(
                kind="error", title=shorten(title, 160), text=f"{what}\n{line}",
                detail=f"{what}\n\n{redacted_ends(call.result, 4000)}", at=turn.at, turn=i,
                tags=[f"error:{cls}", f"tool:{call.name.lower()}"],
                extra={"class": cls, "tool": call.name, "action": action_kind(call)},
            ))
    return dedupe(found)


# --------------------------------------------------------------------------- answers, not failures

# Commands whose exit status 1 is an answer, not a failure: grep found no line, diff found
# that the files differ, test found the condition false. Each tells trouble apart by a status
# of 2 or more and by words on stderr. What each may print when it answers no, line by line
# (a unified or context diff's hunk lines are read apart, after the hunk starts):
_ANSWER_LINES = {
    "no_match": re.compile(r"(?:.*:)?0"),  # grep -c: a count of none
    "differ": re.compile(
        r"\d+(?:,\d+)?[acd]\d+(?:,\d+)?|[<>] .*|[<>]|---|--- .*|\+\+\+ .*|\\ No newline at end of file|"
        r"diff .*|index .*|Only in .*|(?:Binary )?[Ff]iles .+ differ|Common subdirectories: .*|"
        r"(?:new|deleted) file mode .*|(?:old|new) mode .*|similarity index .*|(?:rename|copy) (?:from|to) .*|"
        r"\*\*\* .*"),
    "cmp": re.compile(r".+ differ: (?:byte|char) \d+, line \d+|cmp: EOF on .*"),
    "false": re.compile(r"(?!)"),  # test, [ and [[ say nothing when the answer is no
}
_HUNK_START = re.compile(r"@@ .*|\*{15}")
_HUNK_LINE = re.compile(r"[-+ !\\].*")
_SEARCHES = frozenset(("grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "pgrep"))
_GIT_DIFFS = frozenset(("diff", "diff-index", "diff-files", "diff-tree"))
_STDERR_AWAY = re.compile(r"2>(?!&1)|&>|>&\s*[^\d\s]")  # not 2>&1, which keeps it


def _answer_kind(words: list[str]) -> str | None:
    """Which answer a simple command gives by exit status 1 (a key of _ANSWER_LINES), None
    when its status 1 is a failure."""
    while words and ENV_ASSIGN.match(words[0]):
        words = words[1:]  # FOO=1 grep …
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program in _SEARCHES:
        return "no_match"
    if program in ("diff", "colordiff"):
        return "differ"
    if program == "cmp":
        return "cmp"
    if program in ("test", "[", "[["):
        return "false"
    if program == "git":
        rest = words[1:]
        while rest and rest[0].startswith("-"):  # git -C dir --no-pager diff …
            rest = rest[2:] if rest[0] in ("-C", "-c") else rest[1:]
        if rest and rest[0] == "grep":
            return "no_match"
        if rest and rest[0] in _GIT_DIFFS and {"--quiet", "--exit-code", "--no-index"} & set(rest[1:]):
            return "differ"
    return None


def _status_commands(command: str) -> list[str] | None:
    """The simple commands whose exit status a command line may end with, None when that
    cannot be told. After the last `;` or newline comes the and-or list that sets the status;
    in it, any pipeline not followed by `||` may be the one that failed, and of a pipeline
    the last command (every command, under `set -o pipefail`)."""
    parts = split_commands(command)
    if parts is None:
        return None
    while parts and not parts[-1][1] and parts[-1][0] in (";", ""):
        parts.pop()  # "grep x f;" ends with an empty command
    start = max((n for n, (op, _) in enumerate(parts) if op in (";", "&")), default=0)
    last = parts[start:]
    if not last or any(not text for _, text in last):
        return None  # a background job last, or a line that does not parse
    pipefail = "pipefail" in command
    found: list[str] = []
    for n, (_, text) in enumerate(last):
        after = last[n + 1][0] if n + 1 < len(last) else ""
        if after == "|" and not pipefail:
            continue  # not the last command of its pipeline
        if after != "||":
            found.append(text)
    return found


def answers_no(call: ToolCall) -> bool:
    """A shell call that "failed" with exit status 1 only to answer no: `grep` matched no line,
    `diff`, `cmp` or `git diff --quiet` found a difference, `test -f` / `[ … ]` found the
    condition false. The call's result holds nothing else, so no error text: no other status
    (a status of 2 means trouble), no words on stderr. Every command whose status the line may
    end with must be such a command (or a `cd` before one); a line not read plainly (subshells,
    command substitution, a negation) is a failure as before. When the status is not in the
    result (Codex keeps the output alone), stderr must not be sent away (`2>/dev/null`)."""
    command = shell_command(call.name, call.input)
    if not command:
        return False
    text = call.result or ""
    code = exit_code(text)
    if code is not None and code != 1:
        return False
    if code is None and _STDERR_AWAY.search(command):
        return False  # its trouble could have been silenced
    status = _status_commands(command)
    if not status:
        return False
    kinds: set[str] = set()
    for simple in status:
        try:
            words = shlex.split(simple)
        except ValueError:
            return False
        kind = _answer_kind(words)
        # A change of directory prints nothing when it succeeds and says why when it fails: it
        # may run before an answering command (`cd src && grep …`); its failure's words are not allowed.
        if kind is None and not (words and words[0] in DIRECTORY_CHANGES):
            return False
        if kind:
            kinds.add(kind)
    if not kinds:
        return False
    return _only_answers(text, kinds)


def _only_answers(text: str, kinds: set[str]) -> bool:
    """Whether every line of a result is what the answering commands print (the status line
    aside): no error text among them."""
    allowed = [_ANSWER_LINES[k] for k in kinds]
    in_hunk = False
    for line in text.splitlines():
        if not line.strip() or EXIT_LINE.fullmatch(line.strip()):
            continue
        if "differ" in kinds and _HUNK_START.fullmatch(line):
            in_hunk = True
        elif not (in_hunk and _HUNK_LINE.fullmatch(line)) and not any(p.fullmatch(line) for p in allowed):
            return False
    return True


# --------------------------------------------------------------------------- surprises

_SURPRISE = re.compile(
    r"\b(unexpectedly|surprisingly|to my surprise|(it )?turns out|that'?s (odd|strange|weird|surprising|unexpected)|"
    r"this is (odd|strange|weird|surprising|unexpected)|interestingly|oddly|strangely|"
    r"I (had )?(assumed|expected) [^.!?\n]{3,160}\bbut\b|"
    # "I thought X was … but": a stated expectation. Not "I thought about/of …" or "I thought we
    # could …": that is deliberation, and its "but" is a change of plan, not a surprise.
    r"I (had )?thought (?!about\b|of\b|(we|I|you) (could|should|might|can|may|would)\b|maybe\b|perhaps\b)"
    r"(that )?[^.!?\n]{1,80}?\b(was|were|is|are|would|had|did|does|will|wasn'?t|weren'?t|isn'?t|"
    r"aren'?t|wouldn'?t|hadn'?t|didn'?t|doesn'?t|won'?t)\b[^.!?\n]{0,160}\bbut\b|"
    r"wasn'?t expecting|didn'?t expect|"
    # "contrary to" what someone expected or was told: not "contrary to popular belief".
    r"contrary to (what|my|our|(the|its|their) (docs?|documentation|readme|manual|man ?page|spec|"
    r"comments?|changelog|name|help|expectations?)\b|expectations?)|not what I expected)",
    re.I,
)


def surprises(session: Session) -> list[Finding]:
    found: list[Finding] = []
    for i, turn in enumerate(session.turns):
        text = scan_text(turn.text or "")
        if not text or not _SURPRISE.search(text):
            continue
        for sentence in SENTENCE_END.split(text):
            # "- **Interestingly**, …" reads as words: bullet, heading and emphasis marks off
            sentence = plain(sentence.strip(" -#>")).strip(" -*#>`")
            if len(sentence) < 12 or not _SURPRISE.search(sentence):
                continue
            if sentence.rstrip().endswith("?"):
                continue  # a question about a surprise is not a finding
            found.append(Finding(
                kind="surprise", title=shorten(sentence, 160), text=sentence,
                detail=(f"The agent said: {quote(turn.text, 1500)}" if turn.role == "assistant"
                        else f"The person said: {shorten(turn.text, 1500)}"),
                at=turn.at, turn=i, tags=[f"said-by:{turn.role}"],
            ))
    return dedupe(found)


# --------------------------------------------------------------------------- environment

_VERSION = re.compile(r"\bv?(\d+\.\d+(?:\.\d+)?(?:[-+.][\w.]+)?)\b")
# The whole command asks a tool its version and nothing else ("grep -v x", "curl -v URL" and
# "npm version patch" do other things). `-v` means version only for the tools listed.
_VERSION_CMD = re.compile(r"^\s*(?:[\w.~/-]*/)?([\w.+-]+)\s+(--version|-V|-version|-v|version)\s*(?:2>&1)?\s*$")
_DASH_V_TOOLS = frozenset((
    "node", "npm", "npx", "pnpm", "yarn", "bun", "deno", "tsc", "ruby", "gem", "php", "perl",
    "docker", "gradle", "mvn", "terraform", "git", "nvm",
))
_DASH_VERSION_TOOLS = frozenset(("java", "javac", "scala", "kotlin"))  # java -version
_IPV4 = re.compile(r"^\d+\.\d+\.\d+\.\d+$")
_WHICH = re.compile(r"^\s*(which|command -v|type -p|where)\s+([\w.+-]+)\s*$")
_OS_CMD = re.compile(r"\b(uname( -\w+)*|sw_vers|lsb_release -\w+|cat /etc/os-release|ver)\b")
_OS_TEXT = re.compile(
    r"\b(Darwin \S+|Linux \S+|Ubuntu \d+\.\d+|Debian GNU/Linux \d+|Fedora( Linux)? \d+|"
    r"macOS \d+(\.\d+)*|ProductVersion:\s*\d+(\.\d+)*|Microsoft Windows \[Version [\d.]+\]|"
    r"Arch Linux|Alpine Linux v?\d+\.\d+|PRETTY_NAME=\"[^\"]+\")")


def environment(session: Session) -> list[Finding]:
    found: list[Finding] = []
    for i, turn in enumerate(session.turns):
        for call in turn.tool_calls:
            if call.rejected or call.result is None:
                continue
            command = command_of(call.input)
            result = call.result or ""
            for title, text in _environment_of(command, result, call.is_error):
                found.append(Finding(
                    kind="environment", title=title, text=text,
                    detail=f"{describe_call(call)}\n\n{redacted_head(result, 1500)}", at=turn.at, turn=i,
                    tags=["environment"],
                ))
    return dedupe(found)


def _asks_version(tool: str, flag: str) -> bool:
    if flag == "-v":
        return tool in _DASH_V_TOOLS
    if flag == "-version":
        return tool in _DASH_VERSION_TOOLS
    return True


def _version_in(line: str) -> str | None:
    """The version a version command printed: a short line, a number standing on its own (not
    inside a file name, a path, `pkg==1.2` or an address)."""
    if len(line) > 200:
        return None
    for m in _VERSION.finditer(line):
        before = line[m.start() - 1] if m.start() else " "
        if before not in " \t(\"'" or _IPV4.match(m.group(1)):
            continue
        return m.group(1)
    return None


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _environment_of(command: str, result: str, is_error: bool) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    head = result[:3000]
    # cheap substring checks first: this runs over every tool result of every session
    if "not found" in head or "not recognized" in head:
        for pattern in _CMD_MISSING:
            for m in pattern.finditer(head):
                tool = m.group(1)
                facts.append((f"tool missing: {tool}", f"`{tool}` is not installed on this machine (command not found)."))
    for pattern in _MODULE_MISSING if "odule" in head else ():
        for m in pattern.finditer(head):
            mod = m.group(1)
            facts.append((f"module missing: {mod}", f"The module `{mod}` is not installed here."))
    if is_error or not command:
        return facts
    first = _first_line(result)
    vm = _VERSION_CMD.match(command)
    if vm and len(command) < 120 and _asks_version(vm.group(1), vm.group(2)):
        version = _version_in(first)
        if version:
            tool = vm.group(1)
            facts.append((f"version: {tool} {version}", f"{tool} here is version {version} ({shorten(first, 120)})."))
    wm = _WHICH.match(command)
    if wm and first.startswith(("/", "~")) and " " not in first:
        facts.append((f"path: {wm.group(2)} -> {first}", f"`{wm.group(2)}` resolves to {first}."))
    if _OS_CMD.search(command):
        parts = first.split()
        om = _OS_TEXT.search(head)
        if "uname" in command and len(parts) >= 3 and parts[0] in ("Linux", "Darwin", "FreeBSD", "OpenBSD"):
            # uname -a: kernel name, host name, kernel release
            facts.append((f"os: {parts[0]} {parts[2]}", f"The machine runs {parts[0]} {parts[2]}."))
        elif om:
            facts.append((f"os: {shorten(om.group(0), 80)}", f"The machine runs {shorten(om.group(0), 120)}."))
    return facts

