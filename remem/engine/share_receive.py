"""Taking in other origins' files: verified, checked, stored; confirmations, revocations, withdrawals."""

from __future__ import annotations

import re
import reprlib
from datetime import datetime
from pathlib import Path
from typing import Any

from remem.engine import clock, share_safety
from remem.engine.lessons import (
    LESSON_KINDS,
    add_lesson,
    get_lesson,
    lesson_hash,
    unbound_project,
    update_lesson,
    vector_text,
)
from remem.engine.share_files import (
    DOC_TYPES,
    KEY_FILE,
    Problem,
    is_hash,
    list_origins,
    scan_origin,
)
from remem.engine.share_folder import VERSION, _cfg, _root, share_lock
from remem.engine.share_projects import (
    ACTIVATED,
    _adopt_project,
    _is_own,
    _name_waiting,
    _received_cwd,
    bind_waiting,
    place_project,
)
from remem.engine.share_sign import identity, origin_of, public_line, verify
from remem.engine.share_trust import (
    _add_origins,
    _rows_with_hash,
    _trusted,
    _vouchers,
    activate,
    demote,
    fold_into_own,
)
from remem.engine.store import Store


# A peer's strength is a decimal number written as a string ("1.50"; PROTOCOL.md): ASCII
# digits, and at most 9 of them either side of the point, so it is finite whatever it says.
_STRENGTH = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})?")
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 40
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict = 2, 3, 3
# The note of a received lesson its untrusted author revoked while no trusted origin vouched for
# it: retired, but not for good. Anyone may publish first, so a trusted origin publishing it
# later brings it back (_bring_back); a trusted author's revocation stays for good.
STRANGER_REVOKED = "revoked by its untrusted author "


def _shown(value: Any) -> str:
    """A value from another machine's file, short enough for a one-line reason (a signed file
    may put 60 KB or a nest of lists where a word belongs)."""
    try:
        return _SHOWN.repr(value)
    except (ValueError, RecursionError):  # an integer too long to write out
        return f"a {type(value).__name__}"


def _strength(value: Any) -> float | None:
    """The strength a lesson document says, or None when it says none: a JSON number (10**400
    would not even fit a float), an exponent, "nan" or digits of another script are no
    strength here."""
    if not isinstance(value, str) or not _STRENGTH.fullmatch(value):
        return None
    return float(value)


def _time(value: Any) -> datetime | None:
    """An ISO 8601 time from a document (`created`, `at`), or None when it is none: not a
    string, not a time, or one outside what a datetime holds in UTC."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        return clock.parse(value)
    except ValueError:  # clock.TimeOutOfRange too
        return None


def _validate(sub: str, doc: dict[str, Any], origin: str) -> str | None:
    """Why a verified document is still unusable, or None. Every member is checked for its
    type as well as its value: the signature only says who wrote the file, not that it holds
    what a document should."""
    kind = DOC_TYPES[sub]
    version = doc.get("v")
    if type(version) is not int or version != VERSION:  # true == 1 in Python, not in JSON
        return f"unsupported version {_shown(version)} (this remem reads version {VERSION})"
    if doc.get("type") != kind:
        return f"a {_shown(doc.get('type'))} document in {sub}/"
    if doc.get("origin") != origin:
        return "signed for another origin than the folder it is in"
    if not isinstance(doc.get("hash"), str) or not is_hash(doc["hash"]):
        return "malformed hash"
    if kind == "lesson":
        text, lkind = doc.get("text"), doc.get("kind")
        if not isinstance(text, str) or not text.strip():
            return "a lesson without text"
        if not isinstance(lkind, str) or lkind not in LESSON_KINDS:
            return f"unknown lesson kind {_shown(lkind)}"
        if lesson_hash(text, lkind) != doc["hash"]:
            return "the hash does not match the text"
        if _strength(doc.get("strength")) is None:
            return "malformed strength"
        if _time(doc.get("created")) is None:
            return "malformed created time"
        if "project" in doc:  # optional: absent for a lesson of every project
            problems = share_safety.project_problems(doc["project"])
            if problems:
                return "malformed project: " + "; ".join(problems)
    if kind == "withdraw" and _time(doc.get("at")) is None:
        return "malformed withdrawal time"  # a withdrawal outranks what is older: it needs a time
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
            "incomplete": [], "held_back": [], "ignored": [], "blocked": [], "duplicates": 0,
            "already_held": 0}


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
    # Per origin whose folder was not read whole, but with nothing being written in it (its
    # lessons/ or confirm/ missing: git drops an empty folder): the hashes it signed a
    # withdrawal of and has nothing else for. Its word, signed and later than any confirmation
    # of it there: whatever else may be missing, it no longer stands behind those.
    withdrew: dict[str, set[str]] = {}
    # Blocked origins (share.blocked_origins, `remem share block`): their folders are not read
    # at all, so a flood costs nothing, no key is pinned, and nothing they send arrives.
    blocked = set(share_cfg.get("blocked_origins") or ())
    for origin in origins:
        if origin == ident.origin:
            continue
        if origin in blocked:
            report["blocked"].append(origin)
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
        report["held_back"] += [p.as_dict() for p in scan.held_back]
        held = set().union(*(h for sub, h in scan.unsure_in.items() if sub != "confirm"))
        # What in confirm/ did not read or verify holds its hash only when no signed withdrawal
        # of that hash outranks it (added below, once the withdrawals are read): a copy of a
        # withdrawn confirmation with one byte changed must not keep it counted.
        doubted = set(scan.unsure_in.get("confirm", ()))
        if scan.settled:
            holding[origin] = held
        # Its withdrawals first: a confirmation from before one is an old copy put back.
        withdrawn: dict[str, datetime] = {}
        for sub in ("withdrawn", "lessons", "confirm", "revoked"):
            seen: set[str] = set()
            for rel, doc in scan.docs.get(sub, []):
                if doc["hash"] in seen:
                    report["duplicates"] += 1  # a conflicted copy of a file already read
                    continue
                # A file that does not verify or validate still says its origin may stand
                # behind its hash; one in withdrawn/ says the opposite, so it says nothing.
                unsure = {"withdrawn": set(), "confirm": doubted}.get(sub, held)
                if not verify(doc, scan.key_raw):
                    unsure.add(doc["hash"])
                    report["rejected"].append(Problem(
                        rel, f"signature does not verify against {origin}'s key "
                             "(changed after signing, or signed by another key)").as_dict())
                    continue
                why = _validate(sub, doc, origin)
                if why:
                    unsure.add(doc["hash"])
                    report["rejected"].append(Problem(rel, why).as_dict())
                    continue
                if sub == "confirm" and doc["hash"] in withdrawn:
                    at = _time(doc.get("at"))
                    if at is None or at <= withdrawn[doc["hash"]]:
                        # One of the two is an old copy put back (or a clock was off): which
                        # one, only the origin knows. Its next sync keeps the one that holds.
                        report["rejected"].append(Problem(rel, (
                            f"a confirmation older than {origin}'s withdrawal of it at "
                            f"{clock.iso(withdrawn[doc['hash']])}: not counted (an old copy of one "
                            f"or the other put back); {origin}'s next `remem share sync` removes "
                            "the confirmation, or, if it still holds the lesson, writes a newer one "
                            "and removes the withdrawal")).as_dict())
                        continue
                seen.add(doc["hash"])
                when = _time(doc.get("at"))  # a withdrawal's is a time (_validate)
                if sub == "withdrawn" and when is not None:
                    withdrawn[doc["hash"]] = when
                elif sub == "lessons":
                    held.add(doc["hash"])
                    lessons_in.setdefault(doc["hash"], []).append((origin, doc))
                elif sub == "confirm":
                    held.add(doc["hash"])
                    confirms_in.append((origin, doc["hash"]))
                elif sub == "revoked":
                    revokes_in.append((origin, doc["hash"], clock.iso(when) if when else ""))
        held |= doubted - withdrawn.keys()
        if not scan.settled and not scan.writing:
            withdrew[origin] = set(withdrawn) - held
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
    report["withdrawn"] = _withdraw(store, holding, withdrew, ident.origin)
    report["folded"] = fold_into_own(store, ident.origin)
    report["bound"] += bind_waiting(store, ident.origin)  # after those _adopt_project bound
    report["demoted"] = demote(store, identity_dir=identity_dir)
    report["activated"] = activate(store, identity_dir=identity_dir, cfg=full_cfg, embedder=embedder)
    return report


def _withdraw(store: Store, holding: dict[str, set[str]], withdrew: dict[str, set[str]],
              ours: str) -> list[dict[str, str]]:
    """Origins read whole this time leave the `origins` of lessons they no longer publish or
    confirm (a confirmation withdrawn by `share reject`, a lesson they stopped exporting), and
    the others those they signed a withdrawal of (`withdrew`). Never our own origin, never a
    lesson's author (its place is its `origin`; a revocation is what retires it), never
    retired lessons."""
    gone_all: list[dict[str, str]] = []
    if not holding and not any(withdrew.values()):
        return gone_all
    ids = [r["id"] for r in store.rows(
        "SELECT id FROM lessons WHERE status IN ('active', 'candidate', 'quarantined') "
        "AND origins IS NOT NULL AND origins != '[]' ORDER BY created, id")]
    for row in (get_lesson(store, i) for i in ids):
        gone = [o for o in row["origins"] if o != ours and o != row.get("origin") and (
            (o in holding and row["hash"] not in holding[o]) or row["hash"] in withdrew.get(o, ()))]
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
                if _stranger_revoked(row, ours) and offers[0][0] in trusted:
                    _bring_back(store, row, offers, ours, report)
                    continue
                if row["status"] in ("vetoed", "revoked"):
                    continue
                row = _pass_authorship(store, row, offers, trusted, ours, report)
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

    # outside any write; from the lesson's own words, as every lesson is embedded
    vectors = embedder.encode([vector_text(doc["text"], doc["kind"]) for doc, _ in fresh])
    for (doc, publishers), vector in zip(fresh, vectors):
        made = add_lesson(store, doc["text"], doc["kind"], status="candidate", origin=publishers[0],
                          origins=publishers, strength=_received_strength(doc),
                          space=embedder.space, embedding=to_blob(vector),
                          cwd=_received_cwd(store, doc),
                          note=f"received from {publishers[0]}")
        report["received"].append({"id": made["id"], "origin": publishers[0], "hash": doc["hash"],
                                   "project": doc.get("project"), "cwd": made["cwd"]})


def _stranger_revoked(row: dict[str, Any], ours: str) -> bool:
    return (row["status"] == "revoked" and not _is_own(row, ours)
            and (row.get("note") or "").startswith(STRANGER_REVOKED))


def _bring_back(store: Store, row: dict[str, Any], offers: list[tuple[str, dict[str, Any]]],
                ours: str, report: dict[str, Any]) -> None:
    """A lesson its untrusted author revoked, published now by a trusted origin (offers[0]): it
    comes back as that origin's, received anew (the safety checks, its project, its strength),
    a candidate or quarantined like any lesson just received. The revoker no longer vouches."""
    author, doc = offers[0]
    revoker = row["origin"]
    publishers = [o for o, _ in offers]
    origins = publishers + [o for o in row["origins"] if o not in publishers and o not in (revoker, ours)]
    reasons = share_safety.incoming(doc["text"])
    note = ("quarantined: " + "; ".join(reasons) if reasons else
            f"received from {author} (first sent by {revoker}, untrusted, which revoked it)")
    made = update_lesson(store, row["id"], status="quarantined" if reasons else "candidate", origin=author,
                         origins=origins, strength=_received_strength(doc), cwd=_received_cwd(store, doc),
                         note=note)
    if reasons:
        report["quarantined"].append({"id": made["id"], "origin": author, "reasons": reasons})
    else:
        report["received"].append({"id": made["id"], "origin": author, "hash": doc["hash"],
                                   "project": doc.get("project"), "cwd": made["cwd"]})


def _pass_authorship(store: Store, row: dict[str, Any], offers: list[tuple[str, dict[str, Any]]],
                     trusted: set[str], ours: str, report: dict[str, Any]) -> dict[str, Any]:
    """A received lesson whose author (whoever published first) is untrusted passes to the first
    trusted publisher, with that origin's project: anyone may publish first, and must not keep
    a lesson trusted origins send waiting for a project of its choosing. The earlier author
    stays among its origins while it still publishes it. A lesson the person accepted by hand
    keeps where it applies. Returns the row as it is now."""
    if _is_own(row, ours) or row["origin"] in trusted:
        return row
    author, doc = next(((o, d) for o, d in offers if o in trusted), (None, None))
    if author is None or doc is None:
        return row
    earlier = row["origin"]
    origins = [author] + [o for o in row["origins"] if o != author]
    changes: dict[str, Any] = {"origin": author, "origins": origins}
    note = row.get("note") or ""
    if not (row["status"] == "active" and not note.startswith(ACTIVATED)):  # not accepted by hand
        project = doc.get("project")
        cwd = _received_cwd(store, doc)
        changes["cwd"] = cwd
        if note.startswith("received from "):
            changes["note"] = f"received from {author} (first sent by {earlier}, untrusted)"
        if unbound_project(cwd):
            why = place_project(store, cwd)[1]
            if row["status"] == "active":  # active, it would apply in no project here
                changes.update(status="candidate", note=f"back to candidate: {why}")
            report["waiting_for_project"].append({"id": row["id"], "project": project, "why": why})
        elif project and cwd != row.get("cwd"):
            report["bound"].append({"id": row["id"], "project": project, "cwd": cwd})
    return update_lesson(store, row["id"], **changes)


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
            why = _revoke_one(store, row, origin, trusted, ours)
            if why:
                update_lesson(store, row["id"], status="revoked", note=why + (f" at {at}" if at else ""))
                report["revoked"].append({"id": row["id"], "by": origin})


def _revoke_one(store: Store, row: dict[str, Any], origin: str, trusted: set[str], ours: str) -> str | None:
    """The note when `origin` revoking retires this row: a trusted voucher, or its author when
    no other trusted origin vouches for it; None when it does not. The author is only whoever
    published first, so an untrusted one must not retire what trusted origins stand behind; it
    leaves instead, and authorship passes to the first trusted voucher. What an untrusted
    author retires is not retired for good (STRANGER_REVOKED): a trusted origin publishing it
    later brings it back."""
    others: set[str] = set()
    if not _is_own(row, ours):
        others = (_vouchers(row, ours) - {origin}) & trusted
        author = origin == row["origin"]
        if origin in trusted and (author or origin in row["origins"]):
            return f"revoked by {origin}"
        if author and not others:
            return STRANGER_REVOKED + origin
    changes: dict[str, Any] = {}
    if origin in row["origins"]:
        changes["origins"] = [o for o in row["origins"] if o != origin]
    if origin == row["origin"] and others:
        changes["origin"] = next(o for o in row["origins"] if o in others)
    if changes:
        update_lesson(store, row["id"], **changes)
    return None
