"""The words of a shell command that name what was run: the program and its subcommand.

Used to word a lesson ("Ask before running `mix phx.server`") and, on the hook path, to tell
whether a tool call runs the command an error lesson is about; so only `re` is imported here.
"""

from __future__ import annotations

import re

# Tools that run a shell command (Claude Code, Codex, Gemini CLI, Cursor, Cline …).
SHELL_TOOLS = {"bash", "shell", "local_shell", "exec_command", "run_shell_command",
                "run_terminal_cmd", "execute_command"}
# Where one simple command ends: pipes, lists, a background "&" (not the one in "2>&1").
_COMMAND_END = re.compile(r"\|\|?|&&|;|\n|(?<![<>&])&(?![>&])")
_REDIRECT = re.compile(r"^(?:\d*[<>]|&>)")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_]\w*=")
_SPECIAL = re.compile(r"[<>|&;'\"`$()…]")  # what the shell reads specially (or a cut: "…")
COMMAND_WORDS = 4


def command_words(command: str, limit: int = COMMAND_WORDS) -> str:
    """A shell command's first words (program and subcommand): no pipes, redirections,
    quoted arguments or a leading `cd …` / `VAR=…`, so a lesson names what was run without
    carrying a pipeline. '' when nothing plain is left."""
    parts = [p.split() for p in _COMMAND_END.split(command)]
    parts = [p for p in parts if p]
    if len(parts) > 1 and parts[0][0] in ("cd", "pushd"):
        parts = parts[1:]  # "cd app && mix test": the command is the one after the cd
    words: list[str] = []
    for word in (parts[0] if parts else []):
        if not words and _ENV_ASSIGN.match(word):
            continue
        if _REDIRECT.match(word):
            break
        plain = _SPECIAL.split(word, 1)[0]  # "hi>out" is "hi", then the command's words end
        if plain:
            words.append(plain)
        if plain != word or len(words) == limit:
            break
    return " ".join(words)


def program_words(command: str, most: int = 3) -> tuple[str, ...]:
    """The leading plain words of a command, up to `most`, stopping at the first flag, path or
    value ("uv run pytest -q tests/" -> ("uv", "run", "pytest")); () when there are none."""
    out: list[str] = []
    for word in command_words(command, limit=most).lower().split():
        if word.startswith("-") or "/" in word or "=" in word or "." in word.strip("."):
            break
        out.append(word)
    return tuple(out)


def same_program(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two commands run the same thing: one's words start the other's
    (`pytest` and `pytest -q`; `npm install` and `npm install lodash`; not `git push`, `git add`)."""
    n = min(len(a), len(b))
    return n > 0 and a[:n] == b[:n]


def shell_command(tool_call_text: str) -> str | None:
    """The command of a tool call rendered as "<tool> <input …>" (the hooks' tool text), when
    the tool runs a shell; else None."""
    tool, _, rest = tool_call_text.strip().partition(" ")
    return rest if tool.lower() in SHELL_TOOLS and rest.strip() else None
