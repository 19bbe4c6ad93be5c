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


@contextmanager
def _home(folder: Path) -> Iterator[None]:
    old = os.environ.get("REMEM_HOME")
    os.environ["REMEM_HOME"] = str(folder)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("REMEM_HOME", None)
        else:
            os.environ["REMEM_HOME"] = old


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
        query = "which package installer should I use"
        best = recall(store, query, 1, touch=False)
        if best:
            lines.append(f"recall {query!r} -> {best[0]['title']!r}")
        lines += demo_sleep(store, target)
        counts = store.counts()
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
    learned = len(summary.get("events", {}).get("learned", []))
    return [f"sleep learned {learned} lessons; morning report in {target / 'morning.md'}",
            f"lesson files rendered under {claude / 'projects'}"]
