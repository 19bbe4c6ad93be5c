"""`remem doctor`: what is wired where, whether each hook runs and how long it takes, the
store's health; each problem with the command that fixes it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

from remem import paths
from remem.engine import clock, setup
from remem.engine.schedule import missing_program, schedule_state

SAMPLES = {
    "prompt": {"prompt": "remem doctor: is this hook alive?", "session_id": "remem-doctor",
               "hook_event_name": "UserPromptSubmit"},
    "pre-tool": {"tool_name": "Bash", "tool_input": {"command": "true"}, "session_id": "remem-doctor",
                 "hook_event_name": "PreToolUse"},
    # stop_hook_active: the hook answers without ever blocking.
    "stop": {"last_assistant_message": "done", "stop_hook_active": True, "session_id": "remem-doctor",
             "hook_event_name": "Stop"},
}
_EVENT = {"prompt": "prompt", "pre-tool": "pre-tool", "stop": "stop", "session-end": "session-end"}


def store_health() -> dict[str, Any]:
    """integrity_check, FTS consistency, schema version, counts; never raises."""
    db = paths.db_path()
    out: dict[str, Any] = {"path": str(db), "exists": db.exists(), "ok": False, "problems": []}
    if not db.exists():
        out["problems"].append({"problem": f"no memory yet at {db}",
                                "fix": "remem ingest   (reads your agents' sessions)"})
        return out
    from remem.engine.store import MIGRATIONS, Store
    from remem.errors import StoreError, store_problem

    try:
        store = Store(db)
    except StoreError as exc:
        out["problems"].append(_unopened_problem(exc, db))
        return out
    with store:
        try:
            integrity = [r[0] for r in store.conn.execute("PRAGMA integrity_check").fetchall()]
        except sqlite3.DatabaseError as exc:
            integrity = [str(exc)]
        out["integrity"] = "ok" if integrity == ["ok"] else "; ".join(integrity[:5])
        if out["integrity"] != "ok":
            out["problems"].append({"problem": f"database integrity: {out['integrity']}",
                                    "fix": _restore_fix()})
        out["fts"] = {}
        for table in ("episodes_fts", "lessons_fts"):
            try:
                # rank = 1 also compares the index with its external content table.
                store.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 1)")
                out["fts"][table] = "ok"
            except sqlite3.DatabaseError as exc:
                found = store_problem(exc, db)
                if found is not None and found[0] in ("readonly", "busy", "full", "io"):
                    # The check is written as an INSERT: a read-only or busy memory cannot run
                    # it, which says nothing about the index.
                    out["fts"][table] = f"not checked ({exc})"
                    if not any(p["fix"] == found[2] for p in out["problems"]):
                        out["problems"].append({"problem": found[1], "fix": found[2]})
                    continue
                out["fts"][table] = str(exc)
                out["problems"].append({"problem": f"{table} is out of step with its table ({exc})",
                                        "fix": "remem doctor --repair-fts"})
        out["schema"] = store.scalar("PRAGMA user_version")
        out["schema_latest"] = len(MIGRATIONS)
        try:
            out["counts"] = store.counts()
            out["active_lessons"] = store.scalar("SELECT count(*) FROM lessons WHERE status = 'active'")
            out.update(store.meta_times())
            from remem.engine.scrub import pending

            out["unredacted"] = pending(store)
            if not out["active_lessons"]:  # why not: the advice depends on it
                from remem.engine.lessons_pass import waiting
                from remem.errors import ConfigError

                try:
                    out["waiting"] = waiting(store)
                except ConfigError:  # reported as a problem of its own; the advice stays general
                    pass
        except sqlite3.DatabaseError as exc:  # a damaged page or a missing table: reported, not raised
            out["problems"].append({"problem": f"the memory cannot be read ({exc})", "fix": _restore_fix()})
            return _verdict(out)
    if not out.get("active_lessons"):
        out["problems"].append(_no_lessons_problem(out.get("waiting"), out.get("last_sleep")))
    if out.get("unredacted"):
        out["problems"].append(_unredacted_problem(out["unredacted"]))
    last = out.get("last_sleep")
    if last and clock.days_between(last) > 2:
        out["problems"].append({"problem": f"the last sleep ran {clock.days_between(last):.0f} days ago",
                                "fix": "remem setup   (schedules it nightly), or remem sleep"})
    return _verdict(out)


_NO_GOOD_BACKUP = "no good backup in "


def _restore_fix() -> str:
    """The fix for a damaged memory: restore the newest backup that passes SQLite's check, the
    damaged memory kept as memory.db.before-restore-* (`remem backup` refuses a damaged memory:
    it keeps the copy as backups/damaged-*.db)."""
    from remem.engine.backup import last_good_backup

    good = last_good_backup()
    if good is None:
        return f"{_NO_GOOD_BACKUP}{paths.backups_dir()}; move {paths.db_path()} aside to start anew"
    return f"remem restore {shlex.quote(str(good))} --yes   (the damaged memory is kept beside it)"


def _unopened_problem(exc: Exception, db: Path) -> dict[str, str]:
    """A memory that cannot be opened at all, with the fix for its cause. A read-only file, a
    full disk, a busy file are not damage: their own fix (exc.fix). A damaged one (SQLite
    cannot read it, it holds no database, it is empty) has the fix a memory failing
    integrity_check has: the newest good backup restored, or, with none, the file moved aside.
    The line the other commands print sends the person here (`remem doctor`): doctor names
    the fix itself."""
    text, fix = str(exc), getattr(exc, "fix", None)
    if fix is not None and not fix.startswith("remem restore"):
        return {"problem": text, "fix": fix}
    if fix is None and "`remem doctor`" not in text:
        # Not damage (written by a newer remem, being upgraded by another process): the line
        # ends with its fix.
        return {"problem": text, "fix": text.rpartition("; ")[2] or text}
    fix = _restore_fix()
    # What is wrong, without the advice that follows it (a path holding "; " kept whole).
    what = text.replace(str(db), "\0").partition("; ")[0].replace("\0", str(db))
    if str(db) not in what:
        what = what.replace(db.name, str(db), 1)  # "memory.db is empty (0 bytes)"
    if fix.startswith(_NO_GOOD_BACKUP):
        return {"problem": f"{what}, and there is {fix.partition(';')[0]} to restore", "fix": fix}
    return {"problem": f"{what}; the newest good backup restores it", "fix": fix}


def nightly_backup_problem() -> dict[str, str] | None:
    """A nightly backup that fails says so only in the sleep's log and its run: with
    backup.nightly on, the last full sleep's backup error (the run records it), or the newest
    backups/memory-*.db more than 2 days older than that sleep (or none at all). Never raises:
    a memory that cannot be read is reported by store_health."""
    from remem import config
    from remem.engine.store import Store
    from remem.errors import RememError

    try:
        if not config.get("backup.nightly"):
            return None
        with Store(paths.db_path()) as store:
            return _backup_problem(store)
    except (RememError, sqlite3.Error, OSError):
        return None


def backups_folder_problem() -> dict[str, str] | None:
    """A backups path that is there but is no folder (a file, a link to nothing): no backup
    can be made (`remem backup`, the nightly one, the copy kept before an upgrade) until it is
    moved aside, and `remem backup` would only fail the same way. None otherwise."""
    folder = paths.backups_dir()
    try:
        if not os.path.lexists(folder) or folder.is_dir():
            return None
    except OSError:
        return None
    kind = "a link to nothing" if folder.is_symlink() and not folder.exists() else "a file"
    aside = shlex.quote(str(folder) + ".aside")
    return {"problem": f"{folder} is {kind}, not a folder, so no backup can be made there "
                       "(`remem backup`, the nightly one, the copy kept before an upgrade)",
            "fix": f"mv {shlex.quote(str(folder))} {aside}   (then `remem backup` makes the folder)"}


def _backup_problem(store: Any) -> dict[str, str] | None:
    """nightly_backup_problem, read from an open memory."""
    from datetime import datetime, timezone

    from remem.engine.sleep import last_full_sleep

    last = last_full_sleep(store)
    if last is None:  # no full sleep yet: none was to back up
        return None
    finished, done = last[0], last[1].get("backup")
    fix = f"remem backup   (says what stops it; the nightly sleep logs to {paths.logs_dir()})"
    folder = paths.backups_dir()
    # A backup timed after now (the clock was ahead) says nothing of the nightly backups since.
    from remem.engine.backup import newest_first

    now = clock.now().strftime("%Y%m%d-%H%M%S")
    stamps = [p.name[7:22] for p in newest_first(folder) if p.name[7:22] <= now] if folder.is_dir() else []
    newest = datetime.strptime(stamps[0], "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc) if stamps else None
    ended = clock.parse(finished)
    if isinstance(done, dict) and done.get("error"):
        # Said until a backup is made since (the fix, `remem backup`, followed): not after.
        if newest is None or newest < ended.replace(microsecond=0):
            return {"problem": f"the nightly backup after the last sleep: {done['error']}", "fix": fix}
    if newest is None:
        return {"problem": f"no backup in {folder}, though the sleep has run with backup.nightly on",
                "fix": fix}
    behind = clock.days_between(newest, ended)
    if behind > 2:
        return {"problem": f"the newest backup in {folder} is {behind:.0f} days older than the last "
                           "sleep: the nightly backups are failing", "fix": fix}
    return None


def _unredacted_problem(left: dict[str, int]) -> dict[str, str]:
    """Rows an older release stored that the redaction sweep has not read yet (engine/scrub.py)."""
    names = {"episodes": ("memory", "memories"), "lessons": ("lesson", "lessons")}
    what = " and ".join(f"{n} {names[t][n != 1]}" for t, n in left.items() if t in names)
    return {"problem": f"{what} stored by an older remem may still hold secrets (API keys, tokens, "
                       "passwords) that recall can hand to agents; the next sleep redacts them",
            "fix": "remem sleep   (or let the nightly sleep do it)"}


def _no_lessons_problem(waits: dict[str, int] | None, last_sleep: str | None) -> dict[str, str]:
    """No active lesson: why, and what to run only when running something would help, in the
    words `remem lessons list` uses (lessons_pass.no_lessons_why)."""
    from remem.engine.lessons_pass import no_lessons_why

    said = no_lessons_why(waits, bool(last_sleep), detail=False)
    return {"problem": f"no active lessons yet, so hooks have nothing to show: {said['why']}",
            "fix": str(said["fix"])}


def _nothing_to_run(problem: dict[str, str]) -> bool:
    """The no-lessons line whose fix names no command (no_lessons_why's "run" is None)."""
    return problem["problem"].startswith("no active lessons yet") and problem["fix"].startswith("nothing to run")


def _verdict(out: dict[str, Any]) -> dict[str, Any]:
    out["ok"] = not any(p["fix"].startswith(("remem restore", "remem backup", "remem doctor", _NO_GOOD_BACKUP))
                        for p in out["problems"])
    return out


def repair_fts() -> list[str]:
    from remem.engine.store import Store

    with Store() as store, store.write() as conn:
        for table in ("episodes_fts", "lessons_fts"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES('rebuild')")
    return ["episodes_fts", "lessons_fts"]


def failed_open(stderr: str) -> str | None:
    """Why a hook did nothing, from what it said on stderr; None when it said no such thing.

    A hook fails open (remem/hooks, remem/entry.py): whatever stops it, it exits 0 with
    nothing (or the agent's neutral answer) on stdout, which looks like a hook that had
    nothing to show, and says why in one line: `remem hook: prompt (claude-code) skipped:
    REASON`, `remem: hook skipped: REASON`, or `remem hook: USAGE PROBLEM`. Hooks wired to an
    older install still on disk say so after the memory was upgraded ("written by a newer
    remem")."""
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith(("remem hook: ", "remem: hook skipped: ")):
            return line.split("skipped: ", 1)[1] if "skipped: " in line else line.split(": ", 1)[1]
    return None


def run_hook(command_text: str, event: str, timeout: float = 10.0) -> dict[str, Any]:
    """Run a wired hook command once with a harmless sample payload; time it."""
    payload = json.dumps(SAMPLES.get(event, {}))
    env = dict(os.environ, REMEM_HOOK_PREVIEW="1")
    start = time.monotonic()
    try:
        res = subprocess.run(command_text, shell=True, input=payload, capture_output=True,
                             text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "ms": round(timeout * 1000), "error": f"no answer in {timeout:.0f} s"}
    except OSError as exc:
        return {"ok": False, "ms": None, "error": str(exc)}
    ms = round((time.monotonic() - start) * 1000, 1)
    error = None
    skipped = failed_open(res.stderr or "")
    if res.returncode != 0:
        error = f"exit {res.returncode}: {(res.stderr or '').strip()[:200]}"
    elif skipped:
        error = f"it did nothing: {skipped}"[:300]
    elif res.stdout.strip():
        try:
            json.loads(res.stdout)
        except ValueError:
            error = f"stdout is not JSON: {res.stdout.strip()[:120]!r}"
    return {"ok": error is None, "ms": ms, "error": error, "reason": skipped}


def _event_of(command_text: str) -> str | None:
    words = shlex.split(command_text) if command_text else []
    if "hook" in words:
        i = words.index("hook")
        if i + 1 < len(words) and words[i + 1] in _EVENT:
            return words[i + 1]
    return None


def _program(command_text: str) -> Path | None:
    """The program a command runs, as a resolved path (None when it names none there is)."""
    try:
        first = shlex.split(command_text)[0]
    except (ValueError, IndexError):
        return None
    found = first if os.sep in first else shutil.which(first)
    return Path(found).resolve() if found else None


def _other_install(command_text: str) -> str:
    """", it runs PROGRAM, not this install's PROGRAM" when the hook runs another remem (an
    older install left on disk, which cannot read a memory this one upgraded); "" otherwise."""
    from remem.engine.setup_edit import remem_argv

    theirs, ours = _program(command_text), _program(shlex.join(remem_argv()))
    if theirs is None or ours is None or theirs == ours:
        return ""
    return f"; it runs {theirs}, not this install's {ours}"


def wired_home(command_text: str) -> Path | None:
    """The memory a wired command uses: its `--home DIR` (before the subcommand), else the
    default one; None when the command cannot be read."""
    try:
        words = shlex.split(command_text)
    except ValueError:
        return None
    for i, word in enumerate(words[1:], 1):
        if word == "--home" and i + 1 < len(words):
            return Path(os.path.abspath(Path(words[i + 1]).expanduser()))
        if word.startswith("--home="):
            return Path(os.path.abspath(Path(word[len("--home="):]).expanduser()))
        if word in ("hook", "serve"):
            break
    return paths.user_home() / ".remem"


def _same_place(a: Path, b: Path) -> bool:
    return a == b or a.resolve() == b.resolve()


def _elsewhere(wiring: list[dict[str, Any]], job: str | None) -> list[dict[str, str]]:
    """The wired commands (and the nightly job) that use another memory than the one doctor
    checks (setup run with REMEM_HOME set, doctor without it, or the other way round): one
    problem per memory."""
    here = paths.home()
    others: dict[Path, list[str]] = {}
    wired = [(w["agent"], cmd) for w in wiring
             for cmd in [h["command"] for h in w["hooks"]] + [w["server"]] * bool(w.get("server"))]
    for what, cmd in wired + [("the nightly job", job)] * bool(job):
        home = wired_home(cmd)
        if home is not None and not _same_place(home, here) and what not in others.get(home, []):
            others.setdefault(home, []).append(what)
    return [{"problem": f"remem is wired to the memory at {home} in {', '.join(agents)}, not to the one "
                        f"this doctor checks ({here})",
             "fix": f"remem --home {shlex.quote(str(home))} doctor"} for home, agents in others.items()]


def _unwirable(w: dict[str, Any]) -> dict[str, str]:
    """The file `remem setup --agent` would stop at (setup.wiring's setup_error), as that agent's
    problem, with the fix that works: the file mended (the key named, and what to make it),
    then the setup."""
    from remem.engine.setup_json import mend

    path, error, agent = w["path"], w["setup_error"], w["agent"]
    # What is wrong, without the advice that follows it (a path holding "; " kept whole).
    what = error.replace(path, "\0").partition("; ")[0].replace("\0", path)
    advice = error.replace(path, "").partition("; ")[2]
    told = re.sub(r",? (?:and |then )*run `remem setup` again$", "", advice)
    how = mend(error) or told or "fix it by hand"
    return {"problem": f"{agent} cannot be wired: {what}",
            "fix": f"edit {path}: {how}; then remem setup --agent {agent}"}


def _hook_budget_problem() -> dict[str, str] | None:
    """prime.timeout_ms past what a prompt, pre-tool or stop hook may spend (config.
    hook_budget_cap_ms, less than the timeout `remem setup` gives the agents): they use the cap."""
    from remem import config

    try:
        wanted = float(config.get("prime.timeout_ms"))
    except Exception:  # an unreadable config is reported on its own
        return None
    cap = config.hook_budget_cap_ms()
    if wanted <= cap:
        return None
    if config.hook_cap_override() is not None:  # the test-only variable sets the cap, not the agents
        return {"problem": f"prime.timeout_ms is {wanted:g} ms, but {config.HOOK_CAP_ENV}={cap} (a setting "
                           f"for tests) is set here, so hooks give up at {cap} ms instead",
                "fix": f"unset {config.HOOK_CAP_ENV}"}
    return {"problem": f"prime.timeout_ms is {wanted:g} ms, but agents stop a hook after "
                       f"{config.HOOK_TIMEOUT_S} s (as `remem setup` wires them), so hooks give up "
                       f"at {cap} ms instead",
            "fix": f"remem config set prime.timeout_ms {cap}"}


def diagnose(*, run_hooks: bool = True) -> dict[str, Any]:
    """Everything doctor reports, with a flat list of problems and their fixes."""
    problems: list[dict[str, str]] = []
    wiring = setup.wiring()
    found = set(setup.found_agents())
    hooks_run: list[dict[str, Any]] = []
    seen: set[str] = set()
    # Agents whose `remem setup --agent` would stop at a file (a key of another shape): that
    # file is their problem, and mending it comes before any setup.
    unwirable = {w["agent"]: _unwirable(w) for w in wiring if w.get("setup_error")}
    for w in wiring:
        if w["error"]:
            problems.append({"problem": w["error"], "fix": f"fix {w['path']} by hand"})
        if w.get("server") and missing_program(w["server"]) is not None:
            problems.append({"problem": f"{w['agent']}'s MCP server runs a missing program: {w['server']} "
                                        f"(in {w['path']})",
                             "fix": f"remem setup --agent {w['agent']}"})
        for h in w["hooks"]:
            cmd = h["command"]
            event = _event_of(cmd)
            if missing_program(cmd) is not None:
                problems.append({"problem": f"{w['agent']} hook {h['event']} runs a missing program: {cmd}",
                                 "fix": f"remem setup --agent {w['agent']}"})
                continue
            if not run_hooks or cmd in seen or event not in SAMPLES:
                continue
            seen.add(cmd)
            result = run_hook(cmd, event)
            hooks_run.append({"agent": w["agent"], "event": h["event"], "command": cmd, **result})
            if not result["ok"]:
                reason = result.get("reason") or ""
                if f"no memory yet at {paths.db_path()};" in reason:
                    continue  # the store check below says it once, with its fix (`remem ingest`)
                # A reason that names its own command (other than setup) is fixed by it;
                # otherwise `remem setup --agent` wires this install's command (another one
                # left on disk, as after an upgrade into a new place, is replaced).
                named = re.search(r"`remem ([^`]+)`", reason)
                home = wired_home(cmd)
                fix = (f"remem {named.group(1)}" if named and not named.group(1).startswith("setup")
                       else f"remem setup --agent {w['agent']}")
                if not named and "past the hook's budget" in reason:
                    # Already given the most time an agent waits (the hook's line says so):
                    # no setting nor setup makes it faster.
                    fix = "top   (find what keeps this machine busy: hooks may take no longer)"
                if (named and home is not None and not _same_place(home, paths.home())
                        and not named.group(1).startswith("--home ")):  # not named by the hook itself
                    fix = f"remem --home {shlex.quote(str(home))} {named.group(1)}"  # the hook's memory
                problems.append({"problem": f"{w['agent']} hook {h['event']} failed: {result['error']}"
                                            + _other_install(cmd), "fix": fix})
    for agent, mended in unwirable.items():
        setup_fix = f"remem setup --agent {agent}"
        needed = [p for p in problems if p["fix"] == setup_fix]
        for p in needed:  # that fix would stop at the file: mend it first
            p["fix"] = mended["fix"]
        if needed or agent in found:
            problems.append(mended)
    agents = []
    notes: list[str] = []
    removed = setup.removed_agents()
    for agent in setup.AGENTS:
        rows = [w for w in wiring if w["agent"] == agent]
        mcp = any(w["mcp"] for w in rows)
        hooks = sorted({h["event"] for w in rows for h in w["hooks"]})
        agents.append({"agent": agent, "found": agent in found, "mcp": mcp, "hooks": hooks,
                       "files": [w["path"] for w in rows if w["exists"]]})
        if agent not in found or agent in unwirable or any(w["error"] for w in rows):
            continue
        off = next((w for w in rows if w.get("hooks_off")), None)
        if off is not None and hooks:
            # Wired, and the agent itself keeps every hook from running: the switch is named.
            key = "[features] hooks" if agent == "codex" else '"disableAllHooks"'
            problems.append({"problem": off["hooks_off"],
                             "fix": f"set {key} to {'true' if agent == 'codex' else 'false'} in {off['path']}"})
        if not mcp and not hooks:
            if agent in removed:  # taken out on purpose: said, not a problem
                notes.append(f"{agent}: remem was taken out with `remem setup --remove`; "
                             f"`remem setup --agent {agent}` wires it again")
                continue
            problems.append({"problem": f"{agent} is installed but remem is not wired into it",
                             "fix": f"remem setup --agent {agent}"})
        elif not mcp:
            problems.append({"problem": f"{agent} runs remem's hooks but has no remem MCP server",
                             "fix": f"remem setup --agent {agent}"})
        elif agent in setup.HOOK_AGENTS and not hooks:
            # Its settings replaced or deleted since setup: the MCP server alone injects nothing.
            problems.append({"problem": f"{agent} has remem's MCP server but none of its hooks",
                             "fix": f"remem setup --agent {agent}"})
    from remem import config, config_unknown
    from remem.errors import RememError

    try:
        config.load()
    except RememError as exc:  # every command stops at it, and every hook quietly does nothing
        problems.append({"problem": str(exc), "fix": f"edit {paths.config_path()}, or move it aside"})
    else:
        budget = _hook_budget_problem()
        if budget:
            problems.append(budget)
        unknown = config_unknown.unknown_problem()  # a misspelt key: loads, and nothing uses it
        if unknown:
            problems.append(unknown)
        # A model that cannot be loaded stops every command that embeds or recalls, and every
        # hook quietly shows nothing: load it once, as they would (offline, like them).
        from remem.engine.embed import model_problem

        embed_problem = model_problem()
        if embed_problem:
            problems.append(embed_problem)
    if paths.is_demo():
        # The demo keeps agent homes of its own and refuses `remem setup`: its agents and its
        # nightly job are not this memory's to wire, so they are not problems to fix here.
        mend_first = {m["fix"] for m in unwirable.values()}  # they end in a `remem setup` too
        problems = [p for p in problems
                    if not p["fix"].startswith("remem setup") and p["fix"] not in mend_first]
        notes.append(f"{paths.home()} is the demo memory (`remem demo`): agents and the nightly job "
                     "are not checked; `remem setup` without --home (or with REMEM_HOME unset) wires "
                     "your own memory")
    store = store_health()
    # No lesson yet with nothing to run (a fresh memory, or one whose sessions held nothing to
    # learn from) is how a memory starts, not a fault: a note. One a sleep would mend stays a problem.
    nothing_yet = [p for p in store["problems"] if _nothing_to_run(p)]
    store["problems"] = [p for p in store["problems"] if not _nothing_to_run(p)]
    notes.extend(f"{p['problem']}; {p['fix']}" for p in nothing_yet)
    problems.extend(store["problems"])
    backups = backups_folder_problem()  # said first: `remem backup` cannot mend the rest
    if backups is None and store["ok"]:
        backups = nightly_backup_problem()
    if backups:
        problems.append(backups)
    schedule = schedule_state()
    elsewhere = _elsewhere(wiring, schedule.get("command") if schedule["wired"] else None)
    problems[:0] = elsewhere  # first: every other line of this report is about the memory it checks
    off = setup.schedule_off()
    if paths.is_demo():
        pass  # said in the notes above
    elif not schedule["wired"] and off:
        # Left out on purpose (SETUP.md): said, not a problem whose fix adds what was declined.
        schedule["off"] = off
        again = (schedule.get("fix") if schedule.get("state") == "no scheduler on this machine"
                 else "`remem setup` schedules it" + " again" * (off == "removed"))
        notes.append(f"the nightly sleep is not scheduled: {setup.SCHEDULE_OFF[off]}; {again}")
    elif not schedule["wired"] and schedule.get("commented"):
        problems.append({"problem": "the nightly sleep is turned off: its crontab line is commented out",
                         "fix": "crontab -e   (uncomment the line marked `# remem: nightly sleep`)"})
    elif not schedule["wired"]:
        problems.append({"problem": schedule.get("problem") or "the nightly sleep is not scheduled",
                         "fix": schedule.get("fix") or "remem setup"})
    else:
        if schedule.get("missing"):
            problems.append({"problem": f"the nightly job runs a missing program: {schedule['missing']}",
                             "fix": "remem setup   (writes the job with this install's remem)"})
        if not schedule.get("ingests", True):
            problems.append({"problem": "the nightly job sleeps without ingesting first, so the inbox "
                                        "and sessions whose SessionEnd hook never fired are never read",
                             "fix": "remem setup   (the job then runs remem ingest, then remem sleep)"})
        job_home = wired_home(schedule["command"]) if schedule.get("command") else None
        if not paths.logs_dir().is_dir() and (job_home is None or _same_place(job_home, paths.home())):
            # The scheduled line appends to a log there; the shell refuses a missing folder, so
            # the sleep would never start.
            problems.append({"problem": f"the nightly sleep logs to {paths.logs_dir()}, which does not exist",
                             "fix": f"mkdir -p {paths.logs_dir()}   (or run remem setup again)"})
    return {"agents": agents, "hooks": hooks_run, "store": store, "schedule": schedule,
            "problems": problems, "notes": notes, "ok": not problems}
