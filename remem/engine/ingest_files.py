"""One transcript file into the store (ingest_file): skipped when unchanged, chat ids carried over."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Iterator

from remem.engine import clock
from remem.engine.detect_common import shorten
from remem.engine.ingest_sources import SOURCES
from remem.engine.session import Session
from remem.engine.session_episodes import (
    DETECTOR_VERSION,
    episodes_of,
    ingest_session,
    safe_text,
)
from remem.engine.session_gist import first_ask
from remem.engine.store import Store, dumps, loads_list, stable_id


def _empty_summary() -> dict[str, Any]:
    """An ingest run's summary. `refused_files` counts the events files among `files` none of
    whose lines was good (each refused, or the file not readable): the events module counts
    such a file in `files`, but it is no file read, and files_read() leaves it out."""
    return {"files": 0, "skipped": 0, "sessions": 0, "episodes": 0, "by_kind": {},
            "malformed_lines": 0, "errors": [], "reread": 0, "refused_files": 0}


def files_read(summary: dict[str, Any]) -> int:
    """How many files the run read: `files`, less the events files none of whose lines was good."""
    return int(summary.get("files", 0) or 0) - int(summary.get("refused_files", 0) or 0)


def _merge_counts(summary: dict[str, Any], by_kind: dict[str, int]) -> None:
    for kind, n in (by_kind or {}).items():
        summary["by_kind"][kind] = summary["by_kind"].get(kind, 0) + int(n)


def _add_events(summary: dict[str, Any], result: Any) -> None:
    """Fold an events summary (of a file, counted in `skipped` when it held nothing new; or of
    the inbox, whose unfinished files are `waiting`) into ours. Files with no good line among
    them (each refused, or not readable) are counted in `files` as the events module counts
    them, and in `refused_files`: none was read, as a transcript with no readable line is not."""
    files = int(result.get("files", 1) or 0)
    summary["files"] += files
    if files and result.get("errors") and not result.get("events"):
        summary["refused_files"] = summary.get("refused_files", 0) + files
    summary["skipped"] += int(result.get("skipped", result.get("waiting", 0)) or 0)
    summary["episodes"] += int(result.get("episodes", 0) or 0)
    summary["malformed_lines"] += int(result.get("malformed_lines", 0) or 0)
    summary["sessions"] += int(result.get("sessions", 0) or 0)
    _merge_counts(summary, result.get("by_kind") or {})
    errs = result.get("errors") or []
    summary["errors"].extend(str(e) for e in (errs if isinstance(errs, list) else [errs]))


# --------------------------------------------------------------------------- one file

def _recorded(store: Store, path: str) -> dict[str, Any] | None:
    return store.one("SELECT id, source, mtime, size, detector_version FROM sessions WHERE path = ?", (path,))


# How much of the unchanged files an older version of the detectors read one run reads again
# (their sizes added up; the first such file always, however large). Measured on the Claude
# Code fixtures x100 (600 files, 117 MB) read by an older release: 9 s to read them again
# (parsing, the detectors, the changed episodes embedded), so 512 MB is under a minute on such
# a machine and holds the 30 days of transcripts Claude Code keeps for most people. The rest
# wait for the next runs (the nightly one), counted as skipped till then.
READ_AGAIN_BYTES_PER_RUN = 512 * 2**20


class ReadAgainBudget:
    """What is left of one run's READ_AGAIN_BYTES_PER_RUN, and the sessions the run counted."""

    def __init__(self, limit: int | None = None) -> None:
        self.left = READ_AGAIN_BYTES_PER_RUN if limit is None else limit
        self.taken = False
        self.counted: set[str] = set()

    def first_count(self, session_id: str) -> bool:
        """Whether the run counts this session now: not when it counted it already. Two copies
        of one session read in one run (a shorter one read first, then the longer one that
        replaces it; three saves of one Codex conversation) are one session in `sessions`, as
        they are one session episode in `by_kind`."""
        if session_id in self.counted:
            return False
        self.counted.add(session_id)
        return True

    def take(self, size: int) -> bool:
        """Whether a file of `size` bytes may be read again this run (then it is counted)."""
        if self.taken and size > self.left:
            return False
        self.left -= size
        self.taken = True
        return True


def _read_by_older_detectors(row: dict[str, Any]) -> bool:
    """The file's session was read by an older version of the detectors (session_episodes.
    DETECTOR_VERSION; none recorded: an older release's): what it found may be what they no
    longer find."""
    return row["detector_version"] is None or int(row["detector_version"]) < DETECTOR_VERSION


# How a conversation with an id of its own (a Gemini CLI session, a ChatGPT or Claude.ai
# export's) was stored before that id alone named it: `<id>:<a hash of its opening>`
# (chats.conversation_to_session).
_OLDER_GIVEN_ID = re.compile(r"(.+):[0-9a-f]{10}")


def _stored_as_older_gemini_id(row: dict[str, Any], path: Path) -> bool:
    """A Gemini CLI session file (…/chats/session-*) recorded under its older id: read once
    more, unchanged or not, so its session takes its own id (`_take_over_older_ids`)."""
    return path.name.startswith("session-") and path.suffix in (".json", ".jsonl") \
        and path.parent.name == "chats" and _OLDER_GIVEN_ID.fullmatch(str(row["id"])) is not None


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


# What each JSONL source is, for the lines that say a file holds none of it.
_WHAT = {"claude-code": "a Claude Code transcript", "codex": "a Codex rollout",
         "chats": "a chat export (a message or a conversation a line)", "events": "an events file"}
_OTHERS = {"claude-code": "codex or chats", "codex": "claude-code or chats"}
# How many lines tell a file stored as one source from one the name now guesses.
_SNIFF_LINES = 20


def _said_anything(session: Session) -> bool:
    """The session holds a word or a tool call: what makes its session episode (episodes_of).
    An empty conversation of an export is recorded (its file is skipped next time) but not
    counted in `sessions`, so `sessions` and `by_kind.session` add up."""
    return any(t.text or t.tool_calls for t in session.turns)


def _record_of(record: Any) -> str | None:
    """The source a JSON line is a record of, by the keys each writes; None: of none read here."""
    from remem.engine.chats import _GEMINI_CLI_TYPES as GEMINI_CLI_TYPES
    from remem.engine.codex import _RESPONSE_TYPES as RESPONSE_TYPES
    from remem.engine.codex import RECORD_TYPES
    from remem.engine.events import KINDS
    from remem.engine.transcripts import RECORD_TYPES as CLAUDE_TYPES

    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if (kind in RECORD_TYPES and isinstance(record.get("payload"), dict) and "timestamp" in record) \
            or (kind in RESPONSE_TYPES and "payload" not in record):  # the oldest rollouts' bare items
        return "codex"
    if record.get("kind") in KINDS or {"at", "kind"} <= record.keys():  # an event, its kind mistyped
        return "events"
    if "role" in record or (kind in GEMINI_CLI_TYPES and "content" in record and "message" not in record):
        return "chats"
    if isinstance(kind, str) and (kind in CLAUDE_TYPES or "sessionId" in record or "uuid" in record):
        return "claude-code"  # a type Claude Code added since, on a record shaped as its others
    if isinstance(record.get("messages"), list) or isinstance(record.get("contents"), list) \
            or isinstance(record.get("mapping"), dict) or isinstance(record.get("chat_messages"), list):
        return "chats"  # a whole conversation a line (OpenAI, Anthropic, Gemini, the apps' exports)
    return None


def _lines_are(path: Path, source: str, head: int | None = None) -> tuple[str | None, int, int]:
    """What a file's JSON lines are records of: `source` as soon as one line is one of its
    records, else the first other source one is (None: no line is a record of any), how
    many complete lines it has (a last line still being written is not one), and how many of
    those are no JSON at all. `head`: only that many lines are looked at."""
    other, lines, unreadable = None, 0, 0
    for raw in _raw_lines(path):
        if not raw.strip():
            continue
        try:
            found = _record_of(json.loads(raw))
        except (ValueError, RecursionError):
            if not raw.endswith(b"\n"):
                break  # torn: still being written
            found = None
            unreadable += 1
        lines += 1
        if found == source:
            return source, lines, unreadable
        other = other or found
        if head is not None and lines >= head:
            break
    return other, lines, unreadable


def _raw_lines(path: Path) -> Iterator[bytes]:
    if path.name.endswith(".zst"):
        from remem.engine.codex import _read_bytes  # a .zst rollout, decompressed

        yield from _read_bytes(path).splitlines(keepends=True)
        return
    with open(path, "rb") as fh:
        yield from fh


def _refuse_a_zip(path: Path) -> None:
    """NotAConversation, saying to unzip it, for a zip archive (known by its first bytes,
    whatever its name): an app's data export as downloaded."""
    from remem.engine.chats import ZIP_ADVICE, ZIP_MAGIC, NotAConversation

    with open(path, "rb") as fh:
        if fh.read(len(ZIP_MAGIC)) == ZIP_MAGIC:
            raise NotAConversation(ZIP_ADVICE)


def _held_by_a_newer_file(store: Store, session_id: str, name: str, st: os.stat_result,
                          grows: bool = False) -> bool:
    """Whether another file, newer than this one and still there, holds this conversation (two
    exports of one ChatGPT or Claude.ai conversation, named by its id; a copy of a transcript or
    rollout kept elsewhere): the newer one tells it, so the two are not read in turn, each
    replacing what the other stored, at every ingest. A transcript or rollout only `grows`: of
    two copies the longer tells it (the newer, when they are as long). Of two alike (as long,
    as new: `cp -p`) the one stored keeps it."""
    row = store.one("SELECT path FROM sessions WHERE id = ?", (session_id,))
    if row is None or not row["path"] or str(row["path"]).rsplit("#", 1)[0] == name:
        return False
    try:
        there = Path(str(row["path"]).rsplit("#", 1)[0]).stat()
    except OSError:
        return False  # gone (or unreadable): this file tells it now
    if grows:
        return (there.st_size, there.st_mtime) >= (st.st_size, st.st_mtime)
    return there.st_mtime >= st.st_mtime


def _no_records(source: str, lines: int, unreadable: int) -> ValueError:
    """The error for a file of `lines` complete lines, none a record: `unreadable` of them no
    JSON at all (`echo garbage`), the others JSON of no kind read here (`{}`)."""
    from remem.engine.chats import NotAConversation

    parsed = lines - unreadable
    said = ([f"{unreadable} unreadable line{'s' if unreadable != 1 else ''}"] if unreadable else []) + \
        ([f"{parsed} JSON line{'s that are no records' if parsed != 1 else ' that is no record'}"] if parsed else [])
    # No path here: ingest puts it in front of every error it reports.
    return NotAConversation(
        f"no records found ({', '.join(said)}); expected "
        f"{_WHAT[source]}, one JSON object per line (another kind of file: pass --source {_OTHERS[source]})")


def _not_this_source(found: str, source: str) -> ValueError:
    from remem.engine.chats import NotAConversation

    return NotAConversation(f"looks like {_WHAT[found]}, not {_WHAT[source]}: pass --source {found}")


def another_source(path: Path, source: str) -> ValueError | None:
    """The error for a file named as `source` whose first lines are another source's records
    and none of its own (a Claude Code transcript named with --source events), else None."""
    found = _lines_are(path, source, head=_SNIFF_LINES)[0]
    return None if found in (source, None) else _not_this_source(found, source)


def ingest_file(store: Store, path: Path, source: str, summary: dict[str, Any],
                cfg: dict[str, Any], embedder: Any = None, source_given: bool = False,
                budget: ReadAgainBudget | None = None) -> None:
    """Read one file into the store unless its mtime and size are unchanged — and, when the
    person named the source (`source_given`, --source), it is the one the file was stored as:
    a file first read under a wrong guess is read again as what they say it is. An unchanged
    file an older version of the detectors read is read again (counted in `reread`) while the
    run's `budget` lasts (none given: always).

    A transcript or rollout with no record of its source raises NotAConversation and stores
    no session (nothing is recorded, so it is read again next time): no readable line at all,
    or another source's records (guessed from its name, a rollout and a transcript are read
    as what they are instead). A copy of a session another, longer file tells is `skipped`.
    A zip archive (an app's data export as downloaded) raises NotAConversation saying to unzip it."""
    if source == "events":
        from remem.engine.events import ingest_events_file

        _refuse_a_zip(path)

        _add_events(summary, ingest_events_file(store, path))
        return
    st = path.stat()
    name = safe_text(path)  # as stored: a name that is not UTF-8 shows its bytes as \xNN
    key = f"{name}#0" if source == "chats" else name
    row = _recorded(store, key)
    if row is not None and row["mtime"] == st.st_mtime and row["size"] == st.st_size \
            and not (source == "chats" and _stored_as_older_gemini_id(row, path)) \
            and not _stored_as_another_source(row, path, source, source_given):
        if not _read_by_older_detectors(row) or (budget is not None and not budget.take(st.st_size)):
            summary["skipped"] += 1
            return
        summary["reread"] += 1  # unchanged, but judged by older detectors: read again
    _refuse_a_zip(path)  # never recorded, so never skipped as unchanged above
    if source == "chats" and path.suffix == ".jsonl" and (wrong := another_source(path, source)):
        raise wrong  # an events file or a transcript is no chat export: say which it is
    sessions = _parse(path, source, store)
    if source in _OTHERS and len(sessions) == 1 and not sessions[0].turns \
            and not _legacy_codex(sessions[0]):
        found, lines, unreadable = _lines_are(path, source)
        if found is None and lines:  # `echo garbage > g.jsonl`: no transcript at all
            raise _no_records(source, lines, unreadable)
        if found not in (source, None):
            if source_given or found not in _OTHERS:  # say what it is instead of storing nothing
                raise _not_this_source(found, source)
            source = found  # guessed from its name: read as what it holds
            sessions = _parse(path, source, store)
    told_elsewhere = 0
    for i, session in enumerate(sessions):
        summary["malformed_lines"] += session.malformed_lines
        if source == "chats":
            session.path = f"{name}#{i}"
            session.id = _stored_chat_id(store, session, path) or session.id
        else:
            session.path = name
        if _held_by_a_newer_file(store, session.id, name, st, grows=source != "chats"):
            told_elsewhere += 1
            continue  # the same conversation in a newer export, a longer copy: that one tells it
        if source == "chats":
            _take_over_older_ids(store, session)
        size = st.st_size
        if session.torn_tail and source != "codex":
            # Record only the complete lines, so the file differs next time and is read again.
            # Not for a Codex rollout: Codex only appends to one (and the TypeScript CLI wrote
            # its .json once, whole), so whatever it writes changes the size: recorded as it is,
            # a last line torn for good is not read again at every ingest, and one finished
            # since is read with the file that grew.
            size = int(session.meta.get("complete_bytes", -1))
        # Read from the start of its file: what it yields replaces what ingest made of it before.
        result = ingest_session(store, session, mtime=st.st_mtime, size=size, cfg=cfg, embedder=embedder,
                                whole=True)
        # An empty conversation (nothing said) is no session; a copy of one counted this run
        # (the longer copy replaces it) is that one.
        if _said_anything(session) and (budget is None or budget.first_count(session.id)):
            summary["sessions"] += 1
        summary["episodes"] += result["added"]
        _merge_counts(summary, result["by_kind"])
    # Every conversation it holds told by another file: it adds nothing, as an unchanged file.
    summary["skipped" if sessions and told_elsewhere == len(sessions) else "files"] += 1


def _legacy_codex(session: Session) -> bool:
    """A Codex rollout read from the TypeScript CLI's JSON document (codex.LEGACY_FORMAT): a
    rollout, whatever it holds, though its lines are no JSON lines (it is pretty-printed)."""
    from remem.engine.codex import LEGACY_FORMAT

    return session.source == "codex" and session.meta.get("format") == LEGACY_FORMAT


def _stored_as_another_source(row: dict[str, Any], path: Path, source: str, source_given: bool) -> bool:
    """The file's row names another source than the one it is read as now: the source named
    (--source) reads it again as that; a guess from its name does when its first lines are no
    records of the row's source (a Claude Code transcript once named as a Codex rollout)."""
    if row["source"] == source:
        return False
    return source_given or _lines_are(path, row["source"], head=_SNIFF_LINES)[0] != row["source"]


# --------------------------------------------------------------------------- chat ids carried over

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
    """A conversation stored before its own id named it alone is under `<id>:<hash of its
    opening>`, once per opening it had when read (a live Gemini CLI session read early had a
    shorter one; a ChatGPT conversation whose first reply was regenerated, another). What is
    stored under those ids (`_older_ids`) becomes this session's, in place: each episode takes
    the id it has under the new session id (its strength, recalls, tags and connections, and
    the lessons naming it, follow), one already there under the new id stays the only copy,
    and an id forgotten under an old session id is forgotten under the new one. Reading the
    file then updates the session instead of storing it a second time, and what no longer
    is in it (an abandoned branch) goes as any finding read again and not found does."""
    olds = _older_ids(store, session)
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


def _older_ids(store: Store, session: Session) -> list[str]:
    """The older ids (`_OLDER_GIVEN_ID`) `session` was stored under, the one its file's row
    names first (of two copies of an episode, the last read's stays). An old id with no row
    left is an earlier reading whose row a later one replaced (by path, its opening grown)."""
    given = session.meta.get("given_id")
    fmt = session.meta.get("format")
    if not given:
        return []
    gemini_jsonl = fmt == "gemini-cli" and session.id == given
    gemini_json = fmt == "gemini-cli" and session.id.startswith(f"{given}@")
    export = fmt in ("chatgpt-export", "claude-export") and session.id == given
    if not (gemini_jsonl or gemini_json or export):
        return []
    span = (f"{given}:", f"{given};")  # ':' + 1: every id "<given>:…", found by the index
    rows = store.rows("SELECT id, path FROM sessions WHERE id >= ? AND id < ? AND source = 'chats'", span)
    recorded = {r["id"] for r in rows if r["path"] == session.path}
    stored = {r["id"] for r in rows}
    orphans = {r["session_id"] for r in store.rows(
        "SELECT DISTINCT session_id FROM episodes WHERE session_id >= ? AND session_id < ?", span)} - stored
    if export:
        # A ChatGPT or Claude.ai id names one conversation: every reading of it, from any export.
        olds = stored | orphans
    elif gemini_jsonl:
        # Only what this file made: another file with the same sessionId (the .json Gemini CLI
        # resumed into this .jsonl) keeps its own session. An orphan may have opened otherwise
        # (a `$rewindTo` the first prompt).
        olds = recorded | orphans
    else:
        # The .json: read first (its name is the older), it leaves the .jsonl's orphans alone.
        olds = recorded | {old for old in orphans if _earlier_reading(store, old, session)}
    return sorted((old for old in olds if (m := _OLDER_GIVEN_ID.fullmatch(old)) and m.group(1) == given),
                  key=lambda old: (old not in recorded, old not in stored, old))


def _earlier_reading(store: Store, old_id: str, session: Session) -> bool:
    """`old_id` (no row left) was this session read when it was shorter: its hash is that of
    this session's opening as far as it went then, or it opens with the same ask."""
    from remem.engine.chats import fingerprint

    hashed = old_id.rsplit(":", 1)[1]
    return any(fingerprint(session.turns, session.started, count)[:10] == hashed for count in (0, 1, 2)) \
        or _same_opening(store, old_id, session)


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
