"""A correction that takes back an earlier one: never joined to the lesson it contradicts,
never merged with it, never confirming its prediction; the newer one wins in its project, and
the morning report says so. Vetoed lessons predict nothing, and the report says they are vetoed."""

from __future__ import annotations

import pytest

from remem import paths
from remem.engine import clock, measure
from remem.engine.contradiction import contradicts, stance
from remem.engine.lessons import for_project
from remem.engine.render_vetoes import veto_lesson
from tests.test_sleep import _at, episode, run

SHOP, NOTES, INFRA = "/home/dev/shop", "/home/dev/notes", "/home/dev/infra"
DAY = 24


def _said(i: str, text: str, day: float, cwd: str) -> dict:
    return episode(i, "correction", text, hours=day * DAY + 1, cwd=cwd)


def _active(store) -> list[dict]:
    return store.rows("SELECT * FROM lessons WHERE status = 'active' ORDER BY created, id")


def _holding(store, episode_id: str) -> dict:
    [row] = [r for r in store.rows("SELECT * FROM lessons") if f'"{episode_id}"' in r["sources"]]
    return row


def _block(report: str, title: str) -> list[str]:
    return report.split(f"## {title}\n")[1].split("\n\n")[0].splitlines()


# --------------------------------------------------------------------------- which way a text points

@pytest.mark.parametrize("text, prefers, rejects", [
    ("no, use uv not pip", {"uv"}, {"pip"}),
    ("use uv, not pip, to install packages", {"uv"}, {"pip"}),
    ("no, install dependencies with uv instead of pip", {"uv"}, {"pip"}),
    ("Don't use pip, we have uv. Use uv tool install mdformat.", {"uv"}, {"pip"}),
    ("stop running pip install for everything, use uv", {"uv"}, {"pip"}),
    ("stop using pip3, everything goes through uv", set(), {"pip"}),
    ("no, actually pip is fine now, just use pip install", {"pip"}, set()),
    ("don't use uv anymore in this repo, plain pip install is what we use now", set(), {"uv"}),
    ("switch back to npm", {"npm"}, set()),
    ("use `uv add` not `pip install`", {"uv"}, {"pip"}),
    # unclear: a clause naming two programs says nothing of either
    ("don't use uv pip install, use uv add", {"uv"}, set()),
    ("pip is not installed, use uv", {"uv"}, set()),
])
def test_a_correction_reads_as_the_programs_it_prefers_and_rejects(text, prefers, rejects):
    read = stance(text)
    assert read is not None and (set(read.prefers), set(read.rejects)) == (prefers, rejects), read


@pytest.mark.parametrize("text", ["never push straight to main; open a pull request",
                                  "no, in this repo the tests run with make test",
                                  "if uv is not installed, use pip", "Run `npm test` before pushing.", ""])
def test_a_correction_naming_no_program_with_a_direction_points_nowhere(text):
    assert stance(text) is None


@pytest.mark.parametrize("older, newer, expected", [
    ("Use uv not pip.", "no, actually pip is fine now, just use pip install", True),
    ("Use uv not pip.", "don't use uv anymore in this repo, plain pip install is what we use now", True),
    ("Use pnpm, not npm.", "just use npm", True),
    ("Use uv not pip.", "stop using pip3, everything goes through uv", False),
    ("Use uv not pip.", "no, we never use pip here, it's uv everywhere", False),
    # both directions known: it rejects make, not pnpm, so it takes nothing back
    ("Use pnpm, not npm.", "use npm run build, not make", False),
    ("Use uv not pip.", "never push straight to main", False),
    # a way of running a program is not the program: neither takes the other back
    ("Use pytest -x, not the whole suite.", "stop running pytest with -s", False),
    ("Use pytest -k to pick the test, don't run everything.", "stop running pytest with -s", False),
    ("Use git rebase, not merge, on feature branches.", "don't commit with git commit -a", False),
    ("Don't use git push --force, use --force-with-lease.", "use git rebase, not merge, on feature branches", False),
    ("Don't pip install into the system python, use a venv.",
     "don't use `python setup.py install`, use pip install .", False),
])
def test_two_corrections_contradict_when_one_prefers_what_the_other_rejects(older, newer, expected):
    assert contradicts(stance(older), stance(newer)) is expected
    assert contradicts(stance(newer), stance(older)) is expected


# --------------------------------------------------------------------------- through real sleeps

def test_a_correction_taking_back_a_lesson_is_not_joined_to_it_and_the_lesson_leaves_that_project(store):
    with clock.frozen(_at(DAY)):
        store.put_episodes([_said("u1", "no, use uv not pip", 0, SHOP),
                            _said("u2", "Don't use pip, we have uv. Use uv tool install mdformat.", 0.2, NOTES)])
        run(store)
        [uv] = _active(store)
        assert uv["cwd"] is None  # learned in two projects
        clock.advance(days=20)
        store.put_episodes([_said("p1", "no, actually pip is fine now, just use pip install", 20, SHOP)])
        taken = run(store)
        clock.advance(days=2)
        store.put_episodes([_said("p2", "don't use uv anymore in this repo, plain pip install is what we use now",
                                  22, SHOP)])
        run(store)
        again = run(store)
        clock.advance(days=1)
        store.put_episodes([_said("u3", "stop using pip3, everything goes through uv", 23, NOTES)])
        run(store)  # the uv lesson grows in notes: its shop source still does not count
    uv_now = store.one("SELECT * FROM lessons WHERE id = ?", (uv["id"],))
    # Never a source of the lesson it takes back: not its strength, not its repeats.
    assert uv_now["sources"] == '["u1","u2","u3"]' and uv_now["seen"] == 3 and uv_now["strength"] == 3.0
    assert uv_now["status"] == "active" and uv_now["cwd"] == NOTES  # it left the shop, kept notes
    pip = _holding(store, "p1")
    assert pip["id"] != uv["id"] and pip["status"] == "active" and pip["cwd"] == SHOP
    assert _holding(store, "p2")["id"] != uv["id"]
    assert store.scalar("SELECT count(*) FROM aliases") == 0  # never merged
    assert [l["id"] for l in for_project(store, SHOP)] == [pip["id"]]
    assert uv["id"] in [l["id"] for l in for_project(store, NOTES)]
    assert not store.rows("SELECT id FROM predictions WHERE lesson_id = ? AND evidence IN ('p1', 'p2')", (uv["id"],))
    assert [r["id"] for r in measure.repeats(store, "correction") if r["lesson"] == uv["id"] and r["repeat"]] == ["u3"]
    assert taken["events"]["contradicted"] == [
        {"old": uv["id"], "new": pip["id"], "in": SHOP, "by": "p1", "how": "narrowed"}]
    assert again["events"]["contradicted"] == []
    [line] = _block(paths.morning_path().read_text(), "Contradicted")
    assert line.startswith(f"- Use uv not pip. ({uv['id']}) — taken back in {SHOP} by: ") and pip["text"] in line
    assert line.endswith(f"it applies only in {NOTES} now"), line


def test_a_lesson_of_that_project_alone_is_superseded_and_said_again_it_is_learned_anew(store):
    with clock.frozen(_at(DAY)):
        store.put_episodes([_said("u1", "no, use uv not pip", 0, SHOP)])
        run(store)
        [uv] = _active(store)
        clock.advance(days=3)
        store.put_episodes([_said("p1", "no, actually pip is fine now, just use pip install", 3, SHOP)])
        run(store)
        uv_now = store.one("SELECT * FROM lessons WHERE id = ?", (uv["id"],))
        pip = _holding(store, "p1")
        assert uv_now["status"] == "vetoed" and uv_now["note"] == f"superseded by {pip['id']} in {SHOP}"
        assert store.scalar("SELECT count(*) FROM predictions WHERE lesson_id = ? AND resolved IS NULL",
                            (uv["id"],)) == 0  # withdrawn with it
        assert [l["id"] for l in for_project(store, SHOP)] == [pip["id"]]
        report = paths.morning_path().read_text()
        assert f"retired there (`remem lessons restore {uv['id']}` brings it back)" in _block(report, "Contradicted")[0]
        clock.advance(days=3)
        store.put_episodes([_said("u3", "no, use uv not pip", 6, SHOP)])  # the person changes their mind back
        run(store)
    newest = _holding(store, "u3")
    assert newest["id"] not in (uv["id"], pip["id"]) and newest["status"] == "active"
    assert store.one("SELECT sources FROM lessons WHERE id = ?", (uv["id"],))["sources"] == '["u1"]'
    assert store.one("SELECT status, note FROM lessons WHERE id = ?", (pip["id"],)) == {
        "status": "vetoed", "note": f"superseded by {newest['id']} in {SHOP}"}
    assert [l["id"] for l in for_project(store, SHOP)] == [newest["id"]]


def test_a_lesson_learned_in_several_other_projects_still_applies_and_the_report_says_so(store):
    with clock.frozen(_at(DAY)):
        store.put_episodes([_said("u1", "no, use uv not pip", 0, NOTES),
                            _said("u2", "stop running pip install for everything, use uv", 0.2, INFRA)])
        run(store)
        [uv] = _active(store)
        clock.advance(days=3)
        store.put_episodes([_said("p1", "no, actually pip is fine now, just use pip install", 3, SHOP)])
        summary = run(store)
    pip = _holding(store, "p1")
    # A lesson applies in one project or in all: it cannot leave the shop alone.
    assert store.one("SELECT status, cwd FROM lessons WHERE id = ?", (uv["id"],)) == {"status": "active", "cwd": None}
    assert summary["events"]["contradicted"] == [
        {"old": uv["id"], "new": pip["id"], "in": SHOP, "by": "p1", "how": "kept"}]
    [line] = _block(paths.morning_path().read_text(), "Contradicted")
    assert line.endswith(f"it still applies there: it was learned in other projects too, and a lesson applies "
                         f"in one project or in all (`remem lessons veto {uv['id']}` drops it everywhere)"), line


def test_lessons_pointing_opposite_ways_in_two_projects_never_merge_nor_confirm_each_other(store):
    # The same words the other way round: the same vector, opposite meanings.
    with clock.frozen(_at(DAY)):
        store.put_episodes([_said("u1", "no, use uv not pip", 0, NOTES)])
        run(store)
        [uv] = _active(store)
        clock.advance(days=2)
        store.put_episodes([_said("p1", "no, use pip not uv", 2, INFRA)])
        summary = run(store)
    assert [(l["cwd"], l["sources"]) for l in _active(store)] == [(NOTES, '["u1"]'), (INFRA, '["p1"]')]
    assert summary["passes"]["merge"]["aliased"] == 0 and summary["events"]["contradicted"] == []
    # The notes lesson does not apply in infra: it stands, and its prediction waits for its like.
    assert store.rows("SELECT outcome FROM predictions WHERE lesson_id = ?", (uv["id"],)) == [{"outcome": None}]


def test_the_same_uv_correction_in_five_wordings_is_one_lesson(store):
    said = [("no, use uv not pip", SHOP), ("Don't use pip, we have uv. Use uv tool install mdformat.", NOTES),
            ("stop running pip install for everything, use uv", INFRA),
            ("no, we never use pip here, it's uv everywhere", NOTES),
            ("stop using pip3, everything goes through uv", NOTES)]
    with clock.frozen(_at(DAY)):
        for n, (text, cwd) in enumerate(said):
            store.put_episodes([_said(f"w{n}", text, 2 * n, cwd)])
            assert run(store)["events"]["contradicted"] == []
            clock.advance(days=2)
    [lesson] = _active(store)
    assert lesson["sources"] == '["w0","w1","w2","w3","w4"]' and lesson["cwd"] is None


# --------------------------------------------------------------------------- vetoed lessons

def test_a_vetoed_lesson_predicts_nothing_and_the_report_says_it_is_vetoed(store, cli):
    with clock.frozen(_at(DAY)):
        store.put_episodes([_said("c1", "use pnpm not npm in this repo", 0, SHOP)])
        run(store)
        assert cli("morning").exit_code == 0  # read: the next report starts after it
        clock.advance(days=1)
        store.put_episodes([_said("c2", "no, use pnpm not npm here", 1, SHOP)])
        assert len(run(store)["events"]["confirmed"]) == 1  # while it was active
        [lesson] = _active(store)
        veto_lesson(store, lesson["id"])
        clock.advance(days=1)
        store.put_episodes([_said("c3", "I said pnpm, never npm in this repo", 2, SHOP)])
        third = run(store)
    assert third["events"]["grew"] == [lesson["id"]]  # the veto holds: it joins the vetoed lesson
    assert third["events"]["confirmed"] == [] and third["passes"]["verify"]["withdrawn"] == 1
    from remem.engine.sleep_describe import describe_pass

    assert "1 withdrawn (its lesson is no longer active)" in describe_pass("verify", third["passes"]["verify"])
    accuracy = measure.prediction_accuracy(store)
    assert (accuracy["confirmed"], accuracy["resolved"], accuracy["open"]) == (1, 1, 0)
    report = paths.morning_path().read_text()
    label = "vetoed, not shown to agents"
    assert _block(report, "Seen again") == [f"- {lesson['text']} (correction, seen 3×, {lesson['id']}) — {label}"]
    [confirmed] = _block(report, "Predictions confirmed")
    assert confirmed.endswith(f"— matched c2 (its lesson is {label})"), confirmed
