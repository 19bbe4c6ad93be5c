"""`y` in the Shared tab counts what `remem share sync` counts: the lessons the share safety
check withheld beside those exported, the lessons of ours another memory confirmed, and the
revocations written again, so "exported 0" never hides lessons kept back. Real store, real
share folder, another real memory writing into it, the app under Textual's pilot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem.engine.lessons import add_lesson
from remem.engine.store import Store
from tests.tui.conftest import acted, new_app

pytestmark = pytest.mark.anyio


def _said(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications
            if n.severity == "information" and not str(n.message).startswith("still working:")]


async def test_y_counts_the_withheld_the_confirmed_and_the_revocations_rewritten(demo_home, cli, tmp_path):
    from remem.engine import share

    folder = tmp_path / "sync"
    folder.mkdir()
    assert cli("config", "set", "share.folder", str(folder)).exit_code == 0
    assert cli("share", "sync").exit_code == 0  # L1 and L2 are in the folder now
    # L1's words change: its earlier words become a revoked row, withdrawn at the next sync.
    assert cli("lessons", "edit", "L1", "--text", "Always install Python packages with uv.").exit_code == 0
    with Store() as store:  # a lesson naming a path: the share safety check keeps it back
        add_lesson(store, "Run /home/dev/shop/bin/setup.sh before the tests.", "correction",
                   status="active", strength=3.0)
    with Store(tmp_path / "other.db") as other:  # another memory says what L2 says
        add_lesson(other, "Before running tests, install pyyaml: tests fail with ModuleNotFoundError yaml.",
                   "error", status="active", strength=3.0)
        share.sync(other, folder, identity_dir=tmp_path / "other-identity")

    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        await pilot.press("y")
        await acted(pilot)
        said = _said(app)
    assert len(said) == 1, said
    assert said[0].startswith("synced: exported 1 (withheld 1), received 0, "), said[0]
    assert "confirmed yours 1, revoked 0" in said[0], said[0]
    assert said[0].endswith("(revocations rewritten 1)"), said[0]


def test_the_sync_line_names_every_count_the_cli_names():
    """The counts `remem share sync` prints, from the engine's summary fields of those names."""
    from remem.tui.screens.shared import sync_said

    summary = {"exported": 0, "withheld": 2, "received": 0, "quarantined": 0, "rejected": 0, "activated": 0,
               "confirmed_ours": 3, "revoked": 0, "revocations_rewritten": 4}
    assert sync_said({"summary": summary}) == (
        "synced: exported 0 (withheld 2), received 0, quarantined 0, rejected 0, activated 0, "
        "confirmed yours 3, revoked 0 (revocations rewritten 4)")
