"""Expected failures: each carries a one-line message that names the fix."""

from __future__ import annotations

from typing import Any


class RememError(Exception):
    """An expected failure. The CLI prints `remem: <message>` on stderr and exits 1."""


class ConfigError(RememError):
    pass


class StoreError(RememError):
    """The memory cannot be opened or used. `fix`: the command that fixes it (for `remem
    doctor`), when it is not the usual `remem restore`."""

    def __init__(self, message: str = "", *, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


class NotFound(RememError):
    pass


class LessonNotMemory(NotFound):
    """A lesson's id given where a memory's was expected (`remem recall` lists both, ids alike):
    `lesson_id` names it, so that each command can say what fits it."""

    def __init__(self, message: str, lesson_id: str) -> None:
        super().__init__(message)
        self.lesson_id = lesson_id


def _problem_kind(text: str) -> str | None:
    if "locked" in text or "busy" in text:
        return "busy"
    if "readonly" in text or "read-only" in text:
        return "readonly"
    if "disk is full" in text or "disk full" in text:
        return "full"
    if "disk i/o" in text:
        return "io"
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return "damaged"
    if "unable to open" in text:
        return "cannot-open"
    return None


def store_problem(exc: BaseException, db: Any = None) -> tuple[str, str, str] | None:
    """SQLite's failure on the memory `db` (default: the live one) as (kind, one line naming
    the fix, the fix alone), or None when it is not one of these: busy, readonly, full (disk),
    io (disk I/O error), damaged, cannot-open. An OSError EROFS (a write to a read-only
    filesystem) is readonly too."""
    import errno
    import sqlite3

    from pathlib import Path

    from remem import paths

    if isinstance(exc, OSError) and exc.errno == errno.EROFS:
        named = exc.filename if isinstance(exc.filename, str) and exc.filename else db
        where = Path(named).absolute() if named is not None else paths.db_path()
        home = paths.home()
        advice, fix = readonly_advice(where, read_only_mount(where) or _existing_above(where),
                                      memory=where == home or home in where.parents)
        return "readonly", f"{where} is on a read-only filesystem ({exc.strerror or exc}); {advice}", fix
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    kind = _problem_kind(str(exc).lower())
    if kind is None:
        return None
    if isinstance(exc, StoreError) and str(exc) and kind != "busy":
        # Already the one line naming the fix (the store's StoreReadOnly is also SQLite's
        # error): wrapped again, it would say everything twice. The busy line quotes nothing
        # of the error, so it stays the one every command says.
        plain = store_problem(sqlite3.OperationalError(str(exc)), db)
        return (kind, str(exc), exc.fix or plain[2]) if plain else None
    db = Path(db) if db is not None else paths.db_path()
    if kind == "busy":
        return (kind, "the memory is busy (another remem process is writing); try again in a moment",
                "try again once the other remem process (an ingest, a sleep) has finished")
    if kind in ("readonly", "cannot-open", "io"):
        mount = read_only_mount(db)
        if mount is not None:  # no chmod can help there: SQLite cannot make its -wal or -shm
            advice, fix = readonly_advice(db, mount=mount)
            return kind, f"{db} is on a read-only filesystem ({exc}); {advice}", fix
    if kind == "readonly":
        advice, fix = readonly_advice(db)
        return kind, f"{db} is read-only ({exc}); {advice}", fix
    if kind in ("full", "io"):
        fix = f"df -h {db.parent}   (free some disk space), and check {db} can be read and written"
        if kind == "full":
            return kind, f"cannot write the memory ({exc}); free some disk space and try again", fix
        line = (f"cannot read or write {db} ({exc}); check that the disk has free space "
                f"(df -h {db.parent}) and that the file is readable and writable")
        return kind, line, fix
    if kind == "cannot-open":
        fix = f"check that {db.parent} exists and is readable and writable (ls -ld {db.parent})"
        return kind, f"cannot open {db} ({exc}); {fix}", fix
    fix = f"remem restore   (a backup from {paths.backups_dir()})"
    line = (f"{db} is damaged ({exc}); run `remem doctor`, then `remem restore` "
            f"a backup from {paths.backups_dir()}")
    return kind, line, fix


def readonly_advice(db: Any, mount: str | None = None, *, memory: bool = True) -> tuple[str, str]:
    """What makes `db` (the memory, unless `memory` is off) writable, as (the advice, the fix
    alone): a chmod, or, on a filesystem mounted read-only at `mount`, a remount or a folder
    elsewhere, since no chmod works there."""
    if mount is None:
        targets = " ".join(str(p) for p in (db, *_sidecars(db), db.parent))
        fix = f"chmod u+w {targets}"
        return f"make it and its folder writable: {fix}", fix
    if not memory:
        elsewhere = "use a folder on a writable filesystem"
    elif not _is_dir(db.parent):  # a new memory: nothing there to copy
        elsewhere = "point REMEM_HOME at a folder on a writable filesystem"
    else:
        elsewhere = f"copy {db.parent} to a writable folder and point REMEM_HOME at the copy"
    return (f"no chmod helps on a read-only mount: remount {mount} read-write, or {elsewhere}",
            f"mount -o remount,rw {mount}   (or {elsewhere})")


def read_only_mount(path: Any) -> str | None:
    """Where the read-only filesystem holding `path` (or the nearest folder above it that
    exists) is mounted, or None when it is writable or cannot be told."""
    import os

    here = _nearest_existing(os.path.abspath(str(path)))
    if here is None:
        return None
    try:
        if not os.statvfs(here).f_flag & os.ST_RDONLY:
            return None
        device = os.stat(here).st_dev
        found = _listed_mount(here, device)
        if found is not None:
            return found
        # No mount table to read: up to the last folder on the same device (which goes past a
        # bind mount, whose device is that of the filesystem it shows).
        while True:
            above = os.path.dirname(here)
            if above == here or os.stat(above).st_dev != device:
                return here
            here = above
    except (OSError, AttributeError, ValueError):  # no statvfs (Windows), a path it refuses
        return None


def _listed_mount(here: str, device: int) -> str | None:
    """The mount point of `here` in /proc/self/mountinfo (a read-only bind mount of a folder is
    found there, not by its device), or None when the table cannot be read or names none on
    the same device (a mount hidden by a later one)."""
    import os

    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            found = mount_point(os.path.realpath(here), f.read())
        if found is not None and os.stat(found).st_dev == device:
            return found
    except (OSError, ValueError):  # no /proc (not Linux)
        pass
    return None


def mount_point(path: str, mountinfo: str) -> str | None:
    """The mount point under which `path` (absolute, its links resolved) lies, read from the
    text of /proc/self/mountinfo: the longest one that is `path` or a folder above it (of
    mounts on the same point, the last, which hides the others). None when the text names
    none (empty, or not a mount table)."""
    best: str | None = None
    for line in mountinfo.split("\n"):  # not splitlines: a path may hold \x85 or \u2028 as is
        fields = line.split(" ")
        if len(fields) < 5 or " - " not in line:
            continue
        point = _unescape_mount(fields[4])
        if not point.startswith("/"):
            continue
        inside = path == point or point == "/" or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best)):
            best = point
    return best


def _unescape_mount(field: str) -> str:
    """A mountinfo path field as the path it names: the kernel writes a space, tab, newline and
    backslash in it as \\040, \\011, \\012 and \\134."""
    import re

    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _is_dir(path: Any) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _nearest_existing(here: str) -> str | None:
    """`here`, or the nearest folder above it that exists; None when none can be told."""
    import os

    try:
        while not os.path.exists(here):
            above = os.path.dirname(here)
            if above == here:
                return None
            here = above
    except (OSError, ValueError):
        return None
    return here


def _existing_above(path: Any) -> str:
    """The nearest folder above `path` that exists (a mount's folder when it cannot be told)."""
    import os

    above = os.path.dirname(os.path.abspath(str(path)))
    return _nearest_existing(above) or above


def _sidecars(db: Any) -> list[Any]:
    """The -wal and -shm files SQLite keeps beside the memory, when they exist: made while the
    file was read-only, they are read-only too."""
    out = []
    for suffix in ("-wal", "-shm"):
        side = db.with_name(db.name + suffix)
        try:
            if side.exists():
                out.append(side)
        except OSError:
            pass
    return out


def database_problem(exc: BaseException) -> str | None:
    """SQLite's own failures that are not bugs, as one line naming the fix."""
    found = store_problem(exc)
    if found is None or found[0] == "cannot-open":
        return None
    return found[1]
