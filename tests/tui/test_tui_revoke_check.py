"""`R` on a lesson another memory wrote is refused before the "cannot be undone" dialog opens,
with the engine's own line (share_choices.revoke_check, the check revoke() makes itself)."""

from __future__ import annotations

from typing import Any

import pytest

from remem.engine.lessons import get_lesson
from remem.engine.store import Store
from tests.tui.conftest import new_app

pytestmark = pytest.mark.anyio


async def test_revoke_of_someone_elses_lesson_is_refused_before_the_dialog(demo_home, cli, tmp_path):
    folder = tmp_path / "sync"
    folder.mkdir()
    assert cli("config", "set", "share.folder", str(folder)).exit_code == 0
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        await pilot.press("R")
        await pilot.pause()
        app.screen.query_one("#answer").value = "L3"  # the demo's candidate from the laptop
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ != "Confirm"
        said: list[Any] = [n for n in app._notifications if n.severity == "error"]
        assert len(said) == 1
        assert str(said[0].message).startswith("lesson L3 came from b7e1c0ffee00aa11; only its author can revoke it")
    with Store() as store:
        assert get_lesson(store, "L3")["status"] == "candidate"
