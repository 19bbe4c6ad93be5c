"""Render: what sleep hands to agents and to the person.

- One `remem-<memory>-<id>.md` per active lesson into each project's Claude Code memory folder
  (`<claude projects>/<folder named after the cwd>/memory/`, or, when no folder has that name,
  the folder the project's transcripts were read from: `_project_folder`; a path too long for
  a folder name is no error, only a lesson that waits); a lesson with no cwd goes to
  every project folder in use (`_in_use`: a session in `render.general_days` days, a lesson of
  its own, or a memory folder remem did not make). `<memory>` is a short id of this memory taken from its
  home (`memory_tag`): two memories rendering into one ~/.claude (a work and a personal one,
  or a test memory imported from the real one, whose lessons keep their ids) never write,
  remove or read as vetoed the same file. Files named `remem-<id>.md`, as before names
  carried the memory, are replaced by the new names at the next render, never taken as vetoes.
- The lesson files are remem's, but one the person changed (its bytes are not those remem last
  wrote: written.json keeps their sha256, and a hash of the lesson's words then) is left alone,
  and said so, until the lesson's words are edited; one that is read-only or hard-linked is
  left alone too (write_atomic's `refuse_protected`), and a link the person made stays.
- In each folder's MEMORY.md only the section between `<!-- remem:begin -->` and
  `<!-- remem:end -->` is rewritten; every other byte of the file is kept. Markers count only
  as whole lines, one pair (render_text): a file with them out of place, read-only,
  hard-linked, or linked into several project folders (whose lessons differ) gets none of
  this memory's lines, and a problem naming the fix. This memory's index is cut at
  `render.index_lines` / `render.index_bytes` (Claude Code reads only a MEMORY.md's start).
  The section is shared: a memory rewrites its own index lines and keeps another memory's
  (those whose file is still there), grouped by memory, so every memory renders the same section.
  A section no memory has a line in goes whole (a MEMORY.md left empty goes, and so does the
  memory folder render made, once empty), as unrender takes it out. A MEMORY.md that cannot
  be read back exactly (a folder, not UTF-8), and a `memory` that is no folder (a file, a link
  to nothing, through which a write would make a folder), get nothing, and a problem each.
  A file whose marker lines the person deleted gets the section appended again, and this
  memory's own lines left from the old one (its index lines, its heading) are taken out first.
- `written.json` (in remem's home) lists the files remem wrote. A listed file of an active
  lesson that is gone on the next render, from a folder the lesson still goes to, was deleted
  by the person: the lesson is vetoed (status 'vetoed', `vetoed.json`), never rendered again,
  and its other copies are removed. A file remem wants gone is marked so (`remove`) in
  written.json before it is removed, so a render cut short among its removals (Ctrl-C, a
  kill) leaves none that reads as a veto; one it could not remove, or that the person
  changed, stays listed so: the next render tries again, and its absence is never a veto.
  A file gone from a folder its lesson no longer goes to (a project unused for long, a
  take-back that narrowed the lesson to another project) is not a veto either.
  Sleep also takes these vetoes before its merge pass (take_vetoes), so a vetoed lesson never
  merges away. A memory acts only on the files it owns (`_owned_files`): a memory folder
  copied elsewhere never removes, nor takes as vetoed, the files of the one it was copied from.
- `unrender` (`remem setup --remove`) takes out of agent folders what render wrote there for
  this memory: its lesson files and its lines of each MEMORY.md section. It first drops those
  files from written.json, so a file it removes is never read as the person's veto: the next
  render writes it again (a listed file that was already gone stays listed, a veto still).
- A written.json or vetoed.json that cannot be read (render_files.read_record) is never
  written over: render sets it aside (`<name>.bad-<stamp>`, a problem line saying so) and
  starts a new one; with no written.json, a lesson file that is not exactly what remem would
  write now is taken as the person's (`_found_without_record`). take_vetoes takes none then,
  and a veto or restore by hand refuses (render_vetoes.read_vetoes).
- `lessons.jsonl` (remem's home): every active lesson, one wire line each (docs/PROTOCOL.md).
- `morning.md` (remem's home): the owner's report of the runs since they last read one.

Every file is written atomically (a temp file in the same folder, then rename), and only
when its bytes change. MEMORY.md, lesson files, lessons.jsonl and morning.md may be symlinks the person
made (to a dotfiles repo, say): the link stays, its target is written (the temp file beside
the target) and keeps its mode.

Here: render, unrender, and the vetoes of deleted files (take_vetoes). Lesson file names and
written.json are in render_files; the text of a lesson file and of MEMORY.md's section in
render_text; the person's vetoes (vetoed.json, veto and restore) in render_vetoes; the
morning report's text in render_morning.
"""

from __future__ import annotations

import errno
import glob
import hashlib
import os
import re
import time
from pathlib import Path
from typing import Any

from remem import paths
from remem.engine import clock
from remem.engine.files import write_atomic
from remem.engine.lessons import list_lessons, wire_line
from remem.engine.render_files import (
    _TAGGED_NAME,
    _abs,
    _dump,
    _name_tag,
    _owned_files,
    _owned_folders,
    _owned_names,
    _written_record,
    lesson_filename,
    memory_tag,
    read_record,
    set_aside,
    written_path,
)
from remem.engine.render_morning import morning_report
from remem.engine.render_text import (
    _INDEX_LINE,
    _MORE_LINE,
    BEGIN,
    END,
    HEADING,
    MarkersOutOfPlace,
    has_section,
    lesson_file,
    others_lines,
    replace_section,
    section_body,
    without_own_lines,
)
from remem.engine.render_vetoes import vetoed_path
from remem.engine.store import Store

RENDERED_STATUSES = ("active",)


# --------------------------------------------------------------------------- vetoes of deleted files

def _left_for_another_memory(path: Path, lesson_id: str, tag: str) -> bool:
    """Whether a missing file may have been removed by another memory, not by the person: its
    name is not this memory's (`remem-<id>.md` from before names carried the memory, say) and
    the folder holds another memory's own file of the same lesson. Two memories holding the
    same lesson (a copy, an import) shared such a file, and the first to render with names of
    its own replaced it with one and removed it: that is no veto of the person's."""
    if path.name == lesson_filename(lesson_id, tag):
        return False  # this memory's own name: only the person removes it
    for other in path.parent.glob(f"remem-*-{glob.escape(lesson_id)}.md"):
        found = _TAGGED_NAME.fullmatch(other.name)
        if found and found.group(1) != tag and found.group(2) == lesson_id:
            return True
    return False


def _veto_deleted(store: Store, files: dict[str, dict[str, Any]], active: dict[str, dict[str, Any]],
                  vetoed: dict[str, Any], *, write_db: bool, days: float, made: set[Path],
                  known: dict[str, Path]) -> list[str]:
    """Active lessons a file of which we wrote is gone while its folder is still there, and
    that still go to that folder (`_where_lessons_go`): each is added to `vetoed` (in memory)
    and, with write_db, set to status 'vetoed'. `days`: render.general_days; `made`: the
    memory folders render made (`_owned_folders`); `known`: _transcript_folders."""
    found: list[str] = []
    tag = memory_tag()
    goes: dict[str, set[Path]] | None = None  # worked out only when a file is missing
    for path_s, info in sorted(files.items()):
        lid = info.get("lesson")
        path = Path(path_s)
        if info.get("remove"):
            continue  # listed only until remem removes it: gone is what it wanted
        if (lid in active and lid not in found and not path.exists() and path.parent.is_dir()
                and not _left_for_another_memory(path, lid, tag)):
            if goes is None:
                goes = _where_lessons_go(active, vetoed, days, made, known)
            if _abs(path.parent) not in goes.get(lid, set()):
                continue  # remem took it out of this folder (and was cut short before saying so)
            found.append(lid)
            vetoed[lid] = {"at": clock.iso(), "path": path_s, "text": active[lid]["text"],
                           "hash": active[lid]["hash"], "was": "active", "note": active[lid].get("note")}
    if found and write_db:
        stamp = clock.iso()
        with store.write() as conn:
            conn.executemany(
                "UPDATE lessons SET status = 'vetoed', note = ?, updated = ? WHERE id = ?",
                [("the person deleted its file", stamp, lid) for lid in found],
            )
    return found


def _where_lessons_go(active: dict[str, dict[str, Any]], vetoed: dict[str, Any],
                      days: float, made: set[Path], known: dict[str, Path]) -> dict[str, set[Path]]:
    """The memory folders each active lesson goes to now, as render works them out (a lesson
    vetoed in vetoed.json, by id or by its words' hash, goes nowhere). Only a file missing from
    one of these is the person's veto: a file of a folder the lesson no longer goes to (its
    project unused for long, a take-back that narrowed it to another project) is one render
    removes, and finding it gone means a render was cut short after removing it."""
    hashes = {v.get("hash") for v in vetoed.values() if isinstance(v, dict)}
    shown = [l for l in active.values() if l["id"] not in vetoed and l["hash"] not in hashes]
    general = _general_folders(shown, made, days, known)
    return {l["id"]: {_abs(f) for f in _targets(l, general, known)} for l in shown}


def take_vetoes(store: Store, *, dry_run: bool = False) -> list[str]:
    """The vetoes of deleted files, taken before sleep merges lessons: a lesson merged away
    first would no longer be active at render, and its veto would be lost. A dry run's store
    is sleep's private copy, so its status changes there too; vetoed.json is not written.

    With vetoed.json or written.json unreadable (read_record) nothing is taken here: render
    sets the file aside and says so, and vetoed.json is never written over."""
    from remem import config

    vetoed, bad_vetoes = read_record(vetoed_path(), {})
    record, bad_record = read_record(written_path(), {})
    if bad_vetoes or bad_record:
        return []
    active = {l["id"]: l for l in list_lessons(store, statuses=RENDERED_STATUSES)}
    found = _veto_deleted(store, _owned_files(record), active, vetoed, write_db=True,
                          days=config.load()["render"]["general_days"], made=_owned_folders(record),
                          known=_transcript_folders(store, active.values()))
    if found and not dry_run:
        write_atomic(vetoed_path(), _dump(vetoed))
    return found


# --------------------------------------------------------------------------- render

def _provenance(store: Store, lessons: list[dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    ids = sorted({s for l in lessons for s in l["sources"][:8]})
    at: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        for row in store.rows(f"SELECT id, at FROM episodes WHERE id IN ({marks})", chunk):
            at[row["id"]] = row["at"]
    return {l["id"]: [(s, at.get(s, "")) for s in l["sources"]] for l in lessons}


def _targets(lesson: dict[str, Any], projects: list[Path], known: dict[str, Path]) -> list[Path]:
    """The memory folders a lesson goes to: its project's (when Claude Code has a folder for
    it: `_project_folder`), or, for a lesson with no project, those of `projects` (the ones in
    use)."""
    if lesson.get("cwd"):
        folder = _project_folder(lesson["cwd"], known)
        return [folder / "memory"] if folder is not None else []
    return [p / "memory" for p in projects]


def _by_name(cwd: str) -> Path | None:
    """Claude Code's folder for a project, found by the name it gives a short path's folder
    (paths.project_folder_name), when it is there. A name too long for the file system (a path
    of more than 255 characters) is no folder: never an error that stops the render."""
    folder = paths.claude_projects_dir() / paths.project_folder_name(cwd)
    try:
        return folder if folder.is_dir() else None
    except OSError:  # ENAMETOOLONG, say
        return None


def _project_folder(cwd: str, known: dict[str, Path]) -> Path | None:
    """Claude Code's folder for the project at `cwd`: by its name, else the folder its sessions'
    transcripts were read from (`known`: _transcript_folders); None while there is none."""
    return _by_name(cwd) or known.get(cwd)


def _transcript_folders(store: Store, lessons: Any) -> dict[str, Path]:
    """For each project of these lessons whose Claude Code folder is not found by name
    (`_by_name`), the folder in the Claude Code projects folder its sessions' transcripts were
    read from (the `sessions` table keeps each transcript's path, its episodes the session's
    cwd), the latest read first. Claude Code cuts a long path's folder name short and adds a
    hash to it, so only its own transcripts say which folder is the project's."""
    root = paths.claude_projects_dir()
    out: dict[str, Path] = {}
    for cwd in sorted({l["cwd"] for l in lessons if l.get("cwd")}):
        if _by_name(cwd) is not None:
            continue
        rows = store.rows(
            "SELECT s.path AS path FROM episodes e JOIN sessions s ON s.id = e.session_id "
            "WHERE e.cwd = ? AND s.source = 'claude-code' AND s.path IS NOT NULL "
            "GROUP BY s.path ORDER BY max(s.ingested) DESC LIMIT 20", (cwd,))
        for row in rows:
            name = Path(str(row["path"]).rsplit("#", 1)[0]).parent.name
            folder = root / name
            try:
                if name and folder.is_dir():
                    out[cwd] = folder
                    break
            except OSError:
                continue
    return out


def _last_session(project: Path) -> float:
    """When a Claude Code project folder was last used, by the file system's times: its newest
    transcript (`*.jsonl` directly in it) or the folder's own time (a session's new transcript,
    or Claude Code's removal of old ones, changes it), whichever is later."""
    try:
        newest = project.stat().st_mtime
        with os.scandir(project) as entries:
            for entry in entries:
                if entry.name.endswith(".jsonl") and entry.is_file():
                    newest = max(newest, entry.stat().st_mtime)
    except OSError:
        return 0.0
    return newest


def _general_folders(lessons: list[dict[str, Any]], made: set[Path], days: float,
                     known: dict[str, Path]) -> list[Path]:
    """The project folders in use (`_in_use`), where a lesson with no project goes, given the
    lessons shown (those of a project make its folder one in use)."""
    root = paths.claude_projects_dir()
    projects = sorted(_abs(p) for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    own = {_abs(folder) for l in lessons if l.get("cwd") for folder in _targets(l, [], known)}
    return _in_use(projects, own, made, days)


def _in_use(projects: list[Path], own: set[Path], made: set[Path], days: float) -> list[Path]:
    """The project folders a lesson with no project goes to: with `days` (render.general_days),
    those with a session in that many days, a lesson of their own project (`own`: their memory
    folders), or a memory folder remem did not make (Claude Code's own memory, the person's);
    a long-unused project gets no memory folder, nor a hundred lesson files, from remem. The
    file system's clock, not remem's: the times compared are the file system's."""
    if not days:
        return projects
    since = time.time() - days * 86400
    out = []
    for project in projects:
        memory = _abs(project / "memory")
        if (memory in own or (memory.is_dir() and memory not in made)
                or _last_session(project) >= since):
            out.append(project)
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _words(lesson: dict[str, Any]) -> str:
    """A short hash of a lesson's words exactly as they are: an edit changes it."""
    return _sha256(lesson["text"].encode("utf-8"))[:16]


def _wanted(info: dict[str, Any]) -> dict[str, Any]:
    """A listed file's record once its lesson is shown here again: no longer one to remove, so
    deleting it is a veto again."""
    return {k: v for k, v in info.items() if k != "remove"}


def _changed_by_hand(path: Path, info: dict[str, Any] | None, wanted: bytes | None = None) -> bool:
    """Whether a lesson file is no longer what remem last wrote in it (written.json's `sha256`
    of those bytes), nor what it would write now (`wanted`): the person edited it. A file
    listed with no such hash (written before remem kept one), or that cannot be read, is
    remem's as before."""
    if not info or not isinstance(info.get("sha256"), str):
        return False
    try:
        found = path.read_bytes()
    except OSError:
        return False
    return found != wanted and _sha256(found) != info["sha256"]


def _cannot(exc: OSError) -> str:
    """Why a file could not be written, and what to do: write_atomic's `refuse_protected`
    reasons say it already; the system's reasons are about the folder."""
    if exc.errno in (errno.EACCES, errno.EMLINK) and exc.strerror and exc.strerror.startswith("it "):
        return exc.strerror
    return f"{exc.strerror or exc}; check the folder's permissions"


def _shared_memory_md(folders: list[Path]) -> dict[Path, list[Path]]:
    """The folders whose MEMORY.md is one file with another folder's (linked to one file in a
    dotfiles repo, say), each with every folder sharing it."""
    by_file: dict[str, list[Path]] = {}
    for folder in folders:
        memory = folder / "MEMORY.md"
        if os.path.lexists(memory):
            by_file.setdefault(os.path.realpath(memory), []).append(folder)
    return {folder: group for group in by_file.values() if len(group) > 1 for folder in group}


def _would_change(path: Path, data: bytes) -> bool:
    """Whether writing `data` to `path` would change it (a dry run's count)."""
    try:
        return path.read_bytes() != data
    except OSError:
        return True


def _without_unmarked_own_lines(original: str, tag: str, owned: set[str]) -> str:
    """MEMORY.md whose marker lines the person took out, without the lines of remem's section
    this memory wrote, still there without their markers: its index lines (`tag` in the linked
    name, or a name it owned, `owned`; a file since removed too), its "… more" line, and, when
    one of those went, remem's heading. The section appended next lists what holds now; kept,
    they would stand twice, and point at files that are gone. Every other line stays."""
    pieces = re.split(r"(?<=\n)", original)
    kept: list[str] = []
    for piece in pieces:
        words = piece.rstrip("\r\n").strip()
        index, more = _INDEX_LINE.fullmatch(words), _MORE_LINE.fullmatch(words)
        if (index and (_name_tag(index.group(1)) == tag or index.group(1) in owned)) or (more and more.group(1) == tag):
            continue
        kept.append(piece)
    if len(kept) == len(pieces):
        return original
    return "".join(p for p in kept if p.rstrip("\r\n").strip() != HEADING)


def _listing(lessons: list[dict[str, Any]]) -> str:
    """The command that lists a folder's lessons: by its project when a lesson there has one
    (a folder name does not give the path back), else every lesson."""
    import shlex

    cwds = sorted({l["cwd"] for l in lessons if l.get("cwd")})
    if len(cwds) == 1 and cwds[0].isprintable() and "`" not in cwds[0]:
        return f"remem lessons list --project {shlex.quote(cwds[0])} --limit 0"
    return "remem lessons list --limit 0"


def _set_aside_said(path: Path, why: str, dry_run: bool, then: str) -> str:
    """Set an unreadable record aside (render_files.set_aside), and the problem line saying so:
    the file, why, where it went, and `then`, what that means here."""
    bad = set_aside(path, why, dry_run=dry_run)
    moved = f"the next sleep sets it aside as {bad.name}" if dry_run else f"it is set aside as {bad.name}"
    return f"{path} could not be read ({why}); {moved}, and a new one is started: {then}"


def _found_without_record(store: Store, tag: str) -> dict[str, dict[str, Any]]:
    """This memory's lesson files in Claude Code's memory folders, when written.json could not
    be read: each listed as remem's when it holds exactly what render would write for its
    lesson now, else as the person's (a `sha256` no file has, so `_changed_by_hand` holds: it
    is neither overwritten nor removed, and said so), as a hand edit is."""
    root = _abs(paths.claude_projects_dir())
    if not root.is_dir():
        return {}
    lessons = {l["id"]: l for l in list_lessons(store, statuses=None)}
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(root.glob(f"*/memory/remem-{tag}-*.md")):
        found = _TAGGED_NAME.fullmatch(path.name)
        if not found or found.group(1) != tag or not path.is_file():
            continue
        lesson = lessons.get(found.group(2))
        info: dict[str, Any] = {"lesson": found.group(2), "sha256": ""}
        if lesson is not None:
            info["words"] = _words(lesson)
            wanted = lesson_file(lesson, _provenance(store, [lesson])[lesson["id"]], tag).encode("utf-8")
            try:
                if path.read_bytes() == wanted:
                    info["sha256"] = _sha256(wanted)
            except OSError:
                pass
        out[str(_abs(path))] = info
    return out


def _not_a_folder(folder: Path) -> str | None:
    """Why a project's `memory` is no folder remem can write lessons into (None: it is one, or
    is not there yet): a file, or a link to nothing (writing through it would make the link's
    target, a folder the person never asked for)."""
    if not os.path.lexists(folder) or folder.is_dir():
        return None
    what = ("a link to nothing" if not os.path.exists(folder) else "a link to a file") \
        if folder.is_symlink() else "a file"
    return (f"{folder} is {what}, not a folder: remem writes no lessons there; move it aside (or point "
            "the link at a folder) and the next sleep writes them")


def render(
    store: Store,
    *,
    events: dict[str, list[Any]] | None = None,
    faded: int = 0,
    dry_run: bool = False,
    morning: bool = True,
    covers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Vetoes first, then lesson files, MEMORY.md sections, lessons.jsonl and morning.md
    (`covers`: the span of runs its events come from, sleep_passes.unreported)."""
    from remem import config

    settings = config.load()["render"]
    problems: list[str] = []
    # The records: one that cannot be read is set aside, never written over (its records lost).
    vetoed, bad_vetoes = read_record(vetoed_path(), {})
    record, bad_record = read_record(written_path(), {})
    if bad_vetoes:
        problems.append(_set_aside_said(vetoed_path(), bad_vetoes, dry_run, (
            "lessons vetoed before stay vetoed; to keep its records (the status a restore gives back, "
            "vetoes of words learned again), fix its JSON and copy its entries into the new one")))
    if bad_record:
        problems.append(_set_aside_said(written_path(), bad_record, dry_run, (
            "with no record of the lesson files it wrote, remem takes each one that is not exactly what "
            "it would write now as yours: none of those is overwritten or removed (each is named below)")))
    files = _owned_files(record)  # only this memory's: never another's, copied with the home
    made = _owned_folders(record)  # memory folders an earlier render made: unrender may remove them
    active = {l["id"]: l for l in list_lessons(store, statuses=RENDERED_STATUSES)}
    known = _transcript_folders(store, active.values())

    # 1. A file we wrote for a still-active lesson that is gone (its folder still there) = a veto.
    new_vetoes = _veto_deleted(store, files, active, vetoed, write_db=not dry_run,
                               days=settings["general_days"], made=made, known=known)
    if new_vetoes and not dry_run:  # with the status: a render cut short keeps both
        write_atomic(vetoed_path(), _dump(vetoed))
    vetoed_hashes = {v.get("hash") for v in vetoed.values() if isinstance(v, dict)}
    for lid in new_vetoes:
        active.pop(lid, None)
    shown = [l for l in active.values() if l["hash"] not in vetoed_hashes and l["id"] not in vetoed]
    shown.sort(key=lambda l: (-l["strength"], l["created"], l["id"]))

    # 2. Lesson files per project memory folder.
    root = paths.claude_projects_dir()
    projects = sorted(_abs(p) for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    in_use = _general_folders(shown, made, settings["general_days"], known)
    per_folder: dict[Path, list[dict[str, Any]]] = {}
    homeless = 0  # a project's lessons before Claude Code has a folder for that project
    for lesson in shown:
        targets = _targets(lesson, in_use, known)
        homeless += not targets and bool(lesson.get("cwd") or not projects)  # not: none in use
        for folder in targets:
            per_folder.setdefault(_abs(folder), []).append(lesson)
    prov = _provenance(store, shown)
    tag = memory_tag()
    if bad_record:  # no record: what is in the folders is remem's only when it is what remem writes
        files = _found_without_record(store, tag)
    new_files: dict[str, dict[str, Any]] = {}
    # written / removed: the files this run wrote (lesson files and MEMORY.md) and removed; in a
    # dry run, those it would write and remove.
    out = {"lessons": len(shown), "folders": len(per_folder), "written": 0, "removed": 0,
           "no_project_folder": homeless, "vetoed": len(new_vetoes), "vetoed_ids": new_vetoes,
           "edited_by_hand": 0, "dry_run": dry_run}
    for folder, lessons in sorted(per_folder.items()):
        not_folder = _not_a_folder(folder)
        if not_folder:
            problems.append(not_folder)
            continue
        new_folder = not folder.is_dir()
        for lesson in lessons:
            path = folder / lesson_filename(lesson["id"], tag)
            info = files.get(str(path))
            data = lesson_file(lesson, prov[lesson["id"]], tag).encode("utf-8")
            if info is not None and _changed_by_hand(path, info, data) and info.get("words") == _words(lesson):
                # The person's edit: theirs until they edit the lesson's words (then the file is
                # written from those) or delete the file (a veto).
                out["edited_by_hand"] += 1
                problems.append(f"{path} was changed by hand, so remem leaves it as it is: put your words "
                                f"into the lesson with `remem lessons edit {lesson['id']}` (remem then writes "
                                "the file from them), or delete the file to veto the lesson")
                new_files[str(path)] = _wanted(info)
                continue
            record = {"lesson": lesson["id"], "sha256": _sha256(data), "words": _words(lesson)}
            # The person may have made it a link (to a dotfiles repo): the link stays, its target
            # written, when that holds what remem wrote; a link to anything else (no hash of
            # what remem wrote to compare with) is replaced by the file, its target untouched.
            through = isinstance((info or {}).get("sha256"), str)
            try:
                if dry_run:
                    out["written"] += _would_change(path, data)
                elif write_atomic(path, data, through_links=through, refuse_protected=True):
                    out["written"] += 1
            except OSError as exc:
                problems.append(f"cannot write {path} ({_cannot(exc)})")
                if not os.path.lexists(path):
                    continue  # never recorded, so its absence is no veto
                record = _wanted(info or {"lesson": lesson["id"]})  # it still holds what it held
            new_files[str(path)] = record
        if new_folder and folder.is_dir():  # made by the first write above
            made.add(folder)
    # Files we wrote before that are no longer wanted (merged, vetoed, revoked, in a project
    # no longer in use, narrowed to another project, or named as before names carried the
    # memory): remove them. One that cannot be removed, or that the person changed, stays listed
    # (`remove`): the next render tries again, and its absence is never a veto.
    doomed: list[str] = []
    for path_s, info in files.items():
        if path_s in new_files:
            continue
        path = Path(path_s)
        if not os.path.lexists(path):
            continue
        if dry_run:
            out["removed"] += not _changed_by_hand(path, info)
            continue
        if _changed_by_hand(path, info):
            out["edited_by_hand"] += 1
            problems.append(f"{path} was changed by hand; its lesson {info.get('lesson')} is no longer "
                            "shown to agents here, so remem leaves your file as it is: delete it when you "
                            "no longer need it")
            new_files[path_s] = {**info, "remove": True}
            continue
        doomed.append(path_s)
    if doomed:
        # First, in written.json, each file about to go is one to remove (and the files written
        # above are listed): a render cut short among the removals (Ctrl-C, a kill, a crash)
        # leaves no listed file gone that reads as the person's veto. The next render lists
        # what it finds removed no more, and removes the rest.
        marked = {**files, **new_files, **{p: {**files[p], "remove": True} for p in doomed}}
        write_atomic(written_path(), _dump(_written_record(marked, {f for f in made if f.is_dir()})))
    for path_s in doomed:
        path, info = Path(path_s), files[path_s]
        try:
            path.unlink()
            out["removed"] += 1
        except FileNotFoundError:
            pass  # gone meanwhile: what was wanted
        except OSError as exc:
            problems.append(f"cannot remove {path} ({exc.strerror or exc}); the next sleep tries again, "
                            "or delete it by hand")
            new_files[path_s] = {**info, "remove": True}
    # 3. MEMORY.md sections: every folder we write to now or wrote to before.
    folders = sorted(set(per_folder) | {Path(p).parent for p in files})
    owned_names = _owned_names(files)
    # Every project's MEMORY.md counts: one linked into a project remem writes nothing to is shared too.
    shared = _shared_memory_md(sorted(set(folders) | {p / "memory" for p in projects}))
    told: set[str] = set()
    for folder in folders:
        if not folder.parent.is_dir() or _not_a_folder(folder):
            continue  # not a folder: said above when lessons go there
        memory = folder / "MEMORY.md"
        # Never overwrite a file we cannot read back exactly: say why, and what to do.
        try:
            raw = memory.read_bytes()
        except FileNotFoundError:
            raw = b""
        except IsADirectoryError:
            problems.append(f"{memory} is a folder, not a file: remem lists none of its lessons in it; "
                            "move that folder aside and the next sleep writes MEMORY.md")
            continue
        except OSError as exc:
            problems.append(f"cannot read {memory} ({exc.strerror or exc}); remem lists none of its "
                            "lessons in it until it can: check the file's permissions")
            continue
        try:
            original = raw.decode("utf-8")  # bytes: keep \r\n exactly
        except UnicodeDecodeError:
            problems.append(f"{memory} is not UTF-8 text, so remem leaves it as it is and lists none of "
                            "its lessons in it: save it as UTF-8 and the next sleep lists them")
            continue
        lessons = per_folder.get(folder, [])
        if folder in shared:
            real = os.path.realpath(memory)
            if real not in told:
                told.add(real)
                names = ", ".join(str(f.parent.name) for f in shared[folder])
                problems.append(f"{real} is the MEMORY.md of {len(shared[folder])} project folders ({names}): "
                                "remem lists none of its lessons in a MEMORY.md several projects share (their "
                                "lessons differ), and takes its earlier lines out; give each project its own "
                                "MEMORY.md to have them listed")
            lessons = []  # its own lines out of the section, if there is one; nothing added
        try:
            if folder in shared and not has_section(original):
                continue
            others = others_lines(original, folder, tag, owned_names.get(folder, set()))
            body = section_body(lessons, tag, others, most_lines=settings["index_lines"],
                                most_bytes=settings["index_bytes"], listing=_listing(lessons))
            kept = original if has_section(original) else _without_unmarked_own_lines(
                original, tag, owned_names.get(folder, set()))
            new = replace_section(kept, body)
            if not body:  # no memory has a line here: the section goes whole, as unrender takes it
                new = without_own_lines(new, tag, set())
        except MarkersOutOfPlace as exc:
            problems.append(f"{memory}: {exc}")
            continue
        if (not original and not body) or new == original:
            continue
        if not new.lstrip("\ufeff") and not memory.is_symlink():
            # Nothing but remem's section was in it: the file goes (as unrender does), and so
            # does the memory folder render made, once nothing else is in it (below). Counted
            # as a change of MEMORY.md is (`written`): `removed` counts lesson files.
            if dry_run:
                out["written"] += 1
                continue
            try:
                memory.unlink()
                out["written"] += 1
            except FileNotFoundError:
                pass
            except OSError as exc:
                problems.append(f"cannot remove {memory} ({exc.strerror or exc}), which holds nothing but "
                                "remem's empty section: delete it by hand")
            continue
        if dry_run:
            out["written"] += 1
        else:
            try:
                # The person's file: a link (to a dotfiles repo, say) stays, its target is written;
                # one they made read-only, or hard-linked, is left alone.
                out["written"] += write_atomic(memory, new, through_links=True, refuse_protected=True)
            except OSError as exc:
                problems.append(f"cannot write {memory} ({_cannot(exc)})")
    if not dry_run:
        # A memory folder render made that no lesson goes to any more, and is empty now (its
        # lesson files and its section-only MEMORY.md removed above), goes too: a project unused
        # for long, or whose lessons were all vetoed, keeps nothing of remem's.
        for folder in sorted(made - set(per_folder)):
            try:
                folder.rmdir()  # only ever an empty folder: anything in it keeps it
            except OSError:
                pass
    if problems:
        from remem.log import log

        for problem in problems:
            log("render", problem)
        out["problems"] = problems[:20]
    # 4. Records, the wire file, the report.
    if not dry_run:
        write_atomic(written_path(), _dump(_written_record(new_files, {f for f in made if f.is_dir()})))
        write_atomic(vetoed_path(), _dump(vetoed))
        jsonl = "".join(wire_line(l) + "\n" for l in sorted(shown, key=lambda l: (l["created"], l["id"])))
        write_atomic(paths.lessons_jsonl_path(), jsonl, through_links=True)
        if morning:
            earlier = list((events or {}).get("vetoed", []))  # taken before the merge pass
            write_atomic(paths.morning_path(), morning_report(store, events or {}, faded,
                                                              earlier + new_vetoes, covers),
                         through_links=True)
    return out


# --------------------------------------------------------------------------- unrender

def unrender(*, dry_run: bool = False) -> dict[str, Any]:
    """Take out of the Claude Code memory folders what render wrote there for this memory
    (`remem setup --remove`): its lesson files, and its lines of each MEMORY.md section; the
    section's markers go too once no memory has a line left in it, and a MEMORY.md that held
    nothing but the section goes. Every other byte of MEMORY.md is kept.

    This memory's files are those it owns (`_owned_files`) and any lesson file named with its
    tag (one whose record was lost). Their entries leave written.json before the files go, so
    neither a crash in between nor the next render reads a removed file as the person's veto:
    the next sleep writes them again. A listed file already gone (deleted by the person, a veto
    no sleep has taken yet) keeps its entry, so that veto still counts.

    A lesson file the person changed (its bytes are not those remem last wrote) stays, and
    stays listed: their words are theirs to delete. A MEMORY.md whose markers are out of place
    (render_text.MarkersOutOfPlace), or that is write-protected, is left alone, each a problem.

    A memory folder render made (`_owned_folders`) that is empty once these go is removed too;
    one that was there before, or holds anything else, stays, and so does one holding the place
    of a listed file already gone (its veto counts only while the folder is there).

    Returns {"files": lesson files removed, "memory_md": [{"path", "before", "after"}] (after
    None: the file is deleted), "folders": empty memory folders removed, "problems": one line
    each}. A dry run writes nothing. A real run holds the sleep lock, so a sleep never writes
    the files again meanwhile; RememError (naming the fix) while another sleep runs."""
    if dry_run or not paths.home().is_dir():  # no home: no sleep to wait for, none to create
        return _unrender(dry_run=dry_run)
    from remem.engine.sleep import sleep_lock

    with sleep_lock():
        return _unrender(dry_run=False)


def _unrender(*, dry_run: bool) -> dict[str, Any]:
    record, bad_record = read_record(written_path(), {})
    files = _owned_files(record)
    made = _owned_folders(record)
    tag = memory_tag()
    root = _abs(paths.claude_projects_dir())
    folders = sorted(_abs(f) for f in root.glob("*/memory") if f.is_dir()) if root.is_dir() else []
    doomed = {_abs(p) for p in files if os.path.lexists(p)}
    owned_names = _owned_names(files)
    out: dict[str, Any] = {"files": [], "memory_md": [], "folders": [], "problems": []}
    if bad_record:
        # No record of what remem wrote in them, so none is known to be unchanged: all stay.
        out["problems"].append(f"{written_path()} could not be read ({bad_record}), so remem cannot tell the "
                               "lesson files it wrote from ones you changed and removes none: fix it, or "
                               f"delete it to have every remem-{tag}-*.md file removed, then run this again")
    for folder in folders if not bad_record else []:
        for path in folder.glob(f"remem-{tag}-*.md"):
            if _name_tag(path.name) == tag and (path.is_file() or path.is_symlink()):
                doomed.add(path)
    for path in sorted(doomed):
        if _changed_by_hand(path, files.get(str(path))):
            # The person's words are in it: theirs to delete. Still listed, so it is never a veto.
            out["problems"].append(f"{path} was changed by hand, so it stays; delete it yourself if you "
                                   "no longer need it")
            doomed.discard(path)
        else:
            out["files"].append(str(path))
    listed = {p for p in files if Path(p) in doomed}
    left = {p: info for p, info in files.items() if p not in listed}  # written.json once they go
    if not dry_run:
        if listed:  # first: a removed file that is still listed would read as a veto
            write_atomic(written_path(), _dump(_written_record(left, made)))
        kept: list[str] = []
        for path in sorted(doomed):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                out["problems"].append(f"cannot remove {path} ({exc.strerror or exc}); delete it by hand")
                out["files"].remove(str(path))
                if str(path) in listed:
                    kept.append(str(path))
        if kept:  # still there: listed again, so the next render keeps track of it
            left = {p: info for p, info in files.items() if p not in listed or p in kept}
            write_atomic(written_path(), _dump(_written_record(left, made)))
    for folder in folders:
        change = _unrendered_memory_md(folder / "MEMORY.md", tag, owned_names.get(folder, set()), out)
        if change is None:
            continue
        out["memory_md"].append(change)
        if dry_run:
            continue
        memory = folder / "MEMORY.md"
        try:
            if change["after"] is None:
                memory.unlink()
            else:
                write_atomic(memory, change["after"], through_links=True, refuse_protected=True)
        except OSError as exc:
            out["problems"].append(f"cannot write {memory} ({_cannot(exc)}); or take remem's section "
                                   f"({BEGIN} … {END}) out by hand")
    _remove_made_folders(made, left, out, dry_run=dry_run)
    return out


def _remove_made_folders(made: set[Path], left: dict[str, dict[str, Any]], out: dict[str, Any],
                         *, dry_run: bool) -> None:
    """Remove the memory folders render made that unrender left empty (a dry run: that it would
    leave empty), and let written.json forget them. A folder still holding a listed file's
    place (a file the person deleted: a veto no sleep has taken yet) stays."""
    waiting = {Path(p).parent for p in left}
    gone = {Path(p) for p in out["files"]} | {Path(m["path"]) for m in out["memory_md"] if m["after"] is None}
    removed: set[Path] = set()
    for folder in sorted(made - waiting):
        try:
            if dry_run:
                if all(folder / name in gone for name in os.listdir(folder)):
                    out["folders"].append(str(folder))
                continue
            folder.rmdir()  # only ever an empty folder: anything in it keeps it
        except FileNotFoundError:
            removed.add(folder)  # gone already: nothing to remember
            continue
        except OSError:
            continue  # not empty (or not ours to remove): it stays, and stays listed
        removed.add(folder)
        out["folders"].append(str(folder))
    if removed and not dry_run:
        write_atomic(written_path(), _dump(_written_record(left, made - removed)))


def _unrendered_memory_md(memory: Path, tag: str, owned: set[str],
                          out: dict[str, Any]) -> dict[str, Any] | None:
    """The change unrender makes to one MEMORY.md (None: none): before, and after (None when
    the file held nothing but remem's section and is not a link the person made)."""
    try:
        raw = memory.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        out["problems"].append(f"cannot read {memory} ({exc.strerror or exc}); take remem's section "
                               f"({BEGIN} … {END}) out by hand")
        return None
    if BEGIN.encode() not in raw:
        return None
    try:
        original = raw.decode("utf-8")  # bytes: keep \r\n exactly
    except UnicodeDecodeError:
        out["problems"].append(f"{memory} is not UTF-8 text; take remem's section ({BEGIN} … {END}) "
                               "out by hand")
        return None
    try:
        after = without_own_lines(original, tag, owned)
    except MarkersOutOfPlace as exc:
        out["problems"].append(f"{memory}: {exc}")
        return None
    if after == original:
        return None
    gone = not after.lstrip("\ufeff") and not memory.is_symlink()  # nothing left but a byte-order mark
    return {"path": str(memory), "before": original, "after": None if gone else after}
