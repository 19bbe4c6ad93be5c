"""Sleep: consolidation into lessons, merging, predictions, idempotence, the lock."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from remem.engine import clock, sleep
from remem.engine.embed import get_embedder, to_blob
from remem.engine.sleep_describe import describe_pass

T0 = "2026-11-01T09:00:00.000000+00:00"
PROJECT = "/home/u/proj"


def _at(hours: float) -> str:
    from datetime import timedelta

    return clock.iso(clock.parse(T0) + timedelta(hours=hours))


def episode(i: str, kind: str, text: str, *, hours: float = 0, title: str | None = None,
            tags: tuple[str, ...] = (), cwd: str | None = PROJECT) -> dict:
    emb = get_embedder()
    title = title or text[:100]
    vec = emb.encode([text if kind == "correction" else f"{title}\n{text}"])[0]
    return {"id": i, "kind": kind, "title": title, "gist": text, "at": _at(hours), "cwd": cwd,
            "session_id": f"s-{i}", "source": "claude-code", "space": emb.space,
            "embedding": to_blob(vec), "tags": list(tags)}


def error(i: str, module: str, hours: float = 0) -> dict:
    return episode(i, "error", f"python app.py\nNo module named '{module}'", hours=hours,
                   title=f"Bash module not found: No module named '{module}'",
                   tags=("error:module_not_found", "tool:bash"))


def run(store, **kw) -> dict:
    return sleep.run_sleep_collect(store, **kw)


def lessons(store) -> list[dict]:
    rows = store.rows("SELECT * FROM lessons ORDER BY created, id")
    for r in rows:
        r["sources"] = json.loads(r["sources"])
    return rows


def test_three_corrections_in_different_words_make_one_lesson_with_three_sources(store):
    with clock.frozen(_at(48)):
        store.put_episodes([
            episode("c1", "correction", "use uv, not pip, to install packages", hours=1),
            episode("c2", "correction", "no, install dependencies with uv instead of pip", hours=2),
            episode("c3", "correction", "stop using pip here, we use uv for packages", hours=3),
        ])
        run(store)
    found = lessons(store)
    assert len(found) == 1
    assert found[0]["sources"] == ["c1", "c2", "c3"]
    assert found[0]["seen"] == 3 and found[0]["strength"] == 3.0
    assert found[0]["kind"] == "correction" and found[0]["cwd"] == PROJECT
    assert "uv" in found[0]["text"] and found[0]["text"][0].isupper()


def test_two_unrelated_corrections_make_two_lessons(store):
    with clock.frozen(_at(48)):
        store.put_episodes([
            episode("c1", "correction", "use uv, not pip, to install packages", hours=1),
            episode("c2", "correction", "never push straight to main; open a pull request", hours=2),
        ])
        run(store)
    assert sorted(tuple(l["sources"]) for l in lessons(store)) == [("c1",), ("c2",)]


def test_one_error_makes_no_lesson_and_the_same_error_again_makes_one(store):
    with clock.frozen(_at(48)):
        store.put_episodes([error("e1", "requests", hours=1)])
        run(store)
        assert lessons(store) == []
        clock.advance(days=1)
        store.put_episodes([error("e2", "requests", hours=30)])  # a later sleep, a new episode
        summary = run(store)
    found = lessons(store)
    assert len(found) == 1 and found[0]["sources"] == ["e1", "e2"] and found[0]["kind"] == "error"
    assert summary["passes"]["lessons"]["created"] == 1
    assert "module not found" in found[0]["text"].lower()


def test_errors_of_different_classes_do_not_cluster(store):
    with clock.frozen(_at(48)):
        store.put_episodes([
            error("e1", "requests", hours=1),
            episode("e2", "error", "cat config.yaml\nNo such file or directory: config.yaml", hours=2,
                    title="Bash file not found: No such file or directory: 'requests'",
                    tags=("error:file_not_found",)),
        ])
        run(store)
    assert lessons(store) == []


def refusal(i: str, command: str, hours: float = 0, title: str | None = None) -> dict:
    """A refused tool call the person gave no words for, as ingest stores it."""
    text = f"refused Bash: {command}"
    return episode(i, "correction", text, hours=hours, title=title or text, tags=("refused", "action:other"))


def test_one_wordless_refusal_makes_no_lesson_and_the_same_call_refused_again_makes_one(store):
    with clock.frozen(_at(48)):
        store.put_episodes([refusal("r1", "mix phx.server 2>&1 | head -80", hours=1)])
        first = run(store)
        assert lessons(store) == []
        assert first["passes"]["lessons"]["pending"] == 1
        clock.advance(days=1)
        store.put_episodes([refusal("r2", "mix phx.server", hours=30)])  # another session, a later sleep
        run(store)
    (found,) = lessons(store)
    assert found["sources"] == ["r1", "r2"] and found["kind"] == "correction"
    assert "mix phx.server" in found["text"]


def test_the_same_call_refused_twice_in_one_session_makes_a_lesson(store):
    with clock.frozen(_at(48)):
        store.put_episodes([
            refusal("r1", "git push origin main", hours=1),
            refusal("r2", "git push origin main", hours=2, title="refused Bash: git push origin main (2)"),
        ])
        run(store)
    assert [l["sources"] for l in lessons(store)] == [["r1", "r2"]]


def test_wordless_refusals_of_different_calls_make_no_lesson(store):
    # alike in words ("mix …"), but starting the server is not running the tests
    with clock.frozen(_at(48)):
        store.put_episodes([refusal("r1", "mix phx.server", hours=1), refusal("r2", "mix test", hours=2)])
        summary = run(store)
    assert lessons(store) == []
    assert summary["passes"]["lessons"]["pending"] == 2


def test_a_refusal_in_words_is_a_lesson_at_once(store):
    with clock.frozen(_at(48)):
        store.put_episodes([episode("r1", "correction", "open a PR instead of pushing to main", hours=1,
                                    title="refused Bash: git push origin main", tags=("refused", "action:push"))])
        run(store)
    assert [l["sources"] for l in lessons(store)] == [["r1"]]


def test_a_vetoed_refusal_lesson_holds_when_the_same_call_is_refused_after_its_sources_were_deleted(store):
    """A wordless refusal's lesson whose sources the lifecycle deleted stands in with the
    class of the call refused (read from its words), not '': the same call refused again
    joins it, and its veto holds, rather than a second, active lesson beside it."""
    from remem.engine.lessons import set_status
    from remem.engine.render_vetoes import record_veto

    with clock.frozen(_at(48)):
        store.put_episodes([refusal("r1", "git push origin main", hours=1),
                            refusal("r2", "git push origin main", hours=2),
                            error("e9", "requests", hours=3)])  # a later episode, still here
        run(store)
        [lesson] = lessons(store)
        set_status(store, lesson["id"], "vetoed")
        record_veto(lesson)
        with store.write() as conn:  # the lifecycle deletes the faded sources
            conn.execute("DELETE FROM episodes WHERE id IN ('r1', 'r2')")
        clock.advance(days=1)
        store.put_episodes([refusal("r3", "git push origin main", hours=30),
                            refusal("r4", "git push origin main", hours=31)])
        summary = run(store)
    assert summary["passes"]["lessons"]["created"] == 0
    [after] = lessons(store)
    assert after["id"] == lesson["id"] and after["status"] == "vetoed"
    assert after["sources"] == ["r1", "r2", "r3", "r4"]


def test_another_call_refused_does_not_join_a_refusal_lesson_whose_sources_were_deleted(store):
    with clock.frozen(_at(48)):
        store.put_episodes([refusal("r1", "git push origin main", hours=1),
                            refusal("r2", "git push origin main", hours=2),
                            error("e9", "requests", hours=3)])  # a later episode, still here
        run(store)
        [lesson] = lessons(store)
        with store.write() as conn:
            conn.execute("DELETE FROM episodes WHERE id IN ('r1', 'r2')")
        clock.advance(days=1)
        store.put_episodes([refusal("r3", "git pull origin main", hours=30),
                            refusal("r4", "git pull origin main", hours=31)])
        summary = run(store, passes=["lessons"])  # (merge, which has no refusal classes, is apart)
    assert summary["passes"]["lessons"]["joined"] == 0
    old, new = lessons(store)
    assert old["id"] == lesson["id"] and old["sources"] == ["r1", "r2"]
    assert new["sources"] == ["r3", "r4"] and "git pull" in new["text"]


def test_refusal_lessons_of_different_calls_are_not_merged(store):
    with clock.frozen(_at(48)):
        store.put_episodes([refusal("r1", "git push origin main", hours=1),
                            refusal("r2", "git push origin main", hours=2),
                            error("e9", "requests", hours=3)])
        run(store)
        clock.advance(days=1)
        store.put_episodes([refusal("r3", "git pull origin main", hours=30),
                            refusal("r4", "git pull origin main", hours=31),
                            error("e10", "requests", hours=32)])
        run(store)  # every pass, merge included
    texts = sorted(l["text"] for l in lessons(store) if l["kind"] == "correction")
    assert len(texts) == 2 and "git pull" in texts[0] and "git push" in texts[1], texts


@pytest.mark.parametrize("call", [
    "Bash: git push origin main",
    "exec_command: git push --force origin main",
    "Bash: cd /srv/app && FOO=1 uv run pytest -q tests/t.py > out.log",
    "Bash: sudo apt install ripgrep",
    "Bash: mix phx.server 2>&1 | head -80",
    "Bash: \"$(make)\"",
    "Edit: src/app.py",
    "mcp__github__create_issue: {\"title\": \"x\"}",
    "WebSearch",
])
def test_a_refusal_lessons_words_give_back_the_class_of_the_call_refused(call):
    """The class a refusal lesson stands in with (its sources gone) is the one its sources had:
    read from the lesson's words, as lesson_text wrote them, or from its draft once reworded."""
    from remem.engine import lesson_text
    from remem.engine.lessons_pass import _klass, _lesson_klass

    gist = f"refused {call}"
    text = lesson_text.draft("correction", [{"gist": gist, "title": gist}])
    klass = _klass({"wordless": 1, "kind": "correction", "title": gist})
    assert klass.startswith("refused:")
    assert _lesson_klass({"text": text}) == klass
    assert _lesson_klass({"text": "Check with the person before pushing.", "draft": text}) == klass


def test_a_correction_lesson_in_words_stands_in_with_no_class():
    from remem.engine.lessons_pass import _lesson_klass

    assert _lesson_klass({"text": "Use uv not pip."}) == ""
    assert _lesson_klass({"text": "Ask before running `git push` (the person refused it). Always."}) == ""


def after_interrupt(i: str, text: str, hours: float = 0, cwd: str | None = PROJECT) -> dict:
    """An interrupt followed by a plain instruction, as ingest stores it: unconfirmed."""
    return episode(i, "correction", text, hours=hours, tags=("interrupt", "unconfirmed"), cwd=cwd)


def test_one_plain_instruction_after_an_interrupt_makes_no_lesson_and_waits(store):
    with clock.frozen(_at(48)):
        store.put_episodes([after_interrupt("i1", "use pnpm", hours=1)])
        summary = run(store)
    assert lessons(store) == []
    assert summary["passes"]["lessons"] == {"new_episodes": 1, "joined": 0, "created": 0, "pending": 1,
                                            "pending_earlier": 0, "unclear": 0}


def test_a_new_task_after_an_interrupt_once_makes_no_lesson(store):
    with clock.frozen(_at(48)):
        store.put_episodes([after_interrupt("i1", "create the beads", hours=1)])
        assert run(store)["passes"]["lessons"]["pending"] == 1
        clock.advance(days=1)
        store.put_episodes([after_interrupt("i2", "now add a README to the docs folder", hours=30)])
        summary = run(store)  # another plain instruction, not like the first: both still wait
    assert lessons(store) == []
    assert summary["passes"]["lessons"] == {"new_episodes": 1, "joined": 0, "created": 0, "pending": 2,
                                            "pending_earlier": 1, "unclear": 0}


def test_the_same_redirect_after_an_interrupt_in_two_sessions_makes_one_lesson(store):
    with clock.frozen(_at(48)):
        store.put_episodes([after_interrupt("i1", "use pnpm", hours=1)])
        run(store)
        assert lessons(store) == []
        clock.advance(days=1)
        store.put_episodes([after_interrupt("i2", "use pnpm", hours=30, cwd="/home/u/other")])
        summary = run(store)
    (found,) = lessons(store)
    assert found["sources"] == ["i1", "i2"] and found["kind"] == "correction" and found["seen"] == 2
    assert "pnpm" in found["text"] and found["cwd"] is None  # learned in two projects
    assert summary["passes"]["lessons"] == {"new_episodes": 1, "joined": 0, "created": 1, "pending": 0,
                                            "pending_earlier": 0, "unclear": 0}


def test_the_same_redirect_twice_in_one_sleep_makes_one_lesson(store):
    with clock.frozen(_at(48)):
        store.put_episodes([after_interrupt("i1", "use pnpm", hours=1), after_interrupt("i2", "use pnpm", hours=5)])
        run(store)
    assert [l["sources"] for l in lessons(store)] == [["i1", "i2"]]


def test_a_plain_instruction_after_an_interrupt_joins_the_lesson_of_a_correction_in_words(store):
    with clock.frozen(_at(48)):
        store.put_episodes([episode("c1", "correction", "no, use pnpm not npm", hours=1)])
        run(store)
        clock.advance(days=1)
        store.put_episodes([after_interrupt("i1", "use pnpm", hours=30)])
        summary = run(store)
    assert [l["sources"] for l in lessons(store)] == [["c1", "i1"]]
    assert summary["passes"]["lessons"] == {"new_episodes": 1, "joined": 1, "created": 0, "pending": 0,
                                            "pending_earlier": 0, "unclear": 0}


def test_a_correction_in_words_in_the_same_sleep_confirms_a_plain_instruction(store):
    # the plain instruction came first; the lesson the words make in this run takes it in
    with clock.frozen(_at(48)):
        store.put_episodes([after_interrupt("i1", "use pnpm", hours=1),
                            episode("c1", "correction", "no, use pnpm not npm", hours=5)])
        summary = run(store)
    (found,) = lessons(store)
    assert found["sources"] == ["i1", "c1"] and found["seen"] == 2
    assert summary["passes"]["lessons"] == {"new_episodes": 2, "joined": 1, "created": 1, "pending": 0,
                                            "pending_earlier": 0, "unclear": 0}


def test_a_later_correction_in_words_confirms_a_waiting_plain_instruction(store):
    with clock.frozen(_at(48)):
        store.put_episodes([after_interrupt("i1", "use pnpm", hours=1)])
        assert run(store)["passes"]["lessons"]["pending"] == 1
        clock.advance(days=1)
        store.put_episodes([episode("c1", "correction", "no, use pnpm not npm", hours=30)])
        summary = run(store)
        again = run(store)  # nothing new: nothing changes, nothing counted as new
    (found,) = lessons(store)
    assert found["sources"] == ["i1", "c1"]
    assert summary["passes"]["lessons"] == {"new_episodes": 1, "joined": 1, "created": 1, "pending": 0,
                                            "pending_earlier": 0, "unclear": 0}
    # `joined` counts the waiting instruction read again: the one new episode is told once
    assert describe_pass("lessons", summary["passes"]["lessons"]) == \
        "read 1 new correction or error: 1 joined a lesson or made 1 new lesson"
    assert again["passes"]["lessons"] == {"new_episodes": 0, "joined": 0, "created": 0, "pending": 0,
                                          "pending_earlier": 0, "unclear": 0}


def test_a_waiting_plain_instruction_is_counted_pending_but_not_new_at_the_next_sleep(store):
    with clock.frozen(_at(48)):
        store.put_episodes([after_interrupt("i1", "create the beads", hours=1)])
        run(store)
        clock.advance(days=1)
        summary = run(store)
    assert lessons(store) == []
    assert summary["passes"]["lessons"] == {"new_episodes": 0, "joined": 0, "created": 0, "pending": 1,
                                            "pending_earlier": 1, "unclear": 0}


def test_a_plain_instruction_never_meets_a_wordless_refusal(store):
    # a refusal only meets refusals of the same kind of call, whatever the words
    with clock.frozen(_at(48)):
        store.put_episodes([refusal("r1", "npm install", hours=1), after_interrupt("i1", "refused Bash: npm install", hours=2)])
        summary = run(store)
    assert lessons(store) == []
    assert summary["passes"]["lessons"]["pending"] == 2


def _interrupted(sid: str, reply: str, hours: float, cwd: str = PROJECT):
    from remem.engine.session import Session, ToolCall, Turn

    working = Turn(role="assistant", text="Installing the dependencies.", at=_at(hours), tool_calls=[
        ToolCall(id=f"t-{sid}", name="Bash", input={"command": "npm install"}, result="added 12 packages")])
    return Session(id=sid, source="claude-code", cwd=cwd, started=_at(hours), turns=[
        Turn(role="user", text="set up the project", at=_at(hours)), working,
        Turn(role="user", interrupt=True, at=_at(hours)), Turn(role="user", text=reply, at=_at(hours + 0.01)),
    ])


def test_interrupts_read_from_sessions_wait_then_teach(store):
    from remem.engine.session_episodes import ingest_session

    with clock.frozen(_at(48)):
        ingest_session(store, _interrupted("s1", "use pnpm", 1))
        ingest_session(store, _interrupted("s2", "create the beads", 2))
        ingest_session(store, _interrupted("s3", "what are you installing?", 3))  # a question
        tags = {r["gist"]: r["tags"] for r in store.rows(
            "SELECT gist, (SELECT group_concat(tag) FROM (SELECT tag FROM tags WHERE memory_id = e.id "
            "ORDER BY tag)) AS tags FROM episodes e WHERE kind = 'correction'")}
        assert tags == {"use pnpm": "interrupt,unconfirmed", "create the beads": "interrupt,unconfirmed"}
        first = run(store)
        assert lessons(store) == [] and first["passes"]["lessons"]["pending"] == 2
        clock.advance(days=1)
        ingest_session(store, _interrupted("s4", "use pnpm", 30, cwd="/home/u/other"))
        run(store)
    (found,) = lessons(store)
    sessions = [store.one("SELECT session_id FROM episodes WHERE id = ?", (s,))["session_id"] for s in found["sources"]]
    assert sessions == ["s1", "s4"] and "pnpm" in found["text"]


def test_environment_episodes_never_make_lessons(store):
    with clock.frozen(_at(48)):
        store.put_episodes([
            episode(f"v{i}", "environment", "python 3.12 is installed at /usr/bin/python3", hours=i)
            for i in range(4)
        ])
        run(store)
    assert lessons(store) == []


def test_a_later_episode_joins_an_existing_lesson(store):
    with clock.frozen(_at(48)):
        store.put_episodes([episode("c1", "correction", "use uv, not pip, to install packages", hours=1)])
        run(store)
        clock.advance(days=1)
        store.put_episodes([episode("c2", "correction", "install with uv instead of pip please", hours=40)])
        summary = run(store)
    found = lessons(store)
    assert len(found) == 1 and found[0]["sources"] == ["c1", "c2"]
    assert summary["passes"]["lessons"] == {"new_episodes": 1, "joined": 1, "created": 0, "pending": 0,
                                            "pending_earlier": 0, "unclear": 0}
    assert found[0]["id"] in summary["events"]["grew"]


def _dump(path) -> list[str]:
    conn = sqlite3.connect(str(path))
    try:
        lines = []
        for line in conn.iterdump():
            if "INTO \"runs\"" in line or "INTO runs" in line:
                continue
            lines.append(line)
        return lines
    finally:
        conn.close()


def test_running_sleep_twice_changes_nothing_the_second_time(store, home):
    (home.parent / "user" / ".claude" / "projects" / "-home-u-proj").mkdir(parents=True)
    with clock.frozen(_at(48)):
        store.put_episodes([
            episode("c1", "correction", "use uv, not pip, to install packages", hours=1),
            episode("c2", "correction", "no, install dependencies with uv instead of pip", hours=2),
            episode("c3", "correction", "never push straight to main; open a pull request", hours=3),
            error("e1", "requests", hours=4), error("e2", "requests", hours=5), error("e3", "yaml", hours=6),
            episode("s1", "surprise", "I did not expect the tests to need REDIS_URL", hours=7),
            episode("n1", "note", "the staging database is read-only on Fridays", hours=8),
            episode("v1", "environment", "node 20 installed", hours=9),
        ])
        run(store)
        first = _dump(store.path)
        memory_md = (home.parent / "user" / ".claude" / "projects" / "-home-u-proj" / "memory" / "MEMORY.md").read_bytes()
        run(store)
        assert _dump(store.path) == first
        assert (home.parent / "user" / ".claude" / "projects" / "-home-u-proj" / "memory" / "MEMORY.md").read_bytes() == memory_md
    assert len(lessons(store)) == 3
    runs = store.rows("SELECT status FROM runs WHERE kind = 'sleep'")
    assert [r["status"] for r in runs] == ["ok", "ok"]


def test_lessons_of_one_kind_that_mean_the_same_merge_into_a_theme(store):
    from remem.engine.lessons import add_lesson, get_lesson

    with clock.frozen(_at(48)):
        store.put_episodes([
            episode("c1", "correction", "use uv, not pip, to install packages", hours=1),
            episode("c2", "correction", "no, install dependencies with uv instead of pip", hours=2),
            episode("c3", "correction", "stop using pip here, we use uv for packages", hours=3),
        ])
        # Two lessons made apart (as if by two earlier sleeps) over sources that mean the same.
        a = add_lesson(store, "Use uv, not pip.", "correction", sources=["c1", "c2"], created=_at(10))
        b = add_lesson(store, "We use uv for packages.", "correction", sources=["c3"], created=_at(20))
        summary = run(store, passes=["merge"])
    assert summary["passes"]["merge"] == {"themes": 1, "aliased": 1}
    left = lessons(store)
    assert [l["id"] for l in left] == [a["id"]] and left[0]["sources"] == ["c1", "c2", "c3"]
    alias = store.one("SELECT * FROM aliases WHERE old = ?", (b["id"],))
    assert alias["new"] == a["id"] and alias["created"] == _at(20)
    assert get_lesson(store, b["id"])["id"] == a["id"]


def test_a_prediction_is_confirmed_by_a_later_matching_episode(store):
    with clock.frozen(_at(48)):
        store.put_episodes([episode("c1", "correction", "use uv, not pip, to install packages", hours=1)])
        run(store)
        pred = store.one("SELECT * FROM predictions")
        assert pred["resolved"] is None and "uv" in pred["text"]
        clock.advance(days=3)
        store.put_episodes([episode("c2", "correction", "install with uv instead of pip please", hours=48 + 60)])
        summary = run(store)
    done = store.one("SELECT * FROM predictions WHERE id = ?", (pred["id"],))
    assert done["outcome"] == "confirmed" and done["evidence"] == "c2"
    assert summary["events"]["confirmed"] == [pred["id"]]
    # A new open prediction is made for the lesson at once.
    assert store.scalar("SELECT count(*) FROM predictions WHERE resolved IS NULL") == 1


def test_a_prediction_fails_after_fourteen_days_without_a_match(store):
    with clock.frozen(_at(48)):
        store.put_episodes([episode("c1", "correction", "use uv, not pip, to install packages", hours=1)])
        run(store)
        pred = store.one("SELECT * FROM predictions")
        store.put_episodes([episode("c9", "correction", "never push straight to main", hours=60)])
        clock.advance(days=13)
        run(store, passes=["verify"])
        assert store.one("SELECT resolved FROM predictions WHERE id = ?", (pred["id"],))["resolved"] is None
        clock.advance(days=1)
        summary = run(store, passes=["verify"])
    done = store.one("SELECT * FROM predictions WHERE id = ?", (pred["id"],))
    assert done["outcome"] == "failed" and done["evidence"] is None
    assert summary["passes"]["verify"]["failed"] == 1


def test_dry_run_changes_nothing(store, home):
    with clock.frozen(_at(48)):
        store.put_episodes([episode("c1", "correction", "use uv, not pip, to install packages", hours=1)])
        before = _dump(store.path)
        summary = run(store, dry_run=True)
        assert summary["passes"]["lessons"]["created"] == 1
        assert _dump(store.path) == before
        assert not (home / "morning.md").exists()
        assert store.one("SELECT status FROM runs")["status"] == "dry-run"
        run(store)  # the dry run left no watermark behind
    assert len(lessons(store)) == 1


def test_progress_events_per_pass_in_order(store):
    seen = [e.pass_name for e in sleep.run_sleep(store)]
    order = [p for i, p in enumerate(seen) if i == 0 or seen[i - 1] != p]
    assert order == list(sleep.PASSES) + ["backup", "sleep"]  # a full sleep's rotated backup last


def test_unknown_pass_is_a_one_line_error(store):
    with pytest.raises(ValueError, match="the passes are"):
        list(sleep.run_sleep(store, passes=["dream"]))


def test_a_live_lock_refuses_and_a_stale_lock_is_taken_over(store, home):
    from remem.errors import RememError

    import subprocess
    import sys

    home.mkdir(parents=True, exist_ok=True)
    lock = sleep.lock_path()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from remem.engine.sleep import sleep_lock\n"
         "with sleep_lock():\n    print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"  # a live sleep in another process
        with pytest.raises(RememError, match="another sleep is running"):
            list(sleep.run_sleep(store, passes=["verify"]))
    finally:
        holder.kill()
        holder.wait()
    assert lock.read_text() == str(holder.pid)  # left behind by the killed holder
    run(store, passes=["verify"])
    assert lock.read_text() == ""  # released (the file stays; its flock is the lock)
    lock.write_text("999999999")  # an old-style pid file of a gone process
    run(store, passes=["verify"])


def test_reembeds_what_is_not_in_the_current_space(store):
    with clock.frozen(_at(48)):
        ep = episode("c1", "correction", "use uv, not pip, to install packages", hours=1)
        ep["space"], ep["embedding"] = "old-space", b"\x00" * 16
        store.put_episodes([ep])
        summary = run(store)
    row = store.one("SELECT space FROM episodes WHERE id = 'c1'")
    assert row["space"] == get_embedder().space
    assert summary["passes"]["embed"]["episodes"] == 1
    assert len(lessons(store)) == 1


def test_fake_local_model_rewords_and_the_plain_text_is_kept(store, monkeypatch):
    """The local model is faked (no model server on a test machine)."""
    from remem import config
    from remem.engine import llm

    cfg = config.load()
    cfg["llm"]["url"] = "http://127.0.0.1:9/v1"
    monkeypatch.setattr(llm, "complete", lambda prompt, *a, **k: "Install packages with uv, never pip.")
    with clock.frozen(_at(48)):
        store.put_episodes([episode("c1", "correction", "no, use uv not pip", hours=1)])
        run(store, cfg=cfg)
    found = lessons(store)[0]
    assert found["text"] == "Install packages with uv, never pip."
    assert found["draft"] == "Use uv not pip."


# --------------------------------------------------------------------------- the CLI

def _seed(store) -> None:
    store.put_episodes([
        episode("c1", "correction", "use uv, not pip, to install packages", hours=1),
        episode("c2", "correction", "no, install dependencies with uv instead of pip", hours=2),
    ])


def test_cli_sleep_json_lessons_list_show_edit_veto_restore(store, cli):
    _seed(store)
    result = cli("sleep", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["passes"]["lessons"]["created"] == 1
    listed = json.loads(cli("lessons", "list", "--json").stdout)
    assert len(listed) == 1
    lesson = listed[0]
    assert {"id", "text", "kind", "status", "strength", "sources"} <= set(lesson)
    assert lesson["sources"] == ["c1", "c2"]
    shown = cli("lessons", "show", lesson["id"])
    assert shown.exit_code == 0 and "c1" in shown.stdout
    edited = cli("lessons", "edit", lesson["id"], "--text", "Install packages with uv.")
    assert edited.exit_code == 0
    after = json.loads(cli("lessons", "show", lesson["id"], "--json").stdout)
    assert after["text"] == "Install packages with uv." and after["draft"] == lesson["text"]
    assert cli("lessons", "veto", lesson["id"]).exit_code == 0
    assert json.loads(cli("lessons", "list", "--json").stdout) == []
    assert cli("lessons", "restore", lesson["id"]).exit_code == 0
    assert len(json.loads(cli("lessons", "list", "--json").stdout)) == 1
    morning = cli("morning")
    assert morning.exit_code == 0 and "## Learned" in morning.stdout


def test_lessons_a_pass_only_run_learned_are_in_the_next_morning_report(store, cli):
    """`--pass lessons` writes no report and does not point to one; the next full sleep's
    report tells what it learned, once."""
    store.put_episodes([
        episode("c1", "correction", "use uv, not pip, to install packages", hours=1),
        episode("c2", "correction", "never push straight to main, open a pull request", hours=2),
    ])
    res = cli("sleep", "--pass", "lessons")
    assert res.exit_code == 0, res.output
    assert "learned 2" in res.stdout
    assert "`remem morning` shows the report" not in res.stdout
    assert "the next `remem sleep` (every pass) puts this run in the `remem morning` report" in res.stdout
    nothing = cli("morning")  # no report yet, as the run said: said, not an error
    assert nothing.exit_code == 0 and "no morning report yet" in nothing.output
    texts = [l["text"] for l in json.loads(cli("lessons", "list", "--json").stdout)]
    assert len(texts) == 2

    res = cli("sleep")
    assert res.exit_code == 0, res.output
    assert "`remem morning` shows the report" in res.stdout
    report = cli("morning").stdout
    learned = report.split("## Learned\n")[1].split("\n\n")[0]
    assert all(text in learned for text in texts), report
    # Told once: the next report has nothing new.
    assert cli("sleep", "--quiet").exit_code == 0
    assert cli("morning").stdout.split("## Learned\n")[1].startswith("Nothing new.")


def test_a_lesson_learned_alone_then_merged_is_reported_as_its_theme(store):
    """Runs since the last report are told as one: a lesson a `--pass lessons` run learned and
    a later run merged away is named by its theme, never by an id that is gone."""
    from remem import paths

    with clock.frozen(_at(48)):
        store.put_episodes([
            episode("c1", "correction", "use uv to install python packages", hours=1),
            episode("c2", "correction", "don't use pip, use uv", hours=2),
            episode("c3", "correction", "please use uv pip install instead of pip install", hours=3),
        ])
        first = run(store, passes=["lessons"])
        assert first["morning"] is False and len(first["events"]["learned"]) == 2
        merged = run(store, passes=["merge"])
        assert merged["passes"]["merge"]["aliased"] == 1 and merged["morning"] is False
        assert run(store)["morning"] is True
    [theme] = [l for l in lessons(store) if l["status"] == "active"]
    report = paths.morning_path().read_text()
    learned = report.split("## Learned\n")[1].split("\n\n")[0].splitlines()
    assert learned == [f"- {theme['text']} (correction, seen 3×, {theme['id']})"], report
    assert "seen 3×" not in report.split("## Seen again\n")[1].split("\n\n")[0]


def test_lessons_a_pass_only_run_learned_are_merged_by_the_next_full_sleep(store):
    with clock.frozen(_at(48)):
        store.put_episodes([episode("e0", "correction", "keep commit subjects short", hours=1)])
        run(store)  # a full sleep: the last merge
        clock.advance(hours=2)
        store.put_episodes([
            episode("c1", "correction", "use uv to install python packages", hours=4),
            episode("c2", "correction", "don't use pip, use uv", hours=5),
            episode("c3", "correction", "please use uv pip install instead of pip install", hours=6),
        ])
        assert len(run(store, passes=["lessons"])["events"]["learned"]) == 2
        clock.advance(hours=2)
        full = run(store)
    assert full["passes"]["merge"]["aliased"] == 1


def test_cli_errors_are_one_line(cli):
    bad = cli("sleep", "--pass", "dream")
    assert bad.exit_code == 1 and "the passes are" in bad.output
    missing = cli("lessons", "show", "nope")
    assert missing.exit_code == 1 and "remem lessons list" in missing.output
    nothing = cli("morning")  # nothing yet is not an error: a line, exit 0
    assert nothing.exit_code == 0 and "no morning report yet" in nothing.output


def test_cli_sleep_with_progress_bars_and_summary(store, remem_cli):
    _seed(store)
    result = remem_cli("sleep")
    assert result.returncode == 0, result.stderr
    assert "lessons" in result.stdout and "learned 1" in result.stdout
    again = remem_cli("sleep", "--quiet")
    assert again.returncode == 0 and again.stdout == ""


def test_demo_has_lessons_and_a_morning_report(tmp_path):
    from remem.engine.demo import build_demo
    from remem.engine.store import Store

    summary = build_demo(tmp_path / "demo")
    assert any("sleep learned" in line for line in summary["lines"])
    with Store(tmp_path / "demo" / "memory.db") as demo:
        assert demo.scalar("SELECT count(*) FROM lessons WHERE status = 'active'") >= 1
    assert "## Learned" in (tmp_path / "demo" / "morning.md").read_text()
    assert not (paths_claude_home_projects()).exists()  # never the person's own Claude folder


def paths_claude_home_projects():
    from remem import paths

    return paths.claude_projects_dir()


def test_an_old_history_is_learned_from_though_it_faded_but_not_what_was_forgotten(store):
    from remem.engine.lifecycle import forget

    with clock.frozen(_at(2)):  # stored then, never touched again
        store.put_episodes([
            episode("c1", "correction", "use uv, not pip, to install packages", hours=1),
            episode("c2", "correction", "never push straight to main; open a pull request", hours=2),
        ])
        forget(store, "c2")
    with clock.frozen(_at(24 * 365)):  # the first sleep a year later: decay archives it first
        summary = run(store)
    assert summary["passes"]["decay"]["archived"] + summary["passes"]["expire"].get("archived", 0) >= 1
    assert [l["sources"] for l in lessons(store)] == [["c1"]]


def test_cli_lessons_edit_opens_the_editor(store, remem_cli):
    from remem.engine.lessons import add_lesson

    lesson = add_lesson(store, "use uv, not pip", "correction", sources=["c1"])
    result = remem_cli("lessons", "edit", lesson["id"], env={"EDITOR": "sed -i s/pip/pip3/", "VISUAL": ""})
    assert result.returncode == 0, result.stderr
    assert store.one("SELECT text FROM lessons WHERE id = ?", (lesson["id"],))["text"] == "use uv, not pip3"


def test_a_sleep_killed_between_lesson_batches_is_finished_by_the_next_without_duplicates(store, monkeypatch):
    """Lessons are written a batch at a time; a crash after the first batch loses nothing and
    learns nothing twice."""
    from remem.engine import lessons_pass

    topics = ["use uv, not pip, to install packages", "run the tests before committing",
              "keep commits small", "format the code with ruff", "never push straight to main",
              "write the changelog entry"]
    ids = [f"c{n}" for n in range(len(topics))]
    with clock.frozen(_at(48)):
        store.put_episodes([episode(i, "correction", t, hours=n) for n, (i, t) in enumerate(zip(ids, topics))])
    monkeypatch.setattr(lessons_pass, "WRITE_BATCH", 2)
    real_chunks = lessons_pass.chunks

    def crash_after_first(items, size):
        for n, batch in enumerate(real_chunks(items, size)):
            if n == 1:
                raise KeyboardInterrupt("killed mid-pass")
            yield batch

    monkeypatch.setattr(lessons_pass, "chunks", crash_after_first)
    with clock.frozen(_at(49)), pytest.raises(KeyboardInterrupt):
        run(store)
    assert len(lessons(store)) == 2  # the first batch is whole and kept
    monkeypatch.setattr(lessons_pass, "chunks", real_chunks)
    with clock.frozen(_at(50)):
        run(store)
    found = lessons(store)
    assert len(found) == len(topics)
    assert sorted(s for lesson in found for s in lesson["sources"]) == ids  # each episode once


def test_a_history_imported_today_is_not_archived_for_being_old(store):
    """Strength fades from when remem stored (or last touched) a memory, not from when it
    happened: the first sleep after importing a year of sessions used to archive all of it,
    and recall then missed it without a word."""
    with clock.frozen(_at(24 * 365)):  # imported a year after it happened
        store.put_episodes([episode("c1", "correction", "use uv, not pip, to install packages", hours=1)])
        summary = run(store)
        assert summary["passes"]["expire"].get("archived", 0) == 0
        assert store.scalar("SELECT archived FROM episodes WHERE id = 'c1'") == 0
    with clock.frozen(_at(24 * 365 * 2)):  # a year on, never used: now it fades
        run(store)
        assert store.scalar("SELECT archived FROM episodes WHERE id = 'c1'") == 1

