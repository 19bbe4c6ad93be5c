"""Sessions -> episodes, idempotently.

One session episode (what was asked, what was done, how it ended) and one episode per
finding (correction, error, surprise, environment). Episode ids are
`stable_id(session id, kind, title)`, so reading a session again adds only what is new; the
session episode's id is `stable_id(session id, "session", session id)` because its title and
gist grow with the session, and it is rewritten in place (strength and recalls kept). A batch
holding only a later (or earlier) part of a session, as events files may, is added to the
stored gist rather than put in its place (`_merge_part`). Ids in the `forgotten` table (deleted
for good) are never added again.

The `sessions` table makes re-runs cheap: a file whose mtime and size match its row is
skipped. A file with a torn last line (still being written) records the size of its complete
lines only, so it differs next time and is read again. Embedding happens before any write
transaction, in one batch per session; a correction is embedded from the person's words alone.

A file is read whole each time it changed, so the findings it yields replace the ones ingest
made from it before (`reread.replace_stale`): a finding titled otherwise by an older version takes its
new id in place, keeping what the person and the sleep made of it, and one no detector finds
any more is dropped unless the person touched it.

A failure of the store itself (busy, read-only, disk full, damaged) stops the run at once
(`StoreError`); a file that cannot be read is one line in `errors` and the rest go on. Every
error line is also written to the log.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Callable, Sequence

from remem import config as config_mod
from remem import paths as paths_mod
from remem.engine import clock
from remem.engine.chats import NotAConversation
from remem.engine.detect import detect_all
from remem.engine.detect_common import (
    FINDING_KINDS,
    FINDING_WEIGHT,
    Finding,
    describe_call,
    redacted_head,
    shorten,
)
from remem.engine.detect_corrections import offer_summary
from remem.engine.reread import apply_replacements, made_by_ingest, replace_stale
from remem.engine.session import Session
from remem.engine.session_gist import (
    PROMPTS_HEAD,
    first_ask,
    llm_detail,
    llm_gist,
    prompts_detail,
    session_gist,
)
from remem.engine.store import MAX_GIST, Store, cap, dumps, loads_list, stable_id
from remem.engine.text import clean_text
from remem.errors import StoreError, store_problem

SOURCES = ("claude-code", "codex", "chats", "events")
Progress = Callable[[int, int, str], None]

# --------------------------------------------------------------------------- helpers

def safe_text(text: Any) -> str:
    """`text` (a path, an error line) as storable UTF-8: a name with bytes that are not UTF-8
    (kept by Python as surrogate escapes) shows them as \\xNN, e.g. caf\\xe9.jsonl."""
    return clean_text(os.fspath(text) if isinstance(text, os.PathLike) else str(text), "backslashreplace")


# --------------------------------------------------------------------------- one session

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
    with store.write() as conn:
        if rekeyed or dropped or redated:
            apply_replacements(conn, rekeyed, dropped, redated)
        if path:
            # The place now holds this conversation (a rewritten export lists them in another
            # order); the one that was there is recorded again when its own turn comes.
            conn.execute("DELETE FROM sessions WHERE path = ? AND id != ?", (path, session.id))
        conn.execute(
            "INSERT INTO sessions (id, path, source, mtime, size, ingested, episodes, offers) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET path = excluded.path, "
            "source = excluded.source, mtime = excluded.mtime, size = excluded.size, "
            "ingested = excluded.ingested, episodes = excluded.episodes, offers = excluded.offers",
            (session.id, path, session.source, mtime, size, clock.iso(), total,
             json.dumps(offers, ensure_ascii=False)),
        )
    return {"added": added, "by_kind": by_kind, "offers": offer_summary(offers),
            "replaced": len(rekeyed), "dropped": len(dropped)}


def _same_session_text(new: dict[str, Any], stored: dict[str, Any]) -> bool:
    """The stored session episode already says what `new` (mechanical gist, prompts) says,
    in the mechanical form or in the local model's (its gist in `detail`)."""
    if (stored["gist"], stored["detail"] or "") == (new["gist"], new["detail"]):
        return True
    return (stored["detail"] or "") == llm_detail(new["gist"], new["detail"])


# --------------------------------------------------------------------------- many files

def _empty_summary() -> dict[str, Any]:
    return {"files": 0, "skipped": 0, "sessions": 0, "episodes": 0, "by_kind": {},
            "malformed_lines": 0, "errors": []}


def _merge_counts(summary: dict[str, Any], by_kind: dict[str, int]) -> None:
    for kind, n in (by_kind or {}).items():
        summary["by_kind"][kind] = summary["by_kind"].get(kind, 0) + int(n)


def _guess_source(path: Path) -> str:
    name = path.name
    if name.startswith("rollout-"):
        return "codex"
    if name.endswith(".json"):
        return "chats"
    if name.startswith("session-") and path.parent.name == "chats":
        return "chats"  # Gemini CLI's ~/.gemini/tmp/<project>/chats/session-*.jsonl
    return "claude-code"


def _files_under(folder: Path, source: str | None) -> list[Path]:
    """The transcript files a folder holds for a source (subagent folders never)."""
    resolved = folder.resolve()
    codex_home = paths_mod.codex_home().resolve()
    if source == "codex" or (source is None and (resolved == codex_home or codex_home in resolved.parents)):
        from remem.engine.codex import find_rollouts

        return find_rollouts(folder) or sorted(folder.rglob("rollout-*.jsonl"))
    if source == "chats":
        return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl"))
    if source == "events":
        return sorted(folder.glob("*.jsonl"))
    from remem.engine.transcripts import project_files

    # A Claude home, its projects folder, one project folder, or any folder of transcripts.
    claude_home = (folder / "projects").is_dir()
    if claude_home:
        folder = folder / "projects"
    files = [p for p in folder.glob("*.jsonl") if p.is_file()]
    files.extend(project_files(folder))
    if source is None:
        # Guessed from each name, as for files named one by one: a folder of chat exports
        # (top level only: a Claude home's own *.json are settings) and Codex rollouts kept
        # in their dated folders (a backup of ~/.codex/sessions).
        if not claude_home:
            files.extend(p for p in folder.glob("*.json") if p.is_file())
        from remem.engine.codex import find_rollouts

        try:
            files.extend(find_rollouts(folder))
        except OSError:
            pass
    return sorted(set(files))


def check_source(source: str | None) -> None:
    """ValueError naming the sources for one remem does not read (None: guessed per file)."""
    if source is not None and source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; use one of {', '.join(SOURCES)}")


def default_places(source: str | None = None) -> list[Path]:
    """Where `ingest_paths` reads when given no paths: the source's own place, or every
    source's (None). For chats that is Gemini CLI's sessions; other chat exports have no
    place of their own: they are named one by one."""
    check_source(source)
    places = {"claude-code": paths_mod.claude_projects_dir(), "codex": paths_mod.codex_home(),
              "chats": paths_mod.gemini_sessions_dir(), "events": paths_mod.inbox_dir()}
    if source is None:
        return list(places.values())
    return [places[source]]


def gemini_sessions(folder: Path) -> list[Path]:
    """Gemini CLI's session files under its tmp folder (<project>/chats/session-*.json[l]),
    and nothing else there (its logs and checkpoints are no conversation)."""
    try:
        return sorted(p for p in folder.glob("*/chats/session-*") if p.suffix in (".json", ".jsonl")
                      and p.is_file())
    except OSError:
        return []


def _default_files() -> list[tuple[Path, str]]:
    from remem.engine.codex import find_rollouts
    from remem.engine.transcripts import project_files

    claude, codex, gemini, _inbox = default_places()
    found = [(p, "claude-code") for p in project_files(claude)]
    try:
        found.extend((p, "codex") for p in find_rollouts(codex))
    except OSError:
        pass
    found.extend((p, "chats") for p in gemini_sessions(gemini))
    return found


def _recorded(store: Store, path: str) -> dict[str, Any] | None:
    return store.one("SELECT id, mtime, size FROM sessions WHERE path = ?", (path,))


# How a Gemini CLI session's id was stored before it was Gemini CLI's own: `<sessionId>:<a hash
# of its opening>` (chats.conversation_to_session).
_OLDER_GEMINI_ID = re.compile(r"(.+):[0-9a-f]{10}")


def _stored_as_older_gemini_id(row: dict[str, Any], path: Path) -> bool:
    """A Gemini CLI session file (…/chats/session-*) recorded under its older id: read once
    more, unchanged or not, so its session takes Gemini CLI's id (`_take_over_older_ids`)."""
    return path.name.startswith("session-") and path.suffix == ".jsonl" and path.parent.name == "chats" \
        and _OLDER_GEMINI_ID.fullmatch(str(row["id"])) is not None


def _parse(path: Path, source: str, store: Store | None = None) -> list[Session]:
    if source == "claude-code":
        from remem.engine.transcripts import parse_file

        def read_already(sid: str) -> bool:
            """A resumed session's file copies the earlier one: left out when it was read,
            even if its own file is gone since (Claude Code deletes them after 30 days)."""
            return store is not None and store.one(
                "SELECT 1 FROM sessions WHERE id = ? AND source = 'claude-code'", (sid,)) is not None

        return [parse_file(path, read_elsewhere=read_already)]
    if source == "codex":
        from remem.engine.codex import parse_rollout

        return [parse_rollout(path)]
    if source == "chats":
        from remem.engine.chats import parse_chats

        return list(parse_chats(path))
    raise ValueError(f"unknown source {source!r}; use one of {', '.join(SOURCES)}")


def _add_events(summary: dict[str, Any], result: Any) -> None:
    """Fold an events summary (of a file, or of the inbox, whose unfinished files are
    `waiting`) into ours."""
    summary["files"] += int(result.get("files", 1) or 0)
    summary["skipped"] += int(result.get("skipped", result.get("waiting", 0)) or 0)
    summary["episodes"] += int(result.get("episodes", 0) or 0)
    summary["malformed_lines"] += int(result.get("malformed_lines", 0) or 0)
    summary["sessions"] += int(result.get("sessions", 0) or 0)
    _merge_counts(summary, result.get("by_kind") or {})
    errs = result.get("errors") or []
    summary["errors"].extend(str(e) for e in (errs if isinstance(errs, list) else [errs]))


def ingest_file(store: Store, path: Path, source: str, summary: dict[str, Any],
                cfg: dict[str, Any], embedder: Any = None) -> None:
    """Read one file into the store unless its mtime and size are unchanged."""
    if source == "events":
        from remem.engine.events import ingest_events_file

        _add_events(summary, ingest_events_file(store, path))
        return
    st = path.stat()
    name = safe_text(path)  # as stored: a name that is not UTF-8 shows its bytes as \xNN
    key = f"{name}#0" if source == "chats" else name
    row = _recorded(store, key)
    if row is not None and row["mtime"] == st.st_mtime and row["size"] == st.st_size \
            and not (source == "chats" and _stored_as_older_gemini_id(row, path)):
        summary["skipped"] += 1
        return
    sessions = _parse(path, source, store)
    summary["files"] += 1
    for i, session in enumerate(sessions):
        summary["malformed_lines"] += session.malformed_lines
        if source == "chats":
            session.path = f"{name}#{i}"
            session.id = _stored_chat_id(store, session, path) or session.id
            _take_over_older_ids(store, session)
        else:
            session.path = name
        size = st.st_size
        if session.torn_tail:
            # Record only the complete lines, so the file differs next time and is read again.
            size = int(session.meta.get("complete_bytes", -1))
        # Read from the start of its file: what it yields replaces what ingest made of it before.
        result = ingest_session(store, session, mtime=st.st_mtime, size=size, cfg=cfg, embedder=embedder,
                                whole=True)
        summary["sessions"] += 1
        summary["episodes"] += result["added"]
        _merge_counts(summary, result["by_kind"])


def _stored_chat_id(store: Store, session: Session, path: Path) -> str | None:
    """The id a conversation was stored under before chat ids came from content (the given
    id as it was, or one from the file's path and place), when this file holds it: without
    this, a changed export would store those conversations a second time."""
    given = session.meta.get("given_id")
    index = int(session.meta.get("index") or 0)
    # The path as it was typed then is unknown: try it whole and as seen from here.
    typed = dict.fromkeys((safe_text(path), safe_text(os.path.relpath(path))))
    for old in ([given] if given else []) + [stable_id("chats", t, str(index)) for t in typed]:
        if old == session.id:
            return None
        row = store.one("SELECT path FROM sessions WHERE id = ? AND source = 'chats'", (old,))
        if row and Path(str(row["path"]).rsplit("#", 1)[0]).name == safe_text(path.name) \
                and _same_opening(store, old, session):
            return old
    return None


def _take_over_older_ids(store: Store, session: Session) -> None:
    """A Gemini CLI session stored before its id was Gemini CLI's own is under
    `<sessionId>:<hash of its opening>`, once per opening it had when read (a live session read
    early had a shorter one). What is stored under those ids becomes this session's, in place:
    each episode takes the id it has under the new session id (its strength, recalls, tags and
    connections, and the lessons naming it, follow), one already there under the new id stays
    the only copy, and an id forgotten under an old session id is forgotten under the new one.
    Reading the file then updates the session instead of storing it a second time."""
    given = session.meta.get("given_id")
    if session.meta.get("format") != "gemini-cli" or not given or session.id != given:
        return
    span = (f"{given}:", f"{given};")  # ':' + 1: every id "<given>:…", found by the index
    # Only what this file made: another file with the same sessionId (the .json Gemini CLI
    # resumed into this .jsonl) keeps its own session. An old id with no row left is this
    # file's earlier reading (its row was replaced by path when the opening grew).
    rows = store.rows("SELECT id, path FROM sessions WHERE id >= ? AND id < ? AND source = 'chats'", span)
    recorded = {r["id"] for r in rows if r["path"] == session.path}
    elsewhere = {r["id"] for r in rows if r["path"] != session.path}
    olds = recorded | {r["session_id"] for r in store.rows(
        "SELECT DISTINCT session_id FROM episodes WHERE session_id >= ? AND session_id < ?", span)
        if r["session_id"] not in elsewhere}
    # The last read first (the one its file's row names): of two copies of an episode, its stays.
    olds = sorted((old for old in olds if (m := _OLDER_GEMINI_ID.fullmatch(old)) and m.group(1) == given),
                  key=lambda old: (old not in recorded, old))
    if not olds:
        return
    new = session.id

    def id_under(sid: str, kind: str, title: str) -> str:
        return stable_id(sid, "session", sid) if kind == "session" else stable_id(sid, kind, title)

    # What the session yields now, by the ids it had under the old session ids.
    under_old = {id_under(old, ep["kind"], ep["title"]): ep["id"] for ep in episodes_of(session) for old in olds}
    once_forgotten = {under_old[eid] for eid in store.forgotten(under_old)}
    with store.write() as conn:
        for old in olds:
            for eid, kind, title in conn.execute(
                    "SELECT id, kind, title FROM episodes WHERE session_id = ?", (old,)).fetchall():
                # made by ingest: its id is the one its session and title give (else the person's)
                nid = id_under(new, kind, title) if eid == id_under(old, kind, title) else eid
                if nid != eid and conn.execute("SELECT 1 FROM episodes WHERE id = ?", (nid,)).fetchone():
                    conn.execute("DELETE FROM episodes WHERE id = ?", (eid,))
                else:
                    conn.execute("UPDATE episodes SET id = ?, session_id = ?, cwd = coalesce(cwd, ?) "
                                 "WHERE id = ?", (nid, new, session.cwd, eid))
                if nid != eid:
                    _repoint(conn, eid, nid)
            conn.execute("DELETE FROM sessions WHERE id = ?", (old,))
        stamp = clock.iso()
        conn.executemany("INSERT OR IGNORE INTO forgotten (id, at) VALUES (?, ?)",
                         [(eid, stamp) for eid in sorted(once_forgotten)])


def _repoint(conn: sqlite3.Connection, old: str, new: str) -> None:
    """What names episode `old` names `new` instead: its tags, connections and lessons."""
    conn.execute("UPDATE OR IGNORE tags SET memory_id = ? WHERE memory_id = ?", (new, old))
    conn.execute("DELETE FROM tags WHERE memory_id = ?", (old,))
    conn.execute("UPDATE OR IGNORE connections SET src = ? WHERE src = ?", (new, old))
    conn.execute("UPDATE OR IGNORE connections SET dst = ? WHERE dst = ?", (new, old))
    conn.execute("DELETE FROM connections WHERE src = ? OR dst = ?", (old, old))
    for seq, sources in conn.execute("SELECT seq, sources FROM lessons WHERE instr(sources, ?) > 0",
                                     (f'"{old}"',)).fetchall():
        ids = list(dict.fromkeys(new if i == old else i for i in loads_list(sources)))
        conn.execute("UPDATE lessons SET sources = ? WHERE seq = ?", (dumps(ids), seq))


def _same_opening(store: Store, old_id: str, session: Session) -> bool:
    """The conversation stored under `old_id` opens with the same ask as `session` (exports
    reuse small ids like 1 for different conversations: the id and file name alone are not
    enough to take its place)."""
    gist = store.scalar("SELECT gist FROM episodes WHERE id = ?", (stable_id(old_id, "session", old_id),))
    asked = first_ask(session)
    return bool(gist) and bool(asked) and str(gist).split("\n", 1)[0] == f"Asked: {shorten(asked, 300)}"


def ingest_paths(store: Store, paths: Sequence[str | Path] | None = None, source: str | None = None,
                 progress: Progress | None = None) -> dict[str, Any]:
    """Ingest transcript files (or every source found, when no paths are given).

    Returns {files, skipped, sessions, episodes (added by this run), by_kind,
    malformed_lines, errors}. A file that cannot be read is an error line; the rest go on.
    A failure of the store itself (busy, read-only, full, damaged) stops the run: StoreError,
    with one line naming the fix. Every error line is written to the log as well.
    """
    check_source(source)
    cfg = config_mod.load()
    summary = _empty_summary()
    try:
        _ingest_paths(store, summary, cfg, paths, source, progress)
    finally:
        summary["errors"] = [safe_text(e) for e in summary["errors"]]
        _log_errors(summary["errors"])
    return summary


def _ingest_paths(store: Store, summary: dict[str, Any], cfg: dict[str, Any],
                  paths: Sequence[str | Path] | None, source: str | None, progress: Progress | None) -> None:
    work: list[tuple[Path, str]] = []
    inbox = False
    if not paths:
        if source is None:
            work = _default_files()
            inbox = True
        elif source in ("claude-code", "codex"):
            work = [(p, source) for place in default_places(source) for p in _files_under(place, source)]
        elif source == "events":
            inbox = True
        else:  # chats: Gemini CLI's sessions; other exports are named one by one
            work = [(p, source) for p in gemini_sessions(paths_mod.gemini_sessions_dir())]
    guessed: set[Path] = set()  # *.json found in a folder: may be no chat export at all
    folders: dict[Path, list[Path]] = {}
    for raw in paths or ():
        # Absolute: a file named `export.json` today and by its full path tomorrow is one file.
        path = Path(raw).expanduser().absolute()
        if path.is_dir():
            found = [(p, source or _guess_source(p)) for p in _files_under(path, source)]
            work.extend(found)
            folders[path] = [p for p, _ in found]
            if source is None:
                guessed.update(p for p, src in found if src == "chats")
        elif path.exists():
            work.append((path, source or _guess_source(path)))
        else:
            summary["errors"].append(f"{path}: no such file or folder")
    embedder = None
    if work:
        from remem.engine.embed import get_embedder

        embedder = get_embedder()
    total = len(work)
    passed_over: set[Path] = set()
    for done, (path, src) in enumerate(work, start=1):
        try:
            ingest_file(store, path, src, summary, cfg, embedder)
        except NotAConversation as exc:
            if path not in guessed:
                summary["errors"].append(f"{path}: {exc}")
            else:  # user.json beside conversations.json: not an export, not an error
                passed_over.add(path)
        except Exception as exc:  # one bad file never stops the rest; a failing store does
            stop = store_failure(exc, store, f"ingest stopped at file {done} of {total}")
            if stop is not None:
                raise stop from exc
            summary["errors"].append(f"{path}: {exc}")
            try:
                from remem.log import log_exception

                log_exception("ingest", exc)
            except Exception:
                pass
        if progress is not None:
            progress(done, total, str(path))
    for folder, files in folders.items():
        if all(p in passed_over for p in files):  # a folder named, nothing in it read: say so
            if source is None:
                summary["errors"].append(
                    f"no transcripts found in {folder}; it holds no Claude Code *.jsonl, Codex "
                    "rollout-*.jsonl or chat export *.json (name the files, or pass --source)")
            else:  # --source given: the advice to pass it would be no help
                looked_for = {"claude-code": "Claude Code *.jsonl", "codex": "Codex rollout-*.jsonl",
                              "chats": "chat export *.json or *.jsonl",
                              "events": "event *.jsonl"}.get(source, f"{source} files")
                summary["errors"].append(f"no transcripts found in {folder}; it holds no {looked_for}")
    if inbox:
        from remem.engine.events import ingest_inbox

        try:
            _add_events(summary, ingest_inbox(store))
        except Exception as exc:
            stop = store_failure(exc, store, "ingest stopped at the inbox")
            if stop is not None:
                raise stop from exc
            summary["errors"].append(f"inbox: {exc}")


def store_failure(exc: BaseException, store: Store, where: str) -> StoreError | None:
    """The store itself failing (busy past its timeout, read-only, disk full, damaged): a
    StoreError of one line naming the fix and `where` it stopped, or None for anything else
    (a file that cannot be read: the run goes on)."""
    if isinstance(exc, StoreError):
        message, fix, kind = str(exc), exc.fix, type(exc)
    else:
        found = store_problem(exc, store.path) if isinstance(exc, sqlite3.DatabaseError) else None
        if found is None:
            return None
        message, fix, kind = found[1], found[2], StoreError
    try:
        return kind(f"{message} ({where}; what was read before it is stored, and a new run skips it)",
                    fix=fix)
    except TypeError:  # a StoreError subclass made otherwise
        return StoreError(f"{message} ({where})", fix=fix)


def _log_errors(errors: list[str]) -> None:
    """Every error line in the log (the summary may show only the first ones)."""
    if not errors:
        return
    from remem.log import log

    for err in errors:
        log("ingest", err)


def ingest_events(store: Store, path: str | Path, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """`remem ingest --events FILE`: the open event format, through the events module. Its
    counts are added to `into` (an `ingest_paths` summary) when given; returns the summary."""
    from remem.engine.events import ingest_events_file

    summary = _empty_summary() if into is None else into
    before = len(summary["errors"])
    try:
        _add_events(summary, ingest_events_file(store, Path(path)))
    except Exception as exc:
        stop = store_failure(exc, store, f"ingest stopped at {safe_text(path)}")
        if stop is not None:
            raise stop from exc
        raise
    finally:
        summary["errors"][before:] = [safe_text(e) for e in summary["errors"][before:]]
        _log_errors(summary["errors"][before:])
    return summary
