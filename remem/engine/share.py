"""Sharing lessons between memories through a plain sync folder, signed.

export_lessons  our shareable lessons -> <folder>/<origin>/lessons/<hash>.json (signed)
receive         other origins' files -> verified -> safety-checked -> candidate or quarantined
                lessons; confirmations grow `origins`; revocations retire lessons
write_confirmations   <folder>/<origin>/confirm/<hash>.json for every received lesson we hold active
sync            all of the above, idempotent
trust / accept / reject / revoke / candidates / peers   what the CLI and the TUI call
                (accept and reject write or withdraw our confirmation at once when the
                share folder is reachable: reachable_folder)

Rules (docs/PROTOCOL.md, Sharing):
- Untrusted origins' lessons that pass the checks are stored as `candidate` and are never
  activated automatically; they wait for `trust ORIGIN` or `accept ID`.
- A candidate becomes active when two or more trusted origins published or confirmed the
  same hash, or one trusted origin did and it means the same as one of our own active
  lessons (cosine >= share.corroborate_cut), or the person accepts it.
- A received lesson with the hash of one of our own lessons is that lesson (the hash is a
  lesson's identity across memories): its origins join ours and the received row is retired
  (status revoked, fold_into_own), never activated beside ours; our own vetoed or revoked
  lesson keeps it out the same way.
- An origin whose folder was read whole and no longer publishes or confirms a hash leaves that
  lesson's `origins` (a withdrawn confirmation stops counting); what no longer has the trusted
  origins it needs goes back to candidate (demote).
- A revocation from a trusted origin that vouched for a received lesson retires it (status
  revoked), and so does one from its author when no other trusted origin vouches for it.
  Anyone else revoking, and anyone revoking one of our own lessons, only leaves its `origins`
  (an untrusted author leaving hands authorship to a trusted voucher).
- A lesson of a project carries the project's folder name (never a path); a receiver binds it
  to its one project of that name (projects.resolve_project). Until it can, the lesson holds
  the name alone as its `cwd`, applies nowhere (lessons.unbound_project) and is never
  activated by corroboration; `accept` then needs the folder (`project=`).
- Every step holds share.lock beside the memory, so two never take the same lesson in twice.
"""

from __future__ import annotations

import math
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from remem.engine import clock, share_safety
from remem.engine.lessons import (LESSON_KINDS, add_lesson, get_lesson, lesson_hash,
                                  list_lessons, unbound_project, update_lesson)
from remem.engine.files import locked
from remem.engine.share_projects import (ACTIVATED, _adopt_project, _is_own, _name_waiting,
                                         _received_cwd, bind_waiting, place_project, shared_project)
from remem.engine.share_files import (KEY_FILE, MAX_OWN_BYTES, Problem, doc_path, is_hash,
                                      list_origins, own_folder, parse_name, read_doc, scan_origin,
                                      sweep, write_own)
from remem.engine.share_sign import (Identity, ShareError, file_bytes, identity, origin_of,
                                     public_line, verify)
from remem.engine.store import Store, dumps

VERSION = 1
__all__ = [
    "identity", "export_lessons", "receive", "write_confirmations", "sync", "activate", "demote",
    "fold_into_own", "bind_waiting", "shared_project", "place_project", "trust",
    "forget_peer", "accept", "reject", "revoke", "candidates", "peers", "keys", "resolve_folder",
    "reachable_folder", "ShareError",
]


# --------------------------------------------------------------------------- helpers

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


def _our_origin(identity_dir: Path | str | None) -> str | None:
    try:
        return identity(identity_dir, create=False).origin
    except ShareError:
        return None


def _trusted(store: Store) -> set[str]:
    return {r["origin"] for r in store.rows("SELECT origin FROM peers WHERE trusted = 1")}


def _vouchers(row: dict[str, Any], ours: str | None) -> set[str]:
    found = set(row.get("origins") or [])
    if row.get("origin"):
        found.add(row["origin"])
    found.discard(ours or "")
    return found


def _rows_with_hash(store: Store, text_hash: str) -> list[dict[str, Any]]:
    ids = [r["id"] for r in store.rows("SELECT id FROM lessons WHERE hash = ? ORDER BY created", (text_hash,))]
    return [get_lesson(store, i) for i in ids]


def _add_origins(store: Store, row: dict[str, Any], new: Iterable[str]) -> list[str]:
    """Append origins not yet listed; returns the ones added."""
    have = list(row.get("origins") or [])
    added = [o for o in dict.fromkeys(new) if o not in have and o != row.get("origin")]
    if added:
        update_lesson(store, row["id"], origins=have + added)
    return added


def _strength(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and 0 <= number <= 1000 else None


def _validate(sub: str, doc: dict[str, Any], origin: str) -> str | None:
    """Why a verified document is still unusable, or None."""
    kind = {"lessons": "lesson", "confirm": "confirm", "revoked": "revoke"}[sub]
    if doc.get("v") != VERSION:
        return f"unsupported version {doc.get('v')!r} (this remem reads version {VERSION})"
    if doc.get("type") != kind:
        return f"a {doc.get('type')!r} document in {sub}/"
    if doc.get("origin") != origin:
        return "signed for another origin than the folder it is in"
    if not isinstance(doc.get("hash"), str) or not is_hash(doc["hash"]):
        return "malformed hash"
    if kind == "lesson":
        text, lkind = doc.get("text"), doc.get("kind")
        if not isinstance(text, str) or not text.strip():
            return "a lesson without text"
        if lkind not in LESSON_KINDS:
            return f"unknown lesson kind {lkind!r}"
        if lesson_hash(text, lkind) != doc["hash"]:
            return "the hash does not match the text"
        if _strength(doc.get("strength")) is None:
            return "malformed strength"
        try:
            clock.parse(str(doc.get("created")))
        except ValueError:
            return "malformed created time"
        if "project" in doc:  # optional: absent for a lesson of every project
            problems = share_safety.project_problems(doc["project"])
            if problems:
                return "malformed project: " + "; ".join(problems)
    return None


def _pin(store: Store, origin: str, key_raw: bytes, tofu: bool) -> str | None:
    """Pin the first key seen per origin; a different key later is refused."""
    if origin_of(key_raw) != origin:
        return "key.pub does not belong to this origin (its id is derived from the key)"
    b64 = public_line(key_raw).split(" ", 1)[1].strip()
    row = store.one("SELECT public_key, first_seen FROM peers WHERE origin = ?", (origin,))
    if row is None:
        with store.write() as conn:
            conn.execute("INSERT OR IGNORE INTO peers (origin, public_key, trusted, first_seen) "
                         "VALUES (?, ?, ?, ?)", (origin, b64, int(tofu), clock.iso()))
    elif not row["public_key"]:
        with store.write() as conn:  # trusted by id before its key was seen
            conn.execute("UPDATE peers SET public_key = ? WHERE origin = ?", (b64, origin))
    elif row["public_key"] != b64:
        return (f"key changed since first seen {row['first_seen']}; refused (keys are pinned; "
                "if the change is genuine, forget the peer with `remem share trust ORIGIN --forget`)")
    return None


def _new_report(folder: Path, origin: str) -> dict[str, Any]:
    return {"folder": str(folder), "origin": origin, "origins_seen": [], "received": [],
            "quarantined": [], "corroborated": [], "activated": [], "confirmed_ours": [],
            "revoked": [], "withdrawn": [], "folded": [], "demoted": [], "rejected": [],
            "bound": [], "waiting_for_project": [],
            "incomplete": [], "ignored": [], "duplicates": 0, "already_held": 0}


# --------------------------------------------------------------------------- export

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


# --------------------------------------------------------------------------- receive

def receive(store: Store, folder: str | Path, *, identity_dir: Path | str | None = None,
            cfg: dict[str, Any] | None = None, embedder: Any = None) -> dict[str, Any]:
    """Read every other origin's files, verify, check, store; apply confirmations and revocations."""
    with share_lock(store):
        return _receive(store, folder, identity_dir, cfg, embedder)


def _receive(store: Store, folder: str | Path, identity_dir: Path | str | None,
             cfg: dict[str, Any] | None, embedder: Any) -> dict[str, Any]:
    full_cfg = cfg
    share_cfg = _cfg(cfg)
    ident = identity(identity_dir)
    root = _root(folder)
    cap = int(share_cfg["max_file_bytes"])
    report = _new_report(root, ident.origin)
    origins, ignored = list_origins(root)
    report["ignored"] = [p.as_dict() for p in ignored]
    lessons_in: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    confirms_in: list[tuple[str, str]] = []
    revokes_in: list[tuple[str, str, str]] = []
    # Per origin whose folder was read whole: the hashes it still stands behind (publishes,
    # confirms, or has a file for that did not read or verify this time).
    holding: dict[str, set[str]] = {}
    for origin in origins:
        if origin == ident.origin:
            continue
        scan = scan_origin(root, origin, cap)
        report["rejected"] += [p.as_dict() for p in scan.rejected]
        report["incomplete"] += [p.as_dict() for p in scan.incomplete]
        if scan.key_raw is None:
            continue
        why = _pin(store, origin, scan.key_raw, bool(share_cfg.get("trust_on_first_use")))
        if why:
            report["rejected"].append(Problem(f"{origin}/{KEY_FILE}", why).as_dict())
            continue
        report["origins_seen"].append(origin)
        held = set(scan.unsure)
        if scan.settled:
            holding[origin] = held
        for sub, items in scan.docs.items():
            seen: set[str] = set()
            for rel, doc in items:
                if doc["hash"] in seen:
                    report["duplicates"] += 1  # a conflicted copy of a file already read
                    continue
                if not verify(doc, scan.key_raw):
                    held.add(doc["hash"])
                    report["rejected"].append(Problem(
                        rel, f"signature does not verify against {origin}'s key "
                             "(changed after signing, or signed by another key)").as_dict())
                    continue
                why = _validate(sub, doc, origin)
                if why:
                    held.add(doc["hash"])
                    report["rejected"].append(Problem(rel, why).as_dict())
                    continue
                seen.add(doc["hash"])
                if sub == "lessons":
                    held.add(doc["hash"])
                    lessons_in.setdefault(doc["hash"], []).append((origin, doc))
                elif sub == "confirm":
                    held.add(doc["hash"])
                    confirms_in.append((origin, doc["hash"]))
                else:
                    revokes_in.append((origin, doc["hash"], str(doc.get("at") or "")))
    revoked_pairs = {(o, h) for o, h, _ in revokes_in}
    _take_lessons(store, lessons_in, revoked_pairs, ident.origin, report, embedder)
    _name_waiting(store, report)
    for origin, text_hash in confirms_in:
        if (origin, text_hash) in revoked_pairs:
            continue
        for row in _rows_with_hash(store, text_hash):
            if row["status"] in ("vetoed", "revoked"):
                continue
            if _add_origins(store, row, [origin]):
                key = "confirmed_ours" if _is_own(row, ident.origin) else "corroborated"
                report[key].append({"id": row["id"], "by": origin})
    _apply_revocations(store, revokes_in, ident.origin, report)
    for origin, text_hash in revoked_pairs:  # a revocation is no standing behind it
        if origin in holding:
            holding[origin].discard(text_hash)
    report["withdrawn"] = _withdraw(store, holding, ident.origin)
    report["folded"] = fold_into_own(store, ident.origin)
    report["bound"] += bind_waiting(store, ident.origin)  # after those _adopt_project bound
    report["demoted"] = demote(store, identity_dir=identity_dir)
    report["activated"] = activate(store, identity_dir=identity_dir, cfg=full_cfg, embedder=embedder)
    return report


def _withdraw(store: Store, holding: dict[str, set[str]], ours: str) -> list[dict[str, str]]:
    """Origins read whole this time leave the `origins` of lessons they no longer publish or
    confirm (a confirmation withdrawn by `share reject`, a lesson they stopped exporting). Never
    our own origin, never a lesson's author (its place is its `origin`; a revocation is what
    retires it), never retired lessons."""
    gone_all: list[dict[str, str]] = []
    if not holding:
        return gone_all
    ids = [r["id"] for r in store.rows(
        "SELECT id FROM lessons WHERE status IN ('active', 'candidate', 'quarantined') "
        "AND origins IS NOT NULL AND origins != '[]' ORDER BY created, id")]
    for row in (get_lesson(store, i) for i in ids):
        gone = [o for o in row["origins"]
                if o in holding and o != ours and o != row.get("origin") and row["hash"] not in holding[o]]
        if gone:
            update_lesson(store, row["id"], origins=[o for o in row["origins"] if o not in gone])
            gone_all += [{"id": row["id"], "by": o} for o in gone]
    return gone_all


def _take_lessons(store: Store, lessons_in: dict[str, list[tuple[str, dict[str, Any]]]],
                  revoked_pairs: set[tuple[str, str]], ours: str, report: dict[str, Any],
                  embedder: Any) -> None:
    trusted = _trusted(store)
    fresh: list[tuple[dict[str, Any], list[str]]] = []
    for text_hash, offers in lessons_in.items():
        offers = [(o, d) for o, d in offers if (o, text_hash) not in revoked_pairs]
        if not offers:
            continue
        # The author is the first trusted publisher (else the first), in origin order.
        offers.sort(key=lambda item: (item[0] not in trusted, item[0]))
        publishers = [o for o, _ in offers]
        existing = _rows_with_hash(store, text_hash)
        if existing:
            for row in existing:
                if row["status"] in ("vetoed", "revoked"):
                    continue
                _adopt_project(store, row, offers, ours, report)
                added = _add_origins(store, row, publishers)
                key = "confirmed_ours" if _is_own(row, ours) else "corroborated"
                report[key] += [{"id": row["id"], "by": o} for o in added]
                if not added:
                    report["already_held"] += 1
            continue
        doc = offers[0][1]  # the author's file says which project it is for
        reasons = share_safety.incoming(doc["text"])
        if reasons:
            made = add_lesson(store, doc["text"], doc["kind"], status="quarantined",
                              origin=publishers[0], origins=publishers, strength=_received_strength(doc),
                              cwd=_received_cwd(store, doc),
                              note="quarantined: " + "; ".join(reasons))
            if made["hash"] != text_hash:
                # Over the length cap the stored text is cut, and so its hash would change: keep
                # the sender's, or every sync would take the same file in as one more row.
                made = update_lesson(store, made["id"], hash=text_hash)
            report["quarantined"].append({"id": made["id"], "origin": publishers[0], "reasons": reasons})
            continue
        fresh.append((doc, publishers))
    if not fresh:
        return
    if embedder is None:
        from remem.engine.embed import get_embedder

        embedder = get_embedder()
    from remem.engine.embed import to_blob

    vectors = embedder.encode([doc["text"] for doc, _ in fresh])  # outside any write
    for (doc, publishers), vector in zip(fresh, vectors):
        made = add_lesson(store, doc["text"], doc["kind"], status="candidate", origin=publishers[0],
                          origins=publishers, strength=_received_strength(doc),
                          space=embedder.space, embedding=to_blob(vector),
                          cwd=_received_cwd(store, doc),
                          note=f"received from {publishers[0]}")
        report["received"].append({"id": made["id"], "origin": publishers[0], "hash": doc["hash"],
                                   "project": doc.get("project"), "cwd": made["cwd"]})


def _received_strength(doc: dict[str, Any]) -> float:
    """A peer's strength, capped at a fresh lesson's: others cannot make theirs loudest here."""
    strength = _strength(doc.get("strength"))
    return 1.0 if strength is None else min(strength, 1.0)  # "0.00" is a strength, not a missing one


def _apply_revocations(store: Store, revokes: list[tuple[str, str, str]], ours: str,
                       report: dict[str, Any]) -> None:
    """Retire the received lessons these revocations may retire (_revoke_one); otherwise the
    revoker only leaves their `origins`."""
    trusted = _trusted(store)
    for origin, text_hash, at in revokes:
        for row in _rows_with_hash(store, text_hash):
            if row["status"] in ("revoked", "vetoed") and not _is_own(row, ours):
                continue
            if _revoke_one(store, row, origin, trusted, ours):
                update_lesson(store, row["id"], status="revoked",
                              note=f"revoked by {origin}" + (f" at {at}" if at else ""))
                report["revoked"].append({"id": row["id"], "by": origin})


def _revoke_one(store: Store, row: dict[str, Any], origin: str, trusted: set[str], ours: str) -> bool:
    """True when `origin` revoking retires this row: a trusted voucher, or its author when no
    other trusted origin vouches for it. The author is only whoever published first, so an
    untrusted one must not retire what trusted origins stand behind; it leaves instead, and
    authorship passes to the first trusted voucher."""
    if _is_own(row, ours):
        retire, others = False, set()
    else:
        others = (_vouchers(row, ours) - {origin}) & trusted
        author = origin == row["origin"]
        retire = (origin in trusted and (author or origin in row["origins"])) or (author and not others)
    if retire:
        return True
    changes: dict[str, Any] = {}
    if origin in row["origins"]:
        changes["origins"] = [o for o in row["origins"] if o != origin]
    if origin == row["origin"] and others:
        changes["origin"] = next(o for o in row["origins"] if o in others)
    if changes:
        update_lesson(store, row["id"], **changes)
    return False


# --------------------------------------------------------------------------- activation

def _similar_local(store: Store, rows: list[dict[str, Any]], ours: str | None,
                   embedder: Any) -> list[tuple[str, float] | None]:
    """For each candidate row, the closest of our own active lessons and its cosine."""
    import numpy as np

    from remem.engine.embed import from_blob

    local = [r for r in list_lessons(store, statuses=("active",), with_vectors=True) if _is_own(r, ours)]
    if not local or not rows:
        return [None] * len(rows)

    def matrix(items: list[dict[str, Any]]) -> Any:
        missing = [i for i, r in enumerate(items) if r.get("space") != embedder.space or not r.get("embedding")]
        fresh = embedder.encode([items[i]["text"] for i in missing]) if missing else []
        out, j = [], 0
        for i, r in enumerate(items):
            if i in missing:
                out.append(np.asarray(fresh[j], dtype=np.float32))
                j += 1
            else:
                out.append(from_blob(r["embedding"]))
        mat = np.vstack(out).astype(np.float32)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        return mat / np.where(norms == 0, 1, norms)

    sims = matrix(rows) @ matrix(local).T
    best = sims.argmax(axis=1)
    return [(local[int(b)]["id"], float(sims[i, int(b)])) for i, b in enumerate(best)]


BY_MEANING = "means the same as your lesson "
TWIN = "the same lesson as your own lesson "


def own_twin(store: Store, text_hash: str, ours: str | None) -> dict[str, Any] | None:
    """Our own lesson with this hash (an active one first), or None."""
    own = [r for r in _rows_with_hash(store, text_hash) if _is_own(r, ours)]
    own.sort(key=lambda r: r["status"] != "active")  # stable: oldest first within each
    return own[0] if own else None


def fold_into_own(store: Store, ours: str | None) -> list[dict[str, Any]]:
    """Received lessons (waiting or active) with the hash of one of our own lessons: the hash is
    a lesson's identity across memories, so they are that lesson. Their origins join ours (when
    ours is active) and the received row is retired (status revoked, the note naming ours), so
    the lesson is held, primed and rendered once. Our own vetoed or revoked lesson keeps the
    received one out the same way, in whichever order they came."""
    rows = store.rows(
        "SELECT r.id FROM lessons r WHERE r.status IN ('candidate', 'quarantined', 'active') "
        "AND r.origin IS NOT NULL AND r.origin != '' AND r.origin != ? AND EXISTS (SELECT 1 FROM "
        "lessons o WHERE o.hash = r.hash AND (o.origin IS NULL OR o.origin = '' OR o.origin = ?)) "
        "ORDER BY r.created, r.id", (ours or "", ours or ""))
    done: list[dict[str, Any]] = []
    for item in rows:
        row = get_lesson(store, item["id"])
        own = own_twin(store, row["hash"], ours)
        if own is None:
            continue
        joined: list[str] = []
        if own["status"] == "active":
            joined = _add_origins(store, own, [o for o in [row["origin"], *row["origins"]] if o and o != ours])
        why = TWIN + own["id"] + ("" if own["status"] == "active" else f" ({own['status']})")
        update_lesson(store, row["id"], status="revoked", note=why)
        done.append({"id": row["id"], "own": own["id"], "why": why, "origins_joined": joined})
    return done


def activate(store: Store, *, identity_dir: Path | str | None = None, cfg: dict[str, Any] | None = None,
             embedder: Any = None) -> list[dict[str, Any]]:
    """Turn candidates that are now corroborated into active lessons; returns what changed."""
    ours = _our_origin(identity_dir)
    cut = float(_cfg(cfg)["corroborate_cut"])
    fold_into_own(store, ours)  # a twin of our own lesson is never activated beside it
    bind_waiting(store, ours)
    trusted = _trusted(store)
    changed: list[dict[str, Any]] = []
    by_meaning = []
    for row in list_lessons(store, statuses=("candidate",), with_vectors=True):
        # One waiting for its project stays: active, it would be a lesson of no project here.
        if _is_own(row, ours) or unbound_project(row.get("cwd")):
            continue
        vouched = _vouchers(row, ours) & trusted
        if len(vouched) >= 2:
            why = f"same lesson from {len(vouched)} trusted origins ({', '.join(sorted(vouched))})"
            update_lesson(store, row["id"], status="active", note=ACTIVATED + why)
            changed.append({"id": row["id"], "why": why})
        elif vouched:
            by_meaning.append(row)
    if by_meaning:
        if embedder is None:
            from remem.engine.embed import get_embedder

            embedder = get_embedder()
        for row, match in zip(by_meaning, _similar_local(store, by_meaning, ours, embedder)):
            if match and match[1] >= cut:
                why = f"{BY_MEANING}{match[0]} (cosine {match[1]:.2f})"
                origins = list(row["origins"]) + ([ours] if ours and ours not in row["origins"] else [])
                update_lesson(store, row["id"], status="active", origins=origins, note=ACTIVATED + why)
                changed.append({"id": row["id"], "why": why})
    return changed


def demote(store: Store, *, identity_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """Received lessons that trust made active and that trust no longer carries go back to
    `candidate` (after `trust --off` or `--forget`). Lessons the person accepted by hand stay."""
    ours = _our_origin(identity_dir)
    trusted = _trusted(store)
    changed: list[dict[str, Any]] = []
    for row in list_lessons(store, statuses=("active",)):
        note = row.get("note") or ""
        if _is_own(row, ours) or not note.startswith(ACTIVATED):
            continue
        vouched = _vouchers(row, ours) & trusted
        by_meaning = note.startswith(ACTIVATED + BY_MEANING)
        if (by_meaning and vouched) or len(vouched) >= 2:
            continue
        # Activation by meaning counted us among its origins; that came with the trust.
        origins = [o for o in row["origins"] if o != ours] if by_meaning else list(row["origins"])
        one = len(vouched) == 1
        why = (f"back to candidate: {len(vouched)} trusted origin{'' if one else 's'} "
               f"vouch{'es' if one else ''} for it now (was {note[len(ACTIVATED):]})")
        update_lesson(store, row["id"], status="candidate", origins=origins, note=why[:500])
        changed.append({"id": row["id"], "why": why})
    return changed


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


# --------------------------------------------------------------------------- sync

def sync(store: Store, folder: str | Path | None = None, *, identity_dir: Path | str | None = None,
         cfg: dict[str, Any] | None = None, embedder: Any = None) -> dict[str, Any]:
    """export + receive (confirmations and revocations in) + confirmations out. Idempotent."""
    root = resolve_folder(folder, cfg)
    started = clock.iso()
    out = {"folder": str(root)}
    # One sync of a memory at a time (a scheduled one and a hand-run one would otherwise both
    # take a new lesson in); the second waits, then finds nothing new.
    with share_lock(store):
        out["export"] = export_lessons(store, root, identity_dir=identity_dir, cfg=cfg)
        out["receive"] = receive(store, root, identity_dir=identity_dir, cfg=cfg, embedder=embedder)
        out["confirmations"] = write_confirmations(store, root, identity_dir=identity_dir)
    out["origin"] = out["export"]["origin"]
    out["summary"] = summarise(out)
    with store.write() as conn:
        conn.execute("INSERT INTO runs (kind, started, finished, status, summary) VALUES (?, ?, ?, ?, ?)",
                     ("share", started, clock.iso(), "ok", dumps({
                         **out["summary"], "folder": str(root),
                         "rejected_files": out["receive"]["rejected"][:50]})))
    return out


def summarise(out: dict[str, Any]) -> dict[str, int]:
    exp, rec, con = out.get("export") or {}, out.get("receive") or {}, out.get("confirmations") or {}
    return {
        "exported": len(exp.get("exported", [])), "withheld": len(exp.get("withheld", [])),
        "received": len(rec.get("received", [])), "quarantined": len(rec.get("quarantined", [])),
        "rejected": len(rec.get("rejected", [])), "incomplete": len(rec.get("incomplete", [])),
        "activated": len(rec.get("activated", [])), "corroborated": len(rec.get("corroborated", [])),
        "confirmed_ours": len(rec.get("confirmed_ours", [])), "revoked": len(rec.get("revoked", [])),
        "withdrawn": len(rec.get("withdrawn", [])), "folded": len(rec.get("folded", [])),
        "demoted": len(rec.get("demoted", [])), "revocations_rewritten": len(exp.get("revocations", [])),
        "bound": len(rec.get("bound", [])), "waiting_for_project": len(rec.get("waiting_for_project", [])),
        "confirmations_written": len(con.get("written", [])),
    }


# --------------------------------------------------------------------------- the person's choices

def accept(store: Store, lesson_id: str, *, force: bool = False, identity_dir: Path | str | None = None,
           folder: str | Path | None = None, cfg: dict[str, Any] | None = None,
           project: str | None = None) -> dict[str, Any]:
    """The person takes a received lesson (share_choices.accept); our confirmation goes into
    the folder named, or the configured one when it is reachable (reachable_folder), at once.
    project: the folder (absolute) it applies in here, which one waiting for its project needs."""
    from remem.engine import share_choices

    return share_choices.accept(store, lesson_id, force=force, identity_dir=identity_dir,
                                folder=reachable_folder(folder, cfg), project=project)


def reject(store: Store, lesson_id: str, *, identity_dir: Path | str | None = None,
           folder: str | Path | None = None, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """The person refuses a received lesson (share_choices.reject); a confirmation of ours
    leaves the folder named, or the configured one when it is reachable, at once."""
    from remem.engine import share_choices

    return share_choices.reject(store, lesson_id, identity_dir=identity_dir,
                                folder=reachable_folder(folder, cfg))


# The other choices and the views live in share_choices; share.trust() etc. still work.
_CHOICES = ("trust", "forget_peer", "revoke", "candidates", "peers", "keys")


def __getattr__(name: str) -> Any:
    if name in _CHOICES:
        from remem.engine import share_choices

        return getattr(share_choices, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
