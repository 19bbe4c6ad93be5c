"""`--json` on the commands that change something and had none: `lessons veto`, `lessons
restore`, `lessons edit`, `config set` and `restore` print their result as JSON, and an error
as {"error": …} on stdout, as every command's --json does."""

from __future__ import annotations

import json
from pathlib import Path

from remem import config
from remem.engine.lessons import add_lesson
from remem.engine.store import Store


def _lesson() -> str:
    with Store() as store:
        return add_lesson(store, "Install packages with uv, never pip.", "correction")["id"]


def test_lessons_veto_and_restore_print_the_lesson(cli, home) -> None:
    lid = _lesson()
    vetoed = cli("lessons", "veto", lid, "--note", "old repo", "--json")
    assert vetoed.exit_code == 0, vetoed.output
    out = json.loads(vetoed.stdout)
    assert (out["id"], out["status"], out["note"], out["changed"]) == (lid, "vetoed", "old repo", True)
    again = json.loads(cli("lessons", "veto", lid, "--json").stdout)  # nothing to do: still 0
    assert again["changed"] is False and again["message"] == f"{lid} is vetoed already: nothing to do"
    restored = cli("lessons", "restore", lid, "--json")
    assert restored.exit_code == 0 and json.loads(restored.stdout)["status"] == "active"
    assert json.loads(cli("lessons", "restore", lid, "--json").stdout)["changed"] is False


def test_lessons_edit_prints_the_lesson(cli, home) -> None:
    lid = _lesson()
    res = cli("lessons", "edit", lid, "--text", "Install with uv; pip only inside uv venvs.", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["text"] == "Install with uv; pip only inside uv venvs." and out["changed"] is True
    assert out["redacted"] is False and out["cut"] == 0 and "embedding" not in out


def test_config_set_prints_the_key_and_its_value(cli, home) -> None:
    home.mkdir(parents=True, exist_ok=True)  # config set configures a memory that exists
    res = cli("config", "set", "recall.k", "8", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"key": "recall.k", "value": 8} and config.get("recall.k") == 8
    bad = cli("config", "set", "recall.k", "many", "--json")
    assert bad.exit_code == 1 and json.loads(bad.stdout) == {"error": "recall.k must be a whole number, not 'many'"}


def test_restore_prints_what_it_restored_and_kept(cli, home, tmp_path: Path) -> None:
    _lesson()  # a memory to back up
    backup = tmp_path / "b.db"
    assert cli("backup", str(backup)).exit_code == 0
    res = cli("restore", str(backup), "--yes", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["restored"] == str(backup) and out["into"] == str(home / "memory.db")
    assert out["kept"] and Path(out["kept"]).exists()
    # JSON asks nothing (a question would mix with it): --yes is needed
    unasked = cli("restore", str(backup), "--json")
    assert unasked.exit_code == 1 and json.loads(unasked.stdout)["error"].endswith("confirm with --yes")
    missing = cli("restore", str(tmp_path / "none.db"), "--yes", "--json")
    assert missing.exit_code == 1 and json.loads(missing.stdout)["error"].startswith("no backup at")
