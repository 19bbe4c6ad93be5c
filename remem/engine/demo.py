"""`remem demo`: a small, real memory built in its own folder, never the person's own."""

from __future__ import annotations

import os
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from remem.errors import RememError

# What says "this folder is a demo `remem demo` built": a regular file whose name is never the
# default demo folder's own (~/.remem-demo), so a folder holding that default folder (the home
# folder) is never taken for a demo.
MARKER = ".remem-demo.marker"
MARKER_TEXT = "built by `remem demo`; safe to delete\n"
# The name an earlier release marked a demo with, and the one `paths.is_demo` still reads (as a
# regular file): written beside MARKER; as a marker it counts only when a regular file.
LEGACY_MARKER = ".remem-demo"
# Everything `remem demo`, and remem run on the demo (`remem --home DEMO …`), writes at the top
# of the demo folder. A folder holding anything else is never emptied.
DEMO_ENTRIES = frozenset({
    MARKER, LEGACY_MARKER, "memory.db", "memory.db-wal", "memory.db-shm", "memory.db-journal",
    "memory.db.in-use", "backups", "cache", "claude", "codex", "gemini", "logs", "identity", "inbox",
    "config.toml", "config.toml.lock", "setup.json", "lessons.jsonl", "morning.md", "sleep.lock",
    "vetoed.json", "written.json",
})

DEMO_NOTES = [
    ("use uv, not pip, to install packages in this repo", ["python", "tooling"]),
    ("the test suite needs REDIS_URL set, or the cache tests hang", ["tests"]),
    ("never push straight to main; open a pull request", ["git"]),
    ("format with ruff format, not black", ["python", "style"]),
    ("the staging database is read-only on Fridays", ["ops"]),
    ("prefer pathlib over os.path in new code", ["python", "style"]),
]


SAMPLES = Path(__file__).parent / "demo_data"


@contextmanager
def _home(folder: Path) -> Iterator[None]:
    """Point remem and the agents' homes into the demo folder, never the person's own."""
    names = {"REMEM_HOME": folder, "CLAUDE_CONFIG_DIR": folder / "claude", "CODEX_HOME": folder / "codex"}
    old = {name: os.environ.get(name) for name in names}
    for name, value in names.items():
        os.environ[name] = str(value)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def default_folder() -> Path:
    from remem import paths

    return paths.user_home() / ".remem-demo"


def prepare_folder(folder: Path) -> None:
    """Start from an empty demo folder; refuse to clear anything that is not a demo.

    A folder that holds anything is emptied only when it is a demo: a marker (MARKER, or the
    LEGACY_MARKER an earlier release wrote) that is a regular file, beside nothing but what the
    demo writes (DEMO_ENTRIES). The home folder, the root and a folder holding the home folder,
    remem's home or the current folder are never emptied, demo or not."""
    folder = Path(os.path.abspath(folder))
    _refuse_protected(folder)
    if os.path.lexists(folder) and not folder.is_dir():
        raise RememError(f"{folder} is a file, not a folder; pass --dir an empty or new folder")
    entries = sorted(folder.iterdir()) if folder.is_dir() else []
    if entries:
        if not any(_is_marker(folder / name) for name in (MARKER, LEGACY_MARKER)):
            raise RememError(f"{folder} exists and is not a remem demo; nothing removed; pass --dir an "
                             "empty or new folder")
        # A marker's name held by a folder or a link is no demo's: it stays, and so does the rest.
        strangers = [entry.name for entry in entries if not _demo_entry(entry.name)
                     or (entry.name in (MARKER, LEGACY_MARKER) and not _is_marker(entry))]
        if strangers:
            raise RememError(f"{folder} holds {strangers[0]!r}, which `remem demo` does not write; nothing "
                             "removed; pass --dir an empty or new folder")
        for entry in entries:  # the folder itself stays (a shell inside it keeps its folder)
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()  # a link is taken away, never what it points to
    folder.mkdir(parents=True, exist_ok=True)
    for name in (MARKER, LEGACY_MARKER):
        (folder / name).write_text(MARKER_TEXT)


def _refuse_protected(folder: Path) -> None:
    """Refuse the home folder, the root, and any folder that holds the home folder, remem's
    home or the current folder: none is ever emptied (nor made a demo), whatever it holds."""
    from remem import paths

    real = Path(os.path.realpath(folder))
    home = Path(os.path.realpath(paths.user_home()))
    if real == home or real == Path(real.anchor):
        raise RememError(f"{folder} is {'your home folder' if real == home else 'the root folder'}; "
                         "pass --dir an empty or new folder (or leave --dir out for ~/.remem-demo)")
    inside = [("your home folder", home), ("remem's home", Path(os.path.realpath(paths.home())))]
    try:
        inside.append(("the current folder", Path(os.path.realpath(os.getcwd()))))
    except OSError:  # the current folder was deleted under this process: nothing to keep
        pass
    for what, path in inside:
        if path != real and real in path.parents:
            raise RememError(f"{folder} holds {what} ({path}); pass --dir an empty or new folder")


def _is_marker(path: Path) -> bool:
    """Whether `path` is a demo marker: a regular file (not a folder, not a link) saying so."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(len(MARKER_TEXT) + 1) == MARKER_TEXT
    except OSError:
        return False


def _demo_entry(name: str) -> bool:
    """Whether a top-level name is one the demo (or remem on the demo) writes: DEMO_ENTRIES, a
    memory set aside by `remem restore`, or a write of one of them cut short (.NAME.XXXX.tmp)."""
    if name in DEMO_ENTRIES or name.startswith("memory.db.before-restore-"):
        return True
    return name.startswith(".") and name.endswith(".tmp") and any(
        name.startswith(f".{known}.") for known in DEMO_ENTRIES)


def _ingest_samples(store: Any) -> list[str]:
    """Copy the shipped sample sessions into the demo's Claude home and ingest them."""
    from remem import paths
    from remem.engine.ingest import ingest_paths

    projects = paths.claude_projects_dir()
    source = SAMPLES / "claude-code"
    for project in sorted(p for p in source.iterdir() if p.is_dir()):
        shutil.copytree(project, projects / project.name, dirs_exist_ok=True)
    summary = ingest_paths(store, [projects], source="claude-code")
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(summary["by_kind"].items()) if kind != "session")
    lines = [f"{summary['sessions']} sample sessions ingested: {summary['episodes']} episodes ({kinds})"]
    shown: set[tuple[str, str]] = set()
    for row in store.rows(
        "SELECT kind, title, gist FROM episodes WHERE source = 'claude-code' AND kind IN "
        "('correction', 'surprise', 'environment') ORDER BY kind, at"
    ):
        # a correction in the person's own words; the rest by title
        what = row["gist"] if row["kind"] == "correction" else row["title"]
        if (row["kind"], what) not in shown:
            shown.add((row["kind"], what))
            lines.append(f"  {row['kind']}: {what}")
    return lines


def build_demo(folder: str | Path | None = None) -> dict[str, Any]:
    """Build the demo memory and return what it holds."""
    from remem.engine.memories import remember
    from remem.engine.recall import recall
    from remem.engine.store import Store

    target = Path(folder).expanduser().resolve() if folder else default_folder()
    prepare_folder(target)
    lines: list[str] = []
    with _home(target), Store() as store:
        for text, tags in DEMO_NOTES:
            remember(store, text, tags=tags, source="demo")
        lines.append(f"{len(DEMO_NOTES)} notes remembered")
        lines.extend(_ingest_samples(store))
        query = "which package installer should I use"
        best = recall(store, query, 1, touch=False)
        if best:
            lines.append(f"recall {query!r} -> {best[0]['title']!r}")
        lines += demo_sleep(store, target)
        counts = store.counts()
        project = _demo_project(store)
    home_arg = f"--home {target}"
    return {
        "home": str(target),
        "counts": counts,
        "lines": lines,
        "try": [
            f"remem {home_arg} status",
            f"remem {home_arg} recall \"how do I install packages\"",
            f"remem {home_arg} lessons list",
            f"remem {home_arg} morning",
            f"remem {home_arg} context --project {project} --prompt \"pip install fakeredis\"",
            f"remem {home_arg} tui",
        ],
    }


# Corrections the person made in earlier sessions (used when the demo has no sample sessions
# with corrections of its own): the same one three times in other words, and one more.
DEMO_PROJECT = "/demo/shop-api"
DEMO_CORRECTIONS = [
    ("2026-11-02T10:14:00+00:00", "no, use uv, not pip, to install packages here"),
    ("2026-11-05T16:40:00+00:00", "we install dependencies with uv in this repo, not pip"),
    ("2026-11-09T09:05:00+00:00", "stop using pip install; it's uv for packages"),
    ("2026-11-06T11:30:00+00:00", "don't push straight to main, open a pull request"),
]


def demo_sleep(store: Any, target: Path) -> list[str]:
    """Run a sleep over the demo memory, rendering into the demo's own Claude folder."""
    from remem.engine.memories import remember
    from remem.engine.sleep import run_sleep_collect

    if not store.scalar("SELECT count(*) FROM episodes WHERE kind = 'correction'"):
        for i, (at, text) in enumerate(DEMO_CORRECTIONS):
            remember(store, text, kind="correction", source="demo", cwd=DEMO_PROJECT, at=at,
                     session_id=f"demo-session-{i}")
    claude = target / "claude"
    old = os.environ.get("CLAUDE_CONFIG_DIR")
    os.environ["CLAUDE_CONFIG_DIR"] = str(claude)  # never the person's own ~/.claude
    try:
        from remem import paths

        (paths.claude_projects_dir() / paths.project_folder_name(DEMO_PROJECT)).mkdir(
            parents=True, exist_ok=True)
        summary = run_sleep_collect(store)
    finally:
        if old is None:
            os.environ.pop("CLAUDE_CONFIG_DIR", None)
        else:
            os.environ["CLAUDE_CONFIG_DIR"] = old
    learned = list(summary.get("events", {}).get("learned", []))
    lines = [f"sleep learned {len(learned)} lessons; morning report in {target / 'morning.md'}"]
    for lesson_id in learned:
        row = store.one("SELECT kind, text FROM lessons WHERE id = ?", (lesson_id,))
        if row:
            text = " ".join(row["text"].split())
            lines.append(f"  {row['kind']}: {text if len(text) <= 90 else text[:89] + '…'}")
    lines.append(f"lesson files rendered under {claude / 'projects'}")
    return lines


def _demo_project(store: Any) -> str:
    """The project most of the demo's lessons belong to (for the `context` example)."""
    row = store.one("SELECT cwd FROM lessons WHERE cwd IS NOT NULL AND cwd != '' "
                    "GROUP BY cwd ORDER BY count(*) DESC LIMIT 1")
    return row["cwd"] if row else DEMO_PROJECT
