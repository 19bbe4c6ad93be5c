"""What the docs and the help say remem does is what it does: the sources plain `remem ingest`
reads, the locations `remem paths` lists, the messages of `lessons restore`, the TOML of
`remem config`, and the hook example that is meant to print a lesson."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_remem

DOCS = ROOT / "docs"


def doc_section(text: str, heading: str) -> str:
    """The text under a heading, up to the next heading of any level."""
    start = text.index(heading) + len(heading)
    following = re.compile(r"^#", re.MULTILINE).search(text, start)
    return text[start:following.start() if following else len(text)]


def listed(words: str) -> set[str]:
    """The items of "a, b, c and d" (line breaks as spaces)."""
    return {item for item in re.split(r",\s*|\s+and\s+", " ".join(words.split())) if item}


# ----------------------------------------------------------------------------- ingest's sources


def default_source_names() -> dict[str, Callable[[], Path]]:
    from remem import paths

    return {"Claude Code projects": paths.claude_projects_dir, "Codex sessions": paths.codex_home,
            "Gemini CLI sessions": paths.gemini_sessions_dir, "the inbox": paths.inbox_dir}


def test_the_named_default_sources_are_every_place_plain_ingest_reads() -> None:
    from remem.engine.ingest_sources import default_places

    # A source added to (or dropped from) plain `remem ingest` must be named in the lists below.
    assert set(default_places()) == {where() for where in default_source_names().values()}


def _ingest_help() -> str:
    import typer

    import remem.cli

    ingest = typer.main.get_command(remem.cli.app).commands["ingest"]  # type: ignore[attr-defined]
    return next(p.help for p in ingest.params if p.name == "paths")


def _sources_doc_line() -> str:
    text = (DOCS / "SOURCES.md").read_text(encoding="utf-8")
    return re.search(r"^remem ingest +# (.*)$", text, re.MULTILINE).group(1)  # type: ignore[union-attr]


def _cli_doc_default() -> str:
    section = doc_section((DOCS / "CLI.md").read_text(encoding="utf-8"), "### `remem ingest`")
    found = re.search(r"every source found \(([^)]*)\)", section)
    assert found, "docs/CLI.md's `remem ingest` does not list what it reads by default"
    return found.group(1)


@pytest.mark.parametrize("where, words", [
    ("docs/SOURCES.md", _sources_doc_line),
    ("docs/CLI.md", _cli_doc_default),
    ("remem ingest --help", lambda: re.search(r"every source found \(([^)]*)\)", _ingest_help()).group(1)),
])
def test_every_list_of_default_sources_names_exactly_what_plain_ingest_reads(
        where: str, words: Callable[[], str]) -> None:
    assert listed(words()) == set(default_source_names()), where


def test_sources_doc_says_chats_without_a_file_reads_gemini_cli_sessions() -> None:
    from remem import paths
    from remem.engine.ingest_sources import default_places

    assert default_places("chats") == [paths.gemini_sessions_dir()]
    text = (DOCS / "SOURCES.md").read_text(encoding="utf-8")
    comment = re.search(r"^remem ingest --source chats .*# (.*)$", text, re.MULTILINE).group(1)  # type: ignore[union-attr]
    assert "without FILE, Gemini CLI's sessions" in comment, comment


# ----------------------------------------------------------------------------- remem paths

# Location functions `remem paths` need not list on their own line, and why.
NOT_LISTED = {
    "user_home": "HOME itself; the line under the table names it",
    "log_file": "the one file in `logs`, which is listed",
}


def test_remem_paths_lists_every_location_remem_reads_or_writes(cli: Any) -> None:
    import inspect

    from remem import paths

    locations = {name: fn for name, fn in inspect.getmembers(paths, inspect.isfunction)
                 if fn.__module__ == paths.__name__ and not name.startswith("_")
                 and not inspect.signature(fn).parameters and name not in NOT_LISTED
                 and inspect.signature(fn).return_annotation == "Path"}
    listed_paths = set(json.loads(cli("paths", "--json").stdout).values())
    missing = sorted(name for name, fn in locations.items() if str(fn()) not in listed_paths)
    assert not missing, f"`remem paths` leaves out {missing}"


def test_remem_paths_names_gemini_sessions_and_the_systemd_timer_folder(cli: Any) -> None:
    from remem import paths
    from remem.engine import schedule

    found = json.loads(cli("paths", "--json").stdout)
    assert found["gemini_sessions"] == str(paths.gemini_sessions_dir())
    # The folder the nightly timer's units are written to.
    assert found["systemd_user"] == str(schedule.paths.systemd_user_dir())


def test_the_docs_describe_the_columns_remem_paths_prints(cli: Any) -> None:
    header = cli("paths").stdout.splitlines()[1].lower()
    columns = re.findall(r"\w+", header)
    assert columns == ["what", "path", "exists"]
    claims = [(DOCS / "CLI.md").read_text(encoding="utf-8"), (ROOT / "README.md").read_text(encoding="utf-8")]
    for text in claims:
        # No per-location variable column: the variables are named once, under the table.
        assert "the variable that moves it" not in " ".join(text.split())
    assert "whether it exists" in " ".join(doc_section(claims[0], "### `remem paths`").split())


# ----------------------------------------------------------------------------- remem config


def test_config_show_prints_toml_that_reads_back_as_the_config(cli: Any) -> None:
    from remem import config

    for key, value in (("prime.holdout", "false"), ("share.folder", 'C:\\sync "remem"'),
                       ("recall.k", "8"), ("sleep.surprise_cut_model", "0.5")):
        assert cli("config", "set", key, value).exit_code == 0
    res = cli("config", "show")
    assert res.exit_code == 0, res.output
    assert tomllib.loads(res.stdout) == config.load()


@pytest.mark.parametrize("key, value, shown", [
    ("prime.holdout", "yes", "prime.holdout = true"),
    ("share.folder", "", 'share.folder = ""'),
    ("recall.recency_half_life_days", "30", "recall.recency_half_life_days = 30.0"),
])
def test_config_set_echoes_the_value_as_toml(cli: Any, key: str, value: str, shown: str) -> None:
    res = cli("config", "set", key, value)
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == shown
    section, leaf = key.split(".")
    assert tomllib.loads(res.stdout)[section][leaf] == tomllib.loads(shown)[section][leaf]


# ----------------------------------------------------------------------------- lessons restore


def _restore_paragraph() -> str:
    text = (DOCS / "SLEEP.md").read_text(encoding="utf-8")
    start = text.index("`lessons restore` of a lesson")
    return " ".join(text[start:text.index("\n\n", start)].split())


def _quoted_messages(paragraph: str) -> list[str]:
    """The messages the paragraph quotes, each "…" in front of the lesson's id."""
    return re.findall(r'"(…[^"]*)"', paragraph)


def _as_pattern(quoted: str) -> re.Pattern[str]:
    """A quoted message with its placeholders (…, ID, ORIGIN) as wildcards."""
    pattern = re.escape(quoted)
    for placeholder in ("…", "ID", "ORIGIN"):
        pattern = pattern.replace(re.escape(placeholder), ".+")
    return re.compile(pattern)


def _refusal(act: Callable[..., Any], store: Any, lesson_id: str) -> str:
    with pytest.raises(ValueError) as refused:
        act(store, lesson_id)
    return str(refused.value)


def _real_restore_messages(store: Any, cli: Any, tmp_path: Path) -> dict[str, str]:
    """Each way `lessons restore` refuses or has nothing to do, from the real code."""
    from remem.engine import render_vetoes
    from remem.engine.lessons import add_lesson
    from remem.engine.share_trust import TWIN

    author, voucher = "b7e1c0ffee00aa11", "c0ffee00aa11b7e1"
    active = add_lesson(store, "Use uv, not pip.", "correction")
    waiting = add_lesson(store, "Use ruff format, not black.", "correction", status="candidate", origin=author)
    mine = add_lesson(store, "Never force-push; use --force-with-lease.", "correction")
    (tmp_path / "sync").mkdir()
    assert cli("config", "set", "share.folder", str(tmp_path / "sync")).exit_code == 0
    assert cli("share", "revoke", mine["id"]).exit_code == 0  # as the person revokes their own
    by_author = add_lesson(store, "Pin numpy below 2.", "correction", status="revoked", origin=author,
                           note=f"revoked by {author} at 2026-01-02T03:04:05Z")
    by_voucher = add_lesson(store, "Pin pandas below 3.", "correction", status="revoked", origin=author,
                            origins=[voucher], note=f"revoked by {voucher} at 2026-01-02T03:04:05Z")
    twin = add_lesson(store, "Use uv, not pip.", "correction", status="revoked", origin=author,
                      note=TWIN + active["id"])
    vetoed = add_lesson(store, "Pin requests below 3.", "correction")
    render_vetoes.veto_lesson(store, vetoed["id"])
    restore = render_vetoes.restore_lesson
    return {"active": _refusal(restore, store, active["id"]),
            "vetoed_again": _refusal(render_vetoes.veto_lesson, store, vetoed["id"]),
            "waiting": _refusal(restore, store, waiting["id"]), "mine": _refusal(restore, store, mine["id"]),
            "by_author": _refusal(restore, store, by_author["id"]),
            "by_voucher": _refusal(restore, store, by_voucher["id"]), "twin": _refusal(restore, store, twin["id"]),
            "author": author, "voucher": voucher}


def test_every_message_sleep_doc_quotes_for_restore_is_one_remem_gives(store: Any, cli: Any,
                                                                        tmp_path: Path) -> None:
    real = _real_restore_messages(store, cli, tmp_path)
    quoted = _quoted_messages(_restore_paragraph())
    assert len(quoted) >= 6, quoted  # the paragraph still quotes its messages
    messages = [message for kind, message in real.items() if kind not in ("author", "voucher")]
    unmatched = [q for q in quoted if not any(_as_pattern(q).fullmatch(m) for m in messages)]
    assert not unmatched, f"docs/SLEEP.md quotes messages remem does not give: {unmatched}"
    for kind in ("waiting", "mine", "by_author", "by_voucher", "twin"):  # and says something of each
        assert any(_as_pattern(q).fullmatch(real[kind]) for q in quoted), (kind, real[kind])


def test_a_revoked_lesson_refusal_says_truly_who_revoked_it(store: Any, cli: Any, tmp_path: Path) -> None:
    real = _real_restore_messages(store, cli, tmp_path)
    assert "your own lesson, revoked by you" in real["mine"]
    assert f"revoked by its author, {real['author']}" in real["by_author"]
    # Neither a voucher's revocation nor folding into the person's own lesson is the author's.
    assert f"revoked by {real['voucher']}" in real["by_voucher"] and "by its author" not in real["by_voucher"]
    assert "same lesson as your own lesson" in real["twin"] and "by its author" not in real["twin"]
    for kind in ("mine", "by_author", "by_voucher", "twin"):
        assert real[kind].endswith("it is never handed to an agent and cannot come back")


# ----------------------------------------------------------------------------- the hook example


def test_the_hooks_doc_example_prints_what_the_doc_shows(home: Path) -> None:
    """docs/HOOKS.md's "Try one by hand", run as written on the demo memory, prints the doc's
    block (a prompt the demo has no lesson for would print nothing and teach nothing)."""
    import os

    text = (DOCS / "HOOKS.md").read_text(encoding="utf-8")
    section = text[text.index("Try one by hand"):]
    command = re.search(r"```sh\n(.*?)```", section, re.DOTALL).group(1).replace("\\\n", " ")  # type: ignore[union-attr]
    shown = re.search(r"```json\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]
    echoed, hook = command.split("|", 1)
    payload = shlex.split(echoed)[1]
    args = [os.path.expanduser(a) for a in shlex.split(hook)]
    assert args[0] == "remem" and args[1:3] == ["--home", os.path.expanduser("~/.remem-demo")]
    assert run_remem("demo").returncode == 0  # builds ~/.remem-demo, HOME being the test's
    res = run_remem(*args[1:], input=payload)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == json.loads(shown)
