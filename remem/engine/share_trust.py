"""What trust makes of received lessons: vouching origins, activation, demotion, twins of our own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from remem.engine.lessons import (
    get_lesson,
    list_lessons,
    unbound_project,
    update_lesson,
)
from remem.engine.share_folder import _cfg
from remem.engine.share_projects import ACTIVATED, _is_own, bind_waiting
from remem.engine.share_sign import own_origin
from remem.engine.store import Store


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


# --------------------------------------------------------------------------- activation

def _similar_local(store: Store, rows: list[dict[str, Any]], ours: str | None,
                   embedder: Any) -> list[tuple[str, float] | None]:
    """For each candidate row, the closest of our own active lessons and its cosine."""
    import numpy as np

    from remem.engine.embed import from_blob
    from remem.engine.lessons import vector_text

    local = [r for r in list_lessons(store, statuses=("active",), with_vectors=True) if _is_own(r, ours)]
    if not local or not rows:
        return [None] * len(rows)

    def matrix(items: list[dict[str, Any]]) -> Any:
        missing = [i for i, r in enumerate(items) if r.get("space") != embedder.space or not r.get("embedding")]
        fresh = embedder.encode([vector_text(items[i]["text"], items[i].get("kind")) for i in missing]) \
            if missing else []
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
    ours = own_origin(identity_dir)
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
    ours = own_origin(identity_dir)
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
