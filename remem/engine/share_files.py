"""The share folder on disk: names, capped reads that never leave the folder, atomic writes.

Layout (docs/PROTOCOL.md, Sharing):
    <folder>/<origin>/key.pub
    <folder>/<origin>/lessons/<hash>.json
    <folder>/<origin>/confirm/<hash>.json
    <folder>/<origin>/revoked/<hash>.json
    <folder>/<origin>/withdrawn/<hash>.json
Only names that match these shapes are opened; symlinks are never followed; every size is
checked with fstat before a byte is read.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from remem.engine.files import write_atomic
from remem.engine.share_sign import ShareError, file_bytes, parse_public_line
from remem.engine.text import clean_text

ORIGIN_RE = re.compile(r"^[0-9a-f]{16}$")
HASH_RE = re.compile(r"^[0-9a-f]{32}$")
SUBDIRS = ("lessons", "confirm", "revoked", "withdrawn")
# What each sub-folder holds: the `type` of its documents.
DOC_TYPES = {"lessons": "lesson", "confirm": "confirm", "revoked": "revoke", "withdrawn": "withdraw"}
# Every export makes these two, even empty; without one, a folder is not read whole.
REQUIRED = ("lessons", "confirm")
# Kept by every export in each of REQUIRED: git (and any tool that carries files, not folders)
# drops an empty folder, and an origin without lessons/ or confirm/ is never read whole.
# Readers and sweeps skip it, as they skip .DS_Store.
KEEP_FILE = ".remem-keep"
KEEP_TEXT = (b"remem keeps this file so that tools which drop empty folders (git) carry this one; "
             b"leave it here\n")
# A temp file or a file that is not JSON yet, unchanged this long, is no write in progress:
# Syncthing renames a finished file at once, and documents are a few hundred bytes. Nor is one
# dated more than this ahead of our clock: no write in progress sets that, and anyone who
# writes the folder could otherwise hold an origin's withdrawals back for years.
LEFT_OVER_SECONDS = 15 * 60
# What each reason below says of a file's date: unchanged that long, or dated ahead of our clock.
_OLD = "unchanged for over 15 minutes"
_AHEAD = "dated more than 15 minutes ahead of this machine's clock"
LEFT_OVER = (f"a sync tool's temp file {_OLD} (left over from a sync that did not finish): not read, "
             "and no longer taken for a write in progress; its owner's next `remem share sync` "
             "removes it (or delete it)")
LEFT_OVER_AHEAD = (f"a sync tool's temp file {_AHEAD}, which no write in progress is: not read, and not "
                   "taken for a write in progress; its owner's next `remem share sync` removes it "
                   "(or delete it)")
STALE_NOT_JSON = (f"not JSON, and {_OLD}, so no half-synced file: refused; "
                  "its owner's next `remem share sync` replaces or removes it (or delete it)")
STALE_NOT_JSON_AHEAD = (f"not JSON, and {_AHEAD}, so no half-synced file: refused; "
                        "its owner's next `remem share sync` replaces or removes it (or delete it)")
UNEXPECTED = "refused: unexpected file name"
UNEXPECTED_LEFT_OVER = (UNEXPECTED + f", {_OLD} (a sync tool's copy?): it holds "
                        "nothing back; its owner's next `remem share sync` removes it (or delete it)")
UNEXPECTED_LEFT_OVER_AHEAD = (UNEXPECTED + f", {_AHEAD} (a sync tool's copy?): it holds "
                              "nothing back; its owner's next `remem share sync` removes it (or delete it)")
IN_PROGRESS = ("a sync tool's temp file, a write in progress: this origin's withdrawals wait until it "
               "goes (or is unchanged for 15 minutes)")
NOT_CANONICAL = ("refused: not the canonical encoding remem writes (keys sorted, no spaces, no floats, "
                 "one newline at the end; docs/PROTOCOL.md)")
KEY_FILE = "key.pub"
MAX_KEY_BYTES = 512
MAX_OWN_BYTES = 65536  # our own documents are a few hundred bytes; anything bigger was planted
# <hash>.json, or a sync tool's conflicted copy of it: Dropbox "(… conflicted copy …)",
# Nextcloud "(conflicted copy …)", a numbered duplicate " (1)", Syncthing ".sync-conflict-…".
_NAME_RE = re.compile(
    r"^(?P<hash>[0-9a-f]{32})"
    r"(?P<copy>| \([^()/\\]{0,80}conflict[^()/\\]{0,80}\)| \(\d{1,3}\)"
    r"|\.sync-conflict-\d{8}-\d{6}(-[A-Z0-9]{7})?)\.json$"
)


def shown(path: str) -> str:
    """A path as reports show it: a name whose bytes are not UTF-8 (anyone who writes the
    folder can make one) shows them as \\xNN ("caf\\xe9 notes.txt"), as ingest shows such
    names, so a report can be printed and written as JSON."""
    return clean_text(path, "backslashreplace")


@dataclass
class Problem:
    path: str
    reason: str

    def __post_init__(self) -> None:
        self.path = shown(self.path)

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass
class Scan:
    """What one origin's folder holds: verified-later documents and what was refused."""
    origin: str
    key_raw: bytes | None = None
    docs: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    rejected: list[Problem] = field(default_factory=list)
    incomplete: list[Problem] = field(default_factory=list)
    # Whether the folder was read whole: lessons/ and confirm/ both there and readable, no
    # half-synced file, no sync tool's temp file without a hash in its name (either unchanged
    # for LEFT_OVER_SECONDS is left over, and does not count). Only then may a hash it no
    # longer holds be taken as withdrawn (share.py); a sync in progress is not.
    settled: bool = True
    # Hashes a file was there for that did not read or verify (or is being written): not
    # withdrawn, whatever else the folder says. Per sub-folder (never withdrawn/): a signed
    # withdrawal outranks whatever in confirm/ does not verify (share_receive).
    unsure_in: dict[str, set[str]] = field(default_factory=dict)
    # Temp files taken for a write in progress: each holds back withdrawals (its hash, or the
    # whole folder's), so the receive report names them.
    held_back: list[Problem] = field(default_factory=list)
    # Whether a file is being written that may be any document (half-synced, or a temp file
    # without a hash in its name): then not even a signed withdrawal of a hash can be taken at
    # its word (a newer confirmation may be the file on its way). A folder missing lessons/ or
    # confirm/ is not read whole, but is not being written for that (share_receive).
    writing: bool = False


def _is_temp(name: str) -> bool:
    """Our temp files and sync tools' own (.syncthing.*.tmp, .dropbox…, .DS_Store; rclone's and
    other tools' `<name>.XXXX.partial`; Syncthing's on Windows, `~syncthing~<name>.tmp`): not
    ours to read."""
    if name.startswith(".."):
        return False
    if not name.startswith("."):
        return name.endswith(".partial") or (name.startswith("~syncthing~") and name.endswith(".tmp"))
    return (name.endswith((".tmp", ".partial")) or name.startswith((".syncthing.", ".dropbox", ".~"))
            or name in (".DS_Store", ".stfolder", ".stignore", ".stversions", KEEP_FILE))


# Temp files of a write in progress (ours: .<name>.XXXX.tmp; Syncthing: .syncthing.<name>.tmp,
# ~syncthing~<name>.tmp on Windows; *.partial); .DS_Store and the like stay for good and say nothing.
_HASH_IN = re.compile(r"[0-9a-f]{32}")


def _in_flight(name: str) -> bool:
    return _is_temp(name) and (name.endswith((".tmp", ".partial")) or name.startswith((".syncthing.", ".~")))


def _left_over_as(entry: os.DirEntry[str]) -> str | None:
    """"old" when a file has not changed for LEFT_OVER_SECONDS, by the file system's clock (its
    mtime was set by that clock, not by remem's, which tests and REMEM_NOW may set), "ahead"
    when it is dated more than that ahead of it (no write in progress is; a planted date would
    otherwise hold withdrawals back for as long as it says); None otherwise, or when it cannot
    be told."""
    try:
        age = time.time() - entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return None
    if age > LEFT_OVER_SECONDS:
        return "old"
    return "ahead" if -age > LEFT_OVER_SECONDS else None


def _left_over(entry: os.DirEntry[str]) -> bool:
    """Whether a file is no write in progress by its date (_left_over_as)."""
    return _left_over_as(entry) is not None


def hash_in(name: str) -> str | None:
    """The first 32-hex run in a file name (a document's hash), or None."""
    m = _HASH_IN.search(name)
    return m.group(0) if m else None


def is_origin(name: str) -> bool:
    return bool(ORIGIN_RE.match(name))


def is_hash(name: str) -> bool:
    return bool(HASH_RE.match(name))


def parse_name(name: str) -> tuple[str, bool] | None:
    """(hash, is_conflicted_copy) for a document file name, None for any other name."""
    m = _NAME_RE.match(name)
    if not m:
        return None
    return m.group("hash"), bool(m.group("copy"))


def doc_path(folder: Path, origin: str, sub: str, text_hash: str) -> Path:
    """Where a document goes; refuses anything that is not a plain origin/hash name."""
    if not is_origin(origin) or not is_hash(text_hash) or sub not in SUBDIRS:
        raise ShareError(f"refusing a share path for origin {origin!r} and hash {text_hash!r}")
    return folder / origin / sub / f"{text_hash}.json"


def _inside(root: Path, path: Path) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), str(root)]) == str(root)
    except ValueError:
        return False


def read_capped(root: Path, path: Path, cap: int, cap_name: str = "share.max_file_bytes") -> bytes:
    """The bytes of a regular file inside root, at most cap; ShareError with the reason.
    cap_name: what sets the cap, named in the reason (the setting, or a fixed cap's file)."""
    if not _inside(root, path.parent) or path.is_symlink():
        raise ShareError("refused: a link or a path outside the share folder")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except PermissionError as exc:
        raise ShareError(f"cannot open ({exc.strerror}): its owner may read it alone (an older "
                         "remem wrote share files so); its owner's next `remem share sync` makes "
                         f"it readable, or `chmod a+r {shlex.quote(str(path))}`") from None
    except OSError as exc:
        raise ShareError(f"cannot open ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ShareError("refused: not a regular file")
        if info.st_size > cap:
            raise ShareError(f"too large ({info.st_size} bytes; the cap is {cap}, {cap_name})")
        chunks, total = [], 0
        while total <= cap:
            chunk = os.read(fd, min(65536, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > cap:  # grew while we read
            raise ShareError(f"too large (more than {cap} bytes, {cap_name})")
        return b"".join(chunks)
    finally:
        os.close(fd)


def remove(path: Path) -> bool:
    """Unlink a file; False when it is gone already or cannot go (a folder someone made)."""
    try:
        path.unlink()
        return True
    except OSError:
        return False


def own_folder(root: Path, origin: str, sub: str | None = None, *, make: bool = True) -> Path:
    """Our <origin>/ folder (or its sub-folder `sub`), made if missing and `make`. ShareError
    when it is a link or leads outside the share folder: anyone who writes the folder could
    plant one, and we would then write and delete wherever it points."""
    if not is_origin(origin) or (sub is not None and sub not in SUBDIRS):
        raise ShareError(f"refusing a share folder for origin {origin!r} and {sub!r}")
    path = root / origin
    for part in (path, path / sub) if sub else (path,):
        if part.is_symlink() or not _inside(root, part):
            raise ShareError(f"refused: {part} is a link (or leads outside the share folder); "
                             "remove it, then sync again")
        if not make:
            continue
        try:
            part.mkdir(exist_ok=True)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise ShareError(f"cannot make the folder {part} ({exc.strerror}): the folder is "
                                 "read-only for you; fix its permissions, or use `remem share "
                                 "receive` to only read") from None
            raise ShareError(f"cannot make the folder {part} ({exc.strerror}); "
                             "remove what is in its place, then sync again") from None
    return path / sub if sub else path


def shared_mode() -> int:
    """The permission bits of a file others must read: 0o666 less the umask, as any tool makes
    a file (0644 under the usual 022). A team sharing one folder (several users on one machine,
    a network drive) reads each other's files: mkstemp's 0600 would lock out everyone else."""
    try:  # Linux says it without changing it (os.umask would, for a moment, for every thread)
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_own(path: Path, data: bytes) -> bool:
    """write_atomic into our own folder (checked by own_folder), readable by whoever may read
    the folder (shared_mode; a file of ours left private by an older remem is opened up too).
    A pipe, link or oversized file someone planted at the name is removed unread (write_atomic
    would read it to compare); a folder there is refused with ShareError."""
    try:
        info: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise ShareError(f"cannot write ({exc.strerror})") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ShareError("a folder is where this file goes; left alone (remove it)")
    if info is not None and (not stat.S_ISREG(info.st_mode) or info.st_size > MAX_OWN_BYTES):
        remove(path)
    try:
        return write_atomic(path, data, mode=shared_mode())
    except OSError as exc:
        raise ShareError(f"cannot write ({exc.strerror or exc})") from None


def sweep(root: Path, directory: Path, stale: Callable[[str, bool], bool]) -> tuple[list[str], list[Problem]]:
    """Delete our stale documents in one of our own folders: hashes whose (hash, is_copy)
    `stale` says so. What is neither a file nor a link there (a folder, a pipe) is not ours to
    delete: it is reported and left alone."""
    removed: list[str] = []
    problems: list[Problem] = []
    for entry in _own_entries(directory):
        parsed = parse_name(entry.name)
        if parsed and stale(*parsed):
            _delete_own(entry, root, parsed[0], "not a file; left alone (remove it)", removed, problems)
    return removed, problems


def _own_entries(directory: Path) -> list[os.DirEntry[str]]:
    """What one of our own folders holds, by name; nothing when it cannot be read."""
    try:
        return sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []


def _delete_own(entry: os.DirEntry[str], root: Path, key: str, not_a_file: str,
                removed: list[str], problems: list[Problem]) -> None:
    """Delete a file (or link) of one of our own folders, noting `key` as removed; what is
    neither (a folder, a pipe) is not ours to delete: reported as `not_a_file`, left alone."""
    if not (entry.is_symlink() or entry.is_file(follow_symlinks=False)):
        problems.append(Problem(os.path.relpath(entry.path, root), not_a_file))
    elif remove(Path(entry.path)):
        removed.append(key)


def unexpected(name: str) -> bool:
    """A name that is neither a document's (nor a conflicted copy's we know) nor a temp file's:
    a sync tool's copy under a name of its own (iCloud's `<hash> 2.json`, OneDrive's
    `<hash>-HOST.json`), or anything else put there. Readers refuse it, unread."""
    return parse_name(name) is None and not _is_temp(name)


def sweep_unexpected(root: Path, directory: Path) -> tuple[list[str], list[Problem]]:
    """Delete, from one of our own sub-folders, files under an unexpected name that are left
    over (unchanged for LEFT_OVER_SECONDS, so no sync tool is still writing them). Readers
    refuse them on every sync, and until then take one naming a hash for our standing behind
    it. A folder or a pipe there is not ours to delete: reported, left alone. Returns the
    paths removed, relative to the share folder, and the problems."""
    removed: list[str] = []
    problems: list[Problem] = []
    for entry in _own_entries(directory):
        if unexpected(entry.name) and _left_over(entry):
            _delete_own(entry, root, shown(os.path.relpath(entry.path, root)),
                        "not a file, under a name no document has; left alone (remove it)", removed, problems)
    return removed, problems


INCOMPLETE = "incomplete or not JSON (half-synced? it is read again next time)"


def sweep_left_over(root: Path, directory: Path) -> list[str]:
    """Delete temp files left over in one of our own folders (ours from a write cut short, a
    sync tool's from a sync that did not finish): unchanged for LEFT_OVER_SECONDS, so no write
    is in progress. Readers would otherwise see a write in progress there for good. Returns
    their paths, relative to the share folder."""
    removed: list[str] = []
    for entry in _own_entries(directory):
        if (_in_flight(entry.name) and not entry.is_dir(follow_symlinks=False) and _left_over(entry)
                and remove(Path(entry.path))):
            removed.append(shown(os.path.relpath(entry.path, root)))
    return removed


class _DuplicateKey(Exception):
    pass


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members, refusing a key given twice: readers disagree on which counts (Python
    keeps the last, a person or another parser may read the first), and the signature covers
    only one of them."""
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise _DuplicateKey(key)
        doc[key] = value
    return doc


def _load_json(data: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_unique_members)
    except _DuplicateKey as exc:
        raise ShareError(f"refused: the key {str(exc)[:40]!r} is in the file twice (a decoy "
                         "for whoever reads the first one)") from None
    except (UnicodeDecodeError, json.JSONDecodeError):  # cut short, mid-character or mid-value
        raise ShareError(INCOMPLETE) from None
    except RecursionError:
        raise ShareError("refused: JSON nested too deep") from None
    except ValueError:  # whole, but a number of over 4300 digits: no half-synced file does that
        raise ShareError("refused: a number too long to read") from None
    if not isinstance(doc, dict):
        raise ShareError("not a JSON object")
    return doc


def _canonical(data: bytes, doc: dict[str, Any]) -> None:
    """ShareError unless data is the canonical encoding of doc that writers put on disk
    (share_sign.file_bytes): the file is the document, byte for byte, so what a person, a diff
    or another parser reads in it is what was signed. A file that is that but for its last
    newline is half-synced (read again next time)."""
    try:
        expected = file_bytes(doc)
    except (TypeError, ValueError, RecursionError):  # a float, NaN: no canonical encoding at all
        raise ShareError(NOT_CANONICAL) from None
    if data == expected:
        return
    if data == expected[:-1]:
        raise ShareError(INCOMPLETE)
    raise ShareError(NOT_CANONICAL)


def read_doc(root: Path, path: Path, cap: int) -> dict[str, Any]:
    """A JSON object from a capped, link-free read (read_capped), in the canonical encoding
    (no key twice); ShareError with the reason."""
    data = read_capped(root, path, cap)
    doc = _load_json(data)
    _canonical(data, doc)
    return doc


def scan_origin(root: Path, origin: str, cap: int) -> Scan:
    """Read one other origin's key and documents (unverified; share.py verifies)."""
    scan = Scan(origin)
    base = root / origin
    rel = lambda p: os.path.relpath(p, root)  # noqa: E731
    if base.is_symlink() or not _inside(root, base):
        scan.rejected.append(Problem(origin, "refused: the origin folder is a link"))
        return scan
    key_path = base / KEY_FILE
    try:
        scan.key_raw = parse_public_line(read_capped(root, key_path, MAX_KEY_BYTES, "fixed for key.pub"))
    except ShareError as exc:
        if key_path.exists() or key_path.is_symlink():
            scan.rejected.append(Problem(rel(key_path), str(exc)))
        else:
            scan.incomplete.append(Problem(rel(key_path), "no key.pub yet (half-synced?)"))
        return scan
    for sub in SUBDIRS:
        directory = base / sub
        # A file there that does not read says the origin may still stand behind its hash;
        # never one in withdrawn/, whose files say the opposite.
        unsure = scan.unsure_in.setdefault(sub, set()) if sub != "withdrawn" else set()
        if directory.is_symlink():
            scan.rejected.append(Problem(rel(directory), "refused: the folder is a link"))
            if sub in REQUIRED:  # as if missing: revoked/ and withdrawn/ hold nothing back
                scan.settled = False
            continue
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            # Every export makes lessons/ and confirm/: without one of them (not synced yet,
            # unreadable, an older remem) nothing can be taken as withdrawn.
            if sub in REQUIRED:
                scan.settled = False
            if sub == "lessons":  # an origin with a key and no lessons one can read: said
                _no_lessons(scan, rel(directory), exc)
            continue
        found: list[tuple[str, dict[str, Any]]] = []
        for entry in entries:
            path = directory / entry.name
            if _is_temp(entry.name):
                if not _in_flight(entry.name):
                    continue  # .DS_Store and the like: there for good, and they say nothing
                dated = _left_over_as(entry)
                if dated:
                    # No write in progress: it must not hold back withdrawals for good.
                    scan.rejected.append(Problem(rel(path), LEFT_OVER if dated == "old" else LEFT_OVER_AHEAD))
                    continue
                named = hash_in(entry.name)
                if named:
                    unsure.add(named)
                else:
                    scan.settled = False  # being written, and we cannot tell which document
                    scan.writing = True
                scan.held_back.append(Problem(rel(path), IN_PROGRESS))
                continue
            parsed = parse_name(entry.name)
            if parsed is None:
                # A sync tool's copy under a name of its own may be a write in progress for a
                # while; left over, it is none, and must not hold a withdrawal back for good.
                left_over = _left_over_as(entry)
                named = hash_in(entry.name)
                if named and not left_over:
                    unsure.add(named)
                plain = entry.is_symlink() or entry.is_file(follow_symlinks=False)
                reason = UNEXPECTED
                if left_over and plain:
                    reason = UNEXPECTED_LEFT_OVER if left_over == "old" else UNEXPECTED_LEFT_OVER_AHEAD
                scan.rejected.append(Problem(rel(path), reason))
                continue
            try:
                doc = read_doc(root, path, cap)
            except ShareError as exc:
                unsure.add(parsed[0])
                dated = _left_over_as(entry) if str(exc) == INCOMPLETE else None
                if str(exc) != INCOMPLETE:
                    scan.rejected.append(Problem(rel(path), str(exc)))
                elif dated:  # not JSON for good: no sync in progress
                    scan.rejected.append(Problem(rel(path), STALE_NOT_JSON if dated == "old"
                                                 else STALE_NOT_JSON_AHEAD))
                else:
                    scan.incomplete.append(Problem(rel(path), str(exc)))
                    scan.settled = False  # a sync in progress: other files may not be here yet
                    scan.writing = True
                continue
            if doc.get("hash") != parsed[0]:
                unsure.add(parsed[0])
                scan.rejected.append(Problem(rel(path), NO_HASH if "hash" not in doc else
                                             "refused: the file name does not match its hash"))
                continue
            found.append((rel(path), doc))
        # The plain name first, then conflicted copies: the first that verifies wins.
        found.sort(key=lambda item: (parse_name(os.path.basename(item[0]))[1], item[0]))
        scan.docs[sub] = found
    return scan


NO_HASH = ("refused: no \"hash\" in the document (every document names the hash its file is "
           "named after; docs/PROTOCOL.md)")
NO_LESSONS = "lessons/ is missing: none of this origin's lessons is read (half-synced? read again next time)"
LESSONS_NOT_A_FOLDER = ("lessons/ is not a folder: none of this origin's lessons is read; its owner's "
                        "next `remem share sync` says what to remove")


def _no_lessons(scan: Scan, where: str, exc: OSError) -> None:
    """An origin with a key.pub whose lessons/ cannot be listed: missing (a sync tool still
    carrying the folder: incomplete), not a folder, or unreadable (refused, with why)."""
    if isinstance(exc, FileNotFoundError):
        scan.incomplete.append(Problem(where, NO_LESSONS))
    elif isinstance(exc, NotADirectoryError):
        scan.rejected.append(Problem(where, LESSONS_NOT_A_FOLDER))
    else:
        scan.rejected.append(Problem(where, f"lessons/ cannot be read ({exc.strerror or exc}): none of "
                                            "this origin's lessons is read"))


def list_origins(root: Path) -> tuple[list[str], list[Problem]]:
    """Origin folder names in the share folder, and names that are not origins."""
    origins, ignored = [], []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        raise ShareError(f"cannot read the share folder {root} ({exc.strerror}); check the path") from None
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if is_origin(entry.name) and entry.is_dir(follow_symlinks=False):
            origins.append(entry.name)
        elif entry.is_symlink() and is_origin(entry.name):
            ignored.append(Problem(entry.name, "refused: the origin folder is a link"))
        else:
            ignored.append(Problem(entry.name, "not an origin folder (ignored)"))
    return origins, ignored
