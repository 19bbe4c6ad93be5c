"""A session's gist says what was done: a call the person refused or that failed is told
apart, never listed as run or edited (recall gives gists to agents as what happened).

Sessions built here from turns; the gist is deterministic, so no store is needed.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from remem.engine.session import Session, ToolCall, Turn
from remem.engine.session_gist import session_gist


def _gist(*calls: ToolCall) -> str:
    session = Session(id="s1", source="claude-code", cwd="/home/dev/shop", turns=[
        Turn(role="user", text="get the server running"),
        Turn(role="assistant", tool_calls=list(calls)),
    ])
    return session_gist(session, {})[1]


def _did(gist: str) -> str:
    return next(line for line in gist.splitlines() if line.startswith("Did: "))


def _bash(command: str, **how: bool) -> ToolCall:
    return ToolCall(id=command, name="Bash", input={"command": command}, result="", **how)


def _write(path: str, **how: bool) -> ToolCall:
    return ToolCall(id=path, name="Write", input={"file_path": path, "content": "x"}, result="", **how)


def test_a_refused_command_is_told_as_tried_not_run():
    did = _did(_gist(_bash("mix phx.server 2>&1 | head -80", rejected=True, is_error=True)))
    assert did == "Did: 1 tool calls (Bash); tried to run mix phx.server 2>&1 | head -80 (refused)"


def test_a_failed_write_is_told_as_tried_not_edited():
    did = _did(_gist(_bash("ls -la"), _write("/home/dev/shop/CLAUDE.md", is_error=True)))
    assert did == "Did: 2 tool calls (Bash, Write); ran ls -la; tried to edit CLAUDE.md (failed)"


def test_a_command_that_failed_ran_and_says_it_failed():
    assert _did(_gist(_bash("mix test", is_error=True))).endswith("; ran mix test (failed)")


def test_an_edit_that_failed_then_went_through_is_an_edit():
    did = _did(_gist(_write("/home/dev/shop/a.py", is_error=True), _write("/home/dev/shop/a.py"),
                     _write("/home/dev/shop/b.py", rejected=True, is_error=True),
                     _write("/home/dev/shop/b.py", rejected=True, is_error=True)))
    assert did.endswith("; edited a.py; tried to edit b.py (refused)")


def test_an_edit_by_any_agents_edit_tool_is_an_edit():
    """The gist knew Claude Code's edit tools alone: Gemini CLI's `write_file` went untold."""
    write = ToolCall(id="w", name="write_file", input={"file_path": "/home/dev/shop/app.py", "content": "x"},
                     result="")
    assert _did(_gist(write)) == "Did: 1 tool calls (write_file); edited app.py"


_CALL = st.tuples(st.sampled_from(["bash", "write"]), st.sampled_from(["ok", "failed", "refused"]),
                  st.sampled_from(["alpha", "beta", "gamma"]))


@given(st.lists(_CALL, min_size=1, max_size=8))
def test_what_the_gist_says_was_done_went_through(calls):
    made = [(_bash(f"run-{name}", is_error=how != "ok", rejected=how == "refused") if tool == "bash"
             else _write(f"/home/dev/shop/{name}.txt", is_error=how != "ok", rejected=how == "refused"))
            for tool, how, name in calls]
    did = _did(_gist(*made))
    edited = did.split("; edited ", 1)[1].split(";", 1)[0].split(", ") if "; edited " in did else []
    ran = did.split("; ran ", 1)[1].split("; tried", 1)[0].split("; ") if "; ran " in did else []
    written_ok = {f"{name}.txt" for tool, how, name in calls if tool == "write" and how == "ok"}
    assert set(edited) <= written_ok
    for command in ran:  # every command listed ran; one that failed says so
        name = command.removeprefix("run-").removesuffix(" (failed)")
        outcomes = {how for tool, how, n in calls if tool == "bash" and n == name}
        assert outcomes - {"refused"} and (command.endswith(" (failed)") or "ok" in outcomes), did
