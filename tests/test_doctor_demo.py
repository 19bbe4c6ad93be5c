"""`remem doctor` on the demo memory: the demo keeps agent homes of its own and refuses
`remem setup`, so its agents and nightly job are said in a note, never problems whose fix
(`remem setup --agent claude-code`) would wire the person's real agents to it."""

from __future__ import annotations

import json
import shutil

from tests.conftest import run_remem


def test_doctor_on_the_demo_memory_offers_no_setup_fix(tmp_path) -> None:
    demo = tmp_path / "demo"
    assert run_remem("demo", "--dir", str(demo)).returncode == 0
    assert (demo / "claude").is_dir()  # the demo's own Claude Code home: "found", not installed
    out = run_remem("--home", str(demo), "doctor", "--json")
    report = json.loads(out.stdout)
    fixes = [p["fix"] for p in report["problems"]]
    assert not [f for f in fixes if f.startswith("remem setup")], report["problems"]
    assert any("is the demo memory" in n and "`remem setup` without --home" in n for n in report["notes"])
    if shutil.which("crontab") is None and shutil.which("systemctl") is None:
        assert out.returncode == 0 and report["ok"], report


def test_doctor_on_a_memory_that_is_not_the_demo_still_names_an_unwired_agent(home, tmp_path) -> None:
    (tmp_path / "user" / ".claude").mkdir()  # Claude Code installed, remem not wired into it
    report = json.loads(run_remem("doctor", "--json").stdout)
    assert any(p["fix"] == "remem setup --agent claude-code" for p in report["problems"]), report
    assert not any("demo memory" in n for n in report["notes"])
