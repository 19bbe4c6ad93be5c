"""The CLI says what the MCP tools say: a tag too long to keep whole is refused by `remem
remember` (not stored cut with a marker in it), and `remem connect` of an edge that exists
with another weight says the weight was kept. Real CLI, real store."""

from __future__ import annotations

import json
from typing import Any


def _id(result: Any) -> str:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["id"]


def test_remember_refuses_a_tag_too_long_to_keep_whole(cli: Any, store: Any) -> None:
    result = cli("remember", "the deploy runs on fridays", "--tag", "q" * 150)
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == "remem: tags: at most 32 tags of at most 100 characters; one has 150: shorten it"
    assert store.scalar("SELECT count(*) FROM episodes") == 0  # nothing stored, nothing cut
    kept = _id(cli("remember", "the deploy runs on fridays", "--tag", "q" * 100, "--json"))
    assert store.rows("SELECT tag FROM tags WHERE memory_id = ?", (kept,)) == [{"tag": "q" * 100}]


def test_connect_again_with_another_weight_says_the_edge_kept_its_own(cli: Any, store: Any) -> None:
    a = _id(cli("remember", "the cache was cold", "--json"))
    b = _id(cli("remember", "the first request timed out", "--json"))
    assert cli("connect", a, b, "--type", "caused_by", "--weight", "0.5").exit_code == 0
    again = cli("connect", a, b, "--type", "caused_by", "--weight", "0.8")
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith("already connected: ") and "with weight 0.5: kept" in again.stdout
    same = cli("connect", a, b, "--type", "caused_by", "--weight", "0.5")
    assert same.stdout.strip() == f"already connected: {a} -caused_by-> {b}"
