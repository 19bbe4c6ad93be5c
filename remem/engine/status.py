"""What the memory holds, in numbers: one summary for `remem status`, the TUI's Overview and
the HTTP server's /memory/health, so the three never count differently."""

from __future__ import annotations

from typing import Any

from remem import paths
from remem.engine.store import Store, db_size


def summary(store: Store) -> dict[str, Any]:
    """Where the memory is and its size; rows per table (`counts`); episodes per kind and
    lessons per status (each sorted by name); when each lifecycle task last ran (`tasks`);
    and the last ingest and last finished sleep (`last_ingest`, `last_sleep`, ISO or None)."""
    return {
        "home": str(paths.home()),
        "database": str(store.path),
        "db_bytes": db_size(store.path),
        "counts": store.counts(),
        "episodes_by_kind": _grouped(store, "episodes", "kind"),
        "lessons_by_status": _grouped(store, "lessons", "status"),
        "tasks": {r["name"]: r["last_run"] for r in store.rows("SELECT name, last_run FROM tasks ORDER BY name")},
        **store.meta_times(),
    }


def _grouped(store: Store, table: str, column: str) -> dict[str, int]:
    return {r["v"]: int(r["n"]) for r in store.rows(
        f"SELECT {column} AS v, count(*) AS n FROM {table} GROUP BY {column} ORDER BY {column}")}
