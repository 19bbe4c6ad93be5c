"""The morning report render writes to morning.md: what the night did, for the person."""

from __future__ import annotations

from typing import Any

from remem.engine import clock
from remem.engine.store import Store


def morning_report(store: Store, events: dict[str, list[Any]], faded: int, vetoed: list[str]) -> str:
    """What the night did, for the person (not for agents)."""
    from remem.engine import delegation

    def lesson_line(lid: str) -> str:
        row = store.one("SELECT id, text, kind, seen FROM lessons WHERE id = ?", (lid,))
        return f"- {row['text']} ({row['kind']}, seen {row['seen']}×, {row['id']})" if row else f"- {lid}"

    def pred_line(pid: str) -> str:
        row = store.one("SELECT text, evidence FROM predictions WHERE id = ?", (pid,))
        if not row:
            return f"- {pid}"
        ev = f" — matched {row['evidence']}" if row.get("evidence") else ""
        return f"- {row['text']}{ev}"

    out = [f"# remem — morning report, {clock.now().strftime('%Y-%m-%d %H:%M')} UTC", ""]

    def block(title: str, lines: list[str], empty: str) -> None:
        out.append(f"## {title}")
        out.extend(lines[:30] or [empty])
        if len(lines) > 30:
            out.append(f"- … and {len(lines) - 30} more")
        out.append("")

    from remem.engine.lessons_pass import waiting, waiting_text

    # Written by a run whose lessons pass read every episode: all that is in no lesson waits.
    waits = waiting_text(waiting(store, watermark=int(store.scalar("SELECT max(seq) FROM episodes") or 0)))
    block("Learned", [lesson_line(i) for i in events.get("learned", [])], "Nothing new.")
    if waits:  # why nothing (or not all) was learned: after the lessons, never cut with them
        out.insert(len(out) - 1, f"- {waits}")
    grew = [i for i in events.get("grew", []) if i not in events.get("learned", [])]
    block("Seen again", [lesson_line(i) for i in grew], "Nothing came again.")
    block("Merged", [f"- {', '.join(m['old'])} → {m['theme']}" for m in events.get("merged", [])],
          "No lessons merged.")
    block("Predictions confirmed", [pred_line(i) for i in events.get("confirmed", [])], "None.")
    block("Predictions failed", [pred_line(i) for i in events.get("failed", [])], "None.")
    block("Faded", [f"- {faded} memories archived as they faded"] if faded else [], "Nothing faded.")
    block("Vetoed", [f"- {v}" for v in vetoed], "No new vetoes.")
    deleg = delegation.count(store)
    lines = [
        f"- Asked, then told to act: {deleg['asked_told_to_act']} (the agent asked first and you "
        "told it to go ahead: it could have acted)",
        f"- Acted, then stopped: {deleg['acted_stopped']} (you refused or interrupted what the agent "
        "did: it should have asked)",
    ]
    if deleg["by_kind"]:
        lines.append("- By kind of action:")
    unnamed = {"other": "other (no kind recorded)", "interrupted": "interrupted (which action is not recorded)"}
    for kind, row in sorted(deleg["by_kind"].items()):
        lines.append(f"  - {unnamed.get(kind, kind)}: asked, then told to act {row['asked_told_to_act']}; "
                     f"acted, then stopped {row['acted_stopped']}")
    block("Delegation (all sessions)", lines, "")
    from remem.engine.measure import measure, summary_lines

    block("How remem is doing (30 days)", [f"- {line}" for line in summary_lines(measure(store, 30))], "")
    total = store.scalar("SELECT count(*) FROM lessons WHERE status = 'active'")
    out.append(f"{total} active lessons. `remem lessons list` shows them; `remem lessons veto ID` drops one.")
    return "\n".join(out) + "\n"
