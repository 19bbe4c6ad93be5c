"""`remem context --prompt`: a preview of the prompt hook's choice, and of the lessons that
came close to it, so a person can see why a lesson was not shown."""

from __future__ import annotations

import json

from tests.test_hooks import seed

UV = "We use uv here, never pip (uv add / uv sync)"
DOCKER = "The docker build needs --platform linux/amd64"


def test_a_prompt_below_the_bar_names_the_closest_lessons_and_their_scores(cli, store, tmp_path):
    project = tmp_path / "shop"
    project.mkdir()
    seed(store, [(UV, "correction", str(project)), (DOCKER, "error", None)])
    res = cli("context", "--project", str(project), "--prompt", "pip install requests")
    assert res.exit_code == 0
    assert "no lessons would be injected" in res.output
    assert "closest below prime.min_relevance 0.65 (not shown):" in res.output
    near_line = next(line for line in res.output.splitlines() if "We use uv here" in line)
    score = float(near_line.split()[1])
    assert 0 < score < 0.65

    data = json.loads(cli("context", "--project", str(project), "--prompt", "pip install requests",
                          "--json").stdout)
    assert data["lessons"] == [] and data["min_relevance"] == 0.65
    assert data["near_misses"][0]["text"] == UV
    assert round(data["near_misses"][0]["relevance"], 2) == score
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
