"""Edges of remember, recall, config and call: a long query's rare last word
never reaching BM25, `config set` failing after writing when another key is bad (and writing a
token world-readable), blank tags and projects, a flashbulb memory's lifetime dropped without a
word, durations read loosely ("1M" as a minute, a bare 3600 as seconds, 100,000 days), `call
--json`, bounds in scientific notation, invisible memories, a time past year 9999 in UTC called
"not a time", and tags trimmed before NULs were cleaned out.

The CLI runs in-process (typer's runner) on the real store and the bundled model; MCP tools
behind the SDK's own client against the real server."""

from __future__ import annotations

import json
import os
import random
import stat
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import clock
from tests.conftest import call_ok, call_tool, server_in_process


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def one_line(result: Any, *fragments: str) -> str:
    """A refusal: exit 1, one `remem:` line on stderr holding every fragment."""
    assert result.exit_code == 1, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remem: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def count(store: Any) -> int:
    return store.scalar("SELECT count(*) FROM episodes")


# --------------------------------------------------------------------------- 1. long queries

NOTES = ["use uv, not pip, to install packages", "the CI runs on ubuntu 22.04 images",
         "frontend build uses vite and pnpm", "feature flags live in launchdarkly",
         "secrets are stored in vault, never in the repo", "python version is pinned to 3.12",
         "the api gateway is nginx with a 30 second timeout", "run pytest with -n 4 for speed",
         "docker compose file sits in the deploy folder", "the team prefers small pull requests",
         "cron jobs run in UTC", "code review needs one approval", "the docs site is built with mkdocs",
         "black formats python code at 100 columns", "the mobile app ships every two weeks",
         "the search index is rebuilt nightly", "translations live in the locale folder",
         "use ruff for linting", "the README explains local setup", "oncall rotates every monday"]
STRIPE = "stripe is not installed in the billing venv; run uv add stripe"
INCIDENT = ("Yesterday afternoon during the rollout of the new release we saw the environment behave "
            "strangely after the schema changes ran, dashboards showed a spike in latency, several "
            "alarms fired, people looked at the logs and the backlog was growing while tasks were "
            "retried again and again, then after restarting the containers and clearing caches and "
            "reading traces for an hour someone finally noticed the payment worker crashed importing stripe")


def test_a_long_querys_rare_last_word_reaches_the_keyword_search(store: Any, cli: Any) -> None:
    from remem.engine.keywords import MAX_TERMS, fts_terms
    from remem.engine.memories import remember
    from remem.engine.recall import recall

    assert len(fts_terms(INCIDENT, 10 * MAX_TERMS)) > MAX_TERMS  # "stripe" is past the 32nd word
    for note in NOTES:
        remember(store, note)
    wanted = remember(store, STRIPE, kind="error")["id"]
    for mode in ("keyword", "hybrid"):
        assert wanted in [h["id"] for h in recall(store, INCIDENT, 3, mode=mode, touch=False)], mode
    result = cli("recall", INCIDENT, "--mode", "keyword", "-k", "3", "--json")
    assert result.exit_code == 0, result.output
    assert wanted in [h["id"] for h in json.loads(result.stdout)]


def test_a_long_query_keeps_its_rarest_words_in_a_big_store(store: Any) -> None:
    """1,200 memories of common words: past 32 words, the common ones and those no memory holds
    make way for the one word that tells."""
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.memories import remember
    from remem.engine.recall import recall

    rng = random.Random(5)
    words = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
             "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()
    texts = [" ".join(rng.choices(words, k=rng.randint(4, 10))) for _ in range(1200)]
    emb = get_embedder()
    with clock.frozen("2026-06-01T00:00:00+00:00"):
        store.put_episodes([
            {"id": f"b{i:04d}", "kind": "note", "title": t[:40], "gist": t, "space": emb.space,
             "at": clock.iso(clock.now() - timedelta(days=rng.random() * 700)),
             "embedding": to_blob(v)} for i, (t, v) in enumerate(zip(texts, emb.encode(texts)))])
        wanted = remember(store, "the zeppelin hangar door sticks in cold weather")["id"]
        unheard = [f"qq{n}zz" for n in range(12)]  # words no memory holds
        query = " ".join([*words, *unheard, "zeppelin"])
        hits = recall(store, query, 3, mode="keyword", touch=False)
    assert hits and hits[0]["id"] == wanted


# --------------------------------------------------------------------------- 2. config set

def test_config_set_sets_its_key_and_warns_of_another_bad_one(cli: Any, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[prime]\nmax_chars = 5\n")
    result = cli("config", "set", "recall.k", "8")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stdout.strip() == "recall.k = 8"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remem: warning: ") and "prime.max_chars" in lines[0], lines
    assert "remem config set prime.max_chars" in lines[0]  # and its fix
    assert "k = 8" in (home / "config.toml").read_text()
    result = cli("config", "set", "recall.k", "9", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == {"key": "recall.k", "value": 9}
    # The bad key is still refused by the commands that read the config.
    assert cli("config", "show").exit_code == 1


def test_a_config_duration_in_capital_m_an_older_remem_read_as_minutes_says_why(cli: Any, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[lifecycle]\nshort_term_ttl = "30M"\n')
    result = cli("status")
    assert result.exit_code == 1
    assert "M is not read: m is minutes, 30d a month" in result.stderr and "'30M'" in result.stderr, result.stderr


def test_config_set_writes_the_file_readable_by_its_owner_alone(cli: Any, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("# mine\n[recall]\nk = 5\n")
    os.chmod(path, 0o644)
    assert cli("config", "set", "server.token", "s3cret-token-value").exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "# mine" in path.read_text()
    path.unlink()  # a new file too
    assert cli("config", "set", "recall.k", "7").exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# --------------------------------------------------------------------------- 3. blank tag, project

@pytest.mark.parametrize("args, line", [
    (["--project", "   "], "project is empty (an unset variable?)"),
    (["--project", ""], "project is empty (an unset variable?)"),
    (["--tag", ""], "tag is empty (an unset variable?)"),
    (["--tag", "deploy", "--tag", " \t"], "tag is empty (an unset variable?)"),
])
def test_remember_refuses_a_blank_tag_or_project_as_recall_does(cli: Any, store: Any, args: list[str],
                                                                line: str) -> None:
    one_line(cli("remember", "keep the redis cache warm", *args), line)
    assert count(store) == 0


# --------------------------------------------------------------------------- 4. flashbulb and ttl

def test_a_flashbulb_memory_says_its_ttl_was_set_aside(cli: Any, store: Any) -> None:
    result = cli("remember", "the day the cluster went down", "--arousal", "0.9", "--ttl", "1h")
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == ("remem: arousal 0.9 makes a flashbulb memory, kept long-term: "
                                     "the ttl was ignored")
    result = cli("remember", "the night the disk filled", "--arousal", "0.95", "--short-term", "--json")
    memory = json.loads(result.stdout)
    assert memory["note"] == "arousal 0.95 makes a flashbulb memory, kept long-term, not short-term"
    assert memory["memory_type"] == "long_term" and memory["expires_at"] is None
    plain = json.loads(cli("remember", "an ordinary note", "--ttl", "1h", "--json").stdout)
    assert "note" not in plain and plain["memory_type"] == "short_term"


@pytest.mark.anyio
async def test_mcp_remember_notes_the_flashbulb_rule_and_reads_ttl_as_the_cli_does(store: Any) -> None:
    from mcp.client import Client

    async with Client(server_in_process()) as client:
        stored = await call_ok(client, "remember", {"text": "outage", "arousal": 0.9, "ttl": "2h"})
        assert stored["note"].endswith("kept long-term: the ttl was ignored")
        for ttl, said in (("3600", "needs a unit"), ("1M", "m is minutes"), ("100000d", "from 1s to 36500d")):
            ok, text = await call_tool(client, "remember", {"text": "x", "ttl": ttl})
            assert not ok and said in text, (ttl, text)
    assert count(store) == 1


# --------------------------------------------------------------------------- 5. durations

@pytest.mark.parametrize("ttl, fragments", [
    ("1M", ["m is minutes", "30d"]),
    ("100000d", ["from 1s to 36500d"]),
    ("3600", ["needs a unit", "3600s"]),
    ("0.5s", ["from 1s to 36500d"]),
    ("-5m", ["from 1s to 36500d"]),
])
def test_remember_refuses_a_ttl_it_would_misread(cli: Any, store: Any, ttl: str, fragments: list[str]) -> None:
    one_line(cli("remember", "a note meant to expire", "--ttl", ttl), *fragments)
    assert count(store) == 0


def test_since_refuses_a_capital_m_too(cli: Any) -> None:
    one_line(cli("recall", "anything", "--since", "3M"), "since:", "m is minutes")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 36500), st.sampled_from("smhdwSHDW"))
def test_a_ttl_with_its_unit_is_read_in_any_case_but_m(n: int, unit: str) -> None:
    seconds = n * clock._UNITS[unit.lower()]
    if seconds > 36500 * 86400:
        with pytest.raises(ValueError, match="from 1s to 36500d"):
            clock.parse_ttl(f"{n}{unit}")
    else:
        assert clock.parse_ttl(f" {n}{unit} ") == seconds
    with pytest.raises(ValueError, match="m is minutes"):
        clock.parse_ttl(f"{n}M")
    with pytest.raises(ValueError, match="needs a unit"):
        clock.parse_ttl(str(n))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_any_ttl_text_is_read_or_refused_in_one_line(text: str) -> None:
    try:
        seconds = clock.parse_ttl(text)
    except ValueError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("ttl")
    else:
        assert 1 <= seconds <= 36500 * 86400 and text.strip()[-1:].isalpha()


# --------------------------------------------------------------------------- 6. call --json

def test_call_takes_json_and_changes_nothing(cli: Any, store: Any) -> None:
    from remem.engine.memories import remember

    remember(store, "use uv, not pip")
    plain = cli("call", "recall", '{"query": "uv", "k": 1}')
    with_json = cli("call", "recall", '{"query": "uv", "k": 1}', "--json")
    assert with_json.exit_code == 0, with_json.output
    assert json.loads(with_json.stdout)["hits"][0]["text"] == json.loads(plain.stdout)["hits"][0]["text"]


# --------------------------------------------------------------------------- 7. bounds

def test_a_range_error_writes_whole_bounds_with_separators(cli: Any) -> None:
    line = one_line(cli("config", "set", "recall.max_candidates", "0"), "from 1 to 1,000,000")
    assert "e+" not in line
    one_line(cli("config", "set", "llm.timeout_s", "4000"), "more than 0 and at most 3,600")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**15), st.integers(0, 10**15), st.booleans())
def test_range_text_never_uses_scientific_notation(low: int, high: int, above: bool) -> None:
    from remem.config import Range

    text = Range(low, high, above).text()
    assert "e+" not in text and f"{low:,}" in text and f"{high:,}" in text
    assert Range(0.5, float("inf")).text() == "at least 0.5"


# --------------------------------------------------------------------------- 8. invisible text

@pytest.mark.parametrize("text", ["\u200b", "\x1b", " \u200b\u200d\t\x07 ", "\u2060\ufeff"])
def test_remember_refuses_a_text_no_one_could_see(cli: Any, store: Any, text: str) -> None:
    one_line(cli("remember", text), "no visible character")
    assert count(store) == 0


def test_update_refuses_invisible_words_too(store: Any) -> None:
    from remem.engine.memories import remember, update_memory

    memory = remember(store, "the staging server runs on port 8080")
    with pytest.raises(ValueError, match="no visible character"):
        update_memory(store, memory["id"], text="\u200b\x1b")
    assert store.episode(memory["id"])["gist"] == "the staging server runs on port 8080"


def test_visible_words_among_invisible_ones_are_kept(store: Any) -> None:
    from remem.engine.memories import remember

    assert remember(store, "\u200bdeploy on fridays\x1b")["gist"].strip("\u200b\x1b") == "deploy on fridays"


# --------------------------------------------------------------------------- 9. past year 9999

def test_a_time_past_year_9999_in_utc_is_named_as_such(cli: Any) -> None:
    line = one_line(cli("recall", "anything", "--since", "9999-12-31T23:59:59-05:00"),
                    "since:", "outside year 1 to 9999 in UTC")
    assert "not a time" not in line


# --------------------------------------------------------------------------- 11. tags

def test_a_tag_is_trimmed_after_its_nuls_are_cleaned(cli: Any, store: Any) -> None:
    from remem.engine.memories import remember
    from remem.engine.store import normalise_tag

    assert normalise_tag("0 \x00") == "0"
    memory = remember(store, "a tagged note", tags=["0 \x00"])
    assert memory["tags"] == ["0"]
    found = json.loads(cli("list", "--tag", "0", "--json").stdout)
    assert [m["id"] for m in found] == [memory["id"]]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_a_normalised_tag_has_no_blank_at_either_end(tag: str) -> None:
    from remem.engine.store import normalise_tag

    out = normalise_tag(tag)
    assert out == out.strip() and "\x00" not in out
    assert normalise_tag(tag + " \x00") == out  # a tag shorter than the cap (100)
