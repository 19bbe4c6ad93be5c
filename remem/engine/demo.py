"""`remem demo`: a small, real memory built in its own folder, never the person's own."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from remem.errors import RememError

MARKER = ".remem-demo"

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
    """Start from an empty demo folder; refuse to clear anything that is not a demo."""
    if folder.exists() and any(folder.iterdir()):
        if not (folder / MARKER).exists():
            raise RememError(f"{folder} exists and is not a remem demo; pass --dir to an empty folder")
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("built by `remem demo`; safe to delete\n")


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
