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
    io (disk I/O error), damaged, cannot-open."""
    import sqlite3

    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    kind = _problem_kind(str(exc).lower())
    if kind is None:
        return None
    from pathlib import Path

    from remem import paths

    db = Path(db) if db is not None else paths.db_path()
    if kind == "busy":
        return (kind, "the memory is busy (another remem process is writing); try again in a moment",
                "try again once the other remem process (an ingest, a sleep) has finished")
    if kind == "readonly":
        targets = " ".join(str(p) for p in (db, *_sidecars(db), db.parent))
        fix = f"chmod u+w {targets}"
        return kind, f"{db} is read-only ({exc}); make it and its folder writable: {fix}", fix
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
