"""A row damaged by hand or by another tool (a number column holding text, a time that is no
time) never fails a search: the row counts as very old and weak, the rest rank as always."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize("column, value", [("importance", "x"), ("strength", "abc"), ("at", "not a date"),
                                           ("flashbulb_until", "soon")])
def test_one_damaged_row_never_fails_a_search(store: Any, column: str, value: str) -> None:
    from remem.engine.memories import remember
    from remem.engine.recall import recall

    damaged = remember(store, "the release checklist lives in docs/RELEASE.md")
    kept = remember(store, "run the release checklist before tagging")
    with store.conn:
        store.conn.execute(f"UPDATE episodes SET {column} = ? WHERE id = ?", (value, damaged["id"]))
    for mode in ("hybrid", "keyword", "semantic"):
        hits = recall(store, "release checklist", 5, mode=mode, touch=False)
        ids = [h["id"] for h in hits]
        assert kept["id"] in ids and damaged["id"] in ids, (mode, ids)
