"""What an agent's harness writes into the person's message is never read as the person's words.

Claude Code and Codex put background-task notices, hook output, the editor's state, reminders
and skills into user messages as tagged blocks, alone or beside what the person typed. A block
must leave no trace in a user turn, wherever it sits; the person's words around it must all stay,
a tag they only mention included.
"""

from __future__ import annotations

import json
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import codex, detect
from remem.engine.transcripts import clean_user_text, parse_lines

SESSION = "11111111-1111-4111-8111-111111111111"
MARK = "HARNESSMARK"

# Blocks as Claude Code writes them, each carrying MARK where the harness's own words are.
CLAUDE_BLOCKS = (
    "<system-reminder>\nHARNESSMARK Don't use emojis.\n</system-reminder>",
    ("<ide_opened_file>The user opened the file /home/p/app/HARNESSMARK.py in the IDE. This may or "
     "may not be related to the current task.</ide_opened_file>"),
    ("<ide_selection>The user selected the lines 3 to 4 from /home/p/app/log.py:\n```py\n"
     "print('HARNESSMARK')\n```\n\nThis may or may not be related to the current task.</ide_selection>"),
    ("<user-prompt-submit-hook>HARNESSMARK Never push to main. Use pnpm not npm instead."
     "</user-prompt-submit-hook>"),
    ("<task-notification>\n<task-id>b9</task-id>\n<tool-use-id>toolu_1</tool-use-id>\n"
     "<output-file>/tmp/claude-1000/app/tasks/b9.output</output-file>\n<status>failed</status>\n"
     "<summary>Background command \"npm run build\" failed: HARNESSMARK don't retry, read the "
     "output instead</summary>\n</task-notification>\nRead the output file to retrieve the result: "
     "/tmp/claude-1000/app/tasks/HARNESSMARK.output"),
    ("<bash-notification>\n<shell-id>b2</shell-id>\n<status>completed</status>\n<summary>HARNESSMARK"
     "</summary>\n</bash-notification>"),
    "<local-command-stdout>HARNESSMARK</local-command-stdout>",
)
# Blocks whose own text holds fenced code: after a fence the person left open, its closing fence
# is the block's, not theirs.
FENCED_BLOCKS = (
    CLAUDE_BLOCKS[2],
    "<system-reminder>\nThe file was modified:\n```\nHARNESSMARK\n```\n</system-reminder>",
    "<system-reminder>\nHARNESSMARK\n~~~\nx = 1\n~~~\n\n```py\ny = 2\n```\n</system-reminder>",
)
# The tags Claude Code writes into a user message, each of them a block to take out.
CLAUDE_TAGS = ("system-reminder", "task-notification", "bash-notification", "command-name",
               "command-message", "command-args", "local-command-stdout", "local-command-stderr",
               "local-command-caveat", "bash-input", "bash-stdout", "bash-stderr",
               "user-prompt-submit-hook", "session-start-hook", "ide_opened_file", "ide_selection",
               "ide_diagnostics")
# A tag the person only mentions: no closing tag, or quoted as code.
CLAUDE_MENTIONS = ("<system-reminder>", "<task-notification>",
                   "`<ide_selection>…</ide_selection>`", "`<user-prompt-submit-hook>x</user-prompt-submit-hook>`")

CODEX_BLOCKS = (
    "<environment_context>\n  <cwd>/home/p/HARNESSMARK</cwd>\n  <shell>bash</shell>\n</environment_context>",
    ("<skill>\n<name>ship</name>\n<path>/home/p/.codex/skills/ship/SKILL.md</path>\n"
     "HARNESSMARK Never push to main; use the release script instead.\n</skill>"),
    ("<user_shell_command>\n<command>\nls HARNESSMARK\n</command>\n<result>\nExit code: 0\n</result>\n"
     "</user_shell_command>"),
    "<turn_aborted>\nHARNESSMARK The user interrupted the previous turn.\n</turn_aborted>",
    "<image name=[Image #1] path=\"/tmp/HARNESSMARK.png\">\n</image>",
)
CODEX_MENTIONS = ("<skill>", "<image>", "`<environment_context>…</environment_context>`")

_WORD = st.text(alphabet=string.ascii_letters + string.digits + ".,;:!?'\"()-_/=+*", min_size=1, max_size=8)
_GAP = st.sampled_from([" ", " ", " ", "\n", "\n\n", "  "])


@st.composite
def _message(draw: st.DrawFn, blocks: tuple[str, ...], mentions: tuple[str, ...]) -> tuple[str, str]:
    """(the person's text, the same text with harness blocks put in anywhere outside their code)."""
    tokens = draw(st.lists(st.one_of(_WORD, _WORD, _WORD, st.sampled_from(mentions)), min_size=1, max_size=10))
    gaps = [draw(_GAP) for _ in tokens[1:]] + [""]
    person = ""
    free: list[int] = [0]  # offsets where a block may go: not inside a mention or a code span
    for token, gap in zip(tokens, gaps):
        start = len(person)
        person += token
        if not token.startswith(("<", "`")):
            free.extend(range(start + 1, len(person)))  # inside a word, too
        free.append(len(person))
        person += gap
        free.extend(range(len(person) - len(gap) + 1, len(person) + 1))
    # A notice that ends with a line of its own (a background task's "Read the output file…")
    # is followed by a line break or nothing: that line is the harness's to its end.
    line_ends = sorted(o for o in set(free) if o == len(person) or person[o] == "\n")
    inserts = []
    for block in draw(st.lists(st.sampled_from(blocks), min_size=1, max_size=4)):
        where = line_ends if block.endswith(".output") else sorted(set(free))
        inserts.append((draw(st.sampled_from(where)), block))
    injected = person
    for offset, block in sorted(inserts, key=lambda pair: pair[0], reverse=True):
        injected = injected[:offset] + block + injected[offset:]
    return person, injected


@settings(max_examples=300, deadline=None)
@given(_message(CLAUDE_BLOCKS, CLAUDE_MENTIONS))
def test_claude_code_blocks_anywhere_leave_only_the_persons_words(message: tuple[str, str]) -> None:
    person, injected = message
    kept = clean_user_text(injected)
    assert MARK not in kept
    assert kept.split() == person.split()


@settings(max_examples=300, deadline=None)
@given(_message(CODEX_BLOCKS, CODEX_MENTIONS))
def test_codex_blocks_anywhere_leave_only_the_persons_words(message: tuple[str, str]) -> None:
    person, injected = message
    kept = codex.persons_words(injected)
    assert MARK not in kept
    assert kept.split() == person.split()


@settings(max_examples=150, deadline=None)
@given(_message(CLAUDE_BLOCKS, CLAUDE_MENTIONS), st.lists(st.sampled_from(CLAUDE_BLOCKS), max_size=3),
       st.integers(min_value=0, max_value=3), st.booleans())
def test_a_claude_code_user_record_becomes_the_persons_words_alone(message: tuple[str, str], alone: list[str],
                                                                   at: int, as_blocks: bool) -> None:
    """Blocks inside the person's text block, and whole text blocks of harness beside it."""
    person, injected = message
    texts = list(alone)
    texts.insert(min(at, len(texts)), injected)
    content: Any = [{"type": "text", "text": t} for t in texts] if as_blocks else "\n\n".join(texts)
    (turn,) = parse_lines([_record(content)]).user_turns()
    assert MARK not in turn.text
    assert turn.text.split() == person.split()


@st.composite
def _after_an_open_fence(draw: st.DrawFn) -> tuple[str, str]:
    """(the person's text with a fence they never closed, the same text with harness blocks put in
    anywhere after that fence, one of them at least carrying fenced code of its own)."""
    before = " ".join(draw(st.lists(_WORD, min_size=1, max_size=3)))
    fence = draw(st.sampled_from(["```", "```py", "````", "~~~"]))
    person = before + ":\n" + fence + "\n"
    free = [len(person)]
    for word in draw(st.lists(_WORD, max_size=6)):
        person += word
        free.extend(range(len(person) - len(word) + 1, len(person) + 1))
        person += draw(_GAP)
        free.append(len(person))
    plain = tuple(block for block in CLAUDE_BLOCKS if not block.endswith(".output"))  # see _message
    blocks = [draw(st.sampled_from(FENCED_BLOCKS)),
              *draw(st.lists(st.sampled_from(plain + FENCED_BLOCKS), max_size=2))]
    injected = person
    inserts = [(draw(st.sampled_from(free)), block) for block in blocks]
    for offset, block in sorted(inserts, key=lambda pair: pair[0], reverse=True):
        injected = injected[:offset] + block + injected[offset:]
    return person.rstrip(), injected


@settings(max_examples=300, deadline=None)
@given(_after_an_open_fence())
def test_blocks_after_a_fence_the_person_left_open_are_taken_out_even_holding_code(message: tuple[str, str]) -> None:
    """A fence the person opened and never closed quotes nothing: the fence a block holds closes
    theirs only by accident, and the block is still the harness's."""
    person, injected = message
    kept = clean_user_text(injected)
    assert MARK not in kept
    assert kept.split() == person.split()


@pytest.mark.parametrize("blocks", [*FENCED_BLOCKS, FENCED_BLOCKS[1] + "\n" + FENCED_BLOCKS[0],
                                    FENCED_BLOCKS[0] + FENCED_BLOCKS[2] + CLAUDE_BLOCKS[0]])
def test_a_block_holding_code_after_a_pasted_traceback_left_open_is_taken_out(blocks: str) -> None:
    text = "it fails:\n```\nTraceback (most recent call last)\n" + blocks
    assert clean_user_text(text) == "it fails:\n```\nTraceback (most recent call last)"


@pytest.mark.parametrize("tag", CLAUDE_TAGS)
def test_every_tag_claude_code_writes_is_taken_out(tag: str) -> None:
    assert clean_user_text(f"fix it <{tag}>HARNESSMARK</{tag}> now") == "fix it now"


@pytest.mark.parametrize("html", [
    "<command-palette>Open</command-palette>", "<my-custom-hook>content</my-custom-hook>",
    "<pre-commit-hook>x</pre-commit-hook>", "<bash-prompt>$</bash-prompt>",
    "<local-command-list>a</local-command-list>", "<ide_panel>left</ide_panel>",
])
def test_pasted_html_of_other_tags_stays_the_persons(html: str) -> None:
    """Only the tags Claude Code writes are its: a custom element the person pasted is their words."""
    text = f"Here is the html: {html} make it blue"
    assert clean_user_text(text) == text


@pytest.mark.parametrize("block", CLAUDE_BLOCKS)
def test_a_claude_code_record_of_harness_blocks_alone_is_no_user_turn(block: str) -> None:
    as_blocks = [{"type": "text", "text": block}, {"type": "text", "text": CLAUDE_BLOCKS[0]}]
    assert parse_lines([_record(block), _record(as_blocks, n=1)]).user_turns() == []


@pytest.mark.parametrize("text", [
    "why does <system-reminder> show up in my prompts? it should not",
    "the parser drops `<ide_selection>…</ide_selection>` blocks, keep them",
    "```\n<task-notification>\n<status>failed</status>\n</task-notification>\n```\nwhere does this come from?",
    "a </system-reminder> closing tag alone, then <system-reminder> an opening one",
    # both tags quoted, each in code of its own: the first code's close is no block's
    "wrap it like this:\n```\n<system-reminder>\n```\nand close it with:\n```\n</system-reminder>\n```\nok?",
    "The hook's output starts:\n```\n<user-prompt-submit-hook>\n```\nand ends `</user-prompt-submit-hook>`.",
    "`<system-reminder>` opens it and `</system-reminder>` closes it",
])
def test_a_tag_the_person_mentions_or_quotes_keeps_their_words(text: str) -> None:
    assert clean_user_text(text) == text


def test_removing_a_block_keeps_the_persons_lines_apart_and_their_indentation() -> None:
    text = "look at this\n\n" + CLAUDE_BLOCKS[2] + "\n\n    x = compute()\nthen fix it" + CLAUDE_BLOCKS[0]
    assert clean_user_text(text) == "look at this\n\n    x = compute()\nthen fix it"
    assert clean_user_text("fix it <system-reminder>be brief</system-reminder> now") == "fix it now"
    # a fence the person left open quotes nothing: the reminder after it is still the harness's
    assert clean_user_text("it fails:\n```\nTraceback\n" + CLAUDE_BLOCKS[0]) == "it fails:\n```\nTraceback"


# Messages built to make a backtracking reader take time quadratic in their length (a megabyte
# each: transcripts run to many). Each text is built in the child from its expression.
_ADVERSARIAL = {
    "fence lines never closed, a block after": '"```a\\n" * 200_000 + BLOCK',
    "fences of every length never closed": '"".join("`" * k + "a\\n" for k in range(3, 1400)) + BLOCK',
    "fence pairs, a block after": '"```\\n" * 250_000 + BLOCK',
    "fences each closed inside a block": '"```a\\n<system-reminder>\\n```\\n</system-reminder>\\n" * 22_000',
    "a fence before each block": '("```\\n" + BLOCK + "\\n") * 25_000',
    "backticks, a block after": '"`a" * 500_000 + BLOCK',
    "one tag opened again and again": '"<system-reminder>" * 60_000 + "</system-reminder>"',
    "a closing tag, then openings": '"</system-reminder>" + "<skill>" * 60_000 + "<system-reminder>" * 60_000',
    "notices padded with spaces": '("<task-notification>x</task-notification>" + " " * 100) * 7_000',
    "empty image placeholders never closed": '"<image>" * 140_000 + "</image>"',
}
_TIMING_CHILD = """
from remem.engine.codex import persons_words
from remem.engine.transcripts import clean_user_text
BLOCK = "<system-reminder>x</system-reminder>"
for name, expression in {cases!r}.items():
    text = eval(expression)
    clean_user_text(text)
    persons_words(text)
    print(name, flush=True)
"""


def test_no_message_makes_reading_take_quadratic_time() -> None:
    """Not a timing assertion: the texts take well under a second each read in linear time, and
    hours quadratically; the child is stopped only when reading them takes a minute."""
    child = _TIMING_CHILD.format(cases=_ADVERSARIAL)
    try:
        done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                              timeout=60, check=False)
    except subprocess.TimeoutExpired as stopped:
        read = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else stopped.stdout or ""
        pytest.fail(f"still reading after a minute; read in time: {read.splitlines()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == list(_ADVERSARIAL)


# --------------------------------------------------------------------------- what detection sees

def test_a_background_task_notice_after_an_interrupt_is_not_a_correction() -> None:
    s = parse_lines([
        _record("start the dev server in the background"),
        _assistant("Starting it.", n=1),
        _record([{"type": "text", "text": "[Request interrupted by user]"}], n=2),
        _record(CLAUDE_BLOCKS[4], n=3),
        _assistant("The dev server was stopped.", n=4),
    ])
    assert [t.text for t in s.user_turns()] == ["start the dev server in the background", ""]
    assert detect.corrections(s) == []


@pytest.mark.parametrize("notice", [CLAUDE_BLOCKS[4], CLAUDE_BLOCKS[3]])
def test_a_task_notice_or_hook_output_after_a_hand_back_is_not_pushback(notice: str) -> None:
    s = parse_lines([
        _record("run the build in the background"),
        _assistant("The build is running in the background.", n=1),
        _record(notice, n=2),
        _assistant("The build failed.", n=3),
    ])
    assert [t.text for t in s.user_turns()] == ["run the build in the background"]
    assert detect.corrections(s) == []


def test_pushback_after_the_editors_state_is_a_correction() -> None:
    s = parse_lines([
        _record("add a logger"),
        _assistant("Added a logger with print statements.", n=1),
        _record([{"type": "text", "text": CLAUDE_BLOCKS[1]},
                 {"type": "text", "text": "no, use the logging module not print"}], n=2),
        _assistant("Switched to logging.", n=3),
    ])
    assert [t.text for t in s.user_turns()] == ["add a logger", "no, use the logging module not print"]
    (found,) = detect.corrections(s)
    assert found.text == "no, use the logging module not print"


def test_codex_ide_context_and_a_skill_are_not_the_persons_words(tmp_path: Path) -> None:
    ide = ("# Context from my IDE setup:\n\n## Active file: src/log.py\n\n## Open tabs:\n- log.py: src/log.py\n\n"
           "## My request for Codex:\nno, use the logging module not print")
    path = tmp_path / "rollout-2026-11-20T10-00-00-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.jsonl"
    path.write_text("\n".join([
        _codex_message("user", [CODEX_BLOCKS[0], "add a logger"]),
        _codex_message("assistant", ["Added a logger with print statements."]),
        _codex_message("user", ["<image name=[Image #1]>", "</image>", ide]),
        _codex_message("assistant", ["Switched to logging."]),
        _codex_message("user", [CODEX_BLOCKS[1]]),
        _codex_message("assistant", ["Shipped."]),
    ]) + "\n")
    s = codex.parse_rollout(path)
    assert [t.text for t in s.user_turns()] == ["add a logger", "no, use the logging module not print"]
    (found,) = detect.corrections(s)
    assert found.text == "no, use the logging module not print"


def test_codex_event_copies_lose_the_same_blocks(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-11-20T10-00-00-aaaaaaaa-bbbb-cccc-dddd-dddddddddddd.jsonl"
    path.write_text("\n".join([
        _codex_line("event_msg", {"type": "user_message", "message": CODEX_BLOCKS[1] + "\nship it"}),
        _codex_line("event_msg", {"type": "agent_message", "message": "Shipped."}),
    ]) + "\n")
    assert [t.text for t in codex.parse_rollout(path).user_turns()] == ["ship it"]


# --------------------------------------------------------------------------- helpers

def _record(content: Any, n: int = 0) -> str:
    return json.dumps({"type": "user", "uuid": f"u-{n}", "sessionId": SESSION, "cwd": "/home/p/app",
                       "timestamp": f"2026-03-01T10:00:{n:02d}.000Z",
                       "message": {"role": "user", "content": content}}) + "\n"


def _assistant(text: str, n: int) -> str:
    return json.dumps({"type": "assistant", "uuid": f"a-{n}", "sessionId": SESSION, "cwd": "/home/p/app",
                       "timestamp": f"2026-03-01T10:00:{n:02d}.000Z",
                       "message": {"id": f"msg-{n}", "role": "assistant", "model": "claude-opus-4-6",
                                   "content": [{"type": "text", "text": text}]}}) + "\n"


def _codex_line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": "2026-11-20T10:00:00.000Z", "type": kind, "payload": payload})


def _codex_message(role: str, texts: list[str]) -> str:
    part = "input_text" if role == "user" else "output_text"
    return _codex_line("response_item", {"type": "message", "role": role,
                                         "content": [{"type": part, "text": t} for t in texts]})
