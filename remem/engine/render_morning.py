"""The morning report render writes to morning.md: what the night did, for the person.

A report covers every sleep run since the person last read one (`remem morning`, the TUI's
Overview): when it was read is kept in morning.read beside it (read_at, mark_read), and the
render pass gathers the runs since (sleep_passes.unreported), so a second sleep in a day adds
to what the report says instead of replacing it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from remem import paths
from remem.engine import clock
from remem.engine.store import Store

# How far back a report reaches when it was not read for long: older runs are left out, and
# the report says how many.
REPORT_DAYS = 7
REPORT_RUNS_MAX = 50


def read_marker_path() -> Path:
    """Where the time the report was last read is kept (one ISO time)."""
    return paths.morning_path().with_name("morning.read")


def read_at() -> str | None:
    """When the person last read the report, or None: never (or the record is unreadable)."""
    try:
        text = read_marker_path().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return clock.normalise(text.strip())


def mark_read(at: str) -> None:
    """Record that the report was read at `at` (taken before the file was read: a report
    written while it was being read is not counted read). Best effort: a home that cannot be
    written still shows its report, and the next one only repeats what this one said."""
    from remem.engine.files import write_atomic

    try:
        write_atomic(read_marker_path(), at + "\n")
    except OSError:
        pass


def covers_line(covers: dict[str, Any]) -> list[str]:
    """The report's span in words: since when, how many runs, and what was left out. Written
    into morning.md once and shown for as long as it is there, so it says only what stays
    true: where the span starts, never whether this report has been read (reading it does not
    rewrite it)."""
    def day(at: str) -> str:
        return clock.parse(at).strftime("%A %Y-%m-%d %H:%M") + " UTC"

    runs = int(covers.get("runs") or 1)
    span = f"Since {day(covers['since'])}: {runs} run{'s' if runs != 1 else ''}"
    if covers.get("previous_read"):
        span += f", every sleep since the report before this one was read ({day(covers['previous_read'])})."
    else:
        span += ", every sleep so far (no report was read before this one)."
    out = [span]
    left = int(covers.get("left_out") or 0)
    if left:
        more = "at least " if covers.get("left_out_more") else ""
        said = (f"{more}{left} older unread run{'s' if left != 1 else ''} left out: a report "
                f"covers at most {REPORT_DAYS} days and {REPORT_RUNS_MAX} runs.")
        out.append(said[0].upper() + said[1:])
    return out


BACKUP_TITLE = "## Nightly backup failed"


def add_backup_error(error: str) -> None:
    """Tell in the report just written that the nightly backup after it failed (the backup
    runs once the run is recorded, after the render pass): its error as the first block, where
    the person reading in the morning sees it. Best effort, as the report's other writes."""
    from remem.engine.files import write_atomic

    path = paths.morning_path()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    block = f"{BACKUP_TITLE}\n- {' '.join(error.split())}\n\n"
    at = text.find("\n## ") + 1  # before the first block (0: none, at the end)
    text = text[:at] + block + text[at:] if at else text.rstrip("\n") + "\n\n" + block
    try:
        write_atomic(path, text, through_links=True)
    except OSError:
        pass


def _not_active(lesson: dict[str, Any]) -> str:
    """What a lesson that is not active is, in the report's words: agents are not shown it."""
    from remem.engine.contradiction import is_superseded

    if is_superseded(lesson.get("status"), lesson.get("note")):
        return "superseded by a later correction, not shown to agents"
    return f"{lesson.get('status')}, not shown to agents"


_CONTRADICTED = {
    "retired": "retired there (`remem lessons restore {old}` brings it back)",
    "moved": "it applies only in {cwd} now",
    "still applies": ("it still applies there: it was learned in other projects too, and a lesson "
                      "applies in one project or in all (`remem lessons veto {old}` drops it everywhere)"),
}


def contradicted_lines(store: Store, since: str | None) -> list[str]:
    """The Contradicted block: each older lesson a later correction took back since a time,
    the project, the newer lesson, and where the older one stands now (contradiction.told_since)."""
    from remem.engine.contradiction import told_since

    lines = []
    for said in told_since(store, since):
        old, new = said["old"], said["new"]
        state = _CONTRADICTED.get(said["state"], "{status}").format(
            old=old["id"], cwd=old["cwd"], status=old["status"])
        lines.append(f"- {old['text']} ({old['id']}) — taken back in {said['in']} by: {new['text']} "
                     f"({new['id']}); {state}")
    return lines


def morning_report(store: Store, events: dict[str, list[Any]], faded: int, vetoed: list[str],
                   covers: dict[str, Any] | None = None) -> str:
    """What the night did, for the person (not for agents). `covers` is the span of runs the
    events come from (sleep_passes.unreported), told under the title."""
    from remem.engine import delegation

    def lesson_line(lid: str, labelled: bool = True) -> str:
        row = store.one("SELECT id, text, kind, seen, status, note FROM lessons WHERE id = ?", (lid,))
        if not row:
            return f"- {lid}"
        # A lesson no longer handed to agents says so wherever it is listed (but under Vetoed).
        label = f" — {_not_active(row)}" if labelled and row["status"] != "active" else ""
        return f"- {row['text']} ({row['kind']}, seen {row['seen']}×, {row['id']}){label}"

    def pred_line(pid: str) -> str:
        row = store.one("SELECT p.text, p.evidence, l.status, l.note FROM predictions p "
                        "LEFT JOIN lessons l ON l.id = p.lesson_id WHERE p.id = ?", (pid,))
        if not row:
            return f"- {pid}"
        ev = f" — matched {row['evidence']}" if row.get("evidence") else ""
        label = f" (its lesson is {_not_active(row)})" if row.get("status") not in (None, "active") else ""
        return f"- {row['text']}{ev}{label}"

    out = [f"# remem — morning report, {clock.now().strftime('%Y-%m-%d %H:%M')} UTC", ""]
    if covers and covers.get("since"):
        out += [*covers_line(covers), ""]

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
    block("Contradicted", contradicted_lines(store, (covers or {}).get("since")),
          "No lesson was taken back.")
    block("Predictions confirmed", [pred_line(i) for i in events.get("confirmed", [])], "None.")
    block("Predictions failed", [pred_line(i) for i in events.get("failed", [])], "None.")
    block("Faded", [f"- {faded} memories archived as they faded"] if faded else [], "Nothing faded.")
    # By its words, as every lesson here: an id alone tells the person nothing.
    block("Vetoed", [lesson_line(v, labelled=False) for v in vetoed], "No new vetoes.")
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
