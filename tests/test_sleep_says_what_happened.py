"""A first sleep that learns nothing says why, every pass says what it did in plain words, a
sleep without a terminal draws no progress, a full sleep decays strength once, and `remem
list` shows when a memory happened."""

from __future__ import annotations

import json

from remem.engine import clock, lifecycle, sleep, sleep_describe
from remem.engine.embed import get_embedder, to_blob
from tests.conftest import run_remem

NOW = "2026-11-30T09:00:00.000000+00:00"


def episode(i: str, kind: str, text: str, *, at: str = "2026-11-02T10:00:00+00:00",
            tags: tuple[str, ...] = (), session: str | None = None) -> dict:
    emb = get_embedder()
    vec = emb.encode([text if kind == "correction" else f"{text}\n{text}"])[0]
    return {"id": i, "kind": kind, "title": text[:100], "gist": text, "at": at, "cwd": "/home/u/proj",
            "session_id": session or f"s-{i}", "source": "claude-code", "space": emb.space,
            "embedding": to_blob(vec), "tags": list(tags)}


def seen_once() -> list[dict]:
    """The walkthrough's first ingest: three unrelated errors and two corrections that wait
    (a refused call with no words, a plain instruction after an interrupt)."""
    return [
        episode("e1", "error", "ModuleNotFoundError: No module named 'requests'", tags=("error:module_not_found",)),
        episode("e2", "error", "permission denied writing /etc/hosts", tags=("error:permission_denied",)),
        episode("e3", "error", "git push rejected: non-fast-forward"),
        episode("r1", "correction", "refused Bash: rm -rf build", tags=("refused",)),
        episode("u1", "correction", "use pnpm", tags=("interrupt", "unconfirmed")),
    ]


WAITING = {"errors": 3, "surprises": 0, "refusals": 1, "unconfirmed": 1, "unclear": 0, "total": 5,
           "next_sleep": 0}


def _learned_section(report: str) -> str:
    return report.split("## Learned\n")[1].split("\n\n")[0]


# --------------------------------------------------------------------------- what waits, and why

def test_a_first_sleep_that_learns_nothing_says_what_waits_and_why(store):
    from remem import paths

    with clock.frozen(NOW):
        store.put_episodes(seen_once())
        summary = sleep.run_sleep_collect(store)
    assert summary["events"]["learned"] == []
    # The engine counts what waits, by reason, and agrees with the pass's own count.
    assert summary["waiting"] == WAITING
    assert summary["passes"]["lessons"]["pending"] == summary["waiting"]["total"]
    learned = _learned_section(paths.morning_path().read_text())
    assert learned.startswith("Nothing new.")
    assert "2 corrections and 3 errors were each seen once" in learned
    assert "second sighting" in learned and "in this session or another" in learned


def test_a_second_sighting_in_the_same_session_makes_the_lesson_as_the_words_say(store):
    """The rule the words state is the rule: a second error like a waiting one, in the same
    session, makes a lesson; the others still wait."""
    with clock.frozen(NOW):
        store.put_episodes(seen_once())
        sleep.run_sleep_collect(store)
        store.put_episodes([episode("e4", "error", "ModuleNotFoundError: No module named 'requests'",
                                    at="2026-11-03T10:00:00+00:00", tags=("error:module_not_found",),
                                    session="s-e1")])
        summary = sleep.run_sleep_collect(store)
    assert len(summary["events"]["learned"]) == 1
    assert summary["waiting"] == {**WAITING, "errors": 2, "total": 4}
    assert summary["passes"]["lessons"]["pending"] == 4


def test_the_cli_tells_what_waits_where_the_person_looks(store, cli):
    from remem.engine import doctor

    with clock.frozen(NOW):
        store.put_episodes(seen_once())
        before = doctor.store_health()
        listed = cli("lessons", "list")
        assert "5 new corrections and errors wait for `remem sleep`" in listed.stdout
        slept = cli("sleep")
        after = doctor.store_health()
        listed = cli("lessons", "list")
        morning = cli("morning")
    # Before any sleep, running one is the fix.
    [problem] = [p for p in before["problems"] if "no active lessons" in p["problem"]]
    assert problem["fix"].startswith("remem sleep")
    assert slept.exit_code == 0, slept.output
    assert "2 corrections and 3 errors were each seen once, so they wait" in slept.stdout
    assert "Waiting: 3 errors, 1 refused tool call with no reason given, 1 plain instruction" in slept.stdout
    assert listed.exit_code == 0 and listed.stdout.startswith("no lessons yet: 2 corrections and 3 errors")
    assert "learns them from repeated" not in listed.stdout  # not "run what you just ran"
    assert "were each seen once" in _learned_section(morning.stdout)
    # After a sleep that read everything, doctor does not send the person to run it again.
    [problem] = [p for p in after["problems"] if "no active lessons" in p["problem"]]
    assert not problem["fix"].startswith("remem sleep"), problem
    assert "were each seen once" in problem["problem"] and problem["fix"].startswith("nothing to run")


def test_a_memory_with_nothing_to_learn_is_not_told_to_sleep_again(store, cli):
    from remem.engine import doctor

    store.put_episodes([episode("n1", "note", "the deploy script lives in ops/")])
    assert cli("sleep", "--quiet").exit_code == 0
    [problem] = [p for p in doctor.store_health()["problems"] if "no active lessons" in p["problem"]]
    assert problem["fix"].startswith("nothing to run"), problem
    assert "remem ingest" in cli("lessons", "list").stdout


# --------------------------------------------------------------------------- words, not counters

def test_every_pass_says_what_it_did_in_words(store, cli):
    with clock.frozen("2026-11-29T09:00:00+00:00"):  # stored a day before the sleep: decay is owed
        store.put_episodes(seen_once())
    with clock.frozen(NOW):
        res = cli("sleep")
    assert res.exit_code == 0, res.output
    table = " ".join(res.stdout.replace("│", " ").split())  # a folded cell reads as one line
    for jargon in ("ran 5", "new_episodes", "decayed 1", "memories 5", "nothing to do"):
        assert jargon not in table, (jargon, res.stdout)
    assert "due lifecycle tasks ran: nothing expired or was deleted; importance of 5 memories eased " \
        "with age (normal)" in table
    assert "strength of 5 memories eased for the time unused; none faded (normal)" in table
    assert "read 5 new corrections and errors: 5 seen only once, waiting for a second sighting" in table
    assert "no two lessons meant the same" in table
    # Scripts read the counts, whose keys stay as they were.
    passes = sleep.history(store, 1)[0]["summary"]["passes"]
    assert set(passes["lessons"]) == {"new_episodes", "joined", "created", "pending", "pending_earlier",
                                   "unclear"}
    assert {"ran", "decayed"} <= set(passes["expire"]) and set(passes["decay"]) == {"decayed", "archived"}


def test_an_empty_memory_says_what_the_lifecycle_checked(store):
    summary = sleep.run_sleep_collect(store)
    assert sleep_describe.describe_pass("expire", summary["passes"]["expire"]) == \
        f"{summary['passes']['expire']['ran']} due lifecycle tasks ran: nothing expired or was deleted"
    assert sleep_describe.describe_pass("decay", summary["passes"]["decay"]) == \
        "no memory's strength was owed any decay"
    assert sleep_describe.describe_pass("expire", {"ran": 0}) == "no lifecycle task was due"


def test_a_pass_that_faded_memories_says_so(store):
    assert sleep_describe.describe_pass("decay", {"decayed": 3, "archived": 1}) == (
        "strength of 3 memories eased for the time unused; 1 memory faded and was archived "
        "(hidden from recall, restorable)")


def test_the_morning_report_says_who_asked_and_who_stopped(store):
    from remem.engine.render_morning import morning_report

    store.put_episodes([episode("r1", "correction", "refused Bash: rm -rf build", tags=("refused",))])
    text = morning_report(store, {}, 0, [])
    assert "→" not in text and "asked→act" not in text
    assert "Acted, then stopped: 1 (you refused or interrupted what the agent did: it should have asked)" in text
    assert "  - other (no kind recorded): asked, then told to act 0; acted, then stopped 1" in text


# --------------------------------------------------------------------------- no terminal, no bars

def test_sleep_without_a_terminal_draws_no_progress(home):
    res = run_remem("sleep")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # cron logs hold the summary once, not a truncated second copy
    assert "what happened" in res.stdout


# --------------------------------------------------------------------------- strength decays once

def test_a_full_sleep_decays_each_memorys_strength_once(store, monkeypatch):
    calls: list[dict] = []
    real = lifecycle.strength_decay

    def counted(*args, **kwargs):
        result = real(*args, **kwargs)
        calls.append(result)
        return result

    monkeypatch.setattr(lifecycle, "strength_decay", counted)
    store.put_episodes([episode(f"n{i}", "note", f"note number {i} about the build", at="2020-01-01T00:00:00+00:00")
                        for i in range(4)])
    # The real clock moves on between passes: a second decay would touch every memory again.
    summary = sleep.run_sleep_collect(store)
    assert len(calls) == 1, calls
    assert calls[0]["decayed"] == 4
    assert "strength_decay" not in summary["passes"]["expire"]["by_task"]
    assert summary["passes"]["decay"]["decayed"] == 4


# --------------------------------------------------------------------------- remem list

def test_list_shows_when_a_memory_happened_and_json_is_unchanged(store, cli, monkeypatch):
    monkeypatch.setenv("REMEM_NOW", NOW)
    store.put_episodes([episode("old", "note", "the deploy script lives in ops/", at="2026-04-02T10:00:00+00:00")])
    listed = cli("list")
    assert listed.exit_code == 0, listed.output
    assert "when" in listed.stdout and "04-02" in listed.stdout
    assert "11-30" not in listed.stdout  # stored today: not what the table shows
    [row] = json.loads(cli("list", "--json").stdout)
    assert row["at"].startswith("2026-04-02") and row["created"].startswith("2026-11-30")
    touched = cli("list", "--field", "last_touched")
    assert "touched" in touched.stdout and "04-02" in touched.stdout


def test_list_shows_the_year_when_the_page_reaches_into_another(store, cli, monkeypatch):
    monkeypatch.setenv("REMEM_NOW", NOW)
    store.put_episodes([episode("old", "note", "the deploy script lives in ops/", at="2025-12-31T10:00:00+00:00")])
    assert "2025-12-31" in cli("list").stdout


def test_the_lessons_line_of_each_sleep_adds_up_to_what_it_read(store):
    """Its parts sum to the new episodes read; what waits from earlier sleeps is told apart,
    never as a part of them ("0 seen only once", "2 made 1 new lesson or wait (5 …)")."""
    errors = [episode("e1", "error", "ModuleNotFoundError: No module named 'requests'", tags=("error:module_not_found",)),
              episode("e2", "error", "permission denied writing /etc/hosts", tags=("error:permission_denied",)),
              episode("e3", "error", "git push rejected: non-fast-forward", tags=("error:git_conflict",))]

    def lessons_line(*episodes: dict) -> str:
        store.put_episodes(list(episodes))
        return sleep_describe.describe_pass("lessons", sleep.run_sleep_collect(store)["passes"]["lessons"])

    with clock.frozen(NOW):
        first = lessons_line(*errors, episode("c1", "correction", "use uv, not pip, to install packages"))
        assert first == ("read 4 new corrections and errors: 4 made 1 new lesson, except 3 seen only once, "
                         "which wait for a second sighting")
        clock.advance(days=1)
        joined = lessons_line(episode("c2", "correction", "no, install dependencies with uv instead of pip",
                                      at="2026-11-03T10:00:00+00:00"))
        assert joined == ("read 1 new correction or error: 1 joined a lesson; "
                          "3 from earlier sleeps still wait for a second sighting")
        clock.advance(days=1)
        mixed = lessons_line(
            episode("c3", "correction", "stop using pip here, we use uv for packages", at="2026-11-04T10:00:00+00:00"),
            episode("c4", "correction", "never push straight to main; open a pull request", at="2026-11-04T10:01:00+00:00"),
            episode("e4", "error", "curl: (7) Failed to connect to localhost port 5432: Connection refused",
                    at="2026-11-04T10:02:00+00:00", tags=("error:network",)))
        assert mixed == ("read 3 new corrections and errors: 1 joined a lesson, the other 2 made 1 new lesson, "
                         "except 1 seen only once, which waits for a second sighting; 3 from earlier sleeps "
                         "still wait too")


def test_the_lessons_line_of_a_summary_without_pending_earlier_still_adds_up():
    """A summary an older remem recorded has no `pending_earlier`: what waits in all is told
    apart, and a part of nothing ("0 seen only once") is never said."""
    line = sleep_describe.describe_pass("lessons", {"new_episodes": 1, "joined": 1, "created": 0, "pending": 4})
    assert line == ("read 1 new correction or error: 1 joined a lesson; "
                    "4 from earlier sleeps still wait for a second sighting")
    line = sleep_describe.describe_pass("lessons", {"new_episodes": 3, "joined": 1, "created": 1, "pending": 5})
    assert line == ("read 3 new corrections and errors: 1 joined a lesson, the other 2 made 1 new lesson or "
                    "wait for a second sighting; 5 seen only once wait in all, from this sleep and earlier ones")
