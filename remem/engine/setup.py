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
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any, Callable, Protocol

from remem import paths
from remem.engine.files import write_atomic
from remem.engine.schedule import (
    SCHEDULE, apply_crontab, disable_timer, schedule_edits, systemctl_reload, systemctl_timer,
)
from remem.engine.setup_edit import (
    SERVER_NAME, Edit, is_ours, read_config, save_backup, server_entry, server_here, server_home, sha,
    unreadable, unwritable,
)
from remem.engine.setup_json import (
    claude_hooks, codex_hooks, gemini_hooks, json_edit, other_memories, our_hook_commands, parse_jsonc,
    set_grouped_hooks, set_server, unset_cursor_hooks, unset_grouped_hooks, unset_server,
)

AGENTS = ("claude-code", "codex", "gemini", "cursor", "windsurf", "claude-desktop", "vscode")
# The others take the MCP server only. Cursor too: before a prompt it offers only
# beforeSubmitPrompt, which can let the prompt through or stop it and carries no context, so a
# hook there would only start remem on every prompt (setup takes out one an earlier release wrote).
HOOK_AGENTS = ("claude-code", "codex", "gemini")


class TomlEditor(Protocol):
    def add_server(self, text: str, name: str, server: dict[str, Any]) -> str: ...
    def remove_server(self, text: str, name: str) -> str: ...
    def enable_hooks(self, text: str, legacy_ours: bool = True) -> str: ...
    def disable_hooks(self, text: str, added: str | None) -> str: ...
    def has_server(self, text: str, name: str) -> bool: ...


# What the person still has to do in an agent after its files are wired.
NEXT_STEPS = {
    "codex": ("Codex runs new or changed hooks only once you trust them: start `codex` and "
              "accept its \"Hooks need review\" prompt (or review them with /hooks); "
              "`codex exec` alone never asks, so until then remem's hooks do not run there."),
}


def next_steps(edits: list[Edit], remove: bool = False) -> list[str]:
    """The steps left to the person for the agents these edits wired (none on --remove, and
    none for an agent one of whose files could not be wired: its error says what to do first)."""
    if remove:
        return []
    failed = {e.target for e in edits if e.error}  # half wired: its error comes first
    wired = {e.target for e in edits if e.changed and not e.error} - failed
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
        settings = json_edit(agent, paths.claude_settings(), hooks(claude_hooks))
        if not remove:
            settings.note = hooks_off(agent, settings.path, settings.after)
        return [settings, json_edit(agent, paths.claude_user_config(), mcp("mcpServers", "claude-code"))]
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
                json_edit(agent, paths.cursor_hooks(), unset_cursor_hooks) if remove
                else _old_cursor_hooks(files or {})]
    if agent == "windsurf":
        return [json_edit(agent, paths.windsurf_mcp_config(), mcp("mcpServers"))]
    if agent == "claude-desktop":
        return [json_edit(agent, paths.claude_desktop_config(), mcp("mcpServers"))]
    if agent == "vscode":
        return [json_edit(agent, paths.vscode_mcp_config(), mcp("servers", "vscode"), jsonc=True)]
    raise ValueError(f"unknown agent {agent!r}; use one of {', '.join(AGENTS)}")


def _old_cursor_hooks(files: dict[str, Any]) -> Edit:
    """Setup's edit of Cursor's hooks.json: remem's entry an earlier release wrote there
    (beforeSubmitPrompt, which only ever answered `{"continue": true}`) taken out as --remove
    takes it out (the backup put back, or a file setup made deleted, when nothing else changed
    it since; otherwise only remem's entry goes), the person's own hooks kept. Nothing to do
    when no such entry is there."""
    def out(data: dict[str, Any]) -> list[str]:
        # Any memory's: none of them does anything there.
        return [f"take out remem's old {took.removeprefix('hooks ')} hook"
                for took in unset_cursor_hooks(data, is_ours)]

    edit = json_edit("cursor", paths.cursor_hooks(), out)
    if edit.changed or edit.error:
        # As for --remove; so a hooks.json setup never wrote that cannot be read is skipped
        # (setup adds nothing there).
        edit = _settle_removal(edit, files)
    if edit.changed:
        edit.unwires = True
        edit.note = (f"Cursor gets no remem hook: its beforeSubmitPrompt can only let a prompt through "
                     f"or stop it, so remem's entry in {edit.path} did nothing but start remem on every "
                     "prompt, and goes; Cursor keeps remem over MCP")
    edit.again = lambda: _old_cursor_hooks(files)
    return edit


def _codex_toml(editor: TomlEditor | None, remove: bool, files: dict[str, Any]) -> Edit:
    edit = _codex_toml_edit(editor, remove, files)
    edit.again = lambda: _codex_toml(editor, remove, files)
    if not remove:
        edit.note = hooks_off("codex", edit.path, edit.after)
    return edit


def _codex_toml_edit(editor: TomlEditor | None, remove: bool, files: dict[str, Any]) -> Edit:
    path = paths.codex_config()
    try:
        before = read_config(path)
    except (OSError, UnicodeDecodeError) as exc:
        return Edit("codex", str(path), None, None, error=unreadable(path, exc))
    try:
        parsed = tomllib.loads(before or "")
    except tomllib.TOMLDecodeError as exc:
        return Edit("codex", str(path), before, before,
                    error=f"{path} is not valid TOML ({exc}); fix it by hand, then run `remem setup` again")
    if editor is None:
        return Edit("codex", str(path), before, before,
                    error="Codex's config.toml needs the TOML editor; run `remem setup` from the command line")
    server = f"MCP server {SERVER_NAME!r}"
    record: dict[str, Any] = {}
    servers = parsed.get("mcp_servers")
    had_ours = isinstance(servers, dict) and SERVER_NAME in servers
    rec = files.get(str(path)) or {}
    try:
        if remove:
            if before is None or had_ours and not server_here(servers[SERVER_NAME]):
                # Another memory's server (plan() says so), and the hooks it needs, stay.
                return Edit("codex", str(path), before, before)
            # features.hooks goes only when setup put it there (the manifest says so): a
            # [features] table the person had before setup stays as it is.
            cut = editor.remove_server(before, SERVER_NAME)
            # A manifest from before this record ("legacy"): the old rule, the table goes only
            # while it holds nothing but what remem writes there.
            after = editor.disable_hooks(cut, rec.get("features", "legacy"))
            what = [f"{server} from mcp_servers"] * (cut != before) + ["features.hooks"] * (after != cut)
        else:
            text = before or ""
            added = editor.add_server(text, SERVER_NAME, server_entry())
            # A lone `[features] codex_hooks = true` is the table an earlier release appended
            # only when setup.json says an earlier setup wrote this file ("table", or a record
            # from before "features" was kept); otherwise it is the person's, and stays.
            after = editor.enable_hooks(added, legacy_ours=bool(rec) and rec.get("features", "legacy")
                                        in ("table", "legacy"))
            what = [f"{server} in mcp_servers"] * (added != text) + ["features.hooks"] * (after != added)
            if after != added:
                had = tomllib.loads(added).get("features")
                record["features"] = "table" if had in (None, {"codex_hooks": True}) else "key"
            elif str(path) not in files:  # first setup of this file: the hooks were the person's
                record["features"] = "none"
            if after == text and before is not None:
                after, what = before, []
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - the editor checks what it writes
        return Edit("codex", str(path), before, before,
                    error=f"{path} could not be edited ({exc}); fix it by hand, then run `remem setup` again")
    except ValueError as exc:  # the editor's own words: what stops it, and the fix
        return Edit("codex", str(path), before, before, error=f"{path}: {exc}", had_ours=had_ours)
    return Edit("codex", str(path), before, after, what=what, record=record, had_ours=had_ours)


def hooks_off(agent: str, path: str, text: str | None) -> str | None:
    """The agent's own switch that turns every hook off, when it is set in this config: remem's
    hooks are wired there but never run. Said by setup (a note) and by doctor (a problem)."""
    if not text or not text.lstrip("\ufeff").strip():
        return None
    try:
        if agent == "codex":
            features = tomllib.loads(text).get("features")
            if not isinstance(features, dict):
                return None
            key = "hooks" if "hooks" in features else "codex_hooks"
            if features.get(key) is False:
                return (f"Codex's hooks are switched off (`{key} = false` under [features] in {path}), so "
                        "remem's hooks do not run there; set it to true")
        elif agent == "claude-code":
            data = parse_jsonc(text)
            if isinstance(data, dict) and data.get("disableAllHooks") is True:
                return (f"Claude Code's hooks are switched off (`\"disableAllHooks\": true` in {path}), so "
                        "remem's hooks do not run there; take it out, or set it to false")
    except ValueError:  # not JSON, not TOML: reported as such elsewhere
        return None
    return None


# --------------------------------------------------------------------------- plan / apply

def removed_agents() -> set[str]:
    """The agents `remem setup --remove` took remem out of, and no setup has wired since."""
    return {a for a in load_manifest().get("removed") or () if a in AGENTS}


# How the person left the nightly job out, as setup.json keeps it: doctor then notes an
# unscheduled sleep instead of calling it a problem (whose fix would add the line they declined).
SCHEDULE_OFF = {"no-schedule": "you chose `remem setup --no-schedule`",
                "removed": "`remem setup --remove` took it out",
                "never": "an older remem's setup left it out (it kept no record of `--no-schedule`)"}


def schedule_off() -> str | None:
    """"no-schedule" or "removed" when the person left the nightly job out on purpose, and no
    setup has scheduled it since; "never" when an older release's setup left it out; None
    otherwise.

    Each setup now writes `schedule_off` (null when it asks for the job). Older releases kept
    no such key, and one kept it only for a job left out: a setup.json without it says nothing
    of a choice. Setup ran (its "files" are there) but put no job in (no crontab record, no
    systemd unit it wrote, no log a nightly run wrote): that setup left the job out, as
    `--no-schedule` does (or, where no scheduler answered, could not add it; the note then
    names the job to run from a scheduler of one's own). A job setup did put in and that was
    lost since leaves its record or its log, and stays a problem."""
    manifest = load_manifest()
    if "schedule_off" in manifest:
        off = manifest["schedule_off"]
        return off if off in SCHEDULE_OFF else None
    if "files" not in manifest or _ever_scheduled(manifest):  # no setup ran, or it scheduled
        return None
    return "never"


def _ever_scheduled(manifest: dict[str, Any]) -> bool:
    """Whether a setup put the nightly job in: its crontab record, the systemd units it wrote,
    or the log the job appends to (a line setup found there already records nothing)."""
    files = manifest.get("files") or {}
    return (bool(manifest.get("crontab")) or any(r.get("target") == SCHEDULE for r in files.values()
                                                  if isinstance(r, dict))
            or (paths.logs_dir() / "sleep.log").exists())


def keeps_records(remove: bool) -> bool:
    """Whether setup writes its backups and setup.json: always, except a --remove run after
    $REMEM_HOME was deleted (remem uninstalled already), which must not make the folder again."""
    return not remove or paths.home().is_dir()


def remember_schedule_choice(*, schedule: bool, remove: bool, took_out: bool = False) -> None:
    """Keep in setup.json whether the person left the nightly job out (--no-schedule, or a
    --remove that took it out) or asked for it (a setup without --no-schedule). Called for every
    setup that goes ahead, also when no file changes. A --remove records "removed" only when it
    really took a job out (`took_out`): one that left it (--no-schedule, an --agent while other
    agents stay wired, no job there) leaves the job, and what was chosen for it, as they are.
    It writes only into a setup.json there is: one with $REMEM_HOME gone keeps no records
    (keeps_records), and one that only deletes lesson files has no setup of its own to record."""
    if remove and not (took_out and paths.setup_manifest().is_file()):
        return
    manifest = read_manifest()
    # Written also as null (the job asked for): its presence tells this release's setup.json
    # from an older one's, which kept no choice (schedule_off()).
    want = "removed" if remove else None if schedule else "no-schedule"
    if "schedule_off" in manifest and manifest["schedule_off"] == want:
        return
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
    """setup.json as read_manifest() reads it, or {} when it cannot be read: for what only
    reports (doctor). What writes setup.json reads it with read_manifest(), which refuses."""
    try:
        return read_manifest()
    except ValueError:
        return {}


def read_manifest() -> dict[str, Any]:
    """What setup recorded ({} before any setup); a ValueError naming the fix when setup.json
    is there but cannot be read, so that setup neither writes over that record nor goes on
    without it (--remove would then not know which backups to put back). An entry of "files"
    that is no object records nothing and is skipped."""
    path = paths.setup_manifest()
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(unreadable(path, exc)) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        why = f"not JSON: {exc}"
    else:
        if not isinstance(data, dict):
            why = "no JSON object"
        elif not isinstance(data.get("files", {}), dict):
            why = '"files" is no object'
        elif not isinstance(data.get("crontab") or {}, dict):
            why = '"crontab" is no object'
        else:
            if "files" in data:
                data["files"] = {k: v for k, v in data["files"].items() if isinstance(v, dict)}
            return data
    raise ValueError(f"{path} is damaged ({why}); mend it, or move it aside (--remove then takes out "
                     "remem's entries rather than put its backups back), then run `remem setup` again")


def _save_manifest(data: dict[str, Any]) -> None:
    """Write setup.json whole (a temp file beside it, synced, renamed over it), also when it
    holds these bytes already, so that apply() learns before it changes any config whether it
    can; a ValueError naming setup.json (not the temp file) when it cannot."""
    path = paths.setup_manifest()
    try:
        write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n", fsync=True, even_if_same=True)
    except OSError as exc:
        raise ValueError(unwritable(path, exc)) from None


def plan(
    agents: list[str] | None = None,
    *,
    remove: bool = False,
    schedule: bool = True,
    toml_editor: TomlEditor | None = None,
) -> list[Edit]:
    """Every edit setup (or --remove) would make; nothing is written. A setup.json that cannot
    be read stops it (read_manifest), before anything is planned."""
    manifest = read_manifest()
    files = manifest.get("files") or {}
    explicit = agents is not None
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
        job = schedule_edits(remove, manifest)
        # The nightly job serves every agent: `--remove --agent X` takes it out only with the
        # last agent remem is wired into, and otherwise says it stays.
        others = wired_elsewhere(agents) if remove and explicit else []
        if others:
            if any(e.changed for e in job):
                edits.append(Edit(SCHEDULE, job[0].path, None, None, kind="crontab",
                                  note=f"the nightly ingest and sleep stay scheduled, as remem is still wired "
                                       f"into {', '.join(others)}; `remem setup --remove` takes it out"))
        else:
            edits.extend(job)
    if remove:
        for e in edits:
            _settle_removal(e, files)
            if e.again is not None:
                e.again = _settled(e.again, files)
        _note_other_memories(edits)
    return edits


def _note_other_memories(edits: list[Edit]) -> None:
    """--remove takes out only this memory's entries: one note (on the first such file's edit)
    names the files still holding another memory's, and the command that takes those out."""
    homes: dict[str, list[str]] = {}
    for e in edits:
        if e.kind != "file" or e.error or not e.after or not e.after.lstrip("\ufeff").strip():
            continue
        try:
            if e.path.endswith(".toml"):
                entry = (tomllib.loads(e.after).get("mcp_servers") or {}).get(SERVER_NAME)
                found = ([] if entry is None or server_here(entry)
                         else [server_home(entry) or str(paths.user_home() / ".remem")])
            else:
                data = parse_jsonc(e.after)
                found = other_memories(data) if isinstance(data, dict) else []
        except (ValueError, AttributeError):  # not TOML or JSON of this shape: reported elsewhere
            continue
        for home in found:
            homes.setdefault(home, []).append(e.path)
    if not homes:
        return
    first = next(e for e in edits if any(e.path in where for where in homes.values()))
    said = "; ".join(f"{', '.join(where)} run another memory ({home}), so they stay: "
                     f"`remem --home {shlex.quote(home)} setup --remove` takes them out"
                     for home, where in homes.items())
    note = f"remem's entries in {said}"
    first.note = f"{first.note}; {note}" if first.note else note


def wired_elsewhere(agents: list[str]) -> list[str]:
    """The agents other than these that remem is wired into now (its MCP server or a hook in
    their configs), or that setup.json says setup wrote to."""
    files = load_manifest().get("files") or {}
    wired = {r.get("target") for r in files.values() if isinstance(r, dict)}
    wired |= {w["agent"] for w in wiring() if w["mcp"] or w["hooks"]}
    return [a for a in AGENTS if a in wired and a not in agents]


def _settled(again: Callable[[], Edit], files: dict[str, Any]) -> Callable[[], Edit]:
    """--remove's plan of a file made again (apply() calls it for a file changed since)."""
    return lambda: _settle_removal(again(), files)


def _settle_removal(e: Edit, files: dict[str, Any]) -> Edit:
    """What --remove does with one file, given what setup.json recorded of it."""
    rec = files.get(e.path)
    if e.error and not rec and e.kind == "file" and not e.had_ours:
        # A file setup never wrote (no record) has nothing of setup's to take out:
        # one it cannot read is no reason to fail --remove. (One holding remem's entries
        # that cannot be taken out says so.)
        e.error, e.after = None, e.before
    if e.kind != "file" or not rec or e.error or e.before is None:
        return e
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
    return e


def _real(path: Path) -> Path:
    """Where a config that is a symlink (into a dotfiles repository, say) really is: setup
    writes (and --remove restores, or deletes) that file, and the link stays a link."""
    return Path(os.path.realpath(path))


def _write(path: Path, text: str) -> None:
    """Write whole or not at all (`files.write_atomic`: a temp file beside the file, 0600 from
    its first byte, as a config may hold tokens, synced, given the file's mode, then renamed
    over it). A new file then gets what the umask gives any new file. A file the person
    write-protected, or hard-linked (a dotfiles copy the rename would leave behind), is left
    as it is: write_atomic's refuse_protected raises, and unwritable() says what to do. The
    folder of a link's target is never made: read_config refuses such a link first."""

    if not path.is_symlink():
        path.parent.mkdir(parents=True, exist_ok=True)
    path = _real(path)
    new = not path.exists()
    write_atomic(path, text, fsync=True, through_links=True, refuse_protected=True)
    if new:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(path, 0o666 & ~umask)


def _failed(path: Path, exc: OSError) -> Path:
    """The file a failed write is about: the config (not the temp file beside it, nor its
    target when it is a link), or its backup when that is what could not be written."""
    if exc.filename and os.path.dirname(os.fspath(exc.filename)) != str(_real(path).parent):
        return Path(os.fspath(exc.filename))
    return path


def _now(e: Edit) -> Edit | None:
    """The edit for the file as it is now: itself when the file is as planned, planned again
    when something else wrote it since (an agent, while setup waited at "Go ahead?"), so that
    write is neither lost nor missing from the backup. None when nothing is left to change."""
    try:
        now = read_config(Path(e.path))
    except (OSError, UnicodeDecodeError) as exc:
        return Edit(e.target, e.path, None, None, error=unreadable(Path(e.path), exc))
    if now == e.before:
        return e
    if e.again is None:
        return Edit(e.target, e.path, now, now,
                    error=f"{e.path} changed while setup waited; run `remem setup` again")
    again = e.again()
    return again if again.changed or again.error else None


def ensure_log_folder() -> None:
    """The nightly line appends to a log in this folder, and a shell refuses a missing one:
    made on every setup, also when nothing else changes (a folder deleted since)."""
    paths.logs_dir().mkdir(parents=True, exist_ok=True)


def apply(edits: list[Edit], *, remove: bool = False) -> list[dict[str, Any]]:
    """Write the changed edits (each file backed up first); returns what was done."""
    manifest = read_manifest()
    files = manifest.setdefault("files", {})
    done = []
    # A --remove after $REMEM_HOME was deleted: no backups, no setup.json (keeps_records).
    records = keeps_records(remove)
    if records:
        # Saved as it is first: a setup.json that cannot be written stops setup before any
        # config changes, so none is changed without the record --remove restores it from.
        _save_manifest(manifest)
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
        if e.kind == "file":
            fresh = _now(e)
            if fresh is None:
                continue
            e = fresh
        entry = e.as_dict()
        if e.error:
            entry["error"] = e.error
            done.append(entry)
            continue
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
                if remove or e.after is None or e.unwires:
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
                    # A file that held remem's entries already (an earlier wiring whose
                    # setup.json is gone): its backup is no clean restore point, so --remove
                    # takes remem's entries out instead of bringing the old ones back.
                    rec = rec or {"created": e.before is None,
                                  "backup": str(backup) if backup and not e.had_ours else None}
                    rec.update({k: v for k, v in e.record.items() if v})
                    rec.update(target=e.target, written=sha(e.after))
                    files[e.path] = rec
        except OSError as exc:
            entry["error"] = (unwritable(_failed(Path(e.path), exc), exc, remove=remove) if e.kind == "file"
                              else f"could not write {e.path}: {exc}")
        except (RuntimeError, subprocess.SubprocessError) as exc:
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
    """Where remem is wired now: per agent, each file, whether remem's MCP server and hooks are
    in it, and the agent's own switch turning every hook off (hooks_off), when it is set.
    setup_error: what stops `remem setup --agent` wiring a file that reads well (a key of
    another shape where remem's entries go, comments it cannot keep), which taking remem's
    entries out, as read here, never meets."""
    out = []
    files = load_manifest().get("files") or {}
    for agent in AGENTS:
        wiring_errors = {e.path: e.error for e in _agent_edits(agent, False, _ReadOnlyToml(), files)}
        for e in _agent_edits(agent, True, _ReadOnlyToml()):
            text = e.before
            # os.path.exists: False, not an error, for a path behind a folder it may not search.
            state = {"agent": agent, "path": e.path, "exists": os.path.exists(e.path),
                     "error": e.error, "mcp": False, "server": None, "hooks": [], "hooks_off": None,
                     "setup_error": None if e.error else wiring_errors.get(e.path)}
            if text and not e.error:
                if e.path.endswith(".toml"):
                    state["mcp"] = _ReadOnlyToml().has_server(text, SERVER_NAME)
                    state["server"] = _server_command(_ReadOnlyToml().servers(text))
                else:
                    data = parse_jsonc(text) if text.lstrip("\ufeff").strip() else {}
                    for key in ("mcpServers", "servers"):
                        if isinstance(data.get(key), dict) and SERVER_NAME in data[key]:
                            state["mcp"] = True
                            state["server"] = _server_command(data[key])
                    state["hooks"] = our_hook_commands(data)
                state["hooks_off"] = hooks_off(agent, e.path, text)
            out.append(state)
    return out


def _server_command(servers: Any) -> str | None:
    """The command line remem's MCP server entry runs (its command and args), as shell text;
    None when the entry names no command."""
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    args = entry.get("args") if isinstance(entry.get("args"), list) else []
    return shlex.join([entry["command"], *(str(a) for a in args)])


class _ReadOnlyToml:
    """Reads Codex's config.toml with tomllib (for status); never writes."""

    def servers(self, text: str) -> Any:
        try:
            return tomllib.loads(text).get("mcp_servers")
        except tomllib.TOMLDecodeError:
            return None

    def has_server(self, text: str, name: str) -> bool:
        return name in (self.servers(text) or {})

    def add_server(self, text: str, name: str, server: dict[str, Any]) -> str:
        return text

    def remove_server(self, text: str, name: str) -> str:
        return text

    def enable_hooks(self, text: str, legacy_ours: bool = True) -> str:
        return text

    def disable_hooks(self, text: str, added: str | None) -> str:
        return text
