"""What the parts of `remem setup` share: the Edit (one file, or the crontab, as it is and as
remem wants it), how a config file is read and backed up, and the remem command line that
agents' configs and the nightly schedule run.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from remem import paths
from remem.engine import clock

SERVER_NAME = "remem"
# `--home DIR` as shlex.quote writes it: bare, or quoted ('/a b', "/a b"), or pieces of both
# joined ('/it'"'"'s' for a path holding a quote). Bare text one character at a time: each
# character has one way to match, so a long path that is not ours fails fast.
_HOME_ARG = r"""(?:'[^']*'|"(?:[^"\\]|\\.)*"|[^\s'"])+"""
_OURS = re.compile(r"(?:^|[\s/\\'\"])remem(?:\.exe)?['\"]?(?:\s+--home(?:=|\s+)(?P<home>" + _HOME_ARG + r"))?\s+hook\s+"
                   r"(?:prompt|pre-tool|stop|session-end)\b")


@dataclass
class Edit:
    """One file (or the crontab) as it is and as remem wants it."""

    target: str
    path: str
    before: str | None
    after: str | None
    what: list[str] = field(default_factory=list)
    error: str | None = None
    kind: str = "file"  # file | crontab
    restore: bool = False  # --remove put back the backup byte for byte
    record: dict[str, Any] = field(default_factory=dict)  # kept in the manifest beside the file
    note: str | None = None  # said to the person; not an error
    # The same edit planned again from the file as it is then: apply() calls it when the file
    # changed after this plan (an agent writing it while setup waited at "Go ahead?").
    again: Callable[[], Edit] | None = field(default=None, repr=False, compare=False)
    # The text before already held remem's entries (an earlier wiring, its setup.json gone):
    # that text is no clean restore point for --remove.
    had_ours: bool = False
    # It only takes remem's entries out, in a setup run too (Cursor's hooks.json, where remem
    # wires nothing now): setup.json forgets the file, as after --remove.
    unwires: bool = False

    @property
    def changed(self) -> bool:
        return self.error is None and self.before != self.after

    def diff(self) -> str:
        """A unified diff, as `patch` reads it: a last line with no newline is marked `\\ No
        newline at end of file`, so the next file's diff starts on a line of its own."""
        label = self.path
        lines = difflib.unified_diff(
            _lines(self.before or ""), _lines(self.after or ""),
            fromfile=f"{label} (now)" if self.before is not None else "/dev/null",
            tofile=f"{label} (after)" if self.after is not None else "/dev/null",
        )
        return "".join(l if l.endswith("\n") else l + "\n\\ No newline at end of file\n" for l in lines)

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target, "path": self.path, "changed": self.changed,
                "what": self.what, "error": self.error, "kind": self.kind,
                "action": ("delete" if self.after is None else "restore" if self.restore
                           else "create" if self.before is None else "update") if self.changed else "none"}


def _lines(text: str) -> list[str]:
    """The text's lines, each with its `\\n` (a `\\r` before it stays in the line): split at
    `\\n` alone, as `patch` reads a file, not at every break str.splitlines knows."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


# --------------------------------------------------------------------------- commands

def remem_argv() -> list[str]:
    """The installed `remem`, as an absolute path (or this Python with -P -m remem)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name in ("remem", "remem.exe") and argv0.exists():
        return [str(argv0.absolute())]
    found = shutil.which("remem")
    if found:
        return [str(Path(found).absolute())]
    # -P: agents run hooks and the MCP server in the project folder, which `-m` alone would put
    # first on sys.path (a project's remem.py or remem/ package would run instead of remem).
    return [str(Path(sys.executable).absolute()), "-P", "-m", "remem"]


def venv_note() -> str | None:
    """One line when the remem setup writes into agents' configs (and the nightly job) lives in
    a virtual environment (a clone's .venv, as the README's first line makes): moved or deleted,
    every hook and server then fails as "command not found". None for a program elsewhere, or
    in the environment pipx or `uv tool` made for it (they keep it in place)."""
    program = Path(remem_argv()[0])
    venv = program.parent.parent  # bin/remem, Scripts\remem.exe, bin/python
    if not (venv / "pyvenv.cfg").is_file():
        return None
    if (venv / "pipx_metadata.json").exists() or (venv / "uv-receipt.toml").exists():
        return None
    return (f"what setup wires runs {program}, inside the virtual environment {venv}: if that is "
            "moved or deleted, every hook and MCP server fails with \"command not found\"; "
            "`pipx install .` or `uv tool install .` (in remem's source folder) gives a remem that "
            "stays in place: run `remem setup` again with that one")


def _home_args() -> list[str]:
    # A person who moved remem's home with REMEM_HOME wants the agents to use that one too.
    return ["--home", str(paths.home())] if os.environ.get("REMEM_HOME") else []


def command(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in [*remem_argv(), *_home_args(), *args])


def server_entry(style: str = "plain") -> dict[str, Any]:
    argv = remem_argv()
    entry: dict[str, Any] = {"command": argv[0], "args": [*argv[1:], *_home_args(), "serve"]}
    if style == "claude-code":
        return {"type": "stdio", **entry, "env": {}}
    if style == "vscode":
        return {"type": "stdio", **entry}
    return entry


def is_ours(cmd: Any) -> bool:
    """Whether a hook command runs `remem hook`, for any memory."""
    return isinstance(cmd, str) and bool(_OURS.search(cmd))


# --------------------------------------------------------------------------- which memory

def hook_home(cmd: str) -> str | None:
    """The `--home` a remem hook command names, unquoted; None when it names none (or is no
    remem hook)."""
    found = _OURS.search(cmd)
    if found is None or found.group("home") is None:
        return None
    try:
        return "".join(shlex.split(found.group("home")))
    except ValueError:  # pragma: no cover - the pattern takes only closed quotes
        return found.group("home")


def server_home(entry: Any) -> str | None:
    """The `--home` remem's MCP server entry runs with (its args), or None when it names none."""
    args = entry.get("args") if isinstance(entry, dict) else None
    args = [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
    for i, arg in enumerate(args):
        if arg == "--home" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--home="):
            return arg.removeprefix("--home=")
    return None


def same_memory(home: str | None) -> bool:
    """Whether an entry with this `--home` (None: none, so the default ~/.remem) serves the
    memory setup runs for now."""
    theirs = Path(home).expanduser() if home else paths.user_home() / ".remem"
    return os.path.realpath(theirs) == os.path.realpath(paths.home())


def hook_here(cmd: Any) -> bool:
    """Whether a hook command runs `remem hook` for this memory (what --remove takes out)."""
    return is_ours(cmd) and same_memory(hook_home(cmd))


def server_here(entry: Any) -> bool:
    """Whether remem's MCP server entry serves this memory. Only an entry with args, as setup
    writes it, says which memory it serves (its `--home`, or none: ~/.remem); one of another
    shape says of no other memory, so it counts as this one's."""
    if not (isinstance(entry, dict) and isinstance(entry.get("args"), list)):
        return True
    return same_memory(server_home(entry))


# --------------------------------------------------------------------------- files

def read_config(path: Path) -> str | None:
    """The file's text, a UTF-8 BOM kept (so a restore is byte for byte); None if missing.
    Raises UnicodeDecodeError for a file that is not UTF-8, and OSError for one that cannot be
    read (a folder in its place, a link to itself, no permission): callers report either with
    unreadable(), naming it."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        if path.is_symlink() and not Path(os.path.realpath(path)).parent.is_dir():
            # Writing through it would make the folder it points into, wherever that is.
            raise DanglingLink(path) from None
        return None


class DanglingLink(FileNotFoundError):
    """A config that is a symlink into a folder that does not exist."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.ENOENT, "a link into a folder that does not exist", str(path))
        self.target = os.path.realpath(path)


def not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    return (f"{path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at {exc.start}); "
            "save it as UTF-8, then run `remem setup` again")


def unreadable(path: Path, exc: OSError | UnicodeDecodeError) -> str:
    """Why a config cannot be read and what mends it, in one line."""
    if isinstance(exc, UnicodeDecodeError):
        return not_utf8(path, exc)
    if isinstance(exc, DanglingLink):
        return (f"{path} is a link to {exc.target}, whose folder does not exist; point the link at a "
                "file, or delete it, then run `remem setup` again")
    if isinstance(exc, IsADirectoryError):
        fix = "move that folder aside"
    elif isinstance(exc, PermissionError):
        fix = "give yourself read and write access to it and to its folder"
    elif exc.errno == errno.ELOOP:
        fix = "point the link at a file, or delete it"
    else:
        fix = "check the path and its permissions"
    return f"{path} cannot be read ({exc.strerror or exc}); {fix}, then run `remem setup` again"


def unwritable(path: Path, exc: OSError, *, remove: bool = False) -> str:
    """Why a config could not be written (or deleted) and what mends it, in one line, naming
    the config itself, never the temp file beside it."""
    again = "`remem setup --remove`" if remove else "`remem setup`"
    # write_atomic's refuse_protected says why in words of its own, starting "it ".
    refused = exc.strerror if exc.strerror and exc.strerror.startswith("it ") else None
    if refused and exc.errno == errno.EMLINK:
        return f"{path} {refused.removeprefix('it ')}, then run {again} again"
    if refused and exc.errno == errno.EACCES:
        return (f"{path} is write-protected, so setup leaves it as it is; make it writable (chmod u+w, or "
                f"`chattr -i` when `lsattr` shows it immutable), then run {again} again")
    if exc.errno == errno.EPERM:
        fix = ("check the permissions and attributes of it and its folder (`lsattr -d`: one marked i is "
               "immutable until `chattr -i`)")
    elif exc.errno == errno.EACCES:
        fix = "give yourself write access to it and to its folder"
    elif exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        fix = "free some disk space"
    elif exc.errno == errno.EROFS:
        fix = "its file system is read-only; make it writable"
    else:
        fix = "check the path and its permissions"
    return f"{path} cannot be written ({exc.strerror or exc}); {fix}, then run {again} again"


def sha(text: str | None) -> str | None:
    """The fingerprint the manifest keeps of what setup wrote: a later --remove tells by it
    whether anything else changed the file since."""
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def save_backup(path: Path, text: str) -> Path:
    """A copy of the text setup is about to replace, under backups/setup/, named by time and path.

    Configs hold tokens (an MCP server's env, an OAuth account): the folder is the owner's
    alone (0700), and each copy 0600, or stricter when the file itself is."""
    folder = paths.backups_dir() / "setup"
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    mode = 0o600
    if path.is_absolute():  # the crontab is backed up as Path("crontab"): no file of its own
        try:
            mode &= os.stat(path).st_mode
        except OSError:
            pass
    stamp = clock.iso().replace(":", "").replace("-", "")
    name = f"{stamp}-{paths.project_folder_name(str(path)).strip('-')}"
    dest = folder / name
    # Created 0600, so no other user can open it before the chmod below.
    with os.fdopen(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
        fh.write(text.encode("utf-8"))
    os.chmod(dest, mode | 0o400)  # however strict, remem must read it back to restore it
    return dest

