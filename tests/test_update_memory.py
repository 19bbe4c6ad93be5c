"""update_memory: fields change, text is re-embedded, raising arousal never makes a flashbulb."""

from __future__ import annotations

import pytest

from remem.engine.memories import remember, update_memory
from remem.errors import NotFound


def test_update_changes_fields_and_reembeds(store) -> None:
    m = remember(store, "use uv to install packages", tags=["python"])
    before = store.episode(m["id"])["embedding"]
    out = update_memory(store, m["id"], text="pin numpy below 2", tags=["deps", "Numpy"], importance=0.9)
    assert out["gist"] == "pin numpy below 2"
    assert out["tags"] == ["deps", "numpy"]
    assert out["importance"] == 0.9
    assert store.episode(m["id"])["embedding"] != before
    hits = store.rows("SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH 'numpy'")
    assert len(hits) == 1


def test_raising_arousal_later_is_not_a_flashbulb(store) -> None:
    m = remember(store, "a calm note", arousal=0.1, short_term=True)
    out = update_memory(store, m["id"], arousal=0.95)
    assert out["arousal"] == 0.95
    assert out["flashbulb_until"] is None
    assert out["memory_type"] == "short_term"


def test_bad_updates_are_refused(store) -> None:
    m = remember(store, "x marks the spot")
    with pytest.raises(ValueError, match="importance"):
        update_memory(store, m["id"], importance=3)
    with pytest.raises(ValueError, match="nothing to update"):
        update_memory(store, m["id"])
    with pytest.raises(ValueError, match="cannot update"):
        update_memory(store, m["id"], kind="error")
    with pytest.raises(NotFound):
        update_memory(store, "nope-nope", title="t")
