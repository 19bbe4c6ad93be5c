"""Expected failures: each carries a one-line message that names the fix."""

from __future__ import annotations


class RememError(Exception):
    """An expected failure. The CLI prints `remem: <message>` on stderr and exits 1."""


class ConfigError(RememError):
    pass


class StoreError(RememError):
    pass


class NotFound(RememError):
    pass


def database_problem(exc: BaseException) -> str | None:
    """SQLite's own failures that are not bugs, as one line naming the fix."""
    import sqlite3

    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "the memory is busy (another remem process is writing); try again in a moment"
    if "readonly" in text or "read-only" in text:
        from remem import paths

        db = paths.db_path()
        return (f"{db} is read-only ({exc}); make it and its folder writable: "
                f"chmod u+w {db} {db.parent}")
    if "disk is full" in text or "disk i/o" in text:
        return f"cannot write the memory ({exc}); free some disk space and try again"
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        from remem import paths

        return (f"{paths.db_path()} is damaged ({exc}); run `remem doctor`, then `remem restore` "
                f"a backup from {paths.backups_dir()}")
    return None
