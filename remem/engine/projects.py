"""Projects: the name a folder gives, which folder a project argument means, and whether a
path lies in a folder.

One rule for "at or below a folder", in Python (`is_under`) and in SQL (`under_sql`), so a
filter in SQL and one in Python never disagree: a path is under a folder when it is the folder
or starts with the folder and a "/". Exact and case-sensitive (SQL's LIKE is neither: it
ignores ASCII case and needs its wildcards escaped). Trailing slashes do not count.

On the hook path (prime imports it): the standard library only.
"""

from __future__ import annotations

from typing import Any


def _folder(folder: str) -> str:
    return folder.rstrip("/") or "/"


def is_under(path: str | None, folder: str | None) -> bool:
    """Whether `path` is `folder` or lies below it ("/a/b" is under "/a", "/ab" is not).
    False when either is missing."""
    if not path or not folder:
        return False
    base, path = _folder(folder), _folder(path)
    return path == base or path.startswith(base if base == "/" else base + "/")


def under_sql(column: str, folder: str) -> tuple[str, list[str]]:
    """`is_under(column, folder)` as an SQL condition and its parameters.

    A range, not LIKE: case-sensitive like `is_under`, no wildcards to escape, and it can use
    an index on the column. Every string that starts with base + "/" sorts at or after it and
    before base + "0" ("0" follows "/" in every collation by bytes); nothing else does.
    """
    base = _folder(folder)
    if base == "/":
        return f"({column} >= ? AND {column} < ?)", ["/", "0"]
    return (f"({column} = ? OR ({column} >= ? AND {column} < ?))",
            [base, base + "/", base + "0"])


def project_name(cwd: str | None) -> str:
    """The project a working folder names: its last part ("/home/dev/shop/" -> "shop")."""
    if not cwd:
        return ""
    return cwd.rstrip("/").rsplit("/", 1)[-1]


def resolve_project(store: Any, name_or_path: str | None) -> str | None:
    """The folder a project argument means: a path as given (without a trailing slash), or the
    known project folder whose name, or Claude Code's name for it ("-home-me-shop"), matches,
    so an agent can say just "shop". A name no project has is returned as it is (it matches no
    folder); None for nothing given."""
    if not name_or_path or not name_or_path.strip():
        return None
    project = name_or_path.strip()
    if "/" in project.strip("-") and not project.startswith("-"):
        return _folder(project)
    from remem.paths import project_folder_name

    known = sorted({r["cwd"] for r in store.rows(
        "SELECT DISTINCT cwd FROM episodes WHERE cwd IS NOT NULL "
        "UNION SELECT DISTINCT cwd FROM lessons WHERE cwd IS NOT NULL")})
    for cwd in known:
        if project_folder_name(cwd) == project or project_name(cwd) == project:
            return cwd
    return project
