"""`remem status`, the TUI's Overview and /memory/health: one summary of the store
(status.summary), counted by the engine and shown as it is by each edge."""

from __future__ import annotations

import json
from typing import Any

import pytest

from remem.engine.lessons import add_lesson
from tests.tui.conftest import demo_home, new_app, screen_text  # noqa: F401 - demo_home is a fixture


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


FAKE = {"home": "/fake/home", "database": "/fake/home/memory.db", "db_bytes": 4_000_000,
        "counts": {"episodes": 7, "sessions": 1, "lessons": 3, "predictions": 2, "aliases": 0, "tags": 0,
                   "connections": 5, "primes": 0, "peers": 0},
        "episodes_by_kind": {"correction": 4, "note": 3}, "lessons_by_status": {"active": 2, "vetoed": 1},
        "tasks": {"decay": "2026-01-01T00:00:00+00:00"}, "last_ingest": None, "last_sleep": None}


def test_status_summary_counts_what_the_store_holds(store):
    from remem.engine import status

    store.put_episodes([{"id": "n1", "kind": "note", "title": "a", "gist": "a", "at": "2026-01-01T00:00:00+00:00"}])
    add_lesson(store, "Use uv, not pip.", "correction", sources=["n1"])
    facts = status.summary(store)
    assert facts["counts"]["episodes"] == 1 and facts["episodes_by_kind"] == {"note": 1}
    assert facts["lessons_by_status"] == {"active": 1} and facts["database"] == str(store.path)
    assert set(facts) >= {"home", "db_bytes", "tasks", "last_ingest", "last_sleep"}


def test_cli_status_is_the_engines_summary(home, cli, monkeypatch):
    from remem.engine import status

    cli("remember", "one note")
    monkeypatch.setattr(status, "summary", lambda store: dict(FAKE))
    info = json.loads(cli("status", "--json").stdout)
    assert {k: info[k] for k in FAKE} == FAKE and "model" not in info and info["space"]
    assert "episodes by kind: correction 4, note 3" in cli("status").stdout


@pytest.mark.anyio
async def test_the_overview_and_health_are_the_engines_summary(demo_home, monkeypatch):
    from remem.engine import status
    from remem.server import build_server
    from remem.server_http import http_app

    monkeypatch.setattr(status, "summary", lambda store: dict(FAKE))
    async with new_app().run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(pilot.app)
        assert "7 episodes  correction 4 note 3" in text and "3 lessons  active 2 vetoed 1" in text
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    app = http_app(build_server(tasks=False, warm=False), host="127.0.0.1", token="")
    await app({"type": "http", "method": "GET", "path": "/memory/health", "raw_path": b"/memory/health",
               "query_string": b"", "headers": [(b"host", b"127.0.0.1")], "scheme": "http",
               "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1), "root_path": "",
               "http_version": "1.1"}, receive, send)
    body = json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
    assert body["counts"] == FAKE["counts"] and body["tasks"] == FAKE["tasks"]
    assert body["home"] == FAKE["home"]
