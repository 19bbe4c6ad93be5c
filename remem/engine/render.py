"""Render: what sleep hands to agents and to the person.

- One `remem-<memory>-<id>.md` per active lesson into each project's Claude Code memory folder
  (`<claude projects>/<folder named after the cwd>/memory/`); a lesson with no cwd goes to
  every project folder that exists. `<memory>` is a short id of this memory taken from its
  home (`memory_tag`): two memories rendering into one ~/.claude (a work and a personal one,
  or a test memory imported from the real one, whose lessons keep their ids) never write,
  remove or read as vetoed the same file. Files named `remem-<id>.md`, as before names
  carried the memory, are replaced by the new names at the next render, never taken as vetoes.
- In each folder's MEMORY.md only the section between `<!-- remem:begin -->` and
  `<!-- remem:end -->` is rewritten; every other byte of the file is kept. The section is
  shared: a memory rewrites its own index lines and keeps another memory's (those whose file
  is still there), grouped by memory, so every memory renders the same section.
- `written.json` (in remem's home) lists the files remem wrote. A listed file of an active
  lesson that is gone on the next render was deleted by the person: the lesson is vetoed
  (status 'vetoed', `vetoed.json`), never rendered again, and its other copies are removed.
  Sleep also takes these vetoes before its merge pass (take_vetoes), so a vetoed lesson never
  merges away. A memory acts only on the files it owns (`_owned_files`): a memory folder
  copied elsewhere never removes, nor takes as vetoed, the files of the one it was copied from.
- `unrender` (`remem setup --remove`) takes out of agent folders what render wrote there for
  this memory: its lesson files and its lines of each MEMORY.md section. It first drops those
  files from written.json, so a file it removes is never read as the person's veto: the next
  render writes it again (a listed file that was already gone stays listed, a veto still).
- `lessons.jsonl` (remem's home): every active lesson, one wire line each (docs/PROTOCOL.md).
- `morning.md` (remem's home): the owner's report of the run.

Every file is written atomically (a temp file in the same folder, then rename), and only
when its bytes change. MEMORY.md, lessons.jsonl and morning.md may be symlinks the person
made (to a dotfiles repo, say): the link stays, its target is written (the temp file beside
the target) and keeps its mode.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from remem import paths
from remem.engine import clock
from remem.engine.files import write_atomic
from remem.engine.lesson_text import clip
from remem.engine.lessons import get_lesson, list_lessons, set_status, wire_line
from remem.engine.store import LESSON_STATUSES, Store

BEGIN = "<!-- remem:begin -->"
END = "<!-- remem:end -->"
RENDERED_STATUSES = ("active",)
DESCRIPTION_CHARS = 150  # a lesson file's frontmatter description, at most
INDEX_CHARS = 120  # a lesson's line in MEMORY.md's index, at most (the link aside)
_TYPE = {"correction": "feedback", "error": "feedback", "surprise": "project", "note": "project"}
TAG_CHARS = 8  # hex characters of the memory's id in a file name: 4 billion values
# A lesson file named by its memory: remem-<memory tag>-<lesson id>.md (lesson ids are hex,
# with no '-', so a name before tags, remem-<lesson id>.md, never matches).
_TAGGED_NAME = re.compile(rf"remem-([0-9a-f]{{{TAG_CHARS}}})-([^/\\]+)\.md")
# A lesson's line in MEMORY.md's index, and the file it links to.
_INDEX_LINE = re.compile(r"- \[.*\]\((remem-[^()/\\\s]+\.md)\)\s*")


def written_path() -> Path:
    return paths.home() / "written.json"


def vetoed_path() -> Path:
    return paths.home() / "vetoed.json"


# --------------------------------------------------------------------------- files

def _read_json(path: Path, default: Any) -> Any:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def _section_span(original: str) -> tuple[int, int] | None:
    """Where remem's section is in MEMORY.md: the offsets of its BEGIN marker and of the first
    END marker after it (None: the file has no whole section)."""
    start = original.find(BEGIN)
    end = original.find(END, start + len(BEGIN)) if start >= 0 else -1
    return (start, end) if start >= 0 and end >= 0 else None


def _section_lines(original: str, span: tuple[int, int]) -> list[tuple[str, str | None]]:
    """The lines between the markers, each with its line break, and the lesson file it links
    to when it is an index line (None: the heading, or anything else)."""
    start, end = span
    out: list[tuple[str, str | None]] = []
    for line in original[start + len(BEGIN):end].splitlines(keepends=True):
        found = _INDEX_LINE.fullmatch(line.rstrip())
        out.append((line, found.group(1) if found else None))
    return out


def replace_section(original: str, body: str) -> str:
    """MEMORY.md with only remem's marked section replaced (appended when there is none)."""
    section = f"{BEGIN}\n{body.rstrip()}\n{END}" if body.strip() else f"{BEGIN}\n{END}"
    span = _section_span(original)
    if span is not None:
        start, end = span
        return original[:start] + section + original[end + len(END):]
    if not original:
        return section + "\n"
    sep = "" if original.endswith("\n\n") else ("\n" if original.endswith("\n") else "\n\n")
    return original + sep + section + "\n"


def record_veto(lesson: dict[str, Any], how: str = "vetoed by the person") -> None:
    """Add a lesson to vetoed.json (by id and hash: a lesson with its text is never rendered).

    The record keeps the status and note the lesson had (`was`, `note`), so a restore puts it
    back there; a veto of a lesson already vetoed keeps the first record's."""
    vetoed = _read_json(vetoed_path(), {})
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
    vetoed = _read_json(vetoed_path(), {})
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
    vetoed = _read_json(vetoed_path(), {})
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
        return f"{lid} was revoked by its author: it is never handed to an agent and cannot come back"
    return None


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
    clear_veto(lesson)
    return done


def _before_veto(lesson: dict[str, Any]) -> tuple[str, str]:
    """The status and note a vetoed lesson had, from its vetoed.json record; without one (a
    received lesson rejected in the Shared tab, an older veto), a received lesson goes back
    through the gate (quarantined when its text fails the safety checks, else candidate)."""
    entry = _read_json(vetoed_path(), {}).get(lesson["id"])
    if isinstance(entry, dict) and entry.get("was") in LESSON_STATUSES and entry["was"] != "vetoed":
        return entry["was"], entry.get("note") or ""
    from remem.engine import share_safety
    from remem.engine.share import _is_own, _our_origin

    if _is_own(lesson, _our_origin(None)):
        return "active", ""
    reasons = share_safety.incoming(lesson["text"])
    if reasons:
        return "quarantined", "quarantined: " + "; ".join(reasons)
    return "candidate", f"received from {lesson['origin']}"


# --------------------------------------------------------------------------- content

def _date(stamp: str | None) -> str:
    return (stamp or "")[:10]


def _at_most(text: str, most: int) -> str:
    """The text on one line in at most `most` characters, cut at a word boundary: an agent
    reads these lines, and a word cut in half ("never push to ma…") can change the meaning."""
    flat = " ".join(text.split())
    return flat if len(flat) <= most else clip(flat, most - 1)  # "…" is the last character


def memory_tag() -> str:
    """This memory's short id, in the name of every file it renders: the start of a hash of its
    home as the file system knows it. Two memories (two homes) rendering into one Claude Code
    folder thus write two files for a lesson they both hold (a copy or an import of a memory
    keeps its lesson ids), and each removes, or takes as vetoed, only its own."""
    return hashlib.sha256(_memory_id().encode("utf-8")).hexdigest()[:TAG_CHARS]


def lesson_filename(lesson_id: str, tag: str | None = None) -> str:
    """The name of a lesson's rendered file: `remem-<memory tag>-<lesson id>.md`."""
    return f"remem-{tag or memory_tag()}-{lesson_id}.md"


def _name_tag(name: str) -> str:
    """The memory tag in a lesson file's name ("" for a name from before names carried one)."""
    found = _TAGGED_NAME.fullmatch(name)
    return found.group(1) if found else ""


def _line_tag(line: str) -> str:
    """The memory tag of the file an index line of MEMORY.md links to ("" when none)."""
    found = _INDEX_LINE.fullmatch(line)
    return _name_tag(found.group(1)) if found else ""


def lesson_file(lesson: dict[str, Any], provenance: list[tuple[str, str]], tag: str | None = None) -> str:
    """The text of one remem-<memory>-<id>.md: frontmatter, the lesson, its provenance."""
    text = lesson["text"]
    desc = _at_most(text, DESCRIPTION_CHARS)
    shown = ", ".join(f"{eid} ({_date(at)})" for eid, at in provenance[:8])
    more = f" and {len(provenance) - 8} more" if len(provenance) > 8 else ""
    noun = lesson["kind"] + ("s" if lesson["seen"] != 1 else "")
    lines = [
        "---",
        f"name: {lesson_filename(lesson['id'], tag)[:-len('.md')]}",
        f"description: {json.dumps(desc, ensure_ascii=False)}",
        f"type: {_TYPE.get(lesson['kind'], 'project')}",
        "---",
        "",
        text,
        "",
        f"Provenance: learned by remem from {lesson['seen']} {noun}"
        + (f": {shown}{more}." if shown else ".")
        + f" Lesson {lesson['id']}. Delete this file to veto it.",
    ]
    return "\n".join(lines) + "\n"


def section_body(lessons: list[dict[str, Any]], tag: str | None = None,
                 others: list[str] | None = None) -> str:
    """MEMORY.md's section: an index line per lesson, and the lines of other memories rendering
    into the same folder (`others`, kept from the section as it was). Lines are grouped by the
    memory tag in their file names, so two memories write the same section, not turn about."""
    tag = tag or memory_tag()
    lines = [(tag, f"- [{_at_most(l['text'], INDEX_CHARS)}]({lesson_filename(l['id'], tag)})")
             for l in lessons]
    lines += [(_line_tag(line), line) for line in others or []]
    if not lines:
        return ""
    lines.sort(key=lambda pair: pair[0])  # stable: each memory's own order stays
    return "\n".join(["## Lessons remem learned (delete a file to veto it)", *(l for _, l in lines)])


def others_lines(original: str, folder: Path, tag: str, owned_names: set[str]) -> list[str]:
    """The index lines in MEMORY.md's section that another memory rendered: each links to a
    lesson file that is still in the folder and is neither this memory's name (`tag`) nor one
    it owned (`owned_names`: its files named before names carried the memory)."""
    span = _section_span(original)
    if span is None:
        return []
    kept: list[str] = []
    seen: set[str] = set()
    for line, name in _section_lines(original, span):
        if name is None:
            continue  # the heading, or anything else: rewritten
        if (name in seen or _name_tag(name) == tag or name in owned_names
                or not (folder / name).is_file()):
            continue
        seen.add(name)
        kept.append(line.rstrip())
    return kept


def _provenance(store: Store, lessons: list[dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    ids = sorted({s for l in lessons for s in l["sources"][:8]})
    at: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        for row in store.rows(f"SELECT id, at FROM episodes WHERE id IN ({marks})", chunk):
            at[row["id"]] = row["at"]
    return {l["id"]: [(s, at.get(s, "")) for s in l["sources"]] for l in lessons}


def _targets(lesson: dict[str, Any], projects: list[Path]) -> list[Path]:
    if lesson.get("cwd"):
        folder = paths.claude_projects_dir() / paths.project_folder_name(lesson["cwd"])
        return [folder / "memory"] if folder.is_dir() else []
    return [p / "memory" for p in projects]


# --------------------------------------------------------------------------- vetoes

WRITTEN_VERSION = 2


def _abs(path: str | Path) -> Path:
    """A path made absolute and normal, without following links (a memory folder the person
    linked elsewhere is still where remem wrote it)."""
    return Path(os.path.abspath(path))


def _memory_id() -> str:
    """Who owns a written.json: this memory's home, as the file system knows it."""
    return str(paths.home().resolve())


def _rendered_here(path: Path, lesson_id: Any, root: Path) -> bool:
    """Whether a path is a lesson file render writes: `remem-<tag>-<its lesson>.md` (any tag: a
    memory moved to another home had another), or `remem-<its lesson>.md` as named before names
    carried the memory, directly in a project's `memory/` folder under this memory's Claude Code
    projects folder."""
    if not isinstance(lesson_id, str) or path.parent.name != "memory" or path.parent.parent.parent != root:
        return False
    found = _TAGGED_NAME.fullmatch(path.name)
    return path.name == f"remem-{lesson_id}.md" or bool(found and found.group(2) == lesson_id)


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


def _owned_files() -> dict[str, dict[str, Any]]:
    """The files of written.json this memory owns, by absolute path: only these may be removed,
    and only their absence is a veto (unless another memory took the file over:
    `_left_for_another_memory`), or their folder's MEMORY.md section rewritten.

    A listed file is ours when both hold:
    1. it is a lesson file named as render names them (`_rendered_here`): under the Claude Code
       projects folder this memory renders into (for the demo memory, the one inside its home);
    2. the entry is this memory's: a path relative to the home (a file inside it, which moved
       or was copied with the home, so each copy owns its own copy of the file), or an absolute
       path in a written.json this memory wrote (`home` is this home, or a home that holds no
       memory any more: this one was moved from there). A written.json copied from another
       memory names that memory's `home`: its absolute entries are the other memory's files,
       never acted on; the next render writes this memory's own list.
    A written.json before version 2 has no owner: its absolute paths count by rule 1 alone
    (the copied demo memory's list names the original's folder, not this one's)."""
    record = _read_json(written_path(), {})
    files = record.get("files")
    if not isinstance(files, dict):
        return {}
    owner = record.get("home")
    # A list whose memory is gone (the home was moved here, not copied) is this memory's.
    mine = (owner is None or owner == _memory_id()
            or not (isinstance(owner, str) and (Path(owner) / "memory.db").exists()))
    home, root = _abs(paths.home()), _abs(paths.claude_projects_dir())
    out: dict[str, dict[str, Any]] = {}
    for key, info in files.items():
        if not isinstance(info, dict) or not isinstance(key, str) or not key:
            continue
        if Path(key).is_absolute():
            if not mine:
                continue
            path = _abs(key)
        else:
            path = _abs(home / key)
        if _rendered_here(path, info.get("lesson"), root):
            out[str(path)] = info
    return out


def _owned_names(files: dict[str, dict[str, Any]]) -> dict[Path, set[str]]:
    """The names of the owned files (`_owned_files`), by their folder."""
    names: dict[Path, set[str]] = {}
    for path_s in files:
        names.setdefault(Path(path_s).parent, set()).add(Path(path_s).name)
    return names


def _written_record(files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """written.json's content: the owner, and each file relative to the home when inside it."""
    home = _abs(paths.home())
    listed: dict[str, dict[str, Any]] = {}
    for path_s, info in files.items():
        path = _abs(path_s)
        try:
            listed[path.relative_to(home).as_posix()] = info
        except ValueError:
            listed[str(path)] = info
    return {"version": WRITTEN_VERSION, "home": _memory_id(), "files": listed}


def _veto_deleted(store: Store, files: dict[str, dict[str, Any]], active: dict[str, dict[str, Any]],
                  vetoed: dict[str, Any], *, write_db: bool) -> list[str]:
    """Active lessons a file of which we wrote is gone while its folder is still there: each
    is added to `vetoed` (in memory) and, with write_db, set to status 'vetoed'."""
    found: list[str] = []
    tag = memory_tag()
    for path_s, info in sorted(files.items()):
        lid = info.get("lesson")
        path = Path(path_s)
        if (lid in active and lid not in found and not path.exists() and path.parent.is_dir()
                and not _left_for_another_memory(path, lid, tag)):
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


def take_vetoes(store: Store, *, dry_run: bool = False) -> list[str]:
    """The vetoes of deleted files, taken before sleep merges lessons: a lesson merged away
    first would no longer be active at render, and its veto would be lost. A dry run's store
    is sleep's private copy, so its status changes there too; vetoed.json is not written."""
    vetoed = _read_json(vetoed_path(), {})
    active = {l["id"]: l for l in list_lessons(store, statuses=RENDERED_STATUSES)}
    found = _veto_deleted(store, _owned_files(), active, vetoed, write_db=True)
    if found and not dry_run:
        write_atomic(vetoed_path(), _dump(vetoed))
    return found


# --------------------------------------------------------------------------- render

def render(
    store: Store,
    *,
    events: dict[str, list[Any]] | None = None,
    faded: int = 0,
    dry_run: bool = False,
    morning: bool = True,
) -> dict[str, Any]:
    """Vetoes first, then lesson files, MEMORY.md sections, lessons.jsonl and morning.md."""
    files = _owned_files()  # only this memory's: never another's, copied with the home
    vetoed = _read_json(vetoed_path(), {})
    active = {l["id"]: l for l in list_lessons(store, statuses=RENDERED_STATUSES)}

    # 1. A file we wrote for a still-active lesson that is gone (its folder still there) = a veto.
    new_vetoes = _veto_deleted(store, files, active, vetoed, write_db=not dry_run)
    vetoed_hashes = {v.get("hash") for v in vetoed.values() if isinstance(v, dict)}
    for lid in new_vetoes:
        active.pop(lid, None)
    shown = [l for l in active.values() if l["hash"] not in vetoed_hashes and l["id"] not in vetoed]
    shown.sort(key=lambda l: (-l["strength"], l["created"], l["id"]))

    # 2. Lesson files per project memory folder.
    root = paths.claude_projects_dir()
    projects = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    per_folder: dict[Path, list[dict[str, Any]]] = {}
    homeless = 0  # a project's lessons before Claude Code has a folder for that project
    for lesson in shown:
        targets = _targets(lesson, projects)
        homeless += not targets
        for folder in targets:
            per_folder.setdefault(_abs(folder), []).append(lesson)
    prov = _provenance(store, shown)
    tag = memory_tag()
    new_files: dict[str, dict[str, Any]] = {}
    out = {"lessons": len(shown), "folders": len(per_folder), "written": 0, "removed": 0,
           "no_project_folder": homeless, "vetoed": len(new_vetoes), "vetoed_ids": new_vetoes}
    problems: list[str] = []
    for folder, lessons in sorted(per_folder.items()):
        for lesson in lessons:
            path = folder / lesson_filename(lesson["id"], tag)
            try:
                if not dry_run and write_atomic(path, lesson_file(lesson, prov[lesson["id"]], tag)):
                    out["written"] += 1
            except OSError as exc:
                problems.append(f"cannot write {path} ({exc.strerror or exc}); check the folder's permissions")
                if not path.exists():
                    continue  # never recorded, so its absence is no veto
            new_files[str(path)] = {"lesson": lesson["id"]}
    # Files we wrote before that are no longer wanted (merged, vetoed, revoked, or named as
    # before names carried the memory): remove them.
    for path_s in files:
        if path_s not in new_files:
            path = Path(path_s)
            if path.exists() and not dry_run:
                try:
                    path.unlink()
                    out["removed"] += 1
                except OSError as exc:
                    problems.append(f"cannot remove {path} ({exc.strerror or exc})")
    # 3. MEMORY.md sections: every folder we write to now or wrote to before.
    folders = set(per_folder) | {Path(p).parent for p in files}
    owned_names = _owned_names(files)
    for folder in sorted(folders):
        if not folder.parent.is_dir():
            continue
        memory = folder / "MEMORY.md"
        try:
            original = memory.read_bytes().decode("utf-8")  # bytes: keep \r\n exactly
        except FileNotFoundError:
            original = ""
        except (OSError, UnicodeDecodeError):
            continue  # never overwrite a file we cannot read back exactly
        others = others_lines(original, folder, tag, owned_names.get(folder, set()))
        body = section_body(per_folder.get(folder, []), tag, others)
        if not original and not body:
            continue
        if not dry_run:
            try:
                # The person's file: a link (to a dotfiles repo, say) stays, its target is written.
                write_atomic(memory, replace_section(original, body), through_links=True)
            except OSError as exc:
                problems.append(f"cannot write {memory} ({exc.strerror or exc}); check the folder's permissions")
    if problems:
        from remem.log import log

        for problem in problems:
            log("render", problem)
        out["problems"] = problems[:20]
    # 4. Records, the wire file, the report.
    if not dry_run:
        write_atomic(written_path(), _dump(_written_record(new_files)))
        write_atomic(vetoed_path(), _dump(vetoed))
        jsonl = "".join(wire_line(l) + "\n" for l in sorted(shown, key=lambda l: (l["created"], l["id"])))
        write_atomic(paths.lessons_jsonl_path(), jsonl, through_links=True)
        if morning:
            earlier = list((events or {}).get("vetoed", []))  # taken before the merge pass
            write_atomic(paths.morning_path(), morning_report(store, events or {}, faded,
                                                              earlier + new_vetoes), through_links=True)
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

    Returns {"files": lesson files removed, "memory_md": [{"path", "before", "after"}] (after
    None: the file is deleted), "problems": one line each}. A dry run writes nothing. A real run
    holds the sleep lock, so a sleep never writes the files again meanwhile; RememError (naming
    the fix) while another sleep runs."""
    if dry_run or not paths.home().is_dir():  # no home: no sleep to wait for, none to create
        return _unrender(dry_run=dry_run)
    from remem.engine.sleep import sleep_lock

    with sleep_lock():
        return _unrender(dry_run=False)


def _unrender(*, dry_run: bool) -> dict[str, Any]:
    files = _owned_files()
    tag = memory_tag()
    root = _abs(paths.claude_projects_dir())
    folders = sorted(_abs(f) for f in root.glob("*/memory") if f.is_dir()) if root.is_dir() else []
    doomed = {_abs(p) for p in files if os.path.lexists(p)}
    owned_names = _owned_names(files)
    for folder in folders:
        for path in folder.glob(f"remem-{tag}-*.md"):
            if _name_tag(path.name) == tag and (path.is_file() or path.is_symlink()):
                doomed.add(path)
    out: dict[str, Any] = {"files": [str(p) for p in sorted(doomed)], "memory_md": [], "problems": []}
    if not dry_run:
        listed = {p for p in files if Path(p) in doomed}
        if listed:  # first: a removed file that is still listed would read as a veto
            write_atomic(written_path(), _dump(_written_record(
                {p: info for p, info in files.items() if p not in listed})))
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
            write_atomic(written_path(), _dump(_written_record(
                {p: info for p, info in files.items() if p not in listed or p in kept})))
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
                write_atomic(memory, change["after"], through_links=True)
        except OSError as exc:
            out["problems"].append(f"cannot write {memory} ({exc.strerror or exc}); take remem's section "
                                   f"({BEGIN} … {END}) out by hand")
    return out


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
    after = without_own_lines(original, tag, owned)
    if after == original:
        return None
    gone = not after and not memory.is_symlink()
    return {"path": str(memory), "before": original, "after": None if gone else after}


def without_own_lines(original: str, tag: str, owned: set[str]) -> str:
    """MEMORY.md without this memory's index lines (its `tag` in the linked name, or a name it
    owned, in `owned`). Once no memory has a line left, the section goes whole: the markers,
    the line break after them and, when the section ended the file, the blank line render put
    before it. Every other byte is kept."""
    span = _section_span(original)
    if span is None:
        return original
    start, end = span
    kept = [(line, name) for line, name in _section_lines(original, span)
            if not (name and (_name_tag(name) == tag or name in owned))]
    if any(name for _, name in kept):  # another memory's lines: the section stays
        return original[:start + len(BEGIN)] + "".join(line for line, _ in kept) + original[end:]
    before, after = original[:start], original[end + len(END):]
    after = after[2:] if after.startswith("\r\n") else after.removeprefix("\n")
    if not after and before.endswith("\n\n"):
        before = before[:-1]
    return before + after


# --------------------------------------------------------------------------- morning.md

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
