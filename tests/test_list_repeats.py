"""`remem list --kind` is repeatable (any of them), as `recall --kind` is; a single-value option
given twice (`--project alpha --project beta`) is refused in one line, not read as the last one.

The CLI runs in-process on the real store; recall's own parameters are read through the shared
helper (remem/commands/options.py) with recall's real click command."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EMPTY_KIND = "kind is empty (an unset variable?)"


def _seed(store: Any) -> None:
    """One memory of each of three kinds, in two project folders, no embedding (no auto edges)."""
    store.put_episodes([
        {"id": "n0000000000000001", "kind": "note", "title": "a note", "gist": "a note", "cwd": "/srv/alpha"},
        {"id": "e0000000000000002", "kind": "error", "title": "an error", "gist": "an error", "cwd": "/srv/beta"},
        {"id": "c0000000000000003", "kind": "correction", "title": "a fix", "gist": "a fix", "cwd": "/srv/beta"},
    ])


def _kinds(result: Any) -> list[str]:
    assert result.exit_code == 0, result.output
    return sorted(r["kind"] for r in json.loads(result.stdout))


def test_list_kind_is_repeatable_any_of_them(cli: Any, store: Any) -> None:
    _seed(store)
    assert _kinds(cli("list", "--kind", "note", "--kind", "error", "--json")) == ["error", "note"]
    assert _kinds(cli("list", "--kind", "error", "--kind", "note", "--kind", "error", "--json")) == ["error", "note"]
    assert _kinds(cli("list", "--kind", "correction", "--json")) == ["correction"]
    # The table too: both kinds, not the last one alone.
    table = cli("list", "--kind", "note", "--kind", "error")
    assert table.exit_code == 0 and "note" in table.stdout and "error" in table.stdout, table.output


@pytest.mark.parametrize("args", [["--kind", "", "--kind", "note"],
                                  ["--kind", "note", "--kind", "  ", "--kind", "error"]])
def test_a_blank_kind_among_several_is_refused_as_recall_refuses_it(cli: Any, store: Any, args: list[str]) -> None:
    _seed(store)
    result = cli("list", *args)
    assert result.exit_code == 1, result.output
    assert EMPTY_KIND in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stdout == ""


# Each single-value option of `remem list`, with two values that would each be accepted.
SINGLE = {
    "--project": ["/srv/alpha", "/srv/beta"],
    "--type": ["long_term", "short_term"],
    "--since": ["30d", "2000-01-01"],
    "--until": ["1d", "2999-01-01"],
    "--field": ["created", "at"],
}


@pytest.mark.parametrize("flag", sorted(SINGLE))
def test_a_single_value_option_given_twice_is_refused_in_one_line(cli: Any, store: Any, flag: str) -> None:
    _seed(store)
    first, second = SINGLE[flag]
    for args in ([flag, first, flag, second], [f"{flag}={first}", flag, second]):
        result = cli("list", *args)
        assert result.exit_code == 1, (args, result.output)
        assert result.stderr.strip() == f"remem: {flag} was given more than once; give {flag} once", result.stderr
        assert result.stdout == ""
        # With --json the reason is JSON on stdout too.
        result = cli("list", *args, "--json")
        assert result.exit_code == 1 and json.loads(result.stdout) == {
            "error": f"{flag} was given more than once; give {flag} once"}, result.output
    # Once, each is taken as ever.
    assert cli("list", flag, second, "--json").exit_code == 0


@pytest.mark.parametrize("flag", ["--limit", "--offset"])
def test_an_option_that_shapes_the_answer_takes_its_last_value_as_an_alias_expects(cli: Any, store: Any,
                                                                                   flag: str) -> None:
    _seed(store)
    first, second = {"--limit": ("1", "2"), "--offset": ("2", "1")}[flag]
    result = cli("list", flag, first, flag, second, "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 2


def test_project_given_twice_no_longer_answers_for_the_last_one(cli: Any, store: Any) -> None:
    _seed(store)
    result = cli("list", "--project", "/srv/alpha", "--project", "/srv/beta", "--json")
    assert result.exit_code == 1 and "give --project once" in result.stderr, result.output
    # Nothing lost: every memory is still there.
    assert _kinds(cli("list", "--json")) == ["correction", "error", "note"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(counts=st.fixed_dictionaries({flag: st.integers(0, 2) for flag in SINGLE}),
       kinds=st.lists(st.sampled_from(["note", "error", "correction"]), max_size=3),
       order=st.randoms(use_true_random=False))
def test_refused_exactly_when_a_single_value_option_repeats(cli: Any, store: Any, counts: dict[str, int],
                                                            kinds: list[str], order: Any) -> None:
    """Whatever the options and their order: refused iff one of them is given twice, naming it;
    repeated --kind and --tag never are."""
    if not store.scalar("SELECT count(*) FROM episodes"):
        _seed(store)
    words = [[flag, SINGLE[flag][n % 2]] for flag, count in counts.items() for n in range(count)]
    words += [["--kind", k] for k in kinds] + [["--tag", "x"], ["--tag", "y"]]
    order.shuffle(words)
    args = [w for pair in words for w in pair]
    result = cli("list", *args, "--json")
    repeated = [flag for flag, count in counts.items() if count > 1]
    if repeated:
        assert result.exit_code == 1, (args, result.output)
        named = result.stderr.split(" was given")[0].removeprefix("remem: ")
        assert named in repeated and len(result.stderr.strip().splitlines()) == 1, (args, result.stderr)
    else:
        assert "given more than once" not in result.output, (args, result.output)


def test_the_shared_helper_reads_recalls_own_options() -> None:
    """What wiring OnceCommand into `remem recall` would refuse, read with recall's real command:
    --project and --type given twice; repeated --kind and --tag, and flags, are not repeats."""
    import typer

    from remem.cli import app
    from remem.commands.options import repeated_option

    recall = typer.main.get_command(app).commands["recall"]  # type: ignore[attr-defined]
    ctx = recall.make_context("recall", ["q"])

    def named(*args: str) -> Any:
        return repeated_option(recall, ctx, ["q", *args])

    assert named("--project", "a", "--project", "b") == "--project"
    assert named("--type", "long_term", "--type=short_term") == "--type"
    assert named("--since", "1d", "--since", "2d") == "--since"
    assert named("-k", "3", "-k", "4") is None and named("--mode", "keyword", "--mode", "hybrid") is None
    assert named("--kind", "note", "--kind", "error", "--tag", "a", "-t", "b", "--explain", "--explain") is None
    assert named("--project", "a", "--type", "long_term") is None
    assert named("--", "--project", "--project") is None  # after --, words are the query, not options


def test_recall_refuses_a_repeated_filter_and_takes_the_last_k(cli: Any, store: Any) -> None:
    _seed(store)
    result = cli("recall", "deploy", "--project", "/srv/alpha", "--project", "/srv/beta")
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == "remem: --project was given more than once; give --project once"
    result = cli("recall", "a note, an error, a fix", "-k", "1", "-k", "2", "--json")
    assert result.exit_code == 0 and len(json.loads(result.stdout)) == 2, result.output


def test_help_is_shown_whatever_else_is_repeated(cli: Any, store: Any) -> None:
    for command in ("list", "recall"):
        args = [command, *(["q"] if command == "recall" else []), "--project", "a", "--project", "b", "--help"]
        result = cli(*args)
        assert result.exit_code == 0 and "Usage:" in result.stdout, result.output
