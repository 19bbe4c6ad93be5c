"""Files other processes read or share: written whole or not at all (temp file + rename),
and an exclusive lock between processes."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from remem.errors import RememError


def write_atomic(path: Path, data: bytes | str, *, fsync: bool = False) -> bool:
    """Write via a dot-named temp file beside `path`, then rename over it.

    Returns False, writing nothing, when the file already holds these bytes (never compared
    through a symlink). `fsync` for files nothing else could rebuild; the rest skip it
    (an fsync per share file made export 40x slower, and a lost one is rewritten next time).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if path.is_file() and not path.is_symlink() and path.read_bytes() == raw:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock (POSIX flock on `path`), waiting for it; the kernel
    drops it when the holder's process ends, however it ends. A no-op where flock does not
    exist."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+b")
    try:
        try:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows
            pass
        yield
    finally:
        fh.close()


def in_use_path(db: Path) -> Path:
    """The lock file beside a memory that long-running processes hold while they have it open."""
    return db.with_name(db.name + ".in-use")


@contextmanager
def in_use(db: Path) -> Iterator[None]:
    """Mark the memory `db` in use for the block (a shared flock: any number of servers, TUIs
    and proxies at once); `sole_user` refuses while one is held. Waits only while a restore
    holds it exclusively."""
    path = in_use_path(Path(db))
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+b")
    try:
        try:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
        except ImportError:  # pragma: no cover - Windows
            pass
        yield
    finally:
        fh.close()


class InUse(RememError):
    """Another process has the memory open (see in_use)."""


@contextmanager
def sole_user(db: Path) -> Iterator[None]:
    """Hold the memory `db` exclusively for the block, or raise InUse at once if a server,
    TUI or proxy has it open."""
    path = in_use_path(Path(db))
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+b")
    try:
        try:
            import fcntl

            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise InUse(f"{db} is open in `remem serve`, `remem tui` or `remem proxy`; "
                            "close them, then run this again") from None
        except ImportError:  # pragma: no cover - Windows
            pass
        yield
    finally:
        fh.close()
