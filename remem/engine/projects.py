"""Projects: the name a folder gives, which folder a project argument means (`resolve_project`,
the one rule every edge uses), and whether a path lies in a folder.

One rule for "at or below a folder", in Python (`is_under`) and in SQL (`under_sql`), so a
filter in SQL and one in Python never disagree: a path is under a folder when it is the folder
or starts with the folder and a "/". Exact and case-sensitive (SQL's LIKE is neither: it
ignores ASCII case and needs its wildcards escaped). Trailing slashes do not count.

On the hook path (prime imports it): the standard library and engine.text only.
"""

from __future__ import annotations

import os
from typing import Any

from remem.engine.text import clean_text


def _folder(folder: str) -> str:
    return folder.rstrip("/") or "/"


def normal_folder(path: str | None) -> str | None:
    """The one spelling of a folder that is stored ("/a/b/../c/" -> "/a/c", "//a" -> "/a", "/"
    stays "/"), so a folder written with a trailing slash is the same project as the one
    without: rendered into the same agent folder and matched by the same hooks (which read the
    agent's cwd through it too). Empty or None: as given."""
    if not path:
        return path
    folder = os.path.normpath(path)
    if folder.startswith("//"):  # POSIX keeps two leading slashes; "//a" is "/a" on Linux and macOS
        folder = "/" + folder.lstrip("/")
    return _folder(folder)


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


def resolve_project(store: Any, given: str | None, *, here: str | None = None,
                    example: str = "{}") -> str | None:
    """The folder a project argument means: one rule for the CLI, the MCP tools and the HTTP API.

    - nothing (None, blank): None, every project;
    - an absolute path or a "~" path: that path, normalised ("/a/b/../c/" -> "/a/c");
    - a relative path that is a folder seen from `here` (given by the CLI: the shell's
      folder; a server has none that means anything to its caller): that folder's full path;
    - a bare name the folder of exactly one known project has (its last part, "shop", or Claude
      Code's name for it, "-home-me-shop"): that project's folder, so an agent can say "shop".

    Anything else is refused with a ValueError naming the fix, never returned as it is: a
    relative `cwd` no folder filter matches would be stored, or filtered by, and find nothing.
    `example` is how the caller's edge takes a path ("--project {}"), for that line.
    """
    if not given or not given.strip():
        return None
    project = clean_text(given).strip()  # no NUL or lone surrogate in a stored folder
    if project.startswith("~"):
        expanded = os.path.expanduser(project)
        if not expanded.startswith("/"):  # ~someone who has no home here
            raise ValueError(f"cannot tell whose home {project!r} is in; give the project's full "
                             f"folder path, e.g. {_example(example, '/home/you/code/shop')}")
        project = expanded
    if project.startswith("/"):
        return _folder(os.path.normpath(project))
    if here is not None and os.path.isdir(os.path.join(here, project)):
        return _folder(os.path.normpath(os.path.join(os.path.abspath(here), project)))
    name = project.rstrip("/")
    if "/" in name or name in ("", ".", ".."):
        where = f"no folder {project!r} in {here}" if here is not None else f"the project {project!r} is a relative path"
        tail = name.lstrip("./") or "code/shop"
        raise ValueError(f"{where}; give the project's full folder path, "
                         f"e.g. {_example(example, '~/' + tail)}")
    found = _named(store, name)
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"no project named {name!r}; give its folder path, "
                         f"e.g. {_example(example, '~/code/' + name)}")
    listed = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    raise ValueError(f"the name {name!r} fits {len(found)} projects: {listed}; give its folder path, "
                     f"e.g. {_example(example, found[0])}")


def _example(example: str, path: str) -> str:
    """`example` with `path` in it; quoted for a shell when the example is a command line's
    option (`--project {}`), so it can be pasted as it is ("~/code/my shop api" as
    ~/'code/my shop api': the "~/" stays outside the quotes, where the shell expands it)."""
    if example.lstrip("`").startswith("--"):
        import shlex

        home, rest = ("~/", path[2:]) if path.startswith("~/") else ("", path)
        path = home + shlex.quote(rest) if rest else path
    return example.format(path)


def same_name(name: str) -> str:
    """A project name as names are compared: NFC, so "café" typed or sent from Linux (one
    character for é) names the folder macOS stores as "cafe" and a combining accent. Only for
    comparing: stored folders keep their own spelling."""
    import unicodedata  # here: the hooks import this module, and never compare names

    return unicodedata.normalize("NFC", name)


def _named(store: Any, name: str) -> list[str]:
    """The known project folders (absolute `cwd`s of memories and lessons) this name names
    (compared as same_name spells them)."""
    from remem.paths import project_folder_name

    known = {_folder(r["cwd"]) for r in store.rows(
        "SELECT DISTINCT cwd FROM episodes WHERE cwd IS NOT NULL "
        "UNION SELECT DISTINCT cwd FROM lessons WHERE cwd IS NOT NULL")
        if r["cwd"].startswith("/")}  # a relative one (stored by an older release) is no folder
    name = same_name(name)
    return sorted(cwd for cwd in known
                  if same_name(project_name(cwd)) == name or project_folder_name(cwd) == name)
