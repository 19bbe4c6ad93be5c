"""The proxy's cap on choosing a conversation's memory: a request waits at most about the cap
and goes upstream without memory when the memory cannot be chosen (a store another process
holds, a selection that hangs), the reason is logged, and the failure is not kept as the
conversation's choice, so a later turn, once the store is free, gets its memory."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.fake_llm_api import REPLY, FakeAPI, ServerThread

LESSON = "Use uv, not pip, to install Python packages"
QUESTION = "How should I install the requests package for this project?"
# A later turn: memory is chosen for the latest user message, so it asks about the lesson too.
FOLLOW_UP = "Should I install the Python packages for the tests with pip too?"


@pytest.fixture
def lesson(home: Path) -> None:
    from remem import config
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.store import Store

    home.mkdir(parents=True, exist_ok=True)
    config.set_value("prime.holdout", False)  # every conversation gets its memory
    embedder = get_embedder()
    with Store() as store:
        lessons.add_lesson(store, LESSON, "correction", sources=["e1"], strength=1.5,
                           space=embedder.space, embedding=to_blob(embedder.encode([LESSON])[0]))


@pytest.fixture
def proxy(lesson: None) -> Iterator[tuple[FakeAPI, str]]:
    from remem.proxy import create_app

    fake = FakeAPI()
    with ServerThread(fake.app) as upstream, ServerThread(create_app(upstream.url)) as served:
        yield fake, served.url


def _turn(url: str, *messages: dict[str, str]) -> Any:
    import httpx2

    return httpx2.post(url + "/v1/chat/completions", json={"model": "m", "messages": list(messages)},
                       timeout=60)


def _system_prompt(fake: FakeAPI) -> str:
    """The memory the upstream was sent with the latest request ("" when none)."""
    return " ".join(m["content"] for m in fake.received[-1]["messages"] if m["role"] == "system")


def _log(home: Path) -> str:
    path = home / "logs" / "remem.log"
    return path.read_text() if path.exists() else ""


@pytest.fixture
def held_write_lock(home: Path) -> Iterator[sqlite3.Connection]:
    """Another process's writer (a sleep, an ingest) holding memory.db's write lock."""
    conn = sqlite3.connect(home / "memory.db", isolation_level=None, timeout=0)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


def test_a_busy_memory_costs_a_turn_its_memory_not_the_busy_timeout_and_the_next_turn_gets_it(
        proxy: tuple[FakeAPI, str], held_write_lock: sqlite3.Connection, home: Path) -> None:
    fake, url = proxy
    first = {"role": "user", "content": QUESTION}
    started = time.monotonic()
    reply = _turn(url, first)
    waited = time.monotonic() - started
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == REPLY
    assert LESSON not in _system_prompt(fake)  # went on without memory
    assert "memory selection failed" in _log(home)
    # Generous: the store's full busy timeout (5 s) is what the request used to wait.
    assert waited < 4.0, waited

    held_write_lock.execute("ROLLBACK")  # the other writer is done
    reply = _turn(url, first, {"role": "assistant", "content": REPLY},
                  {"role": "user", "content": FOLLOW_UP})
    assert reply.status_code == 200
    # The same conversation (its first user message): the failure was not kept as its choice.
    assert LESSON in _system_prompt(fake)


def test_a_selection_that_hangs_is_left_behind_at_the_cap_and_the_next_turn_tries_again(
        proxy: tuple[FakeAPI, str], home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A selection stuck past the cap (a model on a slow disk, a lock no timeout covers): the
    request must not wait for its thread."""
    from remem import proxy as proxy_module

    fake, url = proxy
    release = threading.Event()
    real_select = proxy_module._select_block

    def stuck(query: str, session: str) -> str:
        release.wait(60)
        return ""

    monkeypatch.setattr(proxy_module, "SELECT_CAP_S", 0.3)
    monkeypatch.setattr(proxy_module, "_select_block", stuck)
    first = {"role": "user", "content": QUESTION}
    # Only so that a proxy that waits for the thread fails this test in seconds, not a minute.
    unstick = threading.Timer(10, release.set)
    unstick.start()
    try:
        reply = _turn(url, first)
        # The answer came while the selection was still stuck: the request did not wait for it.
        assert not release.is_set()
    finally:
        unstick.cancel()
        release.set()
    assert reply.status_code == 200 and LESSON not in _system_prompt(fake)
    assert "memory selection failed: not chosen within 0.3 s" in _log(home)

    monkeypatch.setattr(proxy_module, "SELECT_CAP_S", 2.0)
    monkeypatch.setattr(proxy_module, "_select_block", real_select)
    _turn(url, first, {"role": "assistant", "content": REPLY}, {"role": "user", "content": FOLLOW_UP})
    assert LESSON in _system_prompt(fake)


def test_a_choice_not_made_by_its_deadline_is_a_failure_not_an_empty_choice(
        lesson: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """select() gives up past its deadline with the "" that also means "nothing applies"; the
    proxy must not keep that "" as the conversation's choice."""
    from remem import proxy as proxy_module

    # No time left for choosing: the whole cap is the recording's.
    monkeypatch.setattr(proxy_module, "SELECT_CAP_S", proxy_module.RECORD_WAIT_S)
    with pytest.raises(TimeoutError, match="not chosen within"):
        proxy_module._select_block(QUESTION, "proxy-deadline-test")
    monkeypatch.setattr(proxy_module, "SELECT_CAP_S", 2.0)
    assert LESSON in proxy_module._select_block(QUESTION, "proxy-deadline-test")
