"""Nothing is cut or replaced without a word (docs/RELIABILITY.md, "Limits"): `remember` keeps a
long text whole in its detail, as an event's is kept, and says on stderr when it cut the text
or stored a secret as [secret]; `lessons edit` says when the lesson's cap cut the new words."""

from __future__ import annotations

from remem.engine.lessons import MAX_LESSON, add_lesson, get_lesson
from remem.engine.memories import remember, update_memory
from remem.engine.store import MAX_DETAIL, MAX_GIST, TRUNCATED, Store
from tests.conftest import run_remem

LONG = " ".join(f"step{i} of the deploy runbook" for i in range(400))  # about 11,000 characters


def test_a_long_remembered_text_is_kept_whole_in_its_detail_and_said(home) -> None:
    assert MAX_GIST < len(LONG) < MAX_DETAIL
    res = run_remem("remember", LONG, "--json")
    assert res.returncode == 0, res.stderr
    memory = res.json()
    assert memory["gist"].endswith(TRUNCATED) and memory["detail"] == LONG
    assert res.stderr == (f"remem: the text is {len(LONG):,} characters: recall shows the first 4,000, "
                          "and the whole text is kept in its detail\n")


def test_a_text_past_the_detail_cap_is_cut_and_said(home) -> None:
    huge = "x" * (MAX_DETAIL + 6000)
    res = run_remem("remember", huge)
    assert res.returncode == 0, res.stderr
    lost = len(huge) - (MAX_DETAIL - len(TRUNCATED))
    assert f"its last {lost:,} were cut" in res.stderr and res.stderr.count("\n") == 1, res.stderr
    with Store() as store:
        row = store.one("SELECT gist, detail FROM episodes")
    assert len(row["detail"]) == MAX_DETAIL and row["detail"].endswith(TRUNCATED)


def test_a_secret_replaced_is_said_and_a_plain_note_says_nothing(home) -> None:
    key = "sk-ant-api03-" + "a1B2c3D4" * 12
    res = run_remem("remember", f"the staging key is {key}")
    assert res.returncode == 0 and key not in res.stdout + res.stderr
    assert res.stderr == "remem: a secret in the text was stored as [secret] (memories are handed to agents)\n"
    plain = run_remem("remember", "use uv, not pip")
    assert plain.returncode == 0 and plain.stderr == ""


def test_the_engine_keeps_the_text_as_an_event_does(store) -> None:
    """One rule for both (store.gist_and_detail): a remembered text as long as a kept message."""
    memory = remember(store, LONG)
    assert memory["detail"] == LONG and len(memory["gist"]) == MAX_GIST
    # its text changed: the detail follows it, the old words are not kept under the new ones
    short = update_memory(store, memory["id"], text="the runbook moved to the wiki")
    assert short["gist"] == "the runbook moved to the wiki" and short["detail"] == ""
    longer = update_memory(store, memory["id"], text=LONG + " and more")
    assert longer["detail"] == LONG + " and more"


def test_lessons_edit_says_when_the_words_were_cut(home) -> None:
    with Store() as store:
        lesson = add_lesson(store, "Install packages with uv, never pip.", "correction")
    words = "always run the tests before pushing " * 100
    res = run_remem("lessons", "edit", lesson["id"], "--text", words)
    assert res.returncode == 0, res.stderr
    given = len(" ".join(words.split()))
    assert f"the last {given - (MAX_LESSON - len(TRUNCATED)):,} were cut" in res.stdout, res.stdout
    with Store() as store:
        assert len(get_lesson(store, lesson["id"])["text"]) == MAX_LESSON
    res = run_remem("lessons", "edit", lesson["id"], "--text", "short words", "--json")
    assert res.json()["cut"] == 0 and "cut" not in res.stderr
