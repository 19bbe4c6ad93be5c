"""Delegation counts: asked-then-told-to-act and acted-then-stopped, by kind of action."""

from __future__ import annotations

import json

from remem.engine import delegation


def _correction(store, eid: str, tags: list[str], at: str = "2026-11-02T10:00:00+00:00") -> None:
    store.put_episodes([{"id": eid, "kind": "correction", "title": eid, "gist": eid, "at": at, "tags": tags}])


def test_offers_refusals_and_interrupts_are_counted_by_kind(store):
    offers = [
        {"kind": "run_tests", "answer": "approved", "at": "2026-11-02T09:00:00+00:00"},
        {"kind": "commit", "answer": "corrected", "at": "2026-11-02T09:10:00+00:00"},
        {"kind": "commit", "answer": "declined", "at": "2026-11-02T09:20:00+00:00"},
        {"kind": "edit", "answer": "other", "at": "2026-11-02T09:30:00+00:00"},
    ]
    with store.write() as conn:
        conn.execute("INSERT INTO sessions (id, path, offers) VALUES ('s1', '/x.jsonl', ?)", (json.dumps(offers),))
    _correction(store, "r1", ["refused", "action:push"])
    _correction(store, "r2", ["refused", "action:push"])
    _correction(store, "i1", ["pushback:interrupt"])
    _correction(store, "plain", ["pushback:no"])
    counts = delegation.count(store)
    assert counts["asked_told_to_act"] == 2
    assert counts["acted_stopped"] == 3
    assert counts["by_kind"]["run_tests"]["asked_told_to_act"] == 1
    assert counts["by_kind"]["commit"] == {"asked_told_to_act": 1, "acted_stopped": 0}
    assert counts["by_kind"]["push"]["acted_stopped"] == 2
    assert counts["by_kind"]["interrupted"]["acted_stopped"] == 1
    later = delegation.count(store, since="2026-11-02T09:15:00+00:00")
    assert later["asked_told_to_act"] == 0 and later["acted_stopped"] == 3


def test_morning_report_shows_delegation_and_the_measures(store):
    from remem.engine.render_morning import morning_report

    _correction(store, "r1", ["refused", "action:install"])
    text = morning_report(store, {}, 0, [])
    assert "Acted, then stopped: 1" in text and "install" in text
    assert "Repeat-yourself rate" in text and "Primed vs held out" in text
