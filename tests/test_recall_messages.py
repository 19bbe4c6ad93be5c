"""What recall and import say when there is nothing to answer with: a query with no visible
character, filters that leave no memory, an empty import file; and what --explain says the
relevance is in each mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine.memories import remember
from remem.engine.recall import recall
from remem.engine.store import Store
from tests.conftest import run_remem

# Characters that show nothing: blanks, control characters, zero-width ones.
_INVISIBLE = ["\u200b", "\x01", "\x1b", "\u200d", "\ufeff", "\u2060", "\u00a0", "\u3000", "\t", "\u2028"]


def _one_line_error(result, *words: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remem: ") and "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _recalls(store: Store) -> dict[str, int]:
    return {r["id"]: r["recalls"] for r in store.rows("SELECT id, recalls FROM episodes")}


# --------------------------------------------------------------------------- invisible queries

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(st.sampled_from(_INVISIBLE), min_size=1, max_size=6).map("".join))
def test_a_query_with_no_visible_character_is_refused_and_touches_nothing(store, query):
    if not store.scalar("SELECT count(*) FROM episodes"):
        remember(store, "deploy with the blue-green script")
        remember(store, "the staging database is on port 5433")
    before = _recalls(store)
    for mode in ("hybrid", "semantic", "keyword"):
        with pytest.raises(ValueError, match="^the query is empty"):
            recall(store, query, 5, mode=mode)
    assert _recalls(store) == before
    # One visible character among them makes it a query.
    assert recall(store, f"{query}deploy{query}", 5, touch=False)


@pytest.mark.parametrize("query", ["\u200b", "\x01"])
def test_the_cli_and_mcp_refuse_an_invisible_query_in_one_line(home: Path, query: str):
    with Store() as store:
        remember(store, "deploy with the blue-green script")
        before = _recalls(store)
    _one_line_error(run_remem("recall", query), "no visible character", "say what you are looking for")
    called = run_remem("call", "recall", json.dumps({"query": query}))
    assert called.returncode == 1 and "no visible character" in called.stderr, called.stderr
    with Store() as store:
        assert _recalls(store) == before


# --------------------------------------------------------------------------- --explain per mode

def _explained(mode: str) -> list[str]:
    out = run_remem("recall", "deploy script", "--mode", mode, "--explain")
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_explain_states_the_formula_of_the_mode_in_effect(home: Path):
    with Store() as store:
        remember(store, "deploy with the blue-green script")
        remember(store, "the staging database is on port 5433")

    semantic = _explained("semantic")
    evidence = [line for line in semantic if line.startswith("   relevance ")]
    assert evidence and all("bm25 —" in line and "date —" in line and "speaker —" in line
                            and "cosine —" not in line for line in evidence)
    assert "relevance is the cosine alone" in semantic[-1]
    assert "mixes cosine and BM25" not in "\n".join(semantic)

    keyword = _explained("keyword")
    evidence = [line for line in keyword if line.startswith("   relevance ")]
    assert evidence and all("cosine —" in line and "date —" in line and "speaker —" in line
                            and "bm25 —" not in line for line in evidence)
    assert "relevance is the BM25 alone" in keyword[-1]
    assert "mixes cosine and BM25" not in "\n".join(keyword)

    hybrid = _explained("hybrid")
    assert "—" not in "\n".join(hybrid[:-1])
    assert "relevance mixes cosine and BM25" in hybrid[-1]

    # --json keeps every key of `parts` in every mode (scripts read them).
    every = {"relevance", "semantic", "keyword", "when", "speaker", "recency", "strength",
             "importance", "flashbulb"}
    for mode in ("hybrid", "semantic", "keyword"):
        out = run_remem("recall", "deploy", "--mode", mode, "--json")
        assert out.returncode == 0, out.stderr
        assert out.json()
        for hit in out.json():  # a hit below the relevance floor says so besides
            assert set(hit["parts"]) - {"demoted", "relevance_floor"} == every, (mode, hit["parts"])


# --------------------------------------------------------------------------- filters left nothing

def test_filters_that_match_nothing_are_named(home: Path):
    with Store() as store:
        remember(store, "deploy with the blue-green script", tags=["ops"])
    out = run_remem("recall", "deploy", "--tag", "nonexistent")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines() == [
        "no memory matches --tag nonexistent; drop a filter, or see what there is (kinds, tags, "
        "dates) with `remem list`"]
    out = run_remem("recall", "deploy", "--kind", "error", "--tag", "two words", "--since", "7d")
    assert out.stdout.startswith("no memory matches --kind error --tag 'two words' --since 7d;")
    out = run_remem("recall", "zzqx", "--mode", "keyword", "--tag", "ops")
    assert out.stdout.startswith("no memory matching --tag ops holds a word of the query;")
    out = run_remem("recall", "zzqx", "--mode", "keyword")
    assert out.stdout.startswith("no memory holds a word of the query;")


# --------------------------------------------------------------------------- empty import

def test_importing_an_empty_file_is_refused_but_an_empty_memory_export_is_not(home: Path, tmp_path: Path):
    empty = tmp_path / "empty.jsonl"
    for content in ("", "\n", "  \n\n\t\n"):
        empty.write_text(content)
        _one_line_error(run_remem("import", str(empty)), "empty.jsonl is empty", "not a remem export",
                        "remem export")
        # From stdin (a pipe that brought nothing) it is said, not refused: nothing went wrong here.
        piped = run_remem("import", "-", input=content)
        assert piped.returncode == 0 and piped.stdout.strip() == "imported: nothing (stdin was empty)", \
            (piped.stdout, piped.stderr)
    # An export of a memory holding nothing has its header line: a real export, imported.
    path = tmp_path / "nothing.jsonl"
    assert run_remem("export", str(path)).returncode == 0
    out = run_remem("import", str(path))
    assert out.returncode == 0 and out.stdout.strip() == "imported: nothing", (out.stdout, out.stderr)
