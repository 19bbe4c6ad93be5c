"""Backups (SQLite's online backup API) and the portable JSONL export/import of a whole memory.

The export carries every row of the tables that make a memory — episodes, sessions, lessons,
predictions, aliases, tags, connections, peers, and when each lifecycle task last ran — with
vectors as base64 beside their space, so `import` of an export reproduces the same memory
(same ids, same values) and its decays go on from where they were, never applied twice.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

from remem import paths
from remem.engine import clock
from remem.engine.files import sole_user
from remem.engine.graph import SYMMETRIC
from remem.engine.projects import normal_folder
from remem.engine.store import (EPISODE_KINDS, MIGRATIONS, WRITE_ERRORS, Store, StoreBusy, StoreReadOnly,
                                normalise_tag, set_orphaned_log_aside)
from remem.errors import StoreError

EXPORT_VERSION = 1
# Order matters for readers that stream: memories first, then what points at them.
# `tasks` and `forgotten` came later: an export without them still imports (decay then starts
# from each memory's own times), and an older remem reports their lines as an unknown table and
# imports the rest.
EXPORT_TABLES = ("episodes", "sessions", "lessons", "predictions", "aliases", "tags",
                 "connections", "peers", "tasks", "forgotten")
_BLOB_COLUMNS = {"embedding"}
# Internal row numbers, never exported and re-assigned on import: an incoming connection id 1
# would otherwise replace this memory's own edge id 1. An edge is known by (src, dst, type).
_SKIP_COLUMNS = {"episodes": {"seq"}, "lessons": {"seq"}, "connections": {"id"}}


def backup(store: Store, dest: Path | str | None = None, *, force: bool = False, check: bool = False) -> Path:
    """A consistent copy of the live database, taken while others keep writing.

    An existing file is replaced only when it is a remem database (an older backup) or empty,
    or with `force`: `remem backup notes.txt` must not turn someone's notes into SQLite. A
    file named in a folder that does not exist is refused (`need_folder`); only the backups
    folder, and a folder named as one (ending in a separator), are made. With `check` (every
    backup meant to be kept: `remem backup`, the nightly one), a copy that fails SQLite's quick
    check is kept as damaged-….db, not at dest, and the one line raised names the last good
    backup to restore. (A working copy, as sleep's dry run takes, is not checked.)"""
    named = dest is not None
    if dest is None:
        stamp = clock.now().strftime("%Y%m%d-%H%M%S")
        dest = paths.backups_dir() / f"memory-{stamp}.db"
    # A path ending in a separator names a folder, existing or not (`remem backup ~/bk/`).
    folder = isinstance(dest, str) and dest.endswith(("/", os.sep, os.altsep or os.sep))
    dest = Path(os.path.expanduser(dest))  # ~nobody/… stays as typed, never a crash
    if folder and not dest.is_dir():
        if dest.exists():
            raise ValueError(f"{dest} is a file, not a folder; name a folder or a new file")
        dest.mkdir(parents=True, exist_ok=True)
    if dest.is_dir():
        dest = dest / f"memory-{clock.now().strftime('%Y%m%d-%H%M%S')}.db"
    if named:
        need_folder(dest)
    if dest.exists() and _same_file(dest, paths.db_path()):
        raise ValueError(f"{dest} is the live memory itself; name another file for the backup")
    beside = _live_mark(dest) if dest.exists() else None
    if beside is not None:  # another home's memory: --force does not make it a backup
        raise ValueError(f"{dest} is a remem home's live memory ({beside.name} is beside it); name "
                         f"another file for the backup (to replace that memory: "
                         f"`remem --home {dest.parent} restore BACKUP`)")
    refuse_live_file(dest, "the backup")  # its -wal or -shm, the config, the identity keys
    check_replaceable(dest, is_remem_database, "a remem backup", force=force)
    dest.parent.mkdir(parents=True, exist_ok=True)  # the backups folder, made on first use
    try:
        _copy(store.conn, dest, ".partial", check=check)
    except DamagedCopy as exc:
        # Never a damaged copy among the good ones (a rotation would then delete the good ones).
        good = last_good_backup()
        then = (f"run `remem restore {good}` (the last good backup)" if good is not None
                else f"no good backup in {paths.backups_dir()} to restore; run `remem doctor`")
        raise ValueError(f"the memory is damaged ({exc.problem}); nothing rotated out, the damaged "
                         f"copy is kept as {exc.kept}; {then}") from None
    return dest


def _live_mark(path: Path) -> Path | None:
    """What marks `path` as a memory remem uses (its -wal or -shm, or the .in-use mark every
    remem that opens a home's memory leaves beside it), or None: a backup has none of them."""
    from remem.engine.files import in_use_path

    for mark in (Path(f"{path}-wal"), Path(f"{path}-shm"), in_use_path(path)):
        if os.path.lexists(mark):
            return mark
    return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _same_path(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same path once links are followed (a file not made
    yet included), or one file by two names (a hard link)."""
    return os.path.realpath(a) == os.path.realpath(b) or _same_file(a, b)


def live_file_problem(path: Path) -> str | None:
    """What makes `path` a file no file remem writes may replace, with --force or without, said
    after the path ("is the live memory itself"), or None. This memory's live database, its
    -wal, -shm and .in-use mark, its config and its identity folder (the keys), made yet or
    not; another home's live memory (a -wal, -shm or .in-use mark beside it) and those files
    of it."""
    from remem.engine.files import in_use_path

    db = paths.db_path()
    ours = {
        db: "the live memory itself",
        Path(f"{db}-wal"): "the live memory's write-ahead log",
        Path(f"{db}-shm"): "the live memory's shared-memory index",
        in_use_path(db): "the live memory's in-use mark",
        paths.config_path(): "this memory's config",
    }
    for live, what in ours.items():
        if _same_path(path, live):
            return f"is {what}"
    identity = Path(os.path.realpath(paths.identity_dir()))
    if identity in Path(os.path.realpath(path)).parents:  # the key pair, and all beside it
        return f"is in this memory's identity folder ({identity})"
    if path.is_file():
        beside = _live_mark(path)
        if beside is not None:
            return f"is a remem home's live memory ({beside.name} is beside it)"
    for suffix in ("-wal", "-shm", ".in-use", "-journal"):
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            base = path.with_name(path.name[: -len(suffix)])
            if base.is_file() and (is_remem_database(base) or _live_mark(base) is not None):
                return f"belongs to the memory {base}"
    return None


def refuse_live_file(path: Path, what: str) -> None:
    """Refuse, in one line, to write `what` (the export, the backup) over a live memory's file
    (`live_file_problem`): --force never makes that right, so it is not offered."""
    problem = live_file_problem(path)
    if problem is not None:
        raise ValueError(f"{path} {problem}; name another file for {what}")


def database_kind(path: Path) -> str | None:
    """What a SQLite file is, said as "a remem memory or backup" or "a SQLite database", or None
    for a file that is not SQLite (or cannot be read)."""
    try:
        with open(path, "rb") as head:
            if head.read(16) != b"SQLite format 3\x00":
                return None
    except OSError:
        return None
    return "a remem memory or backup" if is_remem_database(path) else "a SQLite database"


def refuse_database(path: Path, what: str, *, force: bool = False) -> None:
    """Refuse, in one line, to write `what` (a text file: the export, the training pairs) over a
    database: a remem memory or backup even with `force` (nothing of remem's needs its place),
    another program's only without it. The line says what the file is and never offers --force."""
    if not path.is_file():
        return
    kind = database_kind(path)
    if kind is None or (force and not kind.startswith("a remem")):
        return
    raise ValueError(f"{path} is {kind}, not {what}; name another file")


def need_folder(path: Path) -> None:
    """Refuse, in one line, a file to write in a folder that does not exist: a typo in the
    path, most often, which must not quietly make folders no one asked for. A path that cannot
    have that folder (a file where one of its folders should be) is named as such."""
    folder = path.parent
    if folder.is_dir():
        return
    there = next((p for p in (folder, *folder.parents) if os.path.lexists(p)), None)
    if there is not None and not there.is_dir():
        raise ValueError(f"cannot use {path} ({there} is a file, not a folder); check the path")
    raise ValueError(f"no folder {folder}; create it first or name another file")


def is_remem_database(path: Path) -> bool:
    """Whether a file is a remem memory or backup (SQLite with an episodes table)."""
    try:
        with open(path, "rb") as head:
            if head.read(16) != b"SQLite format 3\x00":
                return False
        conn = _open_read_only(path)
        try:
            return conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'episodes'").fetchone() is not None
        finally:
            conn.close()
    except (OSError, sqlite3.DatabaseError):
        return False


def is_export(path: Path) -> bool:
    """Whether a file is what `remem export` writes (its first line is the export header)."""
    from remem.engine.files import first_json_line

    record = first_json_line(path)
    return isinstance(record, dict) and record.get("table") == "remem-export"


def check_replaceable(path: Path, is_ours: Callable[[Path], bool], what: str, *, force: bool = False) -> None:
    """Refuse, in one line, to replace an existing file that is not `what` we would write there
    (an empty file is nothing to lose); `force` replaces it anyway. A path that exists but is
    not a regular file (a device, a FIFO) is refused: renaming over it would replace it."""
    if not path.exists() and not path.is_symlink():
        return
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file; name a file for {what}")
    if force or path.stat().st_size == 0 or is_ours(path):
        return
    raise ValueError(f"{path} exists and is not {what}; name another file, or add --force to replace it")


class DamagedCopy(ValueError):
    """The copy just taken fails SQLite's quick check: the memory it was taken from is
    damaged. The copy is kept at `kept`, outside the backups' rotation."""

    def __init__(self, problem: str, kept: Path) -> None:
        super().__init__(problem)
        self.problem, self.kept = problem, kept


def _copy(source: sqlite3.Connection, dest: Path, suffix: str, what: str = "a backup",
          check: bool = False) -> None:
    """Copy a live database to dest through a temporary file, then rename (never half a file).

    One step: a read snapshot of the WAL database, which never blocks writers. A copy in
    several steps starts over whenever another process writes in between (every prompt
    records its prime), so it took longer the busier the agents were.

    With `check`, a copy that fails PRAGMA quick_check never takes dest's name: it is kept as
    damaged-YYYYMMDD-HHMMSS.db beside it and DamagedCopy is raised.
    """
    tmp = dest.with_name(dest.name + suffix)
    try:
        try:
            target = sqlite3.connect(str(tmp))
        except sqlite3.OperationalError as exc:  # /proc/x.db, a folder SQLite cannot write in
            raise ValueError(f"cannot write {what} to {dest} ({exc}); check the path and its "
                             "permissions") from None
        try:
            try:
                source.backup(target)
            except sqlite3.Error as exc:
                # Only the copy is written: a full disk or a failed write is where it goes,
                # not the memory (a failed read of the memory is said as such, by the caller).
                if getattr(exc, "sqlite_errorname", None) in WRITE_ERRORS:
                    raise ValueError(f"could not write {what} to {dest} ({exc}); free space there "
                                     f"(df -h {dest.parent})") from None
                raise
            problem = _quick_check(target) if check else None
        finally:
            target.close()
        if problem is not None:
            kept = _free_name(dest.parent, "damaged-" + clock.now().strftime("%Y%m%d-%H%M%S"), ".db")
            tmp.replace(kept)
            _prune_damaged(dest.parent, kept)
            raise DamagedCopy(problem, kept)
        tmp.replace(dest)
    except BaseException:
        try:
            if tmp.is_file():
                tmp.unlink()
        except OSError:
            pass
        raise


_DAMAGED_NAME = re.compile(r"damaged-\d{8}-\d{6}(-\d+)?\.db")  # only remem's own copies


def _prune_damaged(folder: Path, kept: Path) -> None:
    """Of the damaged copies in the folder, keep the first (taken nearest to when the damage
    began: the most may still be read from it) and the one just kept (the newest writes);
    a memory left damaged for weeks would otherwise add a full copy every night."""
    def taken(path: Path) -> tuple[float, str]:
        try:
            return path.stat().st_mtime, path.name
        except OSError:
            return float("inf"), path.name

    copies = sorted((p for p in folder.glob("damaged-*.db") if _DAMAGED_NAME.fullmatch(p.name)),
                    key=taken)
    for path in copies[1:]:
        if path.name != kept.name:
            path.unlink(missing_ok=True)


def _quick_check(conn: sqlite3.Connection) -> str | None:
    """None when the database passes PRAGMA quick_check, else its first complaint."""
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    first = str(rows[0][0]) if rows else "no answer"
    if first == "ok":
        return None
    return " ".join(first.replace("*** in database main ***", "").split())  # one line


def _free_name(folder: Path, stem: str, suffix: str) -> Path:
    """folder/stem+suffix, or stem-2, stem-3 … when that name is taken."""
    candidate, n = folder / f"{stem}{suffix}", 1
    while candidate.exists():
        n += 1
        candidate = folder / f"{stem}-{n}{suffix}"
    return candidate


# The name `remem backup` gives a backup of its own: memory-YYYYmmdd-HHMMSS.db.
TIMED = re.compile(r"memory-(\d{8}-\d{6})\.db")


def newest_first(folder: Path, *, named: bool = False) -> list[Path]:
    """The folder's timed backups (TIMED), newest first by the time in their names; those
    timed after now (made while the clock was ahead) count as the oldest, since every backup
    made once the clock was right again holds later writes. With `named`, the backups a
    person named (`remem backup backups/memory-before-upgrade.db`) come after the timed
    ones of the past, newest first by when they were written; rotation never counts them."""
    now = clock.now().strftime("%Y%m%d-%H%M%S")
    timed, others = [], []
    for path in folder.glob("memory-*.db"):
        (timed if TIMED.fullmatch(path.name) else others).append(path)
    timed.sort(key=lambda p: p.name, reverse=True)
    past = [p for p in timed if p.name[7:22] <= now]
    ahead = [p for p in timed if p.name[7:22] > now]
    if not named:
        return past + ahead

    def written(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    return past + sorted(others, key=written, reverse=True) + ahead


def last_good_backup(folder: Path | None = None) -> Path | None:
    """The newest backup in the folder that `remem restore` would take (_check_backup: a
    remem memory it can read, passing SQLite's integrity check), or None."""
    folder = folder or paths.backups_dir()
    for path in newest_first(folder, named=True):
        try:
            _check_backup(path)
        except ValueError:
            continue
        return path
    return None


def rotate(keep: int, folder: Path | None = None, just_made: Path | None = None) -> list[Path]:
    """Delete all but the newest `keep` backups in the folder (at least one is always kept,
    and never `just_made`: the backup this call follows); returns what was removed."""
    folder = folder or paths.backups_dir()
    found = newest_first(folder)
    if just_made is not None:
        found = [p for p in found if p.name != just_made.name]
        keep -= 1  # the one just made counts as kept
    else:
        keep = max(keep, 1)
    removed = found[max(keep, 0):]
    for path in removed:
        path.unlink(missing_ok=True)
    # A backup or a copy before an upgrade cut short (its process killed) leaves a .partial;
    # one an hour old is not live.
    import time

    for partial in [*folder.glob("memory-*.db.partial"), *folder.glob("pre-upgrade-*.partial")]:
        try:
            if time.time() - partial.stat().st_mtime > 3600:
                partial.unlink()
        except OSError:
            pass
    return removed


def rotated_backup(store: Store, keep: int) -> tuple[Path, list[Path]]:
    """A backup into the backups folder, then all but the newest `keep` deleted."""
    dest = backup(store, check=True)  # a damaged copy raises: nothing is rotated out
    return dest, rotate(keep, dest.parent, just_made=dest)


def cannot_read(path: Path | str, exc: OSError) -> str:
    """The one line for a file the person named (or a folder holds) that cannot be read: the
    path once, the reason in words ("Permission denied", not "[Errno 13] ...: 'path'"), the fix."""
    return f"cannot read {path} ({exc.strerror or exc}); check the path and its permissions"


def restore(backup_path: Path | str, dest: Path | str | None = None) -> tuple[Path, Path | None]:
    """Copy a backup over the database. The old one is kept beside it as
    memory.db.before-restore-YYYYMMDDTHHMMSS (a new name each time: a second restore never
    overwrites the first one's copy). Returns (the database, the copy kept or None)."""
    src = Path(os.path.expanduser(backup_path))
    # Opening a missing path would create an empty memory and restore that over the real one.
    if not src.is_file():
        raise ValueError(f"no backup at {src}; backups made by `remem backup` are in {paths.backups_dir()}")
    try:
        head = open(src, "rb")
    except OSError as exc:
        raise ValueError(cannot_read(src, exc)) from None
    with head:
        if head.read(16) != b"SQLite format 3\x00":
            raise ValueError(f"{src} is not a remem backup (not an SQLite database); pick a file from "
                             f"{paths.backups_dir()}")
    _check_backup(src)
    dest = Path(dest) if dest else paths.db_path()
    # A server, TUI or running command would keep writing to the replaced file's open pages:
    # wait a moment for commands to finish, refuse while one still has it open.
    kept: Path | None = None
    with sole_user(dest):
        if dest.exists():
            kept = _before_restore_name(dest)
            try:
                with Store(dest, hold=False) as live:  # this process holds it exclusively
                    backup(live, kept, check=False)  # kept as it is, damaged or not
            except (StoreBusy, StoreReadOnly):
                raise
            except (StoreError, sqlite3.DatabaseError):
                # Too damaged to open or copy (truncated, overwritten): the very case a restore
                # is for. The file is kept as it is, with its log, under the same name.
                _set_aside(dest, kept)
            for suffix in ("-wal", "-shm"):
                Path(str(dest) + suffix).unlink(missing_ok=True)
        else:  # a log left by a memory deleted by hand would be replayed onto the restored copy
            set_orphaned_log_aside(dest)
        source = _open_read_only(src)
        try:  # copied as it is; the copy is migrated when the memory is next opened
            _copy(source, dest, ".restoring", what="the restored memory")
        finally:
            source.close()
        # Derived caches (memory-mapped vectors) describe the old database: drop them.
        shutil.rmtree(paths.vectors_dir(), ignore_errors=True)
    return dest, kept


def _set_aside(dest: Path, kept: Path) -> None:
    """Move a memory that cannot be opened, and its -wal/-shm, to `kept` as they are."""
    kept.with_name(kept.name + ".partial").unlink(missing_ok=True)  # a copy begun and failed
    for suffix in ("-wal", "-shm"):
        log = Path(str(dest) + suffix)
        if log.exists():
            os.replace(log, str(kept) + suffix)
    os.replace(dest, kept)


def _before_restore_name(dest: Path) -> Path:
    """A name no earlier restore used: memory.db.before-restore-YYYYMMDDTHHMMSS (-2, -3 … when
    two restores fall in one second), so every memory a restore replaced is kept."""
    base = f"{dest.name}.before-restore-{clock.now().strftime('%Y%m%dT%H%M%S')}"
    candidate, n = dest.with_name(base), 1
    while candidate.exists() or candidate.with_name(candidate.name + ".partial").exists():
        n += 1
        candidate = dest.with_name(f"{base}-{n}")
    return candidate


def _open_read_only(path: Path) -> sqlite3.Connection:
    """The backup, opened so nothing can change it: a Store would migrate it in place, and a
    plain read-only open of a WAL file leaves -wal/-shm beside it. Immutable when it has no
    -wal (nothing else writes a backup); otherwise read-only, so the -wal's pages are read."""
    from urllib.parse import quote

    mode = "ro" if Path(str(path) + "-wal").exists() else "ro&immutable=1"
    return sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode={mode}", uri=True)


def _check_backup(src: Path) -> None:
    """Refuse what is not a remem memory (another program's database, a newer schema) before
    anything is replaced, and a backup that fails its integrity check."""
    hint = f"pick a file from {paths.backups_dir()}"
    try:
        conn = _open_read_only(src)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            has_episodes = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'episodes'").fetchone()
            if version > len(MIGRATIONS) and has_episodes:
                raise ValueError(f"{src} was written by a newer remem (schema {version}); upgrade remem")
            if not 1 <= version <= len(MIGRATIONS) or not has_episodes:
                raise ValueError(f"{src} is not a remem backup (an SQLite database of another kind); {hint}")
            result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{src} is not a remem backup ({exc}); {hint}") from None
    if result != "ok":
        raise ValueError(f"{src} fails its integrity check ({result}); pick another backup")


def _encode(row: dict[str, Any], table: str) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        if key in _SKIP_COLUMNS.get(table, ()):
            continue
        if key in _BLOB_COLUMNS and value is not None:
            value = base64.b64encode(value).decode("ascii")
        out[key] = value
    return out


def export_rows(store: Store) -> Iterator[dict[str, Any]]:
    """Every record of the memory, as dicts with a `table` key, header first."""
    yield {
        "table": "remem-export", "v": EXPORT_VERSION, "schema": len(MIGRATIONS),
        "exported": clock.iso(),
    }
    for table in EXPORT_TABLES:
        order = {"episodes": "seq", "lessons": "seq", "forgotten": "id"}.get(table, "rowid")
        cursor = store.conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
        names = [d[0] for d in cursor.description]
        for values in cursor:
            yield {"table": table, **_encode(dict(zip(names, values)), table)}


def export_jsonl(store: Store, out: TextIO) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in export_rows(store):
        out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        counts[record["table"]] = counts.get(record["table"], 0) + 1
    counts.pop("remem-export", None)
    return counts


MAX_IMPORT_LINE = 16_000_000  # characters; an episode is capped far below this


def import_jsonl(store: Store, lines: Iterator[str] | TextIO) -> dict[str, Any]:
    """Load an export. Rows with an id already present are updated, unless changed here since
    (a later last_touched or updated: counted in "kept"); a memory archived on either side ends
    archived (a forget wins; an import never un-archives); a lesson vetoed or revoked here stays
    so ("kept": vetoed_lessons, revoked_lessons); an edge already present is kept; a task's
    last run keeps the later time. Bad lines are reported by number with the
    reason and skipped; the rest is imported."""
    types = {t: _column_types(store, t) for t in EXPORT_TABLES}
    columns = {t: set(types[t]) for t in EXPORT_TABLES}
    counts: dict[str, int] = {}
    forgotten: list[str] = []  # episodes deleted for good here: an import does not bring them back
    errors: list[str] = []
    kept: dict[str, int] = {}  # what this memory kept over the import (see _write)
    kept_lessons: set[str] = set()  # lessons kept as they are here: their predictions too
    batch: list[tuple[int, str, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(line) > MAX_IMPORT_LINE:
            errors.append(f"line {number}: longer than {MAX_IMPORT_LINE} characters")
            continue
        try:
            record = json.loads(line)
            table = record.pop("table")
        except (ValueError, KeyError, AttributeError, TypeError, RecursionError):
            errors.append(f"line {number}: not an export record")
            continue
        if table == "remem-export":
            version = record.get("v", 0)
            if isinstance(version, int) and not isinstance(version, bool) and version > EXPORT_VERSION:
                raise ValueError(f"export format v{version} is newer than this remem; upgrade remem")
            continue
        if not isinstance(table, str) or table not in columns:
            errors.append(f"line {number}: unknown table {str(table)[:40]!r}")
            continue
        row = {k: v for k, v in record.items() if k in columns[table]}
        if not row:
            errors.append(f"line {number}: no {table} fields")
            continue
        problem = _row_problem(table, row, types[table])
        if problem:
            errors.append(f"line {number}: {problem}")
            continue
        batch.append((number, table, row))
        if len(batch) >= 2000:
            _write(store, batch, counts, errors, forgotten, kept, kept_lessons)
            batch = []
    _write(store, batch, counts, errors, forgotten, kept, kept_lessons)
    errors.sort(key=lambda e: int(e.split(":")[0].split()[-1]))  # rows refused by SQLite come last
    result: dict[str, Any] = {"imported": counts, "errors": errors, "left_out_forgotten": forgotten}
    if kept:  # rows changed here since the export, and lessons left vetoed or revoked
        result["kept"] = kept
    return result


# Columns every reader parses as a time: one that does not parse broke recall and the decays
# for the whole memory, so the row is refused; one that does is kept in the store's one form.
_TIME_COLUMNS = {
    "episodes": ("at", "created", "last_touched", "expires_at", "flashbulb_until"),
    "lessons": ("created", "updated"),
    "predictions": ("made", "resolved"),
    "tasks": ("last_run",),
    "forgotten": ("at",),
}


# Values every reader takes from a fixed set: one outside it made the memory unlistable or
# invisible to recall (`list --kind` refuses it, the type filters never match it).
_ENUMS = {
    ("episodes", "kind"): EPISODE_KINDS,
    ("episodes", "memory_type"): ("short_term", "long_term"),
}


def _row_problem(table: str, row: dict[str, Any], types: dict[str, str] | None = None) -> str | None:
    """Decode vectors, normalise times and tags, and refuse values SQLite cannot hold (nested
    JSON, huge integers), that are not times where a time belongs, not numbers where a number
    belongs ("strength": "high" broke recall and the decays for the whole memory), or not one
    of the store's kinds and memory types."""
    for key, declared in (types or {}).items():
        value = row.get(key)
        if value is None or declared not in ("REAL", "INTEGER"):
            continue  # absent or NULL: a required one is refused by SQLite itself
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or (isinstance(value, float) and not math.isfinite(value)):
            kind = "a whole number" if declared == "INTEGER" else "a number"
            return f"{key} is not {kind}: {str(value)[:40]!r}"
        if declared == "INTEGER" and isinstance(value, float):
            if not value.is_integer():
                return f"{key} is not a whole number: {value!r}"
            row[key] = int(value)
    for (where, key), allowed in _ENUMS.items():
        if where == table and key in row and row[key] not in allowed:
            return f"{key} {str(row[key])[:40]!r} is not one of {', '.join(allowed)}"
    if table == "tags" and "tag" in row:
        if not isinstance(row["tag"], str) or not normalise_tag(row["tag"]):
            return f"tag is not a tag: {str(row['tag'])[:40]!r}"
        row["tag"] = normalise_tag(row["tag"])  # as `remember` stores it, so --tag finds it
    if table in ("episodes", "lessons") and isinstance(row.get("cwd"), str):
        row["cwd"] = normal_folder(row["cwd"])  # the one spelling the store keeps
    for key in _TIME_COLUMNS.get(table, ()):
        value = row.get(key)
        if value is None:
            continue  # absent or empty; a required one is refused by SQLite itself
        stamp = clock.normalise(value)
        if stamp is None:
            return f"{key} is not a time: {str(value)[:40]!r} (an export has ISO 8601 times)"
        row[key] = stamp
    if table == "tasks" and not isinstance(row.get("name"), str):
        return "a task needs its name"  # its key may be NULL in SQLite: refused here instead
    if table == "tasks" and row.get("last_run") and row["last_run"] > clock.iso():
        row["last_run"] = clock.iso()  # a task run in the future would stop its decay until then
    for key, value in row.items():
        if key in _BLOB_COLUMNS and value is not None:
            if not isinstance(value, str):
                return f"{key} is not base64"
            try:
                row[key] = base64.b64decode(value, validate=True)
            except ValueError:
                return f"{key} is not base64"
        elif isinstance(value, (dict, list)):
            return f"{key} holds {type(value).__name__} where a plain value belongs"
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2 ** 63:
            return f"{key} is out of range"
    return None


def _column_types(store: Store, table: str) -> dict[str, str]:
    """The importable columns of a table, each with its declared type (REAL, INTEGER, TEXT …)."""
    skip = _SKIP_COLUMNS.get(table, set())
    return {r["name"]: str(r["type"] or "").upper()
            for r in store.rows(f"PRAGMA table_info({table})") if r["name"] not in skip}


# Where a row already present is updated in place rather than replaced. INSERT OR REPLACE
# deletes the old row without firing delete triggers (recursive triggers are off), so the
# full-text indexes kept an entry for every replaced episode and lesson: malformed.
_UPSERT_KEYS = {"episodes": ("id",), "lessons": ("id",)}
# The time each of them is stamped with when it changes here (forget, archiving, an edit and
# every recall stamp an episode's last_touched; a veto, an edit, a revocation a lesson's
# updated): a row changed here since the export was written is kept, so an older export never
# undoes a veto. An episode's archived flag is never taken back by an import, and an archived
# row in the export archives the one here even when that one was touched since.
_CHANGED_AT = {"episodes": "last_touched", "lessons": "updated"}
# Lessons the person or their author rejected: an import never makes them active again.
_REJECTED = ("vetoed", "revoked")


def _insert(table: str, row: dict[str, Any], keep_existing: bool = False) -> tuple[str, dict[str, Any]]:
    """The statement that writes one imported row of a table without triggers, and its named
    parameters (`keep_existing`: the row is added only when its key is not here yet)."""
    cols = list(row)
    names = ", ".join(cols)
    values = ", ".join(f":{c}" for c in cols)
    if table == "connections":
        # An edge already here is kept, not doubled; for a symmetric type also when it was
        # stored the other way round (as graph.connect does).
        symmetric = ", ".join(f"'{t}'" for t in sorted(SYMMETRIC))
        params = {"src": None, "dst": None, "type": None, **row}  # missing: NOT NULL says so
        return (f"INSERT INTO connections ({names}) SELECT {values} WHERE NOT EXISTS ("
                "SELECT 1 FROM connections WHERE src = :dst AND dst = :src AND type = :type "
                f"AND :type IN ({symmetric})) ON CONFLICT (src, dst, type) DO NOTHING", params)
    if table == "tasks":
        # The decayed values imported were decayed up to their memory's last run, this
        # memory's own up to its: the later of the two means no memory is decayed twice.
        return (f"INSERT INTO tasks ({names}) VALUES ({values}) ON CONFLICT (name) DO UPDATE SET "
                "last_run = CASE WHEN tasks.last_run IS NULL OR excluded.last_run > tasks.last_run "
                "THEN excluded.last_run ELSE tasks.last_run END, "
                "interval_s = coalesce(tasks.interval_s, excluded.interval_s)", row)
    verb = "INSERT OR IGNORE" if keep_existing else "INSERT OR REPLACE"
    return f"{verb} INTO {table} ({names}) VALUES ({values})", row


def _put(conn: sqlite3.Connection, table: str, row: dict[str, Any], keep_existing: bool = False) -> int:
    """Write one imported row; the number of rows written (0: kept as it is here). An episode
    or a lesson already here is updated in place, never through an UPSERT (INSERT … ON CONFLICT
    DO UPDATE): inside one SQLite overrides the OR IGNORE of the statements its triggers run,
    so the speakers trigger refused every episode whose speaker was already known."""
    keys = _UPSERT_KEYS.get(table)
    if keys is None:
        return conn.execute(*_insert(table, row, keep_existing)).rowcount
    params = {**{k: None for k in keys}, **row}  # a missing key: NOT NULL refuses the row
    match = " AND ".join(f"{k} = :{k}" for k in keys)
    if conn.execute(f"SELECT 1 FROM {table} WHERE {match}", params).fetchone() is None:
        cols = list(row)
        return conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) "
                            f"VALUES ({', '.join(':' + c for c in cols)})", row).rowcount
    rest = [c for c in row if c not in keys]
    if not rest:
        return 0
    sets = [f"{c} = :{c}" for c in rest]
    if table == "lessons" and "status" in rest:
        rejected = ", ".join(f"'{s}'" for s in _REJECTED)
        sets[rest.index("status")] = (f"status = CASE WHEN status IN ({rejected}) "
                                      "THEN status ELSE :status END")
    if table == "episodes" and "archived" in rest:
        # An import never brings back a memory archived (forgotten) here, whatever its times
        # say: a recall elsewhere makes the export's row later without undoing anything.
        sets[rest.index("archived")] = "archived = max(archived, :archived)"
    changed = _CHANGED_AT[table]
    newer = f" AND ({changed} IS NULL OR :{changed} >= {changed})" if changed in row else ""
    return conn.execute(f"UPDATE {table} SET {', '.join(sets)} WHERE {match}{newer}", params).rowcount


# The columns of each table that name a memory (an episode id).
_MEMORY_REFS = {"episodes": ("id",), "tags": ("memory_id",), "connections": ("src", "dst")}


def _write(store: Store, batch: list[tuple[int, str, dict[str, Any]]], counts: dict[str, int],
           errors: list[str], forgotten: list[str], kept: dict[str, int], kept_lessons: set[str]) -> None:
    if not batch:
        return
    # A memory deleted for good here stays deleted: its episode, and its tags and connections
    # (which would otherwise come back pointing at nothing, and its tags list it again).
    gone = store.forgotten({str(row[key]) for _, table, row in batch
                            for key in _MEMORY_REFS.get(table, ()) if row.get(key) is not None})
    brought = False
    with store.write() as conn:
        for number, table, row in batch:
            refs = [str(row.get(key)) for key in _MEMORY_REFS.get(table, ())]
            if any(ref in gone for ref in refs):
                if table == "episodes":
                    forgotten.append(refs[0])
                continue
            if table == "forgotten" and row.get("id") is not None and conn.execute(
                    "SELECT 1 FROM episodes WHERE id = ?", (str(row["id"]),)).fetchone():
                # A memory that is live here wins over another memory's deletion of it:
                # marking it deleted would leave it live yet left out of every later import.
                continue
            held = None  # a lesson rejected here, which the import must leave rejected
            if table == "lessons" and row.get("status") not in _REJECTED and row.get("id") is not None:
                held = conn.execute("SELECT status FROM lessons WHERE id = ? AND status IN (?, ?)",
                                    (str(row["id"]), *_REJECTED)).fetchone()
            # A lesson kept as it is here keeps its predictions as they are (a sweep may have
            # redacted both: the export's words would bring a secret back beside it).
            own = table == "predictions" and str(row.get("lesson_id")) in kept_lessons
            try:
                written = _put(conn, table, row, keep_existing=own)
            except sqlite3.Error as exc:  # a missing required field, a wrong type: this row only
                errors.append(f"line {number}: {table} row refused ({exc})")
                continue
            if written == 0 and table == "episodes" and row.get("archived"):
                # Forgotten where the export was made, touched here since (a recall bumps
                # last_touched): the forget wins; `remem forget --undo ID` brings it back.
                written = conn.execute("UPDATE episodes SET archived = 1 WHERE id = ? AND archived = 0",
                                       (str(row["id"]),)).rowcount
            if written == 0 and table in _CHANGED_AT:  # changed here since the export: kept
                kept[table] = kept.get(table, 0) + 1
                if table == "lessons":
                    kept_lessons.add(str(row.get("id")))
                continue
            if written == 0 and own:
                continue
            if held is not None:
                kept[f"{held[0]}_lessons"] = kept.get(f"{held[0]}_lessons", 0) + 1
            counts[table] = counts.get(table, 0) + 1
            if table == "forgotten" and row.get("id") is not None:
                gone.add(str(row["id"]))  # what follows in this batch is left out too
            brought = brought or table in ("episodes", "lessons")
        if brought:
            from remem.engine.scrub import rescan

            # Rows of any age, new or over ones already here, may hold the secrets an older
            # release kept: the next sleep's redaction sweep reads every row again.
            rescan(conn)


def snapshot(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every exported table as sorted rows without internal row numbers (for comparisons)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for table in EXPORT_TABLES:
        rows = [_encode(r, table) for r in store.rows(f"SELECT * FROM {table}")]
        out[table] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out
