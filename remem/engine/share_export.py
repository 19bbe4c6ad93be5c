"""What we write to the share folder: our lessons, our revocations kept, our confirmations."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from remem.engine import clock, share_safety
from remem.engine.files import write_atomic
from remem.engine.lessons import lesson_hash, list_lessons
from remem.engine.share_files import (
    KEEP_FILE,
    KEEP_TEXT,
    KEY_FILE,
    MAX_OWN_BYTES,
    SUBDIRS,
    Problem,
    doc_path,
    hash_in,
    is_hash,
    own_folder,
    parse_name,
    read_doc,
    sweep,
    sweep_left_over,
    sweep_unexpected,
    unexpected,
    write_own,
)
from remem.engine.share_folder import VERSION, _cfg, _root, share_lock
from remem.engine.share_projects import _is_own, shared_project
from remem.engine.share_sign import (
    Identity,
    ShareError,
    file_bytes,
    identity,
    own_origin,
    public_line,
    verify,
)
from remem.engine.store import Store

# Beside the private key: the latest time this identity signed a confirmation and a withdrawal
# of each hash (SignedTimes).
SIGNED_TIMES = "signed_times.json"


def lesson_document(ident: Identity, lesson: dict[str, Any], *also: dict[str, Any]) -> dict[str, Any]:
    """The signed export of one of our lessons (its project's name, when it has one, signed too).

    `also`: our other rows with the same words (the same hash: one global and one in a project,
    or in two projects, as `lessons edit` can make). A hash is one file, so one document speaks
    for all of them: no project unless every row has the same one (a receiver applies it
    wherever any of them does), the highest strength, the earliest created. Written per row,
    the file would be written twice on every export, the last row winning, and receivers would
    flip the lesson's project back and forth."""
    rows = (lesson, *also)
    projects = {shared_project(row.get("cwd")) for row in rows}
    doc = {
        "v": VERSION, "type": "lesson", "origin": ident.origin,
        "hash": lesson_hash(lesson["text"], lesson["kind"]), "text": lesson["text"],
        "kind": lesson["kind"], "created": min(row["created"] for row in rows),
        "strength": f"{max(float(row.get('strength') or 0) for row in rows):.2f}",
    }
    project = projects.pop() if len(projects) == 1 else None
    if project:
        doc["project"] = project
    return ident.sign(doc)


def _revoked_hashes(root: Path, ident: Identity) -> set[str]:
    """Hashes we revoked. Only our own signed revocations count: anyone who writes the share
    folder could drop a file named like one into ours."""
    directory = root / ident.origin / "revoked"
    if directory.is_symlink():  # never read through a link (own_folder refuses to write there)
        return set()
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return set()
    found = set()
    for name in names:
        parsed = parse_name(name)
        if parsed and _still_valid(root, directory / name, ident, "revoke", parsed[0]):
            found.add(parsed[0])
    return found


def _put_own(root: Path, path: Path, data: bytes, problems: list[dict[str, str]]) -> bool | None:
    """Write one of our files: True written, False unchanged, None failed (reported, e.g. a
    folder someone made at its name)."""
    try:
        return write_own(path, data)
    except ShareError as exc:
        problems.append(Problem(os.path.relpath(path, root), str(exc)).as_dict())
        return None


def _withhold(lesson: dict[str, Any], min_strength: float, revoked: set[str]) -> list[str]:
    """Why one of our active lessons is not exported (empty: it is)."""
    reasons = []
    if float(lesson["strength"]) < min_strength:
        reasons.append(f"strength {lesson['strength']:.2f} below share.min_strength {min_strength}")
    if lesson_hash(lesson["text"], lesson["kind"]) in revoked:
        # Its words were revoked earlier (an edit back to them, say): a revocation is for good.
        reasons.append(f"revoked: these words were revoked earlier and are never shared again; "
                       f"word it differently to share it (`remem lessons edit {lesson['id']}`)")
    project = shared_project(lesson.get("cwd"))
    # Never sent without its project (it would apply everywhere there), nor with a name that
    # a receiver refuses or that names this machine.
    return reasons + share_safety.outgoing(lesson["text"]) + (
        share_safety.project_outgoing(project) if project else [])


def _keep_revocations(store: Store, root: Path, ident: Identity, revoked: set[str],
                      problems: list[dict[str, str]]) -> list[dict[str, str]]:
    """A revocation is kept for good (a tombstone): rewrite ours, signed, for every lesson of
    ours we revoked whose revoked/<hash>.json is gone or no longer ours and valid. Without it an
    old copy of the lesson file put back in our folder would be taken in again elsewhere.
    `revoked` gains the hashes written."""
    written: list[dict[str, str]] = []
    for lesson in list_lessons(store, statuses=("revoked",)):
        if not _is_own(lesson, ident.origin):
            continue
        text_hash = lesson_hash(lesson["text"], lesson["kind"])
        if text_hash in revoked:
            continue
        try:
            own_folder(root, ident.origin, "revoked")
        except ShareError as exc:
            problems.append(Problem(f"{ident.origin}/revoked", str(exc)).as_dict())
            break
        doc = ident.sign({"v": VERSION, "type": "revoke", "origin": ident.origin, "hash": text_hash,
                          "at": lesson["updated"]})
        if _put_own(root, doc_path(root, ident.origin, "revoked", text_hash), file_bytes(doc), problems) is not None:
            written.append({"id": lesson["id"], "hash": text_hash})
            revoked.add(text_hash)
    return written


def _clean_left_overs(root: Path, ident: Identity, problems: list[dict[str, str]]) -> list[str]:
    """Temp files left over in our own folders go (share_files.sweep_left_over): every reader
    would otherwise take one for a write in progress, and hold back our withdrawals for good.
    So do files left over in lessons/ and confirm/ under a name no document has (a sync
    tool's copy named `<hash> 2.json` or `<hash>-HOST.json`): readers refuse them on every
    sync. In revoked/ and withdrawn/ _keep_only_ours removes them, once it has kept any
    document of ours one of them holds."""
    cleaned: list[str] = []
    for sub in (None, *SUBDIRS):
        try:
            directory = own_folder(root, ident.origin, sub, make=False)
        except ShareError as exc:  # a link someone made: said on every sync until it goes
            problems.append(Problem(f"{ident.origin}/{sub}" if sub else ident.origin, str(exc)).as_dict())
            continue
        cleaned += sweep_left_over(root, directory)
        if sub in ("lessons", "confirm"):  # what we keep there is written anew from the memory
            removed, odd = sweep_unexpected(root, directory)
            cleaned += removed
            problems += [p.as_dict() for p in odd]
    return cleaned


def _keep_only_ours(root: Path, ident: Identity, sub: str, problems: list[dict[str, str]]) -> list[str]:
    """In revoked/ or withdrawn/, what is not our own signed document of that kind goes (a file
    that is not JSON, another's, a conflicted copy, a file left over under a name no document
    has): readers would report it on every sync, and one that is not JSON, as half-synced,
    holds back our withdrawals. A valid copy (under a conflicted-copy name, or any name with
    its hash in it) whose plain file is not valid takes its place first, so no tombstone of
    ours is lost."""
    kind = {"revoked": "revoke", "withdrawn": "withdraw"}[sub]
    try:
        directory = own_folder(root, ident.origin, sub, make=False)
        names = sorted(os.listdir(directory))
    except (ShareError, OSError):
        return []
    valid: set[str] = set()
    # Plain names first, then their copies (a plain name sorts before its conflicted copies,
    # not always before an odd name holding the same hash).
    named = [(name, parse_name(name) or (hash_in(name) if unexpected(name) else None, True)) for name in names]
    for name, (text_hash, copy) in sorted(named, key=lambda item: (item[1][1], item[0])):
        if (text_hash is None or text_hash in valid
                or not _still_valid(root, directory / name, ident, kind, text_hash)):
            continue
        if copy:  # a copy that holds our document: it becomes the plain file
            data = read_doc(root, directory / name, MAX_OWN_BYTES)
            if _put_own(root, directory / f"{text_hash}.json", file_bytes(data), problems) is None:
                continue
        valid.add(text_hash)
    removed, odd = sweep(root, directory, lambda h, copy: copy or h not in valid)
    problems += [p.as_dict() for p in odd]
    gone, odd = sweep_unexpected(root, directory)
    problems += [p.as_dict() for p in odd]
    return [os.path.relpath(directory / f"{h}.json", root) for h in removed] + gone


READ_ONLY = ("cannot write to {place}: the folder is read-only for you; fix its permissions, "
             "or use `remem share receive` to only read")


def _check_writable(root: Path, origin: str) -> None:
    """ShareError when the places our files go cannot be written (a read-only mount, a folder
    of another user's): every write would fail, and a sync that wrote none of its own must not
    pass for one that did. Our <origin>/ folder and its lessons/ and confirm/ when there, else
    the share folder, where it would be made. Links are left to own_folder, which refuses them."""
    own = root / origin
    places = [p for p in (own, own / "lessons", own / "confirm") if p.is_dir() and not p.is_symlink()]
    for place in places or [root]:
        if not os.access(place, os.W_OK | os.X_OK):
            raise ShareError(READ_ONLY.format(place=place))


def export_lessons(store: Store, folder: str | Path, *, identity_dir: Path | str | None = None,
                   cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write our shareable lessons, one signed file each, and our key.pub; drop stale files."""
    with share_lock(store):
        return _export(store, folder, identity_dir, cfg)


def _export(store: Store, folder: str | Path, identity_dir: Path | str | None,
            cfg: dict[str, Any] | None) -> dict[str, Any]:
    min_strength = float(_cfg(cfg)["min_strength"])
    ident = identity(identity_dir)
    root = _root(folder)
    _check_writable(root, ident.origin)
    lessons_dir = own_folder(root, ident.origin, "lessons")
    # Made even empty: a receiver takes an origin's folder as read whole (and so a confirmation
    # missing from it as withdrawn) only when lessons/ and confirm/ are both there.
    confirm_dir = own_folder(root, ident.origin, "confirm")
    report: dict[str, Any] = {"folder": str(root), "origin": ident.origin, "exported": [],
                              "unchanged": 0, "removed": [], "withheld": [], "not_ours": 0,
                              "revocations": [], "problems": [], "cleaned": []}
    problems = report["problems"]
    report["cleaned"] = _clean_left_overs(root, ident, problems)
    _put_own(root, root / ident.origin / KEY_FILE, public_line(ident.public_raw).encode("ascii"), problems)
    for directory in (lessons_dir, confirm_dir):  # so that git carries them even empty
        _put_own(root, directory / KEEP_FILE, KEEP_TEXT, problems)
    revoked = _revoked_hashes(root, ident)
    report["revocations"] = _keep_revocations(store, root, ident, revoked, problems)
    report["cleaned"] += _keep_only_ours(root, ident, "revoked", problems)
    # Our rows that go out, by hash: rows with the same words are one lesson, one file.
    wanted: dict[str, list[dict[str, Any]]] = {}
    for lesson in list_lessons(store, statuses=("active",)):
        if not _is_own(lesson, ident.origin):
            report["not_ours"] += 1  # received lessons are confirmed, never re-exported as ours
            continue
        reasons = _withhold(lesson, min_strength, revoked)
        if reasons:
            report["withheld"].append({"id": lesson["id"], "reasons": reasons})
            continue
        wanted.setdefault(lesson_hash(lesson["text"], lesson["kind"]), []).append(lesson)
    exported = Exported(store, ident.origin)
    for text_hash, rows in wanted.items():
        path = doc_path(root, ident.origin, "lessons", text_hash)
        doc = lesson_document(ident, *rows)
        written = _put_own(root, path, file_bytes(doc), problems)
        if written:
            report["exported"].append({"id": rows[0]["id"], "hash": text_hash})
        elif written is False:
            report["unchanged"] += 1
        if written is not None:
            exported.note(text_hash, doc["created"])
    # Stale lessons go, and so do sync tools' conflicted copies of ours: we wrote the original.
    # Not a lesson file of ours that this memory never wrote (another machine's, with a copy of
    # our identity): deleting it would be silent, and that machine would write it again.
    known = set(wanted) | revoked | set(exported.hashes) | _own_hashes(store, ident.origin)
    foreign = _not_written_here(root, ident, lessons_dir, "lesson", lambda h: h not in known)
    if not exported.recorded:
        # No record of what this memory wrote (an older remem kept none, or it was lost or does
        # not read): every lesson file of ours there is taken as written here, and the record
        # starts with them. Taken for another machine's, a lesson that left the memory since
        # would stay in the folder for good, and every receiver would keep it.
        for text_hash, doc in foreign.items():
            exported.note(text_hash, doc["created"] if isinstance(doc.get("created"), str) else "")
        foreign = {}
    removed, odd = sweep(root, lessons_dir, lambda h, copy: copy or (h not in wanted and h not in foreign))
    report["removed"] = removed
    problems += [p.as_dict() for p in odd]
    _say_not_written_here(root, ident, foreign, report)
    exported.save(problems)
    return report


# Beside the memory: per origin, every hash this memory wrote a lesson file of (Exported).
EXPORTED = "share_exported.json"


class Exported:
    """The hashes of every lesson file this memory wrote into its origin's lessons/ (each with
    the `created` it carried), kept beside the memory file. What the memory once exported may
    leave it (a lesson merged into another, deleted), and its file must still go; a file of
    ours whose hash is neither here nor in the memory was written by another machine holding a
    copy of our identity, and is not ours to delete. Missing, unreadable, or without this
    origin, there is no record (`recorded` False): saved then even empty, so that from the
    first export on, what this memory did not write is told apart."""

    def __init__(self, store: Store, origin: str) -> None:
        self.path = Path(store.path).parent / EXPORTED
        self.origin = origin
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = {}
        self.raw: dict[str, Any] = raw if isinstance(raw, dict) else {}
        mine = self.raw.get(origin)
        self.hashes: dict[str, str] = {h: v for h, v in (mine.items() if isinstance(mine, dict) else ())
                                       if is_hash(h) and isinstance(v, str)}
        self.saved = dict(self.hashes)
        self.recorded = isinstance(mine, dict)

    def note(self, text_hash: str, created: str) -> None:
        self.hashes[text_hash] = created

    def save(self, problems: list[dict[str, str]]) -> None:
        """Written when something changed or no record was there (fsync: nothing else could
        rebuild it)."""
        if self.hashes == self.saved and self.recorded:
            return
        data = json.dumps({**self.raw, self.origin: dict(sorted(self.hashes.items()))},
                          sort_keys=True).encode("utf-8") + b"\n"
        try:
            write_atomic(self.path, data, fsync=True)
            self.saved, self.recorded = dict(self.hashes), True
        except OSError as exc:
            problems.append(Problem(str(self.path), (
                f"cannot keep the list of the lessons this memory exported ({exc.strerror or exc}); "
                "make the memory's folder writable, then sync again")).as_dict())


def exported_before(store: Store, lesson: dict[str, Any], *, identity_dir: Path | str | None = None) -> bool:
    """Whether this memory once wrote this lesson of its own into the share folder (its hash
    in share_exported.json under our origin): other memories may hold it then, and only a
    revocation (`remem share revoke`) withdraws it there. False for a received lesson, and in
    a memory that never shared (no identity is made here)."""
    ours = own_origin(identity_dir)
    if ours is None or not _is_own(lesson, ours):
        return False
    return lesson_hash(lesson["text"], lesson["kind"]) in Exported(store, ours).hashes


NOT_WRITTEN_HERE = (
    "files in lessons/ or confirm/ signed with this memory's key but not written by it: "
    "a copy of this memory's identity/ is syncing from another machine (one memory moved by copying "
    "$REMEM_HOME while the old one still syncs); give one of them a new identity (move its "
    "identity/ aside, then `remem share sync` there makes one, for others to trust anew); "
    "left in place")


def _own_hashes(store: Store, ours: str) -> set[str]:
    """Every hash of a lesson of ours this memory holds, whatever its status."""
    return {r["hash"] for r in store.rows("SELECT hash, origin FROM lessons") if _is_own(r, ours)}


def _not_written_here(root: Path, ident: Identity, directory: Path, kind: str,
                      unknown: Any) -> dict[str, dict[str, Any]]:
    """By hash, the plain files in one of our sub-folders that hold our own signed `kind`
    document although this memory never wrote it (`unknown(hash)` says the memory knows nothing
    of the hash), with that document: only a copy of our identity elsewhere makes one."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return {}
    found = {}
    for name in names:
        parsed = parse_name(name)
        if parsed and not parsed[1] and unknown(parsed[0]):
            doc = _own_doc(root, directory / name, ident, kind, parsed[0])
            if doc is not None:
                found[parsed[0]] = doc
    return found


def _say_not_written_here(root: Path, ident: Identity, hashes: Iterable[str], report: dict[str, Any]) -> None:
    """One line for all of them (the same in the export's report and the confirmations': said
    once), and their hashes under `not_written_here`."""
    report["not_written_here"] = sorted(hashes)
    if hashes:
        report["problems"].append(Problem(ident.origin, NOT_WRITTEN_HERE).as_dict())


# --------------------------------------------------------------------------- confirmations

def write_confirmations(store: Store, folder: str | Path, *, identity_dir: Path | str | None = None
                        ) -> dict[str, Any]:
    """One signed confirm file per received lesson we hold active; stale ones removed."""
    with share_lock(store):
        return _confirm(store, folder, identity_dir)


def _confirm(store: Store, folder: str | Path, identity_dir: Path | str | None) -> dict[str, Any]:
    ident = identity(identity_dir)
    root = _root(folder)
    report: dict[str, Any] = {"written": [], "unchanged": 0, "removed": [], "withdrawn": [], "stays": [],
                              "confirmed": [], "cleaned": [], "problems": []}
    wanted: dict[str, dict[str, Any]] = {}
    for row in list_lessons(store, statuses=("active",)):
        if not _is_own(row, ident.origin):
            wanted.setdefault(lesson_hash(row["text"], row["kind"]), row)
    # Checked even with nothing to write: the sweep below deletes in it.
    directory = own_folder(root, ident.origin, "confirm", make=bool(wanted))
    times = SignedTimes(ident)
    # A reader counts a confirmation only when it is later than our withdrawal of that hash,
    # so each is dated after every withdrawal of ours we know of: the one in the folder, and
    # the one kept here (the file may be gone, and come back). A clock that ran ahead when we
    # withdrew would otherwise leave our new confirmation refused wherever that withdrawal is.
    withdrawals = times.latest("withdraw", _dated(root, ident, "withdrawn"))
    confirmed: set[str] = set()
    for text_hash, row in wanted.items():
        path = doc_path(root, ident.origin, "confirm", text_hash)
        current = _own_doc(root, path, ident, "confirm", text_hash)
        floor = withdrawals.get(text_hash)
        at = _doc_time(current) if current else None
        if at is not None and (floor is None or at > floor):
            report["unchanged"] += 1
            confirmed.add(text_hash)
            times.note("confirm", text_hash, at)
            continue
        at = _after(floor)
        doc = ident.sign({"v": VERSION, "type": "confirm", "origin": ident.origin,
                          "hash": text_hash, "author": row["origin"], "at": clock.iso(at)})
        written = _put_own(root, path, file_bytes(doc), report["problems"])
        if written is not None:
            confirmed.add(text_hash)
            times.note("confirm", text_hash, at)
        if written:
            report["written"].append(text_hash)
    # A confirmation that goes leaves a signed withdrawal behind, written first: a copy of the
    # old confirmation put back later is then older than it, and no reader counts it. One whose
    # withdrawal cannot be written stays (said in problems): gone without it, any copy put back
    # would count again.
    # Not a confirmation of ours dated after every one we signed of that hash (and after our
    # withdrawal of it): another machine's, with a copy of our identity. Withdrawing it would
    # withdraw that one's word. With our record of what we signed there but unreadable, only one
    # of a lesson this memory does not hold at all is taken for that. With no record at all (an
    # older remem kept none, or it was deleted), every confirmation of ours there is taken as
    # signed here, and the record starts with them: taken for another machine's, one this
    # memory signed and no longer stands behind would never be withdrawn.
    signed, withdrew = times.latest("confirm", {}), times.latest("withdraw", {})
    held = set() if times.read else {r["hash"] for r in store.rows("SELECT hash FROM lessons")}
    unknown = _not_written_here(root, ident, directory, "confirm", lambda h: h not in wanted and h not in held)
    foreign = {h for h, doc in unknown.items() if times.found and _later(doc, signed.get(h), withdrew.get(h))}
    for text_hash, doc in unknown.items():
        at = _doc_time(doc)
        if not times.found and at is not None:
            times.note("confirm", text_hash, at)
    going = [h for h in _going(directory, wanted) if h not in foreign]
    report["withdrawn"] = _withdraw(root, ident, going, times.latest("confirm", _dated(root, ident, "confirm")),
                                    times, report["problems"])
    report["stays"] = sorted(set(going) - set(report["withdrawn"]))
    stays = set(report["stays"])
    removed, odd = sweep(root, directory, lambda h, copy: copy or (h not in stays and h not in wanted
                                                                   and h not in foreign))
    report["removed"] = removed
    report["problems"] += [p.as_dict() for p in odd]
    _say_not_written_here(root, ident, foreign, report)
    # A withdrawal of what we confirm again goes (the new confirmation is later).
    report["cleaned"] = _keep_only_ours(root, ident, "withdrawn", report["problems"])
    _unwithdraw(root, ident, confirmed)
    report["confirmed"] = sorted(confirmed)  # every hash whose confirmation is in the folder now
    times.save(report["problems"])
    return report


def _later(doc: dict[str, Any] | None, *than: datetime | None) -> bool:
    """Whether a document of ours is dated after each of these times we signed (a missing one
    counts as none): one we never signed ourselves."""
    at = _doc_time(doc) if doc else None
    return at is not None and all(t is None or at > t for t in than)


def _going(directory: Path, wanted: dict[str, dict[str, Any]]) -> list[str]:
    """The hashes of the files in our confirm/ that the sweep is about to remove."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return sorted({p[0] for p in map(parse_name, names) if p and p[0] not in wanted})


def _withdraw(root: Path, ident: Identity, hashes: list[str], confirmations: dict[str, datetime],
              times: SignedTimes, problems: list[dict[str, str]]) -> list[str]:
    """Our signed withdrawal of each of these confirmations (withdrawn/<hash>.json): the hashes
    whose withdrawal is in the folder now. Dated now, or just after our latest confirmation of
    that hash when that is later (`confirmations`; a clock that ran ahead when we confirmed):
    a withdrawal older than the confirmation it withdraws would let a copy of that put back
    count again."""
    if not hashes:
        return []
    try:
        own_folder(root, ident.origin, "withdrawn")
    except ShareError as exc:
        problems.append(Problem(f"{ident.origin}/withdrawn", str(exc)).as_dict())
        return []
    written = []
    for text_hash in hashes:
        at = _after(confirmations.get(text_hash))
        doc = ident.sign({"v": VERSION, "type": "withdraw", "origin": ident.origin, "hash": text_hash,
                          "at": clock.iso(at)})
        if _put_own(root, doc_path(root, ident.origin, "withdrawn", text_hash), file_bytes(doc), problems) is not None:
            written.append(text_hash)
            times.note("withdraw", text_hash, at)
    return written


def _unwithdraw(root: Path, ident: Identity, confirmed: set[str]) -> None:
    """Our withdrawals of lessons we confirm again go."""
    try:
        directory = own_folder(root, ident.origin, "withdrawn", make=False)
    except ShareError:
        return
    sweep(root, directory, lambda h, copy: h in confirmed)


def _after(floor: datetime | None) -> datetime:
    """Now, or one microsecond after `floor` when the clock says no later than it."""
    now = clock.now()
    return now if floor is None or now > floor else floor + timedelta(microseconds=1)


def _doc_time(doc: dict[str, Any]) -> datetime | None:
    """A document's `at`, or None when it holds no time."""
    value = doc.get("at")
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        return clock.parse(value)
    except ValueError:
        return None


def _dated(root: Path, ident: Identity, sub: str) -> dict[str, datetime]:
    """Per hash, the latest `at` of our own signed documents in our sub-folder (the plain file
    and any sync tool's copy of it: any of them could be put back)."""
    kind = {"confirm": "confirm", "withdrawn": "withdraw"}[sub]
    try:
        directory = own_folder(root, ident.origin, sub, make=False)
        names = sorted(os.listdir(directory))
    except (ShareError, OSError):
        return {}
    latest: dict[str, datetime] = {}
    for name in names:
        text_hash = (parse_name(name) or (hash_in(name) if unexpected(name) else None, True))[0]
        doc = _own_doc(root, directory / name, ident, kind, text_hash) if text_hash else None
        at = _doc_time(doc) if doc else None
        if at is not None and (text_hash not in latest or at > latest[text_hash]):
            latest[text_hash] = at
    return latest


class SignedTimes:
    """The latest `at` this identity signed, per kind ("confirm", "withdraw") and hash, kept
    beside its key (SIGNED_TIMES): the files in the share folder may be deleted, and brought
    back later by a sync tool, so what was signed is remembered here. Unreadable, it is taken
    as empty (the folder's own files still count). Missing (`found` False), there is no record
    at all (none signed yet, or an older remem kept none): saved then even empty."""

    KINDS = ("confirm", "withdraw")

    def __init__(self, ident: Identity) -> None:
        self.path = ident.directory / SIGNED_TIMES
        self.times: dict[str, dict[str, datetime]] = {kind: {} for kind in self.KINDS}
        # Whether this holds every confirmation this identity signed (so one of ours dated later
        # than all of them was signed elsewhere): read, or not there (none signed yet).
        self.read = True
        self.found = True
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raw, self.found = {}, False
        except (OSError, ValueError):
            raw, self.read = {}, False
        self.read = self.read and isinstance(raw, dict)
        for kind in self.KINDS:
            entries = raw.get(kind) if isinstance(raw, dict) else None
            for text_hash, value in (entries.items() if isinstance(entries, dict) else ()):
                at = _doc_time({"at": value})
                if is_hash(text_hash) and at is not None:
                    self.times[kind][text_hash] = at
        self.saved = self._encoded()

    def latest(self, kind: str, found: dict[str, datetime]) -> dict[str, datetime]:
        """Per hash, the later of what is kept here and what was `found` in the folder."""
        merged = dict(self.times[kind])
        for text_hash, at in found.items():
            if text_hash not in merged or at > merged[text_hash]:
                merged[text_hash] = at
        return merged

    def note(self, kind: str, text_hash: str, at: datetime) -> None:
        known = self.times[kind].get(text_hash)
        if known is None or at > known:
            self.times[kind][text_hash] = at

    def _encoded(self) -> bytes:
        return json.dumps({kind: {h: clock.iso(at) for h, at in sorted(self.times[kind].items())}
                           for kind in self.KINDS}, sort_keys=True).encode("utf-8") + b"\n"

    def save(self, problems: list[dict[str, str]]) -> None:
        """Written when something changed or the file was missing (fsync: nothing else could
        rebuild it)."""
        data = self._encoded()
        if data == self.saved and self.found:
            return
        try:
            write_atomic(self.path, data, fsync=True)
            self.saved, self.found = data, True
        except OSError as exc:
            problems.append(Problem(str(self.path), (
                f"cannot keep the times of our confirmations and withdrawals ({exc.strerror or exc}); "
                "make the identity folder writable, then sync again")).as_dict())


def _own_doc(root: Path, path: Path, ident: Identity, kind: str, text_hash: str) -> dict[str, Any] | None:
    """Our own signed `kind` document for this hash at path, or None: anything else there
    (unsigned, another's, too big, deeply nested, a pipe) is not ours."""
    try:
        doc = read_doc(root, path, MAX_OWN_BYTES)
    except ShareError:
        return None
    if (doc.get("type") == kind and doc.get("origin") == ident.origin
            and doc.get("hash") == text_hash and verify(doc, ident.public_raw)):
        return doc
    return None


def _still_valid(root: Path, path: Path, ident: Identity, kind: str, text_hash: str) -> bool:
    """Our own signed `kind` document for this hash is at path: keep it (and its time)."""
    return _own_doc(root, path, ident, kind, text_hash) is not None
