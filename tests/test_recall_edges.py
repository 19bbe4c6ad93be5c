"""Recall at its edges: a memory that cannot be written still answers; k and time windows
that cannot mean anything are refused with the fix; the configured default k is checked in one
place, which the CLI and the MCP server both use."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from remem import paths
from remem.engine.memories import remember
from remem.engine.recall import MAX_K, recall
from remem.engine.store import Store
from tests.conftest import call_ok, server_in_process


pytestmark = pytest.mark.usefixtures("fresh_vector_caches")


def test_a_recall_answers_unstrengthened_while_another_process_holds_the_write_lock(store: Store) -> None:
    memory_id = remember(store, "use uv pip install, never bare pip", kind="note")["id"]
    before = store.one("SELECT strength, recalls FROM episodes WHERE id = ?", (memory_id,))
    holder = sqlite3.connect(paths.db_path(), timeout=0)
    holder.execute("BEGIN IMMEDIATE")  # another remem writing for longer than recall will wait
    try:
        hits = recall(store, "which pip installer", 3)
    finally:
        holder.rollback()
        holder.close()
    assert [h["id"] for h in hits] == [memory_id]
    after = store.one("SELECT strength, recalls FROM episodes WHERE id = ?", (memory_id,))
    assert after == before  # not strengthened, and not lost either
    log = paths.log_file().read_text(encoding="utf-8")
    assert "recalled without strengthening" in log


@pytest.mark.parametrize("k", [0, -1, MAX_K + 1, 10**20])
def test_k_outside_its_range_is_refused_in_the_engine(store: Store, k: int) -> None:
    remember(store, "a memory", kind="note")
    with pytest.raises(ValueError, match=f"between 1 and {MAX_K:,}"):
        recall(store, "memory", k)


def test_an_inverted_time_window_is_named_not_answered_with_nothing(store: Store) -> None:
    remember(store, "a memory", kind="note")
    with pytest.raises(ValueError, match="after until.*swap"):
        recall(store, "memory", 3, since="2027-01-01", until="2026-01-01")


@pytest.mark.parametrize("args", [
    ["-k", "99999999999999999999"],
    ["--since", ""],
    ["--until", "  "],
])
def test_cli_refuses_a_huge_k_and_an_empty_window_in_one_line(cli, home: Path, args: list[str]) -> None:
    cli("remember", "use uv pip install")
    result = cli("recall", "pip", *args)
    assert result.exit_code == 1
    out = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in out and "OverflowError" not in out
    assert ("between 1 and" in out) or ("is empty" in out)


# --------------------------------------------------------------------------- the configured default k

def test_default_k_is_checked_in_one_place() -> None:
    from remem.engine.recall import default_k

    assert default_k({"recall": {"k": 7}}) == 7
    for bad in (0, -1, True, "5", 2.5):
        with pytest.raises(ValueError, match="config recall.k must be a whole number"):
            default_k({"recall": {"k": bad}})


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def _error(client: Any, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.anyio
async def test_the_cli_and_the_server_take_k_from_that_one_place(store: Any, cli: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client import Client

    from remem.engine import recall as recall_mod

    def refuse(cfg: Any = None) -> int:
        raise ValueError("the one default_k said no")

    monkeypatch.setattr(recall_mod, "default_k", refuse)
    result = cli("recall", "anything")
    assert result.exit_code == 1 and "the one default_k said no" in result.output
    async with Client(server_in_process()) as client:
        assert "the one default_k said no" in await _error(client, "recall", {"query": "anything"})
        monkeypatch.setattr(recall_mod, "default_k", lambda cfg=None: 80)
        asked: list[int] = []
        real = recall_mod.recall
        monkeypatch.setattr(recall_mod, "recall", lambda s, q, k, **kw: asked.append(k) or real(s, q, k, **kw))
        await call_ok(client, "remember", {"text": "the staging deploy uses profile number 3"})
        assert len((await call_ok(client, "recall", {"query": "staging deploy profile"}))["hits"]) == 1
        assert asked == [50]  # the tool's own cap on the configured k
