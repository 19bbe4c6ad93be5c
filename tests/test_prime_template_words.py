"""remem's own template words never make a lesson match: the advice a drafted error lesson ends
with ("…; find out why before running it again.") and its "failed here" are read by the agent
but count neither as keyword evidence (prime, recall) nor in the lesson's vector, which sleep
computes from the lesson's own words, also for a store whose lessons were embedded whole.
The real bundled model, a real store, the real sleep pass."""

from __future__ import annotations

import pytest

PROJECT = "/home/you/code/shop-api"
EDIT = ("`Edit` failed here (File has not been read yet. Read it first before writing to it.); "
        "find out why before running it again.")
TASK = ("`Task` failed here (InputValidationError: … The required parameter `prompt` is missing); "
        "find out why before running it again.")
RG = "`rg -n get_products` failed here (command not found); check the tool is installed, or use another."
DRAFTED = [EDIT, TASK, RG]


def store_unembedded(store, texts=DRAFTED) -> list[dict]:
    """The lessons as the store holds them before a sleep embeds them."""
    from remem.engine import lessons

    return [lessons.add_lesson(store, text, "error", cwd=PROJECT) for text in texts]


def store_embedded_whole(store, texts=DRAFTED) -> list[dict]:
    """The lessons with a vector of their whole text, as a store made before the fix holds
    them."""
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob

    emb = get_embedder()
    return [lessons.add_lesson(store, text, "error", cwd=PROJECT, space=emb.space,
                               embedding=to_blob(emb.encode([text])[0])) for text in texts]


def sleep_embed(store) -> dict:
    from remem.engine import sleep

    return sleep.run_sleep_collect(store, passes=["embed"])


def shown(store, text: str, event: str = "prompt", command: str | None = None) -> list[str]:
    from remem import config
    from remem.engine import prime

    got = prime.select(store, text, event=event, cwd=PROJECT, cfg=config.load(), record=False,
                       command=command)
    return [lesson["text"] for lesson in got["lessons"]]


def scored(store, text: str, event: str = "prompt", command: str | None = None) -> dict[str, dict]:
    from remem.engine import prime

    return {c["text"]: c for c in prime.candidates(store, text, event=event, cwd=PROJECT,
                                                   command=command)}


def test_only_a_lessons_own_words_are_matchable():
    from remem.engine.programs import matchable_text

    assert matchable_text(RG, "error") == "`rg -n get_products` (command not found)"
    assert matchable_text("Avoid repeating this error: Bash failed: make deploy.", "error") == \
        "Bash failed: make deploy."
    fix = "On ModuleNotFoundError (`requests`): run `uv add requests`."
    assert matchable_text(fix, "error") == fix  # the fix is the person's words
    assert matchable_text("Run the tests with pytest -x; it stops at the first.", "correction") == \
        "Run the tests with pytest -x; it stops at the first."


@pytest.mark.parametrize("prompt", [
    "find out why the build is failing",        # the catch-all's advice, and "failed"
    "check that the tool is installed on the CI runner",  # the command-not-found advice
])
def test_a_prompt_sharing_only_the_advice_is_shown_no_error_lesson(store, prompt):
    store_unembedded(store)
    sleep_embed(store)
    assert shown(store, prompt) == [], prompt
    for lesson in DRAFTED:
        assert scored(store, prompt)[lesson]["keyword"] == 0.0, (prompt, lesson)


def test_a_store_embedded_from_whole_lessons_is_corrected_by_the_next_sleep(store):
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.programs import matchable_text

    made = store_embedded_whole(store)
    prompt = "find out why the build is failing"
    whole = {text: c["semantic"] for text, c in scored(store, prompt).items()}
    summary = sleep_embed(store)
    assert summary["passes"]["embed"]["lessons_reembedded"] == len(DRAFTED)
    emb = get_embedder()
    for lesson in made:
        row = store.one("SELECT embedding FROM lessons WHERE id = ?", (lesson["id"],))
        assert row["embedding"] == to_blob(emb.encode([matchable_text(lesson["text"], "error")])[0])
    own = {text: c["semantic"] for text, c in scored(store, prompt).items()}
    for text in (EDIT, TASK):  # the advice's words were most of what the prompt shared with them
        assert own[text] < whole[text] - 0.05, (text, whole[text], own[text])
    assert shown(store, prompt) == []
    # Safe to re-run: the vectors are the lessons' own already, nothing is written again.
    assert sleep_embed(store)["passes"]["embed"]["lessons_reembedded"] == 0


def test_the_lessons_a_sleep_learns_are_embedded_from_their_own_words(home):
    """The demo's sleep learns a drafted error lesson ("`rg -n get_products` failed here
    (command not found); check the tool is installed, or use another."); the lessons pass
    embeds it whole, the sleep embeds it again from its own words in the same run. Its
    template made "set up a virtualenv and install the requirements" show it (0.706)."""
    import os
    from pathlib import Path

    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.programs import matchable_text
    from remem.engine.store import Store
    from tests.conftest import run_remem

    result = run_remem("demo")
    assert result.returncode == 0, result.stderr
    demo = Path(os.environ["HOME"]) / ".remem-demo"
    emb = get_embedder()
    with Store(demo / "memory.db") as store:
        rows = store.rows("SELECT text, kind, embedding FROM lessons WHERE kind = 'error'")
        assert any("failed here" in r["text"] for r in rows)
        for row in rows:
            assert row["embedding"] == to_blob(emb.encode([matchable_text(row["text"], "error")])[0])
        from remem import config
        from remem.engine import prime

        got = prime.select(store, "set up a virtualenv and install the requirements", event="prompt",
                           cwd=PROJECT, cfg=config.load(), record=False)
        assert not any("failed here" in lesson["text"] for lesson in got["lessons"])


def test_a_shell_call_sharing_only_the_advice_gets_no_keyword_evidence(store):
    store_unembedded(store)
    sleep_embed(store)
    got = scored(store, "Bash find . -name '*.py'", event="pre-tool", command="find . -name '*.py'")
    for lesson in (EDIT, TASK):
        assert got[lesson]["keyword"] == 0.0


def test_an_editing_a_lesson_by_hand_embeds_its_own_words(store):
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.programs import matchable_text

    made = store_unembedded(store, [RG])[0]
    lessons.edit_text(store, made["id"], EDIT)
    row = store.one("SELECT embedding FROM lessons WHERE id = ?", (made["id"],))
    assert row["embedding"] == to_blob(get_embedder().encode([matchable_text(EDIT, "error")])[0])


def test_recall_gives_the_advice_no_keyword_evidence(store, fresh_vector_caches):
    from remem.engine import recall

    store_unembedded(store, [RG])
    sleep_embed(store)
    hits = recall.recall(store, "how do I install packages", k=5, touch=False)
    lesson = next((h for h in hits if h["type"] == "lesson"), None)
    assert lesson is None or lesson["parts"]["keyword"] == 0.0
    # The error's own words still count: "command not found".
    hits = recall.recall(store, "rg command not found", k=5, touch=False)
    lesson = next(h for h in hits if h["type"] == "lesson")
    assert lesson["parts"]["keyword"] > 0.0
