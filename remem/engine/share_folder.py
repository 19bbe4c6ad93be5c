"""The share folder (named, or config share.folder), share.lock, and the version of its documents."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from remem.engine.files import locked
from remem.engine.share_sign import ShareError
from remem.engine.store import Store

VERSION = 1


def _cfg(cfg: dict[str, Any] | None) -> dict[str, Any]:
    if cfg is None:
        from remem import config

        cfg = config.load()
    return cfg["share"]


def resolve_folder(folder: str | Path | None = None, cfg: dict[str, Any] | None = None) -> Path:
    """The share folder from the argument or config share.folder; ShareError naming the fix."""
    chosen = str(folder) if folder else str(_cfg(cfg).get("folder") or "")
    if not chosen:
        raise ShareError("no share folder: pass --folder PATH, or set one with "
                         "`remem config set share.folder PATH`")
    path = Path(chosen).expanduser()
    if not path.is_dir():
        what = "is a file, not a folder" if path.exists() else "does not exist"
        raise ShareError(f"share folder {path} {what}; create it or fix "
                         "`remem config set share.folder PATH`")
    return Path(path.resolve())


def reachable_folder(folder: str | Path | None = None, cfg: dict[str, Any] | None = None) -> Path | None:
    """The folder named (ShareError when it is not one), else the configured share.folder if
    it is reachable now, else None: a confirmation written or withdrawn now (accept, reject)
    can wait for the next sync."""
    if folder:
        return resolve_folder(folder, cfg)
    if not _cfg(cfg).get("folder"):
        return None
    try:
        return resolve_folder(None, cfg)
    except ShareError:
        return None


def _root(folder: str | Path) -> Path:
    path = Path(folder).expanduser()
    if not path.is_dir():
        what = "is a file, not a folder" if path.exists() else "does not exist"
        raise ShareError(f"share folder {path} {what}; create it or pass another --folder")
    return Path(path.resolve())


_held = threading.local()


@contextmanager
def share_lock(store: Store) -> Iterator[None]:
    """share.lock beside the memory, for one sharing step at a time (two receives at once
    would each take the same new lesson in). Re-entrant in a thread: an flock belongs to the
    open file, so sync() taking it again for its steps would wait on itself."""
    path = os.path.abspath(Path(store.path).parent / "share.lock")
    held: set[str] = _held.__dict__.setdefault("paths", set())
    if path in held:
        yield
        return
    with locked(Path(path)):
        held.add(path)
        try:
            yield
        finally:
            held.discard(path)
