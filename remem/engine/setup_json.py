"""The JSON config files `remem setup` edits: reading and writing them as their owner left
them (BOM, indent, line ends), and the entries remem puts in and takes out: its MCP server,
its hooks in each agent's layout (Claude Code, Codex and Gemini group them; Cursor lists them,
and only an earlier release's entry is ever there, to take out).
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from pathlib import Path
from typing import Any, Callable

from remem import paths
from remem.engine.setup_edit import (
    SERVER_NAME, Edit, command, hook_here, hook_home, is_ours, read_config, server_here, server_home,
    unreadable,
)

# How long the agents let a hook run: one pair of numbers, which the hooks' budget is cut to
# fit (config.hook_budget_cap_ms). Codex cuts SessionEnd hooks off at 3 s and warns on every
# run when one asks for longer; the hook only starts a detached ingest, which it outlives.
from remem.config import CODEX_SESSION_END_TIMEOUT_S, HOOK_TIMEOUT_S  # noqa: E402  (re-exported)


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


# --------------------------------------------------------------------------- edits as text (JSONC too)

# One token at a time from the start, so `//` inside a string stays in its string: whitespace and
# comments, then (group 1) a significant token, or nothing at the end of the text.
_TOKEN = re.compile(r'(?:[ \t\r\n\ufeff]+|//[^\n]*|/\*.*?\*/)*'
                    r'("(?:[^"\\\n]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"/]+|$)', re.DOTALL)


def _tokens(text: str) -> list[tuple[int, int, str]]:
    """The significant tokens (no whitespace, no comments) with their spans."""
    out, pos, end = [], 0, len(text)
    for m in _TOKEN.finditer(text):  # each match where the last ended, else a character no token takes
        if m.start() != pos:
            break
        pos = m.end()
        if m.start(1) == end:
            return out
        out.append((m.start(1), pos, m.group(1)))
    pos += len(text[pos:]) - len(text[pos:].lstrip(" \t\r\n\ufeff"))
    raise ValueError(f"unexpected {text[pos]!r} at character {pos}")


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


def _items(toks: list[tuple[int, int, str]], i: int) -> list[tuple[Any, int, int, int]]:
    """A container's items (toks[i] is its `{` or `[`): key (an object's member) or index (an
    array's element), index of the item's first token, of its value, and just past the value."""
    out, j = [], i + 1
    is_object = toks[i][2] == "{"
    close = "}" if is_object else "]"
    while toks[j][2] != close:
        if is_object:
            if toks[j + 1][2] != ":":
                raise ValueError(f"no colon after {toks[j][2]}")
            key, value = json.loads(toks[j][2]), j + 2
        else:
            key, value = len(out), j
        end = _past(toks, value)
        out.append((key, j, value, end))
        j = end + 1 if toks[end][2] == "," else end
    return out


def _locate(toks: list[tuple[int, int, str]], path: tuple[Any, ...]) -> int:
    """The index of the first token of the value at path (object keys and array indexes)."""
    i = 0
    for key in path:
        i = next(item[2] for item in _items(toks, i) if item[0] == key)
    return i


def _line_indent(text: str, pos: int) -> str:
    line = text[text.rfind("\n", 0, pos) + 1:pos]
    return line[:len(line) - len(line.lstrip())]


def _unit(text: str) -> str:
    unit = _indent(text)
    return unit if isinstance(unit, str) else " " * unit


def _nl(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _write_value(value: Any, text: str, indent: str | None) -> str:
    """A value as the file would hold it: on one line (indent None), or laid out with the file's
    indent unit, its lines after the first starting at `indent`."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=_unit(text), ensure_ascii=False).replace("\n", _nl(text) + indent)


def _replace(text: str, path: tuple[Any, ...], value: Any) -> str:
    """A new value in the old one's place, laid out on lines only where the old one was."""
    toks = _tokens(text)
    i = _locate(toks, path)
    start, stop = toks[i][0], toks[_past(toks, i) - 1][1]
    indent = _line_indent(text, start) if "\n" in text[start:stop] else None
    return text[:start] + _write_value(value, text, indent) + text[stop:]


def _remove(text: str, path: tuple[Any, ...]) -> str:
    """Take one item out: it and one comma go; so does its line when nothing else is on it."""
    toks = _tokens(text)
    items = _items(toks, _locate(toks, path[:-1]))
    k = next(n for n, item in enumerate(items) if item[0] == path[-1])
    _, first, _, end = items[k]
    start, stop = toks[first][0], toks[end - 1][1]
    comma: tuple[int, int] | None = None  # the last item's comma is the one before it
    if toks[end][2] == ",":
        stop = toks[end][1]
    elif k > 0:
        before = toks[items[k - 1][3]]
        comma = (before[0], before[1])
    line = text.rfind("\n", 0, start) + 1
    eol = text.find("\n", stop)
    if not text[line:start].strip() and eol >= 0 and not text[stop:eol].strip():
        start, stop = line, eol + 1
    elif comma is None:  # `X, item, Y` loses `item, `; `X, item,}` loses ` item,`
        after = len(text[stop:]) - len(text[stop:].lstrip(" \t"))
        if text[stop + after:stop + after + 1] in ("}", "]"):
            start -= len(text[:start]) - len(text[:start].rstrip(" \t"))
        else:
            stop += after
    elif not text[comma[1]:start].strip(" \t"):  # `X, item` loses `, item`
        start, comma = comma[0], None
    text = text[:start] + text[stop:]
    # Only the comma token itself: a comment between it and the item stays.
    if comma:
        text = text[:comma[0]] + text[comma[1]:]
    if len(items) == 1:  # the container emptied: `{}` or `[]` again, unless a comment is left in it
        toks = _tokens(text)
        i = _locate(toks, path[:-1])
        if not text[toks[i][1]:toks[i + 1][0]].strip():
            text = text[:toks[i][1]] + text[toks[i + 1][0]:]
    return text


def _insert(text: str, path: tuple[Any, ...], value: Any) -> str:
    """Add an item last in the container at path[:-1] (a member named path[-1], or an element
    of an array), laid out as the items beside it are; a trailing comma style is kept."""
    toks = _tokens(text)
    o = _locate(toks, path[:-1])
    is_object = toks[o][2] == "{"
    items = _items(toks, o)
    close = _past(toks, o) - 1
    nl = _nl(text)

    def entry(indent: str | None) -> str:
        body = _write_value(value, text, indent)
        return f"{json.dumps(path[-1], ensure_ascii=False)}: {body}" if is_object else body

    brace = toks[o][1]
    if not items:
        if "\n" not in text.strip():  # a file on one line stays on one line
            return text[:brace] + entry(None) + text[brace:]
        outer = _line_indent(text, toks[o][0])
        inner = outer + _unit(text)
        inside = text[brace:toks[close][0]]
        return text[:brace] + nl + inner + entry(inner) + (inside if inside.strip() else nl + outer) + text[toks[close][0]:]
    last = items[-1]
    value_end = toks[last[3] - 1][1]
    trailing = toks[last[3]][2] == ","
    after_last = toks[last[3]][1] if trailing else value_end
    if "\n" not in text[brace:toks[items[0][1]][0]]:  # items on the container's own line
        insert_at = after_last
        piece = " " + entry(None) + ("," if trailing else "")
    else:
        first = toks[last[1]][0]
        indent = _line_indent(text, first if not text[text.rfind("\n", 0, first) + 1:first].strip()
                              else toks[items[0][1]][0])
        # A container whose items are written each on one line ({"url": "…"}) gets one more
        # such line; otherwise the new value is laid out as a pretty-printed file has it.
        spans = [text[toks[it[2]][0]:toks[it[3] - 1][1]] for it in items]
        one_line = (any(s.startswith(("{", "[")) for s in spans) and not any("\n" in s for s in spans))
        piece = nl + indent + entry(None if one_line else indent) + ("," if trailing else "")
        eol = text.find("\n", after_last)
        if eol > 0 and text[eol - 1] == "\r":
            eol -= 1
        rest = text[after_last:eol].strip() if eol >= 0 else None
        # After the last item's line (and a // comment ending it), unless the container closes on it.
        insert_at = eol if (rest is not None and toks[close][0] > eol
                            and (not rest or rest.startswith("//"))) else after_last
    if trailing:
        return text[:insert_at] + piece + text[insert_at:]
    return text[:value_end] + "," + text[value_end:insert_at] + piece + text[insert_at:]


def _edit_value(text: str, path: tuple[Any, ...], old: Any, new: Any) -> str:
    """Change the value at path from old to new as text: objects member by member, arrays
    element by element, so every byte of what did not change stays."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                text = _remove(text, (*path, key))
        for key, want in new.items():
            if key not in old:
                text = _insert(text, (*path, key), want)
            elif old[key] != want:
                text = _edit_value(text, (*path, key), old[key], want)
        return text
    if isinstance(old, list) and isinstance(new, list):
        ops = difflib.SequenceMatcher(None, [json.dumps(v, sort_keys=True) for v in old],
                                      [json.dumps(v, sort_keys=True) for v in new], autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in reversed(ops):  # from the end: an edit never moves what is left to do
            if tag == "replace" and i2 - i1 == j2 - j1:
                for k in reversed(range(i2 - i1)):
                    text = _edit_value(text, (*path, i1 + k), old[i1 + k], new[j1 + k])
                continue
            if tag in ("delete", "replace"):
                for k in reversed(range(i1, i2)):
                    text = _remove(text, (*path, k))
            if tag in ("insert", "replace"):
                if i2 != len(old):  # new elements between old ones: the array is written anew
                    return _replace(text, path, new)
                for value in new[j1:j2]:
                    text = _insert(text, (*path, None), value)
        return text
    return _replace(text, path, new)


def _jsonc_edit(before: str, data: dict[str, Any], new: dict[str, Any], *, strict: bool = False) -> str | None:
    """`before` changed from data to new as text, every byte of what did not change kept (its
    comments, layout and key order); None when that cannot be done: the result must read back
    as exactly `new` (as strict JSON too, for a file that was strict JSON)."""
    try:
        after = _edit_value(before, (), data, new)
        return after if (parse_json(after) if strict else parse_jsonc(after)) == new else None
    except (ValueError, StopIteration, IndexError):
        return None


def _holds_comment(text: str, toks: list[tuple[int, int, str]], path: tuple[Any, ...]) -> bool:
    """Whether the value at path has a comment inside: what lies between its tokens is
    whitespace or a comment."""
    i = _locate(toks, path)
    end = _past(toks, i)
    return any(text[toks[k][1]:toks[k + 1][0]].strip(" \t\r\n\ufeff") for k in range(i, end - 1))


def _keep_commented(text: str, toks: list[tuple[int, int, str]], path: tuple[Any, ...],
                    old: Any, new: Any) -> None:
    """An object or list the change takes out (emptied of remem's entries) stays, empty, when a
    comment is inside it (`"mcpServers": { // "old": {…} }`): every comment stays."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return
    for key, value in old.items():
        if key in new:
            _keep_commented(text, toks, (*path, key), value, new[key])
        elif isinstance(value, (dict, list)) and _holds_comment(text, toks, (*path, key)):
            new[key] = type(value)()
            _keep_commented(text, toks, (*path, key), value, new[key])


def _lenient(text: str) -> Any:
    try:
        return parse_jsonc(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------- edits

def json_edit(target: str, path: Path, change: Callable[[dict[str, Any]], list[str]],
              *, jsonc: bool = False) -> Edit:
    """Apply change(data) -> summary to a JSON file; unchanged data keeps the text as it is.

    The file is edited as text, item by item (setup_json._jsonc_edit), so every line remem's
    entries do not touch stays byte for byte: the diff and a dotfiles repository show only
    them. Written whole (json.dumps, in the file's indent) only where that cannot be done.
    jsonc: the file may hold comments and trailing commas (VS Code's mcp.json, Gemini CLI's
    settings.json); such a file is never written whole, as that would lose its comments."""
    edit = _json_edit(target, path, change, jsonc)
    edit.again = lambda: json_edit(target, path, change, jsonc=jsonc)
    return edit


def _json_edit(target: str, path: Path, change: Callable[[dict[str, Any]], list[str]], jsonc: bool) -> Edit:
    try:
        before = read_config(path)
    except (OSError, UnicodeDecodeError) as exc:
        return Edit(target, str(path), None, None, error=unreadable(path, exc))
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
    try:
        what = change(new)
    except Misshapen as exc:  # the person's entries where remem's go: never replaced
        return Edit(target, str(path), before, before, error=f"{path}: {exc}")
    if commented:
        _keep_commented(before, _tokens(before), (), data, new)
    had_ours = bool(before) and _holds_ours(data)
    if new == data:
        return Edit(target, str(path), before, before, what=[], had_ours=had_ours)
    if not new and before is None:
        return Edit(target, str(path), None, None)
    if before is None or not before.lstrip("\ufeff").strip():
        return Edit(target, str(path), before, _dump(new, before), what=what)
    after = _jsonc_edit(before, data, new, strict=not commented)
    if after is None:
        if commented:
            return Edit(target, str(path), before, before,
                        error=f"{path} has comments remem cannot keep while editing it; add {', '.join(what)} "
                              "by hand, or take the comments out and run `remem setup` again")
        after = _dump(new, before)
    return Edit(target, str(path), before, after, what=what, had_ours=had_ours)


def _holds_ours(data: dict[str, Any]) -> bool:
    """Whether a config already holds remem's entries: its MCP server, or a hook running `remem hook`."""
    for key in ("mcpServers", "servers"):
        if isinstance(data.get(key), dict) and SERVER_NAME in data[key]:
            return True
    return bool(our_hook_commands(data))


def our_hook_commands(data: dict[str, Any]) -> list[dict[str, str]]:
    """remem's hook commands in a config, each with its event: grouped (Claude Code, Codex,
    Gemini CLI) or listed (Cursor)."""
    found = []
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            for g in groups if isinstance(groups, list) else []:
                inner = g.get("hooks") if isinstance(g, dict) and "hooks" in g else [g]
                for h in inner if isinstance(inner, list) else []:
                    if isinstance(h, dict) and is_ours(h.get("command")):
                        found.append({"event": event, "command": h["command"]})
    return found


class Misshapen(ValueError):
    """A key remem writes into holds a value of another shape than the agent reads there (an
    object where a list goes, a list or null where an object goes): what it holds may be the
    person's own, so the file is left as it is, and the message names the key and the fix."""


_SHAPES = {dict: "an object", list: "a list", str: "a string", bool: "true or false",
           int: "a number", float: "a number", type(None): "null"}


def _member(parent: dict[str, Any], key: str, shape: type, where: str) -> Any:
    """parent[key], made empty when missing; Misshapen when it holds another shape."""
    if key not in parent:
        parent[key] = shape()
    value = parent[key]
    if not isinstance(value, shape):
        fix = "wrap it in [ ]" if shape is list else 'make it an object ({"NAME": {…}}), or take it out'
        raise Misshapen(f'"{where}" is {_SHAPES.get(type(value), "another value")}, where {_SHAPES[shape]} '
                        f"belongs; {fix}, then run `remem setup` again")
    return value


_MISSHAPEN = re.compile(r'"(?P<where>[^"]+)" is [^;"]+, where (?P<shape>an object|a list) belongs; ')


def mend(error: str) -> str | None:
    """What to change in a file, naming the key, when an edit's error is a Misshapen one (as
    `_member` words it): 'make "hooks" an object …', or 'wrap the value of "hooks.Stop" in
    [ ]'; None for any other error. For `remem doctor`, whose fix must be one that works."""
    found = _MISSHAPEN.search(error or "")
    if found is None:
        return None
    where = found.group("where")
    if found.group("shape") == "a list":
        return f'wrap the value of "{where}" in [ ]'
    return f'make "{where}" an object ({{"NAME": {{…}}}}), or take it out'


# What remem owns in its MCP server entry: how the agent starts it. The rest (an "env" with
# HF_HOME, Gemini CLI's "trust" and "timeout", "disabled", "alwaysAllow") is the person's.
_SERVER_OWNS = ("type", "command", "args")
# Another transport than the one remem writes, left in the entry: the agent would take it.
_OTHER_TRANSPORT = ("url", "httpUrl", "serverUrl")


def set_server(data: dict[str, Any], key: str, entry: dict[str, Any]) -> list[str]:
    """remem's MCP server entry under data[key]: a new one as remem writes it; one already
    there gets remem's command, args and type, and keeps every other key the person set."""
    servers = _member(data, key, dict, key)
    current = servers.get(SERVER_NAME)
    wanted = entry
    if isinstance(current, dict):
        kept = {k: v for k, v in current.items()
                if k not in _OTHER_TRANSPORT and not (k == "type" and v != "stdio")}
        wanted = {**kept, **{k: v for k, v in entry.items() if k in _SERVER_OWNS or k not in kept}}
    if current != wanted:
        servers[SERVER_NAME] = wanted
        return [f"MCP server {SERVER_NAME!r} in {key}"]
    return []


def unset_server(data: dict[str, Any], key: str) -> list[str]:
    """Take out remem's MCP server entry when it serves this memory (server_here); one that
    runs another memory's `--home` stays."""
    servers = data.get(key)
    if isinstance(servers, dict) and SERVER_NAME in servers and server_here(servers[SERVER_NAME]):
        del servers[SERVER_NAME]
        if not servers:
            del data[key]
        return [f"MCP server {SERVER_NAME!r} from {key}"]
    return []


def other_memories(data: dict[str, Any]) -> list[str]:
    """The `--home` of each of remem's entries in a config that serves another memory than this
    one (`~/.remem` for an entry naming none): what --remove leaves in place."""
    homes = []
    for key in ("mcpServers", "servers"):
        servers = data.get(key)
        if isinstance(servers, dict) and SERVER_NAME in servers and not server_here(servers[SERVER_NAME]):
            homes.append(server_home(servers[SERVER_NAME]))
    homes += [hook_home(h["command"]) for h in our_hook_commands(data) if not hook_here(h["command"])]
    return list(dict.fromkeys(home or str(paths.user_home() / ".remem") for home in homes))


def set_grouped_hooks(data: dict[str, Any], wanted: dict[str, dict[str, Any]]) -> list[str]:
    """Claude Code / Codex / Gemini layout: hooks.{Event}: [{matcher?, hooks: [{type, command}]}].

    remem's hook is updated where it already is (so a second run changes nothing even when
    the person added hooks after it), else appended as its own group; what the person set in
    it stays (_hook_entry). A group's matcher is changed only when remem's hook is alone in
    it: the person's hooks beside it keep the matcher they chose, and remem's hook moves out
    to a group of its own.
    """
    hooks = _member(data, "hooks", dict, "hooks")
    done = []
    for event, group in wanted.items():
        groups = _member(hooks, event, list, f"hooks.{event}")
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
                    g["hooks"][i] = _hook_entry(h, group["hooks"][0])
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


def _hook_entry(current: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """remem's hook in place of the one there: remem's command and type, the keys the person
    added kept, and their timeout too when it is no shorter than remem's (a shorter one would
    have the agent kill the hook before its budget, config.hook_budget_cap_ms, runs out)."""
    merged = {**current, **{k: v for k, v in wanted.items() if k in ("type", "command") or k not in current}}
    timeout = current.get("timeout")
    if not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout >= wanted["timeout"]):
        merged["timeout"] = wanted["timeout"]
    return merged


def unset_grouped_hooks(data: dict[str, Any]) -> list[str]:
    """Take out remem's hooks for this memory (hook_here); another memory's stay."""
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
                mine = [h for h in g["hooks"] if isinstance(h, dict) and hook_here(h.get("command"))]
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


def unset_cursor_hooks(data: dict[str, Any], ours: Callable[[Any], bool] = hook_here) -> list[str]:
    """Take remem's hooks out of Cursor's hooks.json (its layout lists them: hooks.{event}:
    [{command}]). Setup no longer wires any there (beforeSubmitPrompt, all Cursor offers before
    a prompt, can only let it through or stop it), so both setup and --remove take out an
    earlier release's entry; the person's own hooks stay. `ours` picks remem's entries: by
    default this memory's (--remove), is_ours for any memory's (setup: none of them helps)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for event in list(hooks):
        entries = hooks[event]
        if isinstance(entries, list):
            keep = [e for e in entries if not (isinstance(e, dict) and ours(e.get("command")))]
            if len(keep) != len(entries):
                removed.append(event)
                if keep:
                    hooks[event] = keep
                else:
                    del hooks[event]
    if removed and not hooks:
        del data["hooks"]
        if data.get("version") == 1 and len(data) == 1:
            del data["version"]
    return [f"hooks {', '.join(removed)}"] if removed else []


