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


# Between the characters split_commands looks at: read in one step, so a long command costs
# little on the hook path.
_PLAIN_RUN = re.compile(r"[^\"'`\\();|&\n<]+")
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
