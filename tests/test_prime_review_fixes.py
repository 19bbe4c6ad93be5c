"""Priming before long tool calls, in stores of thousands of drafted lessons, and at Codex's stop:

- a correction about the program a script runs is shown before the script as before that one
  command, however long the script (its other steps, a here-document, a long commit message,
  past the 2,000 characters of the call's text that are embedded);
- the keyword evidence reads at most REFINE_TOP lessons, whatever the store holds; the call's
  command is parsed once, and never more than shell_words.COMMAND_CAP characters of it;
- the stop hook reads a Codex rollout's last answer when the payload has none.

The real bundled model, a real store, the real hook process."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_hooks import run_hook, seed, session_in_arm

PROJECT = "/home/you/code/shop-api"
FORCE = "Never force-push; use --force-with-lease."
UV = "We use uv here, not pip."
PYTEST = ("`uv run pytest -q tests/test_cache.py` failed here (network error: redis.exceptions."
          "ConnectionError); check that the service it needs is running.")
RG = "`rg -n get_products` failed here (command not found); check the tool is installed, or use another."
MIGRATIONS = "Don't touch the migrations folder, old migrations are never edited."
LESSONS = [(FORCE, "correction", PROJECT), (UV, "correction", PROJECT), (PYTEST, "error", PROJECT),
           (RG, "error", PROJECT), (MIGRATIONS, "correction", PROJECT)]

STEPS = lambda n: "; ".join(f"echo step{i}" for i in range(n))  # noqa: E731
HEREDOC = "cat > notes.md <<'EOF'\n" + "lorem ipsum dolor sit amet, consectetur adipiscing\n" * 60 + "EOF\n"
MESSAGE = "fix the thing in the module so the report adds up. " * 48
FORCED = [
    STEPS(3) + "; git push --force",
    STEPS(10) + "; git push --force",
    STEPS(25) + "; git push --force",
    STEPS(30) + "; git push --force",
    HEREDOC + "git push --force",                             # 3 KB: the push past the text's cap
    f"git commit -am '{MESSAGE}' && git push --force",        # 2.4 KB
    STEPS(20) + "\n" + HEREDOC + "git add notes.md && git push -f origin main",
]


def _tool_text(command: str) -> str:
    from remem.hooks.adapters import tool_text

    return " ".join(tool_text("Bash", {"command": command}).split())  # as select normalises it


def _shown(store, command: str) -> list[str]:
    from remem import config
    from remem.engine import prime

    got = prime.select(store, _tool_text(command), event="pre-tool", cwd=PROJECT, cfg=config.load(),
                       record=False, command=command)
    return [lesson["text"] for lesson in got["lessons"]]


def _scored(store, command: str) -> dict[str, dict]:
    from remem.engine import prime

    return {c["text"]: c for c in prime.candidates(store, _tool_text(command), event="pre-tool",
                                                   cwd=PROJECT, command=command)}


# ------------------------------------------------------------------ the program a script runs

@pytest.mark.parametrize("command", FORCED, ids=lambda c: f"{len(c)}-chars")
def test_a_script_that_ends_in_a_forced_push_is_shown_the_force_push_correction(store, command):
    seed(store, LESSONS)
    assert FORCE in _shown(store, command)
    # Scored as the push alone: the script's other steps neither raise nor lower it.
    alone = _scored(store, "git push --force")[FORCE]
    assert _scored(store, command)[FORCE]["relevance"] >= alone["relevance"]
    # The same script without the forced push: nothing about pushing, nor anything else.
    for other in ("git push origin main", "git status"):
        unforced = command.rsplit("git ", 1)[0] + other
        assert _shown(store, unforced) == [], unforced


def test_the_hook_shows_it_before_a_script_of_twenty_five_steps_and_a_forced_push(store):
    from remem import config

    seed(store, LESSONS)
    config.set_value("prime.timeout_ms", 30000)  # a loaded test machine: not the budget under test
    command = STEPS(25) + "; git push --force"
    result = run_hook("pre-tool", {"tool_name": "Bash", "tool_input": {"command": command},
                                   "session_id": session_in_arm(False, "long"), "cwd": PROJECT},
                      env={"REMEM_HOOK_CAP_MS": "60000"})
    assert result.returncode == 0, result.stderr
    assert FORCE in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


UNRELATED = [
    "cat > notes.md <<'EOF'\n" + "We never force-push, and never pip install: git push --force is banned.\n" * 40
    + "EOF\ngit status",                                      # the body is text, not commands
    HEREDOC + "uv add httpx && uv run pytest -q",
    f"git commit -am '{MESSAGE} git push --force' && git log -1",
    "x \\\n" * 5000 + "git push --force",                  # one command, x, with 5,001 words
]


def test_a_matched_lesson_is_scored_against_its_own_command_not_another_of_the_script(store):
    """A script of 25 steps that installs with pip and then force-pushes: each correction
    scores at least what it scores before its own command alone (the script's whole text may
    say more)."""
    seed(store, LESSONS)
    command = STEPS(14) + "; pip install httpx; " + STEPS(9) + "; git push --force"
    scores = _scored(store, command)
    assert scores[UV]["relevance"] >= _scored(store, "pip install")[UV]["relevance"]
    assert scores[FORCE]["relevance"] >= _scored(store, "git push --force")[FORCE]["relevance"]
    # Long scripts that run no program a lesson is about, whatever their words say.
    for unrelated in UNRELATED:
        shown = _shown(store, unrelated)
        assert FORCE not in shown and UV not in shown and MIGRATIONS not in shown, (unrelated[:80], shown)


# ------------------------------------------------------------------ bounded work in big stores

DRAFTED_ADVICE = [
    ("command not found", "check the tool is installed, or use another"),
    ("exit 1: the build failed", "find out why before running it again"),
    ("tests failed: 3 failed", "expect these tests to fail until the cause is fixed"),
]


def _many_drafted(store, n: int) -> None:
    """n drafted error lessons (no vectors: the keyword evidence is under test), each sharing
    the template's words with any prompt about a failure."""
    from remem.engine import lessons

    for i in range(n):
        how, advice = DRAFTED_ADVICE[i % len(DRAFTED_ADVICE)]
        lessons.add_lesson(store, f"`tool{i} run --fast` failed here ({how}); {advice}.", "error", cwd=PROJECT)


def _counting(monkeypatch, module, name: str) -> list:
    calls: list = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_the_keyword_refinements_read_at_most_refine_top_lessons(store, monkeypatch):
    from remem.engine import lessons, prime, programs
    from remem.engine.lesson_text import _ADVICE

    # The template prime leaves out is the one lesson_text drafts.
    assert set(prime.TEMPLATE_WORDS) == {programs.FAILED_HERE, programs.AVOID.rstrip(": "), *_ADVICE.values()}
    _many_drafted(store, 3 * prime.REFINE_TOP)
    seqs = [r["seq"] for r in store.rows("SELECT seq FROM lessons")]
    read = _counting(monkeypatch, programs, "matchable_text")
    marked = _counting(monkeypatch, prime, "_only_program_names")
    prompt = "why does the fast run fail here, check the tool and the tests"
    scores = prime._keyword_scores(store, prompt, seqs)
    assert 0 < len(read) <= prime.REFINE_TOP
    assert 0 < len(marked) <= prime.REFINE_TOP
    assert scores  # "fast" and "run" are the lessons' own words: they still count

    # The template's words make no lesson a keyword hit, those read one by one or not.
    for template in ("check that the tool is installed on the CI runner", "check the permissions first"):
        assert prime._keyword_scores(store, template, seqs) == {}, template
    # A lesson's own words count among hundreds sharing the template with the prompt.
    make = lessons.add_lesson(store, "`make build` failed here (exit 2: the linker failed on arm64); "
                              "find out why before running it again.", "error", cwd=PROJECT)
    make_seq = store.one("SELECT seq FROM lessons WHERE id = ?", (make["id"],))["seq"]
    scores = prime._keyword_scores(store, "why does the linker fail on arm64", [*seqs, make_seq])
    assert scores.get(make_seq) == 1.0


def test_the_call_is_parsed_once_and_never_past_the_cap(store, monkeypatch):
    from remem import config
    from remem.engine import prime, programs, shell_words

    seed(store, LESSONS)
    commands = _counting(monkeypatch, programs, "commands_run")
    splits = _counting(monkeypatch, programs, "split_commands")
    splits_here = _counting(monkeypatch, shell_words, "split_commands")  # command_words' own
    huge = "echo x \\\n" * 200_000 + "git push --force"
    got = prime.select(store, _tool_text(huge), event="pre-tool", cwd=PROJECT, cfg=config.load(),
                       record=False, command=huge)
    assert got is not None
    assert max(len(args[0]) for args in splits + splits_here) <= shell_words.COMMAND_CAP + 1
    assert len([args for args in commands if len(args[0]) > 1000]) == 1

    # A lesson quoting a program the call runs (`rg`) shares its words: the names-only check
    # reads what the call runs, from the one parse.
    commands.clear()
    command = STEPS(30) + "; rg -n get_products; git push --force"
    shown = [l["text"] for l in prime.select(store, _tool_text(command), event="pre-tool", cwd=PROJECT,
                                             cfg=config.load(), record=False, command=command)["lessons"]]
    assert FORCE in shown and RG in shown
    assert [args[0] for args in commands].count(command) == 1


def test_a_megabyte_of_lines_is_read_to_its_last_command(store):
    seed(store, LESSONS)
    assert FORCE in _shown(store, "echo building\n" * 80_000 + "git push --force")


def test_bounded_keeps_the_start_and_the_end_at_an_edge():
    from remem.engine.shell_words import COMMAND_CAP, bounded

    short = STEPS(10)
    assert bounded(short) is short
    lines = "".join(f"echo {i}\n" for i in range(20_000)) + "git push --force"
    cut = bounded(lines)
    assert len(cut) <= COMMAND_CAP + 1
    assert cut.startswith("echo 0\n") and cut.endswith("\ngit push --force")
    assert all(re.fullmatch(r"echo \d+|git push --force", line) for line in cut.split("\n"))
    one_line = "; ".join(f"echo {i}" for i in range(20_000)) + "; git push --force"
    assert bounded(one_line).endswith("git push --force")
    assert all(re.fullmatch(r"echo \d+|git push --force", part.strip())
               for part in re.split(r"[;\n]", bounded(one_line)))


def _split_oracle(command: str, strict: bool = True) -> list[tuple[str, str]] | None:
    """split_commands read one character at a time (the rules, none of the speed)."""
    out, buf, op, i, n = [], [], "", 0, len(command)
    quotes = "'\"" if strict else "'\"`"
    while i < n:
        ch = command[i]
        if ch in quotes:
            j = i + 1
            while j < n and command[j] != ch:
                j += 2 if ch == '"' and command[j] == "\\" else 1
            if j >= n:
                if strict:
                    return None
                j = n - 1
            buf.append(command[i:j + 1])
            i = j + 1
            continue
        if ch == "\\" and i + 1 < n:
            buf.append(command[i:i + 2])
            i += 2
            continue
        if strict and (ch in "()`" or command.startswith("<<", i)):
            return None
        joined = "".join(buf)
        if command.startswith(("&&", "||"), i) or ch in ";\n|()" or (
                ch == "&" and not joined.endswith(("<", ">")) and command[i + 1:i + 2] != ">"):
            out.append((op, joined.strip()))
            op = command[i:i + 2] if command.startswith(("&&", "||"), i) else ch
            i += len(op)
            op = ";" if op in ("\n", "(", ")") else op
            buf = []
            continue
        buf.append(ch)
        i += 1
    out.append((op, "".join(buf).strip()))
    return out


class _CountingPattern:
    def __init__(self, pattern):
        self.pattern, self.calls = pattern, 0

    def match(self, *args):
        self.calls += 1
        return self.pattern.match(*args)


def _split_counted(command: str, strict: bool) -> tuple[list[tuple[str, str]] | None, int]:
    """split_commands' answer and how many steps (runs of plain text looked for) it took."""
    from remem.engine import shell_words

    real = shell_words._PLAIN_RUN
    counting = shell_words._PLAIN_RUN = _CountingPattern(real)
    try:
        return shell_words.split_commands(command, strict=strict), counting.calls
    finally:
        shell_words._PLAIN_RUN = real


_SPECIAL = set("\"'`();|&\n<")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab \\;|&<>()'\"`\n$=-", max_size=40), st.booleans())
def test_split_commands_reads_as_the_shell_does_a_run_of_words_in_one_step(command, strict):
    """As read one character at a time; an escaped character (`\\;`, a continued line) is part
    of the run of words it is in: a step for each character the shell reads specially, none
    for an escape."""
    parts, steps = _split_counted(command, strict)
    assert parts == _split_oracle(command, strict=strict)
    assert steps <= 2 * (sum(ch in _SPECIAL for ch in command) + command.endswith("\\")) + 1


def test_continued_lines_are_read_in_one_step():
    """Ten thousand `x \\` lines are one run of a command's words, not a step per escape."""
    command = "x \\\n" * 10_000 + "git push"
    parts, steps = _split_counted(command, strict=False)
    assert parts == [("", command)]
    assert steps == 1


# ------------------------------------------------------------------ Codex's stop, from its rollout

def _rollout(path: Path, items: list[dict]) -> Path:
    meta = {"timestamp": "2026-05-01T10:00:00Z", "type": "session_meta",
            "payload": {"id": "0197a1b2-0000-7000-8000-000000000001", "cwd": PROJECT}}
    lines = [meta] + [{"timestamp": "2026-05-01T10:00:01Z", **item} for item in items]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def _message(role: str, text: str) -> dict:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "response_item", "payload": {"type": "message", "role": role,
                                                 "content": [{"type": part, "text": text}]}}


PUSHED = "Done: I ran git push --force to main, it is live."
TURN = [
    _message("user", "<environment_context>\n  <cwd>/home/you/code/shop-api</cwd>\n</environment_context>"),
    _message("user", "push my branch"),
    {"type": "event_msg", "payload": {"type": "user_message", "message": "push my branch"}},
    {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": "c1",
                                          "arguments": json.dumps({"command": ["git", "push", "--force"]})}},
    {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "ok"}},
    {"type": "response_item", "payload": {"type": "reasoning", "summary": []}},
    _message("assistant", PUSHED),
    {"type": "event_msg", "payload": {"type": "agent_message", "message": PUSHED}},
    {"type": "event_msg", "payload": {"type": "token_count", "info": None}},
]


def _codex_stop(transcript: Path, session: str) -> str:
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": PROJECT,
               "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": None}
    result = run_hook("stop", payload, agent="codex", env={"REMEM_HOOK_CAP_MS": "60000"})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_codex_stop_reads_the_rollouts_last_answer_when_the_payload_has_none(store, tmp_path):
    from remem import config

    seed(store, LESSONS)
    config.set_value("prime.timeout_ms", 30000)
    out = _codex_stop(_rollout(tmp_path / "rollout.jsonl", TURN), session_in_arm(False, "codex"))
    assert out, "nothing shown"
    reply = json.loads(out)
    assert reply["decision"] == "block" and FORCE in reply["reason"]
    # Never an earlier turn's answer: after the person's next prompt, this turn has none yet.
    asked_again = TURN + [_message("user", "now write the release notes")]
    assert _codex_stop(_rollout(tmp_path / "r.jsonl", asked_again), session_in_arm(False, "again")) == ""


def _codex_text(path: Path) -> str:
    from remem.hooks import adapters

    call = adapters.read("codex", "stop", {"session_id": "s", "transcript_path": str(path)})
    return call.text


def test_codex_stop_reads_only_the_rollouts_tail(tmp_path):
    from remem.hooks.adapters import TRANSCRIPT_TAIL

    filler = {"type": "event_msg", "payload": {"type": "token_count", "info": "x" * 1000}}
    answered = [_message("user", "push my branch"), _message("assistant", PUSHED)]
    path = _rollout(tmp_path / "r.jsonl", answered + [filler] * (TRANSCRIPT_TAIL // 1000 + 10))
    assert _codex_text(path) == ""  # its answer lies before the last 256 KB: not read
    path = _rollout(tmp_path / "r2.jsonl", [filler] * (TRANSCRIPT_TAIL // 1000 + 10) + answered)
    assert _codex_text(path) == PUSHED


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                         st.sampled_from(["type", "payload", "role", "content", "text"]), inner, max_size=4),
                     max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(_JSON, max_size=6))
def test_a_rollout_record_of_any_shape_is_skipped_not_fatal(tmp_path_factory, records):
    path = tmp_path_factory.mktemp("r") / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records + [_message("assistant", PUSHED)]) + "\n")
    assert _codex_text(path) == PUSHED
    path.write_text("\n".join(json.dumps(r) for r in [_message("assistant", PUSHED)] + records) + "\n")
    assert isinstance(_codex_text(path), str)
