"""`remem context --prompt`: a preview of the prompt hook's choice, and of the lessons that
came close to it, so a person can see why a lesson was not shown; the same preview from the CLI,
the MCP `context` tool (the server in-process behind the SDK's own client) and the engine."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import call_ok, server_in_process
from tests.test_hooks import seed

UV = "We use uv here, never pip (uv add / uv sync)"
DOCKER = "The docker build needs --platform linux/amd64"


def test_a_prompt_below_the_bar_names_the_closest_lessons_and_their_scores(cli, store, tmp_path):
    project = tmp_path / "shop"
    project.mkdir()
    seed(store, [(UV, "correction", str(project)), (DOCKER, "error", None)])
    res = cli("context", "--project", str(project), "--prompt", "add the requests library")
    assert res.exit_code == 0
    assert "no lessons would be injected" in res.output
    assert "closest below prime.min_relevance 0.65 (not shown):" in res.output
    near_line = next(line for line in res.output.splitlines() if "We use uv here" in line)
    score = float(near_line.split()[1])
    assert 0 < score < 0.65

    data = json.loads(cli("context", "--project", str(project), "--prompt", "add the requests library",
                          "--json").stdout)
    assert data["lessons"] == [] and data["min_relevance"] == 0.65
    assert data["near_misses"][0]["text"] == UV
    assert 0 <= data["near_misses"][0]["relevance"] - score < 0.001  # cut to 3 decimals, not rounded
    assert all(n["relevance"] < 0.65 for n in data["near_misses"])
    assert store.scalar("SELECT count(*) FROM primes") == 0  # a preview records nothing


def test_a_lesson_shown_is_not_also_named_as_a_near_miss(cli, store, tmp_path):
    seed(store, [(DOCKER, "error", None), (UV, "correction", None)])
    data = json.loads(cli("context", "--project", str(tmp_path), "--prompt",
                          "the docker build needs a platform flag", "--json").stdout)
    shown = {l["id"] for l in data["lessons"]}
    assert [l["text"] for l in data["lessons"]] == [DOCKER]
    assert shown.isdisjoint(n["id"] for n in data["near_misses"])
    assert [n["text"] for n in data["near_misses"]] == [UV]


def test_near_misses_follow_the_configured_bar(cli, store, tmp_path):
    seed(store, [(UV, "correction", None)])
    assert cli("config", "set", "prime.min_relevance", "0.2").exit_code == 0
    data = json.loads(cli("context", "--project", str(tmp_path), "--prompt", "pip install requests",
                          "--json").stdout)
    assert [l["text"] for l in data["lessons"]] == [UV] and data["near_misses"] == []
    assert data["min_relevance"] == 0.2


# --------------------------------------------------------------------------- one preview for every edge

@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_context_preview_is_the_same_for_the_cli_the_server_and_the_engine(store: Any, cli: Any) -> None:
    from remem.engine import prime
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.lessons import add_lesson

    emb = get_embedder()
    for text, cwd in (("Build the docker image with make image, not docker build", "/work/shop"),
                      ("Run pytest -n 2 before committing", None),
                      ("Deploy the billing service with the blue profile", "/work/billing")):
        add_lesson(store, text, "correction", cwd=cwd, space=emb.space, embedding=to_blob(emb.encode([text])[0]))
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        for prompt in ("", "build the docker image"):
            mine = prime.preview(store, "/work/shop", prompt, agent="mcp")
            served = await call_ok(client, "context", {"project": "/work/shop", "prompt": prompt})
            assert served["lessons"] == mine["lessons"] and served["text"] == mine["text"]
            args = ["context", "--project", "/work/shop", "--json"] + (["--prompt", prompt] if prompt else [])
            printed = json.loads(cli(*args).stdout)
            assert printed["lessons"] == mine["lessons"] and printed["text"] == mine["text"]
        assert "make image" in mine["text"] and "billing" not in mine["text"]
    assert store.rows("SELECT * FROM primes") == []  # a preview records nothing
