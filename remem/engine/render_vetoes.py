"""The person's vetoes: vetoed.json's records, and vetoing or restoring a lesson by hand."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remem import paths
from remem.engine import clock
from remem.engine.files import write_atomic
from remem.engine.lessons import get_lesson, set_status, update_lesson
from remem.engine.render_files import _dump, read_record
from remem.engine.store import LESSON_STATUSES, Store
from remem.errors import RememError


def vetoed_path() -> Path:
    return paths.home() / "vetoed.json"


class VetoesUnreadable(RememError, OSError):
    """vetoed.json is there but cannot be read: a file problem (an OSError, as one writing it
    raises) with a message naming the fix (a RememError: the CLI prints it in one line)."""


def read_vetoes() -> dict[str, Any]:
    """vetoed.json's records ({} when there is none). One that cannot be read (a hand edit left
    a trailing comma, say) raises VetoesUnreadable naming the fix: a veto or restore written
    over it would lose every record in it (the next sleep's render sets it aside and says so)."""
    vetoed, why = read_record(vetoed_path(), {})
    if why:
        raise VetoesUnreadable(f"{vetoed_path()} cannot be read ({why}): fix it, or let `remem sleep --pass "
                               "render` set it aside (it says where), then try again")
    return vetoed


def record_veto(lesson: dict[str, Any], how: str = "vetoed by the person") -> None:
    """Add a lesson to vetoed.json (by id and hash: a lesson with its text is never rendered).

    The record keeps the status and note the lesson had (`was`, `note`), so a restore puts it
    back there; a veto of a lesson already vetoed keeps the first record's."""
    vetoed = read_vetoes()
    earlier = vetoed.get(lesson["id"]) if isinstance(vetoed.get(lesson["id"]), dict) else {}
    entry = {"at": clock.iso(), "how": how, "text": lesson["text"], "hash": lesson["hash"]}
    if lesson.get("status") != "vetoed":
        entry.update(was=lesson.get("status"), note=lesson.get("note"))
    elif earlier.get("was"):
        entry.update(was=earlier["was"], note=earlier.get("note"))
    vetoed[lesson["id"]] = entry
    write_atomic(vetoed_path(), _dump(vetoed))


def clear_veto(lesson: dict[str, Any]) -> None:
    """Take a lesson (and any veto of its text) out of vetoed.json."""
    vetoed = read_vetoes()
    kept = {k: v for k, v in vetoed.items()
            if k != lesson["id"] and not (isinstance(v, dict) and v.get("hash") == lesson["hash"])}
    if kept != vetoed:
        write_atomic(vetoed_path(), _dump(kept))


class NothingToDo(ValueError):
    """A veto of a vetoed lesson, a restore of one that is not vetoed: the lesson is already
    as asked, so nothing changed. Not a failure (the CLI prints it and exits 0)."""


def has_veto(lesson: dict[str, Any]) -> bool:
    """Whether vetoed.json holds a veto of this lesson (by its id, or of its text by hash): an
    active lesson with one is not rendered, and a restore takes the record out."""
    vetoed = read_vetoes()
    return lesson["id"] in vetoed or any(isinstance(v, dict) and v.get("hash") == lesson["hash"]
                                         for v in vetoed.values())


def _not_for_the_person(lesson: dict[str, Any], doing: str) -> str | None:
    """Why the person cannot veto or restore this lesson here (None: they can). A received
    lesson waiting for a decision passes only the share gate; a revoked one never comes back."""
    lid, status = lesson["id"], lesson["status"]
    if status in ("candidate", "quarantined"):
        return (f"{lid} is a received lesson waiting for a decision ({status}), so there is nothing "
                f"to {doing}: accept or reject it with `remem share accept|reject {lid}` or in the "
                "Shared tab")
    if status == "revoked":
        return f"{_who_revoked(lesson)}: it is never handed to an agent and cannot come back"
    return None


def _who_revoked(lesson: dict[str, Any]) -> str:
    """Who retired a revoked lesson, truly for each way a lesson gets there: the person (`share
    revoke`, or an edit that replaced its words), its author, another origin that vouched for
    it, or folding into the person's own lesson with the same words (the row's note says which)."""
    from remem.engine.share_sign import own_origin

    lid, origin, note = lesson["id"], lesson.get("origin"), lesson.get("note") or ""
    if not origin or origin == own_origin():
        return f"{lid} is your own lesson, revoked by you (`remem share revoke`, or an edit that replaced its words)"
    if not note or note.startswith(f"revoked by {origin}"):
        return f"{lid} was revoked by its author, {origin}"
    if note.startswith("revoked by "):  # "revoked by ORIGIN at TIME" (share_receive)
        voucher = note[len("revoked by "):].split(" at ")[0]
        return f"{lid} was revoked by {voucher}, who had vouched for it (its author is {origin})"
    return f"{lid} is a received lesson, retired here: {note}"


def veto_said(lesson_id: str, *, exported: bool, revoke: str) -> str:
    """What a veto means for the person, as the CLI and the TUI say it: the lesson's rendered
    files stay for agents until the next sleep; and, when this memory shared it, the memories
    which took it keep it until it is revoked (`revoke`: how, where the person is)."""
    said = (f"vetoed {lesson_id}; its files stay for agents until the next sleep "
            "(`remem sleep --pass render` removes them now)")
    if exported:
        said += f"; it was shared, and memories that took it may keep it: {revoke} withdraws it everywhere"
    return said


def veto_lesson(store: Store, lesson_id: str, *, note: str | None = None,
                how: str = "vetoed by the person") -> dict[str, Any]:
    """The person vetoes a lesson: status 'vetoed' and its vetoed.json record, together (the
    CLI's `lessons veto` and the TUI's `v`). The record remembers the status it had.

    Raises ValueError (one line naming what to do instead) for a received lesson waiting in
    the share gate or a revoked one, NothingToDo for a lesson vetoed already (the first
    veto's record stays)."""
    lesson = get_lesson(store, lesson_id)
    why = _not_for_the_person(lesson, "veto")
    if why:
        raise ValueError(why)
    if lesson["status"] == "vetoed":
        raise NothingToDo(f"{lesson['id']} is vetoed already: nothing to do")
    done = set_status(store, lesson["id"], "vetoed", note=note or "vetoed by the person")
    with _undone_unless_written(store, lesson):
        record_veto(lesson, how=how)  # the lesson as it was: its status before the veto is kept
    return done


def restore_lesson(store: Store, lesson_id: str) -> dict[str, Any]:
    """Undo a veto: the lesson goes back to the status it had before, out of vetoed.json, so
    the next sleep renders it again if that status is 'active'. A received lesson that was
    waiting in the Shared tab (candidate, quarantined) goes back to waiting: a restore never
    skips the share gate. An active lesson that a veto of its text keeps from being rendered
    only loses that record.

    Raises ValueError (one line naming what to do instead) for a lesson waiting in the share
    gate or a revoked one, NothingToDo for an active lesson that no veto holds back."""
    lesson = get_lesson(store, lesson_id)
    why = _not_for_the_person(lesson, "restore")
    if why:
        raise ValueError(why)
    if lesson["status"] == "active":
        if not has_veto(lesson):
            raise NothingToDo(f"{lesson['id']} is active, not vetoed: nothing to restore")
        clear_veto(lesson)
        return lesson
    status, note = _before_veto(lesson)
    done = set_status(store, lesson["id"], status, note=note)
    with _undone_unless_written(store, lesson):
        clear_veto(lesson)
    return done


@contextmanager
def _undone_unless_written(store: Store, lesson: dict[str, Any]) -> Iterator[None]:
    """The memory is written first, so a memory another process holds refuses before
    vetoed.json changes; when vetoed.json then cannot be written, the lesson goes back to the
    status and note it had, and the two never disagree. A vetoed lesson with no record would
    lose the status a restore returns it to (and a veto tried again finds nothing to do); a
    restored one whose record stays would not be rendered, and a received one sent back to
    the share gate would not be, even once accepted."""
    try:
        yield
    except BaseException:
        update_lesson(store, lesson["id"], status=lesson["status"], note=lesson.get("note"))
        raise


def _before_veto(lesson: dict[str, Any]) -> tuple[str, str]:
    """The status and note a vetoed lesson had, from its vetoed.json record; without one (a
    received lesson rejected in the Shared tab, an older veto), a received lesson goes back
    through the gate (quarantined when its text fails the safety checks, else candidate)."""
    entry = read_vetoes().get(lesson["id"])
    if isinstance(entry, dict) and entry.get("was") in LESSON_STATUSES and entry["was"] != "vetoed":
        return entry["was"], entry.get("note") or ""
    from remem.engine import share_safety
    from remem.engine.share_projects import _is_own
    from remem.engine.share_sign import own_origin

    if _is_own(lesson, own_origin(None)):
        return "active", ""
    reasons = share_safety.incoming(lesson["text"])
    if reasons:
        return "quarantined", "quarantined: " + "; ".join(reasons)
    return "candidate", f"received from {lesson['origin']}"
