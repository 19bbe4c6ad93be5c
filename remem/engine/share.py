"""Sharing lessons between memories through a plain sync folder, signed.

export_lessons  our shareable lessons -> <folder>/<origin>/lessons/<hash>.json (signed)
receive         other origins' files -> verified -> safety-checked -> candidate or quarantined
                lessons; confirmations grow `origins`; revocations retire lessons
write_confirmations   <folder>/<origin>/confirm/<hash>.json for every received lesson we hold active
sync            all of the above, idempotent
trust / accept / reject / revoke / block / candidates / peers   what the CLI and the TUI call
                (accept and reject write or withdraw our confirmation at once when the
                share folder is reachable: reachable_folder)

This module is the front door: sync, and every name above as share.<name>. The work is done in
share_export (export_lessons, write_confirmations), share_receive (receive), share_trust
(activate, demote, fold_into_own: what trust makes of received lessons), share_folder (the
folder and share.lock) and share_choices (the person's choices and the views); the folder's
files, signatures, safety checks and projects in share_files, share_sign, share_safety and
share_projects.

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
  origins it needs goes back to candidate (demote). A confirmation that goes leaves a signed
  withdrawal (withdrawn/<hash>.json) that outranks any older copy of it put back.
- A temp file or a file that is not JSON, unchanged for 15 minutes (or dated more than that
  ahead of our clock), is no write in progress: it holds no withdrawal back, and its owner's
  next export removes it. One that may be a write in progress is listed as `held_back`.
- A document file must be the canonical encoding of its document (share_sign.file_bytes), no
  key twice; anything else is refused with the reason.
- A revocation from a trusted origin that vouched for a received lesson retires it (status
  revoked), and so does one from its author when no other trusted origin vouches for it.
  Anyone else revoking, and anyone revoking one of our own lessons, only leaves its `origins`
  (an untrusted author leaving hands authorship to a trusted voucher). What an untrusted author
  retires comes back as a candidate when a trusted origin publishes it.
- A received lesson's author is its first trusted publisher: an untrusted one that published
  first hands authorship (and the project) to the first trusted origin that publishes it.
- A lesson of a project carries the project's folder name (never a path); a receiver binds it
  to its one project of that name (projects.resolve_project). Until it can, the lesson holds
  the name alone as its `cwd`, applies nowhere (lessons.unbound_project) and is never
  activated by corroboration; `accept` then needs the folder (`project=`).
- Every step holds share.lock beside the memory, so two never take the same lesson in twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from remem.engine import clock
from remem.engine.share_export import export_lessons, write_confirmations
from remem.engine.share_folder import reachable_folder, resolve_folder, share_lock
from remem.engine.share_projects import bind_waiting, place_project, shared_project
from remem.engine.share_receive import receive
from remem.engine.share_sign import ShareError, identity
from remem.engine.share_trust import activate, demote, fold_into_own
from remem.engine.store import Store, dumps

__all__ = [
    "identity", "export_lessons", "receive", "write_confirmations", "sync", "activate", "demote",
    "fold_into_own", "bind_waiting", "shared_project", "place_project", "trust",
    "forget_peer", "accept", "reject", "revoke", "candidates", "peers", "keys", "block",
    "blocked_origins", "resolve_folder",
    "reachable_folder", "ShareError",
]


# --------------------------------------------------------------------------- sync

def sync(store: Store, folder: str | Path | None = None, *, identity_dir: Path | str | None = None,
         cfg: dict[str, Any] | None = None, embedder: Any = None) -> dict[str, Any]:
    """export + receive (confirmations and revocations in) + confirmations out. Idempotent.
    A missing share folder whose parent is a folder is made (a writer's step), from `remem
    share sync` as from the TUI's sync."""
    root = resolve_folder(folder, cfg, create=True)
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
        "held_back": len(rec.get("held_back", [])), "blocked": len(rec.get("blocked", [])),
        "activated": len(rec.get("activated", [])), "corroborated": len(rec.get("corroborated", [])),
        "confirmed_ours": len(rec.get("confirmed_ours", [])), "revoked": len(rec.get("revoked", [])),
        "withdrawn": len(rec.get("withdrawn", [])), "folded": len(rec.get("folded", [])),
        "demoted": len(rec.get("demoted", [])), "revocations_rewritten": len(exp.get("revocations", [])),
        "bound": len(rec.get("bound", [])), "waiting_for_project": len(rec.get("waiting_for_project", [])),
        "confirmations_written": len(con.get("written", [])),
    }


def summary_line(s: dict[str, int]) -> str:
    """A sync's counts in the words `remem share sync` and the TUI's y both say them
    (withheld: lessons of ours the share safety check kept back: a path, a host, a secret)."""
    return (f"exported {s['exported']} (withheld {s['withheld']}), received {s['received']}, "
            f"quarantined {s['quarantined']}, rejected {s['rejected']}, activated {s['activated']}, "
            f"confirmed yours {s['confirmed_ours']}, revoked {s['revoked']}")


def summary_changes(s: dict[str, int]) -> list[str]:
    """What a sync changed under lessons already held: only the counts that are not zero."""
    return [f"{what} {s[key]}" for key, what in (
        ("withdrawn", "confirmations withdrawn"), ("folded", "folded into your own"),
        ("demoted", "back to candidate"), ("revocations_rewritten", "revocations rewritten"),
        ("blocked", "blocked origins skipped"), ("held_back", "held back (still being written)"))
        if s.get(key)]


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
_CHOICES = ("trust", "forget_peer", "revoke", "candidates", "peers", "keys", "block", "blocked_origins")


def __getattr__(name: str) -> Any:
    if name in _CHOICES:
        from remem.engine import share_choices

        return getattr(share_choices, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
