"""The one SQLite file: connections and the core reads and writes (the schema: schema.py).

Connections are plain sqlite3 in autocommit mode; writes go through `Store.write()`, a short
BEGIN IMMEDIATE transaction retried with backoff on SQLITE_BUSY. sqlite-utils is imported only
when a migration is pending, so opening an up-to-date store stays cheap on the hook path.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from remem import paths
from remem.engine import clock
from remem.engine.projects import normal_folder
from remem.engine.schema import MIGRATIONS, apply_migrations  # MIGRATIONS re-exported
from remem.engine.text import clean_text  # re-exported: callers import it from here
from remem.errors import LessonNotMemory, NotFound, StoreError, read_only_mount, readonly_advice, store_problem

BUSY_TIMEOUT_MS = 5000
WAIT_STEP_MS = 50  # what SQLite waits in one go for a Store told of its waits (on_wait)
# SQLite's names for a write that failed where a copy was being written (a full disk, a failed
# write): the copy's place is at fault, not the memory it was taken from.
WRITE_ERRORS = frozenset({"SQLITE_FULL", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_FSYNC",
                          "SQLITE_IOERR_TRUNCATE"})
EPISODE_KINDS = ("session", "error", "correction", "surprise", "environment", "note")
LESSON_STATUSES = ("active", "candidate", "vetoed", "revoked", "quarantined")
CONNECTION_TYPES = (
    "related_to", "caused_by", "part_of", "references",
    "contradicts", "supports", "similar_to", "derived_from",
)
# Caps on stored text: what exceeds them is truncated with this marker, never dropped.
MAX_TITLE = 300
MAX_GIST = 4000
MAX_DETAIL = 64_000
MAX_SPEAKER = 200
MAX_TAG = 100
MAX_TAGS = 32  # a memory's tags, however it is stored: every answer that finds it carries them
TRUNCATED = " …[truncated by remem]"

EPISODE_COLUMNS = (
    "id", "session_id", "source", "cwd", "kind", "title", "gist", "detail", "at", "created",
    "strength", "recalls", "last_touched", "archived", "memory_type", "expires_at",
    "importance", "valence", "arousal", "flashbulb_until", "health", "content_hash",
    "space", "embedding", "speaker",
)


# --------------------------------------------------------------------------- connection

# The file is never opened by hand to check its header: closing any descriptor of the
# database file drops every POSIX lock this process holds on it, so another process could
# then checkpoint and delete the WAL under a live connection (lost writes, a corrupt index).
# SQLite's own "file is not a database" error says the same thing safely. (stat() opens
# nothing, so the size of an empty file is looked at that way.)


class StoreBusy(StoreError, sqlite3.OperationalError):
    """Another process held the write lock for the whole busy timeout (5 s; a hook: what is
    left of its budget). Still an OperationalError, so code that caught SQLite's "database is
    locked" catches it; a caller that can do without its write (recall's touch) can tell it
    from a failed read by its type."""


class StoreReadOnly(StoreError, sqlite3.OperationalError):
    """A write refused because the memory (its file, its -wal/-shm, or its folder) is
    read-only; the message names the chmod that fixes it (or the read-only mount, where no
    chmod can). Reads still work."""


# Memories this process created (a new file it initialised): only such a file may be met
# empty again without the refusal below.
_created: set[str] = set()


def _busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Stepped(sqlite3.Connection):
    """A connection whose waits for a lock are made in Python (Store(busy_step_ms=…), the
    hooks): SQLite waits at most `step` seconds in one go, and execute() tries again until
    `until` (time.monotonic()). A signal's Python handler cannot run while SQLite waits, so
    one long wait kept a hook's SIGTERM (the agent giving up on it) unanswered until it ended."""

    until = 0.0
    step = 0.05

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        while True:
            began = time.monotonic()
            try:
                return super().execute(sql, parameters)
            except sqlite3.OperationalError as exc:
                now = time.monotonic()
                if not _busy(exc) or now >= self.until:
                    raise
            if now - began < self.step / 2:  # busy at once, without SQLite's wait: pause
                time.sleep(min(self.step, self.until - now))


def _lost_race(exc: BaseException) -> bool:
    """A migration that failed because another process ran it first (two first opens at
    once): its table or column is there already, or its row in _sqlite_migrations is."""
    text = str(exc).lower()
    return any(s in text for s in ("already exists", "duplicate column", "unique constraint"))


def set_orphaned_log_aside(db: Path) -> None:
    """Before a missing memory `db` is made anew: a -wal or -shm still beside it belongs to the
    file that was deleted or moved away by hand, and SQLite would replay that file's last pages
    onto the new, empty one (a memory "damaged" from its first open, or the deleted one back).
    They are renamed aside (`memory.db-wal.orphaned-YYYYMMDDTHHMMSS`), never deleted, with one
    line on stderr and in the log saying so. Store calls it only when memory.db is missing, so
    opening an existing one (every hook) pays nothing for it."""
    log_files = [Path(f"{db}-wal"), Path(f"{db}-shm")]
    if not any(os.path.lexists(f) for f in log_files):
        return
    from remem.engine.files import locked

    planned: list[tuple[Path, Path]] = []
    aside: list[tuple[Path, Path]] = []
    try:
        # The lock: two remem opening this memory at once may both find the orphans; the
        # second, renaming after the first made the new memory.db and its log, would take that
        # live log. (The in-use mark cannot serve: every open store holds it shared.)
        with locked(db.with_name(f"{db.name}.orphaned.lock")):
            # -wal/-shm first, memory.db second. SQLite makes a file's -wal and -shm only once
            # the file exists, so a log seen before memory.db is seen missing was made for a
            # file deleted since, never the live log of a concurrent first open (its memory.db
            # would be there). The other order could take a live one: memory.db missing, then
            # another remem creates it and its log, then that log is seen.
            left = [f for f in log_files if os.path.lexists(f)]
            if not left or os.path.exists(db):
                return
            planned = list(zip(left, _orphan_names(left)))
            for f, target in planned:
                try:
                    os.rename(f, target)
                except FileNotFoundError:
                    continue  # gone meanwhile (where flock does not exist): as wanted
                aside.append((f, target))
    except OSError as exc:
        todo = [f"mv {f} {target}" for f, target in planned if (f, target) not in aside] or \
               [f"mv {f} {f}.orphaned" for f in log_files if os.path.lexists(f)]
        raise StoreError(
            f"{db.name} is missing but the log of a deleted memory is left beside it and could not "
            f"be moved aside ({exc.strerror or exc}); move it aside: {'; '.join(todo)}",
            fix="; ".join(todo)) from None
    if not aside:
        return
    from remem.log import log

    log("store", f"{db.name} was deleted but its write-ahead log was left: moved "
                 f"{', '.join(f'{f.name} to {t.name}' for f, t in aside)} in {db.parent}, "
                 "so the new, empty memory does not replay it", stderr=True)


def _orphan_names(left: list[Path]) -> list[Path]:
    """`<name>.orphaned-YYYYMMDDTHHMMSS` for each file (-2, -3 … when a name is taken)."""
    stamp = clock.now().strftime("%Y%m%dT%H%M%S")
    n = 1
    while True:
        suffix = f".orphaned-{stamp}" + (f"-{n}" if n > 1 else "")
        names = [f.with_name(f.name + suffix) for f in left]
        if not any(os.path.lexists(t) for t in names):
            return names
        n += 1


class Store:
    """One open memory.db. Cheap to open; use as a context manager or call close()."""

    def __init__(self, path: Path | str | None = None, *, migrate_upto: int | None = None,
                 busy_timeout_ms: int | None = None, hold: bool = True, create: bool = True,
                 busy_step_ms: int | None = None, on_wait: Callable[[bool], None] | None = None) -> None:
        # busy_timeout_ms: hooks pass a short one so a locked store costs them little. It bounds
        # every wait for a lock, retries included (see _retry).
        # busy_step_ms (hooks, which live a moment): SQLite waits at most this long in one go,
        # Python again until busy_timeout_ms after the open, so a signal is handled within a
        # step (see _Stepped).
        # on_wait (the TUI): told True when a write finds the memory held by another process
        # and waits for it, False once it has it or gave up; SQLite then waits WAIT_STEP_MS at
        # a time and _retry the rest, so the wait is known at once, not after the whole of it.
        # create=False (hooks): never create nor initialise a memory; a missing, empty or
        # uninitialised file is a StoreError.
        busy = BUSY_TIMEOUT_MS if busy_timeout_ms is None else int(busy_timeout_ms)
        self.busy_ms = busy
        self._on_wait = on_wait
        self._stepped = busy_step_ms is not None
        if on_wait is not None and busy_step_ms is None:
            busy_step_ms = WAIT_STEP_MS
        # What SQLite itself waits in one go: all of busy, or one step of it.
        self._wait_ms = busy if busy_step_ms is None else max(1, min(busy, int(busy_step_ms)))
        self._until = time.monotonic() + busy / 1000
        self.path = Path(path) if path else paths.db_path()
        # hold=False is `remem restore` replacing the memory (it holds it exclusively): an
        # empty file is what it mends, so it may open one.
        fresh = self._check_file(create, refuse_empty=hold)
        if create:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                if exc.errno != errno.EROFS:
                    raise
                # A new home on a read-only mount: named as the memory is, not as any path.
                _kind, line, fix = store_problem(OSError(exc.errno, exc.strerror, str(self.path)))
                raise StoreError(line, fix=fix) from None
        if fresh:
            self._make_file()
        # The live memory is marked in use while open, so `remem restore` never replaces it
        # under a running command (backups and sleep's dry-run copies are not the memory;
        # restore itself opens it with hold=False).
        self._hold = None
        if hold and self.path.absolute() == paths.db_path().absolute():
            from remem.engine.files import hold_open

            try:
                self._hold = hold_open(self.path, wait=busy / 1000)  # as long as SQLite would wait
            except OSError as exc:
                # A read-only home: the mark cannot be made there, and no restore can replace
                # the file there either. Go on without it; SQLite says what it can do.
                if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise
        try:
            self._connect(busy, migrate_upto, create)
        except BaseException:
            self._release()
            raise
        if fresh:
            _created.add(str(self.path.absolute()))

    def _check_file(self, create: bool, refuse_empty: bool = True) -> bool:
        """Before SQLite opens the path: True when the file is new (SQLite creates it). A file
        of 0 bytes was a memory once (SQLite writes a header when it makes one, at once), so
        it is refused rather than silently started anew, unless this process made it."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if not create:
                raise StoreError(f"no memory yet at {self.path}; run `remem ingest` first") from None
            set_orphaned_log_aside(self.path)
            return True
        except OSError:
            return False  # SQLite reports what it cannot open
        if not stat.S_ISREG(st.st_mode):
            # A folder, a device (/dev/zero), a FIFO: never handed to SQLite (a FIFO would
            # block it, a device read as an endless empty file).
            raise StoreError(f"{self.path} is not a regular file; move it aside, or `remem restore` "
                             f"a backup from {paths.backups_dir()}",
                             fix=f"mv {self.path} {self.path}.aside   (then remem restore, or start anew)")
        if st.st_size or (create and not refuse_empty):
            return False
        if str(self.path.absolute()) in _created or self._wal_has_data():
            return False
        if create:
            # Another remem may have made it a moment ago and not yet written its header.
            time.sleep(0.05)
            try:
                if os.stat(self.path).st_size or self._wal_has_data():
                    return False
            except OSError:
                return False
        raise StoreError(
            f"{self.path.name} is empty (0 bytes); restore a backup with `remem restore` or delete "
            f"it to start anew ({self.path})",
            fix=f"remem restore   (a backup from {paths.backups_dir()}), or rm {self.path} to start anew",
        )

    def _make_file(self) -> None:
        """A new memory is made beside its place, with SQLite's header written, and linked in
        whole: a process killed while making it (a hook's timeout, Ctrl-C on a first ingest)
        leaves no 0-byte memory.db, which the next run would have to refuse as a memory lost."""
        made = self.path.with_name(f".{self.path.name}.{os.getpid()}.new")
        for stale in self.path.parent.glob(f".{self.path.name}.*.new"):
            # left by a run killed while making the memory (a live maker's is linked in a moment)
            try:
                if time.time() - stale.stat().st_mtime > 60:
                    stale.unlink()
            except OSError:
                pass
        try:
            conn = sqlite3.connect(str(made), isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")  # writes the header; no -wal left
            finally:
                conn.close()
            os.link(made, self.path)
        except FileExistsError:
            pass  # another remem made it a moment ago: that one is the memory
        except (OSError, sqlite3.Error):
            pass  # read-only, no links here, or no room: SQLite opens it in place and says what fails
        finally:
            for leftover in (made, Path(f"{made}-wal"), Path(f"{made}-shm")):
                try:
                    leftover.unlink()
                except OSError:
                    pass

    def _wal_has_data(self) -> bool:
        try:
            return os.stat(f"{self.path}-wal").st_size > 0
        except OSError:
            return False

    def _connect(self, busy: int, migrate_upto: int | None, create: bool = True) -> None:
        version = None
        target = len(MIGRATIONS) if migrate_upto is None else migrate_upto
        try:
            stepped = self._stepped and self._wait_ms < busy
            self.conn = sqlite3.connect(
                str(self.path), timeout=self._wait_ms / 1000, isolation_level=None,
                check_same_thread=False, factory=_Stepped if stepped else sqlite3.Connection,
            )
            if stepped:
                self.conn.until, self.conn.step = self._until, self._wait_ms / 1000
            self.conn.row_factory = sqlite3.Row
            self.conn.execute(f"PRAGMA busy_timeout = {self._wait_ms}")
            self._retry(lambda: self.conn.execute("PRAGMA journal_mode = WAL"))
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = OFF")
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0 and not create:
                raise StoreError(f"no memory yet at {self.path} (it holds no remem schema); "
                                 "run `remem ingest` first")
            if version < target:
                if not create:
                    # A hook: copying a large memory before its upgrade outlasts the few
                    # seconds an agent gives a hook, which kills it and leaves the copy half
                    # made for the next prompt to start again. The next command upgrades it.
                    raise StoreError(f"the memory needs an upgrade (schema {version} to {target}); "
                                     "any remem command does it", fix="remem status")
                if (version > 0 and self.path.absolute() == paths.db_path().absolute()
                        and os.access(self.path, os.W_OK)):
                    self._upgrade_with_copy(version, target, busy)
                else:
                    # A read-only memory is not copied: its upgrade fails, says so and changes
                    # nothing. Nor is a database that is not the home's memory.
                    self._migrate(target, busy)
            elif version > len(MIGRATIONS):
                raise StoreError(
                    f"{self.path} was written by a newer remem (schema {version}); upgrade remem"
                )
        except StoreError:
            self._close_quietly()
            raise
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise self._open_error(exc, version, target) from None

    def _migrate(self, target: int, busy: int) -> None:
        try:
            self._retry(lambda: apply_migrations(self.conn, target))
        except StoreBusy:
            raise
        except (sqlite3.OperationalError, sqlite3.IntegrityError) as exc:
            if not _lost_race(exc):
                raise
            # Two first opens at once (a server's threads, two commands on an old memory that
            # is not the home's): the other one migrated between our look at the version and
            # our write. Wait for it to finish (within this open's busy timeout) rather than
            # fail; if the version never arrives, say what failed.
            try:
                self._await_version(target, busy / 1000)
            except StoreError:
                raise exc from None

    def _upgrade_with_copy(self, version: int, target: int, busy: int) -> None:
        """The home's memory upgraded by one remem at a time: under an exclusive lock on
        backups/.upgrade.lock, the version is read again (another remem may have upgraded it
        while this one waited: then there is nothing to do), the copy is kept, then the
        migrations run. Two first opens at once never write two full copies."""
        from remem.engine.files import locked

        folder = paths.backups_dir()
        with ExitStack() as held:
            try:
                held.enter_context(locked(folder / ".upgrade.lock"))
            except OSError as exc:  # no backups folder can be made (a file in its place)
                raise self._copy_refused(version, target, folder, exc) from None
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            if version >= target:
                return
            self._copy_before_upgrade(version, target)
            self._migrate(target, busy)

    def _copy_before_upgrade(self, version: int, target: int) -> None:
        """Before this remem upgrades the memory's schema (holding the upgrade lock): a copy
        of it as it is, in backups/pre-upgrade-schema<version>-YYYYMMDD-HHMMSS.db (outside the
        rotation of memory-*.db), written whole or not at all, as every backup is
        (backup._copy). When it cannot be written (a full disk) the upgrade is refused, in one
        line naming the fix: the memory is left as it was rather than changed with no copy to
        go back to."""
        from remem.engine.backup import _copy, _free_name  # backup imports this module

        folder = paths.backups_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            # Copies cut short by a killed remem: no other is being written (the lock is ours).
            for stale in folder.glob("pre-upgrade-*.partial"):
                stale.unlink(missing_ok=True)
            dest = _free_name(folder, f"pre-upgrade-schema{version}-{clock.now():%Y%m%d-%H%M%S}", ".db")
            _copy(self.conn, dest, ".partial", what="the copy kept before the upgrade")
        except (OSError, ValueError) as exc:  # _copy says a full disk, or a copy it cannot open, so
            raise self._copy_refused(version, target, folder, exc) from None
        except sqlite3.Error as exc:
            # The copy's file, made in a backups folder made read-only, SQLite cannot write; any
            # other failure is the memory's own: said as for any open.
            if getattr(exc, "sqlite_errorname", None) not in ("SQLITE_CANTOPEN", "SQLITE_READONLY"):
                raise
            raise self._copy_refused(version, target, folder, exc) from None

    def _copy_refused(self, version: int, target: int, folder: Path, exc: BaseException) -> StoreError:
        reason = getattr(exc, "strerror", None) or exc
        return StoreError(
            f"this remem upgrades {self.path.name} (schema {version} to {target}) only after "
            f"keeping a copy of it, which could not be written to {folder} ({reason}); free some "
            "space there (or make it writable) and run remem again",
            fix=f"df -h {folder}   (free some space there), then run remem again")

    def _open_error(self, exc: sqlite3.DatabaseError, version: int | None, target: int) -> StoreError:
        """SQLite's failure to open (or upgrade) the memory as one line naming the right fix:
        a read-only file or folder, a full disk or I/O error, a busy file and a damaged one
        each have their own."""
        try:
            odd = self.path.exists() and not self.path.is_file()
        except OSError:
            odd = False
        if odd:
            return StoreError(f"{self.path} is not a regular file ({exc}); move it aside, or "
                              f"`remem restore` a backup from {paths.backups_dir()}",
                              fix=f"mv {self.path} {self.path}.aside   (then remem restore, or start anew)")
        if "not a database" in str(exc):
            return StoreError(
                f"{self.path} is not a SQLite database; restore it from a backup "
                f"(`remem backup` copies live in {paths.backups_dir()}) or move it aside",
                fix=f"remem restore   (a backup from {paths.backups_dir()}), or move {self.path} aside")
        found = store_problem(exc, self.path)
        if found is None:
            return StoreError(
                f"cannot open {self.path} ({exc}); run `remem doctor`, or `remem restore` a backup "
                f"from {paths.backups_dir()}")
        kind, message, fix = found
        if kind == "readonly":
            upgrade = (f" and this remem must upgrade it (schema {version} to {target})"
                       if version is not None and version < target else "")
            advice = readonly_advice(self.path, read_only_mount(self.path))[0]
            return StoreReadOnly(f"{self.path} is read-only{upgrade} ({exc}); {advice}", fix=fix)
        if kind == "busy":
            return StoreBusy(message, fix=fix)
        return StoreError(message, fix=fix)

    def _close_quietly(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def _await_version(self, target: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.conn.execute("PRAGMA user_version").fetchone()[0] < target:
            if time.monotonic() > deadline:
                raise StoreError(f"{self.path} is being upgraded by another process; try again")
            time.sleep(0.05)

    # -- plumbing ---------------------------------------------------------------------
    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass
        self._release()

    def _release(self) -> None:
        if self._hold is not None:
            self._hold.close()
            self._hold = None

    def _retry(self, fn: Callable[[], Any]) -> Any:
        """fn(), tried again with backoff while SQLite reports the file busy, for at most the
        busy timeout in all: SQLite itself waits up to it on a lock, so each retry gets only
        what is left (the documented 5 s is the whole wait, not one of eight). Busy past it:
        StoreBusy."""
        start = time.monotonic()
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if isinstance(exc, StoreError) or not _busy(exc):
                raise
            last: sqlite3.OperationalError = exc
        import random  # only when busy: hooks open the store and should not pay for it

        if self._on_wait is not None:
            self._on_wait(True)

        deadline = start + self.busy_ms / 1000
        delay = 0.02
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0.001:
                    break
                # Some busy answers come at once, without SQLite's wait (WAL recovery, a
                # snapshot gone stale): back off a little, then wait for what is left.
                time.sleep(min(left / 2, delay + random.random() * delay))
                delay = min(delay * 2, 1.0)
                left_ms = int((deadline - time.monotonic()) * 1000)
                if left_ms <= 0:
                    break
                self.conn.execute(f"PRAGMA busy_timeout = {min(left_ms, self._wait_ms)}")
                try:
                    return fn()
                except sqlite3.OperationalError as exc:
                    if isinstance(exc, StoreError) or not _busy(exc):
                        raise
                    last = exc
        finally:
            try:
                self.conn.execute(f"PRAGMA busy_timeout = {self._wait_ms}")
            except sqlite3.Error:
                pass
            if self._on_wait is not None:
                self._on_wait(False)
        raise StoreBusy(
            f"the memory is busy ({last}: another remem process kept it past "
            f"{self.busy_ms / 1000:g} s); try again in a moment",
            fix="try again once the other remem process (an ingest, a sleep) has finished",
        ) from None

    def _write_error(self, exc: BaseException) -> BaseException:
        """A refused write as StoreReadOnly or StoreBusy (still OperationalErrors), else as is."""
        if isinstance(exc, StoreError) or not isinstance(exc, sqlite3.OperationalError):
            return exc
        found = store_problem(exc, self.path)
        if found is None:
            return exc
        kind, message, fix = found
        if kind == "readonly":
            return StoreReadOnly(message, fix=fix)
        if kind == "busy":
            return StoreBusy(message, fix=fix)
        return exc

    def _rollback(self) -> None:
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A short write transaction (BEGIN IMMEDIATE), retried on SQLITE_BUSY for at most the
        busy timeout. A write the memory refuses raises StoreReadOnly or StoreBusy.

        Keep slow work (embedding, file reads) outside: do it first, then write.
        """
        try:
            self._retry(lambda: self.conn.execute("BEGIN IMMEDIATE"))
        except sqlite3.OperationalError as exc:
            error = self._write_error(exc)
            if error is exc:
                raise
            raise error from None
        try:
            yield self.conn
        except sqlite3.OperationalError as exc:
            self._rollback()
            error = self._write_error(exc)
            if error is exc:
                raise
            raise error from exc
        except BaseException:
            self._rollback()
            raise
        else:
            try:
                self._retry(lambda: self.conn.execute("COMMIT"))
            except BaseException as exc:
                self._rollback()  # never leave the connection inside a failed transaction
                error = self._write_error(exc)
                if error is exc:
                    raise
                raise error from None

    def rows(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self._retry(lambda: self.conn.execute(sql, params).fetchall())]

    def tuples(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        """`rows` as plain tuples, in the query's column order: for the hook path, where a dict
        for each of thousands of rows costs milliseconds."""
        def fetch() -> list[tuple[Any, ...]]:
            cursor = self.conn.cursor()
            cursor.row_factory = None
            return cursor.execute(sql, params).fetchall()

        return self._retry(fetch)

    def one(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> dict[str, Any] | None:
        row = self._retry(lambda: self.conn.execute(sql, params).fetchone())
        return dict(row) if row is not None else None

    def scalar(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> Any:
        row = self._retry(lambda: self.conn.execute(sql, params).fetchone())
        return row[0] if row is not None else None

    # -- episodes ---------------------------------------------------------------------
    def episode(self, memory_id: str, *, expired: bool = False) -> dict[str, Any]:
        """The memory with this id (or an unambiguous prefix of one). A short-term memory past
        its TTL is not found, unless `expired` (a hard delete takes it out at once)."""
        row = self.one("SELECT * FROM episodes WHERE id = ?", (memory_id,))
        if row is None and len(memory_id) >= 4:
            # A prefix, compared as text (LIKE would read % and _ as wildcards), and only when
            # it names one memory: `forget --hard abcd` must never pick one of two at random.
            found = self.rows("SELECT * FROM episodes WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 2",
                              (len(memory_id), memory_id))
            if len(found) > 1:
                raise NotFound(f"ambiguous id {memory_id!r}: matches {found[0]['id']} and "
                               f"{found[1]['id']}; give more characters")
            row = found[0] if found else None
        if row is None:
            from remem.engine.lessons import lesson_named  # here: lessons imports the store

            lesson = lesson_named(self, memory_id)
            if lesson is not None:  # `remem recall` lists lessons beside memories, ids alike
                raise LessonNotMemory(f"{lesson['id']} is a lesson, not a memory: `remem lessons veto "
                                      f"{lesson['id']}` hides it (`remem lessons show {lesson['id']}` reads it)",
                                      lesson["id"])
            short = " (an id prefix needs at least 4 characters)" if len(memory_id) < 4 else ""
            raise NotFound(f"no memory with id {memory_id!r}{short}; `remem list` shows the ids")
        if (not expired and row["memory_type"] == "short_term" and row["expires_at"]
                and row["expires_at"] <= clock.iso()):
            # Past its TTL: gone for every read, as recall, search and `remem list` leave it out
            # (lifecycle.EXPIRED, the same text comparison), until the expire task deletes it.
            raise NotFound(f"memory {row['id']} was short-term and expired at {row['expires_at'][:19]}; "
                           "`remem remember` it again to keep it")
        row["tags"] = self.tags_of(row["id"])
        return row

    def put_episodes(self, episodes: list[dict[str, Any]], *, replace: bool = False) -> int:
        """Insert episodes (already embedded); existing ids are kept unless replace. Returns added."""
        if not episodes:
            return 0
        stamp = clock.iso()
        added = 0
        with self.write() as conn:
            for ep in episodes:
                row = prepare_episode(ep, stamp)
                exists = conn.execute("SELECT 1 FROM episodes WHERE id = ?", (row["id"],)).fetchone()
                if exists and not replace:
                    continue
                if exists:
                    # A re-read brings the memory's words again, not its life: every lifecycle
                    # field is kept as stored. Importance, valence and arousal may have been set
                    # by hand (update_memory) or moved by the lifecycle (importance decay); type,
                    # expiry and flashbulb protection were settled when the memory was made or
                    # promoted. Only a session's episode is replaced so, and its reader assigns
                    # the defaults every time, so a re-read has nothing of its own to say there
                    # (a finding read again under a new id keeps its fields too: reread.py).
                    keep = ("strength", "recalls", "last_touched", "archived", "health", "created",
                            "importance", "valence", "arousal", "memory_type", "expires_at",
                            "flashbulb_until")
                    cur = conn.execute(
                        f"SELECT {', '.join(keep)} FROM episodes WHERE id = ?", (row["id"],)
                    ).fetchone()
                    row.update(dict(zip(keep, cur)))
                    cols = [c for c in EPISODE_COLUMNS if c != "id"]
                    conn.execute(
                        f"UPDATE episodes SET {', '.join(c + ' = ?' for c in cols)} WHERE id = ?",
                        [row[c] for c in cols] + [row["id"]],
                    )
                else:
                    conn.execute(
                        f"INSERT INTO episodes ({', '.join(EPISODE_COLUMNS)}) "
                        f"VALUES ({', '.join('?' for _ in EPISODE_COLUMNS)})",
                        [row[c] for c in EPISODE_COLUMNS],
                    )
                    added += 1
                for tag in ep.get("tags") or ():
                    conn.execute(
                        "INSERT OR IGNORE INTO tags (memory_id, tag) VALUES (?, ?)",
                        (row["id"], normalise_tag(tag)),
                    )
        return added

    def tags_of(self, memory_id: str) -> list[str]:
        return [r["tag"] for r in self.rows("SELECT tag FROM tags WHERE memory_id = ? ORDER BY tag", (memory_id,))]

    def hard_delete(self, memory_ids: Iterable[str]) -> int:
        """Gone from every table and index (FTS by trigger), edges and tags included."""
        ids = list(memory_ids)
        if not ids:
            return 0
        deleted = 0
        stamp = clock.iso()
        with self.write() as conn:
            for chunk in chunks(ids, 500):
                marks = ",".join("?" for _ in chunk)
                # Remembered as deleted, so no re-read of its session or file brings it back.
                conn.execute(f"INSERT OR REPLACE INTO forgotten (id, at) "
                             f"SELECT id, ? FROM episodes WHERE id IN ({marks})", [stamp] + chunk)
                deleted += conn.execute(f"DELETE FROM episodes WHERE id IN ({marks})", chunk).rowcount
                conn.execute(f"DELETE FROM tags WHERE memory_id IN ({marks})", chunk)
                conn.execute(
                    f"DELETE FROM connections WHERE src IN ({marks}) OR dst IN ({marks})", chunk + chunk
                )
        return deleted

    def forgotten(self, memory_ids: Iterable[str]) -> set[str]:
        """Which of these ids were deleted for good (see hard_delete): never to be added again."""
        ids = list(memory_ids)
        found: set[str] = set()
        for chunk in chunks(ids, 500):
            marks = ",".join("?" for _ in chunk)
            found.update(r["id"] for r in self.rows(f"SELECT id FROM forgotten WHERE id IN ({marks})", chunk))
        return found

    # -- status -----------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        tables = ("episodes", "sessions", "lessons", "predictions", "aliases", "tags",
                  "connections", "primes", "peers")
        return {t: int(self.scalar(f"SELECT count(*) FROM {t}") or 0) for t in tables}

    def meta_times(self) -> dict[str, str | None]:
        # An ingest is a session read, or episodes stored from a file (events, the inbox): what
        # was remembered by hand or over MCP is not reading sessions.
        sessions = self.scalar("SELECT max(ingested) FROM sessions")
        stored = self.scalar("SELECT max(created) FROM episodes WHERE source NOT IN "
                             "('remember', 'mcp', 'demo')")
        return {
            "last_ingest": max((t for t in (sessions, stored) if t), default=None),
            "last_sleep": self.scalar(
                "SELECT max(finished) FROM runs WHERE kind = 'sleep' AND status = 'ok'"
            ),
        }


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive slices of at most `size` items (SQLite limits bound parameters)."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


def cap(text: str | None, limit: int) -> str:
    text = text or ""
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATED)] + TRUNCATED


def gist_and_detail(text: str, detail: str = "") -> tuple[str, str]:
    """An episode's gist and detail from its words (`text`) and longer material (`detail`),
    the one rule for every way a memory is written (an event, `remember`, an update): the
    gist is the text (else the detail); words longer than the gist holds, with no detail of
    their own, are kept whole in the detail (to MAX_DETAIL), so cutting the gist loses nothing;
    a detail that is all the gist holds is not kept twice."""
    gist = text or detail
    if not text and len(detail) <= MAX_GIST:
        detail = ""  # the detail is the gist already; don't keep it twice
    elif len(text) > MAX_GIST and not detail:
        detail = text  # the gist is cut (with the marker), this is not
    return gist, detail


def cut_from(length: int, limit: int) -> int:
    """How many characters of a text of `length` `cap(text, limit)` leaves out: 0 when it fits."""
    return 0 if length <= limit else length - (limit - len(TRUNCATED))


def normalise_tag(tag: str) -> str:
    """A tag as stored and matched: trimmed, lower case, valid Unicode, at most MAX_TAG.
    Trimmed after cleaning: "0 \x00" is "0", not "0 " (which a search for "0" misses)."""
    return cap(clean_text(str(tag).lower()).strip(), MAX_TAG)


def stable_id(*parts: str) -> str:
    """The id of a transcript episode: stable across re-reads of the same session."""
    from hashlib import sha1  # imported here: hooks open the store without needing it

    return sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


def new_id() -> str:
    import uuid  # imported here: uuid pulls in platform and random (~5 ms on the hook path)

    return uuid.uuid4().hex[:16]


def episode_hash(title: str, gist: str, detail: str) -> str:
    """An episode's content_hash: of its three texts, as stored."""
    return content_hash(f"{title}\n{gist}\n{detail}")


def content_hash(text: str) -> str:
    from hashlib import sha1

    return sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:16]


def prepare_episode(ep: dict[str, Any], stamp: str | None = None) -> dict[str, Any]:
    """Fill defaults, cap sizes and validate one episode dict for insertion."""
    stamp = stamp or clock.iso()
    kind = ep.get("kind") or "note"
    if kind not in EPISODE_KINDS:
        raise ValueError(f"unknown episode kind {kind!r}; use one of {', '.join(EPISODE_KINDS)}")
    title = cap(clean_text(ep.get("title") or ""), MAX_TITLE)
    gist = cap(clean_text(ep.get("gist") or ""), MAX_GIST)
    detail = cap(clean_text(ep.get("detail") or ""), MAX_DETAIL)
    row: dict[str, Any] = {
        "id": ep.get("id") or new_id(),
        "session_id": ep.get("session_id"),
        "source": ep.get("source") or "remember",
        "cwd": normal_folder(ep.get("cwd")),  # one spelling, whatever the source wrote
        "kind": kind,
        "title": title,
        "gist": gist,
        "detail": detail,
        "at": ep.get("at") or stamp,
        "created": ep.get("created") or stamp,
        "strength": float(ep.get("strength", 1.0)),
        "recalls": int(ep.get("recalls", 0)),
        "last_touched": ep.get("last_touched") or ep.get("at") or stamp,
        "archived": int(bool(ep.get("archived", 0))),
        "memory_type": ep.get("memory_type") or "long_term",
        "expires_at": ep.get("expires_at"),
        "importance": float(ep.get("importance", 0.5)),
        "valence": float(ep.get("valence", 0.0)),
        "arousal": float(ep.get("arousal", 0.0)),
        "flashbulb_until": ep.get("flashbulb_until"),
        "health": float(ep.get("health", 100.0)),
        "content_hash": ep.get("content_hash") or episode_hash(title, gist, detail),
        "space": ep.get("space"),
        "embedding": ep.get("embedding"),
        "speaker": " ".join(str(ep.get("speaker") or "").split())[:MAX_SPEAKER] or None,
    }
    return row


def dumps(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (a path's byte that is not UTF-8, as in a REMEM_HOME in another
        # encoding): SQLite cannot store it raw; escaped, json.loads gives back the same text.
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def loads_list(text: str | None) -> list[Any]:
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def db_size(path: Path | None = None) -> int:
    path = path or paths.db_path()
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(str(path) + suffix)
        except OSError:
            pass
    return total
