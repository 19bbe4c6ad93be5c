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


def resolve_folder(folder: str | Path | None = None, cfg: dict[str, Any] | None = None, *,
                   create: bool = False) -> Path:
    """The share folder from the argument or config share.folder; ShareError naming the fix
    (`--folder` when the folder was named, the config key when it came from there).

    create: make the folder when it is missing and its parent is a folder (a sync tool's
    folder, `~/Sync`, holding the `remem` one the quick start names); a writer's choice
    (sync, export), never a reader's: reading a folder that is not there finds nothing."""
    chosen = str(folder) if folder else str(_cfg(cfg).get("folder") or "")
    if not chosen:
        raise ShareError("no share folder: pass --folder PATH, or set one with "
                         "`remem config set share.folder PATH`")
    path = Path(chosen).expanduser()
    fix = "pass another --folder" if folder else "fix `remem config set share.folder PATH`"
    if not folder and not path.is_absolute():
        # Written by hand, or by an older remem: read from whatever folder remem runs in, it
        # names another folder (or none) in each. `remem config set` writes the whole path.
        raise ShareError(f"share.folder {chosen!r} is a relative path, which names another folder "
                         "wherever remem runs; set its whole path: `remem config set share.folder "
                         f"{os.path.abspath(path)}` (from the folder it is relative to)")
    _not_remem_home(path, fix)
    if create and not path.exists() and not path.is_symlink() and path.parent.is_dir():
        try:
            path.mkdir()
        except FileExistsError:  # made in the meantime (another sync): checked below
            pass
        except OSError as exc:
            raise ShareError(f"cannot make the share folder {path} ({exc.strerror}); create it "
                             f"yourself or {fix}") from None
    if not path.is_dir():
        if path.exists():
            what = "is a file, not a folder"
        elif create:
            what = f"does not exist, and {path.parent} is no folder to make it in"
        else:
            what = "does not exist"
        raise ShareError(f"share folder {path} {what}; create it or {fix}")
    return Path(path.resolve())


def _not_remem_home(path: Path, fix: str) -> None:
    """ShareError when the share folder is remem's home or its identity folder, holds one of
    them, or lies inside one (links resolved): a sync tool carrying the share folder would
    carry the private key (identity/ed25519.key) and the memory itself to every machine."""
    from remem import paths

    chosen = os.path.realpath(path)
    home, ident = os.path.realpath(paths.home()), os.path.realpath(paths.identity_dir())

    def within(inner: str, outer: str) -> bool:
        return os.path.commonpath([inner, outer]) == outer

    if within(chosen, ident):
        where = f"is remem's identity folder ({ident})" if chosen == ident else \
            f"lies inside remem's identity folder ({ident})"
    elif within(chosen, home):
        where = f"is remem's home ({home})" if chosen == home else f"lies inside remem's home ({home})"
    elif within(home, chosen):
        where = f"holds remem's home ({home})"
    else:
        return
    raise ShareError(f"share folder {path} {where}: a sync tool would carry the private key and the "
                     f"memory to other machines; {fix}, a folder that neither is, lies inside, nor "
                     "holds remem's home (or its identity folder)")


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
