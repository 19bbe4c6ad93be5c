"""`remem setup`: wire remem into every agent found, and take it out again exactly.

Plan first, then apply: `plan()` reads each config file and computes the text remem wants
there (nothing is written), `apply()` writes what changed, each file backed up first, and
records in $REMEM_HOME/setup.json what it wrote. `plan(remove=True)` restores a file byte for
byte from its backup when nothing else changed it since; otherwise it takes out only remem's
entries. A file that is not valid JSON is reported and left untouched (VS Code's mcp.json and
Gemini CLI's settings.json may hold comments: they are edited as text, so the comments stay).
A config that is a symlink is written through the link, which stays. TOML (Codex's
config.toml) is edited through a callback the caller passes (`toml_editor`), so the engine
never imports tomlkit.

The JSON edits live in setup_json.py, the nightly schedule in schedule.py, and what both
share (the Edit, reading and backing up a file, remem's command line) in setup_edit.py.

`--remove` also takes out what sleep rendered into Claude Code's memory folders for this
memory (its lesson files, its lines of each MEMORY.md, a memory folder it made and left
empty): `plan_unrender()` says what, `apply_unrender()` does it, both through
render.unrender, which owns those files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any, Callable, Protocol

from remem import paths
from remem.engine.schedule import (
    SCHEDULE, apply_crontab, disable_timer, schedule_edits, systemctl_reload, systemctl_timer,
)
from remem.engine.setup_edit import (
    SERVER_NAME, Edit, is_ours, not_utf8, read_config, save_backup, server_entry, sha,
)
from remem.engine.setup_json import (
    claude_hooks, codex_hooks, gemini_hooks, json_edit, parse_jsonc, set_cursor_hooks,
    set_grouped_hooks, set_server, unset_cursor_hooks, unset_grouped_hooks, unset_server,
)

AGENTS = ("claude-code", "codex", "gemini", "cursor", "windsurf", "claude-desktop", "vscode")
HOOK_AGENTS = ("claude-code", "codex", "gemini", "cursor")  # the others take the MCP server only


class TomlEditor(Protocol):
    def add_server(self, text: str, name: str, server: dict[str, Any]) -> str: ...
    def remove_server(self, text: str, name: str) -> str: ...
    def enable_hooks(self, text: str) -> str: ...
    def disable_hooks(self, text: str, added: str | None) -> str: ...
    def has_server(self, text: str, name: str) -> bool: ...


# What the person still has to do in an agent after its files are wired.
NEXT_STEPS = {
    "codex": ("Codex runs new or changed hooks only once you trust them: start `codex` and "
              "accept its \"Hooks need review\" prompt (or review them with /hooks); "
              "`codex exec` alone never asks, so until then remem's hooks do not run there."),
}


def next_steps(edits: list[Edit], remove: bool = False) -> list[str]:
    """The steps left to the person for the agents these edits wired (none on --remove)."""
    if remove:
        return []
    wired = {e.target for e in edits if e.changed and not e.error}
    return [NEXT_STEPS[t] for t in sorted(wired) if t in NEXT_STEPS]


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


def _agent_edits(agent: str, remove: bool, toml_editor: TomlEditor | None,
                 files: dict[str, Any] | None = None) -> list[Edit]:
    def mcp(key: str, style: str = "plain") -> Callable[[dict[str, Any]], list[str]]:
        if remove:
            return lambda d: unset_server(d, key)
        return lambda d: set_server(d, key, server_entry(style))

    def hooks(wanted: Callable[[], dict[str, dict[str, Any]]]) -> Callable[[dict[str, Any]], list[str]]:
        if remove:
            return unset_grouped_hooks
        return lambda d: set_grouped_hooks(d, wanted())

    if agent == "claude-code":
        return [json_edit(agent, paths.claude_settings(), hooks(claude_hooks)),
                json_edit(agent, paths.claude_user_config(), mcp("mcpServers", "claude-code"))]
    if agent == "codex":
        return [_codex_toml(toml_editor, remove, files or {}),
                json_edit(agent, paths.codex_hooks(), hooks(codex_hooks))]
    if agent == "gemini":
        def both(d: dict[str, Any]) -> list[str]:
            return mcp("mcpServers")(d) + hooks(gemini_hooks)(d)
        # Gemini CLI strips // and /* */ comments when it reads settings.json: edited as
        # VS Code's mcp.json is, as text, so the person's comments stay.
        return [json_edit(agent, paths.gemini_settings(), both, jsonc=True)]
    if agent == "cursor":
        return [json_edit(agent, paths.cursor_mcp_config(), mcp("mcpServers")),
                json_edit(agent, paths.cursor_hooks(),
                           unset_cursor_hooks if remove else set_cursor_hooks)]
    if agent == "windsurf":
        return [json_edit(agent, paths.windsurf_mcp_config(), mcp("mcpServers"))]
    if agent == "claude-desktop":
        return [json_edit(agent, paths.claude_desktop_config(), mcp("mcpServers"))]
    if agent == "vscode":
        return [json_edit(agent, paths.vscode_mcp_config(), mcp("servers", "vscode"), jsonc=True)]
    raise ValueError(f"unknown agent {agent!r}; use one of {', '.join(AGENTS)}")


def _codex_toml(editor: TomlEditor | None, remove: bool, files: dict[str, Any]) -> Edit:
    path = paths.codex_config()
    try:
        before = read_config(path)
    except UnicodeDecodeError as exc:
        return Edit("codex", str(path), None, None, error=not_utf8(path, exc))
    if editor is None:
        return Edit("codex", str(path), before, before,
                    error="Codex's config.toml needs the TOML editor; run `remem setup` from the command line")
    server = f"MCP server {SERVER_NAME!r}"
    record: dict[str, Any] = {}
    try:
        if remove:
            if before is None:
                return Edit("codex", str(path), None, None)
            # features.hooks goes only when setup put it there (the manifest says so): a
            # [features] table the person had before setup stays as it is.
            cut = editor.remove_server(before, SERVER_NAME)
            # A manifest from before this record ("legacy"): the old rule, the table goes only
            # while it holds nothing but what remem writes there.
            after = editor.disable_hooks(cut, (files.get(str(path)) or {}).get("features", "legacy"))
            what = [f"{server} from mcp_servers"] * (cut != before) + ["features.hooks"] * (after != cut)
        else:
            text = before or ""
            added = editor.add_server(text, SERVER_NAME, server_entry())
            after = editor.enable_hooks(added)
            what = [f"{server} in mcp_servers"] * (added != text) + ["features.hooks"] * (after != added)
            if after != added:
                had = tomllib.loads(added).get("features")
                record["features"] = "table" if had in (None, {"codex_hooks": True}) else "key"
            elif str(path) not in files:  # first setup of this file: the hooks were the person's
                record["features"] = "none"
            if after == text and before is not None:
                after, what = before, []
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        return Edit("codex", str(path), before, before,
                    error=f"{path} is not valid TOML ({exc}); fix it by hand, then run `remem setup` again")
    return Edit("codex", str(path), before, after, what=what, record=record)


# --------------------------------------------------------------------------- plan / apply

def removed_agents() -> set[str]:
    """The agents `remem setup --remove` took remem out of, and no setup has wired since."""
    return {a for a in load_manifest().get("removed") or () if a in AGENTS}


# How the person left the nightly job out, as setup.json keeps it: doctor then notes an
# unscheduled sleep instead of calling it a problem (whose fix would add the line they declined).
SCHEDULE_OFF = {"no-schedule": "you chose `remem setup --no-schedule`",
                "removed": "`remem setup --remove` took it out"}


def schedule_off() -> str | None:
    """"no-schedule" or "removed" when the person left the nightly job out on purpose, and no
    setup has scheduled it since; None otherwise."""
    off = load_manifest().get("schedule_off")
    return off if off in SCHEDULE_OFF else None


def keeps_records(remove: bool) -> bool:
    """Whether setup writes its backups and setup.json: always, except a --remove run after
    $REMEM_HOME was deleted (remem uninstalled already), which must not make the folder again."""
    return not remove or paths.home().is_dir()


def remember_schedule_choice(*, schedule: bool, remove: bool) -> None:
    """Keep in setup.json whether the person left the nightly job out (--no-schedule, or a
    --remove that took it out) or asked for it (a setup without --no-schedule). Called for every
    setup that goes ahead, also when no file changes. A --remove writes it only into a
    setup.json there is: one with $REMEM_HOME gone keeps no records (keeps_records), and one
    that only deletes lesson files has no setup of its own to record."""
    if remove and not paths.setup_manifest().is_file():
        return
    manifest = load_manifest()
    off = manifest.get("schedule_off")
    if remove:
        want = "removed" if schedule else off  # --remove --no-schedule leaves the job as it is
    else:
        want = None if schedule else "no-schedule"
    if want == off:
        return
    if want is None:
        manifest.pop("schedule_off", None)
    else:
        manifest["schedule_off"] = want
    _save_manifest(manifest)


def unrecorded_note(edits: list[Edit]) -> str:
    """What a --remove that keeps no records (keeps_records) says: no backups were made, and
    the files it left empty stay, since only setup.json knew which of them setup created."""
    note = (f"{paths.home()} does not exist, so --remove kept no backups and wrote no setup.json "
            f"(it does not make that folder again)")
    emptied = [e.path for e in edits if e.changed and e.kind == "file" and e.after is not None
               and empty_config(e.path, e.after)]
    if emptied:
        note += (f"; with setup.json gone, which files setup created is not known, so these stay, "
                 f"now empty: {', '.join(emptied)} (delete them if you did not make them)")
    return note


def empty_config(path: str, text: str) -> bool:
    """Whether a config holds nothing at all: blank, or (JSON) an empty object. Comments count
    as something (strict JSON reads none, so a JSONC file with comments is not empty)."""
    body = text.lstrip("\ufeff").strip()
    if not body or path.endswith(".toml"):
        return not body
    try:
        return json.loads(body) == {}
    except ValueError:
        return False


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
        edits.extend(_agent_edits(agent, remove, toml_editor, files))
    if schedule:
        edits.extend(schedule_edits(remove, manifest))
    if remove:
        for e in edits:
            rec = files.get(e.path)
            if e.error and not rec and e.kind == "file":
                # A file setup never wrote (no record) has nothing of setup's to take out:
                # one it cannot read is no reason to fail --remove.
                e.error, e.after = None, e.before
            if e.kind != "file" or not rec or e.error or e.before is None:
                continue
            if sha(e.before) == rec.get("written"):
                # Nothing else touched the file since: put back exactly what was there.
                if rec.get("created"):
                    e.after, e.restore = None, True
                else:
                    backup = Path(rec.get("backup") or "")
                    if backup.is_file():
                        e.after, e.restore = backup.read_bytes().decode("utf-8"), True
            elif rec.get("created") and e.after is not None and empty_config(e.path, e.after):
                # Setup made the file, and with remem's entries out nothing is left in it (the
                # agent rewrote it since, say, in its own format): a `{}` stub would only stay behind.
                e.after = None
    return edits


def _real(path: Path) -> Path:
    """Where a config that is a symlink (into a dotfiles repository, say) really is: setup
    writes (and --remove restores, or deletes) that file, and the link stays a link."""
    return Path(os.path.realpath(path))


def _write(path: Path, text: str) -> None:
    path = _real(path)
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
    # A --remove after $REMEM_HOME was deleted: no backups, no setup.json (keeps_records).
    records = keeps_records(remove)
    if not remove:
        ensure_log_folder()
    units = [e for e in edits if e.target == SCHEDULE and e.changed and e.kind == "file"]
    # --remove, or setup taking out units it wrote where no user manager can run them.
    dropping = remove or (bool(units) and all(e.after is None for e in units))
    timer = None
    if units and dropping:
        # systemd cannot disable a unit whose file is gone: disable first. If that fails while
        # the manager answers, the units stay, so the fix it names still works.
        timer = disable_timer()
        if timer["error"]:
            edits = [e for e in edits if not (e.target == SCHEDULE and e.kind == "file")]
    for e in edits:
        if not e.changed:
            continue
        entry = e.as_dict()
        try:
            if e.kind == "crontab":
                apply_crontab(e, manifest, remove, backup=records)
            else:
                path = Path(e.path)
                backup = save_backup(path, e.before) if e.before is not None and records else None
                entry["backup"] = str(backup) if backup else None
                if e.after is None:
                    _real(path).unlink(missing_ok=True)
                else:
                    _write(path, e.after)
                if remove or e.after is None:
                    files.pop(e.path, None)
                else:
                    rec = files.get(e.path)
                    if rec is not None and rec.get("written") != sha(e.before):
                        # Someone else changed the file since setup wrote it: the first backup
                        # is no longer a safe restore point, so --remove will only take out
                        # remem's entries.
                        # What setup added stays known, so --remove still takes out only that.
                        rec = {"created": False, "backup": None,
                               **{k: v for k, v in rec.items() if k == "features"}}
                    rec = rec or {"created": e.before is None, "backup": str(backup) if backup else None}
                    rec.update({k: v for k, v in e.record.items() if v})
                    rec.update(target=e.target, written=sha(e.after))
                    files[e.path] = rec
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            entry["error"] = f"could not write {e.path}: {exc}"
        done.append(entry)
    # Which agents the person took remem out of on purpose (doctor does not call that a
    # problem); wiring one again forgets it.
    touched = {e.target for e in edits if e.changed and e.target in AGENTS and not e.error}
    removed = set(manifest.get("removed") or ())
    removed = (removed | touched) if remove else (removed - touched)
    manifest["removed"] = sorted(removed)
    if records:
        _save_manifest(manifest)
    if units and not dropping:
        done.append(systemctl_timer())
    elif timer is not None:
        # With no user manager there is nothing to reload (and the reload would fail).
        if timer.pop("manager") and not timer["error"]:
            timer["error"] = systemctl_reload()
        done.append(timer)
    return done


# --------------------------------------------------------------------------- rendered lessons

def removes_rendered(agents: list[str] | None) -> bool:
    """Whether --remove for these agents (None: every one) takes out the lesson files sleep
    rendered: they are in Claude Code's memory folders, so only when Claude Code is unwired."""
    return not agents or "claude-code" in agents


def plan_unrender(agents: list[str] | None) -> dict[str, Any]:
    """What --remove takes out of Claude Code's memory folders for this memory: the lesson files
    sleep rendered, MEMORY.md changes with their diffs, and the memory folders sleep made that
    are left empty. Nothing is written."""
    if not removes_rendered(agents):
        return {"files": [], "memory_md": [], "folders": [], "problems": []}
    from remem.engine import render

    return _unrender_report(render.unrender(dry_run=True), diff=True)


def apply_unrender(agents: list[str] | None) -> dict[str, Any]:
    """Take them out (render.unrender): written.json forgets the removed files first, so the
    next sleep takes none of them as a veto and renders them again."""
    if not removes_rendered(agents):
        return {"files": [], "memory_md": [], "folders": [], "problems": []}
    from remem.engine import render
    from remem.errors import RememError

    try:
        return _unrender_report(render.unrender(), diff=False)
    except (RememError, OSError) as exc:  # a sleep running now, or written.json not writable
        return {"files": [], "memory_md": [], "folders": [], "problems": [
            f"{exc}; then run `remem setup --remove` again to take out the lesson files sleep rendered"]}


def _unrender_report(result: dict[str, Any], *, diff: bool) -> dict[str, Any]:
    changes = []
    for change in result["memory_md"]:
        entry = {"path": change["path"], "action": "delete" if change["after"] is None else "update"}
        if diff:
            entry["diff"] = Edit("claude-code", change["path"], change["before"], change["after"]).diff()
        changes.append(entry)
    return {"files": result["files"], "memory_md": changes, "folders": result["folders"],
            "problems": result["problems"]}


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
                    data = parse_jsonc(text) if text.lstrip("\ufeff").strip() else {}
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

    def disable_hooks(self, text: str, added: str | None) -> str:
        return text
