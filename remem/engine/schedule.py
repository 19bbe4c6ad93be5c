"""The nightly schedule `remem setup` writes: a crontab line, or a systemd user timer where
there is no crontab, running `remem ingest` then `remem sleep`; and how it is applied.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from remem import paths
from remem.engine.setup_edit import Edit, command, not_utf8, read_config, save_backup, sha

SCHEDULE = "schedule"
CRON_MARK = "# remem: nightly sleep"
CRON_TIME = "17 3 * * *"
SYSTEMD_UNITS = ("remem-sleep.service", "remem-sleep.timer")


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


DISABLED_NOTE = ("the nightly line in your crontab is commented out, so setup leaves it off; to turn "
                 "it on, uncomment it (`crontab -e`), or delete it and run `remem setup` again")


def is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


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


def schedule_edits(remove: bool, manifest: dict[str, Any]) -> list[Edit]:
    """The crontab line (or, with no crontab, the systemd user units) to write or take out."""
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
                before = read_config(path)
            except UnicodeDecodeError as exc:
                edits.append(Edit(SCHEDULE, str(path), None, None, error=not_utf8(path, exc)))
                continue
            edits.append(Edit(SCHEDULE, str(path), before, None if remove else text,
                              what=["nightly ingest and sleep (systemd user timer)"]))
        return edits
    return [Edit(SCHEDULE, "crontab", None, None, kind="crontab",
                 error="no crontab or systemctl found; run `remem ingest; remem sleep` nightly yourself")]


def apply_crontab(e: Edit, manifest: dict[str, Any], remove: bool) -> None:
    """Install the edit's crontab, the old one backed up first; the manifest records it."""
    if e.before is not None:
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
    gone): disable the timer; what was done."""
    error = _systemctl("disable", "--now", SYSTEMD_UNITS[1])
    return {"target": SCHEDULE, "path": "systemctl --user", "changed": not error, "what": ["timer disabled"],
            "error": f"systemctl: {error}; the units stay: run `systemctl --user disable --now "
                     f"{SYSTEMD_UNITS[1]}`, then `remem setup --remove` again" if error else None}


def systemctl_reload() -> str | None:
    """After --remove deleted the units; the error, if any."""
    error = _systemctl("daemon-reload")
    return f"systemctl: {error}; run `systemctl --user daemon-reload`" if error else None
