"""measure, compare, experiment and the `context` preview say what they do: `context` without a
prompt lists what may be shown (not a block no hook would inject), `compare --limit 0` prints
the totals alone, `experiment` keeps one JSON shape, writes each training pair once and exits 1
when nothing was judged, and docs/GOALS.md says what the commands do."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from remem.engine import clock
from tests.conftest import call_ok, server_in_process
from tests.fake_llm_api import ServerThread
from tests.test_experiment_goals import _lesson, fake_openai_compatible_model, fake_openai_compatible_model_saying
from tests.test_hooks import seed, session_in_arm
from tests.test_measure import _episode

GOALS = Path(__file__).resolve().parent.parent / "docs" / "GOALS.md"
RUN_KEYS = {"model", "lessons", "no_answer", "behaviour_without_reminder", "behaviour_with_reminder",
            "boundary_asks_first", "pairs_written"}


def _section(title: str) -> str:
    text = GOALS.read_text(encoding="utf-8")
    start = text.index(f"## `remem {title}")
    end = text.find("\n## ", start + 1)
    return " ".join(text[start:end if end > 0 else None].split())


# --------------------------------------------------------------------------- context without a prompt

SHOP_LESSONS = [
    ("We use uv here, not pip.", "correction"),
    ("Don't touch the migrations folder, old migrations are never edited.", "correction"),
    ("Never force-push; use --force-with-lease.", "correction"),
    ("`rg -n get_products` failed here (command not found); check the tool is installed.", "error"),
    ("The test database needs `docker compose up db` first.", "error"),
]


def test_context_without_a_prompt_lists_what_may_be_shown_not_a_block_a_hook_would_inject(cli, store, tmp_path):
    project = tmp_path / "shop-api"
    (project / "src" / "sub").mkdir(parents=True)
    seed(store, [(text, kind, str(project)) for text, kind in SHOP_LESSONS])
    here = str(project / "src" / "sub")

    res = cli("context", "-p", here)
    assert res.exit_code == 0, res.output
    assert "<remem-memory>" not in res.stdout  # 5 lessons; a hook injects at most 3, and only for a prompt
    assert f"Lessons that may be shown in {here}. A hook injects at most 3 at a time" in res.stdout
    data = json.loads(cli("context", "-p", here, "--json").stdout)
    assert len(data["lessons"]) == 5 and not data["text"].startswith("<remem-memory>")
    assert all(f"- ({kind}) {text}\n" in data["text"] for text, kind in SHOP_LESSONS)

    # With a prompt: exactly the block the prompt hook would inject, fenced.
    from remem import config
    from remem.engine import prime

    prompt = "pip install requests"
    shown = json.loads(cli("context", "-p", here, "--prompt", prompt, "--json").stdout)
    would = prime.select(store, prompt, event="prompt", cwd=here, session_id=session_in_arm(False), cfg=config.load(),
                         record=False)
    assert shown["text"] == would["text"] and shown["text"].startswith("<remem-memory>")
    assert 1 <= len(shown["lessons"]) <= 3
    assert store.scalar("SELECT count(*) FROM primes") == 0


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_context_without_a_prompt_answers_the_same_list(store, cli) -> None:
    from mcp.client import Client

    seed(store, [(text, kind, "/work/shop") for text, kind in SHOP_LESSONS])
    async with Client(server_in_process()) as client:
        served = await call_ok(client, "context", {"project": "/work/shop"})
    assert "<remem-memory>" not in served["text"]
    assert served["text"].startswith("Lessons that may be shown in /work/shop.")
    assert len(served["lessons"]) == 5
    printed = json.loads(cli("context", "--project", "/work/shop", "--json").stdout)
    assert printed["text"] == served["text"]


# --------------------------------------------------------------------------- compare --limit 0

def test_compare_limit_0_prints_the_totals_alone(store, cli):
    start = clock.parse("2026-03-01T09:00:00+00:00")
    for day, name in enumerate(["alpha", "bravo", "charlie"]):
        _episode(store, f"c{day}", "correction", name, clock.iso(start + timedelta(days=day)), f"s{day}")
    out = cli("compare", "--limit", "0")
    assert out.exit_code == 0, out.output
    assert "showing the latest" not in out.stdout
    assert out.stdout.strip().splitlines() == [out.stdout.strip()] and out.stdout.startswith("remem covered")
    assert "showing the latest 1 of 3" in cli("compare", "--limit", "1").stdout  # still said when rows show


# --------------------------------------------------------------------------- experiment

def test_experiment_pairs_twice_with_fake_openai_compatible_server_writes_each_pair_once(store, home, tmp_path, cli):
    from remem import config

    _lesson(store)
    pairs = tmp_path / "pairs.jsonl"
    with ServerThread(fake_openai_compatible_model()) as server:
        home.mkdir(parents=True, exist_ok=True)
        config.set_value("llm.url", server.url)
        for _ in range(2):  # the model answers the same way both times
            out = cli("experiment", "--pairs", str(pairs), "--json")
            assert out.exit_code == 0, out.output
    assert store.scalar("SELECT count(*) FROM experiments WHERE passed = 1 AND with_reminder = 1 "
                        "AND test = 'behaviour'") == 2  # both runs kept
    lines = pairs.read_text().splitlines()
    assert len(lines) == 1 and json.loads(out.stdout)["pairs_written"] == 1


def test_experiment_json_has_one_shape_with_or_without_a_model(store, home, tmp_path, cli):
    from remem import config

    _lesson(store)
    pairs = tmp_path / "pairs.jsonl"
    untested = cli("experiment", "--pairs", str(pairs), "--json")  # no model
    assert untested.exit_code == 1
    data = json.loads(untested.stdout)
    assert set(data) == RUN_KEYS | {"error"}  # a run's keys, and why it exits 1
    assert data["error"] == untested.stderr.strip().removeprefix("remem: ")
    assert data["model"] is None and data["lessons"] == 0 and data["no_answer"] == 0
    assert data["pairs_written"] == 0
    assert data["behaviour_with_reminder"] == {"passed": 0, "judged": 0, "rate": None}
    with ServerThread(fake_openai_compatible_model()) as server:  # the fake stands in for a local model
        home.mkdir(parents=True, exist_ok=True)
        config.set_value("llm.url", server.url)
        tested = cli("experiment", "--json")
    assert tested.exit_code == 0 and set(json.loads(tested.stdout)) == RUN_KEYS
    assert json.loads(tested.stdout)["pairs_written"] is None  # no --pairs


def test_experiment_exits_1_in_one_line_when_the_model_never_answers(cli, store, home):
    """No model is faked here: the configured port has nothing listening."""
    from remem import config
    from remem.engine import llm

    _lesson(store)
    home.mkdir(parents=True, exist_ok=True)
    url = "http://127.0.0.1:9/v1"
    config.set_value("llm.url", url)
    config.set_value("llm.timeout_s", 2)
    try:
        out = cli("experiment", "--json")
        assert out.exit_code == 1, out.output
        err = out.stderr.strip()
        assert err.count("\n") == 0 and err.startswith(f"remem: the model at {url} gave no answer 3 times"), err
        assert "so nothing was judged" in err
        assert json.loads(out.stdout)["no_answer"] == 3
    finally:
        llm._away_until.pop(url, None)


def test_experiment_with_fake_openai_compatible_server_exits_1_when_no_verdict_counts(cli, store, home):
    from remem import config

    _lesson(store)
    with ServerThread(fake_openai_compatible_model_saying("I will run pip install.", "Not sure.")) as server:
        home.mkdir(parents=True, exist_ok=True)
        config.set_value("llm.url", server.url)
        out = cli("experiment")
    assert out.exit_code == 1, out.output
    err = out.stderr.strip()
    assert err.count("\n") == 0 and "so nothing was judged" in err and "llm.model" in err, err
    assert "model default, 1 lessons" in out.stdout


# --------------------------------------------------------------------------- docs/GOALS.md

def test_goals_doc_says_experiment_pairs_without_a_model_exits_1(cli, store, tmp_path):
    said = _section("experiment")
    assert "(exit 0)" not in said
    assert "Without a model it says so in one line and exits 1" in said
    assert "with `--pairs` too" in said
    assert cli("experiment", "--pairs", str(tmp_path / "p.jsonl")).exit_code == 1  # as the doc says


def test_goals_doc_says_corrections_since_the_last_sleep_count_as_not_repeated():
    said = _section("measure")
    assert "only at the next `remem sleep`" in said
    assert "the corrections ingested since the last sleep count as not repeated" in said
