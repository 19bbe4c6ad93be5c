"""Each detector pattern, with the near misses it must not fire on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.engine import detect
from remem.engine.detect_common import action_kind, command_of
from remem.engine.detect_corrections import (
    INSTRUCTION, REDIRECT, after_interrupt, offer_summary, pushback, refused_call_kind,
)
from remem.engine.detect_errors import error_class, missing_name
from remem.engine.session import Session, ToolCall, Turn
from remem.engine.shell_words import command_words, split_commands
from remem.engine.transcripts import parse_file

FIX = Path(__file__).parent / "fixtures" / "claude_code"
REJECT = ("The user doesn't want to proceed with this tool use. The tool use was rejected "
          "(eg. if it was a file edit, the new_string was NOT written to the file).")


def convo(*turns, source: str = "claude-code", cwd: str | None = None) -> Session:
    """Build a session: strings 'u:…' / 'a:…', '!' for an interrupt, or Turn objects."""
    out = []
    for t in turns:
        if isinstance(t, Turn):
            out.append(t)
        elif t == "!":
            out.append(Turn(role="user", interrupt=True))
        else:
            role, text = t.split(":", 1)
            out.append(Turn(role="user" if role == "u" else "assistant", text=text.strip()))
    return Session(id="s1", source=source, cwd=cwd, turns=out)


def call(name="Bash", result="", is_error=False, rejected=False, **inp) -> ToolCall:
    return ToolCall(id=f"c{abs(hash((name, result))) % 10**6}", name=name, input=inp, result=result,
                    is_error=is_error, rejected=rejected)


# --------------------------------------------------------------------------- corrections

@pytest.mark.parametrize("reply, how", [
    ("no, the other file", "no"),
    ("Nope. Use the staging config", "no"),
    ("that's not what I asked for", "not what I asked"),
    ("This is wrong, the total must include tax", "not what I asked"),
    ("try again with the smaller model", "try again"),
    ("I said use pnpm", "I said"),
    ("I told you to leave the migrations alone", "I said"),
    ("don't add comments to every line", "don't"),
    ("Thanks. Please do not push to main", "don't"),
    ("use ruff instead", "instead"),
    ("stop, that's enough changes", "stop"),
    ("Stop doing that", "stop"),
    ("revert that change", "undo"),
    ("why did you delete the fixtures?", "undo"),
    # an approving start does not hide the pushback that follows it
    ("No, that works, but use uv instead", "instead"),
    ("No, that's it. Why did you remove the logging?", "undo"),
    ("no, that's not it", "no"),
    ("no, that's wrong", "no"),
    ("No, that is all wrong", "no"),
    ("no need for comments, don't add them", "no"),
    ("Don't forget, I said no new dependencies", "I said"),
    ("don't push to main", "don't"),
    ("no, use uv instead", "no"),
    # beside the praise below, the pushback it is not
    ("No way, that's wrong.", "no"),
    ("Revert is needed, the change broke CI", "undo"),
    ("Why did you say the tests pass? They fail.", "undo"),
    ("No need to revert, but don't touch the lockfile", "don't"),
    ("Never use var here", "don't"),
    # a correction that ends in praise for the rest
    ("No, use pnpm, not npm. Otherwise LGTM", "no"),
    ("Don't touch the lockfile. The rest looks good.", "don't"),
    ("Stop adding comments everywhere. Otherwise great work!", "stop"),
    ("no, use pnpm instead. Then ship it.", "no"),
    ("You deleted the tests! Put them back, then commit it.", "undo"),
    ("Revert the migration change; everything else looks good to me.", "undo"),
])
def test_pushback_after_a_handback_is_a_correction(reply, how):
    s = convo("u: tidy the imports", "a: Done, I tidied the imports.", f"u: {reply}")
    found = detect.corrections(s)
    assert len(found) == 1
    assert found[0].extra["how"] == how
    assert found[0].text == reply  # the person's words alone
    assert "tidy the imports" in found[0].detail


@pytest.mark.parametrize("reply", [
    "no problem, thanks",
    "No worries",
    "nope, that's all good",
    "great, now add a README",
    "I don't know why it fails either, can you look?",
    "stop the dev server and deploy",
    "please keep going",
    "not bad at all",
    "the node-based tool is fine",
    "never mind, it works now",
    "thanks, don't worry about it",
    # approvals that open with "no" (answering "anything else?"), and questions about a choice
    "No, looks good to me. Thanks!",
    "No, that works. Thanks!",
    "Nope, that's it. Thanks",
    "No need, it's fine",
    "nah, all good",
    "Thanks! Why did you pick SQLite over Postgres here?",
    "Great. Don't forget to update the changelog too.",
    # praise and encouragement in pushback's words
    "Don't hesitate to refactor the helper if needed. Great work!",
    "No way, that's brilliant! Commit it.",
    "Never thought this would be so easy, thanks!",
    "Nope, no more changes needed. Ship it.",
    "Revert is not needed, the change is good.",
    "No need to revert, the change is good.",
    "Why did you say the tests pass? … just curious",
    "Nope. Ship it.",
    "Thanks! Otherwise LGTM",
])
def test_ordinary_replies_are_not_corrections(reply):
    s = convo("u: tidy the imports", "a: Done.", f"u: {reply}")
    assert detect.corrections(s) == []


@pytest.mark.parametrize("reply", [
    # code the person pasted: its "Don't" is the program's, not the person's
    "Add this guard to api.js: ```js\nif (!res.ok) { throw new Error('Request failed. Don't retry on 4xx'); }\n```",
    # a warning quoted inline: its "use … instead" is the library's advice
    "I get this warning when I run it: DeprecationWarning: datetime.utcnow() is deprecated and scheduled "
    "for removal; use timezone-aware objects, e.g. datetime.now(UTC) instead",
    "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    run()  # instead\n"
    "ValueError: Don't pass None\ncan you look at this",
    "src/db.py:41: Implicit join found. Don't rely on it; use select_from() instead\nthis shows up on every start",
    "`npm` no longer works after the upgrade",
    "the lint says `no-var: use let or const instead` on line 4",
])
def test_pasted_code_and_log_lines_are_not_pushback(reply):
    s = convo("u: tidy the imports", "a: Done, I tidied the imports.", f"u: {reply}")
    assert pushback(reply) is None
    assert detect.corrections(s) == []


@pytest.mark.parametrize("reply, how", [
    ("don't use var, use const", "don't"),
    ("no, use pnpm instead of npm", "no"),
    ("use `uv` instead of `pip`", "instead"),
    ("Error: ENOENT again.\nno, the config lives in etc/, don't look in the repo root", "no"),
    ("```\nnpm ci\n```\ndon't run that, use pnpm", "don't"),
])
def test_pushback_around_pasted_code_is_still_read(reply, how):
    assert pushback(reply) == how
    s = convo("u: tidy the imports", "a: Done, I tidied the imports.", f"u: {reply}")
    assert [f.extra["how"] for f in detect.corrections(s)] == [how]


def test_pushback_words_without_a_handback_are_not_corrections():
    # the first message of a session answers nobody
    assert detect.corrections(convo("u: no, don't use the old API")) == []
    # a message typed while a tool call was running is mid-turn, not pushback on a hand-back
    working = Turn(role="assistant", text="Running tests", tool_calls=[call(command="pytest", result="ok")])
    assert detect.corrections(convo("u: run the tests", working, "u: don't forget the slow ones")) == []


def test_interrupt_then_new_instruction_is_a_correction():
    s = convo("u: refactor the parser", "a: I'll start with the lexer.", "!", "u: only touch the tokenizer")
    found = detect.corrections(s)
    assert [f.extra["how"] for f in found] == ["interrupt"]
    assert found[0].text == "only touch the tokenizer"


@pytest.mark.parametrize("reply", ["continue", "please continue", "go on", "Sorry, go ahead",
                                   "ok, keep going", "yes please", "Continue from where you left off."])
def test_interrupt_then_resume_is_not_a_correction(reply):
    # pressing stop by mistake, or to read along, then letting the agent go on
    working = Turn(role="assistant", text="Reading the parser.",
                   tool_calls=[call("Read", "...", file_path="p.py")])
    assert detect.corrections(convo("u: refactor the parser", working, "!", f"u: {reply}")) == []


def test_interrupt_then_resume_with_a_new_instruction_is_a_correction():
    s = convo("u: refactor the parser", "a: I'll start with the lexer.", "!", "u: continue, but skip the lexer")
    assert [f.extra["how"] for f in detect.corrections(s)] == ["interrupt"]


def test_interrupt_alone_is_not_a_correction():
    assert detect.corrections(convo("u: build it", "a: Building.", "!")) == []


def _plan_approved() -> Turn:
    return Turn(role="assistant", text="", tool_calls=[
        call("ExitPlanMode", "User has approved exiting plan mode. You can now proceed.", plan="Create 3 beads")])


def _task_done() -> Turn:
    return Turn(role="assistant", text="The server is starting in the background.",
                tool_calls=[call(command="mix phx.server &", result="Running on :4000")])


@pytest.mark.parametrize("before, reply", [
    # a new topic, opened by a question
    (_task_done, "Scrolling back in the terminal still does not work (maybe the page catches it)? "
                 "search the web for terminal scroll issues"),
    (_task_done, "wait, why is it on port 4000?"),
    (_plan_approved, "should I write the beads first?"),
    # the go-ahead typed after approving a plan: it starts the plan's task, it corrects nothing
    (_plan_approved, "create the beads"),
    # holding the agent says nothing about what to do
    (_task_done, "wait"),
    (_task_done, "hmm, one sec..."),
    # only what was pasted: no words of the person's own
    (_task_done, "```\nTraceback (most recent call last):\n  File \"a.py\", line 1\n```"),
])
def test_interrupt_then_a_question_or_a_hold_is_not_a_correction(before, reply):
    s = convo("u: plan the work", before(), "!", f"u: {reply}")
    assert detect.corrections(s) == []


@pytest.mark.parametrize("before, reply", [
    # a new task after interrupting real work: the words say what to do next
    (_task_done, "now add a README"),
    # or a redirect said plainly: one message cannot tell which
    (_task_done, "use pnpm"),
])
def test_interrupt_then_a_plain_instruction_is_an_unconfirmed_correction(before, reply):
    s = convo("u: plan the work", before(), "!", f"u: {reply}")
    (found,) = detect.corrections(s)
    assert found.kind == "correction" and found.text == reply and found.title == reply
    assert found.tags == ["interrupt", "unconfirmed"]
    assert found.extra["how"] == "interrupt" and found.extra["unconfirmed"] is True
    assert "Unconfirmed" in found.detail
    assert after_interrupt(reply) == INSTRUCTION


@pytest.mark.parametrize("reply", [
    "no, use pnpm",
    "don't touch the lockfile",
    "use the staging config instead",
    "use pnpm not npm",
    "use uv, rather than pip",
    "wait, run the unit tests first",
    "actually, no",
    "leave the migrations alone",
    "that's the wrong file, it's in lib/",
])
def test_interrupt_then_pushback_or_a_redirect_is_a_correction(reply):
    s = convo("u: plan the work", _task_done(), "!", f"u: {reply}")
    found = detect.corrections(s)
    assert [f.extra["how"] for f in found] == ["interrupt"]
    assert found[0].text == reply
    # confirmed by its words: a lesson at once, counted as "interrupted" in the morning report
    assert found[0].tags == ["pushback:interrupt"] and "unconfirmed" not in found[0].extra
    assert after_interrupt(reply) == REDIRECT


def test_refused_call_is_a_correction_with_the_persons_reason():
    refused = Turn(role="assistant", text="Pushing now.", tool_calls=[
        call(command="git push origin main", result=REJECT + " To tell you how to proceed, the user said:\nopen a PR instead",
             is_error=True, rejected=True)])
    s = convo("u: ship it", refused)
    found = detect.corrections(s)
    assert len(found) == 1
    f = found[0]
    assert f.extra == {"how": "refused", "action": "push", "tool": "Bash"}
    assert f.title == "refused Bash: git push origin main"
    assert f.text == "open a PR instead"


def test_refused_call_then_a_redirect_is_one_correction_in_those_words():
    refused = Turn(role="assistant", tool_calls=[
        call("Edit", REJECT, True, True, file_path="/r/a.py"), call("Edit", REJECT, True, True, file_path="/r/b.py")])
    s = convo("u: fix it", refused, "!", "u: only edit b.py")
    found = detect.corrections(s)
    assert len(found) == 1  # parallel calls refused together, and the words that followed
    assert found[0].text == "only edit b.py" and found[0].extra["how"] == "refused"
    assert "unconfirmed" not in found[0].extra


def _refused_rm(follow: str, interrupt: bool = True) -> Session:
    refused = Turn(role="assistant", tool_calls=[
        call(command="rm -rf build dist", result=REJECT, is_error=True, rejected=True)])
    # Claude Code writes an interrupt after a refusal; a Codex refusal may have none
    return convo("u: clean the build and re-run the app", refused, *(["!"] if interrupt else []), f"u: {follow}")


@pytest.mark.parametrize("follow", ["continue", "sorry, go ahead", "what does this script do?", "hmm, one sec"])
def test_a_refusal_then_a_resume_a_hold_or_a_question_stays_wordless(follow):
    """Those messages say nothing about why the call was refused: they are not its words."""
    (found,) = detect.corrections(_refused_rm(follow))
    assert found.text == found.title == "refused Bash: rm -rf build dist"
    assert "They said" not in found.detail


@pytest.mark.parametrize("interrupt", [True, False])
def test_a_refusal_then_a_plain_instruction_stays_wordless_and_the_instruction_waits_unconfirmed(interrupt):
    """"ok just run the app" may only be the next task: the refusal does not take it as its
    reason, and it is kept as an interrupt's plain instruction is, unconfirmed."""
    refusal, instruction = detect.corrections(_refused_rm("ok just run the app", interrupt))
    assert refusal.text == "refused Bash: rm -rf build dist" and refusal.extra["how"] == "refused"
    assert instruction.text == "ok just run the app"
    assert instruction.tags == ["interrupt", "unconfirmed"] and instruction.extra["unconfirmed"] is True


def test_a_reason_typed_into_the_prompt_stays_the_refusals_words_whatever_follows():
    refused = Turn(role="assistant", tool_calls=[call(
        command="git push origin main", is_error=True, rejected=True,
        result=REJECT + " To tell you how to proceed, the user said:\nopen a PR instead")])
    (found,) = detect.corrections(convo("u: ship it", refused, "u: continue"))
    assert found.text == "open a PR instead" and "unconfirmed" not in found.extra


_CLAUDE_REJECT = REJECT + (" STOP what you are doing and wait for the user to tell you how to proceed.")


def _claude_session(folder: Path, sid: str, day: int, ask: str, command: str, result: str,
                    after: tuple[str, ...] = ()) -> None:
    """A Claude Code transcript: an ask, one Bash call that failed with `result`, the person's
    messages `after` it (an interrupt marker first, as Claude Code writes after a refusal,
    when the result is a refusal), the agent's reply."""
    marker = [("user", {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]})] if result == _CLAUDE_REJECT else []
    records = [
        ("user", {"role": "user", "content": ask}),
        ("assistant", {"id": "m1", "role": "assistant", "model": "claude-x", "content": [
            {"type": "tool_use", "id": f"toolu_{sid[:4]}", "name": "Bash", "input": {"command": command}}]}),
        ("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{sid[:4]}",
                                                "is_error": True, "content": result}]}),
        *marker,
        *(("user", {"role": "user", "content": text}) for text in after),
        ("assistant", {"id": "m2", "role": "assistant", "model": "claude-x",
                       "content": [{"type": "text", "text": "Carrying on."}]}),
    ]
    lines = [json.dumps({"type": kind, "sessionId": sid, "uuid": f"{sid}-{n}", "cwd": "/home/dev/shop",
                         "timestamp": f"2026-10-{day:02d}T10:00:{n:02d}.000Z", "message": message})
             for n, (kind, message) in enumerate(records)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")


def _claude_session_refusing(folder: Path, sid: str, day: int, command: str, follow: str) -> None:
    """A Bash call the person refused without words, then their next message."""
    _claude_session(folder, sid, day, "ship the release", command, _CLAUDE_REJECT, (follow,))


def test_two_wordless_git_push_refusals_followed_by_continue_make_the_git_push_lesson(store, tmp_path):
    """Read from real transcripts, ingested and slept on: "continue" after a refusal is no
    lesson ("Continue."), and the second wordless refusal of `git push` makes its lesson."""
    from remem.engine import clock, ingest, sleep

    folder = tmp_path / "projects" / "-home-dev-shop"
    _claude_session_refusing(folder, "11111111-2222-4333-8444-555555555555", 12, "git push origin main", "continue")
    with clock.frozen("2026-10-12T23:00:00Z"):
        assert ingest.ingest_paths(store, [folder])["errors"] == []
        first = sleep.run_sleep_collect(store)
    assert store.rows("SELECT text FROM lessons") == []
    assert first["passes"]["lessons"]["pending"] == 1  # one refusal waits for a second
    _claude_session_refusing(folder, "22222222-2222-4333-8444-555555555555", 13, "git push origin main",
                             "sorry, go ahead")
    with clock.frozen("2026-10-13T23:00:00Z"):
        ingest.ingest_paths(store, [folder])
        sleep.run_sleep_collect(store)
    assert [r["text"] for r in store.rows("SELECT text FROM lessons")] == [
        "Ask before running `git push origin main` (the person refused it)."]


@pytest.mark.parametrize("title, kind", [
    ("refused Bash: mix phx.server 2>&1 | head -80", "bash mix phx.server"),
    ("refused Bash: mix phx.server (2)", "bash mix phx.server"),  # the second in a session
    ("refused Bash: git push origin main", "bash git push"),
    ("refused Bash: cd /srv/app && FOO=1 sudo rm -rf build", "bash rm"),
    ("refused Edit: /repo/src/a.py", "edit"),
    ("refused Glob", "glob"),
])
def test_the_kind_of_call_a_wordless_refusal_names(title, kind):
    assert refused_call_kind(title) == kind


def test_a_wordless_refusal_is_a_correction_whose_text_names_the_call():
    """Sleep tells it from a refusal in words by its text: "refused <the call>"."""
    refused = Turn(role="assistant", text="Let me start the server.", tool_calls=[
        call(command="mix phx.server", result=REJECT, is_error=True, rejected=True)])
    (found,) = detect.corrections(convo("u: the server does not start", refused, "!"))
    assert found.text == found.title == "refused Bash: mix phx.server"
    assert "refused" in found.tags


def test_same_correction_twice_in_a_session_gets_distinct_titles():
    s = convo("u: a", "a: done", "u: no, use tabs", "a: done", "u: no, use tabs")
    titles = [f.title for f in detect.corrections(s)]
    assert titles == ["no, use tabs", "no, use tabs (2)"]


# --------------------------------------------------------------------------- offers

@pytest.mark.parametrize("offer, kind", [
    ("Shall I run the tests?", "run_tests"),
    ("Would you like me to commit these changes?", "commit"),
    ("Want me to push the branch?", "push"),
    ("Should I install the missing package?", "install"),
    ("Do you want me to update the README too?", "edit"),
    ("If you'd like, I can rename the helper as well.", "edit"),
    ("Let me know if you want me to look at the logs.", "other"),
])
def test_offer_patterns_and_their_kind(offer, kind):
    s = convo("u: x", f"a: All done. {offer}")
    found = detect.offers(s)
    assert len(found) == 1
    assert found[0]["kind"] == kind
    assert found[0]["answer"] == "unanswered"


@pytest.mark.parametrize("reply, answer", [
    ("yes please", "approved"),
    ("go ahead", "approved"),
    ("no thanks", "declined"),
    ("not now", "declined"),
    ("no thanks, I'll push it myself", "declined"),
    ("no, commit only the parser", "corrected"),
    ("that's not what I asked", "corrected"),
    ("what does the diff look like?", "other"),
])
def test_how_the_person_answered(reply, answer):
    s = convo("u: x", "a: Fixed. Shall I commit it?", f"u: {reply}")
    assert detect.offers(s)[0]["answer"] == answer


def test_interrupt_answering_an_offer_is_a_correction():
    assert detect.offers(convo("u: x", "a: Shall I deploy?", "!"))[0]["answer"] == "corrected"


def test_an_offer_whose_call_was_refused_is_acted_then_stopped_not_told_to_act(store):
    """A reply that offers and acts at once ("Shall I run the migration?" with the call),
    refused by the person: counted once, as acted-then-stopped."""
    from remem.engine import delegation

    offered = Turn(role="assistant", text="Shall I run the migration?", tool_calls=[
        call(command="alembic upgrade head", result=REJECT, is_error=True, rejected=True)])
    s = convo("u: fix the schema", offered, "u: not yet")
    (offer,) = detect.offers(s)
    assert offer["answer"] == "refused"
    with store.write() as conn:
        conn.execute("INSERT INTO sessions (id, path, offers) VALUES ('s1', '/x.jsonl', ?)",
                     (json.dumps([offer]),))
    assert delegation.count(store)["asked_told_to_act"] == 0


def test_declined_offer_is_not_also_a_correction():
    s = convo("u: x", "a: Fixed. Shall I commit it?", "u: no thanks")
    assert detect.corrections(s) == []


def test_replies_waiting_on_the_person_are_counted():
    s = convo("u: fix the bug", "a: Found it. Shall I fix it?", "u: yes",
              "a: Fixed. Should I run the tests?", "u: sure", "a: Green. Want me to commit?", "u: no thanks",
              "u: now the docs", "a: Should I edit the README?")
    found = detect.offers(s)
    assert [o["waited"] for o in found] == [1, 2, 3, 1]
    assert [o["answer"] for o in found] == ["approved", "approved", "declined", "unanswered"]
    assert offer_summary(found) == {"offers": 4, "waited": 3,
                                    "by_answer": {"approved": 2, "declined": 1, "unanswered": 1}}


@pytest.mark.parametrize("text", [
    "I should add that the cache is cold.",  # no question to the person
    "The docs ask: should I use X? The answer was yes, so I used it." + " Everything is done now." * 80,
], ids=["statement", "early-question"])
def test_not_offers(text):
    assert detect.offers(convo("u: x", f"a: {text}")) == []


def test_offer_in_a_working_turn_is_not_a_handback():
    working = Turn(role="assistant", text="Shall I check? Checking.", tool_calls=[call(command="ls", result="a")])
    assert detect.offers(convo("u: x", working)) == []


def test_the_last_offer_of_a_reply_is_the_one_found():
    from remem.engine.detect_corrections import offer_in

    reply = ("Should I run the tests? I looked at it. Done with the parser.\n"
             "Want me to also update the docs? Thanks")
    assert offer_in(reply) == "Want me to also update the docs?"
    assert offer_in("Nothing to offer here.") is None and offer_in("") is None


# --------------------------------------------------------------------------- action kinds

@pytest.mark.parametrize("item, kind", [
    (ToolCall(id="1", name="Edit", input={"file_path": "a.py"}), "edit"),
    (ToolCall(id="1", name="Write", input={}), "edit"),
    ({"name": "Bash", "input": {"command": "git commit -m 'x'"}}, "commit"),
    ({"name": "Bash", "input": {"command": "git add . && git commit -m x && git push"}}, "push"),
    ({"name": "Bash", "input": {"command": "uv add httpx"}}, "install"),
    ({"name": "Bash", "input": {"command": "npm install"}}, "install"),
    ({"name": "Bash", "input": {"command": "python -m pytest -q"}}, "run_tests"),
    ({"name": "Bash", "input": {"command": "cargo test"}}, "run_tests"),
    ({"name": "Bash", "input": {"command": "ls -la"}}, "other"),
    ({"name": "Read", "input": {"file_path": "a"}}, "other"),
    ("shall I push it?", "push"),
    ("want me to commit?", "commit"),
    ("should I install ripgrep?", "install"),
    ("shall I run the test suite?", "run_tests"),
    ("would you like me to fix the typo?", "edit"),
    ("should I look into it?", "other"),
])
def test_action_kind(item, kind):
    assert action_kind(item) == kind


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("text, cls", [
    ("/bin/bash: line 1: rg: command not found", "command_not_found"),
    ("zsh: command not found: fd", "command_not_found"),
    ("ModuleNotFoundError: No module named 'yaml'", "module_not_found"),
    ("Error: Cannot find module 'express'", "module_not_found"),
    ("cp: cannot create regular file '/etc/x': Permission denied", "permission_denied"),
    ("FAILED tests/test_a.py::test_b - assert 1 == 2\n1 failed, 3 passed", "test_failure"),
    ("test result: FAILED. 3 passed; 1 failed", "test_failure"),
    ('  File "a.py", line 3\n    def f(:\nSyntaxError: invalid syntax', "syntax_type_error"),
    ("src/a.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.", "syntax_type_error"),
    ("Command timed out after 2m 0s", "timeout"),
    ("curl: (7) Failed to connect to localhost port 5432: Connection refused", "network"),
    ("fatal: unable to access 'https://x/': Could not resolve host: github.com", "network"),
    ("CONFLICT (content): Merge conflict in a.py\nAutomatic merge failed", "git_conflict"),
    (" ! [rejected]        main -> main (non-fast-forward)", "git_conflict"),
    ("cat: notes.txt: No such file or directory", "file_not_found"),
    ("File does not exist.", "file_not_found"),
    ("Exit code 2\nsomething odd happened", "other"),
    ("", "other"),
])
def test_error_classes(text, cls):
    assert error_class(text) == cls


def test_errors_come_from_failed_results_only():
    turn = Turn(role="assistant", tool_calls=[
        call(command="rg x", result="rg: command not found", is_error=True),
        call(command="grep -r 'No such file or directory' .", result="docs/faq.md: No such file or directory"),
        call(command="git push", result=REJECT, is_error=True, rejected=True),
    ])
    found = detect.errors(convo("u: x", turn))
    assert len(found) == 1
    assert found[0].extra["class"] == "command_not_found"
    assert found[0].title.startswith("Bash command not found: rg: command not found")


def test_the_same_error_twice_in_a_session_is_one_finding_and_titles_ignore_noise():
    t1 = Turn(role="assistant", tool_calls=[call(command="pytest", result="Exit code 1\ntimed out after 120s", is_error=True)])
    t2 = Turn(role="assistant", tool_calls=[call(command="pytest", result="Exit code 1\ntimed out after 95s", is_error=True)])
    found = detect.errors(convo("u: x", t1, t2))
    assert len(found) == 1 and found[0].extra["class"] == "timeout"


def _traceback(frame_line: int, code: str, exception: str) -> str:
    return ("Traceback (most recent call last):\n"
            f'  File "/home/dana/etl/load.py", line {frame_line}, in <module>\n'
            f"    {code}\n{exception}\nExit code 1")


def test_a_traceback_is_titled_by_its_exception_not_its_first_frame():
    """Two different exceptions from one script are two errors, each titled by its exception."""
    key = call(command="python load.py", is_error=True,
               result=_traceback(12, 'total = rows["amount"]', "KeyError: 'amount'"))
    runtime = call(command="python load.py", is_error=True,
                   result=_traceback(40, "conn = psycopg.connect(DSN)",
                                     'RuntimeError: database "etl" does not accept connections'))
    found = detect.errors(convo("u: load it", Turn(role="assistant", tool_calls=[key]),
                                Turn(role="assistant", tool_calls=[runtime])))
    assert [f.title for f in found] == [
        "Bash failed: KeyError: 'amount'",
        'Bash failed: RuntimeError: database "etl" does not accept connections',
    ]


@pytest.mark.parametrize("result, line", [
    # a chained traceback: the exception raised last
    ("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\nKeyError: 'a'\n\n"
     "During handling of the above exception, another exception occurred:\n\n"
     "Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    g()\nValueError: bad row",
     "ValueError: bad row"),
    # Python 3.11+ carets and an indented log around it
    ("log: starting\n    Traceback (most recent call last):\n      File \"b.py\", line 9, in run\n"
     "        x = y[0]\n            ^^^^\n    IndexError: list index out of range\nlog: done",
     "IndexError: list index out of range"),
    # the class's own line is the exception line, not a frame that matched first
    ("Traceback (most recent call last):\n  File \"/srv/timeout_policy.py\", line 4, in <module>\n"
     "    wait()\nTimeoutError: timed out waiting for the lock", "TimeoutError: timed out waiting for the lock"),
    # cut short before its exception: the last line of what is there
    ("Traceback (most recent call last):\n  File \"c.py\", line 2, in <module>\n    main()", "main()"),
    # every line prefixed by docker compose's service name
    ("web_1  | Traceback (most recent call last):\nweb_1  |   File \"/app/x.py\", line 3, in <module>\n"
     "web_1  |     d[\"amount\"]\nweb_1  | KeyError: 'amount'\n", "KeyError: 'amount'"),
])
def test_the_line_a_traceback_is_titled_by(result, line):
    (found,) = detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[
        call(command="python x.py", result=result, is_error=True)])))
    assert found.title.split(": ", 1)[1] == line


@pytest.mark.parametrize("first, second, title", [
    ("Tests: 3 failed, 9 passed, 12 total", "Tests: 2 failed, 10 passed, 12 total",
     "Bash tests failed: Tests: … failed, … passed, … total"),
    ("Error: listen EADDRINUSE: address already in use :::3000",
     "Error: listen EADDRINUSE: address already in use :::3001",
     "Bash failed: Error: listen EADDRINUSE: address already in use :::…"),
    ("giving up after 3 attempts", "giving up after 5 attempts", "Bash failed: giving up after … attempts"),
    ("error: unsupported Python 3.11.4, need 3.12", "error: unsupported Python 3.10.2, need 3.12",
     "Bash failed: error: unsupported Python …, need …"),
    ("node v18.2.0 is too old", "node v16.20.1 is too old", "Bash failed: node … is too old"),
    ("build failed in 12.5s (412MB)", "build failed in 9s (398MB)", "Bash failed: build failed in … (…)"),
])
def test_numbers_are_blanked_so_the_same_failure_gets_one_title(first, second, title):
    def found(text: str) -> list:
        return detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[
            call(command="run", result=f"Exit code 1\n{text}", is_error=True)])))

    assert [f.title for f in found(first)] == [f.title for f in found(second)] == [title]


def test_digits_in_names_are_not_blanked():
    (found,) = detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[call(
        command="run", is_error=True,
        result="Exit code 1\npython3: utf8 decoding of ES2022 target on x86_64 failed at byte 17")])))
    assert found.title == "Bash failed: python3: utf8 decoding of ES2022 target on x86_64 failed at byte …"


def _shell(command: str, result: str, name: str = "Bash") -> ToolCall:
    """A failed shell call as Claude Code (a string) or Codex (["bash", "-lc", …]) records it."""
    inp = {"command": ["bash", "-lc", command]} if name == "shell" else {"command": command}
    return ToolCall(id="c1", name=name, input=inp, result=result, is_error=True)


@pytest.mark.parametrize("command, result", [
    ('grep -rn "parse_config" src/', "Exit code 1"),
    ("rg -n 'a|b' src", "Exit code 1"),
    ("grep -c TODO main.py", "Exit code 1\n0"),
    ("git grep -n parse_config", "Exit code 1"),
    ("pgrep -f uvicorn", "Exit code 1"),
    ("diff tests/a.json tests/b.json", 'Exit code 1\n3c3\n<   "id": 1\n---\n>   "id": 2'),
    ("diff -u a.txt b.txt", "Exit code 1\n--- a.txt\t2026-03-01\n+++ b.txt\t2026-03-01\n@@ -1,2 +1,2 @@\n keep\n-old\n+new"),
    ("diff -q a b", "Exit code 1\nFiles a and b differ"),
    ("cmp -s a.bin b.bin", "Exit code 1"),
    ("cmp a.bin b.bin", "Exit code 1\na.bin b.bin differ: byte 3, line 1"),
    ("git diff --quiet", "Exit code 1"),
    ("git -C app diff --exit-code", "Exit code 1\ndiff --git a/x b/x\nindex 1a..2b 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b"),
    ("test -f .env", "Exit code 1"),
    ("[ -f config.toml ]", "Exit code 1"),
    ("[[ -d build ]]", "Exit code 1"),
    # the status is the last command's: a cd before it, a pipe into it, an env word, a ";" before
    ("cd src && grep -rn parse_config .", "Exit code 1"),
    ("cat app.log | grep -i panic", "Exit code 1"),
    ("LC_ALL=C grep -q x f", "Exit code 1"),
    ("make build || true; test -f dist/app", "Exit code 1"),
])
def test_an_exit_status_that_only_answers_no_is_no_error(command, result):
    """grep that matched nothing, diff or cmp that found a difference, test that found the
    condition false: status 1 is their answer, not a failure, and no error is recorded."""
    assert detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[_shell(command, result)]))) == []


def test_a_codex_search_with_no_match_is_no_error():
    """Codex keeps the output alone (its exit code is not in the result): an empty output of a
    search is its answer; words on stderr are trouble."""
    quiet = _shell("grep -rn parse_config src/", "", name="shell")
    assert detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[quiet]))) == []
    loud = _shell("grep -rn parse_config srcs/", "grep: srcs/: No such file or directory", name="shell")
    assert len(detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[loud])))) == 1


@pytest.mark.parametrize("command, result", [
    # status 2 is trouble, and status 1 with words on stderr too
    ("grep -rn x srcs/", "Exit code 2\ngrep: srcs/: No such file or directory"),
    ("grep -rn x srcs/", "Exit code 1\ngrep: srcs/: No such file or directory"),
    ("diff a.json c.json", "Exit code 2\ndiff: c.json: No such file or directory"),
    ("[ 1 -eq x ]", "Exit code 2\nbash: [: x: integer expression expected"),
    ("git diff --quiet", "Exit code 128\nfatal: not a git repository"),
    # another command may have set the status, or its output is there
    ("npm run build && grep -q done build.log", "Exit code 1"),
    ("grep -rn x src | head -5", "Exit code 1"),
    ("echo checking; grep -q x f", "Exit code 1\nchecking"),
    ("set -o pipefail; npm ls | grep lodash", "Exit code 1"),
    # not read plainly: a negation, a command substitution, a subshell
    ("! grep -q x f", "Exit code 1"),
    ("grep x $(git ls-files)", "Exit code 1"),
    ("(cd src && grep x .)", "Exit code 1"),
    # not an answering command at all, or diff with no diff in its output
    ("pytest -q", "Exit code 1"),
    ("git diff", "Exit code 1"),
    ("diff a b", "Exit code 1\nSegmentation fault"),
])
def test_a_failure_of_an_answering_command_is_still_an_error(command, result):
    assert len(detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[_shell(command, result)])))) == 1


def test_a_search_whose_trouble_was_sent_away_is_still_an_error_when_its_status_is_unknown():
    """`2>/dev/null` hides grep's "No such file": with no status in the result (Codex), an
    empty output may be trouble, so it stays an error. `2>&1` keeps stderr in the output."""
    hidden = _shell("grep -rn x srcs/ 2>/dev/null", "", name="shell")
    kept = _shell("grep -rn x src/ 2>&1", "", name="shell")
    assert len(detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[hidden])))) == 1
    assert detect.errors(convo("u: x", Turn(role="assistant", tool_calls=[kept]))) == []


@pytest.mark.parametrize("command, words", [
    ('cd "my;dir" && make deploy', "make deploy"),  # a ";" inside quotes ends nothing
    ("git commit -m 'wip | later' && git push", "git commit -m"),
    ("(cd app && make)", "make"),  # a subshell's command, not its "("
    ("echo `date` && false", "echo"),
    ("grep -rn 'a|b' src", "grep -rn"),
    ("FOO=1 npm run build 2>&1 | tail", "npm run build"),
    ("cat <<EOF\nhi\nEOF", "cat"),
])
def test_what_a_command_line_runs_is_read_with_its_quotes(command, words):
    """The words a refusal's lesson names ("Ask before running `…`") are read by the same
    splitter that tells which command set an exit status: quote-aware, so `cd "my;dir" &&
    make deploy` ran make, not `dir"`."""
    assert command_words(command) == words


@pytest.mark.parametrize("command, simple", [
    ("cd src && grep -rn x .", [("", "cd src"), ("&&", "grep -rn x .")]),
    ("grep 'a;b' f 2>&1 | head", [("", "grep 'a;b' f 2>&1"), ("|", "head")]),
    ("(cd src && grep x .)", None),
    ("grep x $(git ls-files)", None),
    ("grep 'x", None),
])
def test_a_command_line_is_split_plainly_or_not_at_all(command, simple):
    assert split_commands(command) == simple


@pytest.mark.parametrize("text", ["a" * 300_000, "a" * 300_000 + ": not foun", "No module named " + "a" * 300_000])
def test_a_missing_name_is_read_from_a_long_word_in_one_pass(text):
    """`([\\w.+-]+): command not found` tried the word from each of its characters: a long word
    with no such ending took minutes (100 KB: 89 s)."""
    for cls in ("command_not_found", "module_not_found"):
        assert missing_name(cls, text) in ("", "a" * 300_000)
    assert missing_name("command_not_found", "x " + "a" * 300_000 + ": command not found") == "a" * 300_000


# --------------------------------------------------------------------------- surprises

@pytest.mark.parametrize("text", [
    "Unexpectedly, the cache was warm already.",
    "It turns out the config is read twice.",
    "That's odd: the port is taken.",
    "I assumed the tests used SQLite, but they need Postgres.",
    "Surprisingly, the old endpoint still answers.",
    "I didn't expect the build to pull in numpy.",
    "I thought the config was read once, but it is read twice.",
    "I thought that it would be slow but it takes a millisecond.",
    "Contrary to the docs, the flag is ignored.",
    "Contrary to what I assumed, the job runs twice.",
])
def test_stated_surprises(text):
    found = detect.surprises(convo("u: x", f"a: Looked into it. {text} Moving on."))
    assert len(found) == 1
    assert found[0].text == text


@pytest.mark.parametrize("text", [
    "I expected this to work and it does.",
    "Is that odd?",
    "The function turns the list into a set.",
    "Everything went as planned.",
    # deliberation, not an expectation proved wrong
    "I thought about adding a cache but let's keep it simple for now.",
    "I thought we could split this into two PRs, but one is fine too.",
    "I thought of a second option, but the first is simpler.",
    "Contrary to popular belief, tabs are fine here.",
])
def test_not_surprises(text):
    assert detect.surprises(convo("u: x", f"a: {text}")) == []


# --------------------------------------------------------------------------- environment

def test_environment_facts():
    turn = Turn(role="assistant", tool_calls=[
        call(command="node --version", result="v20.11.1"),
        call(command="which python3", result="/opt/homebrew/bin/python3"),
        call(command="uname -a", result="Darwin mac.local 23.4.0 Darwin Kernel Version 23.4.0 arm64"),
        call(command="fd . src", result="zsh: command not found: fd", is_error=True),
        call(command="python -c 'import yaml'", result="ModuleNotFoundError: No module named 'yaml'", is_error=True),
        call(command="sw_vers", result="ProductName: macOS\nProductVersion: 14.4.1"),
    ])
    titles = [f.title for f in detect.environment(convo("u: x", turn))]
    assert titles == ["version: node 20.11.1", "path: python3 -> /opt/homebrew/bin/python3",
                      "os: Darwin 23.4.0", "tool missing: fd", "module missing: yaml",
                      "os: ProductVersion: 14.4.1"]


@pytest.mark.parametrize("command, result", [
    ("grep -v '^#' requirements.txt", "requests==2.31.0\nnumpy==1.26.4\n"),
    ("curl -v http://localhost:8000/health", "*   Trying 127.0.0.1:8000...\n* Connected to localhost"),
    ("npm version patch", "v1.4.3\n"),
    ("cp -v dist/app-1.2.3.tar.gz /srv/", "'dist/app-1.2.3.tar.gz' -> '/srv/app-1.2.3.tar.gz'\n"),
    ("python -v", "import _frozen_importlib # frozen 1.0.0"),  # -v is verbose for python
    ("node --version && cat notes.txt", "v20.11.1"),  # more than the version asked
    ("mytool --version", "/opt/mytool-1.2.3/bin"),  # no version-looking output
    ("ping -V", "PING 10.0.0.1 (10.0.0.1)"),  # an address is no version
])
def test_no_versions_from_everyday_commands(command, result):
    turn = Turn(role="assistant", tool_calls=[call(command=command, result=result)])
    assert detect.environment(convo("u: x", turn)) == []


@pytest.mark.parametrize("command, result, title", [
    ("node -v", "v20.11.1", "version: node 20.11.1"),
    ("/usr/bin/python3 --version", "Python 3.12.3", "version: python3 3.12.3"),
    ("git version", "git version 2.43.0", "version: git 2.43.0"),
    ("cargo -V", "cargo 1.75.0 (1d8b05cdd 2023-11-20)", "version: cargo 1.75.0"),
    ("perl -v", "\nThis is perl 5, version 36, subversion 0 (v5.36.0)", "version: perl 5.36.0"),
    ("java -version 2>&1", 'openjdk version "17.0.2" 2022-01-18', "version: java 17.0.2"),
])
def test_versions_from_version_commands(command, result, title):
    turn = Turn(role="assistant", tool_calls=[call(command=command, result=result)])
    assert [f.title for f in detect.environment(convo("u: x", turn))] == [title]


def test_no_environment_facts_from_ordinary_output():
    turn = Turn(role="assistant", tool_calls=[
        call(command="cat CHANGELOG.md", result="## 1.2.3\n- Linux support"),
        call(command="which nothing", result="nothing not found", is_error=True),
        call(command="python --version", result="", is_error=False),
    ])
    assert detect.environment(convo("u: x", turn)) == []


# --------------------------------------------------------------------------- fixtures, by hand

def test_fixture_findings_checked_by_hand():
    v1 = detect.detect_all(parse_file(FIX / "v1_sidechain.jsonl"))
    assert [f.extra["how"] for f in v1["correction"]] == ["no"]
    assert [f.extra["class"] for f in v1["error"]] == ["file_not_found"]
    assert [f.title for f in v1["environment"]] == ["version: pnpm 9.1.0"]
    assert v1["surprise"] == []  # "that's odd" was said by a subagent
    assert [(o["kind"], o["answer"]) for o in v1["offers"]] == [("edit", "corrected"), ("run_tests", "approved")]

    v2 = detect.detect_all(parse_file(FIX / "v2_stream.jsonl"))
    assert [(f.extra["how"], f.text) for f in v2["correction"]] == [
        ("refused", "don't touch cart.ts, the bug is in coupon.ts")]
    assert [f.extra["class"] for f in v2["error"]] == ["test_failure"]
    assert [f.text for f in v2["surprise"]] == ["Turns out the coupon is applied before tax, not after."]
    assert [(o["kind"], o["answer"]) for o in v2["offers"]] == [("commit", "declined")]

    v3 = detect.detect_all(parse_file(FIX / "v2_tools.jsonl"))
    assert [f.extra["how"] for f in v3["correction"]] == ["stop"]
    assert [f.extra["class"] for f in v3["error"]] == [
        "command_not_found", "module_not_found", "permission_denied", "test_failure",
        "git_conflict", "file_not_found", "network"]
    assert len(v3["surprise"]) == 1
    assert sorted(f.title for f in v3["environment"]) == [
        "module missing: stripe", "os: Linux 6.8.0-45-generic", "path: node -> /usr/local/bin/node",
        "tool missing: rg", "version: python3 3.12.3"]
    assert [(o["kind"], o["answer"]) for o in v3["offers"]] == [("edit", "corrected")]


def test_codex_style_command_lists():
    assert command_of({"command": ["bash", "-lc", "python3 --version"]}) == "python3 --version"
    assert command_of({"command": ["git", "push"]}) == "git push"
    assert command_of("not a dict") == ""
    assert action_kind({"name": "shell", "input": {"command": ["bash", "-lc", "cargo test"]}}) == "run_tests"
    turn = Turn(role="assistant", tool_calls=[call("shell", "Python 3.13.1", command=["bash", "-lc", "python3 --version"])])
    assert [f.title for f in detect.environment(convo("u: x", turn))] == ["version: python3 3.13.1"]


_PYTEST_WRONG_FLAG = (
    "Exit code 4\nERROR: usage: pytest [options] [file_or_dir] [file_or_dir] [...]\n"
    "pytest: error: unrecognized arguments: --cov=app --cov-report=term\n"
    "  inifile: /home/dev/shop/pyproject.toml\n  rootdir: /home/dev/shop\n")


@pytest.mark.parametrize("output, line", [
    ("usage: mytool [-h] [--verbose]\nmytool: error: unrecognized arguments: --dry\n",
     "mytool: error: unrecognized arguments: --dry"),
    ("usage: python -m shop [-h] {serve,migrate}\npython -m shop: error: argument cmd: invalid choice: 'srv'\n",
     "python -m shop: error: argument cmd: invalid choice: 'srv'"),
    ("Usage: shop [OPTIONS] COMMAND [ARGS]...\nTry 'shop --help' for help.\n\nError: No such option: --dry\n",
     "Error: No such option: --dry"),
])
def test_a_wrong_flags_error_names_the_error_line_not_the_usage_banner(output, line):
    turn = Turn(role="assistant", tool_calls=[call(command="shop --dry", result="Exit code 2\n" + output, is_error=True)])
    (found,) = detect.errors(convo("u: run it", turn))
    assert found.title.endswith(line)


def test_a_wrong_pytest_flag_makes_a_lesson_naming_the_flag_not_the_usage_banner(store, tmp_path):
    """pytest without pytest-cov, on two days, ingested from real transcripts and slept on:
    the lesson says which argument pytest did not know."""
    from remem.engine import clock, ingest, sleep

    folder = tmp_path / "projects" / "-home-dev-shop"
    for n, day in enumerate((12, 13)):
        _claude_session(folder, f"{n}1111111-2222-4333-8444-555555555555", day, "run the tests with coverage",
                        "pytest --cov=app --cov-report=term", _PYTEST_WRONG_FLAG)
    with clock.frozen("2026-10-13T23:00:00Z"):
        assert ingest.ingest_paths(store, [folder])["errors"] == []
        sleep.run_sleep_collect(store)
    (lesson,) = [r["text"] for r in store.rows("SELECT text FROM lessons")]
    assert "(pytest: error: unrecognized arguments: --cov=app --cov-report=term)" in lesson
    assert "usage:" not in lesson
