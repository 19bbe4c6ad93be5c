"""The keyword half of relevance: a text's content words as an FTS5 query.

Shared by recall (episodes_fts) and prime (lessons_fts). Only `re` is imported, so the hook
path can use it without recall's start-up.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")  # any script: the FTS5 tokenizer is unicode61
STOP_WORDS = frozenset(
    "a an and are as at be but by did do does for from had has have he her him his how i if in "
    "into is it its me my of on or our she should so that the their them then there these they "
    "this to was we were what when where which who why will with would you your".split()
)


MAX_TERMS = 32  # words in one FTS5 query: each costs a read of its matches and a BM25 term


def fts_terms(text: str, limit: int = MAX_TERMS) -> list[str]:
    """The text's first `limit` distinct content words, in order (stop words left out; all
    words if that leaves none). Recall asks for more and keeps the rarest MAX_TERMS of them."""
    words = [w.lower() for w in _WORD.findall(text or "")]
    terms = [w for w in words if w not in STOP_WORDS] or words
    return list(dict.fromkeys(terms))[:limit]


def fts_query(text: str) -> str:
    """An FTS5 OR-query of the text's content words, each quoted."""
    return or_query(fts_terms(text))


def or_query(terms: list[str]) -> str:
    """An FTS5 OR-query of these words, each quoted."""
    return " OR ".join(f'"{t}"' for t in terms)
