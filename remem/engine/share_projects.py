"""Shared lessons of a project: a lesson learned in a project travels with its folder's name
(never its path), and a receiver binds it to its own project of that name, or keeps it waiting,
applying nowhere, until it can (docs/SHARING.md, "Lessons of a project")."""

from __future__ import annotations

import os
from typing import Any

from remem import paths
from remem.engine.lessons import unbound_project, update_lesson
from remem.engine.projects import _named as named_projects  # what resolve_project chose among
from remem.engine.projects import project_name, resolve_project, same_name
from remem.engine.store import Store

ACTIVATED = "activated: "  # the note of a lesson activated by trust (demote() reads it)


def _is_own(row: dict[str, Any], ours: str | None) -> bool:
    return not row.get("origin") or row.get("origin") == ours


def shared_project(cwd: str | None) -> str | None:
    """The project a lesson learned in `cwd` is shared as: its folder's name, never the path
    (a path tells how the author's home is laid out and means nothing elsewhere); None for a
    lesson of every project (and for one learned in "/" or in the home folder itself, which
    hold every project: its name would be the user's, which no other machine has). Sent in
    NFC (projects.same_name): a folder macOS stores decomposed goes out as other systems spell
    its name."""
    if cwd and os.path.normpath(cwd) == os.path.normpath(str(paths.user_home())):
        return None
    return same_name(project_name(cwd)) or None


def place_project(store: Store, name: str) -> tuple[str | None, str | None]:
    """(folder, None) when this memory has exactly one project of this folder name (the rule of
    projects.resolve_project for a bare name), else (None, why a lesson for it waits)."""
    try:
        return resolve_project(store, name), None
    except ValueError:
        pass
    found = named_projects(store, name)
    if not found:
        return None, f"for project '{name}', which this memory has not seen"
    listed = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return None, f"for project '{name}', which {len(found)} projects here are named ({listed})"


def _received_cwd(store: Store, doc: dict[str, Any]) -> str | None:
    """Where a received lesson applies: nowhere said (every project), its project's one folder
    here, or, while this memory cannot place that project, its name alone (applies nowhere)."""
    project = doc.get("project")
    if not project:
        return None
    folder, _ = place_project(store, project)
    return folder or project


def _name_waiting(store: Store, report: dict[str, Any]) -> None:
    """The lessons just received that wait for their project, with why."""
    for item in report["received"] + report["quarantined"]:
        row = store.one("SELECT cwd FROM lessons WHERE id = ?", (item["id"],))
        if row and unbound_project(row["cwd"]):
            report["waiting_for_project"].append(
                {"id": item["id"], "project": row["cwd"], "why": place_project(store, row["cwd"])[1]})


def _adopt_project(store: Store, row: dict[str, Any], offers: list[tuple[str, dict[str, Any]]],
                   ours: str, report: dict[str, Any]) -> None:
    """A received lesson held for every project (taken in from a file without a project)
    whose author's file now names one takes it: bound to that project's folder here, or, when
    this memory cannot place it, waiting for it (an active one goes back to candidate), unless
    the person accepted it by hand: that stays as they took it."""
    if _is_own(row, ours) or row.get("cwd"):
        return
    by_hand = row["status"] == "active" and not (row.get("note") or "").startswith(ACTIVATED)
    project = next((d.get("project") for o, d in offers if o == row["origin"]), None)
    if not project:
        return
    folder, why = place_project(store, project)
    if folder:
        update_lesson(store, row["id"], cwd=folder)
        report["bound"].append({"id": row["id"], "project": project, "cwd": folder})
        return
    if by_hand:
        return  # accepted for every project by the person, and no folder here to narrow it to
    changes: dict[str, Any] = {"cwd": project}
    if row["status"] == "active":
        changes.update(status="candidate", note=f"back to candidate: {why}")
    update_lesson(store, row["id"], **changes)
    report["waiting_for_project"].append({"id": row["id"], "project": project, "why": why})


def bind_waiting(store: Store, ours: str | None) -> list[dict[str, str]]:
    """Received lessons waiting for their project, bound to it now that this memory has exactly
    one project of that name (a session from that folder was ingested since)."""
    rows = store.rows("SELECT id, cwd, origin FROM lessons WHERE status IN ('candidate', 'quarantined') "
                      "AND cwd IS NOT NULL AND cwd != '' AND substr(cwd, 1, 1) != '/' ORDER BY created, id")
    bound: list[dict[str, str]] = []
    places: dict[str, str | None] = {}
    for row in rows:
        if _is_own(row, ours):
            continue
        if row["cwd"] not in places:
            places[row["cwd"]] = place_project(store, row["cwd"])[0]
        folder = places[row["cwd"]]
        if folder:
            update_lesson(store, row["id"], cwd=folder)
            bound.append({"id": row["id"], "project": row["cwd"], "cwd": folder})
    return bound
