"""`remem call TOOL -` reads the arguments from stdin and `remem call TOOL @FILE` from a file: a
long text to remember does not fit on a command line (past about 128 KB the shell refuses to
run the command), and `echo '{…}' | remem call recall` ignored the pipe.

Through the real `remem` executable (a subprocess, its stdin a pipe), and the typer app
in-process for the refusals; the calls go through the real MCP client session `remem call`
opens against the server it builds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_remem


def test_arguments_piped_on_stdin_with_a_dash(store: Any) -> None:
    stored = run_remem("call", "remember", "-", input='{"text": "use uv, not pip, to install packages", '
                                                      '"tags": ["python"]}')
    assert stored.returncode == 0, stored.stderr
    memory = stored.json()
    assert memory["gist"] == "use uv, not pip, to install packages" and memory["tags"] == ["python"]
    found = run_remem("call", "recall", "-", input='{"query": "install packages with uv"}\n')
    assert found.returncode == 0, found.stderr
    assert [h["id"] for h in found.json()["hits"]] == [memory["id"]]


def test_arguments_from_a_file_longer_than_a_command_line_holds(store: Any, tmp_path: Path) -> None:
    text = "the build log of the release, kept whole: " + "step ok; " * 20_000  # 180,000 characters
    note = tmp_path / "note.json"
    note.write_text(json.dumps({"text": text, "title": "release build log"}), encoding="utf-8")
    stored = run_remem("call", "remember", f"@{note}")
    assert stored.returncode == 0, stored.stderr
    memory = stored.json()
    assert memory["title"] == "release build log" and memory["detail_chars"] == 64_000, memory
    read = run_remem("call", "get_memory", "-", input=json.dumps({"id": memory["id"]}))
    assert read.returncode == 0 and read.json()["detail"].startswith(text[:1_000]), read.stderr


def test_a_missing_file_an_empty_stdin_or_bad_bytes_are_one_line_each(cli: Any, store: Any, tmp_path: Path) -> None:
    (tmp_path / "latin1.json").write_bytes(b'{"query": "caf\xe9"}')
    for args, stdin, line in (
        (["@" + str(tmp_path / "nowhere.json")], None, "cannot read the arguments from"),
        (["@"], None, "@ names no file"),
        (["-"], "", "stdin holds no arguments"),
        (["-"], "  \n", "stdin holds no arguments"),
        (["@" + str(tmp_path / "latin1.json")], None, "are not UTF-8"),
        (["-"], "[1, 2]", "arguments must be a JSON object"),
    ):
        result = cli("call", "recall", *args, input=stdin)
        assert result.exit_code == 1, (args, result.output)
        assert line in result.output and "Traceback" not in result.output, (args, result.output)


def test_the_help_names_the_dash_and_the_file_with_an_example(cli: Any) -> None:
    shown = " ".join(cli("call", "--help").output.split())
    assert "- reads them from stdin, @FILE from a file" in shown, shown
    assert "Example: echo '{\"query\": \"uv\"}' | remem call recall -" in shown, shown
    doc = (Path(__file__).resolve().parent.parent / "docs" / "CLI.md").read_text(encoding="utf-8")
    section = doc.split("### `remem call`", 1)[1].split("\n### ", 1)[0]
    assert "`@FILE`" in section and "| remem call recall -" in section


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["query", "k", "tags", "mode"]),
                       st.one_of(st.text(max_size=40), st.integers(-3, 200), st.lists(st.text(max_size=8), max_size=3)),
                       max_size=4))
def test_the_same_arguments_give_the_same_answer_inline_piped_or_from_a_file(
        cli: Any, store: Any, tmp_path: Path, arguments: dict[str, Any]) -> None:
    """However they are given, the arguments are the same JSON: the same answer, or the same
    one-line refusal."""
    text = json.dumps(arguments)
    file = tmp_path / "arguments.json"
    file.write_text(text, encoding="utf-8")
    inline = cli("call", "search", text)
    for given_as, stdin in (("-", text), (f"@{file}", None)):
        other = cli("call", "search", given_as, input=stdin)
        assert other.exit_code == inline.exit_code, (arguments, inline.output, other.output)
        assert other.output == inline.output, (arguments, inline.output, other.output)
