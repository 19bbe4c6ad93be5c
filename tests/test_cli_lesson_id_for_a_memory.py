"""A lesson's id given to a command for memories (`remem recall` lists lessons beside memories,
ids alike): the command says it is a lesson and how lessons are hidden, not "no memory with
id …", which sends the person to `remem list` where the id is not."""

from __future__ import annotations

import json

import pytest

from remem.engine.lessons import add_lesson, lesson_named
from remem.engine.memories import remember
from remem.engine.store import Store
from remem.errors import NotFound


@pytest.fixture
def lesson_id(home) -> str:
    with Store() as store:
        remember(store, "the deploy script needs the VPN")
        return add_lesson(store, "Install packages with uv, never pip.", "correction")["id"]


@pytest.mark.parametrize("words", [["forget", "{id}"], ["forget", "{id}", "--hard"]])
def test_forget_says_the_id_is_a_lesson_and_how_it_is_hidden(cli, lesson_id: str, words: list[str]) -> None:
    """The other commands' own hints: tests/test_cli_review_fixes.py."""
    with Store() as store:
        memory = store.one("SELECT id FROM episodes")["id"]
    res = cli(*[w.format(id=lesson_id, memory=memory) for w in words])
    assert res.exit_code == 1
    assert res.stderr.strip() == (f"remem: {lesson_id} is a lesson, not a memory: `remem lessons veto "
                                  f"{lesson_id}` hides it (`remem lessons show {lesson_id}` reads it)")


def test_a_lesson_prefix_is_named_in_full_and_json_says_it_too(cli, lesson_id: str) -> None:
    res = cli("forget", lesson_id[:6], "--json")
    assert res.exit_code == 1
    assert json.loads(res.stdout)["error"].startswith(f"{lesson_id} is a lesson, not a memory")


def test_an_id_of_nothing_is_still_no_memory(store) -> None:
    add_lesson(store, "Install packages with uv, never pip.", "correction")
    with pytest.raises(NotFound, match="^no memory with id 'feedface'; `remem list` shows the ids$"):
        store.episode("feedface")
    assert lesson_named(store, "feedface") is None and lesson_named(store, "ab") is None
