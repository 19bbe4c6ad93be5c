"""Sleep's passes by name and by count: the names DESIGN uses (consolidate, discover,
discover_connections) pick the passes they stand for, help and errors name them, and the
per-pass counts (sleep_describe.describe_counts) are what `remem sleep` and the TUI's Sleep tab print."""

from __future__ import annotations

import pytest

from remem.engine import sleep, sleep_describe
from tests.conftest import run_remem


# --------------------------------------------------------------------------- pass names

@pytest.mark.parametrize("names, passes", [
    (["consolidate"], ["lessons"]),
    (["discover"], ["connect"]),
    (["discover_connections", "consolidate"], ["lessons", "connect"]),
    (["lessons", "consolidate"], ["lessons"]),
])
def test_sleep_accepts_the_pass_names_design_uses(home, names, passes):
    args = ["sleep", "--json", "--dry-run"]
    for name in names:
        args += ["--pass", name]
    res = run_remem(*args)
    assert res.returncode == 0, res.stderr
    assert list(res.json()["passes"]) == passes


def test_sleep_help_and_errors_name_the_aliases(home):
    helped = run_remem("sleep", "--help", env={"COLUMNS": "200"})
    assert "consolidate" in helped.stdout and "discover_connections" in helped.stdout
    bad = run_remem("sleep", "--pass", "bogus")
    assert bad.returncode != 0
    assert "unknown pass 'bogus'" in bad.stderr and "consolidate = lessons" in bad.stderr


# --------------------------------------------------------------------------- per-pass counts

def test_describe_counts_is_the_non_zero_numbers():
    counts = {"created": 2, "joined": 0, "space": "m2v:x", "ids": ["a"], "merged": 1, "dry": True}
    assert sleep_describe.describe_counts(counts) == "created 2, merged 1"
    assert sleep_describe.describe_counts(counts, most=1) == "created 2"
    assert sleep_describe.describe_counts({"joined": 0}) == "nothing to do"
    assert sleep_describe.describe_counts({}, empty="") == ""


def test_cli_and_tui_show_the_engines_counts(store, cli):
    from remem.tui.screens.sleep import run_changes

    store.put_episodes([{"id": "n1", "kind": "note", "title": "a", "gist": "a", "at": "2026-01-01T00:00:00+00:00"}])
    res = cli("sleep")
    assert res.exit_code == 0, res.output
    passes = sleep.history(store, 1)[0]["summary"]["passes"]
    table = " ".join(res.stdout.replace("│", " ").split())  # a long sentence wraps in its cell
    for name, counts in passes.items():
        assert f"{name} {sleep_describe.describe_pass(name, counts)}" in table, (name, table)
    # The TUI's history row: the passes that changed something, in the CLI's words, what was
    # learned first; upkeep alone (strengths eased with age) is nothing new.
    changed = {"embed": {"episodes": 0, "space": "m2v"}, "expire": {"ran": 5, "expired": 0, "deleted": 2},
               "connect": {"memories": 1, "edges": 1}, "predict": {"made": 1}}
    assert run_changes({"summary": {"passes": changed}}) == "; ".join(
        f"{name}: {sleep_describe.describe_pass(name, changed[name])}" for name in ("predict", "expire", "connect"))
    assert run_changes({"summary": {"passes": {"embed": {"episodes": 0}, "decay": {"decayed": 4, "archived": 0}}}}) \
        == "nothing new"
