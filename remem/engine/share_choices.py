"""The person's side of sharing: trust, accept, reject, revoke, and the views the CLI and TUI show.

Re-exported by remem.engine.share, so callers use `share.trust(...)`, `share.candidates(...)`.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from remem.engine import clock, share_safety
from remem.engine.lessons import get_lesson, lesson_hash, list_lessons, unbound_project, update_lesson
from remem.engine.projects import normal_folder, project_name
from remem.engine.share_export import _still_valid, write_confirmations
from remem.engine.share_files import doc_path, is_origin, own_folder, remove, write_own
from remem.engine.share_folder import VERSION, _cfg, _root, share_lock
from remem.engine.share_projects import _is_own, place_project
from remem.engine.share_sign import ShareError, file_bytes, identity, own_origin, public_line
from remem.engine.share_trust import (_similar_local, _trusted, _vouchers, activate, demote,
                                      fold_into_own, own_twin)
from remem.engine.store import Store, loads_list


# --------------------------------------------------------------------------- person's choices

def _known_origins(store: Store) -> set[str]:
    """Every origin this memory has seen: a peer (its key pinned at a sync, trusted ahead of
    time, or forgotten), and any origin a held lesson came from or was confirmed by."""
    import json

    known = {r["origin"] for r in store.rows("SELECT origin FROM peers")}
    for row in store.rows("SELECT DISTINCT origin, origins FROM lessons WHERE origin IS NOT NULL "
                          "OR origins != '[]'"):
        if row["origin"]:
            known.add(row["origin"])
        try:
            listed = json.loads(row["origins"] or "[]")
        except ValueError:
            continue
        known.update(o for o in listed if isinstance(o, str))
    return {o for o in known if is_origin(o)}


def _peer_id(store: Store, origin: str, *, unseen_hint: str = "", allow_unseen: bool = False) -> str:
    """A known origin from its id or a unique prefix (at least 4 hex digits). An origin never
    seen is refused (a mistyped id would otherwise name a peer that does not exist) unless
    allow_unseen: trusting one ahead of its first sync."""
    origin = origin.strip().lower()
    not_hex = sorted({ch for ch in origin if ch not in "0123456789abcdef"})
    if not_hex:
        shown = ", ".join(repr(ch) for ch in not_hex[:5])
        raise ShareError(f"{origin!r} is not an origin id: {shown} {'is' if len(not_hex) == 1 else 'are'} "
                         "not hex (an origin id is 16 hex digits, 0-9 and a-f); `remem share peers` "
                         "lists them")
    if len(origin) < 4 or len(origin) > 16:
        raise ShareError(f"{origin!r} is not an origin id (16 hex digits, or the first 4 or more of "
                         "one); `remem share peers` lists them")
    known = _known_origins(store)
    if is_origin(origin):
        if origin in known or allow_unseen:
            return origin
        raise ShareError(f"no known origin {origin}; `remem share peers` lists them{unseen_hint}")
    # A prefix, compared as text, and only when it names one.
    matches = sorted(o for o in known if o.startswith(origin))
    if len(matches) > 1:
        raise ShareError(f"ambiguous origin {origin!r}: matches {matches[0]} and "
                         f"{matches[1]}; give more characters")
    if matches:
        return matches[0]
    raise ShareError(f"no known origin starts with {origin!r}; `remem share peers` lists them")


LABEL_MAX = 64  # characters of a peer's label


# Bidirectional-text controls reorder how the rest of a line reads ("3f9a (laptop)" shown
# backwards); line and paragraph separators break the one line.
_LABEL_REFUSED = {0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _clean_label(label: str) -> str | None:
    """A peer's label as stored: one line of at most LABEL_MAX characters; "" clears it.
    Every control character is refused, a tab or a line break like any other (none is quietly
    turned into a space), and so are line separators and bidirectional-text controls; runs of
    spaces (no-break ones too) become one space, and spaces at either end go."""
    raw = str(label)
    bad = sorted({f"U+{ord(ch):04X}" for ch in raw
                  if unicodedata.category(ch) == "Cc" or ord(ch) in _LABEL_REFUSED})
    if bad:
        raise ShareError("a peer label cannot hold control characters (tabs and line breaks "
                         f"included) or text-direction controls: {', '.join(bad)}")
    text = " ".join(raw.split())
    if len(text) > LABEL_MAX:
        raise ShareError(f"a peer label is at most {LABEL_MAX} characters, not {len(text)}")
    return text or None


def _set_label(conn: Any, origin: str, label: str | None) -> None:
    conn.execute("UPDATE peers SET label = ? WHERE origin = ?", (label, origin))


def trust(store: Store, origin: str, trusted: bool = True, *, label: str | None = None,
          force: bool = False, identity_dir: Path | str | None = None,
          cfg: dict[str, Any] | None = None, embedder: Any = None) -> dict[str, Any]:
    """Trust (or stop trusting) an origin. Trusting re-checks the candidates for corroboration;
    withdrawing trust sends back to `candidate` the lessons that trust alone kept active
    (those accepted by hand stay).

    The origin must be one already seen (a peer, or the origin of a lesson held); force: a
    full origin id never seen is taken too (trusted ahead of its first sync).

    label: a name for the origin ("laptop", "Ana"), shown wherever peers are listed; "" clears
    it, None leaves it. Naming an origin already trusted only sets the label."""
    origin = _peer_id(store, origin, allow_unseen=force,
                      unseen_hint=" (trust one ahead of time with --force)")
    name = _clean_label(label) if label is not None else None
    with store.write() as conn:
        was = conn.execute("SELECT trusted FROM peers WHERE origin = ?", (origin,)).fetchone()
        conn.execute("INSERT OR IGNORE INTO peers (origin, public_key, trusted, first_seen) "
                     "VALUES (?, '', 0, ?)", (origin, clock.iso()))
        conn.execute("UPDATE peers SET trusted = ? WHERE origin = ?", (int(trusted), origin))
        if label is not None:
            _set_label(conn, origin, name)
        now_label = conn.execute("SELECT label FROM peers WHERE origin = ?", (origin,)).fetchone()[0]
    relabel_only = label is not None and trusted and was is not None and bool(was[0])
    activated = (activate(store, identity_dir=identity_dir, cfg=cfg, embedder=embedder)
                 if trusted and not relabel_only else [])
    demoted = [] if trusted else demote(store, identity_dir=identity_dir)
    waiting, for_project = _still_waiting(store, origin) if trusted else (0, 0)
    return {"origin": origin, "trusted": trusted, "label": now_label, "activated": activated,
            "demoted": demoted, "waiting": waiting, "waiting_for_project": for_project}


def _still_waiting(store: Store, origin: str) -> tuple[int, int]:
    """Candidates this origin sent or confirmed that trusting it did not activate, and how many
    of them wait for their project's folder here. The others wait for agreement: one trusted
    origin alone is not enough (DESIGN: a second origin, or a lesson of our own, must agree).
    One waiting for its project is activated by no agreement at all (active, it would apply in
    no project here): only `accept ID --project DIR` takes it."""
    rows = [r for r in store.rows("SELECT origin, origins, cwd FROM lessons WHERE status = 'candidate'")
            if r["origin"] == origin or origin in loads_list(r["origins"])]
    return len(rows), sum(1 for r in rows if unbound_project(r["cwd"]))


def forget_peer(store: Store, origin: str, *, label: str | None = None,
                identity_dir: Path | str | None = None) -> dict[str, Any]:
    """Drop a peer's pinned key and trust; lessons that trust alone kept active go back to
    `candidate`, as with `trust --off`. The row stays, keyless and untrusted, so the next key
    it publishes is pinned untrusted even with share.trust_on_first_use on. Its label stays
    (label: set or, with "", clear it)."""
    origin = _peer_id(store, origin)
    name = _clean_label(label) if label is not None else None
    with store.write() as conn:
        gone = conn.execute("UPDATE peers SET public_key = '', trusted = 0 WHERE origin = ?",
                            (origin,)).rowcount
        if label is not None:
            _set_label(conn, origin, name)
        row = conn.execute("SELECT label FROM peers WHERE origin = ?", (origin,)).fetchone()
    return {"origin": origin, "forgotten": bool(gone), "label": row[0] if row else None,
            "demoted": demote(store, identity_dir=identity_dir)}


def accept(store: Store, lesson_id: str, *, force: bool = False, identity_dir: Path | str | None = None,
           folder: str | Path | None = None, project: str | None = None) -> dict[str, Any]:
    """The person takes a received lesson: active, and we count among its origins.

    project: the folder (an absolute path, as projects.resolve_project gives it) the lesson
    applies in here. One that waits for its project (this memory has no project, or several,
    of the name its author sent) needs it; on any other it ties the lesson to that folder."""
    row = get_lesson(store, lesson_id)
    ours = own_origin(identity_dir)
    if _is_own(row, ours):
        raise ShareError(f"lesson {row['id']} is your own; `remem share accept` is for received lessons")
    if row["status"] in ("revoked", "vetoed"):
        raise ShareError(f"lesson {row['id']} is {row['status']}; it cannot come back")
    twin = own_twin(store, row["hash"], ours)
    if twin is not None:
        # The same lesson as one of ours (the hash is its identity): never a second active copy.
        with share_lock(store):
            fold_into_own(store, ours)
        same = f"lesson {row['id']} is the same lesson as your own {twin['id']}"
        if twin["status"] == "active":
            raise ShareError(f"{same}, which is active; its origins now count there (nothing to accept)")
        if twin["status"] == "vetoed":
            raise ShareError(f"{same}, which you vetoed; it stays out "
                             f"(`remem lessons restore {twin['id']}` brings yours back)")
        raise ShareError(f"{same}, which you revoked; it cannot come back")
    if row["status"] == "quarantined" and not force:
        raise ShareError(f"lesson {row['id']} is quarantined ({row.get('note') or 'unsafe'}); read it in "
                         f"`remem share candidates`, then `remem share accept {row['id']} --force`")
    cwd = _accepted_cwd(store, row, project, force)
    origins = list(row["origins"]) + ([ours] if ours and ours not in row["origins"] else [])
    done = update_lesson(store, row["id"], status="active", origins=origins, cwd=cwd, note="accepted by hand")
    warning = None
    if folder:
        report, refused = _confirmations_now(store, folder, identity_dir)
        if refused or lesson_hash(done["text"], done["kind"]) not in report["confirmed"]:
            warning = (f"accepted here, but your confirmation of it could not be written to the share "
                       f"folder ({refused or _problems_said(report)}); the next `remem share sync` that "
                       "can write there writes it")
        elif report["problems"]:
            warning = f"accepted here; the share folder: {_problems_said(report)}"
    return {**done, "warning": warning}


def _confirmations_now(store: Store, folder: str | Path, identity_dir: Path | str | None
                       ) -> tuple[dict[str, Any], str | None]:
    """Our confirmations written into the share folder now (write_confirmations), after the
    lesson changed here: its report, and why the folder refused them all (None: it did not).
    A folder that cannot be written (mounted read-only, another user's) is no failure of the
    choice made here: the next sync that can write there catches up, so it is said, not raised."""
    try:
        return write_confirmations(store, folder, identity_dir=identity_dir), None
    except ShareError as exc:
        return {"problems": [], "stays": [], "confirmed": []}, str(exc)


def _problems_said(report: dict[str, Any]) -> str:
    return "; ".join(f"{p['path']}: {p['reason']}" for p in report["problems"])


def _accepted_cwd(store: Store, row: dict[str, Any], project: str | None, force: bool) -> str | None:
    """Where an accepted lesson applies: the folder the person named, else where it applies
    now; one still waiting for its project is refused (active, it would apply in no project
    here, and the person meant it for one)."""
    if project is not None:
        if not project.startswith("/"):
            raise ShareError(f"--project takes a project's folder, not {project!r}; "
                             "give its full path, e.g. --project ~/code/shop")
        if not os.path.isdir(project) and project not in _seen_folders(store):
            what = "is a file, not a folder" if os.path.exists(project) else "does not exist"
            raise ShareError(f"--project {project} {what}, and is no project this memory has seen; "
                             "give the folder the lesson applies in here, e.g. --project ~/code/shop")
        return project
    cwd = row.get("cwd")
    if not unbound_project(cwd):
        return cwd
    folder, why = place_project(store, cwd)  # a session from that folder may have come in since
    if folder:
        return folder
    again = f"remem share accept {row['id']}{' --force' if force else ''} --project DIR"
    raise ShareError(f"lesson {row['id']} is {why}; name the folder it belongs to here: `{again}`")


def _seen_folders(store: Store) -> set[str]:
    """The project folders this memory has seen (absolute `cwd`s of memories and lessons): one
    may be accepted for even when it is not on this machine now (a folder moved, a mount)."""
    return {normal_folder(r["cwd"]) or "" for r in store.rows(
        "SELECT DISTINCT cwd FROM episodes WHERE cwd LIKE '/%' UNION "
        "SELECT DISTINCT cwd FROM lessons WHERE cwd LIKE '/%'")}


def reject(store: Store, lesson_id: str, *, identity_dir: Path | str | None = None,
           folder: str | Path | None = None) -> dict[str, Any]:
    """The person refuses a received lesson: vetoed, and the same hash never comes back. With
    the share folder at hand, our confirmation of it (if we had accepted it) is withdrawn now,
    so its author stops counting us among its vouchers.

    The result carries `warning`: one line naming what the share folder refused (our
    confirmation then stays until a sync can write its withdrawal; a folder that cannot be
    written at all, a read-only one, included), or None."""
    row = get_lesson(store, lesson_id)
    if _is_own(row, own_origin(identity_dir)):
        raise ShareError(f"lesson {row['id']} is your own; veto it with `remem lessons veto {row['id']}`")
    if row["status"] == "revoked":
        return {**row, "warning": None}
    done = update_lesson(store, row["id"], status="vetoed", note="rejected by hand")
    warning = None
    if folder:
        report, refused = _confirmations_now(store, folder, identity_dir)
        problems = _problems_said(report)
        if refused:
            warning = (f"rejected here; the share folder could not be written ({refused}), so your "
                       "confirmations there are brought up to date by the next `remem share sync` "
                       "that can write there")
        elif lesson_hash(row["text"], row["kind"]) in report["stays"]:
            warning = (f"rejected here, but your confirmation of it stays in the share folder until "
                       f"its withdrawal can be written ({problems})")
        elif problems:
            warning = f"the share folder: {problems}"
    return {**done, "warning": warning}


def revoke_check(store: Store, lesson_id: str, *, identity_dir: Path | str | None = None) -> dict[str, Any]:
    """The lesson revoke() would withdraw, or ShareError when it is not ours to revoke (only
    its author can): asked before anything else, so a caller can ask it before it asks the
    person to confirm. No identity is made here."""
    row = get_lesson(store, lesson_id)
    if not _is_own(row, own_origin(identity_dir)):
        raise ShareError(f"lesson {row['id']} came from {row['origin']}; only its author can revoke it "
                         f"(`remem share reject {row['id']}` retires it here)")
    return row


def revoke(store: Store, lesson_id: str, folder: str | Path, *, identity_dir: Path | str | None = None
           ) -> dict[str, Any]:
    """Withdraw one of our lessons everywhere: revoked here, then a signed revocation, our
    export removed.

    The memory changes first: when it refuses the write (another process holds it: StoreBusy;
    read-only), the folder is left as it was, and no peer retires a lesson still active here.
    A folder that then refuses the revocation or the removal is finished by the next export
    (share_export: every revoked lesson of ours gets its revocation back, and only active
    lessons stay exported); ShareError says so."""
    ident = identity(identity_dir)
    root = _root(folder)
    row = revoke_check(store, lesson_id, identity_dir=identity_dir)
    text_hash = lesson_hash(row["text"], row["kind"])
    path = doc_path(root, ident.origin, "revoked", text_hash)
    with share_lock(store):  # an export running beside us would write the lesson back
        # Links planted in our folder are refused before anything changes.
        own_folder(root, ident.origin, "revoked")
        own_folder(root, ident.origin, "lessons", make=False)  # never delete through a link
        done = row if row["status"] == "revoked" else update_lesson(
            store, row["id"], status="revoked", note="revoked by you")
        try:
            if not _still_valid(root, path, ident, "revoke", text_hash):
                # `at` is the lesson's revoked time, as the export's kept revocations write it.
                doc = ident.sign({"v": VERSION, "type": "revoke", "origin": ident.origin, "hash": text_hash,
                                  "at": done["updated"]})
                write_own(path, file_bytes(doc))
            removed = remove(doc_path(root, ident.origin, "lessons", text_hash))
        except (ShareError, OSError) as exc:
            raise ShareError(f"lesson {row['id']} is revoked here, but its revocation could not be "
                             f"written to {path} ({exc}); `remem share sync` writes it once the "
                             "folder can be written") from None
    return {"id": row["id"], "hash": text_hash, "revocation": str(path), "export_removed": removed}


# --------------------------------------------------------------------------- views

def _waiting_statuses(include_quarantined: bool) -> tuple[str, ...]:
    """The statuses of a received lesson waiting for a decision."""
    return ("candidate", "quarantined") if include_quarantined else ("candidate",)


def count_candidates(store: Store, *, include_quarantined: bool = True,
                     identity_dir: Path | str | None = None) -> int:
    """How many lessons candidates() lists, read from their origins alone."""
    ours = own_origin(identity_dir)
    statuses = _waiting_statuses(include_quarantined)
    rows = store.rows(f"SELECT origin FROM lessons WHERE status IN ({', '.join('?' for _ in statuses)})",
                      statuses)
    return sum(1 for r in rows if not _is_own(r, ours))


def candidates(store: Store, *, include_quarantined: bool = True, identity_dir: Path | str | None = None,
               cfg: dict[str, Any] | None = None, embedder: Any = None, limit: int | None = None,
               offset: int = 0) -> list[dict[str, Any]]:
    """Received lessons waiting for a decision, with everything needed to make it.

    limit / offset: that page of them only (count_candidates() says how many in all); the
    checks and the comparison with our own lessons are worked out for those rows alone."""
    if offset < 0 or (limit is not None and limit < 0):
        raise ValueError(f"limit and offset cannot be negative (limit={limit}, offset={offset})")
    ours = own_origin(identity_dir)
    rows = [r for r in list_lessons(store, statuses=_waiting_statuses(include_quarantined), with_vectors=True)
            if not _is_own(r, ours)]
    rows = rows[offset:] if limit is None else rows[offset:offset + limit]
    trusted = _trusted(store)
    labels = {r["origin"]: r["label"] for r in store.rows("SELECT origin, label FROM peers WHERE label IS NOT NULL")}
    similar: list[tuple[str, float] | None] = [None] * len(rows)
    pending = [i for i, r in enumerate(rows) if r["status"] == "candidate"]
    if pending:
        if embedder is None:
            from remem.engine.embed import get_embedder

            embedder = get_embedder()
        for i, match in zip(pending, _similar_local(store, [rows[i] for i in pending], ours, embedder)):
            similar[i] = match
    cut = float(_cfg(cfg)["corroborate_cut"])
    waits: dict[str, str | None] = {}
    out = []
    for row, match in zip(rows, similar):
        vouchers = sorted(_vouchers(row, ours))
        cwd = row.get("cwd")
        unbound = unbound_project(cwd)
        if unbound and cwd not in waits:
            waits[cwd] = place_project(store, cwd)[1]
        out.append({
            "id": row["id"], "text": row["text"], "kind": row["kind"], "status": row["status"],
            "origin": row["origin"], "origin_label": labels.get(row["origin"]),
            "origin_trusted": row["origin"] in trusted, "created": row["created"],
            "signature": "verified",  # only files that verified against the pinned key are stored
            "safety": {"ok": row["status"] != "quarantined", "reasons": share_safety.incoming(row["text"])},
            # The project it is for (its folder's name; None: every project), the folder here it
            # applies in once active, and, while this memory cannot place the project, why.
            "project": project_name(cwd) or None, "folder": None if unbound else cwd,
            "waits": waits.get(cwd) if unbound else None,
            "corroboration": {
                "origins": vouchers, "trusted_origins": [o for o in vouchers if o in trusted],
                "needed": (f"its project's folder here: `remem share accept {row['id']} --project DIR` "
                           "(corroboration never activates it before)") if unbound else
                          "2 trusted origins, or 1 and a matching lesson of yours",
                "closest_own": {"id": match[0], "cosine": round(match[1], 3), "cut": cut} if match else None,
            },
            "note": row.get("note"),
        })
    return out


def full_origin(store: Store, given: str, *, identity_dir: Path | str | None = None) -> str:
    """The origin id the person's `trust` and `reject --origin` act on: all 16 hex digits, never
    this memory's own. A prefix is refused, naming the full ids it matches: four digits are
    minted in a second, so the one origin seen with them may be anyone's. What is no hex at
    all, or matches nothing, is returned for `_peer_id` to refuse in its own words."""
    origin = given.strip().lower()
    ours = own_origin(identity_dir)
    hex_digits = bool(origin) and all(ch in "0123456789abcdef" for ch in origin)
    others = _known_origins(store) - {ours}
    if ours and hex_digits and ours.startswith(origin) and (
            len(origin) == 16 or (len(origin) >= 4 and not any(o.startswith(origin) for o in others))):
        raise ShareError(f"{ours} is this memory's own origin (`remem share keys`); trust, "
                         "reject and block are for other memories' origins")
    if not hex_digits or len(origin) >= 16:
        return origin
    matches = sorted(o for o in others if o.startswith(origin))
    if not matches:
        return origin
    labels = {p["origin"]: p.get("label") for p in peers(store)}
    named = [f"{o} ({labels[o]})" if labels.get(o) else o for o in matches]
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    raise ShareError(f"give the full 16-digit origin id, not {origin!r} (a few digits are easily "
                     f"forged): it matches {shown}; compare with `remem share keys` on that machine")


def reject_origin(store: Store, given: str, *,
                  identity_dir: Path | str | None = None) -> tuple[str, list[str]]:
    """Every lesson an origin (its full id) sent that still waits for a decision (candidate or
    quarantined), vetoed as `reject` vetoes one: a flood of files from anyone who writes the
    folder is refused in one step. A waiting lesson holds no confirmation of ours, so the
    folder is not touched. Lessons it sends later still arrive as candidates. Returns the
    origin and the ids rejected."""
    origin = _peer_id(store, full_origin(store, given, identity_dir=identity_dir))
    waiting = [r["id"] for r in list_lessons(store, statuses=("candidate", "quarantined"))
               if r["origin"] == origin]
    return origin, [reject(store, lesson_id, identity_dir=identity_dir)["id"] for lesson_id in waiting]


def blocked_origins(cfg: dict[str, Any] | None = None) -> list[str]:
    """The origins receive does not read (config share.blocked_origins)."""
    return list(_cfg(cfg).get("blocked_origins") or [])


def block(store: Store, given: str, *, save: Callable[[list[str]], None], undo: bool = False,
          identity_dir: Path | str | None = None, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """Stop reading an origin (its full id): added to share.blocked_origins, so receive skips
    its folder unread, and every lesson of it still waiting is rejected (reject_origin). undo:
    taken off the list; what it sends arrives again at the next sync (its rejected lessons
    stay rejected).

    save writes the new list (the CLI's config.set_value: the engine never writes TOML); it is
    called only when the list changes. This memory's own origin and a prefix are refused; a
    full id no origin has written under yet is blocked ahead of time (`seen` false)."""
    listed = blocked_origins(cfg)
    if undo:
        origin = given.strip().lower()
        if origin not in listed:
            shown = f"blocked: {', '.join(listed)}" if listed else "no origin is blocked"
            raise ShareError(f"{origin!r} is not blocked ({shown}); give the full id as "
                             "`remem share block ORIGIN` took it")
        save([o for o in listed if o != origin])
        return {"origin": origin, "blocked": False, "changed": True, "rejected": [],
                "seen": origin in _known_origins(store)}
    # A full id never seen is blocked too: a bad origin is kept out ahead of its first write.
    origin = _peer_id(store, full_origin(store, given, identity_dir=identity_dir), allow_unseen=True)
    changed = origin not in listed
    if changed:
        save(listed + [origin])
    # A sync running now read the list before it changed, and takes in what the origin sent:
    # wait for it (share.lock), then reject what it took in with the rest. Every sync after it
    # reads the new list.
    with share_lock(store):
        seen = origin in _known_origins(store)
        rejected = reject_origin(store, origin, identity_dir=identity_dir)[1] if seen else []
    return {"origin": origin, "blocked": True, "changed": changed, "rejected": rejected, "seen": seen}


def peers(store: Store) -> list[dict[str, Any]]:
    """Every origin seen or trusted (with its label, if the person named it), with how many of its lessons are held in each status."""
    out = []
    for peer in store.rows("SELECT * FROM peers ORDER BY first_seen"):
        counts = {r["status"]: r["n"] for r in store.rows(
            "SELECT status, count(*) AS n FROM lessons WHERE origin = ? GROUP BY status", (peer["origin"],))}
        vouched = int(store.scalar("SELECT count(*) FROM lessons WHERE origins LIKE ?",
                                   (f'%"{peer["origin"]}"%',)) or 0)
        out.append({**peer, "label": peer.get("label"), "trusted": bool(peer["trusted"]), "lessons": counts, "vouched_for": vouched})
    return out


def keys(identity_dir: Path | str | None = None) -> dict[str, Any]:
    ident = identity(identity_dir)
    return {"origin": ident.origin, "public_key": ident.public_key,
            "key_pub_line": public_line(ident.public_raw).strip(), "identity_dir": str(ident.directory)}
