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


def json_edit(target: str, path: Path, change: Callable[[dict[str, Any]], list[str]]) -> Edit:
    """Apply change(data) -> summary to a JSON file; unchanged data keeps the text as it is."""
    try:
        before = read_config(path)
    except UnicodeDecodeError as exc:
        return Edit(target, str(path), None, None, error=not_utf8(path, exc))
    if before is not None and before.lstrip("\ufeff").strip():
        try:
            data = parse_json(before)
        except ValueError as exc:
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
        if keep:
            hooks[event] = keep
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    return [f"hooks {', '.join(dict.fromkeys(removed))}"] if removed else []


def _group(command_text: str, matcher: str | None = None, *, gemini: bool = False) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command_text}
    if gemini:
        hook.update({"name": "remem", "timeout": HOOK_TIMEOUT_S * 1000})
    else:
        hook["timeout"] = HOOK_TIMEOUT_S
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


