"""Lessons: reads and writes shared by sleep, sharing, hooks, the MCP server and the TUI."""

from __future__ import annotations

import json
import os
import unicodedata
from typing import Any, Iterable, Sequence

from remem.engine import clock
from remem.engine.projects import is_under
from remem.engine.store import LESSON_STATUSES, Store, cap, chunks, cut_from, dumps, loads_list, new_id
from remem.errors import NotFound, RememError

LESSON_KINDS = ("correction", "error", "surprise", "note")
# A lesson is a sentence or a few; longer text is cut with store.TRUNCATED. The same as the
# share safety cap, so every local lesson can be shared.
MAX_LESSON = 2000


def lesson_hash(text: str, kind: str) -> str:
    """A lesson's identity across memories: sha256 of its normalised text and kind."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    norm = " ".join(norm.split()).strip(" .!")
    from hashlib import sha256  # here: it loads OpenSSL, which a hook showing no new lesson never needs

    return sha256(f"{kind}\n{norm}".encode("utf-8")).hexdigest()[:32]


def vector_text(text: str | None, kind: str | None) -> str:
    """What a lesson's vector is computed from, wherever a lesson is embedded (the lessons
    pass, a received share, an edit, a redaction, the sleep's embed pass): its own words, not
    remem's template around them (`programs.matchable_text`: an error lesson's "failed here"
    and its advice are left out). A prediction (no kind) from its whole text."""
    from remem.engine.programs import matchable_text

    return matchable_text(text or "", kind) if kind else (text or "")


def _row(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k not in ("embedding", "seq")}
    out["sources"] = loads_list(row.get("sources"))
    out["origins"] = loads_list(row.get("origins"))
    return out


def add_lesson(
    store: Store,
    text: str,
    kind: str,
    *,
    sources: Sequence[str] = (),
    cwd: str | None = None,
    strength: float = 1.0,
    status: str = "active",
    origin: str | None = None,
    origins: Sequence[str] = (),
    space: str | None = None,
    embedding: bytes | None = None,
    created: str | None = None,
    draft: str | None = None,
    note: str | None = None,
    lesson_id: str | None = None,
) -> dict[str, Any]:
    """Insert one lesson; returns it. The caller embeds first (outside the write)."""
    if status not in LESSON_STATUSES:
        raise ValueError(f"status must be one of {', '.join(LESSON_STATUSES)}")
    text = cap(" ".join((text or "").split()), MAX_LESSON)
    if not text:
        raise ValueError("a lesson needs text")
    stamp = clock.iso()
    row = {
        "id": lesson_id or new_id()[:12],
        "text": text,
        "kind": kind,
        "cwd": cwd,
        "strength": float(strength),
        "seen": max(1, len(sources)),
        "sources": dumps(list(sources)),
        "status": status,
        "created": created or stamp,
        "updated": stamp,
        "origin": origin,
        "hash": lesson_hash(text, kind),
        "origins": dumps(list(origins)),
        "space": space,
        "embedding": embedding,
        "draft": draft,
        "note": note,
    }
    cols = list(row)
    with store.write() as conn:
        conn.execute(
            f"INSERT INTO lessons ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            [row[c] for c in cols],
        )
    return get_lesson(store, row["id"])


def get_lesson(store: Store, lesson_id: str) -> dict[str, Any]:
    """A lesson by id, by a unique prefix of at least 4 characters, or by a merged-away id."""
    row = store.one("SELECT * FROM lessons WHERE id = ?", (lesson_id,))
    if row is None and len(lesson_id) >= 4:
        row = _by_prefix(store, lesson_id)
    if row is None:
        alias = store.one("SELECT new FROM aliases WHERE old = ?", (lesson_id,))
        if alias:
            return get_lesson(store, alias["new"])
        short = " (an id prefix needs at least 4 characters)" if len(lesson_id) < 4 else ""
        raise NotFound(f"no lesson with id {lesson_id!r}{short}; `remem lessons list` shows the ids")
    return _row(row)


def lesson_named(store: Store, given: str) -> dict[str, Any] | None:
    """The lesson an id names (in full, by a unique prefix, or a merged-away id), or None
    (no lesson, or a prefix of several): for an edge given a lesson's id where a memory's was
    expected, to say so instead of "no memory with id …"."""
    try:
        return get_lesson(store, given)
    except RememError:  # NotFound among them
        return None


def _by_prefix(store: Store, prefix: str) -> dict[str, Any] | None:
    """The lesson whose id, or a merged-away id of which, starts with `prefix` (the theme, for a
    merged-away one). substr, not LIKE: `%` and `_` in what a person typed are no wildcards.
    Two lessons matched are an error, never a guess: `remem lessons veto` must not veto the
    wrong lesson (ids that lead to one lesson, its own and its aliases', are one match)."""
    rows = store.rows("SELECT * FROM lessons WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 2",
                      (len(prefix), prefix))
    aliases = store.rows("SELECT old, new FROM aliases WHERE substr(old, 1, ?) = ? ORDER BY old LIMIT 2",
                         (len(prefix), prefix))
    named = {r["id"]: r["id"] for r in rows} | {a["old"]: a["new"] for a in aliases}
    if len(set(named.values())) > 1:
        first, second = sorted(named)[:2]
        raise RememError(f"ambiguous id {prefix!r}: matches {first} and {second}; give more characters")
    if rows:
        return rows[0]
    return store.one("SELECT * FROM lessons WHERE id = ?", (aliases[0]["new"],)) if aliases else None


def list_lessons(
    store: Store,
    *,
    statuses: Iterable[str] | None = ("active",),
    kind: str | None = None,
    with_vectors: bool = False,
) -> list[dict[str, Any]]:
    where, params = [], []
    if statuses:
        statuses = list(statuses)
        where.append(f"status IN ({', '.join('?' for _ in statuses)})")
        params += statuses
    if kind:
        where.append("kind = ?")
        params.append(kind)
    sql = "SELECT * FROM lessons" + (f" WHERE {' AND '.join(where)}" if where else "")
    rows = store.rows(sql + " ORDER BY strength DESC, created", params)
    out = []
    for r in rows:
        item = _row(r)
        if with_vectors:
            item["embedding"] = r["embedding"]
        out.append(item)
    return out


# Two rules tie a lesson to a folder, on purpose in opposite directions:
# - `applies_in`: priming, `remem context`, MCP `context`, `lessons(project=)` and the
#   remem://lessons/{project} resource pick the lessons that apply where an agent works: those
#   learned in that folder or a folder above it (docs/HOOKS.md), plus the general ones.
# - `filed_under`: recall's `project` filter keeps what was learned in a folder tree: that
#   folder and the folders below it (docs/RECALL.md), plus the general ones.
# A lesson's folder that is no absolute path ties it to no folder here, so both say no: a
# lesson received for a project this memory cannot place holds that project's name alone
# (docs/SHARING.md), and it must not pass for a lesson of every project.


def unbound_project(lesson_cwd: str | None) -> bool:
    """Whether a lesson's folder is a project name bound to no folder here (a shared lesson
    for a project this memory cannot place), not a path: such a lesson applies nowhere."""
    return bool(lesson_cwd) and not os.path.isabs(lesson_cwd)


def applies_in(lesson_cwd: str | None, workdir: str | None) -> bool:
    """Whether a lesson applies in a working folder: a lesson without a folder everywhere; one
    learned in a folder there and in the folders below it, never where the folder is unknown;
    one whose project is bound to no folder here (`unbound_project`), nowhere."""
    if not lesson_cwd:
        return True
    return not unbound_project(lesson_cwd) and is_under(workdir, lesson_cwd)


def filed_under(lesson_cwd: str | None, folder: str) -> bool:
    """Whether a lesson passes recall's project filter: learned in `folder` or below it, or
    learned in no folder (those apply everywhere); never one not bound to a folder here."""
    if not lesson_cwd:
        return True
    return not unbound_project(lesson_cwd) and is_under(lesson_cwd, folder)


def for_project(
    store: Store,
    workdir: str | None,
    *,
    statuses: Iterable[str] | None = ("active",),
    kind: str | None = None,
) -> list[dict[str, Any]]:
    """The lessons that apply in a working folder (`applies_in`), strongest first; with no
    folder, the general ones only."""
    return [l for l in list_lessons(store, statuses=statuses, kind=kind) if applies_in(l.get("cwd"), workdir)]


def update_lesson(store: Store, lesson_id: str, **fields: Any) -> dict[str, Any]:
    """Change columns of one lesson (lists are stored as JSON); `updated` is set."""
    allowed = {"text", "kind", "cwd", "strength", "seen", "sources", "status", "origin",
               "origins", "space", "embedding", "draft", "note", "hash"}
    unknown = set(fields) - allowed
    if unknown:
        raise ValueError(f"cannot update {', '.join(sorted(unknown))}")
    if "status" in fields and fields["status"] not in LESSON_STATUSES:
        raise ValueError(f"status must be one of {', '.join(LESSON_STATUSES)}")
    current = get_lesson(store, lesson_id)
    values = {k: (dumps(v) if k in ("sources", "origins") else v) for k, v in fields.items()}
    if "text" in values:
        values["text"] = cap(" ".join(str(values["text"]).split()), MAX_LESSON)
        values.setdefault("hash", lesson_hash(values["text"], fields.get("kind", current["kind"])))
        if "embedding" not in values and values["text"] != current["text"]:
            # The old vector no longer says what the lesson says; the next sleep embeds it anew
            # (a lesson whose sources are gone is matched by its vector alone).
            values["space"], values["embedding"] = None, None
    values["updated"] = clock.iso()
    with store.write() as conn:
        conn.execute(
            f"UPDATE lessons SET {', '.join(k + ' = ?' for k in values)} WHERE id = ?",
            [*values.values(), current["id"]],
        )
    return get_lesson(store, current["id"])


def set_status(store: Store, lesson_id: str, status: str, note: str | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {"status": status}
    if note is not None:
        fields["note"] = note
    return update_lesson(store, lesson_id, **fields)


def by_hash(store: Store, text_hash: str) -> dict[str, Any] | None:
    """The oldest lesson with this text hash, or None (serves tests and tools)."""
    row = store.one("SELECT * FROM lessons WHERE hash = ? ORDER BY created LIMIT 1", (text_hash,))
    return _row(row) if row else None


def to_wire(lesson: dict[str, Any]) -> dict[str, Any]:
    """The lessons.jsonl wire form of a lesson (docs/PROTOCOL.md)."""
    return {
        "id": lesson["id"], "text": lesson["text"], "kind": lesson["kind"], "cwd": lesson.get("cwd"),
        "strength": lesson["strength"], "seen": lesson["seen"], "status": lesson["status"],
        "sources": lesson["sources"], "created": lesson["created"], "updated": lesson["updated"],
        "origin": lesson.get("origin"), "hash": lesson["hash"], "origins": lesson["origins"],
    }


def wire_line(lesson: dict[str, Any]) -> str:
    return json.dumps(to_wire(lesson), ensure_ascii=False, sort_keys=True)


def absorb(conn: Any, theme_id: str, old_id: str, old_created: str | None, stamp: str) -> None:
    """Inside a write: `old` lives on as an alias of the theme (keeping its created time)."""
    conn.execute(
        "INSERT OR REPLACE INTO aliases (old, new, at, created) VALUES (?, ?, ?, ?)",
        (old_id, theme_id, stamp, old_created),
    )
    conn.execute("UPDATE aliases SET new = ? WHERE new = ?", (theme_id, old_id))
    conn.execute("UPDATE predictions SET lesson_id = ? WHERE lesson_id = ?", (theme_id, old_id))
    conn.execute("DELETE FROM lessons WHERE id = ?", (old_id,))


def _not_active(lesson_id: str, status: str) -> str:
    """Why a lesson of this status takes no part in a merge by hand, and what to do first."""
    if status == "vetoed":
        return f"it is vetoed; restore it first (`remem lessons restore {lesson_id}`)"
    if status == "candidate":
        return (f"it is a received lesson not yet accepted ({status}); accept it first "
                f"(`remem share accept {lesson_id}`)")
    if status == "quarantined":  # accepted only with --force, once read (share_choices.accept)
        return (f"it is a received lesson held back as unsafe (quarantined); read it in "
                f"`remem share candidates`, then accept it with `remem share accept {lesson_id} --force`")
    return f"it is {status}, retired for good"


def merge_refusal(theme: dict[str, Any], other: dict[str, Any]) -> str | None:
    """Why `other` cannot be merged into `theme` by hand, in one line naming the fix; None when
    it can. Both must be active: merging into a vetoed, revoked or received lesson would take an
    active lesson out of priming with no way back, and merging one of those away would drop a
    veto, a revocation or a decision still to make."""
    if theme["id"] == other["id"]:
        return "a lesson cannot be merged into itself"
    if theme["status"] != "active":
        return (f"cannot merge into {theme['id']}: {_not_active(theme['id'], theme['status'])}; "
                "only an active lesson takes a merge")
    if other["status"] != "active":
        return (f"cannot merge {other['id']}: {_not_active(other['id'], other['status'])}; "
                "only active lessons are merged")
    return None


def merge_check(store: Store, theme_id: str, other_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both lessons of a merge by hand, as stored now; ValueError (the reason and the fix) when
    `other` cannot be merged into `theme`. NotFound for an id no lesson has."""
    theme = get_lesson(store, theme_id)
    other = get_lesson(store, other_id)
    refusal = merge_refusal(theme, other)
    if refusal:
        raise ValueError(refusal)
    return theme, other


def merge_into(store: Store, theme_id: str, other_id: str) -> dict[str, Any]:
    """Merge one active lesson into another by hand: sources joined, the other becomes an alias.
    ValueError when either is not active (merge_refusal says why)."""
    theme, other = merge_check(store, theme_id, other_id)
    stamp = clock.iso()
    with store.write() as conn:
        # Both again, inside the write: another process may have vetoed, merged or strengthened
        # one since they were read.
        columns = ("id", "status", "sources", "strength", "cwd", "created")
        now = {row[0]: dict(zip(columns, row)) for row in conn.execute(
            f"SELECT {', '.join(columns)} FROM lessons WHERE id IN (?, ?)", (theme["id"], other["id"]))}
        gone = [lid for lid in (theme["id"], other["id"]) if lid not in now]
        if gone:
            raise ValueError(f"{gone[0]} was merged or deleted meanwhile; `remem lessons list` shows the lessons now")
        theme, other = now[theme["id"]], now[other["id"]]
        refusal = merge_refusal(theme, other)
        if refusal:
            raise ValueError(refusal)
        sources = list(dict.fromkeys(loads_list(theme["sources"]) + loads_list(other["sources"])))
        cwd = theme["cwd"] if theme["cwd"] == other["cwd"] else None
        conn.execute(
            "UPDATE lessons SET sources = ?, seen = ?, strength = ?, cwd = ?, updated = ? WHERE id = ?",
            (dumps(sources), max(1, len(sources)), float(theme["strength"]) + float(other["strength"]),
             cwd, stamp, theme["id"]),
        )
        absorb(conn, theme["id"], other["id"], other["created"], stamp)
    return get_lesson(store, theme["id"])


def edit_refusal(lesson: dict[str, Any], ours: str | None) -> str | None:
    """Why the person cannot edit this lesson's words, in one line naming what to do instead;
    None when they can. A received lesson is its author's words: only one the person holds
    active can be rewritten (and so becomes theirs); one waiting for a decision, rejected or
    revoked has nothing to rewrite. A revoked lesson of the person's own neither: its words
    are withdrawn wherever they were shared, for good, and new words in its row would be
    withdrawn with them (the row keeps its revocation), and withheld here."""
    lid, status, origin = lesson["id"], lesson["status"], lesson.get("origin")
    if status == "revoked" and (not origin or origin == ours):
        return (f"{lid} is revoked: its words are withdrawn for good wherever they were shared, and it "
                "cannot come back; nothing to edit (edit an active lesson instead: `remem lessons list`)")
    if not origin or origin == ours or status == "active":
        return None
    if status in ("candidate", "quarantined"):
        return (f"{lid} is a received lesson waiting for a decision ({status}), in its author's words: "
                f"accept it first (`remem share accept {lid}`), then edit it, or reject it "
                f"(`remem share reject {lid}`)")
    if status == "vetoed":
        return f"{lid} is a received lesson you rejected; its words are its author's, nothing to edit"
    return f"{lid} was revoked by its author: it cannot come back, nothing to edit"


def edit_notes(done: dict[str, Any], *, was_received: bool, sync: str, edit: str) -> list[str]:
    """What an edit's result (edit_text) means for the person, one note each, as the CLI and
    the TUI say it: a secret made [secret], words cut to MAX_LESSON, earlier words withdrawn
    where they were shared at the next `sync` (or, for a received lesson, its author's kept
    rejected), words revoked earlier that stay unshared (`edit` words it anew)."""
    notes = []
    if done.get("redacted"):
        notes.append("a secret in the new words became [secret]: lessons are written to agent memory")
    if done.get("cut"):
        notes.append(f"the words were over the {MAX_LESSON:,} characters a lesson holds: the last "
                     f"{done['cut']:,} were cut (a lesson is shared whole, so it stays short)")
    if done.get("replaced") and was_received and not done.get("origin"):
        notes.append(f"your own lesson now; its author's words stay rejected as {done['replaced']}")
    elif done.get("replaced"):
        notes.append(f"the earlier words ({done['replaced']}) are withdrawn where they were shared "
                     f"at the next {sync}")
    if done.get("revoked_words"):
        notes.append(f"these words were revoked earlier ({done['revoked_words']}) and stay unshared: a "
                     f"revocation is for good; to share this lesson, word it differently ({edit})")
    return notes


def edit_text(store: Store, lesson_id: str, text: str, *, identity_dir: Any = None) -> dict[str, Any]:
    """A person rewrites a lesson: new text and vector; the earlier text is kept as the draft.
    Its open predictions say the new words too (predictions.reword_open); resolved ones keep
    the words they were resolved with.

    New words are a new lesson wherever lessons are shared (the hash is a lesson's identity),
    so when the words change the hash of an active lesson, the earlier words are kept in a row
    of their own, which withdraws them (docs/SHARING.md, "Editing a shared lesson"):
    - our own lesson, in a memory that shares (it has an identity): a `revoked` row, so the
      next export writes their signed revocation and every receiver retires them;
    - a received lesson we hold active: our words are ours now (origin null, exported as ours);
      the author's words stay as a rejected (`vetoed`) row, so they do not come back as a
      candidate and our confirmation of them is withdrawn.
    A received lesson not held active, or a revoked lesson, is refused (edit_refusal):
    ValueError naming the fix.
    Secrets in the new words become "[secret]" (redaction.redact_secrets), as in a note.
    Words past MAX_LESSON are cut with the marker. The result carries `replaced`: the id of
    that row, or None; `redacted`: whether a secret was replaced; `cut`: how many characters
    the cap left out (0: none); and `revoked_words`: the id of a revoked lesson of ours with
    the new words, or None. Those words are revoked for good (a tombstone): the lesson is never exported again
    in them, only in other words. `changed`: False when the words, once redacted and cut, are
    the lesson's own already: nothing is written then (no draft, no new vector, no `updated`)."""
    from remem.engine import predictions  # here: hooks read lessons, never edit them
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.redaction import redact_secrets

    current = get_lesson(store, lesson_id)
    given = " ".join((text or "").split())
    # Redacted as `remember` redacts a note: the sleep's redact pass reads each row once, so it
    # would never see a secret typed into an edit, and these words are rendered to agent memory.
    text = redact_secrets(given)
    redacted = text != given
    if not text:
        raise ValueError("a lesson needs text; veto it instead of emptying it")
    from remem.engine.share_sign import own_origin  # not at the top: cryptography is slow to load

    ours = own_origin(identity_dir) if current.get("origin") or current["status"] == "active" else None
    refusal = edit_refusal(current, ours)
    if refusal:
        raise ValueError(refusal)
    cut = cut_from(len(text), MAX_LESSON)
    text = cap(text, MAX_LESSON)
    if text == current["text"]:
        return {**current, "changed": False, "replaced": None, "revoked_words": None, "redacted": redacted,
                "cut": cut}
    embedder = get_embedder()
    vector = to_blob(embedder.encode([vector_text(text, current["kind"])])[0])
    stamp = clock.iso()
    new_hash = lesson_hash(text, current["kind"])
    own = not current.get("origin") or current["origin"] == ours
    changes: dict[str, Any] = {"text": text, "hash": new_hash, "draft": current.get("draft") or current["text"],
                               "space": embedder.space, "embedding": vector, "updated": stamp}
    kept: dict[str, Any] | None = None
    if new_hash != current["hash"] and current["status"] == "active" and (not own or ours):
        kept = {"id": new_id()[:12], "text": current["text"], "kind": current["kind"], "cwd": current.get("cwd"),
                "strength": current["strength"], "seen": 1, "sources": "[]", "created": current["created"],
                "updated": stamp, "hash": current["hash"], "space": None, "embedding": None, "draft": None}
        changes["origins"] = "[]"  # who confirmed the earlier words did not confirm these
        if own:
            # origin: ours (it is our own lesson) rather than null, so sleep never takes these
            # words for a lesson it may grow (it leaves lessons with an origin alone).
            kept.update(status="revoked", origin=ours, origins="[]",
                        note=f"replaced by your edit of lesson {current['id']}: withdrawn where it was shared")
        else:
            kept.update(status="vetoed", origin=current["origin"], origins=dumps(current["origins"]),
                        note=f"rejected by hand: replaced by your edit, lesson {current['id']}")
            changes.update(origin=None, note=f"your words for a lesson from {current['origin']} (lesson {kept['id']})")
    with store.write() as conn:  # one transaction: never new words without the old ones kept
        if kept:
            conn.execute(f"INSERT INTO lessons ({', '.join(kept)}) VALUES ({', '.join('?' for _ in kept)})",
                         list(kept.values()))
        conn.execute(f"UPDATE lessons SET {', '.join(k + ' = ?' for k in changes)} WHERE id = ?",
                     [*changes.values(), current["id"]])
        # Its open predictions quote it: they say the new words (resolved ones keep theirs).
        predictions.reword_open(conn, {**current, "text": text})
    done = get_lesson(store, current["id"])
    done["replaced"] = kept["id"] if kept else None
    mine = not done.get("origin") or done["origin"] == ours  # a received lesson edited is ours now
    done["revoked_words"] = _revoked_twin(store, done, ours) if mine else None
    done["redacted"] = redacted
    done["cut"] = cut
    done["changed"] = True
    return done


def _revoked_twin(store: Store, lesson: dict[str, Any], ours: str | None) -> str | None:
    """The id of a revoked lesson of ours with this lesson's words (its hash), other than it,
    or None: words edited back to ones revoked earlier, which are never shared again."""
    for row in store.rows("SELECT id, origin FROM lessons WHERE hash = ? AND status = 'revoked' AND id != ? "
                          "ORDER BY updated DESC", (lesson["hash"], lesson["id"])):
        if not row["origin"] or row["origin"] == ours:
            return row["id"]
    return None


# The note of a lesson retired because the findings it was learned from were dropped when
# their sessions were read again (reread.py): newer detectors no longer find them there.
NOT_FOUND_AGAIN = "its findings were not found again when their sessions were re-read"


def drop_sources(conn: Any, dropped: Sequence[str]) -> list[str]:
    """Inside a write: findings a re-read dropped (reread.py: no detector finds them any more)
    leave the `sources` of the lessons naming them (`seen` counts them no more). A lesson left
    with no source by such drops alone was learned only from what was never there: when it is
    this memory's own (no origin: not received), active, and in the words it was made with (no
    draft other than its text: a person's edit, or a local model's rewording, is kept, as the
    merge pass keeps it), it is retired: status `vetoed` with the note NOT_FOUND_AGAIN and no
    vetoed.json record, so its words are not banned and `remem lessons restore` brings it back.
    Its strength loses what each dropped source added. Sources the lifecycle deleted stay named (lessons
    outlive their episodes), so a lesson with one of those left keeps going. Returns the ids
    retired."""
    gone = set(dropped)
    retired: list[str] = []
    if not gone:
        return retired
    stamp = clock.iso()
    for ids in chunks(list(dropped), 200):
        naming = " OR ".join("instr(sources, ?) > 0" for _ in ids)
        rows = conn.execute(f"SELECT id, sources, seen, strength, status, origin, text, draft FROM lessons "
                            f"WHERE {naming}", [f'"{i}"' for i in ids]).fetchall()
        for lid, sources, seen, strength, status, origin, text, draft in rows:
            before = loads_list(sources)
            kept = [s for s in before if s not in gone]
            if len(kept) == len(before):
                continue
            lost = len(before) - len(kept)
            # A source added one to both: a finding dropped and found again later (a live
            # transcript read whole again) must not leave the lesson stronger each time.
            fields = {"sources": dumps(kept), "seen": max(1, int(seen or 1) - lost),
                      "strength": max(1.0, float(strength or 1.0) - lost), "updated": stamp}
            if not kept and status == "active" and not origin and (not draft or draft == text):
                fields.update(status="vetoed", note=NOT_FOUND_AGAIN)
                retired.append(lid)
            conn.execute(f"UPDATE lessons SET {', '.join(k + ' = ?' for k in fields)} WHERE id = ?",
                         [*fields.values(), lid])
    return retired
