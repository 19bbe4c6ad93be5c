"""The redaction sweep: secrets an older release stored are redacted where they lie.

Ingest redacts secrets as episodes are made (redaction.redact_secrets, in every Finding and
every explicit event), but what a release before that stored keeps them in titles, gists and
details until its file happens to be read again, and an explicit event never is; lessons made
from such episodes may quote them. Recall, MCP and hooks would hand them to agents.

An older release also kept the query each lesson choice was made for (`primes`: a hook's
prompt, a proxied question) as it came, keys included.

The sleep's first pass (`redact`) reads those rows once, in batches, and rewrites only the ones
whose words change, with the redaction ingest uses:

- an episode: title, gist and detail redacted and capped as ingest stores them, its content
  hash made anew and, when the words it is embedded from changed, its vector. A finding whose
  id came from its title (as ingest names findings) takes the id its new title gives, as a
  re-read of its session would (reread.apply_replacements: its seq, tags, connections and the
  lessons citing it follow), so reading that session again adds no twin beside it.
- a lesson this memory made: text and draft, its hash and vector anew, and its predictions'
  words. A peer's lesson is left as received (checked then; its hash is its identity there).
- a lesson choice (`primes`): its query, as prime keeps one now (prime.stored_query). The
  queries joined the sweep a release later (migration 10 marks them), so their older writers
  are told apart from the others'.

The full-text indexes follow by their triggers, the vector caches by `vector_changes`.

How far the sweep got is the `redaction_sweep` table (migration 007): per table, the last seq
read (`checked`) and the last one that may hold a secret (`upto`: the newest row when a
redacting release first opened the memory). Progress is written with each batch, so an
interrupted sleep goes on where it stopped; once `checked` reaches `upto`, nothing is read
again. An import may bring rows of any age, new or over existing ones: it starts the sweep
over (`rescan`). A restored backup carries its own marks, or gets them from the migration.

An older process that had the memory open when it was upgraded (a `remem serve`, the TUI, an
ingest or a sleep running across the upgrade) goes on writing unredacted rows: its migrations
were checked when it opened the memory, never again. So in a memory an older release made,
each sweep first moves `upto` to the newest row (`extend`): every row stored since the last
sweep is read once, the nightly increment alone, and written only if it holds a secret. A
memory this release made (every `upto` still 0: no older row when the sweep began, and no
import since) never had an older writer, since an older release refuses to open it
("written by a newer remem"): its sweep reads nothing.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from remem.engine import clock
from remem.engine.redaction import redact_secrets
from remem.engine.store import MAX_DETAIL, MAX_GIST, MAX_TITLE, Store, cap, episode_hash, stable_id

if TYPE_CHECKING:
    from remem.engine.sleep_passes import Context, Progress

BATCH = 500
# The rows the sweep reads: every episode, the lessons this memory made (not a peer's), and
# the queries the lesson choices (`primes`) were made for.
SCOPE = {"episodes": "TRUE", "lessons": "origin IS NULL", "primes": "query IS NOT NULL"}
# What agents are handed (recall, hooks, MCP): what `remem doctor` warns of while unread.
RECALLED = ("episodes", "lessons")
_GROUPS = (RECALLED, ("primes",))  # redacted as written since one release, then since a later one
_SEQ = {"episodes": "seq", "lessons": "seq", "primes": "id"}  # each table's row order
_COLUMNS = {"episodes": "seq, id, session_id, kind, title, gist, detail, at",
            "lessons": "seq, id, kind, text, draft", "primes": "id AS seq, query"}
_EPISODE_FIELDS = (("title", MAX_TITLE), ("gist", MAX_GIST), ("detail", MAX_DETAIL))


# Of a text longer than it is kept, redaction reads the part kept and this much past it: a
# secret that starts before the cut is seen whole (the longest one a pattern reads from its
# telling start to its end, a private key block, is shorter), so it goes whole.
REDACT_MARGIN = 8192


def redacted(text: str | None, limit: int) -> str:
    """The text as ingest stores it: secrets redacted, then capped. Capping can leave a
    key-like word at the cut, so both go again until nothing changes.

    Of a text longer than `limit` + REDACT_MARGIN only the start is read (redacting a pasted
    37 MB log whole took a minute and a half): the part the cap keeps and REDACT_MARGIN past it, more only
    when redaction shortened it so that the cap would reach the end of what was read, where a
    secret cut in two may lie."""
    text = text or ""
    size = limit + REDACT_MARGIN
    while size < len(text):
        done = redact_secrets(text[:size])
        if len(done) >= limit + REDACT_MARGIN // 2:  # the cap leaves the end read (and any cut secret) out
            text = cap(done, limit)
            break
        size *= 2
    for _ in range(4):
        again = cap(redact_secrets(text), limit)
        if again == text:
            break
        text = again
    return text


def marks(store: Store) -> dict[str, dict[str, Any]]:
    """Per table: {checked, upto, round} (see the module's doc)."""
    return {r["tbl"]: r for r in store.rows("SELECT tbl, checked, upto, round FROM redaction_sweep")}


def pending(store: Store, tables: Iterable[str] = RECALLED) -> dict[str, int]:
    """How many rows of each table the sweep has still to read: a range count on seq per
    table, nothing read once the sweep is done (for `remem doctor`: what agents are handed)."""
    out: dict[str, int] = {}
    for table, mark in marks(store).items():
        if table in SCOPE and table in tables and mark["checked"] < mark["upto"]:
            seq = _SEQ[table]
            out[table] = int(store.scalar(
                f"SELECT count(*) FROM {table} WHERE {seq} > ? AND {seq} <= ? AND {SCOPE[table]}",
                (mark["checked"], mark["upto"])) or 0)
    return {t: n for t, n in out.items() if n}


def extend(store: Store) -> None:
    """Before a sweep, in a memory an older release made: the rows stored since the last sweep
    are read too (see the module's doc). Two max(seq) lookups; a write only when rows came."""
    now = marks(store)
    # Per group of tables a release began to redact at once: one with rows from before (upto
    # above 0) may have had an older writer since; a group without is this release's alone.
    older = [table for group in _GROUPS if any(now.get(t, {}).get("upto", 0) > 0 for t in group)
             for table in group if table in now]
    if not older:
        return  # made by this release: no older process ever wrote here
    newest = {table: int(store.scalar(f"SELECT coalesce(max({_SEQ[table]}), 0) FROM {table}") or 0)
              for table in older}
    grown = {table: seq for table, seq in newest.items() if seq > now[table]["upto"]}
    if grown:
        with store.write() as conn:
            for table, seq in grown.items():
                conn.execute("UPDATE redaction_sweep SET upto = max(upto, ?) WHERE tbl = ?", (seq, table))


def rescan(conn: sqlite3.Connection) -> None:
    """Inside a write that brought rows of any age in (an import): the next sleep reads every
    row again (an import brings memories and lessons, no lesson choices). `round` grows so a
    sweep running meanwhile records no progress over this."""
    for table in RECALLED:
        conn.execute(f"UPDATE redaction_sweep SET checked = 0, round = round + 1, "
                     f"upto = (SELECT coalesce(max({_SEQ[table]}), 0) FROM {table}) WHERE tbl = ?", (table,))


def sweep(ctx: "Context") -> Iterator["Progress"]:
    """The sleep pass: every row left to read, BATCH at a time; counts in ctx.counts["redact"]
    (rows checked, episodes and lessons redacted, findings renamed)."""
    from remem.engine.sleep_passes import Progress

    store = ctx.store
    extend(store)
    total = sum(pending(store, SCOPE).values())
    counts = ctx.counts["redact"] = {"checked": 0, "episodes": 0, "renamed": 0, "lessons": 0, "primes": 0}
    yield Progress("redact", 0, total, f"{total} rows to check for secrets an older remem stored")
    for table, mark in marks(store).items():
        checked = mark["checked"]
        while table in SCOPE and checked < mark["upto"]:
            seq = _SEQ[table]
            rows = store.rows(f"SELECT {_COLUMNS[table]} FROM {table} WHERE {seq} > ? AND {seq} <= ? "
                              f"AND {SCOPE[table]} ORDER BY {seq} LIMIT ?", (checked, mark["upto"], BATCH))
            last = rows[-1]["seq"] if len(rows) == BATCH else mark["upto"]  # a short batch is the last
            if table == "episodes":
                changed = _episode_changes(ctx, rows)
            elif table == "lessons":
                changed = _lesson_changes(ctx, rows)
            else:
                changed = _prime_changes(rows)
            with store.write() as conn:
                if table == "episodes":
                    _write_episodes(conn, changed, counts)
                elif table == "lessons":
                    _write_lessons(conn, changed, counts)
                else:
                    _write_primes(conn, changed, counts)
                # Progress only in the round this sweep began in: an import meanwhile starts over.
                kept = conn.execute("UPDATE redaction_sweep SET checked = ? WHERE tbl = ? AND round = ?",
                                    (last, table, mark["round"])).rowcount
            counts["checked"] += len(rows)
            yield Progress("redact", min(counts["checked"], total), total,
                           f"{counts['checked']} of {total} checked")
            if not kept:
                return
            checked = last


# --------------------------------------------------------------------------- episodes

Change = tuple[dict[str, Any], dict[str, Any]]  # (the row as read, its new values)


def _episode_changes(ctx: "Context", rows: list[dict[str, Any]]) -> list[Change]:
    """The rows redaction changes, with new vectors where the words they are embedded from
    changed (made here, outside the write)."""
    from remem.engine.sleep_passes import episode_text

    out = []
    for row in rows:
        new = {name: redacted(row[name], limit) for name, limit in _EPISODE_FIELDS}
        if any(new[name] != (row[name] or "") for name, _ in _EPISODE_FIELDS):
            out.append((row, new))
    stale = [(row, new) for row, new in out if episode_text({**row, **new}) != episode_text(row)]
    if stale:
        from remem.engine.embed import to_blob

        embedder = ctx.embedder
        vectors = embedder.encode([episode_text({**row, **new}) for row, new in stale])
        for (row, new), vector in zip(stale, vectors):
            new.update(space=embedder.space, embedding=to_blob(vector))
    return out


def _new_id(conn: sqlite3.Connection, row: dict[str, Any], title: str) -> str:
    """The id the episode goes on with: a finding ingest named after its title takes the name
    of its new title (the id a re-read of its session gives it), unless another memory has
    that id or it was deleted for good; any other episode keeps its id."""
    from remem.engine.detect_common import FINDING_KINDS

    sid = row["session_id"]
    if row["kind"] not in FINDING_KINDS or not sid or row["id"] != stable_id(sid, row["kind"], row["title"]):
        return row["id"]
    new_id = stable_id(sid, row["kind"], title)
    taken = conn.execute("SELECT 1 FROM episodes WHERE id = ? UNION ALL SELECT 1 FROM forgotten WHERE id = ?",
                         (new_id, new_id)).fetchone()
    return row["id"] if taken else new_id


def _write_episodes(conn: sqlite3.Connection, changed: list[Change], counts: dict[str, int]) -> None:
    """Inside the batch's write: each changed row that still holds what was read (what an
    ingest or an edit wrote meanwhile is this release's or the person's, and stays)."""
    from remem.engine.reread import apply_replacements

    for row, new in changed:
        if not conn.execute("SELECT 1 FROM episodes WHERE seq = ? AND id = ? AND title = ? AND gist = ? "
                            "AND detail = ?", [row[k] for k in ("seq", "id", "title", "gist", "detail")]
                            ).fetchone():
            continue
        new_id = _new_id(conn, row, new["title"])
        if new_id != row["id"]:
            # As a re-read of its session would: tags, connections and citing lessons follow.
            if "embedding" not in new:
                new.update(conn.execute("SELECT space, embedding FROM episodes WHERE seq = ?", (row["seq"],)
                                        ).fetchone())
            tags = [t for (t,) in conn.execute("SELECT tag FROM tags WHERE memory_id = ?", (row["id"],))]
            apply_replacements(conn, [(row["id"], {**new, "id": new_id, "kind": row["kind"], "at": row["at"],
                                                   "tags": tags})], [], [])
            counts["renamed"] += 1
        else:
            sets = {**new, "content_hash": episode_hash(new["title"], new["gist"], new["detail"])}
            conn.execute(f"UPDATE episodes SET {', '.join(k + ' = ?' for k in sets)} WHERE seq = ?",
                         [*sets.values(), row["seq"]])
        counts["episodes"] += 1


# --------------------------------------------------------------------------- lessons

def _lesson_changes(ctx: "Context", rows: list[dict[str, Any]]) -> list[Change]:
    """The lessons redaction changes; a new text brings its hash, its vector and its
    predictions' new words (made here, outside the write)."""
    from remem.engine.embed import to_blob
    from remem.engine.lessons import MAX_LESSON, lesson_hash, vector_text

    out = []
    for row in rows:
        new = {name: redacted(row[name], MAX_LESSON) for name in ("text", "draft") if row[name] is not None}
        new = {name: words for name, words in new.items() if words != row[name]}
        if new:
            out.append((row, new))
    reworded = [(row, new) for row, new in out if "text" in new]
    if reworded:
        embedder = ctx.embedder
        vectors = embedder.encode([vector_text(new["text"], row["kind"]) for row, new in reworded])
        for (row, new), vector in zip(reworded, vectors):
            new.update(hash=lesson_hash(new["text"], row["kind"]), space=embedder.space,
                       embedding=to_blob(vector))
            new["predictions"] = _prediction_changes(ctx, row["id"])
    return out


def _prediction_changes(ctx: "Context", lesson_id: str) -> list[tuple[str, str, str, str, bytes]]:
    """(new text, space, vector, id, text as read) of each of the lesson's predictions whose
    words change: a prediction quotes its lesson."""
    from remem.engine.embed import to_blob

    rows = ctx.store.rows("SELECT id, text FROM predictions WHERE lesson_id = ?", (lesson_id,))
    rows = [(r["id"], r["text"], redact_secrets(r["text"])) for r in rows]
    rows = [r for r in rows if r[1] != r[2]]
    if not rows:
        return []
    embedder = ctx.embedder
    return [(new, embedder.space, to_blob(vector), pid, old)
            for (pid, old, new), vector in zip(rows, embedder.encode([r[2] for r in rows]))]


def _write_lessons(conn: sqlite3.Connection, changed: list[Change], counts: dict[str, int]) -> None:
    """Inside the batch's write: each changed lesson whose words are still those read (an edit
    or a merge meanwhile wins)."""
    stamp = clock.iso()
    for row, new in changed:
        if not conn.execute("SELECT 1 FROM lessons WHERE seq = ? AND text = ? AND draft IS ?",
                            (row["seq"], row["text"], row["draft"])).fetchone():
            continue
        predictions = new.pop("predictions", [])
        fields = {**new, "updated": stamp}
        conn.execute(f"UPDATE lessons SET {', '.join(k + ' = ?' for k in fields)} WHERE seq = ?",
                     [*fields.values(), row["seq"]])
        conn.executemany("UPDATE predictions SET text = ?, space = ?, embedding = ? WHERE id = ? AND text = ?",
                         predictions)
        counts["lessons"] += 1


# --------------------------------------------------------------------------- primes

def _prime_changes(rows: list[dict[str, Any]]) -> list[Change]:
    """The queries redaction changes, as prime keeps a query now (prime.stored_query)."""
    from remem.engine.prime import stored_query

    return [(row, {"query": new}) for row in rows if (new := stored_query(row["query"])) != row["query"]]


def _write_primes(conn: sqlite3.Connection, changed: list[Change], counts: dict[str, int]) -> None:
    for row, new in changed:
        counts["primes"] += conn.execute("UPDATE primes SET query = ? WHERE id = ? AND query = ?",
                                         (new["query"], row["seq"], row["query"])).rowcount
