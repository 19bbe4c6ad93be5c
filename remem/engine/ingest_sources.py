"""Where ingest finds transcripts: the sources, their default places, and the files a folder holds."""

from __future__ import annotations

from pathlib import Path

from remem import paths as paths_mod

SOURCES = ("claude-code", "codex", "chats", "events")


def check_source(source: str | None) -> None:
    """ValueError naming the sources for one remem does not read (None: guessed per file)."""
    if source is not None and source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; use one of {', '.join(SOURCES)}")


def default_places(source: str | None = None) -> list[Path]:
    """Where `ingest_paths` reads when given no paths: the source's own place, or every
    source's (None). For chats that is Gemini CLI's sessions; other chat exports have no
    place of their own: they are named one by one."""
    check_source(source)
    places = {"claude-code": paths_mod.claude_projects_dir(), "codex": paths_mod.codex_home(),
              "chats": paths_mod.gemini_sessions_dir(), "events": paths_mod.inbox_dir()}
    if source is None:
        return list(places.values())
    return [places[source]]


def gemini_sessions(folder: Path, pattern: str = "*/chats/session-*") -> list[Path]:
    """Gemini CLI's session files under its tmp folder (<project>/chats/session-*.json[l]),
    and nothing else there (its logs and checkpoints are no conversation). `pattern`: where
    they are from `folder` when it is another of Gemini CLI's folders."""
    try:
        return sorted(p for p in folder.glob(pattern) if p.suffix in (".json", ".jsonl") and p.is_file())
    except OSError:
        return []


# Where Gemini CLI's sessions are from a folder named on the command line: its home
# (~/.gemini), its tmp folder, one project's folder.
_GEMINI_PLACES = ("tmp/*/chats/session-*", "*/chats/session-*", "chats/session-*")


def _gemini_sessions_in(folder: Path) -> list[Path]:
    """The sessions of a folder of Gemini CLI's (none: it is no such folder)."""
    for pattern in _GEMINI_PLACES:
        found = gemini_sessions(folder, pattern)
        if found:
            return found
    return []


def _default_files(unreadable: list[tuple[Path, OSError]] | None = None) -> list[tuple[Path, str]]:
    from remem.engine.codex import find_rollouts
    from remem.engine.transcripts import project_files

    claude, codex, gemini, _inbox = default_places()
    found = [(p, "claude-code") for p in project_files(claude, unreadable)]
    try:
        found.extend((p, "codex") for p in find_rollouts(codex))
    except OSError:
        pass
    found.extend((p, "chats") for p in gemini_sessions(gemini))
    return found


def _guess_source(path: Path) -> str:
    name = path.name
    if name.startswith("rollout-"):
        return "codex"
    if name.endswith(".json"):
        return "chats"
    if name.startswith("session-") and path.parent.name == "chats":
        return "chats"  # Gemini CLI's ~/.gemini/tmp/<project>/chats/session-*.jsonl
    return "claude-code"


# What the apps' data exports hold beside conversations.json, none a conversation: ChatGPT's
# account, feedback and shared links, Claude.ai's account and projects.
_EXPORT_COMPANIONS = frozenset(("user.json", "message_feedback.json", "shared_conversations.json",
                                "users.json", "projects.json"))


def _export_companion(path: Path) -> bool:
    """A file of an unpacked ChatGPT or Claude.ai export that holds no conversation (by its
    name, beside the export's conversations.json): left out when a folder is listed."""
    return path.name in _EXPORT_COMPANIONS and (path.parent / "conversations.json").is_file()


def _files_under(folder: Path, source: str | None,
                 unreadable: list[tuple[Path, OSError]] | None = None) -> list[Path]:
    """The transcript files a folder holds for a source (subagent folders never). OSError when
    the folder itself cannot be listed; its project folders that cannot be are added to
    `unreadable`."""
    resolved = folder.resolve()
    codex_home = paths_mod.codex_home().resolve()
    if source == "codex" or (source is None and (resolved == codex_home or codex_home in resolved.parents)):
        from remem.engine.codex import find_rollouts

        return find_rollouts(folder) or sorted(folder.rglob("rollout-*.jsonl"))
    if source in (None, "chats"):
        # Gemini CLI's folders hold its logs and checkpoints beside the sessions: only these.
        gemini = _gemini_sessions_in(folder)
        if gemini:
            return gemini
    if source == "chats":
        return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")
                      and not _export_companion(p))
    from remem.engine.transcripts import jsonl_files, project_files

    files = jsonl_files(folder)  # listed first: a folder that cannot be is said by its name
    if source == "events":
        return sorted(files)
    # A Claude home or its projects folder (one holding no transcript of its own: a copy of
    # it under another name): the top level of each project. One project folder, or any
    # folder of transcripts: its own files, never its subfolders (subagents/, memory/).
    claude_home = (folder / "projects").is_dir()
    if claude_home:
        folder = folder / "projects"
        files = jsonl_files(folder)
    if claude_home or folder.name == "projects" or not files:
        files.extend(project_files(folder, unreadable))
    if source is None:
        # Guessed from each name, as for files named one by one: a folder of chat exports
        # (top level only: a Claude home's own *.json are settings) and Codex rollouts kept
        # in their dated folders (a backup of ~/.codex/sessions).
        if not claude_home:
            files.extend(p for p in folder.glob("*.json") if p.is_file())
        from remem.engine.codex import find_rollouts

        try:
            files.extend(find_rollouts(folder))
        except OSError:
            pass
    return sorted(set(files))
