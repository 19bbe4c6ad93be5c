"""What a sleep pass did, in words a person reads at a glance (describe_pass, describe_counts)."""

from __future__ import annotations

from typing import Any, Callable


def describe_counts(counts: dict[str, Any], most: int | None = None, empty: str = "nothing to do") -> str:
    """A pass's counts for people: its non-zero numbers ("created 2, merged 1"), the first
    `most` of them (None: all); `empty` when it has none. Lists, words and flags are left out."""
    parts = [f"{k} {v}" for k, v in counts.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool) and v]
    return ", ".join(parts[:most]) or empty


def _n(count: Any, one: str, many: str | None = None) -> str:
    count = int(count or 0)
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _said(parts: list[str], empty: str) -> str:
    return ", ".join(p for p in parts if p) or empty


def _describe_redact(c: dict[str, Any]) -> str:
    if not c.get("checked"):
        return "no memory from before redaction left to check"
    found = _said([_n(c.get("episodes"), "memory", "memories") if c.get("episodes") else "",
                   _n(c.get("lessons"), "lesson") if c.get("lessons") else "",
                   _n(c.get("primes"), "logged query", "logged queries") if c.get("primes") else ""], "")
    rows = _n(c["checked"], "row an older release may have written", "rows an older release may have written")
    return f"checked {rows}: " + (f"secrets redacted in {found}" if found else "no secret found")


def _describe_embed(c: dict[str, Any]) -> str:
    made = _said([_n(c.get("episodes"), "memory", "memories") if c.get("episodes") else "",
                  _n(c.get("lessons"), "lesson") if c.get("lessons") else "",
                  _n(c.get("predictions"), "prediction") if c.get("predictions") else ""], "")
    return f"embedded {made}" if made else "everything was embedded already"


def _describe_expire(c: dict[str, Any]) -> str:
    if not c.get("ran"):
        return "no lifecycle task was due"
    by_task = c.get("by_task") if isinstance(c.get("by_task"), dict) else {}

    def did(task: str, key: str) -> int:
        return int((by_task.get(task) or {}).get(key) or 0)

    gone = did("expire_short_term", "expired") + did("active_forgetting", "deleted") \
        + did("cleanup_archived", "deleted")
    if not by_task:  # a run recorded before by_task: its summed numbers
        gone = int(c.get("expired") or 0) + int(c.get("deleted") or 0)
    head = f"{_n(c['ran'], 'due lifecycle task')} ran: " + (
        f"{_n(gone, 'memory', 'memories')} expired or deleted" if gone else "nothing expired or was deleted")
    eased = _said([
        f"importance of {_n(did('importance_decay', 'decayed'), 'memory', 'memories')} eased with age"
        if did("importance_decay", "decayed") else "",
        f"health of {_n(did('active_forgetting', 'decayed'), 'fading memory', 'fading memories')} fell"
        if did("active_forgetting", "decayed") else "",
    ], "")
    return head + (f"; {eased} (normal)" if eased else "")


def _describe_decay(c: dict[str, Any]) -> str:
    if c.get("skipped"):
        return f"skipped: {c['skipped']}"
    if not c.get("decayed"):
        return "no memory's strength was owed any decay"
    archived = int(c.get("archived") or 0)
    return (f"strength of {_n(c['decayed'], 'memory', 'memories')} eased for the time unused; "
            + (f"{_n(archived, 'memory', 'memories')} faded and {'was' if archived == 1 else 'were'} "
               "archived (hidden from recall, restorable)" if archived else "none faded (normal)"))


_SEEN_ONCE = "seen only once, waiting for a second sighting"


def _describe_lessons(c: dict[str, Any]) -> str:
    """The lessons pass in words whose numbers add up: the new episodes read are split into
    those that joined a lesson and the other ones, which made new lessons (a new lesson holds
    one or more episodes) or wait for a second sighting; the parts sum to the number read.
    What waits from earlier sleeps is told after a semicolon, never as a part of them.
    `pending` counts every episode still waiting, new or not; `pending_earlier` those of them
    an earlier sleep read (a summary of an older remem has no such count)."""
    if c.get("skipped"):
        return f"skipped: {c['skipped']}"
    new, joined = int(c.get("new_episodes") or 0), int(c.get("joined") or 0)
    created, pending = int(c.get("created") or 0), int(c.get("pending") or 0)
    unclear = int(c.get("unclear") or 0)  # new corrections that said nothing to learn from
    nothing = (f"; {_n(unclear, 'new correction')} said only that something was wrong (no lesson)"
               if unclear else "")
    if not new:
        made = _said([_n(created, "new lesson") if created else "",
                      _n(joined, "joined a lesson", "joined lessons") if joined else ""], "")
        still = f"{pending} from earlier sleeps still wait for a second sighting" if pending else ""
        return "; ".join(p for p in ("no new corrections or errors", made, still) if p) + nothing
    earlier = c.get("pending_earlier")
    if isinstance(earlier, int) and not isinstance(earlier, bool):
        made, after = _new_ones_known(new, joined, created, pending, min(max(earlier, 0), pending))
    else:
        made, after = _new_ones_guessed(new, joined, created, pending)
    return (f"read {_n(new, 'new correction or error', 'new corrections and errors')}: {made}"
            + (f"; {after}" if after else "") + nothing)


def _new_ones_known(new: int, joined: int, created: int, pending: int, earlier: int) -> tuple[str, str]:
    """What became of the new episodes, when how many of them wait is known (those waiting
    that no earlier sleep read), and what waits from earlier sleeps."""
    waits = min(pending - earlier, new)
    into = new - waits  # the new ones in a lesson now
    rest = new - joined  # the new ones that did not join a lesson
    after = (f"{earlier} from earlier sleeps still wait" + (" too" if waits else " for a second sighting")
             if earlier else "")
    # `joined` and `created` count waiting corrections read again too (a waiting "use pnpm"
    # that joins the lesson a new "no, use pnpm not npm" made): when they do not fit the new
    # ones (each new lesson holds one of them), which of the two each new one did is not told.
    if not (joined <= into and (into - joined >= 1 if created else into == joined)):
        return _said([
            (f"{into} joined a lesson or made {_n(created, 'new lesson')}" if created
             else _n(into, "joined a lesson", "joined lessons")) if into else "",
            f"{waits} {_SEEN_ONCE}" if waits else ""], "nothing to learn"), after
    other = "the other " if joined else ""
    if not rest:
        of_rest = ""
    elif waits == rest:  # none made a lesson
        of_rest = f"{other}{rest} {_SEEN_ONCE}"
    elif waits:
        of_rest = (f"{other}{rest} made {_n(created, 'new lesson')}, except {waits} seen only once, "
                   f"which {'waits' if waits == 1 else 'wait'} for a second sighting")
    else:
        of_rest = f"{other}{rest} made {_n(created, 'new lesson')}"
    return _said([_n(joined, "joined a lesson", "joined lessons") if joined else "", of_rest],
                 "nothing to learn"), after


def _new_ones_guessed(new: int, joined: int, created: int, pending: int) -> tuple[str, str]:
    """As _new_ones_known, from a summary without `pending_earlier`: how many of the new ones
    wait is told only where the counts say it; else the number waiting in all, apart."""
    rest = max(new - joined, 0)
    other = "the other " if joined else ""
    after = f"{pending} from earlier sleeps still wait for a second sighting" if pending else ""
    if not rest:
        of_rest = ""
    elif not created:  # none made a lesson: every one of them waits
        more = pending - rest
        of_rest = f"{other}{rest} {_SEEN_ONCE}" + (f" ({more} more from earlier sleeps wait too)" if more > 0 else "")
        after = ""
    elif rest <= created or not pending:
        # Each new lesson holds at least one new episode: with as many lessons as episodes, or
        # nothing waiting, every one of them went into a lesson; what waits is older.
        of_rest = f"{other}{rest} made {_n(created, 'new lesson')}"
    else:  # how many of them wait, the counts do not tell: the number waiting in all
        of_rest = f"{other}{rest} made {_n(created, 'new lesson')} or wait for a second sighting"
        after = f"{pending} seen only once wait in all, from this sleep and earlier ones"
    return _said([_n(joined, "joined a lesson", "joined lessons") if joined else "", of_rest],
                 "nothing to learn"), after


def _describe_merge(c: dict[str, Any]) -> str:
    if not c.get("aliased"):
        return "no two lessons meant the same"
    return f"{_n(c['aliased'], 'lesson')} merged into {_n(c.get('themes'), 'lesson')} meaning the same"


def _describe_verify(c: dict[str, Any]) -> str:
    withdrawn = f"{c['withdrawn']} withdrawn (its lesson is no longer active)" if c.get("withdrawn") else ""
    if not c.get("open"):
        return withdrawn or "no open prediction to check"
    text = (f"checked {_n(c['open'], 'open prediction')}: {c.get('confirmed') or 0} came true, "
            f"{c.get('failed') or 0} did not in time")
    return f"{text}, {withdrawn}" if withdrawn else text  # withdrawn: counted neither way


def _describe_predict(c: dict[str, Any]) -> str:
    made = int(c.get("made") or 0)
    return f"made {_n(made, 'prediction')} for later sleeps to check" if made else "no new prediction"


def _describe_connect(c: dict[str, Any]) -> str:
    if c.get("skipped"):
        return f"skipped: {c['skipped']}"
    if "would_scan" in c:
        return f"would link {_n(c['would_scan'], 'new memory', 'new memories')} to similar ones"
    if not c.get("memories"):
        return "no new memory to link"
    text = (f"linked {_n(c['memories'], 'new memory', 'new memories')} to similar ones: "
            f"{_n(c.get('edges'), 'new connection')}")
    if c.get("older_not_scanned"):
        text += f" ({c['older_not_scanned']} older ones left for later)"
    return text


def _describe_render(c: dict[str, Any]) -> str:
    if not c.get("lessons") and not c.get("written") and not c.get("removed") and not c.get("vetoed"):
        return "no active lesson to write"
    parts = [f"{_n(c.get('lessons'), 'lesson')} for agents"]
    if c.get("folders"):
        parts.append(f"in {_n(c['folders'], 'project folder')}")
    if c.get("dry_run"):  # what a real run would do
        written = "would write " + _n(c["written"], "file") if c.get("written") else ""
        removed = "would remove " + _n(c["removed"], "file") if c.get("removed") else ""
    else:
        written = _n(c.get("written"), "file") + " written" if c.get("written") else ""
        removed = _n(c.get("removed"), "file") + " removed" if c.get("removed") else ""
    text = " ".join(parts) + ": " + _said([
        written, removed,
        f"{c['no_project_folder']} wait for a project folder" if c.get("no_project_folder") else "",
        _n(c.get("vetoed"), "lesson") + " vetoed" if c.get("vetoed") else "",
    ], "no file would change" if c.get("dry_run") else "files unchanged")
    return text


_DESCRIBE: dict[str, Callable[[dict[str, Any]], str]] = {
    "redact": _describe_redact, "embed": _describe_embed, "expire": _describe_expire,
    "decay": _describe_decay, "lessons": _describe_lessons, "merge": _describe_merge,
    "verify": _describe_verify, "predict": _describe_predict, "connect": _describe_connect,
    "render": _describe_render,
}


def describe_pass(name: str, counts: dict[str, Any]) -> str:
    """What a pass did, in words a person reads at a glance ("2 due lifecycle tasks ran:
    nothing expired or was deleted"); the summary's counts keep their keys for scripts. A pass
    without words of its own, or counts it cannot read, fall back to describe_counts."""
    describe = _DESCRIBE.get(name)
    if describe is None or not isinstance(counts, dict):
        return describe_counts(counts if isinstance(counts, dict) else {})
    try:
        return describe(counts)
    except (TypeError, ValueError, KeyError):  # a damaged or older summary: its numbers
        return describe_counts(counts)


# The counts that say a pass changed something a person looks for after a sleep. The rest of a
# pass's work is upkeep every sleep does (strengths eased with age, open predictions looked at,
# lesson files left as they were), which `remem sleep` says too but a one-line history leaves out.
_CHANGES: dict[str, tuple[str, ...]] = {
    "redact": ("episodes", "lessons"), "embed": ("episodes", "lessons", "predictions"),
    "expire": ("expired", "deleted"), "decay": ("archived",),
    "lessons": ("new_episodes", "joined", "created"), "merge": ("aliased",),
    "verify": ("confirmed", "failed"), "predict": ("made",), "connect": ("edges",),
    "render": ("written", "removed"),
}


def _number(value: Any) -> float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def changed_passes(passes: dict[str, Any]) -> list[tuple[str, str]]:
    """The passes of a sleep run's summary that changed something, in pass order, each with
    what it did in describe_pass's words (those `remem sleep` prints): a short account of a
    run, as the TUI's sleep history gives it. Counts a pass has no words for, or without any
    of the numbers its words read (a summary of an older remem), are told by describe_counts."""
    said: list[tuple[str, str]] = []
    for name, counts in (passes or {}).items():
        if not isinstance(counts, dict):
            continue
        keys = _CHANGES.get(name)
        if keys and any(key in counts for key in keys):
            if any(_number(counts.get(key)) for key in keys):
                said.append((name, describe_pass(name, counts)))
        elif shown := describe_counts(counts, empty=""):
            said.append((name, shown))
    return said
