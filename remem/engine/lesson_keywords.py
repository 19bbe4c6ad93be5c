"""Keyword evidence for lessons on the episodes' BM25 scale.

FTS5's bm25() takes its statistics from the table it runs on. Over `lessons_fts` a word's IDF
came from the few lessons (a word in half of them, or any word when there is one lesson,
weighed next to nothing) and a lesson's length was set against the lessons' average, while
recall divides every BM25, episode or lesson, by one best. So a lesson scored here with the
formula FTS5 uses for the episodes (k1 1.2, b 0.75, IDF log((N − n + 0.5) / (n + 0.5)), 1e-6
when not above 0) and the episodes' statistics: N and the average length from `episodes_fts`,
n the episodes a query word matches. The lesson's text counts as a gist (`recall.bm25_gist`).
A lesson and an episode with the same words then get about the same keyword evidence.

Words are split and stemmed by FTS5 itself (the same `porter unicode61` tokenizer, in a private
in-memory table), so a query word matches a lesson exactly when MATCH would match it.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Callable, Iterable

K1, B = 1.2, 0.75  # FTS5's bm25() constants
_tokenizer: sqlite3.Connection | None = None
_tokenizer_lock = threading.Lock()
_tokens_of: dict[str, tuple[str, ...]] = {}


def tokens(texts: Iterable[str]) -> list[tuple[str, ...]]:
    """Each text as the tokens FTS5 indexes for it (porter unicode61), in order; cached."""
    global _tokenizer
    texts = list(texts)
    known = {t: hit for t in set(texts) if (hit := _tokens_of.get(t)) is not None}
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        with _tokenizer_lock:
            if _tokenizer is None:
                conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
                conn.execute("CREATE VIRTUAL TABLE words USING fts5(text, tokenize='porter unicode61')")
                conn.execute("CREATE VIRTUAL TABLE words_at USING fts5vocab(words, instance)")
                _tokenizer = conn
            conn = _tokenizer
            conn.execute("DELETE FROM words")
            conn.executemany("INSERT INTO words(rowid, text) VALUES (?, ?)", enumerate(missing))
            found: dict[int, list[tuple[int, str]]] = {}
            for doc, offset, term in conn.execute("SELECT doc, offset, term FROM words_at"):
                found.setdefault(doc, []).append((offset, term))
            conn.execute("DELETE FROM words")
            if len(_tokens_of) > 20_000:
                _tokens_of.clear()
            for i, text in enumerate(missing):
                known[text] = _tokens_of[text] = tuple(term for _, term in sorted(found.get(i, ())))
    return [known[t] for t in texts]


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """An SQLite varint (FTS5's record format) at `at`: (value, next offset)."""
    value = 0
    for i in range(8):
        byte = blob[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | blob[at + 8], at + 9


def averages(conn: sqlite3.Connection, table: str = "episodes_fts") -> tuple[int, float]:
    """(rows, average tokens per row over all columns) of an FTS5 table, read from its
    averages record (what bm25() itself reads); (0, 0.0) when it has none yet."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0.0
    blob = bytes(row[0])
    rows, at = _varint(blob, 0)
    size = 0
    while at < len(blob):
        n, at = _varint(blob, at)
        size += n
    return rows, (size / rows if rows else 0.0)


def idf(rows: int, hits: int) -> float:
    """FTS5's IDF: log((N − n + 0.5) / (n + 0.5)), and 1e-6 when that is not above 0."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > 0 else 0.0
    return value if value > 0 else 1e-6


def _occurrences(text: tuple[str, ...], phrase: tuple[str, ...]) -> int:
    if len(phrase) == 1:
        return text.count(phrase[0])
    width = len(phrase)
    return sum(1 for i in range(len(text) - width + 1) if text[i:i + width] == phrase)


def lesson_bm25(conn: sqlite3.Connection, terms: list[str], lessons: dict[int, str],
                matches: Callable[[str, int], int], weight: float = 1.0) -> dict[int, float]:
    """seq -> BM25 (higher is better, as −bm25() of the episodes) of each lesson that holds a
    query term, on the episodes' scale. `matches(term, ceiling)` counts the episodes a term
    matches, at least up to `ceiling` (past half the episodes the IDF is the floor anyway)."""
    if not terms or not lessons:
        return {}
    seqs = list(lessons)
    texts = tokens(lessons[s] for s in seqs)
    phrases = tokens(terms)
    tf: dict[tuple[int, int], int] = {}  # (lesson index, term index) -> occurrences
    for i, text in enumerate(texts):
        for j, phrase in enumerate(phrases):
            if phrase:
                n = _occurrences(text, phrase)
                if n:
                    tf[(i, j)] = n
    if not tf:
        return {}
    rows, avgdl = averages(conn)
    ceiling = rows // 2 + 1
    weights = {j: idf(rows, min(matches(terms[j], ceiling), ceiling)) for j in {j for _, j in tf}}
    out: dict[int, float] = {}
    for (i, j), n in tf.items():
        f = weight * n
        norm = 1.0 - B + B * (len(texts[i]) / avgdl) if avgdl > 0 else 1.0
        out[seqs[i]] = out.get(seqs[i], 0.0) + weights[j] * f * (K1 + 1.0) / (f + K1 * norm)
    return out
