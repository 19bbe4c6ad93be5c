"""Pushback that reading pasted errors and reports as no pushback had lost.

A system error named at the head of a line took the rest of the line with it as pasted log
("Permission denied again. Don't use sudo, fix the ownership" was no correction); rules that
start "No …" were read as reports when a word of theirs was a thing one sees or a word such as
"at all" came in their first five ("No network calls in unit tests", "No print statements at
all", "No still failing"); and "don't get / think / see …" forbade nothing whatever followed
("Don't get fancy, keep it simple"). What was fixed then stays fixed: a pasted error line and a
report of what the person sees are still no correction (tests/test_detect_pasted_lines.py).

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the real sleep.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import clock, detect
from remem.engine.detect_corrections import prose, pushback
from remem.engine.ingest import ingest_paths
from remem.engine.session import Session, Turn
from tests.test_detect_pasted_lines import HANDBACK, STRERRORS, _transcript
from tests.test_sleep import lessons, run

# What the person says after a hand-back, and the pushback pattern it shows (None: none).
READS = {
    # an error named first, then the person's words on the same line
    "Permission denied again. Don't use sudo, fix the ownership": "don't",
    "Connection refused. I told you the db runs on 5433": "I said",
    "command not found: pnpm. I said use npm": "I said",
    "Module not found again, don't add another alias": "don't",
    "Address already in use, don't kill the process, use another port": "don't",
    "File exists error, don't overwrite it": "don't",
    "bash: pnpm: command not found. Use npm instead": "instead",
    "[Errno 13] Permission denied: '/srv/app'. Never run it as root": "don't",
    # rules that start with "no"
    "No network calls in unit tests": "no",
    "No change to the public API": "no",
    "No emojis anywhere": "no",
    "No print statements at all": "no",
    "No debug output in production": "no",
    "No log statements in the hot loop": "no",
    "No images in the README": "no",
    "No warning suppression, fix the cause": "no",
    "No page reloads, use htmx": "no",
    "No one-letter variable names": "no",
    "No longer than 80 columns": "no",
    "No still failing": "no",
    "No still broken": "no",
    # "don't get / think / see" that forbid or object
    "Don't get fancy, keep it simple": "don't",
    "Don't get clever with the regex": "don't",
    "Don't get the config from env, read the file": "don't",
    "Never get the data from the cache": "don't",
    "Don't think about performance yet": "don't",
    "Don't see why you need a new file, put it in utils": "don't",
    # still no pushback: pasted lines and reports
    "Permission denied, please try again.": None,
    "ssh: connect to host example.com port 22: Connection refused": None,
    "cp: cannot stat 'a.txt': No such file or directory": None,
    "No output": None,
    "No errors at all": None,
    "No change": None,
    "No real difference": None,
    "No one uses it": None,
    "No longer works": None,
    "No page is shown anymore": None,
    "no lessons yet": None,
    "Don't get it": None,
    "Don't get why it fails": None,
    "Don't think so": None,
    "Don't think it works": None,
    "Don't see the error anymore": None,
    "Don't see why it fails": None,
}


def test_pushback_after_a_named_error_and_rules_that_start_with_no_are_read():
    assert {said: pushback(said) for said in READS} == READS


_WHERE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_./-'", min_size=1, max_size=30)
_PROG = st.sampled_from(["", "bash: ", "python3: ", "cp: ", "zsh: "])
_THEN = st.sampled_from([(". Don't use sudo", "don't"), (", don't overwrite the file", "don't"),
                         (". I said use npm", "I said"), ("; never run it as root", "don't"),
                         (". Use the other port instead", "instead"), (". Try again with the venv", "try again")])


@given(phrase=st.sampled_from(STRERRORS), where=_WHERE, prog=_PROG, then=_THEN,
       again=st.sampled_from(["", " again", " still"]))
@settings(max_examples=300, deadline=None)
def test_a_pasted_error_line_then_the_persons_words_keeps_the_correction(phrase, where, prog, then, again):
    words, pattern = then
    for line in (f"{prog}{phrase}: {where}", f"{prog}{where}: {phrase}", f"{phrase} '{where}'"):
        said = f"{line}{again}{words}"
        assert pushback(said) == pattern, said
        own = prose(said)  # the error is left out, the person's words kept
        assert phrase not in own and own.endswith(words.lstrip(".,; ")), (said, own)
        session = Session(id="s", source="claude-code", turns=[
            Turn(role="user", text="set up the project"), Turn(role="assistant", text=HANDBACK),
            Turn(role="user", text=said)])
        assert [f.extra["how"] for f in detect.corrections(session)] == [pattern], said


_RULE_NOUN = st.sampled_from(["network calls", "emojis", "print statements", "debug output", "log statements",
                              "images", "page reloads", "global state", "magic numbers", "warning suppression",
                              "inline styles", "new dependencies", "data migrations", "output files"])
_RULE_TAIL = st.sampled_from(["", " at all", " anywhere", " in production", " in the hot loop", " in the README",
                              " in unit tests", ", fix the cause", ", use htmx", " in commit messages", " please"])


@given(noun=_RULE_NOUN, tail=_RULE_TAIL, case=st.sampled_from(["No", "no"]))
@settings(max_examples=200, deadline=None)
def test_a_rule_that_starts_with_no_is_pushback(noun, tail, case):
    said = f"{case} {noun}{tail}"
    if noun.split()[-1] in ("output", "images") and (tail in ("", " at all", " anywhere") or tail[:1] == ","):
        return  # a thing one sees alone in its clause ("No images at all") is read as a report
    assert pushback(said) == "no", said


def test_the_named_error_messages_make_their_lessons_and_the_pasted_ones_none(store, tmp_path):
    project = tmp_path / "projects" / "-home-u-app"
    project.mkdir(parents=True)
    said = ["Permission denied again. Don't use sudo, fix the ownership",
            "command not found: pnpm. I said use npm",
            "No network calls in unit tests",
            "Don't get the config from env, read the file",
            "No such file or directory: config/settings.yaml",
            "No output at all when I run it"]
    for n, words in enumerate(said, start=1):
        _transcript(project, n, words)
    summary = ingest_paths(store, [project])
    assert summary["errors"] == [] and summary["sessions"] == len(said)
    corrections = sorted(r["title"] for r in store.rows("SELECT title FROM episodes WHERE kind = 'correction'"))
    assert corrections == sorted(said[:4])
    with clock.frozen("2026-03-03T10:00:00Z"):
        run(store)
    active = " ".join(l["text"] for l in lessons(store) if l["status"] == "active")
    for words in ("sudo", "npm", "network calls", "config from env"):
        assert words in active, active
    assert "settings.yaml" not in active and "when I run it" not in active
