"""Changing and reading stored memories (engine.memories): update_memory's fields change, its
text is re-embedded, raising arousal never makes a flashbulb; add_tags keeps the tags there and
normalises new ones; episodes_by_ids keeps the order given."""

from __future__ import annotations

import pytest

from remem.engine.memories import remember, update_memory
from remem.engine.store import Store
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


def test_new_text_brings_a_title_made_from_the_old_text_along(store) -> None:
    """The title made from the old first line stayed, so the old words were still found."""
    from remem.engine.recall import recall

    made = remember(store, "giraffe feeding schedule at nine")
    updated = update_memory(store, made["id"], text="penguin walk at noon")
    assert updated["title"] == "penguin walk at noon"
    hit = recall(store, "giraffe", 1, mode="keyword", touch=False)
    assert not hit or hit[0]["parts"]["keyword"] == 0.0
    named = remember(store, "the deploy steps", title="Deploy checklist")
    assert update_memory(store, named["id"], text="new deploy steps")["title"] == "Deploy checklist"


def test_remember_keeps_a_given_title_whole_and_tags_as_every_path_does(store) -> None:
    title = "T" * 200
    made = remember(store, "some text", title=title, tags=["", "  ", "Py", "py"])
    assert made["title"] == title  # the store's cap is 300, marked when cut; 120 was silent
    assert store.episode(made["id"])["tags"] == ["py"]
    longer = remember(store, "more text", title="X" * 400)
    assert len(longer["title"]) == 300 and longer["title"].endswith("[truncated by remem]")


# --------------------------------------------------------------------------- tags and rows by id

def _episodes(store: Store) -> None:
    store.put_episodes([
        {"id": "aaaa1111", "kind": "note", "title": "one", "gist": "one", "at": "2026-01-01T00:00:00+00:00",
         "tags": ["x"]},
        {"id": "bbbb2222", "kind": "note", "title": "two", "gist": "two", "at": "2026-01-02T00:00:00+00:00"},
    ])


def test_add_tags_keeps_the_ones_there_and_normalises(store):
    from remem.engine import memories

    _episodes(store)
    done = memories.add_tags(store, "aaaa1111", [" Python", "tooling ", "", "x"])
    assert done["tags"] == ["python", "tooling", "x"] and "embedding" not in done
    assert memories.add_tags(store, "aaaa", ["more"])["tags"] == ["more", "python", "tooling", "x"]  # a prefix
    assert memories.add_tags(store, "bbbb2222", [])["tags"] == []
    with pytest.raises(NotFound):
        memories.add_tags(store, "nowhere-at-all", ["t"])


def test_episodes_by_ids_keeps_the_order_given_and_leaves_out_the_missing(store):
    from remem.engine import memories

    _episodes(store)
    rows = memories.episodes_by_ids(store, ["bbbb2222", "gone", "aaaa1111", "bbbb2222"])
    assert [r["id"] for r in rows] == ["bbbb2222", "aaaa1111"]
    assert rows[1]["tags"] == ["x"] and rows[0]["tags"] == []
    assert {"kind", "title", "cwd", "at", "strength", "recalls"} <= set(rows[0]) and "embedding" not in rows[0]
    assert memories.episodes_by_ids(store, []) == []


def test_new_text_longer_than_a_memory_holds_is_capped_as_remember_caps_it(store):
    from remem.engine.memories import remember, update_memory
    from remem.engine.store import MAX_DETAIL, MAX_GIST, episode_hash

    memory = remember(store, "the release note")
    long_text = " ".join(f"line {i} of the changelog" for i in range(10_000))  # ~230,000 chars
    update_memory(store, memory["id"], text=long_text)
    row = store.one("SELECT title, gist, detail, content_hash FROM episodes WHERE id = ?", (memory["id"],))
    assert len(row["gist"]) == MAX_GIST and len(row["detail"]) == MAX_DETAIL
    assert row["content_hash"] == episode_hash(row["title"], row["gist"], row["detail"])
    again = remember(store, long_text)  # the same words remembered anew are stored alike
    new = store.one("SELECT gist, detail FROM episodes WHERE id = ?", (again["id"],))
    assert (new["gist"], new["detail"]) == (row["gist"], row["detail"])
