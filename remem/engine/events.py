"""The open event format (docs/PROTOCOL.md §0): JSON lines any tool can write.

Each line is one event: `{"v": 1, "at": …, "kind": …, "text": …}` plus optional fields.
Events of kind note / correction / error / surprise / environment become one episode each;
events of kind message are turns of a conversation (an assistant turn may carry its
`tool_calls`), grouped by `session`, and go through the same detectors as a Claude Code
transcript (session_episodes.ingest_session). A message turn is
also kept as an episode of its own only when the event says `"keep": true`: most turns are
chatter, and what matters in them is what the detectors find.

Ingest is idempotent: an episode's id is the event's `id`, else a hash of (source, session,
at, text), so a file read twice adds nothing. A file is embedded in one batch and written in
one transaction. Bad lines are reported with their line number and a reason naming the
field; the good lines of the same file are still ingested.

Sources: `remem ingest --source events FILE…`, and the inbox folder $REMEM_HOME/inbox/
(`ingest_inbox`): a file read without error moves to inbox/done/; a file with a bad line
stays, with `<file>.errors.txt` beside it, until it is fixed (its good lines are in already).
Each inbox read also deletes the done/ files moved there more than events.keep_done_days ago
(`prune_done`).
The turns of one conversation are gathered across every inbox file of a run.
`append_to_inbox` is how other parts of remem (proxy, MCP) and other tools drop events in.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path
from typing import Any, Iterable

from remem import config as config_mod
from remem import paths
from remem.engine import clock
from remem.engine.detect_common import redact_secrets
from remem.engine.files import write_atomic
from remem.engine.projects import normal_folder
from remem.engine.session import Session, ToolCall, Turn
from remem.engine.store import (MAX_DETAIL, MAX_GIST, MAX_SPEAKER, MAX_TAGS, MAX_TITLE, Store, gist_and_detail,
                                stable_id)
from remem.engine.toolresult import looks_failed

VERSION = 1
EPISODE_EVENT_KINDS = ("note", "correction", "error", "surprise", "environment")
KINDS = EPISODE_EVENT_KINDS + ("message",)
ROLES = ("user", "assistant")
MAX_TEXT = MAX_GIST  # an episode's text; longer material goes in detail
MAX_MESSAGE_TEXT = MAX_DETAIL  # a conversation turn may be long (a pasted log, a long answer)
MAX_ID = 128
MAX_SHORT = 1000  # session, source, cwd, speaker
# A kept message adds two tags of its own to MAX_TAGS' count: `message` and `role:…`.
MAX_TAG = 64
MAX_TTL_S = 100 * 365 * 86400
MAX_CALLS = 64
DEFAULT_SOURCE = "events"


class EventError(ValueError):
    """One event that does not follow the format; the message names the field."""


# --------------------------------------------------------------------------- validation

def _string(ev: dict[str, Any], key: str, limit: int) -> str | None:
    value = ev.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise EventError(f"{key}: must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise EventError(f"{key}: {len(value):,} characters, over the {limit:,} cap")
    _utf8(key, value)
    return value


def _utf8(key: str, value: str) -> None:
    """JSON can carry lone surrogates ("\\ud800"); SQLite cannot store them."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise EventError(f"{key}: not valid Unicode (a lone surrogate escape)") from None


def _number(ev: dict[str, Any], key: str, lo: float, hi: float) -> float | None:
    value = ev.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise EventError(f"{key}: must be a number from {lo:g} to {hi:g}")
    if not lo <= value <= hi:
        raise EventError(f"{key}: {value} is outside {lo:g}..{hi:g}")
    return float(value)


def validate(ev: Any) -> dict[str, Any]:
    """One event -> its normalised form (at in remem's ISO form, defaults filled), or EventError."""
    if not isinstance(ev, dict):
        raise EventError("an event must be a JSON object")
    v = ev.get("v", VERSION)
    if isinstance(v, bool) or not isinstance(v, (int, float)):  # "1": the right number, written wrong
        raise EventError(f"v: must be the integer {VERSION} (a number, no quotes), not {str(v)[:20]!r}")
    if v != VERSION:
        raise EventError(f"v: unsupported version {v!r}; this remem reads v{VERSION}")
    kind = ev.get("kind")
    if kind is None:
        raise EventError(f"kind: missing; use one of {', '.join(KINDS)}")
    if kind not in KINDS:
        raise EventError(f"kind: unknown {kind!r}; use one of {', '.join(KINDS)}")
    raw_at = ev.get("at")
    if raw_at is None:
        raise EventError("at: missing; give the time as ISO 8601, e.g. 2026-11-29T10:00:00Z")
    if not isinstance(raw_at, str):
        raise EventError("at: must be an ISO 8601 string, e.g. 2026-11-29T10:00:00Z")
    try:
        at = clock.iso(clock.parse(raw_at.strip()))
    except OverflowError:  # a real ISO time whose UTC falls before year 1 or after 9999
        raise EventError(f"at: out of range: {raw_at[:40]!r} is outside year 1 to 9999 in UTC") from None
    except ValueError:
        raise EventError(f"at: not an ISO 8601 time: {raw_at[:40]!r}") from None
    text = _string(ev, "text", MAX_MESSAGE_TEXT)
    if text is not None and kind != "message" and len(text) > MAX_TEXT:
        raise EventError(f"text: {len(text):,} characters, over the {MAX_TEXT:,} cap; "
                         "put the long part in detail")
    title = _string(ev, "title", MAX_TITLE)
    detail = _string(ev, "detail", MAX_DETAIL)
    if kind != "message" and not (text or "").strip() and not (title or "").strip():
        raise EventError("text: missing or empty; give text, or a title (with optional detail)")
    out: dict[str, Any] = {"v": VERSION, "at": at, "kind": kind, "text": text, "title": title,
                           "detail": detail}
    event_id = _string(ev, "id", MAX_ID)
    if event_id is not None and not event_id.strip():
        raise EventError("id: must not be empty")
    if event_id is not None and any(c.isspace() or unicodedata.category(c) == "Cc" for c in event_id):
        # An id is typed back into commands (`remem forget ID`): one word, nothing a terminal acts on.
        raise EventError(f"id: must not hold spaces or control characters, not {event_id[:40]!r}")
    out["id"] = event_id
    for key in ("session", "source", "cwd"):
        out[key] = _string(ev, key, MAX_SHORT)
    out["cwd"] = normal_folder(out["cwd"])  # "/a/b/" is the project "/a/b", as every hook sees it
    out["speaker"] = _string(ev, "speaker", MAX_SPEAKER)  # stored whole, so refused past it
    tags = ev.get("tags")
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise EventError("tags: must be a list of strings")
    if len(tags) > MAX_TAGS or any(len(t) > MAX_TAG for t in tags):
        raise EventError(f"tags: at most {MAX_TAGS} tags of at most {MAX_TAG} characters")
    for tag in tags:
        _utf8("tags", tag)
    out["tags"] = [t for t in tags if t.strip()]
    out["importance"] = _number(ev, "importance", 0.0, 1.0)
    out["valence"] = _number(ev, "valence", -1.0, 1.0)
    out["arousal"] = _number(ev, "arousal", 0.0, 1.0)
    ttl = ev.get("ttl")
    if ttl is not None:
        if isinstance(ttl, bool) or not isinstance(ttl, (str, int, float)):
            raise EventError("ttl: must be a duration like 30s, 10m, 2h, 7d (or seconds)")
        try:
            seconds = clock.parse_duration(str(ttl))
        except ValueError:
            raise EventError(f"ttl: not a duration: {str(ttl)[:20]!r} (use 30s, 10m, 2h, 7d)") from None
        if not 0 < seconds <= MAX_TTL_S:
            raise EventError("ttl: must be positive and at most 100 years")
        out["ttl"] = seconds
    else:
        out["ttl"] = None
    role = ev.get("role")
    if role is not None and role not in ROLES:
        raise EventError(f"role: must be one of {', '.join(ROLES)}, not {str(role)[:20]!r}")
    out["role"] = role
    keep = ev.get("keep", False)
    if not isinstance(keep, bool):
        raise EventError("keep: must be true or false")
    out["keep"] = keep
    out["tool_calls"] = _tool_calls(ev.get("tool_calls"), kind, role)
    if kind == "message":
        if role is None:
            raise EventError("role: kind message needs role user or assistant")
        if not out["session"]:
            raise EventError("session: kind message needs a session id to join its turns")
        if not (text or "").strip() and not out["tool_calls"]:
            raise EventError("text: kind message needs the turn's text (or tool_calls)")
        if keep and len(out["tags"]) > MAX_TAGS - 2:
            raise EventError(f"tags: at most {MAX_TAGS - 2} on a kept message (it adds two: "
                             f"message and role:{role})")
    return out


def _tool_calls(value: Any, kind: str, role: Any) -> list[dict[str, Any]]:
    """An assistant turn's tool calls: [{name, id?, input?, result?, is_error?, rejected?}]."""
    if value is None:
        return []
    if kind != "message" or role != "assistant":
        raise EventError("tool_calls: only a message with role assistant carries tool calls")
    if not isinstance(value, list) or len(value) > MAX_CALLS:
        raise EventError(f"tool_calls: must be a list of at most {MAX_CALLS} objects")
    calls = []
    for i, call in enumerate(value):
        where = f"tool_calls[{i}]"
        if not isinstance(call, dict):
            raise EventError(f"{where}: must be an object with at least a name")
        try:
            name = _string(call, "name", MAX_SHORT)
            call_id = _string(call, "id", MAX_ID)
            result = _string(call, "result", MAX_DETAIL)
        except EventError as exc:
            raise EventError(f"{where}.{exc}") from None
        if not (name or "").strip():
            raise EventError(f"{where}.name: missing; name the tool that was called")
        flags = {}
        for flag in ("is_error", "rejected"):
            if call.get(flag) is not None and not isinstance(call.get(flag), bool):
                raise EventError(f"{where}.{flag}: must be true or false")
            flags[flag] = call.get(flag)
        try:
            dumped = json.dumps(call.get("input"), ensure_ascii=False)
            dumped.encode("utf-8")
            size = len(dumped)
        except (TypeError, ValueError, UnicodeEncodeError):
            raise EventError(f"{where}.input: must be JSON text without lone surrogates") from None
        if size > MAX_DETAIL:
            raise EventError(f"{where}.input: over the {MAX_DETAIL:,} character cap")
        calls.append({"name": name, "id": call_id, "input": call.get("input"), "result": result, **flags})
    return calls


def parse_event_lines(lines: Iterable[str]) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """Lines of a JSONL file -> (valid events, [(line number, reason)]). Blank lines are fine."""
    events: list[dict[str, Any]] = []
    errors: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            errors.append((number, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        try:
            events.append(validate(raw))
        except EventError as exc:
            errors.append((number, str(exc)))
    return events, errors


# --------------------------------------------------------------------------- episodes

def episode_id(ev: dict[str, Any]) -> str:
    """The event's own id, else a hash of what identifies it: re-reading adds nothing."""
    if ev.get("id"):
        return str(ev["id"])
    body = ev.get("text") or f"{ev.get('title') or ''}\n{ev.get('detail') or ''}"
    return stable_id("event", ev.get("source") or DEFAULT_SOURCE, ev.get("session") or "",
                     ev["at"], ev["kind"], body)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _episode_fields(ev: dict[str, Any], kind: str, tags: list[str]) -> dict[str, Any]:
    """Title, gist, detail, tags and the text the vector is made from (without lifecycle fields).

    Secrets in the words and tags (an API key pasted into a note) are stored as "[secret]", as
    in what the detectors find and what remember keeps: episodes are recalled by agents. The id
    still hashes the event as written (episode_id), so re-reading a file adds nothing."""
    from remem.engine.memories import stored_tags

    text = redact_secrets((ev.get("text") or "").strip())
    detail = redact_secrets(ev.get("detail") or "")
    who = ev.get("speaker") or (ev.get("role") if ev["kind"] == "message" else None)
    if (ev.get("title") or "").strip():
        title = redact_secrets(ev["title"].strip())
    else:
        line = _first_line(text)[:120]
        title = f"{who}: {line}" if who else line
    # A kept message up to 64,000 characters: the gist is cut, the detail holds it whole.
    gist, detail = gist_and_detail(text, detail)
    # A correction is embedded from the person's words alone; everything else with its title.
    embed_text = gist if kind == "correction" and gist else f"{title}\n{gist}".strip()
    return {"id": episode_id(ev), "kind": kind, "title": title, "gist": gist, "detail": detail,
            "tags": stored_tags(tags)[0], "speaker": ev.get("speaker"), "_embed": embed_text}


def _existing(store: Store, ids: list[str]) -> set[str]:
    found: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" for _ in chunk)
        found.update(r["id"] for r in store.rows(f"SELECT id FROM episodes WHERE id IN ({marks})", chunk))
    return found


def _lifecycle(ev: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    from remem.engine.memories import creation_fields

    ttl = ev.get("ttl")
    return creation_fields(
        memory_type="short_term" if ttl else "long_term", ttl_s=ttl,
        importance=0.5 if ev.get("importance") is None else ev["importance"],
        valence=ev.get("valence") or 0.0, arousal=ev.get("arousal") or 0.0, cfg=cfg,
    )


def store_events(store: Store, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Episodes for validated events (non-message, and messages marked keep): {added, by_kind,
    already (those stored before, or forgotten for good: not added again)}.

    One embedding batch and one write transaction for the whole list; ids already stored are
    skipped before embedding, so a re-read costs one query.
    """
    wanted: list[tuple[dict[str, Any], dict[str, Any]]] = []
    seen: set[str] = set()
    for ev in events:
        if ev["kind"] == "message":
            if not ev.get("keep") or not (ev.get("text") or "").strip():
                continue
            fields = _episode_fields(ev, "note", list(ev["tags"]) + ["message", f"role:{ev['role']}"])
        else:
            fields = _episode_fields(ev, ev["kind"], list(ev["tags"]))
        if fields["id"] in seen:
            continue
        seen.add(fields["id"])
        wanted.append((ev, fields))
    ids = [f["id"] for _, f in wanted]
    # ids deleted for good (remem forget --hard, the lifecycle) count as stored: not re-added
    have = (_existing(store, ids) | store.forgotten(ids)) if wanted else set()
    already = sum(1 for _, f in wanted if f["id"] in have)
    wanted = [(ev, f) for ev, f in wanted if f["id"] not in have]
    if not wanted:
        return {"added": 0, "by_kind": {}, "already": already}
    from remem.engine.embed import get_embedder, to_blob

    cfg = config_mod.load()
    embedder = get_embedder()
    vectors = embedder.encode([f["_embed"] for _, f in wanted])
    stamp = clock.iso()
    episodes = []
    for (ev, fields), vector in zip(wanted, vectors):
        fields.pop("_embed")
        episodes.append({
            **fields, **_lifecycle(ev, cfg),
            "session_id": ev.get("session"), "source": ev.get("source") or DEFAULT_SOURCE,
            "cwd": ev.get("cwd"), "at": ev["at"], "created": stamp, "last_touched": ev["at"],
            "space": embedder.space, "embedding": to_blob(vector),
        })
    # Connections to older memories are found by sleep's discover pass, not one by one here:
    # a file of thousands of events must stay a single batch.
    added = store.put_episodes(episodes)
    by_kind: dict[str, int] = {}
    for ep in episodes:
        by_kind[ep["kind"]] = by_kind.get(ep["kind"], 0) + 1
    return {"added": added, "by_kind": by_kind, "already": already}


def _call(c: dict[str, Any], ev: dict[str, Any], n: int) -> ToolCall:
    result = c.get("result")
    failed = c.get("is_error")
    if failed is None:  # the writer did not say: read it from the result, as for chats
        failed = looks_failed(result or "")
    return ToolCall(id=c.get("id") or f"{episode_id(ev)}:{n}", name=c["name"], input=c.get("input"),
                    result=result, is_error=bool(failed), rejected=bool(c.get("rejected")))


def message_sessions(events: list[dict[str, Any]], origin: str | None = None) -> list[Session]:
    """kind=message events -> one Session per `session`, turns in time order (file order on ties)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for ev in events:
        if ev["kind"] == "message":
            grouped.setdefault(ev["session"], []).append(ev)
    sessions = []
    for sid, evs in grouped.items():
        evs = sorted(evs, key=lambda e: e["at"])  # stable: file order kept for equal times
        turns = [Turn(role=e["role"], text=e["text"] or "", at=e["at"], uuid=e.get("id"),
                      tool_calls=[_call(c, e, n) for n, c in enumerate(e["tool_calls"])])
                 for e in evs]
        speakers = {e["role"]: e["speaker"] for e in evs if e.get("speaker")}
        sources = {e.get("source") or DEFAULT_SOURCE for e in evs}
        sessions.append(Session(
            id=sid, source="events",
            path=f"{origin}#{sid}" if origin else f"events#{sid}",
            cwd=next((e["cwd"] for e in evs if e.get("cwd")), None),
            started=turns[0].at, ended=turns[-1].at, turns=turns,
            meta={"speakers": speakers, "event_source": sorted(sources)[0]},
        ))
    return sessions


def _run_sessions(store: Store, sessions: list[Session]) -> dict[str, Any]:
    """Message sessions through ingest (the detectors): {added, by_kind, failed: {id: reason},
    unchanged: how many were stored already as they are (read again, nothing new)}."""
    from remem.engine import session_episodes

    added, by_kind, failed, unchanged = 0, {}, {}, 0
    for session in sessions:
        before = _session_episode(store, session.id)
        try:
            result = session_episodes.ingest_session(store, session)
        except (ValueError, OSError) as exc:
            failed[session.id] = str(exc)
            continue
        if before is not None and not (result.get("added") or result.get("replaced") or result.get("dropped")) \
                and _session_episode(store, session.id) == before:
            unchanged += 1
        added += int(result.get("added", 0))
        for kind, n in (result.get("by_kind") or {}).items():
            by_kind[kind] = by_kind.get(kind, 0) + int(n)
    return {"added": added, "by_kind": by_kind, "failed": failed, "unchanged": unchanged}


def _session_episode(store: Store, sid: str) -> dict[str, Any] | None:
    """What a conversation's session episode says (None: not stored yet)."""
    return store.one("SELECT title, gist, detail, at FROM episodes WHERE id = ?", (stable_id(sid, "session", sid),))


def _merge_kinds(into: dict[str, int], more: dict[str, int]) -> None:
    for kind, n in more.items():
        into[kind] = into.get(kind, 0) + int(n)


def ingest_events(store: Store, events: list[dict[str, Any]], *, origin: str | None = None) -> dict[str, Any]:
    """Validated events -> episodes and detector-read sessions. Returns a partial summary."""
    stored = store_events(store, events)
    sessions = message_sessions(events, origin)
    ran = _run_sessions(store, sessions)
    by_kind = dict(stored["by_kind"])
    _merge_kinds(by_kind, ran["by_kind"])
    return {"events": len(events), "episodes": stored["added"] + ran["added"],
            "already": stored["already"] + ran["unchanged"], "sessions": len(sessions) - ran["unchanged"],
            "by_kind": by_kind,
            "errors": [f"session {sid}: {why}" for sid, why in ran["failed"].items()]}


def _read_capped(path: Path) -> tuple[str | None, str]:
    """A file's text, or None and why: unreadable, or over events.max_file_bytes."""
    try:
        limit = int(config_mod.load()["events"]["max_file_bytes"])
        size = path.stat().st_size
        if limit and size > limit:
            # Refused whole, with the reason (the inbox keeps it beside a report): split it.
            return None, (f"{path}: {size:,} bytes, over the {limit:,} cap (events.max_file_bytes); "
                          "split it into smaller files")
        # utf-8-sig: a file saved by a Windows tool starts with a byte-order mark
        return path.read_text(encoding="utf-8-sig", errors="replace"), ""
    except OSError as exc:
        return None, f"{path}: cannot read ({exc.strerror or exc})"


def _complete_lines(text: str) -> list[str]:
    """A file's lines (not splitlines: U+2028 is valid inside JSON), without a last line that
    has no newline after it and is no JSON yet: still being written, it is read next time, as
    a transcript's is, not refused at every read."""
    lines = text.split("\n")
    if lines[-1].strip():
        try:
            json.loads(lines[-1])
        except ValueError:
            lines.pop()
    return lines


def ingest_events_file(store: Store, path: Path | str) -> dict[str, Any]:
    """One events file -> summary {files, skipped, events, already, episodes, sessions, errors,
    malformed_lines}. The file is read whole each time; `already` counts its events stored by
    an earlier read. A file that holds nothing new (every event stored before, no conversation)
    is an unchanged file, as a transcript read before is: `skipped` 1 and `files` 0. So reading
    it again is a success however often it is read, and its refused lines, still there, are
    reported each time (errors, malformed_lines) beside that success, as on the first read."""
    path = Path(path)
    summary: dict[str, Any] = {"files": 1, "skipped": 0, "events": 0, "already": 0, "episodes": 0,
                               "sessions": 0, "by_kind": {}, "errors": [], "malformed_lines": 0}
    text, problem = _read_capped(path)
    if text is None:
        summary["errors"].append(problem)
        return summary
    events, bad = parse_event_lines(_complete_lines(text))
    if bad and not events:
        from remem.engine.ingest_files import another_source

        wrong = another_source(path, "events")
        if wrong is not None:  # a transcript or a chat export: one line saying so, not one a line
            summary["files"], summary["errors"] = 0, [f"{path}: {wrong}"]
            return summary
    summary["malformed_lines"] = len(bad)
    summary["errors"].extend(f"{path}:{line}: {reason}" for line, reason in bad)
    result = ingest_events(store, events, origin=str(path))
    summary["events"] = result["events"]
    summary["already"] = result["already"]
    if result["already"] and not result["episodes"] and not result["sessions"]:
        summary["files"], summary["skipped"] = 0, 1  # nothing new in it: unchanged
    summary["episodes"] = result["episodes"]
    summary["sessions"] = result["sessions"]
    summary["by_kind"] = result["by_kind"]
    summary["errors"].extend(result["errors"])
    return summary


# --------------------------------------------------------------------------- the inbox

def _report_path(path: Path) -> Path:
    return path.with_name(path.name + ".errors.txt")


def _signature(path: Path) -> str:
    st = path.stat()
    return f"size={st.st_size} mtime_ns={st.st_mtime_ns} ino={st.st_ino}"


def _unchanged(path: Path, signature: str) -> bool:
    """Still the file that was read: one written to (or replaced) since stays for the next
    run, so lines added after the read are not moved to done/ unread."""
    try:
        return _signature(path) == signature
    except OSError:
        return False


def _already_reported(path: Path) -> bool:
    """The file was read as it is now and its errors reported: wait for it to be fixed."""
    report = _report_path(path)
    try:
        first = report.read_text(encoding="utf-8").splitlines()[0]
        return first.endswith(_signature(path))
    except (OSError, IndexError):
        return False


def _write_report(path: Path, signature: str, errors: list[str]) -> None:
    lines = [f"# remem read {path.name} {signature}",
             "# Fix or delete the lines below, then run `remem ingest` again; the good lines",
             "# are stored already and will not be added twice.", *errors]
    try:
        write_atomic(_report_path(path), "\n".join(lines) + "\n", fsync=True)
    except OSError:
        pass  # a read-only inbox: the errors are in the summary all the same


def _move_done(path: Path) -> None:
    done = path.parent / "done"
    done.mkdir(parents=True, exist_ok=True)
    target = done / path.name
    n = 1
    while target.exists():
        target = done / f"{path.stem}-{n}{path.suffix}"
        n += 1
    try:
        os.replace(path, target)
    except FileNotFoundError:
        pass  # another ingest moved it first
    else:
        try:  # its time is when it was read, the age prune_done counts from (a rename keeps it)
            moved = clock.now().timestamp()
            os.utime(target, (moved, moved))
        except OSError:
            pass  # kept as it was written: pruned by that time, a little sooner
    try:
        _report_path(path).unlink()
    except FileNotFoundError:
        pass


def prune_done(inbox: Path | None = None, cfg: dict[str, Any] | None = None) -> int:
    """Delete the inbox/done/*.jsonl moved there more than events.keep_done_days ago (0: none);
    their events are in the memory already. The age is the file's modification time, which
    _move_done sets to when it moved the file (a file an older remem moved: when it was
    written). Anything else in done/ (another name, a folder, a link) is left alone. Returns
    how many were deleted."""
    cfg = cfg or config_mod.load()
    days = float(cfg["events"]["keep_done_days"])
    done = (inbox or paths.inbox_dir()) / "done"
    if days <= 0:
        return 0
    cutoff = clock.now().timestamp() - days * 86400
    try:
        entries = list(os.scandir(done))
    except OSError:  # no done/ yet, or unreadable: nothing to prune
        return 0
    deleted = 0
    for entry in entries:
        try:
            if (entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False)
                    and entry.stat(follow_symlinks=False).st_mtime < cutoff):
                os.unlink(entry.path)
                deleted += 1
        except OSError:
            continue  # gone meanwhile, or a read-only inbox: left for a later run
    return deleted


def _dedupe_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same turn sent in several files (a proxy resends the history) counts once."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for ev in messages:
        key = (ev["session"], "id", ev["id"]) if ev.get("id") else \
            (ev["session"], ev["at"], ev["role"], ev.get("text"))
        if key not in seen:
            seen.add(key)
            out.append(ev)
    return out


def ingest_inbox(store: Store, inbox: Path | None = None) -> dict[str, Any]:
    """Every $REMEM_HOME/inbox/*.jsonl: ingested once, then moved to done/ (or kept with a report).

    Episode events are stored file by file. Conversation turns are gathered across every file
    of the run first, so a conversation written one exchange (or one turn) per file still
    reaches the detectors whole. Then done/ files older than events.keep_done_days go
    (`pruned`: how many; prune_done).
    """
    inbox = inbox or paths.inbox_dir()
    summary: dict[str, Any] = {"files": 0, "events": 0, "episodes": 0, "sessions": 0,
                               "by_kind": {}, "errors": [], "malformed_lines": 0, "moved": 0,
                               "waiting": 0, "pruned": 0}
    if not inbox.is_dir():
        return summary
    read: list[tuple[Path, str, list[str]]] = []
    messages: list[dict[str, Any]] = []
    files_of: dict[str, set[Path]] = {}
    for path in sorted(p for p in inbox.glob("*.jsonl") if p.is_file()):
        try:
            if _already_reported(path):
                summary["waiting"] += 1
                continue
            signature = _signature(path)
        except OSError:
            continue  # moved away by a concurrent ingest
        text, problem = _read_capped(path)
        if text is None:
            if path.exists():  # too big (or unreadable): kept, with the reason beside it
                summary["errors"].append(problem)
                _write_report(path, signature, [problem])
            continue
        summary["files"] += 1
        found, bad = parse_event_lines(text.split("\n"))
        summary["events"] += len(found)
        summary["malformed_lines"] += len(bad)
        stored = store_events(store, found)
        summary["episodes"] += stored["added"]
        _merge_kinds(summary["by_kind"], stored["by_kind"])
        for ev in found:
            if ev["kind"] == "message":
                messages.append(ev)
                files_of.setdefault(ev["session"], set()).add(path)
        read.append((path, signature, [f"{path}:{line}: {reason}" for line, reason in bad]))
    sessions = message_sessions(_dedupe_messages(messages), origin=str(inbox))
    ran = _run_sessions(store, sessions)
    summary["sessions"] = len(sessions)
    summary["episodes"] += ran["added"]
    _merge_kinds(summary["by_kind"], ran["by_kind"])
    retry: set[Path] = set()
    for sid, why in ran["failed"].items():
        summary["errors"].append(f"inbox session {sid}: {why}")
        retry.update(files_of.get(sid, ()))  # kept without a report: read again next time
    for path, signature, errors in read:
        summary["errors"].extend(errors)
        if errors:
            _write_report(path, signature, errors)
        elif path not in retry and _unchanged(path, signature):
            _move_done(path)
            summary["moved"] += 1
    summary["pruned"] = prune_done(inbox)
    if summary["pruned"]:
        from remem.log import log

        log("ingest", f"inbox: deleted {summary['pruned']} file(s) of {inbox / 'done'} read more than "
                      "events.keep_done_days ago")
    return summary


# --------------------------------------------------------------------------- writing

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def append_to_inbox(events: list[dict[str, Any]], name: str | None = None) -> Path:
    """Write events as a new inbox file, atomically (a reader never sees half a file).

    `v` and `at` are filled in when missing; every event is validated first, so a bad one
    raises ValueError naming the event and field and nothing is written.
    """
    lines = []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise ValueError(f"event {i}: an event must be a dict")
        full = {"v": VERSION, "at": clock.iso(), **ev}
        try:
            validate(full)
        except EventError as exc:
            raise ValueError(f"event {i}: {exc}") from None
        lines.append(json.dumps(full, ensure_ascii=False, separators=(",", ":")))
    inbox = paths.inbox_dir()
    inbox.mkdir(parents=True, exist_ok=True)
    from remem.engine.store import new_id

    stem = _SAFE_NAME.sub("-", name).strip(".-") if name else ""
    if stem.endswith(".jsonl"):
        stem = stem[: -len(".jsonl")]
    stem = stem or f"{clock.now().strftime('%Y%m%dT%H%M%S%fZ')}-{new_id()[:8]}"
    tmp = inbox / f".{stem}.{os.getpid()}.{new_id()[:6]}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + ("\n" if lines else ""))
        fh.flush()
        os.fsync(fh.fileno())
    # os.link never replaces an existing file, unlike rename: a file not yet read is never lost
    target = inbox / f"{stem}.jsonl"
    try:
        while True:
            try:
                os.link(tmp, target)
                return target
            except FileExistsError:
                target = inbox / f"{stem}-{new_id()[:6]}.jsonl"
            except OSError:  # a filesystem without hard links: rename to a fresh name
                if target.exists():
                    target = inbox / f"{stem}-{new_id()[:6]}.jsonl"
                os.replace(tmp, target)
                return target
    finally:
        tmp.unlink(missing_ok=True)
