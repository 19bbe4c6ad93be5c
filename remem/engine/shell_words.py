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
    assignment ("uv run pytest -q tests/" -> ("uv", "run", "pytest"); "mix phx.server" ->
    ("mix", "phx.server")); () when there are none."""
    out: list[str] = []
    for word in command_words(command, limit=most).lower().split():
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
    """The command a shell tool call runs (Claude Code's `Bash` {"command": "…"}, Codex's
    `shell` {"command": ["bash", "-lc", "…"]}), never its description; None for other tools."""
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
