"""The words of a shell command that name what was run: the program and its subcommand.

Used to word a lesson ("Ask before running `mix phx.server`") and, on the hook path, to tell
whether a tool call runs the command an error lesson is about; so only `re` is imported here.
"""

from __future__ import annotations

import re

# Tools that run a shell command (Claude Code, Codex, Gemini CLI, Cursor, Cline …). Codex's
# `shell` takes an argv list, its `shell_command` (current Codex CLI) and `exec_command` a string.
SHELL_TOOLS = {"bash", "shell", "shell_command", "local_shell", "exec_command", "run_shell_command",
               "run_terminal_cmd", "execute_command"}
# Commands that only change the directory: what a command line runs is the command after them
# ("cd app && mix test"), and they print nothing when they succeed.
DIRECTORY_CHANGES = frozenset(("cd", "pushd"))
ENV_ASSIGN = re.compile(r"^[A-Za-z_]\w*=")  # FOO=1 before a command
_REDIRECT = re.compile(r"^(?:\d*[<>]|&>)")
_SPECIAL = re.compile(r"[<>|&;'\"`$()…]")  # what the shell reads specially (or a cut: "…")
COMMAND_WORDS = 4


# Between the characters split_commands looks at, and the escaped characters among them ("\;"
# is a word's): read in one step, so a long command costs little on the hook path.
_PLAIN_RUN = re.compile(r"(?:[^\"'`\\();|&\n<]|\\[\s\S])+")
_DOUBLE_QUOTED_REST = re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL)  # to the closing quote, \" kept


def split_commands(command: str, strict: bool = True, most: int = 0) -> list[tuple[str, str]] | None:
    """The simple commands of a command line, each with the operator before it ('' first):
    [("", "cd src"), ("&&", "grep -rn x .")]. An operator inside quotes is a word's; a background
    `&` ends a command, the one in `2>&1` or `&>` does not.

    strict: None when the line is not read so plainly (an unclosed quote, a subshell or command
    substitution, a here-document), for telling which command set the exit status. Not strict,
    for naming what a line runs: a subshell's parentheses end a command as `;` does
    ("(cd app && make)" runs make), backticks quote, and an unclosed quote runs to the end.
    most: stop once that many commands with words are read (0: read them all)."""
    out: list[tuple[str, str]] = []
    buf: list[str] = []
    op, i, n, said = "", 0, len(command), 0
    quotes = "'\"" if strict else "'\"`"
    while i < n:
        plain = _PLAIN_RUN.match(command, i)
        if plain:
            buf.append(plain.group())
            i = plain.end()
            continue
        ch = command[i]
        if ch in quotes:
            if ch == '"':
                rest = _DOUBLE_QUOTED_REST.match(command, i + 1)
                close = rest.end() if rest else -1
            else:
                close = command.find(ch, i + 1) + 1 or -1
            if close < 0:  # unclosed
                if strict:
                    return None
                close = n
            buf.append(command[i:close])
            i = close
            continue
        if ch == "\\" and i + 1 < n:
            buf.append(command[i:i + 2])
            i += 2
            continue
        if strict and (ch in "()`" or command.startswith("<<", i)):
            return None
        if command.startswith(("&&", "||"), i) or ch in ";\n|()" or (
                ch == "&" and not (buf and buf[-1][-1] in "<>") and command[i + 1:i + 2] != ">"):
            out.append((op, "".join(buf).strip()))
            said += bool(out[-1][1])
            if said == most > 0:
                return out
            op = command[i:i + 2] if command.startswith(("&&", "||"), i) else ch
            i += len(op)
            op = ";" if op in ("\n", "(", ")") else op
            buf = []
            continue
        buf.append(ch)
        i += 1
    out.append((op, "".join(buf).strip()))
    return out


# Characters of a shell command a hook reads for what it runs (`bounded`): half from its start,
# half from its end. A call or a script is far shorter; a generated one (a megabyte of
# continued lines) would otherwise cost the hook its whole budget in parsing.
COMMAND_CAP = 16_000
_COMMAND_EDGE = re.compile(r"[\n;&|]")
# What `bounded` reads of the start it keeps, to tell whether it ends inside a quote or a
# here-document: plain runs, an escape, a quoted string, a quote left open, a here-document's
# opening (`<<EOF`, `<<-'EOF'`, `<<\EOF`; not `<<<`), a line's end, a comment's "#".
_OPENER = r"""(?<!<)<<(?!<)-?[ \t]*(?:(?P<q>['"])(?P<quoted>[A-Za-z_][\w.-]*)(?P=q)|\\?(?P<word>[A-Za-z_][\w.-]*))"""
_HEREDOC_OPENER = re.compile(_OPENER)
_SCAN = re.compile(r"""[^'"`\\#<\n$]+|\\[\s\S]|\$'(?:[^'\\]++|\\[\s\S])*+'|'[^']*+'"""
                   r"""|"(?:[^"\\]++|\\[\s\S])*+"|`[^`]*+`|(?P<open>\$?['"`])|(?P<opener>""" + _OPENER + r""")"""
                   r"""|(?P<newline>\n)|(?P<comment>#)|[\s\S]""")
_COMMENT_AFTER = frozenset(" \t\n;&|()")
# Where a quote left open closes: the rest of its string, to the quote closing it.
_QUOTE_REST = {"'": re.compile(r"[^']*+'"), "$'": re.compile(r"(?:[^'\\]++|\\[\s\S])*+'"),
               '"': re.compile(r'(?:[^"\\]++|\\[\s\S])*+"'), "`": re.compile(r"[^`]*+`")}
OPENERS_TRIED = 16  # "<<" read back from the end of the part left out, at most (a run of "<<<<…")
OPENER_LINE = 1000  # characters of the line before one read for a comment or a quote, at most
# Characters the start leaves for what closes its quote or here-document (its quote; a new line
# and the closing word) when the part left out closes it: a longer word, and the end is left out.
CLOSING_ROOM = 64


def _closing_line(text: str, word: str, pos: int = 0, end: int | None = None) -> re.Match[str] | None:
    """The first line of text[pos:end] that closes a here-document opened with `word` (the
    word alone, tabs or spaces around it as `<<-` lets in), with its new line."""
    closing = re.compile(rf"(?m)^[ \t]*{re.escape(word)}[ \t\r]*(?:\n|$)")
    return closing.search(text, pos) if end is None else closing.search(text, pos, end)


def _left_open(text: str) -> tuple[str, str] | None:
    """What the end of `text` is inside: ("quote", the quote: `'`, `"`, `` ` `` or `$'`),
    ("heredoc", the words closing it and the here-documents its line opens after it, in turn,
    between spaces) or ("comment", "#"); None when it ends outside them."""
    pending: list[str] = []  # here-documents opened on the line being read, in order
    i, n = 0, len(text)
    while i < n:
        token = _SCAN.match(text, i)
        assert token is not None  # its last alternative takes any character
        i = token.end()
        if token.group("open"):
            return "quote", token.group("open")
        if token.group("opener"):
            pending.append(token.group("quoted") or token.group("word"))
        elif token.group("newline") and pending:  # the line's here-documents' bodies, in turn
            for at, word in enumerate(pending):
                close = _closing_line(text, word, i)
                if close is None:
                    return "heredoc", " ".join(pending[at:])
                i = close.end()
            pending = []
        elif token.group("comment") and (token.start() == 0 or text[token.start() - 1] in _COMMENT_AFTER):
            end = text.find("\n", i)
            if end < 0:
                return ("heredoc", " ".join(pending)) if pending else ("comment", "#")
            i = end
    return ("heredoc", " ".join(pending)) if pending else None


def _last_opener(text: str, start: int, end: int) -> tuple[str, int] | None:
    """The last here-document opening in text[start:end], read back from its end (not one in
    a comment or a quote on its line, "# then cat <<EOF", when the line before it is short
    enough to read): its closing word and where it ends; None for none. "" for the word when
    OPENERS_TRIED "<<" were read back without finding one (what the part opens is not known)."""
    for _ in range(OPENERS_TRIED):
        at = text.rfind("<<", start, end)
        if at < 0:
            return None
        opener = _HEREDOC_OPENER.match(text, at)
        line = max(text.rfind("\n", start, at) + 1, start)
        if opener and opener.end() <= end and (line < at - OPENER_LINE or not _left_open(text[line:at])):
            return opener.group("quoted") or opener.group("word"), opener.end()
        end = at + 1
    return "", end


def bounded(command: str, cap: int = COMMAND_CAP) -> str:
    """A command of more than `cap` characters as its first and its last `cap` / 2, joined by
    a new line, each cut at the edge of a line (or, in a line of no breaks, of a command: ";",
    "&", "|"), so no command is cut in two; a start with no such edge is kept as it is (it
    holds the command's first words), an end with none is left out. A script's first commands
    and its last ones (the push after the build) are read, never more than `cap` characters.
    The end is read as the script reads it (_commands_at_end): a here-document's body or a
    quoted string is text, not commands ("git push --force" in the README a script writes
    runs nothing)."""
    if len(command) <= cap:
        return command
    half = cap // 2
    head = command[:half - CLOSING_ROOM]
    edges = list(_COMMAND_EDGE.finditer(head))
    if edges:
        newline = head.rfind("\n")
        head = head[:newline if newline > 0 else edges[-1].start()]
    tail_at = len(command) - half
    newline = command.find("\n", tail_at)
    edge = _COMMAND_EDGE.search(command, tail_at) if newline < 0 else None
    tail_at = newline + 1 if newline >= 0 else edge.end() if edge else len(command)
    closing, tail = _commands_at_end(command, len(head), tail_at)
    return f"{head}{closing}\n{tail}" if tail.strip() and len(closing) <= CLOSING_ROOM else head


def _commands_at_end(command: str, middle_at: int, tail_at: int) -> tuple[str, str]:
    """command[tail_at:] from where the script reads it as commands, the part before it,
    command[middle_at:tail_at], left out ('' when that is not known); and what closes the
    quote or the here-document the start stops inside, when the part left out closes it
    (its quote; a new line and its closing word), for the start to end there.

    - The start kept stops inside a quote, or a here-document, that the part left out does
      not close: the end from the quote or the line closing it, that quote or line too (the
      start's string or body ends there).
    - The part left out opens a here-document (the last "<<" read back from its end) that it
      does not close: the end after the line closing it.
    With no such line or quote in the end, none of it. A quote opened and left open in the
    part left out is not seen."""
    tail = command[tail_at:]
    if not tail.strip():
        return "", ""
    left = _left_open(command[:middle_at])
    closing = ""
    if left and left[0] == "quote":
        closed = _QUOTE_REST[left[1]].match(command, middle_at, tail_at)
        if closed is None:
            closed = _QUOTE_REST[left[1]].match(tail)
            return "", tail[closed.end() - 1:] if closed else ""
        middle_at, closing = closed.end(), left[1][-1]
    for word in left[1].split() if left and left[0] == "heredoc" else ():
        close = _closing_line(command, word, middle_at, tail_at)
        if close is None:  # the rest of the start's here-documents are read from the end
            close = _closing_line(tail, word)
            return closing, tail[close.start():] if close else ""
        middle_at, closing = close.end(), f"{closing}\n{word}"
    opener = _last_opener(command, middle_at, tail_at)
    if opener is None:
        return closing, tail
    word, opened = opener
    line_end = command.find("\n", opened, tail_at)
    if word and line_end >= 0 and _closing_line(command, word, line_end + 1, tail_at):
        return closing, tail  # its body ends before the end kept begins
    close = _closing_line(tail, word) if word else None
    return closing, tail[close.end():] if close else ""


def command_words(command: str, limit: int = COMMAND_WORDS, by_name: bool = False) -> str:
    """A shell command's first words (program and subcommand): no pipes, redirections,
    quoted arguments or a leading `cd …` / `VAR=…`, so a lesson names what was run without
    carrying a pipeline. '' when nothing plain is left. by_name: a program run by its path
    is named by its file name (`./gradlew build`: "gradlew build"; `$HOME/bin/deploy`:
    "deploy"), a quoted one by its words (`'my tool' run`: "my tool")."""
    parts = [text.split() for _, text in split_commands(command, strict=False, most=2) or ()]
    parts = [p for p in parts if p]
    if len(parts) > 1 and parts[0][0] in DIRECTORY_CHANGES:
        parts = parts[1:]  # "cd app && mix test": the command is the one after the cd
    words: list[str] = []
    for word in (parts[0] if parts else []):
        if not words and ENV_ASSIGN.match(word):
            continue
        if _REDIRECT.match(word):
            break
        if by_name and not words:  # the program's file name, wherever it is kept, quoted or not
            word = word.lstrip("'\"").rsplit("/", 1)[-1]
        plain = _SPECIAL.split(word, 1)[0]  # "hi>out" is "hi", then the command's words end
        if plain:
            words.append(plain)
        if plain != word or len(words) == limit:
            break
    return " ".join(words)


def program_words(command: str, most: int = 3, by_name: bool = False) -> tuple[str, ...]:
    """The leading plain words of a command, up to `most`, stopping at the first flag, path or
    assignment ("uv run pytest -q tests/" -> ("uv", "run", "pytest"); "mix phx.server" ->
    ("mix", "phx.server")); () when there are none. by_name: see command_words."""
    out: list[str] = []
    for word in command_words(command, limit=most, by_name=by_name).lower().split():
        if word.startswith("-") or "/" in word or "=" in word:
            break
        out.append(word)
    return tuple(out)


# Words that open, close or negate a compound command: the command is the word after them
# ("if ! git diff --quiet; then git push --force; fi" runs git diff and git push).
SHELL_KEYWORDS = frozenset("{ } ( ) ! if then else elif do done fi while until esac".split())
# The headers of a loop or a case, which run nothing themselves ("for f in *.py; do …").
_HEADERS = frozenset(("for", "select", "case"))
# Programs that run the command after their own options ("timeout 60 git push", "env -i
# PATH=/bin make", "sudo -u postgres psql"), each with those of its options that take a value
# (bundled or not: "sudo -iu postgres psql", "timeout -sKILL 5 make").
WRAPPERS: dict[str, frozenset[str]] = {
    "timeout": frozenset(("-s", "--signal", "-k", "--kill-after")),
    "env": frozenset(("-u", "--unset", "-C", "--chdir", "-a", "--argv0")),
    "nice": frozenset(("-n", "--adjustment")),
    "time": frozenset(("-o", "--output", "-f", "--format")),
    "nohup": frozenset(),
    "command": frozenset(),
    "exec": frozenset(("-a",)),
    "sudo": frozenset(("-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h",
                       "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-T",
                       "--command-timeout", "-U", "--other-user", "-R", "--chroot", "-a",
                       "--auth-type", "-c", "--login-class")),
}
# Options after which a wrapper runs no command: `command -v pip` looks pip up, `sudo -l`
# lists what may be run, `sudo -e` edits a file, `env -S` reads its command from one string.
_RUNS_NOTHING = {"command": frozenset(("-v", "-V")), "env": frozenset(("-S", "--split-string")),
                 "sudo": frozenset(("-l", "--list", "-v", "--validate", "-K", "--remove-timestamp",
                                    "-e", "--edit", "-V", "--version", "--help"))}
_ASSIGNS = frozenset(("env", "sudo"))  # VAR=… after their options is theirs, not a program
_DURATION = r"\d+(?:\.\d+)?[smhd]?$"  # timeout's first argument: 60, 2.5s, 1h (compiled when used)
SHELLS = frozenset(("bash", "sh", "zsh", "dash", "ksh"))
_SHELL_VALUE_OPTIONS = frozenset(("-o", "+o", "-O", "+O", "--rcfile", "--init-file"))
# A program's options before its subcommand, those that take a value: `git -C app push`.
GLOBAL_OPTIONS = {"git": frozenset(("-C", "-c", "--git-dir", "--work-tree", "--namespace",
                                    "--super-prefix", "--config-env"))}
# A shell word, its quotes kept, after the blanks before it.
_WORD = re.compile(r"""\s*((?:[^\s'"\\]+|\\.|'[^']*'?|"(?:[^"\\]|\\.)*"?)*)""", re.DOTALL)
# The parts of a quoted word, and a double quote's escapes: patterns compiled when first used
# (most commands quote no program).
_QUOTED_PART = r"""'([^']*)'?|"((?:[^"\\]|\\.)*)"?|\\(.)|([^'"\\]+)"""
_DOUBLE_QUOTED_ESCAPE = r'\\([\\"$`])'
UNWRAP_DEPTH = 4  # wrappers read around one command at most ("sudo timeout 60 nice make")


def _word_at(text: str, pos: int) -> tuple[str, int]:
    """The shell word at or after pos (its quotes kept) and where it ends; ('', end) at the end."""
    word = _WORD.match(text, pos)
    return word.group(1), word.end()


def unquoted(word: str) -> str:
    """A shell word as the program gets it: its quotes taken off, `\\"` inside double quotes
    read as `"`."""
    if "'" not in word and '"' not in word and "\\" not in word:
        return word
    out = []
    for part in re.finditer(_QUOTED_PART, word, re.DOTALL):
        single, double, escaped, plain = part.groups()
        out.append(single if single is not None else
                   re.sub(_DOUBLE_QUOTED_ESCAPE, r"\1", double) if double is not None else
                   escaped if escaped is not None else plain)
    return "".join(out)


def unwrap(command: str) -> tuple[tuple[str, ...], str, str | None]:
    """What one simple command runs past the shell's keywords and the programs that run another
    (`WRAPPERS`, a shell's `-c`): the wrappers' names, the command they run (from its program,
    a program's global options left out: `git -C app push` is "git push"), and the string a
    shell runs with -c (None when none): "timeout 60 git push -f" -> (("timeout",),
    "git push -f", None); "sudo bash -lc 'cd app && make'" -> (("sudo", "bash"), "",
    "cd app && make"); "{ git push; }" piece "{ git push" -> ((), "git push", None). A
    wrapper that runs nothing (`env` alone, `command -v pip`, a `timeout` without a duration)
    is the command itself; a loop's header runs nothing: ((), "", None)."""
    wrappers: list[str] = []
    pos = 0
    while True:
        word, end = _word_at(command, pos)
        if not word:
            return tuple(wrappers), "", None
        if word in SHELL_KEYWORDS or ENV_ASSIGN.match(word):
            pos = end
            continue
        if word in _HEADERS:
            return tuple(wrappers), "", None
        if word == "function":  # "function deploy { git push -f": its body's command
            pos = _word_at(command, end)[1]
            continue
        name = unquoted(word).rsplit("/", 1)[-1]
        if name in SHELLS:
            string = _shell_string(command, end)
            if string is not None:
                return (*wrappers, name), "", string
        elif name in GLOBAL_OPTIONS:
            rest = command[_past_options(command, end, GLOBAL_OPTIONS[name]) or end:].lstrip()
            return tuple(wrappers), f"{name} {rest}", None
        elif name in WRAPPERS and len(wrappers) < UNWRAP_DEPTH:
            after = _wrapped_command(name, command, end)
            if after is not None:
                wrappers.append(name)
                pos = after
                continue
        return tuple(wrappers), command[pos:].strip(), None


def _past_options(command: str, pos: int, takes_value: frozenset[str],
                  stops: frozenset[str] | tuple[()] = ()) -> int | None:
    """Where the words after pos that are options end (with the values of those in
    takes_value, given apart or bundled: "-C app", "-iu postgres", "-sKILL"); None at an option
    in `stops`, after which the program runs no command."""
    while True:
        word, end = _word_at(command, pos)
        if not word.startswith("-") or word == "-":
            return pos
        if word in stops or word.split("=", 1)[0] in stops:
            return None
        if word == "--":
            return end
        pos = end
        if word in takes_value:
            pos = _word_at(command, pos)[1]
        elif not word.startswith("--"):
            taken = _bundled_value(word, takes_value, stops)
            if taken is None:
                return None
            if taken:
                pos = _word_at(command, pos)[1]


def _wrapped_command(name: str, command: str, pos: int) -> int | None:
    """Where the command a wrapper runs starts, after the wrapper's options (and, for env and
    sudo, assignments; for timeout, its duration); None when it runs none."""
    while True:
        after = _past_options(command, pos, WRAPPERS[name], _RUNS_NOTHING.get(name, ()))
        if after is None:
            return None
        word, end = _word_at(command, after)
        if not (word == "-" and name == "env"):  # `env -` is `env -i`
            pos = after
            break
        pos = end
    word, end = _word_at(command, pos)
    while name in _ASSIGNS and ENV_ASSIGN.match(word):
        pos = end
        word, end = _word_at(command, pos)
    if name == "timeout":
        if not re.match(_DURATION, word):
            return None
        pos = end
        word, end = _word_at(command, pos)
    return pos if word else None


def _bundled_value(word: str, takes_value: frozenset[str], stops: frozenset[str] | tuple[()]) -> bool | None:
    """For a group of short options ("-iu", "-Eu", "-sKILL", "-n5"), whether it takes the next
    word as a value: its first option that takes one is given the rest of the group ("-sKILL"),
    or, ending it, the next word ("-iu postgres": postgres is sudo's user, not the program).
    None when an option before that one runs nothing ("-lu deploy": sudo lists)."""
    for at, letter in enumerate(word[1:], 1):
        if f"-{letter}" in stops:
            return None
        if f"-{letter}" in takes_value:
            return at == len(word) - 1
    return False


def _shell_string(command: str, pos: int) -> str | None:
    """The command string a shell is given with -c (`bash -lc "…"`, `sh -ec '…'`), unquoted;
    None when it runs a script or reads its commands from elsewhere."""
    given = False
    while True:
        word, end = _word_at(command, pos)
        if word == "--":
            word, end = _word_at(command, end)
        elif word[:1] in ("-", "+") and len(word) > 1:
            given = given or (not word.startswith("--") and "c" in word[1:])
            takes_value = word in _SHELL_VALUE_OPTIONS or (word[1] != "-" and word[-1] in "oO")  # -euo pipefail
            pos = _word_at(command, end)[1] if takes_value else end
            continue
        return unquoted(word) if given and word else None


def runs_command(call: tuple[str, ...], lesson: tuple[str, ...]) -> bool:
    """Whether a call runs the command a lesson is about: the lesson's words start the call's
    (`pytest -q` for "`pytest` failed"; `npm install lodash` for "`npm install` fails"; not
    `git add` for "`git push` …", nor a bare `git` for it)."""
    return bool(lesson) and call[: len(lesson)] == lesson


def shell_command(tool: object, tool_input: object) -> str | None:
    """The command a shell tool call runs (Claude Code's `Bash` and Codex's `shell_command`
    {"command": "…"}, Codex's `shell` {"command": ["bash", "-lc", "…"]}, its `exec_command`
    {"cmd": "…"}), never its description; None for other tools."""
    if not isinstance(tool, str) or tool.lower() not in SHELL_TOOLS:
        return None
    if isinstance(tool_input, str):
        return tool_input.strip() or None
    command = tool_input.get("command") or tool_input.get("cmd") if isinstance(tool_input, dict) else None
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        if len(command) >= 3 and command[1] in ("-c", "-lc"):  # ["bash", "-lc", "npm test"]
            command = command[2]
        else:
            command = " ".join(command)
    return command.strip() or None if isinstance(command, str) else None
