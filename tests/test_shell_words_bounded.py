"""A long command read by its start and its end (shell_words.bounded) is read as the script
reads it: the end kept is never a here-document's body or a quoted string's words taken for
commands, when the opening of that body or string was in the part left out or the start stops
inside it; the commands after the body or the string closes are still read (a script's last
push), and what is left out costs a bounded read."""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import programs, shell_words
from remem.engine.programs import commands_run
from remem.engine.shell_words import COMMAND_CAP, bounded

FORCED = ("git", "push", "--force")
PRE = "\n".join(f"echo building step {i} of the release pipeline" for i in range(250))
BODY = "\n".join(f"Step {i}: describe what the release does here in words" for i in range(200))


def _all_run(command: str) -> set[tuple[str, ...]]:
    """Every command the whole script runs (no chain cut to its first and last commands)."""
    with mock.patch.object(programs, "MAX_CHAIN", 10**9):
        return set(commands_run(command))


def test_a_heredoc_opened_in_the_part_left_out_is_not_read_as_commands():
    """The README a release script writes says how to force-push; the script runs echo. A
    here-document the part left out opens and closes, or a "<<" in a comment or a string, leaves
    the end as it is (78151b9: a long script ending in a forced push still shows the push)."""
    script = (PRE + "\ncat > RELEASE.md <<'EOF'\n" + BODY
              + "\nTo publish run:\ngit push --force origin main\nEOF\necho done")
    assert len(script) > COMMAND_CAP and script.index("<<'EOF'") > COMMAND_CAP // 2
    assert FORCED not in _all_run(script)
    run = commands_run(bounded(script))
    assert FORCED not in run and ("git", "push") not in run
    assert run[-1] == ("echo", "done")  # what follows the body is read
    # never closed: nothing of the end is a command
    assert commands_run(bounded(script.rsplit("\nEOF", 1)[0])) == (("echo", "building", "step"),)

    closed = PRE + "\ncat > notes.md <<EOF\n" + BODY + "\nEOF\n" + PRE + "\ngit push --force"
    commented = PRE + "\n# then cat <<EOF into the notes\n" + PRE + "\ngit push --force"
    quoted = PRE + "\necho 'write it with cat <<EOF'\n" + PRE + "\ngit push --force"
    for kept in (closed, commented, quoted):
        assert len(kept) > COMMAND_CAP
        assert commands_run(bounded(kept))[-1] == FORCED


def test_a_heredoc_the_start_stops_inside_is_closed_where_the_script_closes_it():
    """Closed in the part left out: the start's body ends there, and the commands after it are
    read; closed in the end: read from its closing line."""
    opened = "cat > RELEASE.md <<'EOF'\n" + BODY
    left_out = opened + "\nEOF\n" + PRE * 2 + "\ngit push --force"
    assert commands_run(bounded(left_out)) == (("cat",), ("echo", "building", "step"), ("git", "push"), FORCED)
    in_the_end = opened * 3 + "\ngit push --force origin main\nEOF\necho done"
    assert commands_run(bounded(in_the_end)) == (("cat",), ("echo", "done"))


def test_a_quote_the_start_stops_inside_is_read_to_its_closing_quote():
    message = "fix the report so it adds up; see how git push --force broke it\n" * 400
    for quote in ('"', "'"):
        said = f"git commit -m {quote}{message}{quote} && git push --force"
        assert len(said) > COMMAND_CAP
        assert FORCED in commands_run(bounded(said))  # the push after the message
        quiet = f"git commit -m {quote}{message}{quote} && echo done"
        assert commands_run(bounded(quiet)) == (("git", "commit"), ("echo", "done"))
    # closed in the part left out: what follows is read as commands again
    closed = f'git commit -m "{message}"\n' + PRE * 3 + "\ngit push --force"
    assert commands_run(bounded(closed))[-1] == FORCED


def test_a_run_of_angle_brackets_left_out_is_read_back_only_so_far(monkeypatch):
    """A megabyte of "<<<<…" (no here-document) is not read one "<<" at a time: at most
    OPENERS_TRIED of them; what it opens is then not known, so the end goes, the start stays."""
    tried = []
    opener = shell_words._HEREDOC_OPENER
    monkeypatch.setattr(shell_words, "_HEREDOC_OPENER",
                        mock.Mock(match=lambda *args: tried.append(args) or opener.match(*args)))
    script = "make build\n" + "<" * 1_000_000 + "\ngit push --force"
    cut = bounded(script)
    assert 0 < len(tried) <= shell_words.OPENERS_TRIED
    assert cut == "make build"


# ------------------------------------------------------------------ any script, any cut

_BODY = ["git push --force origin main", "npm publish --tag next", "rm -rf build", "Run make deploy after the tests",
         "pip install -r requirements.txt", "  indented: kubectl apply -f k8s/", "sudo make install; git push -f"]
_LAST = st.sampled_from(["git push --force", "make deploy", "echo done", "npm publish"])
_DELIMITER = st.sampled_from([("<<'EOF'", "EOF"), ("<<EOF", "EOF"), ('<<"END"', "END"), ("<< PY", "PY"),
                              ("<<-EOF", "\tEOF"), ("<<\\DOC", "DOC")])


def _steps(name: str, n: int) -> list[str]:
    return [f"echo {name} step {i} of the release pipeline" for i in range(n)]


def _body(n: int, offset: int, quote: str = "") -> list[str]:
    lines = [_BODY[(offset + 3 * i) % len(_BODY)] for i in range(n)]
    return [line.replace(quote, "") for line in lines] if quote else lines


@st.composite
def _scripts(draw) -> tuple[str, str]:
    """A script of some 16 to 100 KB: echo steps, a message in quotes opened in its first
    7,000 characters and a here-document anywhere, each of any length (their words commands
    not run), ending in a command; and that command."""
    lines = _steps("first", draw(st.integers(0, 140)))
    if draw(st.booleans()):
        quote = draw(st.sampled_from(['"', "'"]))
        lines.append(f"git commit -m {quote}release notes")
        lines += _body(draw(st.integers(0, 900)), draw(st.integers(0, 6)), quote)
        lines.append(f"{quote} && echo committed")
    lines += _steps("middle", draw(st.integers(0, 700)))
    if draw(st.booleans()):
        opener, closer = draw(_DELIMITER)
        lines.append(f"cat > notes.md {opener}")
        lines += _body(draw(st.integers(0, 900)), draw(st.integers(0, 6)))
        lines.append(closer)
    lines += _steps("last", draw(st.integers(0, 300)))
    last = draw(_LAST)
    lines.append(last)
    script = "\n".join(lines)
    if len(script) <= COMMAND_CAP:  # long enough to be cut: more steps before the last command
        script = script[:-len(last)] + "\n".join(_steps("padding", 1 + COMMAND_CAP // 40)) + "\n" + last
    return script, last


@settings(max_examples=150, deadline=None)
@given(_scripts())
def test_the_start_and_end_read_run_only_what_the_whole_script_runs(script_last):
    """Both read whole (no chain cut to its first and last commands), so what is under test is
    the cut alone."""
    script, last = script_last
    cut = bounded(script)
    assert len(cut) <= COMMAND_CAP + 1
    read, run = _all_run(cut), _all_run(script)
    assert read <= run, read - run
    # The last line is read: every body and string closes before it.
    assert commands_run(last)[-1] in read
