"""What we write to the share folder: our lessons, our revocations kept, our confirmations."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from remem.engine import clock, share_safety
from remem.engine.lessons import lesson_hash, list_lessons
from remem.engine.share_files import (
    KEY_FILE,
    MAX_OWN_BYTES,
    Problem,
    doc_path,
    own_folder,
    parse_name,
    read_doc,
    sweep,
    write_own,
)
from remem.engine.share_folder import VERSION, _cfg, _root, share_lock
from remem.engine.share_projects import _is_own, shared_project
from remem.engine.share_sign import (
    Identity,
    ShareError,
    file_bytes,
    identity,
    public_line,
    verify,
)
from remem.engine.store import Store


def lesson_document(ident: Identity, lesson: dict[str, Any]) -> dict[str, Any]:
    """The signed export of one of our lessons (its project's name, when it has one, signed too)."""
    doc = {
        "v": VERSION, "type": "lesson", "origin": ident.origin,
        "hash": lesson_hash(lesson["text"], lesson["kind"]), "text": lesson["text"],
        "kind": lesson["kind"], "created": lesson["created"],
        "strength": f"{float(lesson.get('strength') or 0):.2f}",
    }
    project = shared_project(lesson.get("cwd"))
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
        reasons.append("revoked")
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
    lessons_dir = own_folder(root, ident.origin, "lessons")
    # Made even empty: a receiver takes an origin's folder as read whole (and so a confirmation
    # missing from it as withdrawn) only when lessons/ and confirm/ are both there.
    own_folder(root, ident.origin, "confirm")
    report: dict[str, Any] = {"folder": str(root), "origin": ident.origin, "exported": [],
                              "unchanged": 0, "removed": [], "withheld": [], "not_ours": 0,
                              "revocations": [], "problems": []}
    problems = report["problems"]
    _put_own(root, root / ident.origin / KEY_FILE, public_line(ident.public_raw).encode("ascii"), problems)
    revoked = _revoked_hashes(root, ident)
    report["revocations"] = _keep_revocations(store, root, ident, revoked, problems)
    wanted: set[str] = set()
    for lesson in list_lessons(store, statuses=("active",)):
        if not _is_own(lesson, ident.origin):
            report["not_ours"] += 1  # received lessons are confirmed, never re-exported as ours
            continue
        reasons = _withhold(lesson, min_strength, revoked)
        if reasons:
            report["withheld"].append({"id": lesson["id"], "reasons": reasons})
            continue
        text_hash = lesson_hash(lesson["text"], lesson["kind"])
        wanted.add(text_hash)
        path = doc_path(root, ident.origin, "lessons", text_hash)
        written = _put_own(root, path, file_bytes(lesson_document(ident, lesson)), problems)
        if written:
            report["exported"].append({"id": lesson["id"], "hash": text_hash})
        elif written is False:
            report["unchanged"] += 1
    # Stale lessons go, and so do sync tools' conflicted copies of ours: we wrote the original.
    removed, odd = sweep(root, lessons_dir, lambda h, copy: h not in wanted or copy)
    report["removed"] = removed
    problems += [p.as_dict() for p in odd]
    return report


# --------------------------------------------------------------------------- confirmations

def write_confirmations(store: Store, folder: str | Path, *, identity_dir: Path | str | None = None
                        ) -> dict[str, Any]:
    """One signed confirm file per received lesson we hold active; stale ones removed."""
    with share_lock(store):
        return _confirm(store, folder, identity_dir)


def _confirm(store: Store, folder: str | Path, identity_dir: Path | str | None) -> dict[str, Any]:
    ident = identity(identity_dir)
    root = _root(folder)
    report: dict[str, Any] = {"written": [], "unchanged": 0, "removed": [], "problems": []}
    wanted: dict[str, dict[str, Any]] = {}
    for row in list_lessons(store, statuses=("active",)):
        if not _is_own(row, ident.origin):
            wanted.setdefault(lesson_hash(row["text"], row["kind"]), row)
    # Checked even with nothing to write: the sweep below deletes in it.
    directory = own_folder(root, ident.origin, "confirm", make=bool(wanted))
    for text_hash, row in wanted.items():
        path = doc_path(root, ident.origin, "confirm", text_hash)
        if _still_valid(root, path, ident, "confirm", text_hash):
            report["unchanged"] += 1
            continue
        doc = ident.sign({"v": VERSION, "type": "confirm", "origin": ident.origin,
                          "hash": text_hash, "author": row["origin"], "at": clock.iso()})
        if _put_own(root, path, file_bytes(doc), report["problems"]):
            report["written"].append(text_hash)
    removed, odd = sweep(root, directory, lambda h, copy: h not in wanted)
    report["removed"] = removed
    report["problems"] += [p.as_dict() for p in odd]
    return report


def _still_valid(root: Path, path: Path, ident: Identity, kind: str, text_hash: str) -> bool:
    """Our own signed `kind` document for this hash is at path: keep it (and its time).
    Anything else there (unsigned, another's, too big, deeply nested, a pipe) is not."""
    try:
        doc = read_doc(root, path, MAX_OWN_BYTES)
    except ShareError:
        return False
    return (doc.get("type") == kind and doc.get("origin") == ident.origin
            and doc.get("hash") == text_hash and verify(doc, ident.public_raw))
