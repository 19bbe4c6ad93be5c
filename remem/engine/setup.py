"""`remem setup`: wire remem into every agent found, and take it out again exactly.

Plan first, then apply: `plan()` reads each config file and computes the text remem wants
there (nothing is written), `apply()` writes what changed, each file backed up first, and
records in $REMEM_HOME/setup.json what it wrote. `plan(remove=True)` restores a file byte for
byte from its backup when nothing else changed it since; otherwise it takes out only remem's
entries. A file that is not valid JSON is reported and left untouched. TOML (Codex's
config.toml) is edited through a callback the caller passes (`toml_editor`), so the engine
never imports tomlkit.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from remem import paths
from remem.engine import clock

AGENTS = ("claude-code", "codex", "gemini", "cursor", "windsurf", "claude-desktop", "vscode")
SCHEDULE = "schedule"
SERVER_NAME = "remem"
HOOK_TIMEOUT_S = 5
CRON_MARK = "# remem: nightly sleep"
CRON_TIME = "17 3 * * *"
SYSTEMD_UNITS = ("remem-sleep.service", "remem-sleep.timer")
_OURS = re.compile(r"(?:^|[\s/\\'\"])remem(?:\.exe)?['\"]?(?:\s+--home(?:=|\s+)\S+)?\s+hook\s+"
                   r"(?:prompt|pre-tool|stop|session-end)\b")


class TomlEditor(Protocol):
    def add_server(self, text: str, name: str, server: dict[str, Any]) -> str: ...
    def remove_server(self, text: str, name: str) -> str: ...
    def enable_hooks(self, text: str) -> str: ...
    def disable_hooks(self, text: str) -> str: ...
    def has_server(self, text: str, name: str) -> bool: ...


# What the person still has to do in an agent after its files are wired.
NEXT_STEPS = {
    "codex": ("Codex runs new or changed hooks only once you trust them: start `codex` and "
              "accept its \"Hooks need review\" prompt (or review them with /hooks); "
              "`codex exec` alone never asks, so until then remem's hooks do not run there."),
}


def next_steps(edits: list["Edit"], remove: bool = False) -> list[str]:
    """The steps left to the person for the agents these edits wired (none on --remove)."""
    if remove:
        return []
    wired = {e.target for e in edits if e.changed and not e.error}
    return [NEXT_STEPS[t] for t in sorted(wired) if t in NEXT_STEPS]


@dataclass
class Edit:
    """One file (or the crontab) as it is and as remem wants it."""

    target: str
    path: str
    before: str | None
    after: str | None
    what: list[str] = field(default_factory=list)
    error: str | None = None
    kind: str = "file"  # file | crontab
    restore: bool = False  # --remove put back the backup byte for byte

    @property
    def changed(self) -> bool:
        return self.error is None and self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        label = self.path
        return "".join(difflib.unified_diff(
            old, new, fromfile=f"{label} (now)" if self.before is not None else "/dev/null",
            tofile=f"{label} (after)" if self.after is not None else "/dev/null",
        ))

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target, "path": self.path, "changed": self.changed,
                "what": self.what, "error": self.error, "kind": self.kind,
                "action": ("delete" if self.after is None else "restore" if self.restore
                           else "create" if self.before is None else "update") if self.changed else "none"}


# --------------------------------------------------------------------------- commands

def remem_argv() -> list[str]:
    """The installed `remem`, as an absolute path (or this Python with -m remem)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name in ("remem", "remem.exe") and argv0.exists():
        return [str(argv0.absolute())]
    found = shutil.which("remem")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "remem"]


def _home_args() -> list[str]:
    # A person who moved remem's home with REMEM_HOME wants the agents to use that one too.
    return ["--home", str(paths.home())] if os.environ.get("REMEM_HOME") else []


def command(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in [*remem_argv(), *_home_args(), *args])


def server_entry(style: str = "plain") -> dict[str, Any]:
    argv = remem_argv()
    entry: dict[str, Any] = {"command": argv[0], "args": [*argv[1:], *_home_args(), "serve"]}
    if style == "claude-code":
        return {"type": "stdio", **entry, "env": {}}
    if style == "vscode":
        return {"type": "stdio", **entry}
    return entry


def is_ours(cmd: Any) -> bool:
    return isinstance(cmd, str) and bool(_OURS.search(cmd))


# --------------------------------------------------------------------------- JSON helpers

def _read(path: Path) -> str | None:
    """The file's text, a UTF-8 BOM kept (so a restore is byte for byte); None if missing.
    Raises UnicodeDecodeError for a file that is not UTF-8 (callers report it, naming it)."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    return (f"{path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at {exc.start}); "
            "save it as UTF-8, then run `remem setup` again")


def _loads(text: str) -> Any:
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


def _json_edit(target: str, path: Path, change: Callable[[dict[str, Any]], list[str]]) -> Edit:
    """Apply change(data) -> summary to a JSON file; unchanged data keeps the text as it is."""
    try:
        before = _read(path)
    except UnicodeDecodeError as exc:
        return Edit(target, str(path), None, None, error=_not_utf8(path, exc))
    if before is not None and before.lstrip("\ufeff").strip():
        try:
            data = _loads(before)
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


def _set_server(data: dict[str, Any], key: str, entry: dict[str, Any]) -> list[str]:
    servers = data.get(key)
    if not isinstance(servers, dict):
        servers = data[key] = {}
    if servers.get(SERVER_NAME) != entry:
        servers[SERVER_NAME] = entry
        return [f"MCP server {SERVER_NAME!r} in {key}"]
    return []


def _unset_server(data: dict[str, Any], key: str) -> list[str]:
    servers = data.get(key)
    if isinstance(servers, dict) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del data[key]
        return [f"MCP server {SERVER_NAME!r} from {key}"]
    return []


def _set_grouped_hooks(data: dict[str, Any], wanted: dict[str, dict[str, Any]]) -> list[str]:
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


def _unset_grouped_hooks(data: dict[str, Any]) -> list[str]:
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


def _set_cursor_hooks(data: dict[str, Any]) -> list[str]:
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


def _unset_cursor_hooks(data: dict[str, Any]) -> list[str]:
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


# --------------------------------------------------------------------------- agents

def found_agents() -> list[str]:
    """Agents whose config folder exists (or whose command is on PATH)."""
    checks = {
        "claude-code": [paths.claude_home(), paths.claude_user_config()],
        "codex": [paths.codex_home()],
        "gemini": [paths.gemini_settings().parent],
        "cursor": [paths.cursor_dir()],
        "windsurf": [paths.windsurf_mcp_config().parent],
        "claude-desktop": [paths.claude_desktop_config().parent],
        "vscode": [paths.vscode_mcp_config().parent],
    }
    commands = {"claude-code": "claude", "codex": "codex", "gemini": "gemini", "cursor": "cursor"}
    out = []
    for agent in AGENTS:
        if any(p.exists() for p in checks[agent]) or (agent in commands and shutil.which(commands[agent])):
            out.append(agent)
    return out


def _agent_edits(agent: str, remove: bool, toml_editor: TomlEditor | None) -> list[Edit]:
    def mcp(key: str, style: str = "plain") -> Callable[[dict[str, Any]], list[str]]:
        if remove:
            return lambda d: _unset_server(d, key)
        return lambda d: _set_server(d, key, server_entry(style))

    def hooks(wanted: Callable[[], dict[str, dict[str, Any]]]) -> Callable[[dict[str, Any]], list[str]]:
        if remove:
            return _unset_grouped_hooks
        return lambda d: _set_grouped_hooks(d, wanted())

    if agent == "claude-code":
        return [_json_edit(agent, paths.claude_settings(), hooks(claude_hooks)),
                _json_edit(agent, paths.claude_user_config(), mcp("mcpServers", "claude-code"))]
    if agent == "codex":
        return [_codex_toml(toml_editor, remove),
                _json_edit(agent, paths.codex_hooks(), hooks(codex_hooks))]
    if agent == "gemini":
        def both(d: dict[str, Any]) -> list[str]:
            return mcp("mcpServers")(d) + hooks(gemini_hooks)(d)
        return [_json_edit(agent, paths.gemini_settings(), both)]
    if agent == "cursor":
        return [_json_edit(agent, paths.cursor_mcp_config(), mcp("mcpServers")),
                _json_edit(agent, paths.cursor_hooks(),
                           _unset_cursor_hooks if remove else _set_cursor_hooks)]
    if agent == "windsurf":
        return [_json_edit(agent, paths.windsurf_mcp_config(), mcp("mcpServers"))]
    if agent == "claude-desktop":
        return [_json_edit(agent, paths.claude_desktop_config(), mcp("mcpServers"))]
    if agent == "vscode":
        return [_json_edit(agent, paths.vscode_mcp_config(), mcp("servers", "vscode"))]
    raise ValueError(f"unknown agent {agent!r}; use one of {', '.join(AGENTS)}")


def _codex_toml(editor: TomlEditor | None, remove: bool) -> Edit:
    path = paths.codex_config()
    try:
        before = _read(path)
    except UnicodeDecodeError as exc:
        return Edit("codex", str(path), None, None, error=_not_utf8(path, exc))
    if editor is None:
        return Edit("codex", str(path), before, before,
                    error="Codex's config.toml needs the TOML editor; run `remem setup` from the command line")
    try:
        if remove:
            after = before
            if before is not None:
                after = editor.disable_hooks(editor.remove_server(before, SERVER_NAME))
            what = [f"MCP server {SERVER_NAME!r} in mcp_servers"] if after != before else []
        else:
            text = before or ""
            after = editor.enable_hooks(editor.add_server(text, SERVER_NAME, server_entry()))
            what = [f"MCP server {SERVER_NAME!r} in mcp_servers", "features.hooks"]
            if after == text and before is not None:
                after, what = before, []
    except ValueError as exc:
        return Edit("codex", str(path), before, before,
                    error=f"{path} is not valid TOML ({exc}); fix it by hand, then run `remem setup` again")
    return Edit("codex", str(path), before, after, what=what)


# --------------------------------------------------------------------------- schedule

def nightly_command() -> str:
    """The shell text of the nightly job: read what is new, then consolidate it.

    Sleep reads nothing by itself, and a SessionEnd hook covers only Claude Code sessions that
    ended cleanly: without the ingest, Codex sessions, the inbox (proxy recordings) and any
    session whose hook never fired would never be read. `;`, not `&&`: a failed ingest (one
    unreadable file, a busy store) must not cost the night's consolidation of everything
    already stored, so sleep runs whatever ingest did. The job's status is sleep's; both
    append to one log."""
    log = shlex.quote(str(paths.logs_dir() / "sleep.log"))
    return (f"{command('ingest', '--quiet')} >> {log} 2>&1; "
            f"{command('sleep', '--quiet')} >> {log} 2>&1")


def cron_line() -> str:
    # Found again by CRON_MARK alone, so the line of an earlier release (sleep only) is
    # replaced in place, never doubled.
    return f"{CRON_TIME} {nightly_command()} {CRON_MARK}"


def _crontab(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("crontab")
    if not exe:
        raise FileNotFoundError("no crontab command on PATH")
    return subprocess.run([exe, *args], input=input, capture_output=True, text=True, timeout=20)


def read_crontab() -> str | None:
    """The person's crontab text; None when they have none."""
    res = _crontab("-l")
    if res.returncode != 0:
        if "no crontab" in (res.stderr or "").lower():
            return None
        raise RuntimeError(f"`crontab -l` failed: {(res.stderr or '').strip()}")
    return res.stdout


def _schedule_edits(remove: bool, manifest: dict[str, Any]) -> list[Edit]:
    if shutil.which("crontab"):
        try:
            before = read_crontab()
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            return [Edit(SCHEDULE, "crontab", None, None, kind="crontab",
                         error=f"{exc}; add `{cron_line()}` to your crontab yourself")]
        lines = (before or "").splitlines(keepends=True)
        mine = [l for l in lines if CRON_MARK in l]
        rest = [l for l in lines if CRON_MARK not in l]
        if remove:
            rec = manifest.get("crontab") or {}
            if mine and rec and rec.get("exact", True) and _sha(before) == rec.get("written"):
                return [Edit(SCHEDULE, "crontab", before, rec.get("original"), kind="crontab",
                             what=["nightly ingest and sleep"], restore=True)]
            after = "".join(rest) if mine else before
            return [Edit(SCHEDULE, "crontab", before, after if after else (None if mine else before),
                         kind="crontab", what=["nightly ingest and sleep"] if mine else [])]
        want = cron_line() + "\n"
        if mine == [want]:
            return [Edit(SCHEDULE, "crontab", before, before, kind="crontab")]
        body = "".join(rest)
        if body and not body.endswith("\n"):
            body += "\n"
        return [Edit(SCHEDULE, "crontab", before, body + want, kind="crontab", what=["nightly ingest and sleep"])]
    if shutil.which("systemctl"):
        unit_dir = paths.systemd_user_dir()
        service = (
            "[Unit]\nDescription=remem nightly ingest and sleep (read new sessions, "
            "consolidate memories into lessons)\n\n"
            # One shell, as in the crontab: a second ExecStart line would not run after a failed
            # ingest (unless marked `-`), and both schedulers run the same text.
            f"[Service]\nType=oneshot\nExecStart=/bin/sh -c {shlex.quote(nightly_command())}\n"
        )
        timer = (
            "[Unit]\nDescription=Run remem ingest and sleep every night\n\n"
            "[Timer]\nOnCalendar=*-*-* 03:17:00\nPersistent=true\n\n"
            "[Install]\nWantedBy=timers.target\n"
        )
        edits = []
        for name, text in zip(SYSTEMD_UNITS, (service, timer)):
            path = unit_dir / name
            try:
                before = _read(path)
            except UnicodeDecodeError as exc:
                edits.append(Edit(SCHEDULE, str(path), None, None, error=_not_utf8(path, exc)))
                continue
            edits.append(Edit(SCHEDULE, str(path), before, None if remove else text,
                              what=["nightly ingest and sleep (systemd user timer)"]))
        return edits
    return [Edit(SCHEDULE, "crontab", None, None, kind="crontab",
                 error="no crontab or systemctl found; run `remem ingest; remem sleep` nightly yourself")]


# --------------------------------------------------------------------------- plan / apply

def _sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_manifest() -> dict[str, Any]:
    try:
        data = json.loads(paths.setup_manifest().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_manifest(data: dict[str, Any]) -> None:
    path = paths.setup_manifest()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def plan(
    agents: list[str] | None = None,
    *,
    remove: bool = False,
    schedule: bool = True,
    toml_editor: TomlEditor | None = None,
) -> list[Edit]:
    """Every edit setup (or --remove) would make; nothing is written."""
    manifest = load_manifest()
    files = manifest.get("files") or {}
    if agents is None:
        agents = found_agents()
        if remove:
            agents = list(dict.fromkeys([*agents, *(r.get("target") for r in files.values()
                                                    if r.get("target") in AGENTS)]))
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        raise ValueError(f"unknown agent {unknown[0]!r}; use one of {', '.join(AGENTS)}")
    edits: list[Edit] = []
    for agent in dict.fromkeys(agents):
        edits.extend(_agent_edits(agent, remove, toml_editor))
    if schedule:
        edits.extend(_schedule_edits(remove, manifest))
    if remove:
        for e in edits:
            rec = files.get(e.path)
            if e.kind != "file" or not rec or e.error or e.before is None:
                continue
            if _sha(e.before) == rec.get("written"):
                # Nothing else touched the file since: put back exactly what was there.
                if rec.get("created"):
                    e.after, e.restore = None, True
                else:
                    backup = Path(rec.get("backup") or "")
                    if backup.is_file():
                        e.after, e.restore = backup.read_bytes().decode("utf-8"), True
    return edits


def _backup(path: Path, text: str) -> Path:
    folder = paths.backups_dir() / "setup"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = clock.iso().replace(":", "").replace("-", "")
    name = f"{stamp}-{paths.project_folder_name(str(path)).strip('-')}"
    dest = folder / name
    dest.write_bytes(text.encode("utf-8"))
    return dest


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode if path.exists() else None
    tmp = path.with_name(f".{path.name}.remem-tmp")
    tmp.write_bytes(text.encode("utf-8"))
    if mode is not None:
        os.chmod(tmp, mode & 0o7777)
    os.replace(tmp, path)


def ensure_log_folder() -> None:
    """The nightly line appends to a log in this folder, and a shell refuses a missing one:
    made on every setup, also when nothing else changes (a folder deleted since)."""
    paths.logs_dir().mkdir(parents=True, exist_ok=True)


def apply(edits: list[Edit], *, remove: bool = False) -> list[dict[str, Any]]:
    """Write the changed edits (each file backed up first); returns what was done."""
    manifest = load_manifest()
    files = manifest.setdefault("files", {})
    done = []
    if not remove:
        ensure_log_folder()
    for e in edits:
        if not e.changed:
            continue
        entry = e.as_dict()
        try:
            if e.kind == "crontab":
                _apply_crontab(e, manifest, remove)
            else:
                path = Path(e.path)
                backup = _backup(path, e.before) if e.before is not None else None
                entry["backup"] = str(backup) if backup else None
                if e.after is None:
                    path.unlink(missing_ok=True)
                else:
                    _write(path, e.after)
                if remove:
                    files.pop(e.path, None)
                else:
                    rec = files.get(e.path)
                    if rec is not None and rec.get("written") != _sha(e.before):
                        # Someone else changed the file since setup wrote it: the first backup
                        # is no longer a safe restore point, so --remove will only take out
                        # remem's entries.
                        rec = {"created": False, "backup": None}
                    rec = rec or {"created": e.before is None, "backup": str(backup) if backup else None}
                    rec.update(target=e.target, written=_sha(e.after))
                    files[e.path] = rec
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            entry["error"] = f"could not write {e.path}: {exc}"
        done.append(entry)
    _save_manifest(manifest)
    if any(e.target == SCHEDULE and e.changed and e.kind == "file" for e in edits):
        done.append(_systemctl(remove))
    return done


def _apply_crontab(e: Edit, manifest: dict[str, Any], remove: bool) -> None:
    if e.before is not None:
        _backup(Path("crontab"), e.before)
    if e.after is None:
        res = _crontab("-r")
    else:
        res = _crontab("-", input=e.after)
    if res.returncode != 0:
        raise RuntimeError((res.stderr or "crontab failed").strip())
    if remove:
        manifest.pop("crontab", None)
    else:
        rec = manifest.get("crontab")
        if rec is not None and rec.get("written") != _sha(e.before):
            # Changed by someone else since setup wrote it (a line the person added before an
            # upgrade rewrote remem's line): the first original is no longer a safe restore
            # point, so --remove will only take out remem's line.
            rec = {"original": None, "exact": False}
        rec = rec or {"original": e.before}
        rec["written"] = _sha(e.after)
        manifest["crontab"] = rec


def _systemctl(remove: bool) -> dict[str, Any]:
    exe = shutil.which("systemctl")
    steps = [["--user", "daemon-reload"],
             ["--user", "disable" if remove else "enable", "--now", SYSTEMD_UNITS[1]]]
    if remove:
        steps.reverse()
    errors = []
    for args in steps:
        try:
            res = subprocess.run([exe or "systemctl", *args], capture_output=True, text=True, timeout=20)
            if res.returncode != 0:
                errors.append((res.stderr or "").strip().splitlines()[0] if res.stderr else f"exit {res.returncode}")
        except (OSError, subprocess.SubprocessError) as exc:
            errors.append(str(exc))
    return {"target": SCHEDULE, "path": "systemctl --user", "changed": not errors,
            "what": ["timer " + ("disabled" if remove else "enabled")],
            "error": f"systemctl: {errors[0]}; run `systemctl --user enable --now {SYSTEMD_UNITS[1]}`" if errors else None}


# --------------------------------------------------------------------------- status (doctor)

def wiring() -> list[dict[str, Any]]:
    """Where remem is wired now: per agent, each file, whether remem's MCP server and hooks are in it."""
    out = []
    for agent in AGENTS:
        for e in _agent_edits(agent, True, _ReadOnlyToml()):
            text = e.before
            state = {"agent": agent, "path": e.path, "exists": Path(e.path).exists(),
                     "error": e.error, "mcp": False, "hooks": []}
            if text and not e.error:
                if e.path.endswith(".toml"):
                    state["mcp"] = _ReadOnlyToml().has_server(text, SERVER_NAME)
                else:
                    data = _loads(text) if text.lstrip("\ufeff").strip() else {}
                    for key in ("mcpServers", "servers"):
                        if isinstance(data.get(key), dict) and SERVER_NAME in data[key]:
                            state["mcp"] = True
                    state["hooks"] = _our_hook_commands(data)
            out.append(state)
    return out


def _our_hook_commands(data: dict[str, Any]) -> list[dict[str, str]]:
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


class _ReadOnlyToml:
    """Reads Codex's config.toml with tomllib (for status); never writes."""

    def has_server(self, text: str, name: str) -> bool:
        import tomllib

        try:
            return name in (tomllib.loads(text).get("mcp_servers") or {})
        except tomllib.TOMLDecodeError:
            return False

    def add_server(self, text: str, name: str, server: dict[str, Any]) -> str:
        return text

    def remove_server(self, text: str, name: str) -> str:
        return text

    def enable_hooks(self, text: str) -> str:
        return text

    def disable_hooks(self, text: str) -> str:
        return text
