"""The stop hook's answer from the transcript, when the agent sends no last_assistant_message
(Claude Code before it sent one): the answer of this turn, whatever else the file holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_hooks import run_hook, seed, session_in_arm

FORCE_PUSH = "I force-pushed to main with git push --force, it is live."


def _user(text: str, **extra) -> dict:
    return {"type": "user", "message": {"role": "user", "content": text}, **extra}


def _assistant(text: str, **extra) -> dict:
    return {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
            **extra}


def _tool_use() -> dict:
    return {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "git status"}}]}}


def _tool_result() -> dict:
    return {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "nothing to commit"}]}}


# Assistant records of other shapes than Claude Code writes: each skipped, none ends the search.
ODD_RECORDS = [
    {"type": "assistant", "message": "a message that is a string"},
    {"type": "assistant", "message": None},
    {"type": "assistant", "message": ["a", "list"]},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": 5}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": None}, "a bare string", 7]}},
    {"type": "assistant", "message": {"content": {"type": "text", "text": "content as an object"}}},
    {"type": "user", "message": "a user message that is a string"},
    {"type": "user", "message": {"content": [{"type": "text", "text": ["not", "text"]}]}},
    ["not", "an", "object"],
]


def _stop_text(tmp_path: Path, records: list) -> str:
    """What the stop hook reads as the agent's answer from a transcript of these records."""
    from remem.hooks import adapters

    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    call = adapters.read("claude-code", "stop", {"session_id": "s", "transcript_path": str(transcript)})
    return call.text


@pytest.mark.parametrize("odd", ODD_RECORDS, ids=lambda r: json.dumps(r)[:60])
def test_a_record_of_another_shape_is_skipped_not_fatal(tmp_path, odd):
    assert _stop_text(tmp_path, [_user("ship it"), _assistant(FORCE_PUSH), odd]) == FORCE_PUSH


def test_the_stop_hook_acts_on_the_answer_before_a_record_of_another_shape(seeded_for_stop, tmp_path):
    transcript = tmp_path / "t.jsonl"
    lines = [json.dumps(_assistant("I force-pushed to main")),
             json.dumps({"type": "assistant", "message": {"role": "assistant",
                                                          "content": [{"type": "text", "text": 5}]}})]
    transcript.write_text("\n".join(lines) + "\n")
    payload = {"transcript_path": str(transcript), "session_id": session_in_arm(False, "odd-shape"),
               "cwd": "/home/you/code/shop-api"}
    res = run_hook("stop", payload)
    assert res.returncode == 0 and "skipped" not in res.stderr, res.stderr
    out = res.json()
    assert out["decision"] == "block" and "git push --force" in out["reason"]


def test_an_earlier_turns_answer_is_not_this_turns(tmp_path):
    """The person asked again; this turn has no text yet (only a tool call): nothing to check,
    not the last turn's "force-pushed"."""
    records = [_user("ship it"), _assistant(FORCE_PUSH), _user("now update the README"),
               _tool_use(), _tool_result()]
    assert _stop_text(tmp_path, records) == ""


def test_an_interrupt_ends_the_turn_too(tmp_path):
    interrupt = {"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}}
    assert _stop_text(tmp_path, [_user("ship it"), _assistant(FORCE_PUSH), interrupt]) == ""


def test_tool_results_and_harness_notes_do_not_end_the_turn(tmp_path):
    records = [_user("ship it"), _tool_use(), _tool_result(), _assistant(FORCE_PUSH), _tool_use(),
               _tool_result(), _user("<system-reminder>todo list is empty</system-reminder>", isMeta=True),
               {"type": "system", "content": "hook ran"}]
    assert _stop_text(tmp_path, records) == FORCE_PUSH


def test_a_subagents_messages_are_not_the_hand_back(tmp_path):
    """A subagent's records (sidechain) sit in the same file: its prompt does not end the main
    turn, and its answer is not the agent's."""
    records = [_user("ship it"), _assistant(FORCE_PUSH), _user("find the cart code", isSidechain=True),
               _assistant("Found it in src/cart.ts.", isSidechain=True)]
    assert _stop_text(tmp_path, records) == FORCE_PUSH


def test_a_harness_written_answer_is_not_the_agents(tmp_path):
    synthetic = {"type": "assistant", "message": {"role": "assistant", "model": "<synthetic>",
                                                  "content": [{"type": "text", "text": "API Error: overloaded"}]}}
    assert _stop_text(tmp_path, [_user("ship it"), _assistant(FORCE_PUSH), synthetic]) == FORCE_PUSH


def test_the_last_text_of_this_turn_is_read(tmp_path):
    records = [_user("ship it"), _assistant("Looking at the branch first."), _tool_use(), _tool_result(),
               _assistant(FORCE_PUSH), _tool_use()]
    assert _stop_text(tmp_path, records) == FORCE_PUSH


@pytest.fixture
def seeded_for_stop(store, monkeypatch):
    from remem import config

    seed(store)
    config.set_value("prime.timeout_ms", 30000)  # a loaded machine must not turn "blocks" into "gave up"
    monkeypatch.setenv("REMEM_HOOK_CAP_MS", "60000")  # nor the cap on it (config.HOOK_CAP_ENV)
    return store
