"""Files other processes read or share: written whole or not at all (temp file + rename),
and an exclusive lock between processes."""

from __future__ import annotations

import os
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

from remem.errors import RememError


def first_json_line(path: Path) -> object | None:
    """The JSON value on a file's first line (read at most 1 MB of it), or None when the file
    cannot be read or that line is not JSON: how a file we wrote is told from any other."""
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            return json.loads(handle.readline(1_000_000))
    except (OSError, ValueError, RecursionError):
        return None


def write_atomic(path: Path, data: bytes | str, *, fsync: bool = False, through_links: bool = False,
                 refuse_protected: bool = False, mode: int | None = None, even_if_same: bool = False) -> bool:
    """Write via a dot-named temp file beside `path`, then rename over it.

    Returns False, writing nothing, when the file already holds these bytes (never compared
    through a symlink). `fsync` for files nothing else could rebuild; the rest skip it
    (an fsync per share file made export 40x slower, and a lost one is rewritten next time).

    `through_links` is for the person's own files (MEMORY.md): a symlink is kept and its
    target written (the temp file beside the target, whose folder must exist), and the file
    keeps its mode. Without it a symlink is replaced by a file, never followed.

    `refuse_protected` is for the person's files too: one that is there with new bytes to take
    but write-protected (no write permission for this user, or none for anyone: root could
    write it, the person said not to) raises PermissionError, and one with other hard links
    (the rename would leave them holding the old bytes) raises OSError (EMLINK); nothing is
    written. Each error's strerror says why and what to do.

    `mode` is for files others must read (the share folder's): the file gets these permission
    bits, exactly (pass them with the umask applied), and so does one that already holds these
    bytes (still returning False); one whose mode cannot be changed (another user's) is written
    anew. Without it a new file is mkstemp's 0600, readable by its owner alone: private files
    stay private.

    `even_if_same` writes a file that holds these bytes already: a caller that must learn
    whether it can be written before it changes anything else (setup.json) writes it anyway.
    """
    import tempfile  # not at the top: every Store imports this module, hooks included

    raw = data.encode("utf-8") if isinstance(data, str) else data
    linked = through_links and path.is_symlink()
    if through_links:
        path = Path(os.path.realpath(path))
        try:
            mode = os.stat(path).st_mode & 0o7777 if mode is None else mode
        except OSError:
            pass  # a new file: mkstemp's 0600
    try:
        if (not even_if_same and path.is_file() and not path.is_symlink() and path.read_bytes() == raw
                and (mode is None or _has_mode(path, mode))):
            return False
    except OSError:
        pass
    if refuse_protected:
        _refuse_protected(path)
    if not linked:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)  # mkstemp made it 0600
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True


def _has_mode(path: Path, mode: int) -> bool:
    """Whether the file has these permission bits, or could be given them now (chmod; never
    through a link): False when it is another user's, so the caller writes it anew."""
    try:
        if os.stat(path, follow_symlinks=False).st_mode & 0o7777 != mode:
            os.chmod(path, mode)
        return True
    except OSError:
        return False


def _refuse_protected(path: Path) -> None:
    """Raise when `path` is there and the person made it a file remem must not replace:
    write-protected, or hard-linked (write_atomic's `refuse_protected`)."""
    import errno
    import stat

    try:
        found = os.stat(path)
    except OSError:
        return  # not there (yet): a new file is written
    if not stat.S_ISREG(found.st_mode):
        return  # not a file: the rename fails with the system's own reason
    if not (found.st_mode & 0o222) or not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "it is write-protected; make it writable (chmod u+w) for "
                              "remem to update it, or leave it so and remem leaves it as it is", str(path))
    if found.st_nlink > 1:
        raise OSError(errno.EMLINK, f"it has {found.st_nlink} hard links, which replacing it would break; "
                      "make it a symlink instead (remem writes through symlinks and keeps them)", str(path))


@contextmanager
def _flock(path: Path, how: str, wait: bool = True) -> Iterator[bool]:
    """Hold an advisory flock on `path` ("exclusive" or "shared") for the block; yields False
    instead of waiting when `wait` is off and another holds a conflicting one. The kernel
    drops it when the holder's process ends, however it ends. Where flock does not exist
    (Windows) nothing is locked and True is yielded."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+b")
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield True
            return
        mode = fcntl.LOCK_EX if how == "exclusive" else fcntl.LOCK_SH
        try:
            fcntl.flock(fh.fileno(), mode if wait else mode | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        fh.close()


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` for the block, waiting for it."""
    with _flock(path, "exclusive"):
        yield


def in_use_path(db: Path) -> Path:
    """The lock file beside a memory that long-running processes hold while they have it open."""
    return db.with_name(db.name + ".in-use")


@contextmanager
def in_use(db: Path) -> Iterator[None]:
    """Mark the memory `db` in use for the block (a shared lock: any number of servers, TUIs
    and proxies at once); `sole_user` refuses while one is held. Waits only while a restore
    holds it exclusively."""
    with _flock(in_use_path(Path(db)), "shared"):
        yield


class InUse(RememError):
    """Another process has the memory open (see in_use), or a restore is replacing it."""


def _held(path: Path, how: str, patience: float) -> ExitStack | None:
    """The flock `how` on `path`, held in a stack (close it to release), tried every 20 ms
    for up to `patience` seconds; None if another still holds a conflicting one."""
    deadline = time.monotonic() + max(0.0, patience)
    while True:
        stack = ExitStack()
        if stack.enter_context(_flock(path, how, wait=False)):
            return stack
        stack.close()
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def hold_open(db: Path, wait: float = 0.0) -> ExitStack:
    """The same shared mark as `in_use`, held until the returned stack is closed: every Store
    of the live memory takes one, so a restore also sees the one-off commands (an ingest, a
    hook) that have it open. While a restore holds the memory, waits up to `wait` seconds for
    it to finish (a hook passes what is left of its budget), then raises InUse."""
    stack = _held(in_use_path(Path(db)), "shared", wait)
    if stack is None:
        raise InUse(f"{db} is being restored from a backup; run this again in a moment")
    return stack


@contextmanager
def sole_user(db: Path, patience: float = 2.0) -> Iterator[None]:
    """Hold the memory `db` exclusively for the block. Waits up to `patience` seconds for
    one-off commands to finish, then raises InUse if a process still has it open (a server,
    TUI or proxy holds it for as long as it runs)."""
    stack = _held(in_use_path(Path(db)), "exclusive", patience)
    if stack is None:
        raise InUse(f"{db} is open in `remem serve`, `remem tui`, `remem proxy` or another "
                    "remem command; close them, then run this again")
    with stack:
        yield
