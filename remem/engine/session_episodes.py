"""A session's episodes, stored idempotently (ingest_session); a session read in parts, merged."""

from __future__ import annotations

import json
import os
from typing import Any

from remem import config as config_mod
from remem.engine import clock
from remem.engine.detect import detect_all
from remem.engine.detect_common import (
    FINDING_KINDS,
    FINDING_WEIGHT,
    Finding,
    describe_call,
    redacted_head,
)
from remem.engine.detect_corrections import offer_summary
from remem.engine.reread import apply_replacements, made_by_ingest, replace_stale
from remem.engine.session import Session
from remem.engine.session_gist import (
    PROMPTS_HEAD,
    llm_detail,
    llm_gist,
    prompts_detail,
    session_gist,
)
from remem.engine.store import MAX_GIST, Store, cap, stable_id
from remem.engine.text import clean_text


def safe_text(text: Any) -> str:
    """`text` (a path, an error line) as storable UTF-8: a name with bytes that are not UTF-8
    (kept by Python as surrogate escapes) shows them as \\xNN, e.g. caf\\xe9.jsonl."""
    return clean_text(os.fspath(text) if isinstance(text, os.PathLike) else str(text), "backslashreplace")


# The version of what the detectors (detect.py and the detect_*.py it runs, through
# episodes_of below) yield from a session: which findings, their titles and words. Bump it
# with every change there that changes what a session yields. Each `sessions` row records
# the version that read its session whole; ingest reads a file an older version read again
# even when it is unchanged (ingest_files.ingest_file), so what an older release found
# wrongly goes (reread.py) instead of staying forever. Rows an older release wrote hold
# none (NULL), which counts as older than any.
DETECTOR_VERSION = 2


def episodes_of(session: Session, found: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The episodes a session yields (no vectors yet); the session episode first."""
    found = found if found is not None else detect_all(session)
    started = clock.normalise(session.started) or clock.iso()
    base = {"session_id": session.id, "source": session.source, "cwd": session.cwd}
    out: list[dict[str, Any]] = []
    if any(t.text or t.tool_calls for t in session.turns):
        title, gist = session_gist(session, found)
        out.append({
            **base, "id": stable_id(session.id, "session", session.id), "kind": "session",
            "title": title, "gist": gist, "detail": prompts_detail(session), "at": started,
            "tags": [session.source] + ([f"forked-from:{session.meta['forked_from_id']}"]
                                        if session.meta.get("forked_from_id") else []),
            "_embed": f"{title}\n{gist}",
        })
    for kind in FINDING_KINDS:
        for f in found.get(kind, []):
            ep = _finding_episode(f, base, started)
            if kind == "error":  # dated when the call failed, not when the reply began
                ep["at"] = clock.normalise(_failed_at(session, f)) or ep["at"]
            out.append(ep)
    return out


def _failed_at(session: Session, f: Finding) -> str | None:
    """When the failed call of an error finding returned its result (its record's time)."""
    if not 0 <= f.turn < len(session.turns):
        return None
    for call in session.turns[f.turn].tool_calls:
        if call.is_error and not call.rejected and call.result_at \
                and f.detail.startswith(describe_call(call)) and redacted_head(call.result, 200) in f.detail:
            return call.result_at
    return None


def _finding_episode(f: Finding, base: dict[str, Any], started: str) -> dict[str, Any]:
    gist = f.text
    embed = f.text if f.kind == "correction" else f"{f.title}\n{f.text}"
    return {
        **base, **FINDING_WEIGHT.get(f.kind, {}),
        "id": stable_id(str(base["session_id"]), f.kind, f.title), "kind": f.kind,
        "title": f.title, "gist": gist, "detail": f.detail, "at": clock.normalise(f.at) or started,
        "tags": list(f.tags), "_embed": embed,
    }


# The forks of a session: from the tag (a handful of rows) to their episodes. CROSS JOIN keeps
# SQLite on that order: left to itself it starts from episodes_kind_at (every session episode,
# 40,000 in a large memory) and probes the tags of each, 400 ms a transcript instead of 0.02.
FORKS_SQL = ("SELECT e.session_id FROM tags t CROSS JOIN episodes e ON e.id = t.memory_id "
             "WHERE t.tag = ? AND e.kind = 'session'")


def _not_held_by_relatives(store: Store, episodes: list[dict[str, Any]],
                           session: Session) -> list[dict[str, Any]]:
    """Codex writes a fork to a new file, its parent's history copied in first: the findings
    a parent and its forks share are stored once, whichever is read first (one failure is not
    two, and sleep learns from an error only when it repeats). A fork's session memory carries
    the tag `forked-from:<parent>`, so a parent read later finds its forks."""
    relatives = [str(session.meta["forked_from_id"])] if session.meta.get("forked_from_id") else []
    relatives += [r["session_id"] for r in store.rows(FORKS_SQL, (f"forked-from:{session.id}".lower(),))]
    findings = [ep for ep in episodes if ep["kind"] != "session"]
    if not relatives or not findings:
        return episodes
    twins = {stable_id(rel, ep["kind"], ep["title"]): ep["id"] for rel in relatives for ep in findings}
    marks = ",".join("?" * len(twins))
    held = {r["id"] for r in store.rows(f"SELECT id FROM episodes WHERE id IN ({marks})", list(twins))}
    held |= store.forgotten(twins)
    shared = {twins[t] for t in held}
    return [ep for ep in episodes if ep["id"] not in shared]


# --------------------------------------------------------------------------- a session read in parts

_LATER = "\nThen, from "


def _merge_part(new: dict[str, Any], stored: dict[str, Any],
                ended: str | None = None) -> tuple[bool, dict[str, Any] | None]:
    """A session read in parts (events files sent one batch at a time): is `new`, the session
    episode of one batch, only a part of the stored one? Returns (partial, what to write).

    The stored gist is the first part, then "Then, from <minute>: …" for each later one. A
    batch starting later than the stored session replaces its own segment (a part whose file
    grew) or is added after the others; one starting earlier goes in front. A batch starting
    with the session rewrites the first segment and keeps the later ones it does not reach
    (a batch running to `ended` covers the segments that start before then: the whole
    conversation sent again is written as one). Nothing changes when the part is already
    there as it is.
    """
    try:
        new_at, old_at = clock.parse(new["at"]), clock.parse(stored["at"])
    except (TypeError, ValueError):
        return False, None
    old_gist = stored["gist"] or ""
    if new_at == old_at:
        if _LATER not in old_gist:
            return False, None  # the whole session from its start, written as usual
        title, at = stored["title"], stored["at"]
        gist = new["gist"] + "".join(_LATER + seg for seg in old_gist.split(_LATER)[1:]
                                     if not ended or seg[:16] > _minute(ended))
    elif new_at > old_at:
        title, at = stored["title"], stored["at"]
        gist = _with_segment(old_gist, f"{_LATER}{_minute(new['at'])}: ", new["gist"])
    else:
        title, at = new["title"], new["at"]
        gist = f"{new['gist']}{_LATER}{_minute(stored['at'])}: {old_gist}"
    gist = cap(gist, MAX_GIST)
    old_detail = stored["detail"] or ""
    detail = _merge_prompts(new["detail"], old_detail) if new_at < old_at else \
        _merge_prompts(old_detail, new["detail"])
    if gist == old_gist and detail == old_detail:
        return True, None  # already there (or full: capped, nothing would change)
    return True, {**new, "title": title, "at": at, "gist": gist, "detail": detail,
                  "_embed": f"{title}\n{gist}"}


def _merge_prompts(before: str, after: str) -> str:
    """Two parts' prompt lists as one: `after`'s lines that `before` lacks go after it."""
    if not after.strip():
        return before
    if not before.strip():
        return after
    have = set(before.split("\n"))
    extra = [line for line in after.split("\n")
             if line not in have and line != PROMPTS_HEAD and not line.startswith("(and ")]
    if not extra:
        return before
    return "\n".join([before] + ([] if PROMPTS_HEAD in have else [PROMPTS_HEAD]) + extra)


def _with_segment(gist: str, marker: str, text: str) -> str:
    """`gist` with the segment that starts at `marker` set to `text` (added when absent)."""
    if marker not in gist:
        return f"{gist}{marker}{text}"
    head, rest = gist.split(marker, 1)
    after = rest.find(_LATER)
    return f"{head}{marker}{text}{rest[after:] if after >= 0 else ''}"


def _minute(at: str) -> str:
    return at[:16].replace("T", " ")


# --------------------------------------------------------------------------- stored

def ingest_session(store: Store, session: Session, *, mtime: float | None = None,
                   size: int | None = None, cfg: dict[str, Any] | None = None,
                   embedder: Any = None, whole: bool = False) -> dict[str, Any]:
    """Store a session's episodes (only the new ones) and its `sessions` row.

    `whole`: the session was read from the start of its file (a transcript, a rollout, a
    conversation of an export), so what it yields now replaces what ingest made of it before
    (`_replace_stale`). Events batches may hold only a part of a session: never whole.
    """
    cfg = cfg or config_mod.load()
    found = detect_all(session)
    episodes = episodes_of(session, found)
    yielded = {ep["id"] for ep in episodes}
    gone = store.forgotten(ep["id"] for ep in episodes)
    if gone:  # deleted for good by hand or by the lifecycle: never brought back
        episodes = [ep for ep in episodes if ep["id"] not in gone]
    episodes = _not_held_by_relatives(store, episodes, session)
    # the mechanical gist is in `gist`, or in `detail` when a local model wrote the gist
    known = {r["id"]: r for r in store.rows(
        "SELECT id, kind, source, title, gist, detail, at FROM episodes WHERE session_id = ?", (session.id,))}
    fresh = [ep for ep in episodes if ep["id"] not in known]
    session_ep = episodes[0] if episodes and episodes[0]["kind"] == "session" else None
    rewrite = None
    if session_ep is not None and session_ep["id"] in known:
        stored = known[session_ep["id"]]
        # without a start time of its own a session's `at` is the time of reading: no parts then
        partial, merged = _merge_part(session_ep, stored, session.ended) \
            if session.started and not whole else (False, None)
        if partial:
            rewrite = merged
        elif not _same_session_text(session_ep, stored):
            rewrite = session_ep
        fresh = [ep for ep in fresh if ep is not session_ep]
    rekeyed: list[tuple[str, dict[str, Any]]] = []
    dropped: list[str] = []
    redated: list[tuple[str, str]] = []
    if whole:
        rekeyed, dropped = replace_stale(store, session, known, yielded, fresh)
        moved = {id(ep) for _, ep in rekeyed}
        fresh = [ep for ep in fresh if id(ep) not in moved]
        # a finding read again with another time (errors: when the call failed) takes it
        redated = [(ep["at"], ep["id"]) for ep in episodes if ep["kind"] != "session"
                   and ep["id"] in known and known[ep["id"]]["at"] != ep["at"]
                   and made_by_ingest(known[ep["id"]], session)]
    changed = fresh + ([rewrite] if rewrite else []) + [ep for _, ep in rekeyed]
    if session_ep is not None and session_ep in changed:
        better = llm_gist(session, session_ep["gist"], cfg)
        if better:
            session_ep["detail"] = llm_detail(session_ep["gist"], session_ep["detail"])
            session_ep["gist"] = better
    if changed:
        if embedder is None:
            from remem.engine.embed import get_embedder

            embedder = get_embedder()
        from remem.engine.embed import to_blob

        vectors = embedder.encode([ep["_embed"] for ep in changed])  # one batch per session
        for ep, vec in zip(changed, vectors):
            ep["space"] = embedder.space
            ep["embedding"] = to_blob(vec)
    for ep in changed:
        ep.pop("_embed", None)
    added = store.put_episodes(fresh) if fresh else 0
    if rewrite is not None:
        store.put_episodes([rewrite], replace=True)
    by_kind: dict[str, int] = {}
    for ep in fresh:
        by_kind[ep["kind"]] = by_kind.get(ep["kind"], 0) + 1
    offers = found.get("offers") or []
    for offer in offers:  # remem's ISO form, so offers compare with every other timestamp
        offer["at"] = clock.normalise(offer.get("at")) or offer.get("at")
    total = len(known) - len(dropped) + len(fresh)
    path = safe_text(session.path) if session.path else None
    retired: list[str] = []
    with store.write() as conn:
        if rekeyed or dropped or redated:
            retired = apply_replacements(conn, rekeyed, dropped, redated)
        if path:
            # The place now holds this conversation (a rewritten export lists them in another
            # order); the one that was there is recorded again when its own turn comes.
            conn.execute("DELETE FROM sessions WHERE path = ? AND id != ?", (path, session.id))
        # Only a session read whole was judged by these detectors from its start: a part
        # (an events batch) leaves the version the row had.
        conn.execute(
            "INSERT INTO sessions (id, path, source, mtime, size, ingested, episodes, offers, detector_version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET path = excluded.path, "
            "source = excluded.source, mtime = excluded.mtime, size = excluded.size, "
            "ingested = excluded.ingested, episodes = excluded.episodes, offers = excluded.offers, "
            "detector_version = coalesce(excluded.detector_version, sessions.detector_version)",
            (session.id, path, session.source, mtime, size, clock.iso(), total,
             json.dumps(offers, ensure_ascii=False), DETECTOR_VERSION if whole else None),
        )
    return {"added": added, "by_kind": by_kind, "offers": offer_summary(offers),
            "replaced": len(rekeyed), "dropped": len(dropped), "retired": retired}


def _same_session_text(new: dict[str, Any], stored: dict[str, Any]) -> bool:
    """The stored session episode already says what `new` (mechanical gist, prompts) says,
    in the mechanical form or in the local model's (its gist in `detail`)."""
    if (stored["gist"], stored["detail"] or "") == (new["gist"], new["detail"]):
        return True
    return (stored["detail"] or "") == llm_detail(new["gist"], new["detail"])
