"""Reading a session again: what ingest made of it before is replaced, not added to.

Finding ids derive from their titles, so a version that titles a finding otherwise reads the
same failure as a new one: it would be stored beside the old copy, and the sleep, counting
two, would learn from one failure. A session read whole replaces what ingest made of it:

- made by ingest: a finding of this session and source whose id is still the one its title
  gives (a title edited by hand gives another: the person's, never touched here);
- stale: made by ingest and not among what the session yields now;
- a stale finding whose evidence (its detail, else its text) is that of a new finding takes
  the new id, title, text and date in place (`apply_replacements`): its seq (so the sleep
  does not count it again), strength, recalls, archived state, tags added by hand,
  connections and the lessons naming it as a source all stay with it;
- a stale finding no detector finds any more is deleted, unless the person touched it (a tag
  ingest does not write, a connection made by hand, importance raised or feelings changed,
  made short-term or flashbulb): then it is kept as it is. Archived or recalled is no touch:
  a finding the detectors no longer make is a wrong one, and recall should stop offering it.
  It leaves the lessons naming it as a source, and a lesson of this memory's own learned from
  such findings alone is retired (lessons.drop_sources): what it says was never there.

Ingest reads a file again when it changed, and when an older version of the detectors read
it (session_episodes.DETECTOR_VERSION), so an upgrade's fixes reach the sessions read before.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from remem.engine.detect_common import FINDING_KINDS, FINDING_WEIGHT
from remem.engine.lessons import drop_sources
from remem.engine.session import Session
from remem.engine.store import Store, chunks, normalise_tag, prepare_episode, stable_id

# The tags ingest writes on findings (detect_*.py); any other was added by hand.
_INGEST_TAG = re.compile(r"^(refused|interrupt|unconfirmed|environment|"
                         r"(action|pushback|error|tool|said-by):.*)$")


def made_by_ingest(row: dict[str, Any], session: Session) -> bool:
    return row["kind"] in FINDING_KINDS and row["source"] == session.source \
        and row["id"] == stable_id(session.id, row["kind"], row["title"])


def replace_stale(store: Store, session: Session, known: dict[str, dict[str, Any]], yielded: set[str],
                   fresh: list[dict[str, Any]]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """(old id, new finding) pairs to rekey, and the ids of stale findings to delete."""
    stale = [r for r in known.values() if r["id"] not in yielded and made_by_ingest(r, session)]
    if not stale:
        return [], []
    new = [ep for ep in fresh if ep["kind"] != "session"]
    pairs: list[tuple[str, dict[str, Any]]] = []
    taken: set[int] = set()
    # Closest evidence first: the same detail and text, then the same detail, then the same text.
    for key in (lambda e: (e["kind"], e["detail"], e["gist"]), lambda e: (e["kind"], e["detail"]),
                lambda e: (e["kind"], e["gist"])):
        olds: dict[Any, list[dict[str, Any]]] = {}
        for row in stale:
            if row["id"] not in {old for old, _ in pairs}:
                olds.setdefault(key(row), []).append(row)
        news: dict[Any, list[dict[str, Any]]] = {}
        for ep in new:
            if id(ep) not in taken:
                news.setdefault(key(ep), []).append(ep)
        for k, rows in olds.items():
            if not k[-1] or k not in news or len(rows) != 1 or len(news[k]) != 1:
                continue  # no evidence to go by, or more than one of either: not a match
            pairs.append((rows[0]["id"], news[k][0]))
            taken.add(id(news[k][0]))
    paired = {old for old, _ in pairs}
    unpaired = [r for r in stale if r["id"] not in paired]
    touched = _touched(store, unpaired) if unpaired else set()
    return pairs, [r["id"] for r in unpaired if r["id"] not in touched]


def _touched(store: Store, rows: list[dict[str, Any]]) -> set[str]:
    """Which of these findings the person did something to (see the module's doc)."""
    out: set[str] = set()
    for ids in chunks([r["id"] for r in rows], 400):
        marks = ",".join("?" * len(ids))
        out |= {r["memory_id"] for r in store.rows(
            f"SELECT memory_id, tag FROM tags WHERE memory_id IN ({marks})", ids) if not _INGEST_TAG.match(r["tag"])}
        for r in store.rows(f"SELECT src, dst FROM connections WHERE origin = 'explicit' "
                            f"AND (src IN ({marks}) OR dst IN ({marks}))", ids + ids):
            out |= {r["src"], r["dst"]}
        for r in store.rows(f"SELECT id, kind, importance, valence, arousal, memory_type, expires_at, "
                            f"flashbulb_until FROM episodes WHERE id IN ({marks})", ids):
            made = {"importance": 0.5, "valence": 0.0, "arousal": 0.0, **FINDING_WEIGHT.get(r["kind"], {})}
            # importance decays by itself (lifecycle): only a raise is the person's
            if float(r["importance"]) > made["importance"] + 1e-9 \
                    or any(abs(float(r[k]) - made[k]) > 1e-9 for k in ("valence", "arousal")) \
                    or r["memory_type"] != "long_term" or r["expires_at"] or r["flashbulb_until"]:
                out.add(r["id"])
    return out


def apply_replacements(conn: sqlite3.Connection, rekeyed: list[tuple[str, dict[str, Any]]],
                        dropped: list[str], redated: list[tuple[str, str]]) -> list[str]:
    """Inside the session's write: stale findings take their new ids (everything that names
    them follows), the ones no longer found go (and leave the lessons naming them), and
    re-dated ones take their new time. Returns the ids of the lessons retired so."""
    for old, ep in rekeyed:
        row = prepare_episode(ep)
        conn.execute("UPDATE episodes SET id = ?, title = ?, gist = ?, detail = ?, at = ?, content_hash = ?, "
                     "space = ?, embedding = ? WHERE id = ?",
                     (row["id"], row["title"], row["gist"], row["detail"], row["at"], row["content_hash"],
                      row["space"], row["embedding"], old))
        new_tags = {normalise_tag(t) for t in ep.get("tags") or ()}
        for (tag,) in conn.execute("SELECT tag FROM tags WHERE memory_id = ?", (old,)).fetchall():
            if _INGEST_TAG.match(tag) and tag not in new_tags:
                conn.execute("DELETE FROM tags WHERE memory_id = ? AND tag = ?", (old, tag))
        conn.execute("UPDATE OR IGNORE tags SET memory_id = ? WHERE memory_id = ?", (row["id"], old))
        conn.execute("DELETE FROM tags WHERE memory_id = ?", (old,))
        conn.executemany("INSERT OR IGNORE INTO tags (memory_id, tag) VALUES (?, ?)",
                         [(row["id"], t) for t in sorted(new_tags)])
        conn.execute("UPDATE OR IGNORE connections SET src = ? WHERE src = ?", (row["id"], old))
        conn.execute("UPDATE OR IGNORE connections SET dst = ? WHERE dst = ?", (row["id"], old))
        conn.execute("DELETE FROM connections WHERE src = ? OR dst = ?", (old, old))
        conn.execute("UPDATE lessons SET sources = replace(sources, ?, ?) WHERE instr(sources, ?) > 0",
                     (f'"{old}"', f'"{row["id"]}"', f'"{old}"'))
    for chunk in chunks(dropped, 400):
        marks = ",".join("?" * len(chunk))
        conn.execute(f"DELETE FROM episodes WHERE id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM tags WHERE memory_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM connections WHERE src IN ({marks}) OR dst IN ({marks})", chunk + chunk)
    conn.executemany("UPDATE episodes SET at = ? WHERE id = ?", redated)
    return drop_sources(conn, dropped)
