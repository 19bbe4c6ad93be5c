"""A deterministic demo store for the UI tests, and snapshots saved under snapshots/."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_textual_snapshot

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-11-20T12:00:00.000000+00:00"


def _snapshot_dir(cls, *, test_location) -> str:  # noqa: ANN001 - syrupy's signature
    return str(ROOT / "snapshots" / test_location.basename)


# Snapshots are committed under snapshots/ at the repository root.
pytest_textual_snapshot.SVGImageExtension.dirname = classmethod(_snapshot_dir)


def build_demo_store(store) -> dict[str, str]:
    """Episodes, lessons, a prediction, primes, a sleep run, a peer and a candidate."""
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob

    emb = get_embedder()
    episodes = [
        ("e01", "correction", "no, use uv not pip to install packages", "2026-11-19T09:00:00+00:00", "/home/dev/shop"),
        ("e02", "correction", "I said uv, don't run pip install", "2026-11-18T10:00:00+00:00", "/home/dev/shop"),
        ("e03", "error", "pytest failed: ModuleNotFoundError: No module named 'yaml'", "2026-11-17T11:00:00+00:00", "/home/dev/shop"),
        ("e04", "error", "ModuleNotFoundError: No module named 'yaml' in the test run", "2026-11-16T12:00:00+00:00", "/home/dev/api"),
        ("e05", "surprise", "turns out the staging database is read-only on Fridays", "2026-11-15T13:00:00+00:00", "/home/dev/api"),
        ("e06", "environment", "node 20 is required by the frontend build", "2026-11-14T14:00:00+00:00", "/home/dev/web"),
        ("e07", "session", "fix the flaky checkout test", "2026-11-13T15:00:00+00:00", "/home/dev/shop"),
        ("e08", "note", "never push straight to main; open a pull request", "2026-11-12T16:00:00+00:00", None),
        ("e09", "session", "add pagination to the orders endpoint", "2026-11-11T17:00:00+00:00", "/home/dev/api"),
        ("e10", "note", "prefer pathlib over os.path in new code", "2026-11-10T18:00:00+00:00", None),
    ]
    vectors = emb.encode([e[2] for e in episodes])
    store.put_episodes([
        {"id": eid, "kind": kind, "title": text, "gist": text, "at": at, "created": at, "cwd": cwd,
         "session_id": f"s-{eid}", "source": "claude-code", "space": emb.space, "embedding": to_blob(vec),
         "tags": ["python"] if "pip" in text or "yaml" in text else []}
        for (eid, kind, text, at, cwd), vec in zip(episodes, vectors)
    ])
    with store.write() as conn:
        conn.execute("INSERT INTO connections (src, dst, type, weight, origin, created) "
                     "VALUES ('e01', 'e02', 'similar_to', 0.82, 'auto', ?)", (NOW,))

    def lesson(text: str, kind: str, sources: list[str], lid: str, **kw) -> None:
        lessons.add_lesson(store, text, kind, sources=sources, lesson_id=lid, created="2026-11-18T20:00:00+00:00",
                           space=emb.space, embedding=to_blob(emb.encode([text])[0]), **kw)

    lesson("Install packages with uv, not pip.", "correction", ["e01", "e02"], "L1", strength=2.0, cwd="/home/dev/shop")
    lesson("Before running tests, install pyyaml: tests fail with ModuleNotFoundError yaml.", "error",
           ["e03", "e04"], "L2", strength=1.2)
    lesson("Use ruff format, not black.", "correction", [], "L3", status="candidate", origin="b7e1c0ffee00aa11")
    with store.write() as conn:
        conn.execute("INSERT INTO predictions (id, lesson_id, text, made, resolved, outcome) VALUES "
                     "('P1', 'L1', 'The next install will use uv.', '2026-11-18T20:00:00+00:00', "
                     "'2026-11-19T09:30:00+00:00', 'confirmed')")
        conn.execute("INSERT INTO primes (at, session_id, agent, event, lesson_ids, held_out, query, chars) VALUES "
                     "('2026-11-19T08:59:00+00:00', 's-x', 'claude-code', 'prompt', '[\"L1\"]', 0, 'install deps', 120)")
        conn.execute("INSERT INTO runs (kind, started, finished, status, summary) VALUES ('sleep', "
                     "'2026-11-20T03:00:00+00:00', '2026-11-20T03:00:02+00:00', 'ok', "
                     "'{\"lessons\": {\"learned\": 2}, \"merge\": {\"themes\": 0}}')")
        conn.execute("INSERT INTO peers (origin, public_key, trusted, first_seen, label) VALUES "
                     "('b7e1c0ffee00aa11', 'AAAA', 0, '2026-11-18T00:00:00+00:00', 'laptop')")
    return {"lesson": "L1", "candidate": "L3"}


@pytest.fixture
def demo_home(home, monkeypatch):
    """A REMEM_HOME holding the demo store, with the clock frozen at NOW."""
    from remem.engine.store import Store

    monkeypatch.setenv("REMEM_NOW", NOW)
    home.mkdir(parents=True, exist_ok=True)
    (home / "morning.md").write_text(
        "# Good morning\n\n## Learned\n- Install packages with uv, not pip. (2 corrections)\n\n"
        "## Confirmed\n- The next install will use uv.\n", encoding="utf-8")
    with Store() as store:
        build_demo_store(store)
    return home


@pytest.fixture
def held(demo_home: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[sqlite3.Connection]:
    """The memory's write lock, held by another connection until the test commits. The app's
    busy timeout is raised far above anything the test does, so what the test sees never
    depends on how fast the machine is."""
    from remem import paths
    from remem.engine import store as store_module

    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 60_000)
    other = sqlite3.connect(paths.db_path(), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    yield other
    if other.in_transaction:
        other.execute("COMMIT")
    other.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def new_app():  # noqa: ANN201 - RememApp, imported late so collecting tests stays cheap
    """A fresh app over the test's REMEM_HOME. Its notifications never expire: Textual drops
    one 5 s (wall clock) after it is raised, and on a loaded machine a test can take longer
    than that between an action and the check of what it said."""
    from remem.tui.app import RememApp

    app = RememApp()
    app.NOTIFICATION_TIMEOUT = 24 * 3600
    return app


def screen_text(app) -> str:  # noqa: ANN001
    """The text on the screen now, as drawn."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def settle(pilot, done, tries: int = 100) -> None:  # noqa: ANN001
    """Pause until `done()` holds (a loaded machine can need more than one pause for a
    worker's rows to land); the test's own assertion then says what is wrong if it never does."""
    for _ in range(tries):
        await pilot.pause()
        if done():
            return
        await pilot.pause(0.05)


async def on_lesson(pilot, lesson_id: str) -> None:  # noqa: ANN001
    """The Lessons tab open, its cursor on `lesson_id` once the table holds it."""
    await pilot.press("3")
    table = pilot.app.query_one("#lesson-table")
    await settle(pilot, lambda: lesson_id in table.rows)
    table.move_cursor(row=table.get_row_index(lesson_id))
    await pilot.pause()


async def acted(pilot) -> None:  # noqa: ANN001
    """Pause until the engine write a key started is done and its pane read the store again:
    the app runs each write in a thread of its own (Pane.run_action), so the UI never waits for
    the memory. A key that started no write: one pause."""
    await pilot.pause()
    for _ in range(1200):
        if not pilot.app.acting:
            break
        await pilot.pause(0.05)
    await pilot.pause()


async def slept(pilot: Any) -> None:
    """Pause until the Sleep tab's run is over and its end is shown: it runs in a thread of its
    own (SleepPane.start_sleep), not a Textual worker, so app.workers does not wait for it."""
    pane = pilot.app.query_one("#sleep-pane")
    await pilot.pause()
    for _ in range(2400):
        if not pane.sleep_running:
            break
        await pilot.pause(0.05)
    await pilot.pause()
