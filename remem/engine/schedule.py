"""The nightly schedule `remem setup` writes: a crontab line, or a systemd user timer where
there is no crontab, running `remem ingest` then `remem sleep`; how it is applied; and its
state as the scheduler itself reports it (`schedule_state`, for status checks).

A machine may have neither a crontab nor a systemd user manager that answers (containers,
WSL, CI): there nothing is written that could not run, and a note names what works.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from remem import paths
from remem.engine.setup_edit import Edit, command, read_config, save_backup, sha, unreadable

SCHEDULE = "schedule"
CRON_MARK = "# remem: nightly sleep"
CRON_TIME = "17 3 * * *"
SYSTEMD_UNITS = ("remem-sleep.service", "remem-sleep.timer")


def nightly_command() -> str:
    """The shell text of the nightly job: read what is new, then consolidate it.

    Sleep reads nothing by itself, and the SessionEnd hooks cover only sessions that ended
    cleanly (and, for Codex, once its hooks are trusted): without the ingest, the inbox (proxy
    recordings) and any session whose hook never fired would never be read. `;`, not `&&`: a failed ingest (one
    unreadable file, a busy store) must not cost the night's consolidation of everything
    already stored, so sleep runs whatever ingest did. The job's status is sleep's; both
    append to one log."""
    log = shlex.quote(str(paths.logs_dir() / "sleep.log"))
    return (f"{command('ingest', '--quiet')} >> {log} 2>&1; "
            f"{command('sleep', '--quiet')} >> {log} 2>&1")


DISABLED_NOTE = ("the nightly line in your crontab is commented out, so setup leaves it off; to turn "
                 "it on, uncomment it (`crontab -e`), or delete it and run `remem setup` again")


def is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def cron_line() -> str:
    # Found again by CRON_MARK alone, so the line of an earlier release (sleep only) is
    # replaced in place, never doubled. Cron turns a bare `%` into a newline (a home named
    # `50%`): each is written `\%`, which cron gives the shell as `%`.
    job = nightly_command().replace("%", "\\%")
    return f"{CRON_TIME} {job} {CRON_MARK}"


def _cron_command(line: str) -> str:
    """The shell text a crontab line runs: after its five time fields, `\\%` as cron reads it."""
    fields = line.split(None, 5)
    return fields[5].replace("\\%", "%") if len(fields) == 6 else ""


def _exec_command(line: str) -> str:
    """The shell text an `ExecStart=/bin/sh -c '…'` line runs, `%%` as systemd reads it."""
    try:
        words = shlex.split(line.split("=", 1)[1].replace("%%", "%"))
    except (ValueError, IndexError):
        return ""
    return words[2] if words[:2] == ["/bin/sh", "-c"] and len(words) > 2 else ""


def missing_program(command_text: str) -> str | None:
    """The program a command (a nightly job's shell text, a wired hook or server) runs first,
    when it is not there (an install moved or deleted since setup wrote it); the whole text when
    it cannot be read (unbalanced quotes: nothing can run it); None when it is there, or the
    text names nothing."""
    try:
        first = shlex.split(command_text)[0]
    except ValueError:
        return command_text
    except IndexError:
        return None
    if "/" in first:
        return None if Path(first).exists() else first
    return None if shutil.which(first) else first


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


def schedule_edits(remove: bool, manifest: dict[str, Any]) -> list[Edit]:
    """The crontab line (or, with no crontab, the systemd user units) to write or take out.
    Where neither can run the job (no crontab, and no systemctl or no user manager), none is
    written: a note says so and names what works."""
    if shutil.which("crontab"):
        try:
            before = read_crontab()
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            return [Edit(SCHEDULE, "crontab", None, None, kind="crontab",
                         error=f"{exc}; add `{cron_line()}` to your crontab yourself")]
        lines = (before or "").splitlines(keepends=True)
        mine = [l for l in lines if CRON_MARK in l]
        if remove:
            rest = [l for l in lines if CRON_MARK not in l]
            rec = manifest.get("crontab") or {}
            if mine and rec and rec.get("exact", True) and sha(before) == rec.get("written"):
                return [Edit(SCHEDULE, "crontab", before, rec.get("original"), kind="crontab",
                             what=["nightly ingest and sleep"], restore=True)]
            after = "".join(rest) if mine else before
            return [Edit(SCHEDULE, "crontab", before, after if after else (None if mine else before),
                         kind="crontab", what=["nightly ingest and sleep"] if mine else [])]
        # A marked line the person commented out is their choice to turn the job off: setup
        # leaves it (and adds none) until they take it out or uncomment it.
        active = [l for l in mine if not is_comment(l)]
        if mine and not active:
            return [Edit(SCHEDULE, "crontab", before, before, kind="crontab", note=DISABLED_NOTE)]
        want = cron_line() + "\n"
        if active == [want]:
            return [Edit(SCHEDULE, "crontab", before, before, kind="crontab")]
        body = "".join(l for l in lines if l not in active)
        if body and not body.endswith("\n"):
            body += "\n"
        return [Edit(SCHEDULE, "crontab", before, body + want, kind="crontab", what=["nightly ingest and sleep"])]
    if remove:
        # The units are taken out also where no user manager answers now (apply() then deletes
        # them without systemd); with no scheduler at all there is nothing else of setup's.
        edits = _unit_edits(remove=True)
        if manifest.get("crontab"):
            edits.append(Edit(SCHEDULE, "crontab", None, None, kind="crontab",
                              error=f"setup added a line to your crontab, but there is no crontab command "
                                    f"on PATH now; take out the line marked `{CRON_MARK}` yourself"))
        return edits
    # With no scheduler to use, the rest of setup is still whole: what the machine lacks is said
    # as a note (setup exits 0), and the nightly job is left to the person.
    if not shutil.which("systemctl"):
        return [Edit(SCHEDULE, "crontab", None, None, kind="crontab",
                     note=unschedulable("there is no crontab or systemctl command on this machine"))]
    manager = user_manager_problem()
    if manager and enable_link().is_symlink():
        # Enabled where a manager did answer (a login session; this shell is su or sudo): it
        # runs there, and is left as it is.
        return [Edit(SCHEDULE, "systemctl --user", None, None, kind="crontab",
                     note=f"systemd's user manager does not answer here ({manager}), so setup leaves the "
                          f"enabled nightly timer as it is; run `remem setup` in a login session to update it")]
    if manager:
        # No user manager (a container, WSL, CI, a shell without a login session): `enable
        # --now` would fail, and a timer written anyway never runs. So none is written, and
        # the units an earlier setup wrote here (never enabled) go again.
        return [Edit(SCHEDULE, "systemctl --user", None, None, kind="crontab",
                     note=unschedulable(f"there is no crontab command, and systemd's user manager does "
                                         f"not answer ({manager})", linger=True)),
                *_stale_units(manifest)]
    edits = _unit_edits(remove=False)
    if edits and not any(e.changed or e.error for e in edits) and not timer_enabled():
        # Units as setup writes them, with the timer turned off: like a commented-out cron
        # line, the person's choice, which setup leaves as it is.
        edits[-1].note = TIMER_OFF_NOTE
    return edits


def _unit_texts() -> tuple[str, str]:
    service = (
        "[Unit]\nDescription=remem nightly ingest and sleep (read new sessions, "
        "consolidate memories into lessons)\n\n"
        # One shell, as in the crontab: a second ExecStart line would not run after a failed
        # ingest (unless marked `-`), and both schedulers run the same text.
        # `%%`: systemd reads `%h` and the like in ExecStart as specifiers (a home named `50%`).
        f"[Service]\nType=oneshot\nExecStart=/bin/sh -c {shlex.quote(nightly_command()).replace('%', '%%')}\n"
    )
    timer = (
        "[Unit]\nDescription=Run remem ingest and sleep every night\n\n"
        "[Timer]\nOnCalendar=*-*-* 03:17:00\nPersistent=true\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )
    return service, timer


def _unit_edits(remove: bool) -> list[Edit]:
    """The systemd user units as they are and as setup (or --remove) wants them."""
    unit_dir = paths.systemd_user_dir()
    edits = []
    for name, text in zip(SYSTEMD_UNITS, _unit_texts()):
        path = unit_dir / name
        try:
            before = read_config(path)
        except (OSError, UnicodeDecodeError) as exc:  # a folder in its place, no permission
            edits.append(Edit(SCHEDULE, str(path), None, None, error=unreadable(path, exc)))
            continue
        edits.append(Edit(SCHEDULE, str(path), before, None if remove else text,
                          what=["nightly ingest and sleep (systemd user timer)"]))
    return edits


def _stale_units(manifest: dict[str, Any]) -> list[Edit]:
    """The units setup created earlier, never enabled and unchanged since, where no user
    manager can run them: deleted again. Units setup did not create, or that were changed
    since, stay."""
    files = manifest.get("files") or {}
    edits = []
    for path in (paths.systemd_user_dir() / name for name in SYSTEMD_UNITS):
        rec = files.get(str(path)) or {}
        try:
            before = read_config(path)
        except (OSError, UnicodeDecodeError):
            continue
        if (before is not None and rec.get("created") and sha(before) == rec.get("written")
                and not enable_link().is_symlink()):
            edits.append(Edit(SCHEDULE, str(path), before, None, restore=True,
                              what=["a systemd timer nothing runs here"]))
    return edits


def _own_job() -> str:
    """The nightly job as the person's own scheduler would run it."""
    return f"`{command('ingest', '--quiet')}; {command('sleep', '--quiet')}`"


def unschedulable(why: str, linger: bool = False) -> str:
    """One line: why the nightly job cannot be scheduled here, and what works instead."""
    text = (f"the nightly sleep could not be scheduled: {why}. Run {_own_job()} nightly from a scheduler "
            f"of your own, and `remem setup --no-schedule` from then on")
    if linger and systemd_runs_here():
        # systemd runs the machine, but this shell has no user session (su, sudo, some ssh
        # setups): lingering starts the person's own manager.
        text += (", or start your user manager (`loginctl enable-linger $USER`, then log in again) "
                 "and run `remem setup` again")
    return text


TIMER_OFF_NOTE = (f"the nightly timer is written but not enabled, so setup leaves it off; to turn it on, "
                  f"run `systemctl --user enable --now {SYSTEMD_UNITS[1]}`")


def systemd_runs_here() -> bool:
    """Whether systemd is this machine's init (its own test, as sd_booted does)."""
    return Path("/run/systemd/system").is_dir()


def user_manager_problem() -> str | None:
    """Why systemd's user manager cannot run a timer here (e.g. "Failed to connect to bus: No
    medium found"); None when it answers. Containers, WSL and CI machines often have
    systemctl but no user bus."""
    if not shutil.which("systemctl"):
        return "no systemctl command on PATH"
    return _systemctl("show-environment")


def enable_link() -> Path:
    """The link `systemctl --user enable` makes for the timer (its [Install] WantedBy): there
    exactly when the timer is enabled, readable with no user manager."""
    return paths.systemd_user_dir() / "timers.target.wants" / SYSTEMD_UNITS[1]


def timer_enabled() -> bool:
    """Whether systemd says the timer is enabled (answered from the unit files, also where no
    user manager runs, so on its own it does not mean the timer ever fires)."""
    return shutil.which("systemctl") is not None and _systemctl("is-enabled", SYSTEMD_UNITS[1]) is None


def apply_crontab(e: Edit, manifest: dict[str, Any], remove: bool, *, backup: bool = True) -> None:
    """Install the edit's crontab, the old one backed up first (unless `backup` is False: a
    --remove with $REMEM_HOME gone); the manifest records it."""
    if e.before is not None and backup:
        save_backup(Path("crontab"), e.before)
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
        if rec is not None and rec.get("written") != sha(e.before):
            # Changed by someone else since setup wrote it (a line the person added before an
            # upgrade rewrote remem's line): the first original is no longer a safe restore
            # point, so --remove will only take out remem's line.
            rec = {"original": None, "exact": False}
        if rec is None and CRON_MARK in (e.before or ""):
            # remem's line was there before this setup (an earlier install, another REMEM_HOME):
            # that crontab is no clean restore point, so --remove only takes remem's line out.
            rec = {"original": None, "exact": False}
        rec = rec or {"original": e.before}
        rec["written"] = sha(e.after)
        manifest["crontab"] = rec


def _systemctl(*args: str) -> str | None:
    """Run `systemctl --user ARGS`; the first line of what went wrong, or None."""
    try:
        res = subprocess.run([shutil.which("systemctl") or "systemctl", "--user", *args],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if res.returncode == 0:
        return None
    return (res.stderr or "").strip().splitlines()[0] if (res.stderr or "").strip() else f"exit {res.returncode}"


def systemctl_timer() -> dict[str, Any]:
    """After setup wrote the units: reload them and enable the timer; what was done."""
    error = _systemctl("daemon-reload") or _systemctl("enable", "--now", SYSTEMD_UNITS[1])
    return {"target": SCHEDULE, "path": "systemctl --user", "changed": not error, "what": ["timer enabled"],
            "error": f"systemctl: {error}; run `systemctl --user daemon-reload && systemctl --user "
                     f"enable --now {SYSTEMD_UNITS[1]}`" if error else None}


def disable_timer() -> dict[str, Any]:
    """Before --remove deletes the units (systemd refuses to disable a unit whose file is
    gone): disable the timer; what was done. Where no user manager answers, `disable --now`
    cannot work and nothing else can stop the timer: the units go anyway, with a note;
    "manager" says whether to reload systemd afterwards."""
    error = _systemctl("disable", "--now", SYSTEMD_UNITS[1])
    done: dict[str, Any] = {"target": SCHEDULE, "path": "systemctl --user", "changed": not error,
                            "what": ["timer disabled"], "error": None, "note": None, "manager": True}
    if not error:
        return done
    manager = user_manager_problem()
    if manager is None:
        # The manager answers, so the failure is something else: the units stay, so the
        # command named still works.
        done["error"] = (f"systemctl: {error}; the units stay: run `systemctl --user disable --now "
                         f"{SYSTEMD_UNITS[1]}`, then `remem setup --remove` again")
        return done
    # Nothing can stop the timer through a manager: the units go, and the enable link with
    # them (offline systemctl takes it out where systemd is not the init; else by hand).
    enabled = enable_link().is_symlink()
    _systemctl("disable", SYSTEMD_UNITS[1])
    if enable_link().is_symlink():
        enable_link().unlink()
    note = (f"systemd's user manager does not answer here ({manager}), so the nightly timer could not "
            f"be disabled through it: its units are deleted instead")
    if enabled and systemd_runs_here():
        note += "; a user manager running in another session drops it at its next `systemctl --user daemon-reload`"
    done.update(changed=True, manager=False, what=["timer units deleted"], note=note)
    return done


def systemctl_reload() -> str | None:
    """After --remove deleted the units; the error, if any."""
    error = _systemctl("daemon-reload")
    return f"systemctl: {error}; run `systemctl --user daemon-reload`" if error else None


# --------------------------------------------------------------------------- state (doctor)

def _ingests(text: str) -> bool:
    # An earlier release's job ran `remem sleep` alone.
    return bool(re.search(r"\bingest\b", text))


def schedule_state() -> dict[str, Any]:
    """What runs the nightly job now, as the scheduler itself says: the crontab line there
    (and not commented out), or a systemd timer that is enabled and has a user manager to
    run it. "wired" is whether it will run; "state" says how things stand in a few words;
    when it will not run, "problem" and "fix" name why and what works on this machine."""
    if shutil.which("crontab"):
        try:
            text = read_crontab() or ""
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:  # reported, never raised
            return {"wired": False, "how": "crontab", "state": "crontab unreadable", "error": str(exc)}
        marked = [line for line in text.splitlines() if CRON_MARK in line]
        mine = [line for line in marked if not is_comment(line)]  # a commented-out line never runs
        state = ("crontab line present" if mine else "crontab line commented out" if marked
                 else "no crontab line")
        missing = next((m for m in (missing_program(_cron_command(l)) for l in mine) if m), None)
        if missing:
            state += ", but the program it runs is missing"
        return {"wired": bool(mine), "how": "crontab", "state": state, "missing": missing,
                "command": _cron_command(mine[0]) if mine else None,
                "ingests": all(_ingests(l) for l in mine), "commented": len(marked) - len(mine)}
    own = _own_job()
    if not shutil.which("systemctl"):
        return {"wired": False, "how": "none", "state": "no scheduler on this machine",
                "problem": "the nightly sleep is not scheduled: this machine has no crontab or systemctl command",
                "fix": f"run {own} nightly from a scheduler of your own"}
    unit = paths.systemd_user_dir() / SYSTEMD_UNITS[1]
    service = paths.systemd_user_dir() / SYSTEMD_UNITS[0]
    try:
        starts = [l for l in service.read_text(encoding="utf-8", errors="replace").splitlines()
                  if l.startswith("ExecStart")]
    except OSError:
        starts = []  # no service to read: reported as not wired, or by systemd itself
    ingests = not starts or _ingests("\n".join(starts))
    missing = next((m for m in (missing_program(_exec_command(l)) for l in starts) if m), None)
    out: dict[str, Any] = {"wired": False, "how": "systemd", "path": str(unit), "ingests": ingests,
                           "missing": missing, "command": _exec_command(starts[0]) if starts else None}
    manager = user_manager_problem()
    if manager:
        if unit.exists() and enable_link().is_symlink():
            # It may run in a login session; from here, nothing says it does.
            out.update(state=f"enabled, but no user manager answers here ({manager})",
                       problem=f"the nightly timer is enabled, but systemd's user manager does not answer "
                               f"here ({manager}), so it runs only where one does",
                       fix="remem doctor   (in a login session, to check it there)")
        elif unit.exists():
            out.update(state="written but not enabled: no user manager runs it",
                       problem=f"the nightly sleep never runs: its systemd timer is written, but systemd's "
                               f"user manager does not answer ({manager})",
                       fix="remem setup   (names what works here, and takes out a timer it wrote that nothing runs)")
        else:
            out.update(state="no scheduler on this machine",
                       problem=f"the nightly sleep is not scheduled: there is no crontab command, and "
                               f"systemd's user manager does not answer ({manager})",
                       fix=f"run {own} nightly from a scheduler of your own"
                           + (", or `loginctl enable-linger $USER`, log in again and run remem setup"
                              if systemd_runs_here() else ""))
        return out
    if not unit.exists():
        return {**out, "state": "no timer written"}
    if not timer_enabled():
        return {**out, "state": "written but not enabled", "problem": "the nightly timer is written but not enabled",
                "fix": f"systemctl --user enable --now {SYSTEMD_UNITS[1]}"}
    return {**out, "wired": True,
            "state": "timer enabled" + (", but the program it runs is missing" if missing else "")}
