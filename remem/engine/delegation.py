"""Delegation counts for the morning report: where the agent asked when it could have acted,
and where it acted when it should have asked, by kind of action.

- asked, then told to act: an offer to act ("Shall I …?") that the person answered by telling
  it to go ahead (approved) or by pushing back on the asking (corrected) — sessions.offers.
- acted, then stopped: a tool call the person refused — correction episodes tagged `refused`,
  their kind of action in the `action:<kind>` tag — or an interrupt followed by pushback or a
  redirect (tagged `pushback:interrupt`; counted under "interrupted", since the store keeps the
  person's words, not which call was cut off). An interrupt followed by a plain instruction
  (tagged `unconfirmed`) may be a new task rather than a stop, so it is not counted.

Shown to the owner, never to agents.
"""

from __future__ import annotations

import json
from typing import Any

from remem.engine.store import Store

TOLD_TO_ACT = ("approved", "corrected")


def count(store: Store, since: str | None = None) -> dict[str, Any]:
    """{asked_told_to_act, acted_stopped, by_kind: {kind: {asked_told_to_act, acted_stopped}}}."""
    by_kind: dict[str, dict[str, int]] = {}

    def bump(kind: str, key: str) -> None:
        row = by_kind.setdefault(kind or "other", {"asked_told_to_act": 0, "acted_stopped": 0})
        row[key] += 1

    for row in store.rows("SELECT offers FROM sessions WHERE offers IS NOT NULL AND offers != '[]'"):
        try:
            offers = json.loads(row["offers"])
        except ValueError:
            continue
        for offer in offers if isinstance(offers, list) else []:
            if not isinstance(offer, dict) or offer.get("answer") not in TOLD_TO_ACT:
                continue
            if since and str(offer.get("at") or "") <= since:
                continue
            bump(str(offer.get("kind") or "other"), "asked_told_to_act")
    sql = (
        "SELECT e.id, (SELECT substr(t2.tag, 8) FROM tags t2 WHERE t2.memory_id = e.id "
        "AND t2.tag LIKE 'action:%' LIMIT 1) AS action FROM episodes e JOIN tags t "
        "ON t.memory_id = e.id AND t.tag = 'refused' WHERE e.kind = 'correction'"
    )
    params: list[Any] = []
    if since:
        sql += " AND e.at > ?"
        params.append(since)
    for row in store.rows(sql, params):
        bump(row["action"] or "other", "acted_stopped")
    sql = ("SELECT count(*) FROM episodes e JOIN tags t ON t.memory_id = e.id "
           "AND t.tag = 'pushback:interrupt' WHERE e.kind = 'correction'")
    interrupted = int(store.scalar(sql + (" AND e.at > ?" if since else ""), params) or 0)
    for _ in range(interrupted):
        bump("interrupted", "acted_stopped")
    return {
        "asked_told_to_act": sum(r["asked_told_to_act"] for r in by_kind.values()),
        "acted_stopped": sum(r["acted_stopped"] for r in by_kind.values()),
        "by_kind": by_kind,
    }
