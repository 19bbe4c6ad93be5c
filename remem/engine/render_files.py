"""Which rendered lesson files are this memory's: their names (memory_tag) and written.json."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from remem import paths

TAG_CHARS = 8  # hex characters of the memory's id in a file name: 4 billion values
# A lesson file named by its memory: remem-<memory tag>-<lesson id>.md (lesson ids are hex,
# with no '-', so a name before tags, remem-<lesson id>.md, never matches).
_TAGGED_NAME = re.compile(rf"remem-([0-9a-f]{{{TAG_CHARS}}})-([^/\\]+)\.md")


WRITTEN_VERSION = 2


def written_path() -> Path:
    return paths.home() / "written.json"


def _read_json(path: Path, default: Any) -> Any:
    """A record of remem's home, or `default` when it is missing or cannot be read. Only for
    reading: a caller that writes the file back uses read_record, which tells the two apart."""
    return read_record(path, default)[0]


def read_record(path: Path, default: Any) -> tuple[Any, str | None]:
    """A JSON record of remem's home (written.json, vetoed.json), and why it cannot be read:
    None when it can, or when it is missing (then `default`). One that is there but cannot be
    read (not JSON, cut short, a trailing comma of a hand edit, not readable) gives `default`
    and the reason: the caller must never write over it (`set_aside`), its records would be lost."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return default, None
    except OSError as exc:
        return default, exc.strerror or str(exc)
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return default, "not UTF-8 text"
    except ValueError as exc:
        return default, f"not valid JSON: {exc}"
    if not isinstance(value, type(default)):
        return default, f"not a JSON {'object' if isinstance(default, dict) else 'list'}"
    return value, None


def set_aside(path: Path, why: str, *, dry_run: bool = False) -> Path:
    """Move a record that cannot be read (read_record) aside as `<name>.bad-<stamp>` beside it,
    so a new one can be written and nothing of the old one is lost; returns where it went (a
    dry run: where it would go, nothing moved). Raises RememError, naming the fix, when it
    cannot be moved: then it must not be written over either."""
    from remem.engine import clock
    from remem.errors import RememError

    stamp = clock.iso()[:19].replace("-", "").replace(":", "")
    bad = path.with_name(f"{path.name}.bad-{stamp}")
    more = 1
    while os.path.lexists(bad):
        more += 1
        bad = path.with_name(f"{path.name}.bad-{stamp}-{more}")
    if dry_run:
        return bad
    try:
        os.rename(path, bad)
    except OSError as exc:
        raise RememError(f"{path} cannot be read ({why}) nor set aside ({exc.strerror or exc}): fix it or "
                         "move it away yourself, then run `remem sleep --pass render`") from None
    return bad


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def _abs(path: str | Path) -> Path:
    """A path made absolute and normal, without following links (a memory folder the person
    linked elsewhere is still where remem wrote it)."""
    return Path(os.path.abspath(path))


def _memory_id() -> str:
    """Who owns a written.json: this memory's home, as the file system knows it."""
    return str(paths.home().resolve())


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


def _rendered_here(path: Path, lesson_id: Any, root: Path) -> bool:
    """Whether a path is a lesson file render writes: `remem-<tag>-<its lesson>.md` (any tag: a
    memory moved to another home had another), or `remem-<its lesson>.md` as named before names
    carried the memory, directly in a project's `memory/` folder under this memory's Claude Code
    projects folder."""
    if not isinstance(lesson_id, str) or path.parent.name != "memory" or path.parent.parent.parent != root:
        return False
    found = _TAGGED_NAME.fullmatch(path.name)
    return path.name == f"remem-{lesson_id}.md" or bool(found and found.group(2) == lesson_id)


def _owned_files(record: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
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
    (the copied demo memory's list names the original's folder, not this one's). `record`:
    written.json as read already (read_record); without it, it is read here."""
    record = _read_json(written_path(), {}) if record is None else record
    files = record.get("files")
    if not isinstance(files, dict):
        return {}
    mine, root = _is_mine(record), _abs(paths.claude_projects_dir())
    out: dict[str, dict[str, Any]] = {}
    for key, info in files.items():
        if not isinstance(info, dict):
            continue
        path = _entry_path(key, mine)
        if path is not None and _rendered_here(path, info.get("lesson"), root):
            out[str(path)] = info
    return out


def _is_mine(record: dict[str, Any]) -> bool:
    """Whether written.json's absolute entries are this memory's (`_owned_files`, rule 2)."""
    owner = record.get("home")
    # A list whose memory is gone (the home was moved here, not copied) is this memory's.
    return (owner is None or owner == _memory_id()
            or not (isinstance(owner, str) and (Path(owner) / "memory.db").exists()))


def _entry_path(key: Any, mine: bool) -> Path | None:
    """A written.json entry as an absolute path: relative ones are inside the home; absolute
    ones count only in this memory's own list (None otherwise, or for no path at all)."""
    if not isinstance(key, str) or not key:
        return None
    if Path(key).is_absolute():
        return _abs(key) if mine else None
    return _abs(_abs(paths.home()) / key)


def _owned_folders(record: dict[str, Any] | None = None) -> set[Path]:
    """The project memory folders (`<claude projects>/<project>/memory`) this memory's render
    made, as written.json's `folders` lists them (by the rules of `_owned_files`). Only these
    may be removed by `unrender`, and only when empty: a folder that was there before render
    wrote into it, or that holds anything else, stays."""
    record = _read_json(written_path(), {}) if record is None else record
    folders = record.get("folders")
    if not isinstance(folders, list):
        return set()
    mine, root = _is_mine(record), _abs(paths.claude_projects_dir())
    out: set[Path] = set()
    for key in folders:
        path = _entry_path(key, mine)
        if path is not None and path.name == "memory" and path.parent.parent == root:
            out.add(path)
    return out


def _owned_names(files: dict[str, dict[str, Any]]) -> dict[Path, set[str]]:
    """The names of the owned files (`_owned_files`), by their folder."""
    names: dict[Path, set[str]] = {}
    for path_s in files:
        names.setdefault(Path(path_s).parent, set()).add(Path(path_s).name)
    return names


def _written_record(files: dict[str, dict[str, Any]], folders: set[Path] | None = None) -> dict[str, Any]:
    """written.json's content: the owner, each file, and the memory folders render made
    (`_owned_folders`; left out when none), relative to the home when inside it."""
    home = _abs(paths.home())

    def key(path_s: str | Path) -> str:
        path = _abs(path_s)
        try:
            return path.relative_to(home).as_posix()
        except ValueError:
            return str(path)

    record: dict[str, Any] = {"version": WRITTEN_VERSION, "home": _memory_id(),
                              "files": {key(path_s): info for path_s, info in files.items()}}
    if folders:
        record["folders"] = sorted(key(f) for f in folders)
    return record
