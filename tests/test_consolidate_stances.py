"""A correction that takes back part of a lesson: a lesson points every way its corrections
point — not only its first one's way, nor only its words' —, so "stop using pnpm" never joins
the lesson "use pnpm not npm" joined, in the same sleep or a later one; the newer word wins in
its project, and two such lessons never merge.

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the real sleep.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import clock, consolidate
from remem.engine.contradiction import Directions, contradicts, pairs_apart, stance
from remem.engine.lessons import add_lesson, for_project
from tests.test_contradictions import DAY, _active, _holding, _said
from tests.test_sleep import _at, run

WEB, API = "/home/dev/web", "/home/dev/api"
STOP_NPM, PNPM, STOP_PNPM = "no, stop using npm", "no, use pnpm not npm", "no, stop using pnpm"


def _retired_by(store, summary: dict) -> tuple[dict, dict]:
    """The lesson of the first two corrections and that of the take-back, checked: apart, the
    older retired in web by the newer."""
    older, newer = _holding(store, "w1"), _holding(store, "w3")
    assert _holding(store, "w2")["id"] == older["id"] != newer["id"]
    assert json.loads(older["sources"]) == ["w1", "w2"] and newer["sources"] == '["w3"]'
    assert (older["status"], older["note"]) == ("vetoed", f"superseded by {newer['id']} in {WEB}")
    assert summary["events"]["contradicted"] == [
        {"old": older["id"], "new": newer["id"], "in": WEB, "by": "w3", "how": "retired"}]
    assert summary["events"]["grew"] == []
    return older, newer


def test_a_take_back_of_what_a_joined_correction_preferred_stays_apart_and_wins_in_one_sleep(store, cli):
    """"stop using npm", then "use pnpm not npm", then "stop using pnpm": all three made one
    lesson "Use pnpm not npm." (seen 3), injected right after the person said to stop using
    pnpm — the lesson pointed only the way its first correction did (against npm)."""
    with clock.frozen(_at(9 * DAY)):
        store.put_episodes([_said("w1", STOP_NPM, 0, WEB), _said("w2", PNPM, 1, WEB), _said("w3", STOP_PNPM, 8, WEB)])
        summary = run(store)
    _, newer = _retired_by(store, summary)
    assert [l["id"] for l in for_project(store, WEB)] == [newer["id"]]
    shown = cli("context", "--project", WEB, "--prompt", "add axios with pnpm", "--json")
    assert shown.exit_code == 0, shown.output
    assert "Stop using pnpm." in shown.output and "npm." not in shown.output.replace("Stop using pnpm.", "")


def test_a_take_back_in_a_later_sleep_reads_the_lesson_by_its_corrections_not_its_words(store):
    """The lesson of "stop using npm" and "use pnpm not npm" reads "Stop using npm.": its words
    say nothing of pnpm, and "stop using pnpm" grew it at the next sleep."""
    with clock.frozen(_at(2 * DAY)):
        store.put_episodes([_said("w1", STOP_NPM, 0, WEB), _said("w2", PNPM, 1, WEB)])
        run(store)
        [lesson] = _active(store)
        assert lesson["text"] == "Stop using npm."  # its words prefer nothing
        clock.advance(days=7)
        store.put_episodes([_said("w3", STOP_PNPM, 8, WEB)])
        summary = run(store)
    older, _ = _retired_by(store, summary)
    assert older["id"] == lesson["id"] and older["seen"] == 2


def test_corrections_that_agree_still_join_and_one_pointing_against_a_later_member_stays_apart(store):
    """What agrees with every member still joins ("never npm here" joins the pnpm lesson); the
    take-back in another project leaves the lesson of two projects as it was (kept)."""
    with clock.frozen(_at(DAY * 10)):
        store.put_episodes([_said("w1", STOP_NPM, 0, WEB), _said("w2", PNPM, 1, WEB),
                            _said("w4", "never use npm in this repo", 2, API)])
        run(store)
        [lesson] = _active(store)
        assert json.loads(lesson["sources"]) == ["w1", "w2", "w4"] and lesson["cwd"] is None
        clock.advance(days=1)
        store.put_episodes([_said("w3", STOP_PNPM, 9, API)])
        summary = run(store)
    newer = _holding(store, "w3")
    assert newer["id"] != lesson["id"] and _holding(store, "w1")["status"] == "active"
    assert summary["events"]["contradicted"] == [
        {"old": lesson["id"], "new": newer["id"], "in": API, "by": "w3", "how": "narrowed"}]
    assert store.one("SELECT cwd FROM lessons WHERE id = ?", (lesson["id"],))["cwd"] == WEB


def test_the_merge_pass_reads_a_lesson_by_its_corrections_too(store):
    """Two lessons made apart: "Stop using npm." (which "use pnpm not npm" joined) and "Stop
    using pnpm.". Their words contradict nothing, yet one takes back what the other holds."""
    with clock.frozen(_at(DAY * 10)):
        store.put_episodes([_said("w1", STOP_NPM, 0, WEB), _said("w2", PNPM, 1, WEB), _said("w3", STOP_PNPM, 8, API)])
        a = add_lesson(store, "Stop using npm.", "correction", sources=["w1", "w2"], created=_at(30))
        b = add_lesson(store, "Stop using pnpm.", "correction", sources=["w3"], created=_at(200))
        summary = run(store, passes=["merge"])
    assert summary["passes"]["merge"] == {"themes": 0, "aliased": 0}
    assert {l["id"] for l in _active(store)} == {a["id"], b["id"]}


# --------------------------------------------------------------------------- the rule itself

SAID = [STOP_NPM, PNPM, STOP_PNPM, "just use npm", "use yarn not npm", "never use pnpm here", "stop using yarn",
        "use pnpm", "no, use uv not pip"]
STANCES = [stance(text) for text in SAID]


def test_a_thing_with_several_stances_is_contradicted_through_any_of_them():
    directions = Directions()
    directions.add("lesson", stance(STOP_NPM))
    assert directions.against(stance(STOP_PNPM)) == set()  # its first correction's way alone
    directions.add("lesson", stance(PNPM))
    directions.add("lesson", stance(PNPM))  # the same way twice is kept once
    assert len(directions.stances["lesson"]) == 2
    assert directions.against(stance(STOP_PNPM)) == {"lesson"}
    assert pairs_apart([[stance(STOP_NPM), stance(PNPM)], stance(STOP_PNPM), None]) == [(0, 1)]
    assert pairs_apart([stance(STOP_NPM), stance(STOP_PNPM)]) == []


def _grouped(picks: list[int], vecs: np.ndarray, block: int, monkeypatch: pytest.MonkeyPatch
             ) -> list[list[str]]:
    monkeypatch.setattr(consolidate, "BLOCK", block)
    groups: list[consolidate.Group] = []
    ids = [f"e{i}" for i in range(len(picks))]
    for _ in consolidate.consolidate_kind(
            "correction", groups, [], np.zeros((0, vecs.shape[1]), np.float32), [], ids, vecs, [""] * len(ids),
            0.5, None, [STANCES[p] for p in picks], None, [consolidate.topic_of(SAID[p]) for p in picks]):
        pass
    return [g.members for g in groups]


@settings(max_examples=60, deadline=None)
@given(picks=st.lists(st.integers(0, len(SAID) - 1), min_size=2, max_size=30), seed=st.integers(0, 10_000),
       block=st.integers(2, 8))
def test_no_lesson_ever_holds_two_corrections_that_contradict_in_any_order_or_block(picks, seed, block):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 8)) + 0.05 * rng.normal(size=(len(picks), 8))  # all alike
    vecs = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    with pytest.MonkeyPatch.context() as mp:
        one = _grouped(picks, vecs, 1, mp)
        assert _grouped(picks, vecs, block, mp) == one
    for members in one:
        held = [STANCES[picks[int(m[1:])]] for m in members]
        assert not any(contradicts(a, b) for a in held for b in held), [SAID[picks[int(m[1:])]] for m in members]

