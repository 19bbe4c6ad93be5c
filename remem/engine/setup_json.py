"""The JSON config files `remem setup` edits: reading and writing them as their owner left
them (BOM, indent, line ends), and the entries remem puts in and takes out: its MCP server,
its hooks in each agent's layout (Claude Code, Codex and Gemini group them; Cursor lists them).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable

from remem.engine.setup_edit import SERVER_NAME, Edit, command, is_ours, not_utf8, read_config

HOOK_TIMEOUT_S = 5
# Codex cuts SessionEnd hooks off at 3 s and warns on every run when one asks for longer; the
# hook only starts a detached ingest, which it outlives.
CODEX_SESSION_END_TIMEOUT_S = 3


def parse_json(text: str) -> Any:
    # A BOM is legal in a config file some editors write; json.loads refuses it.
    return json.loads(text[1:] if text.startswith("\ufeff") else text)


def _indent(text: str | None) -> int | str:
    if text:
        m = re.search(r"\n([ \t]+)\S", text)
        if m:
            ws = m.group(1)
            return "\t" if ws.startswith("\t") else len(ws)
    return 2


def _dump(data: Any, like: str | None) -> str:
    out = json.dumps(data, indent=_indent(like), ensure_ascii=False)
    if like and like.startswith("\ufeff"):
        out = "\ufeff" + out
    if like is None or like.endswith("\n"):
        out += "\n"
    if like and "\r\n" in like:
        out = out.replace("\n", "\r\n")
    return out


# --------------------------------------------------------------------------- JSONC (VS Code, Gemini CLI)

# One token at a time from the start, so `//` inside a string stays in its string.
_TOKEN = re.compile(r'[ \t\r\n\ufeff]+|//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"/]+', re.DOTALL)
_GONE = object()


def _tokens(text: str) -> list[tuple[int, int, str]]:
    """The significant tokens (no whitespace, no comments) with their spans."""
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"unexpected {text[pos]!r} at character {pos}")
        if not (m.group()[0] in " \t\r\n\ufeff" or m.group().startswith(("//", "/*"))):
            out.append((m.start(), m.end(), m.group()))
        pos = m.end()
    return out


def parse_jsonc(text: str) -> Any:
    """JSON with // and /* */ comments and trailing commas, as VS Code reads its mcp.json (and
    Gemini CLI its settings.json, comments stripped)."""
    toks = [t[2] for t in _tokens(text)]
    return json.loads(" ".join(t for i, t in enumerate(toks)
                               if not (t == "," and i + 1 < len(toks) and toks[i + 1] in ("}", "]"))))


def _past(toks: list[tuple[int, int, str]], i: int) -> int:
    """The index just past the value that starts at toks[i]."""
    depth = 0
    while True:
        depth += {"{": 1, "[": 1, "}": -1, "]": -1}.get(toks[i][2], 0)
        i += 1
        if depth == 0:
            return i


def _members(toks: list[tuple[int, int, str]], i: int) -> list[tuple[str, int, int, int]]:
    """An object's members (toks[i] is its `{`): key, key index, value index, index past the value."""
    out, i = [], i + 1
    while toks[i][2] != "}":
        end = _past(toks, i + 2)
        out.append((json.loads(toks[i][2]), i, i + 2, end))
        i = end + 1 if toks[end][2] == "," else end
    return out


def _line_indent(text: str, pos: int) -> str:
    line = text[text.rfind("\n", 0, pos) + 1:pos]
    return line[:len(line) - len(line.lstrip())]


def _jsonc_set(text: str, path: tuple[str, ...], value: Any) -> str:
    """Set (or, value _GONE, take out) one member as text; every comment elsewhere stays."""
    toks, obj = _tokens(text), 0
    for key in path[:-1]:
        obj = next(m[2] for m in _members(toks, obj) if m[0] == key)
    members = _members(toks, obj)
    found = [m for m in members if m[0] == path[-1]]
    if found and value is not _GONE:  # a new value in the old one's place
        return text[:toks[found[0][2]][0]] + json.dumps(value, ensure_ascii=False) + text[toks[found[0][3] - 1][1]:]
    if found:  # the member and one comma go; so does its line when nothing else is on it
        _, k, _, end = found[0]
        start, stop = toks[k][0], toks[end - 1][1]
        comma: tuple[int, int] | None = None  # the last member's comma is the one before it
        if toks[end][2] == ",":
            stop = toks[end][1]
        elif members.index(found[0]) > 0:
            before = toks[members[members.index(found[0]) - 1][3]]
            comma = (before[0], before[1])
        line = text.rfind("\n", 0, start) + 1
        eol = text.find("\n", stop)
        if not text[line:start].strip() and eol >= 0 and not text[stop:eol].strip():
            start, stop = line, eol + 1
        text = text[:start] + text[stop:]
        # Only the comma token itself: a comment between it and the member stays.
        return text[:comma[0]] + text[comma[1]:] if comma else text
    if value is _GONE:
        return text
    nl = "\r\n" if "\r\n" in text else "\n"
    brace = toks[obj][1]
    entry = f"{json.dumps(path[-1])}: {json.dumps(value, ensure_ascii=False)}"
    if members and "\n" not in text[brace:toks[members[0][1]][0]]:
        return text[:brace] + entry + ", " + text[brace:]
    if members:  # first in the object, on its own line, indented as the next member is
        indent = _line_indent(text, toks[members[0][1]][0])
        return text[:brace] + nl + indent + entry + "," + text[brace:]
    outer = _line_indent(text, toks[obj][0])
    unit = _indent(text)
    inner = outer + ("\t" if unit == "\t" else " " * int(unit))
    close = toks[_past(toks, obj) - 1][0]
    return (text[:brace] + nl + inner + entry
            + (text[brace:close] if text[brace:close].strip() else nl + outer) + text[close:])


def _jsonc_edit(before: str, data: dict[str, Any], new: dict[str, Any]) -> str | None:
    """`before` changed from data to new, two levels deep, as text; None when that cannot be done."""
    after = before
    try:
        for key in dict.fromkeys([*data, *new]):
            old, want = data.get(key, _GONE), new.get(key, _GONE)
            if isinstance(old, dict) and isinstance(want, dict):
                for sub in dict.fromkeys([*old, *want]):
                    if old.get(sub, _GONE) != want.get(sub, _GONE):
                        after = _jsonc_set(after, (key, sub), want.get(sub, _GONE))
            elif old != want:
                after = _jsonc_set(after, (key,), want)
        return after if parse_jsonc(after) == new else None
    except (ValueError, StopIteration, IndexError):
        return None


def _lenient(text: str) -> Any:
    try:
        return parse_jsonc(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------- edits

def json_edit(target: str, path: Path, change: Callable[[dict[str, Any]], list[str]],
              *, jsonc: bool = False) -> Edit:
    """Apply change(data) -> summary to a JSON file; unchanged data keeps the text as it is.

    jsonc: the file may hold comments and trailing commas (VS Code's mcp.json, Gemini CLI's
    settings.json); such a file is edited as text, member by member, so the comments stay."""
    try:
        before = read_config(path)
    except UnicodeDecodeError as exc:
        return Edit(target, str(path), None, None, error=not_utf8(path, exc))
    commented = False
    if before is not None and before.lstrip("\ufeff").strip():
        try:
            data = parse_json(before)
        except ValueError as exc:
            data, commented = _lenient(before) if jsonc else None, True
            if data is None:
                return Edit(target, str(path), before, before,
                            error=f"{path} is not valid JSON ({exc}); fix it by hand, then run `remem setup` again")
        if not isinstance(data, dict):
            return Edit(target, str(path), before, before,
                        error=f"{path} holds no JSON object; fix it by hand, then run `remem setup` again")
    else:
        data = {}
    new = copy.deepcopy(data)
    what = change(new)
    if new == data:
        return Edit(target, str(path), before, before, what=[])
    if not new and before is None:
        return Edit(target, str(path), None, None)
    if commented:
        after = _jsonc_edit(before, data, new)
        if after is None:
            return Edit(target, str(path), before, before,
                        error=f"{path} has comments remem cannot keep while editing it; add {', '.join(what)} "
                              "by hand, or take the comments out and run `remem setup` again")
        return Edit(target, str(path), before, after, what=what)
    return Edit(target, str(path), before, _dump(new, before), what=what)


def set_server(data: dict[str, Any], key: str, entry: dict[str, Any]) -> list[str]:
    servers = data.get(key)
    if not isinstance(servers, dict):
        servers = data[key] = {}
    if servers.get(SERVER_NAME) != entry:
        servers[SERVER_NAME] = entry
        return [f"MCP server {SERVER_NAME!r} in {key}"]
    return []


def unset_server(data: dict[str, Any], key: str) -> list[str]:
    servers = data.get(key)
    if isinstance(servers, dict) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del data[key]
        return [f"MCP server {SERVER_NAME!r} from {key}"]
    return []


def set_grouped_hooks(data: dict[str, Any], wanted: dict[str, dict[str, Any]]) -> list[str]:
    """Claude Code / Codex / Gemini layout: hooks.{Event}: [{matcher?, hooks: [{type, command}]}].

    remem's hook is updated where it already is (so a second run changes nothing even when
    the person added hooks after it), else appended as its own group. A group's matcher is
    changed only when remem's hook is alone in it: the person's hooks beside it keep the
    matcher they chose, and remem's hook moves out to a group of its own.
    """
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        hooks = data["hooks"] = {}
    done = []
    for event, group in wanted.items():
        groups = hooks.get(event)
        if not isinstance(groups, list):
            groups = hooks[event] = []
        placed = False
        for g in list(groups):
            if not isinstance(g, dict) or not isinstance(g.get("hooks"), list):
                continue
            ours = [h for h in g["hooks"] if isinstance(h, dict) and is_ours(h.get("command"))]
            if not ours:
                continue
            alone = len(ours) == len(g["hooks"])
            fits = alone or g.get("matcher") == group.get("matcher")
            for h in ours:
                i = g["hooks"].index(h)
                if not placed and fits:
                    g["hooks"][i] = copy.deepcopy(group["hooks"][0])
                    if alone and "matcher" in group:
                        g["matcher"] = group["matcher"]
                    placed = True
                else:
                    del g["hooks"][i]
            if not g["hooks"]:
                groups.remove(g)
        if not placed:
            groups.append(copy.deepcopy(group))
        done.append(event)
    return [f"hooks {', '.join(done)}"]


def unset_grouped_hooks(data: dict[str, Any]) -> list[str]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        keep = []
        for g in groups:
            if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                mine = [h for h in g["hooks"] if isinstance(h, dict) and is_ours(h.get("command"))]
                if mine:
                    g["hooks"] = [h for h in g["hooks"] if h not in mine]
                    removed.append(event)
                    if not g["hooks"]:
                        continue
            keep.append(g)
        # Only what taking our hook out left empty goes: an empty list or `"hooks": {}` the
        # person wrote is theirs.
        if keep or event not in removed:
            hooks[event] = keep
        else:
            del hooks[event]
    if removed and not hooks:
        del data["hooks"]
    return [f"hooks {', '.join(dict.fromkeys(removed))}"] if removed else []


def _group(command_text: str, matcher: str | None = None, *, gemini: bool = False,
           timeout_s: int = HOOK_TIMEOUT_S) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command_text}
    if gemini:
        hook.update({"name": "remem", "timeout": timeout_s * 1000})
    else:
        hook["timeout"] = timeout_s
    group: dict[str, Any] = {}
    if matcher is not None:
        group["matcher"] = matcher
    group["hooks"] = [hook]
    return group


def claude_hooks() -> dict[str, dict[str, Any]]:
    """The hooks remem puts in Claude Code's settings.json (its documented schema)."""
    return {
        "UserPromptSubmit": _group(command("hook", "prompt")),
        "PreToolUse": _group(command("hook", "pre-tool"), "*"),
        "Stop": _group(command("hook", "stop")),
        "SessionEnd": _group(command("hook", "session-end")),
    }


def codex_hooks() -> dict[str, dict[str, Any]]:
    return {
        "UserPromptSubmit": _group(command("hook", "prompt", "--agent", "codex")),
        "PreToolUse": _group(command("hook", "pre-tool", "--agent", "codex"), "Bash"),
        "Stop": _group(command("hook", "stop", "--agent", "codex")),
        "SessionEnd": _group(command("hook", "session-end", "--agent", "codex"),
                             timeout_s=CODEX_SESSION_END_TIMEOUT_S),
    }


def gemini_hooks() -> dict[str, dict[str, Any]]:
    # BeforeTool is left out: Gemini CLI gives it no context channel, only deny.
    return {
        "BeforeAgent": _group(command("hook", "prompt", "--agent", "gemini"), gemini=True),
        "AfterAgent": _group(command("hook", "stop", "--agent", "gemini"), gemini=True),
        "SessionEnd": _group(command("hook", "session-end", "--agent", "gemini"), gemini=True),
    }


def set_cursor_hooks(data: dict[str, Any]) -> list[str]:
    data.setdefault("version", 1)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        hooks = data["hooks"] = {}
    entries = hooks.get("beforeSubmitPrompt")
    if not isinstance(entries, list):
        entries = hooks["beforeSubmitPrompt"] = []
    wanted = {"command": command("hook", "prompt", "--agent", "cursor")}
    for i, e in enumerate(entries):
        if isinstance(e, dict) and is_ours(e.get("command")):
            entries[i] = wanted
            break
    else:
        entries.append(wanted)
    return ["hooks beforeSubmitPrompt"]


def unset_cursor_hooks(data: dict[str, Any]) -> list[str]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = False
    for event in list(hooks):
        entries = hooks[event]
        if isinstance(entries, list):
            keep = [e for e in entries if not (isinstance(e, dict) and is_ours(e.get("command")))]
            if len(keep) != len(entries):
                removed = True
                if keep:
                    hooks[event] = keep
                else:
                    del hooks[event]
    if removed and not hooks:
        del data["hooks"]
        if data.get("version") == 1 and len(data) == 1:
            del data["version"]
    return ["hooks beforeSubmitPrompt"] if removed else []


