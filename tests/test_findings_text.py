"""How findings are worded: no secret kept, no Markdown or half word quoted, the useful error
line, and the agent's words from the right moment. Small hand-made fixtures only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from remem.engine import detect
from remem.engine.codex import parse_rollout
from remem.engine.detect_common import Finding, plain, quote, redacted_head, shorten
from remem.engine.redaction import redact_secrets
from remem.engine.session import Session, ToolCall, Turn
from tests.test_detect import convo as detect_convo

KEY = "sk-proj-AbCdEfGh1234IjKlMnOp5678QrStUvWxabcd"
GH = "ghp_1234567890abcdefghijABCDEFGHIJ0123"


def convo(*turns: Turn | str) -> Session:
    return detect_convo(*turns, source="codex", cwd="/home/dev/shop")


def bash(command: str, result: str = "", is_error: bool = False) -> ToolCall:
    return ToolCall(id=f"c{abs(hash((command, result))) % 10**6}", name="Bash",
                    input={"command": command}, result=result, is_error=is_error)


# --------------------------------------------------------------------------- a Codex rollout

def _rollout(tmp_path: Path, records: list[dict]) -> Path:
    sid = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    lines = [{"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
              "payload": {"id": sid, "cwd": "/home/dev/shop", "originator": "codex_cli_rs"}}]
    for n, payload in enumerate(records):
        kind = "event_msg" if payload.get("type") == "turn_aborted" else "response_item"
        lines.append({"timestamp": f"2026-03-01T10:00:{n + 1:02d}.000Z", "type": kind, "payload": payload})
    path = tmp_path / f"rollout-2026-03-01T10-00-00-{sid}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _say(role: str, text: str) -> dict:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _shell(call_id: str, command: str, output: str) -> list[dict]:
    return [{"type": "function_call", "name": "shell", "call_id": call_id,
             "arguments": json.dumps({"command": ["bash", "-lc", command]})},
            {"type": "function_call_output", "call_id": call_id, "output": output}]


def _stale_reply_rollout(tmp_path: Path) -> Path:
    """Asked; the agent replies and offers to commit; the person pushes back; the agent only
    runs commands; the person stops it and redirects it."""
    return _rollout(tmp_path, [
        _say("user", "Update the rows fixture for the new column"),
        _say("assistant", "I added the column to every row. Shall I commit this?"),
        _say("user", "no, don't commit yet: regenerate the fixture from the schema first"),
        *_shell("c1", "python scripts/regen.py", "Exit code: 0\nOutput:\nwrote 40 files\n"),
        *_shell("c2", "git status --short", "Exit code: 0\nOutput:\n M tests/fixtures/a.json\n"),
        {"type": "turn_aborted", "reason": "interrupted"},
        _say("user", "wait, only edit tests/fixtures/rows.json, leave the other fixtures alone"),
    ])


def _secret_rollout(tmp_path: Path) -> Path:
    return _rollout(tmp_path, [
        _say("user", f"my token is {KEY} - use it to call the staging API"),
        _say("assistant", "Done: the staging API answers."),
        _say("user", f"no, don't paste {KEY} into the config, read it from the env"),
        *_shell("c1", "gh auth status",
                f"Exit code: 1\nOutput:\nerror: bad credentials for token {GH}\n"),
    ])


def test_a_secret_in_a_codex_session_is_stored_nowhere(tmp_path: Path, store) -> None:
    from remem.engine.ingest import ingest_paths

    summary = ingest_paths(store, [_secret_rollout(tmp_path)], source="codex")
    assert summary["errors"] == [] and summary["episodes"] >= 3
    rows = store.rows("SELECT kind, title, gist, detail FROM episodes")
    assert {r["kind"] for r in rows} >= {"session", "correction", "error"}
    for row in rows:
        for field in ("title", "gist", "detail"):
            value = row[field] or ""
            assert KEY not in value and "sk-proj-" not in value, (row["kind"], field, value)
            assert "ghp_" not in value, (row["kind"], field, value)  # not even its first half
    offers = store.scalar("SELECT offers FROM sessions")
    assert KEY not in (offers or "")
    session = next(r for r in rows if r["kind"] == "session")
    assert "my token is [secret]" in session["title"] and "[secret]" in session["gist"]


def test_redacted_findings_keep_their_ids_on_every_read(tmp_path: Path) -> None:
    from remem.engine.session_episodes import episodes_of

    path = _secret_rollout(tmp_path)
    first = [(e["id"], e["title"]) for e in episodes_of(parse_rollout(path))]
    again = [(e["id"], e["title"]) for e in episodes_of(parse_rollout(path))]
    assert first == again and any("[secret]" in title for _, title in first)


def test_an_error_line_is_redacted_before_it_is_cut() -> None:
    result = f"fatal: could not read Username: token {GH} rejected by the remote server after retrying"
    s = convo("u:push it", Turn(role="assistant", tool_calls=[bash("git push", result, is_error=True)]))
    (err,) = detect.errors(s)
    assert "ghp_" not in err.title and "ghp_" not in err.detail and "ghp_" not in err.text
    assert "[secret]" in err.title


def test_every_finding_is_redacted_where_it_is_made() -> None:
    f = Finding(kind="correction", title=f"use {KEY}", text=f"no, use {KEY}", detail=f"said {KEY}")
    assert KEY not in f"{f.title}{f.text}{f.detail}" and f.title == "use [secret]"


def test_a_key_straddling_the_cut_of_a_detail_is_redacted() -> None:
    text = "x" * 3990 + " " + GH + " tail"
    head = redacted_head(text, 4000)
    assert "ghp_" not in head and head == redact_secrets(text)[:4000]


# Texts made of words, code, keys and the names secrets go by.
_PIECES = st.sampled_from([
    "password", "token", "pwd", "secret", "api_key", "Bearer", "aws_secret_access_key", "AKIA",
    "sk-", "proj-", "ghp_", "=", ":", " ", "  ", "\n", "'", '"', "…", "@", "://", "$", "(", "[",
    "/home/me", "abcdefgh", "ABCDEFGHIJKLMNOP", "0123456789", "x", "Q", "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----", "eyJhbGciOiJI", ".", "[secret]",
    # whole keys, standing apart as keys do (a key glued to a word is not one the patterns know)
    f" {GH} ", f" {KEY} ", " AKIAIOSFODNN7EXAMPLE ",
])
_TEXTS = st.lists(_PIECES, max_size=25).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
@example("password=-----BEGIN RSA PRIVATE KEY----------END RSA PRIVATE KEY-----password")
def test_redacting_twice_is_redacting_once(text: str) -> None:
    once = redact_secrets(text)
    assert redact_secrets(once) == once
    assert GH not in once and KEY not in once and "AKIAIOSFODNN7EXAMPLE" not in once


@settings(max_examples=300, deadline=None)
@given(_TEXTS, st.integers(min_value=1, max_value=80))
def test_a_redacted_head_is_the_head_of_the_redacted_text(text: str, width: int) -> None:
    assert redacted_head(text, width) == redact_secrets(text)[:width]


@settings(max_examples=300, deadline=None)
@given(_TEXTS, st.integers(min_value=2, max_value=120))
def test_a_shortened_text_holds_no_secret_and_shortens_once(text: str, width: int) -> None:
    cut = shorten(text, width)
    assert len(cut) <= width and shorten(cut, width) == cut
    for secret in (GH, KEY, "AKIAIOSFODNN7EXAMPLE"):
        assert secret[:12] not in cut


@pytest.mark.parametrize("text", [
    "HEAD is now at 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fix the cart",
    "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "see /home/dev/shop/src/cart/total_price_calculator.py:41",
    "PWD=/home/marco/projects/spotter",
    "pwd: /tmp/build/output",
    'token = os.getenv("GITHUB_TOKEN")',
    "password = request.form['password']",
    "api_key=$OPENAI_API_KEY and TOKEN=${GH_TOKEN}",
    "token: string;",
    "password: <your-password>",
    'data = "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=" and b64 dGVzdA==',
    "the task-list-item-highlighted class and max_tokens=4096",
    "git@github.com:dev/shop.git and https://example.com:8080/path",
])
def test_ordinary_text_is_not_redacted(text: str) -> None:
    assert redact_secrets(text) == text
    assert shorten(text, 200) == text


@pytest.mark.parametrize("text, redacted", [
    ("password=hunter2222 works", "password=[secret] works"),
    (f"my token is {KEY}", "my token is [secret]"),
    (f"token: {GH}", "token: [secret]"),
    ("export OPENAI_API_KEY=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e", "export OPENAI_API_KEY=[secret]"),
    ("postgres://app:s3cretpw@db.internal/app", "postgres://[secret]@db.internal/app"),
    ("password=abcdefg…", "password=[secret]…"),
    ("password=abcde… more", "password=abcde… more"),  # a cut short word, not a password
])
def test_secrets_are_redacted_and_their_labels_kept(text: str, redacted: str) -> None:
    assert redact_secrets(text) == redacted


# --------------------------------------------------------------------------- shorten

_WORDS = st.lists(st.text(alphabet="abcxyz.,;:()", min_size=1, max_size=40), min_size=1, max_size=30)


@settings(max_examples=500, deadline=None)
@given(_WORDS, st.integers(min_value=2, max_value=160), st.sampled_from([" ", "  ", "\n", " \t "]))
def test_shorten_fits_cuts_between_words_and_is_idempotent(words: list[str], width: int, sep: str) -> None:
    text = sep.join(words)
    flat = " ".join(text.split())
    cut = shorten(text, width)
    assert len(cut) <= width
    assert shorten(cut, width) == cut
    if cut == flat:
        return
    assert cut.endswith("…")
    head = cut[:-1]
    assert flat.startswith(head)
    rest = flat[len(head):]
    if rest.lstrip(",;:").startswith(" ") or not rest.strip(",;:"):
        return  # cut between two words
    # Cut inside a word: only a huge one (longer than half the room), never an ordinary word.
    start = flat.rfind(" ", 0, len(head)) + 1
    end = flat.find(" ", len(head))
    word = flat[start:] if end < 0 else flat[start:end]
    assert len(word) > (width - 1) // 2, (cut, word)


@pytest.mark.parametrize("text, width, expected", [
    (("/handgemacht:create-beads websearch to learn how to fastest setup credo, dialyzer, "
      "mix_audit (basically all supported by https://github.com/x"), 110,
     "/handgemacht:create-beads websearch to learn how to fastest setup credo, dialyzer, mix_audit (basically all…"),
    ('find . -name "*.json" -o -name "*.md" -o -name "*.js" -o -name "*.ts"', 60,
     'find . -name "*.json" -o -name "*.md" -o -name "*.js" -o…'),
    ("The file includes placeholders for common commands and architecture information.", 75,
     "The file includes placeholders for common commands and architecture…"),
    ("python3 /tmp/claude-1000/-home-marco-projects-spotter/tasks/b4e1/output.txt", 60,
     "python3 /tmp/claude-1000/-home-marco-projects-spotter/tasks…"),  # a huge word: cut in it
    ("short enough", 20, "short enough"),
])
def test_shorten_examples(text: str, width: int, expected: str) -> None:
    assert shorten(text, width) == expected


# --------------------------------------------------------------------------- Markdown

BEADS = """## Beads Created

Epic `spotter-0p7`: Setup Code Quality Tools (Credo, Dialyxir, mix_audit)

| Bead ID | Task | Depends On |
|---------|------|-----------|
| spotter-0p7.1 | Install quality tools and configure Credo | — |
| spotter-0p7.2 | Add mix quality alias | spotter-0p7.1 |

Run `bd ready` to see what is ready.
"""
PLAN = """Good. Let me write the plan for your approval.

## Proposed Beads

### Epic: Setup Code Quality Tools

**Description:**
> ## Problem
> Spotter has no automated code quality checks.

```elixir
mix credo --strict
```
---
~~old~~ *new* plan
"""


def test_a_quote_of_the_agent_has_no_markdown_structure() -> None:
    assert quote(BEADS, 300) == (
        "Beads Created: Epic `spotter-0p7`: Setup Code Quality Tools (Credo, Dialyxir, mix_audit) "
        "Bead ID, Task, Depends On; spotter-0p7.1, Install quality tools and configure Credo, —; "
        "spotter-0p7.2, Add mix quality alias, spotter-0p7.1; Run `bd ready` to see what is ready.")
    assert quote(PLAN, 300) == (
        "Good. Let me write the plan for your approval. Proposed Beads: Epic: Setup Code Quality Tools: "
        "Description: Problem: Spotter has no automated code quality checks. mix credo --strict old new plan")


@pytest.mark.parametrize("text", [
    "call `**kwargs**` and `a | b` as is",
    "the __init__.py of my_package_name",
    "glob src/*/test/*.py and a*b*c and 2 * 3 * 4",
    "* a bullet item",
    "- a dash item",
    "#hashtag and issue #12",
    "x = a if b else c  # a comment",
])
def test_ordinary_text_and_code_keep_their_characters(text: str) -> None:
    assert plain(text) == text


_MD = st.lists(st.sampled_from([
    "#", "## ", "> ", "|", " | ", "---", "```", "~~~", "**", "*", "~~", "_", "`", "word", "x",
    "a*b", " ", "\n", ":", "-", "__init__", "Title", "1.", "…",
]), max_size=30).map("".join)


@settings(max_examples=500, deadline=None)
@given(_MD)
def test_plain_is_idempotent_and_leaves_no_line_marks(text: str) -> None:
    once = plain(text)
    assert plain(once) == once
    for line in once.splitlines():
        assert not re.match(r"#{1,6}(\s|$)|>|```|~~~", line), line
        assert not (line.startswith("|") and line.count("|") >= 2), line


@settings(max_examples=300, deadline=None)
@given(_MD, st.integers(min_value=2, max_value=200))
def test_a_quote_fits_and_quotes_once(text: str, width: int) -> None:
    q = quote(text, width)
    assert len(q) <= width and "\n" not in q


def test_a_long_reply_is_quoted_from_its_start_only() -> None:
    reply = "## Summary\n" + "\n".join(f"| row {n} | value {n} |" for n in range(20000))
    q = quote(reply, 120)
    assert q.startswith("Summary: row 0, value 0; row 1, value 1;") and q.endswith("…") and len(q) <= 120


# --------------------------------------------------------------------------- error lines

def test_an_error_line_that_leads_in_comes_with_the_next_line() -> None:
    result = ("InputValidationError: Task failed due to the following issue:\n"
              "The required parameter `prompt` is missing")
    task = ToolCall(id="t1", name="Task", input={"description": "x"}, result=result, is_error=True)
    (err,) = detect.errors(convo("u:go", Turn(role="assistant", tool_calls=[task])))
    assert err.title == ("Task failed: InputValidationError: Task failed due to the following issue: "
                         "The required parameter `prompt` is missing")


def test_a_lead_in_line_with_nothing_after_it_stays_as_it_is() -> None:
    call = bash("make", "make: *** No rule to make target 'all'. Stop.\nThe following targets failed:", True)
    (err,) = detect.errors(convo("u:build", Turn(role="assistant", tool_calls=[call])))
    assert err.title.startswith("Bash failed: make: *** No rule to make target")


def test_a_lead_in_matched_by_its_class_takes_the_next_line() -> None:
    result = "Exit code 1\nE: Unable to locate package foo\nPermission denied while opening these files:\n/etc/apt/x"
    call = bash("apt install foo", result, True)
    (err,) = detect.errors(convo("u:install", Turn(role="assistant", tool_calls=[call])))
    assert err.title == "Bash permission denied: Permission denied while opening these files: /etc/apt/x"


# --------------------------------------------------------------------------- the agent's words

def test_a_correction_quotes_only_what_the_agent_said_since_the_last_message(tmp_path: Path) -> None:
    s = parse_rollout(_stale_reply_rollout(tmp_path))
    first, second = detect.corrections(s)
    assert "The agent said: I added the column to every row. Shall I commit this?" in first.detail
    assert second.text.startswith("wait, only edit tests/fixtures/rows.json")
    assert "Shall I commit" not in second.detail
    assert ("The agent only made tool calls: shell: python scripts/regen.py; shell: git status --short"
            in second.detail)


def test_a_correction_quotes_the_agents_words_after_the_last_message() -> None:
    s = convo("u:fix the cart", "a:**Done.** Shall I push?", "u:no, first run the tests",
              Turn(role="assistant", text="## Running\nRunning the tests now.", tool_calls=[bash("make test")]),
              "!", "u:wait, use pnpm not npm")
    first, second = detect.corrections(s)
    assert "The agent said: Done. Shall I push?" in first.detail
    assert "The agent said: Running: Running the tests now." in second.detail
    assert "Shall I push" not in second.detail


def test_a_correction_with_no_agent_turn_since_quotes_no_agent() -> None:
    s = convo("u:fix the cart", "a:Shall I push?", "u:hold on", "!", "u:no, use the staging branch")
    (found,) = [c for c in detect.corrections(s) if c.text.startswith("no, use")]
    assert "The agent" not in found.detail


def test_a_surprise_said_by_the_agent_is_quoted_without_markdown() -> None:
    s = convo("u:why is it slow", "a:## Findings\n**Interestingly**, the cache was never hit.")
    (found,) = detect.surprises(s)
    assert found.title == found.text == "Interestingly, the cache was never hit."
    assert found.detail == "The agent said: Findings: Interestingly, the cache was never hit."
