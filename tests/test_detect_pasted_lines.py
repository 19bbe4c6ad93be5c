"""What the person pasted or reported after a hand-back is no pushback, and a huge failed
output is read at its ends.

After "I set up the project. Anything else?", a bare error line ("No such file or directory:
config/settings.yaml", "No module named 'yaml'"), a report ("No output at all when I run it")
and "Don't know why but the page is blank now" were stored as corrections and the sleep made
each an active lesson. A failed command that printed 20 MB on one line had every full line
searched by the error patterns.

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the real sleep.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import clock, detect
from remem.engine.detect_common import SCAN_EDGE
from remem.engine.detect_corrections import pushback
from remem.engine.detect_errors import LINE_EDGE, _error_line, _line_of, _scanned, error_class
from remem.engine.ingest import ingest_paths
from remem.engine.session import Session, ToolCall, Turn
from tests.test_sleep import lessons, run

HANDBACK = "I set up the project. Anything else?"

# What the person says after a hand-back, and the pushback pattern it shows (None: none).
READS = {
    # pasted lines, as programs print them
    "No such file or directory: config/settings.yaml": None,
    "No module named 'yaml'": None,
    "/usr/bin/python3: No module named pytest": None,
    "bash: pnpm: command not found": None,
    "Permission denied (publickey).": None,
    "Error: Cannot find module 'express'": None,
    "npm ERR! missing script: deploy": None,
    "curl: (7) Failed to connect to localhost port 3000: Connection refused": None,
    # reports of what the person sees
    "No output at all when I run it": None,
    "No response from the server": None,
    "No luck": None,
    "No tests ran": None,
    "No build output either": None,
    "No data shows up on the dashboard": None,
    "Don't know why but the page is blank now": None,
    "Don't see any output": None,
    "don't understand why it fails": None,
    "Never got it working on my laptop": None,
    # still pushback: a "no" that answers, a prohibition
    "no": "no",
    "No. Put it in the header": "no",
    "no!": "no",
    "no - the other one": "no",
    "no the other file": "no",
    "no I meant the staging config": "no",
    "no use pnpm": "no",
    "no it still fails": "no",
    "nope wrong file": "no",
    "No sudo. Use --user.": "no",
    "No emojis in commit messages": "no",
    "No more console.log calls in production code": "no",
    "Don't get rid of the logging": "don't",
    "Never push to main": "don't",
    "bash: pnpm: command not found\nuse npm here instead": "instead",
}


def test_pasted_lines_and_reports_are_no_pushback_prohibitions_still_are():
    assert {said: pushback(said) for said in READS} == READS


STRERRORS = ["No such file or directory", "No module named", "Permission denied", "command not found",
             "Cannot find module", "Connection refused", "Is a directory", "Operation not permitted",
             "No space left on device", "Address already in use"]
_PATH = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_./-'", min_size=1, max_size=40)


@given(phrase=st.sampled_from(STRERRORS), where=_PATH, prog=st.sampled_from(["", "bash: ", "python3: ", "cp: "]))
@settings(max_examples=200, deadline=None)
def test_an_error_line_pasted_alone_is_no_correction(phrase, where, prog):
    for line in (f"{prog}{phrase}: {where}", f"{prog}{where}: {phrase}", f"{phrase} '{where}'"):
        session = Session(id="s", source="claude-code", turns=[
            Turn(role="user", text="set up the project"), Turn(role="assistant", text=HANDBACK),
            Turn(role="user", text=line)])
        assert detect.corrections(session) == [], line


SID = "77777777-7777-4777-8777-{:012d}"


def _record(kind: str, sid: str, n: int, content) -> dict:
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/u/app",
            "sessionId": sid, "version": "2.1.38", "type": kind, "uuid": f"{sid[:-4]}{n:04d}",
            "timestamp": f"2026-03-01T10:00:{n:02d}.000Z", "message": content}


def _transcript(folder: Path, n: int, said: str) -> None:
    sid = SID.format(n)
    records = [
        _record("user", sid, 1, {"role": "user", "content": "set up the project"}),
        _record("assistant", sid, 2, {"id": f"msg_{n}a", "type": "message", "role": "assistant", "model": "claude",
                                      "content": [{"type": "text", "text": HANDBACK}]}),
        _record("user", sid, 3, {"role": "user", "content": said}),
        _record("assistant", sid, 4, {"id": f"msg_{n}b", "type": "message", "role": "assistant", "model": "claude",
                                      "content": [{"type": "text", "text": "Ok."}]}),
    ]
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_pasted_errors_and_reports_make_no_correction_nor_lesson(store, tmp_path):
    """The reviewer's four messages, ingested and slept on: no correction, no lesson; a real
    pushback beside them still makes its lesson."""
    project = tmp_path / "projects" / "-home-u-app"
    project.mkdir(parents=True)
    pasted = ["No such file or directory: config/settings.yaml", "No module named 'yaml'",
              "No output at all when I run it", "Don't know why but the page is blank now"]
    for n, said in enumerate(pasted + ["no, use pnpm here, not npm"], start=1):
        _transcript(project, n, said)
    summary = ingest_paths(store, [project])
    assert summary["errors"] == [] and summary["sessions"] == 5
    corrections = [r["title"] for r in store.rows("SELECT title FROM episodes WHERE kind = 'correction'")]
    assert corrections == ["no, use pnpm here, not npm"]
    with clock.frozen("2026-03-03T10:00:00Z"):
        run(store)
    active = [l["text"] for l in lessons(store) if l["status"] == "active"]
    assert len(active) == 1 and "pnpm" in active[0], active
    assert not any(word in " ".join(active) for word in ("settings.yaml", "yaml'", "output", "blank"))


# --------------------------------------------------------------------------- a huge failed output

def _failed(result: str) -> Session:
    call = ToolCall(id="c1", name="Bash", input={"command": "make build"}, result=result, is_error=True)
    return Session(id="s", source="claude-code", turns=[Turn(role="user", text="build it"),
                                                        Turn(role="assistant", tool_calls=[call])])


def test_a_huge_failed_output_is_read_at_its_ends_and_each_line_at_its_start():
    one_line = "x" * (3 * 2**20)  # a minified bundle printed whole, on one line
    assert len(_error_line(one_line + "\nExit code 1", "other")) <= LINE_EDGE
    noise = "".join(f"compiling module {n} of 90000\n" for n in range(90_000))
    at_end = noise + "ModuleNotFoundError: No module named 'yaml'\nExit code 1"
    at_start = "error: linker `cc` not found\n" + noise + "Exit code 1"
    assert len(at_end) > 2 * SCAN_EDGE and len(at_start) > 2 * SCAN_EDGE
    assert [f.title for f in detect.errors(_failed(at_end))] == ["Bash module not found: ModuleNotFoundError: "
                                                                  "No module named 'yaml'"]
    assert [f.title.split(": ", 1)[1] for f in detect.errors(_failed(at_start))] == ["error: linker `cc` not found"]
    wide = "FAILED tests/test_app.py::test_home - " + "AssertionError: " + "y" * (5 * 2**20)
    found = detect.errors(_failed(wide + "\nExit code 1"))
    assert [f.extra["class"] for f in found] == ["test_failure"]
    assert found[0].title.startswith("Bash tests failed: FAILED tests/test_app.py::test_home - AssertionError")


def _before(text: str, cls: str) -> str:
    """_error_line as it read every output whole."""
    return _line_of(text, cls)


_LINES = st.sampled_from([
    "Traceback (most recent call last):", '  File "app.py", line 3, in <module>', "    import yaml",
    "ModuleNotFoundError: No module named 'yaml'", "bash: pnpm: command not found", "FAIL", "1 failed, 3 passed",
    "--- FAIL: TestSum (0.00s)", "    sum_test.go:12: got 4, want 3", "usage: prog [-h]",
    "prog: error: unrecognized arguments: --dry", "Task failed due to the following issue:",
    "Exit code 1", "-----", "", "   ", "Permission denied", "Connection refused", "KeyError: 'amount'",
])


@given(st.lists(st.one_of(_LINES, st.text(max_size=200)), max_size=60), st.sampled_from(
    ["other", "module_not_found", "test_failure", "command_not_found", "syntax_type_error", "network"]))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_an_output_under_the_caps_reads_as_before(lines, cls):
    text = "\n".join(lines)
    assert len(text) <= 2 * SCAN_EDGE and all(len(ln) <= LINE_EDGE for ln in text.splitlines())
    assert _scanned(text) == text
    assert _error_line(text, cls) == _before(text, cls)
    assert _error_line(text, error_class(text)) == _before(text, error_class(text))
