"""A render cut short while it removes lesson files (Ctrl-C, a kill) must leave nothing the next
sleep reads as the person's veto: written.json marks each file as one to remove before it goes.
And only a file missing from a folder its lesson still goes to is a veto."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem import paths
from remem.engine import render, render_files, render_vetoes, sleep
from remem.engine.lessons import add_lesson, get_lesson, update_lesson
from remem.engine.store import Store
from tests.conftest import ROOT
from tests.test_render_two_memories import older_render

WORDS = ["Use uv, not pip.", "Never push to main.", "Run the linter before a commit.",
         "Write commit messages in English."]


def projects(count: int) -> list[Path]:
    """Claude Code project folders, each with a transcript: all in use."""
    out = []
    for i in range(count):
        folder = paths.claude_projects_dir() / paths.project_folder_name(f"/home/dev/p{i}")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "x.jsonl").write_text("{}\n")
        out.append(folder)
    return out


def unused(folder: Path) -> None:
    """A project last used 100 days ago, by the file times render reads."""
    old = time.time() - 100 * 86400
    os.utime(folder / "x.jsonl", (old, old))
    os.utime(folder, (old, old))


def general_lessons(store: Store) -> list[str]:
    return [add_lesson(store, words, "correction", sources=[f"s{i}"])["id"] for i, words in enumerate(WORDS)]


def lesson_files() -> set[Path]:
    return set(paths.claude_projects_dir().glob("*/memory/remem-*.md"))


def render_stopped_after(store: Store, monkeypatch: pytest.MonkeyPatch, removals: int) -> None:
    """A render that a Ctrl-C stops after it removed `removals` lesson files (the key press is
    faked: a test cannot press it between two given removals)."""
    done = []
    real = Path.unlink

    def unlink(self: Path, *args, **kwargs) -> None:
        if self.name.startswith("remem-") and len(done) >= removals:
            raise KeyboardInterrupt
        real(self, *args, **kwargs)
        done.append(self)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "unlink", unlink)
        with pytest.raises(KeyboardInterrupt):
            render.render(store)
    assert len(done) == removals


def no_veto(store: Store, ids: list[str]) -> None:
    assert all(get_lesson(store, lid)["status"] == "active" for lid in ids)
    assert json.loads(render_vetoes.vetoed_path().read_text()) == {}


def test_a_render_stopped_by_fake_ctrl_c_while_removing_files_of_unused_projects_vetoes_nothing(
        store, monkeypatch):
    folders = projects(6)
    ids = general_lessons(store)
    assert render.render(store)["written"] == 6 * len(WORDS) + 6  # lesson files and MEMORY.md
    for folder in folders[1:]:
        unused(folder)
    render_stopped_after(store, monkeypatch, removals=5)
    summary = sleep.run_sleep_collect(store)
    assert summary["passes"]["render"]["vetoed"] == 0 and summary["events"].get("vetoed", []) == []
    no_veto(store, ids)
    # What was left to remove is removed; the project in use keeps every lesson.
    assert lesson_files() == {folders[0] / "memory" / render_files.lesson_filename(lid) for lid in ids}
    # A file the person deletes where the lesson is still shown is a veto, as before.
    (folders[0] / "memory" / render_files.lesson_filename(ids[1])).unlink()
    assert render.render(store)["vetoed_ids"] == [ids[1]]


def test_a_render_stopped_by_fake_ctrl_c_after_a_take_back_narrowed_a_lesson_vetoes_nothing(store, monkeypatch):
    """A take-back narrows a lesson with no project to one project (contradiction.py sets its
    cwd): its files in every other folder go, and a render cut short among them must not turn
    the ones already gone into a veto."""
    folders = projects(4)
    ids = general_lessons(store)
    render.render(store)
    update_lesson(store, ids[0], cwd="/home/dev/p2")  # as the lessons pass narrows it
    render_stopped_after(store, monkeypatch, removals=2)
    assert render.render(store)["vetoed"] == 0
    no_veto(store, ids)
    assert {p for p in lesson_files() if ids[0] in p.name} == {
        folders[2] / "memory" / render_files.lesson_filename(ids[0])}


def test_a_render_stopped_by_fake_ctrl_c_while_replacing_older_file_names_vetoes_nothing(store, monkeypatch):
    """Files named remem-<id>.md, as before names carried the memory, are replaced by the new
    names: a render cut short after removing some of the old ones vetoes nothing."""
    [folder] = projects(1)
    ids = general_lessons(store)
    (folder / "memory").mkdir()
    old = older_render(paths.home(), folder / "memory", ids)
    render_stopped_after(store, monkeypatch, removals=2)
    assert sum(path.exists() for path in old) == len(ids) - 2
    assert render.render(store)["vetoed"] == 0
    no_veto(store, ids)
    assert lesson_files() == {folder / "memory" / render_files.lesson_filename(lid) for lid in ids}


# A child process that renders and is killed (SIGKILL, as `kill -9`) right after its second
# removal of a lesson file: nothing after that point runs, no finally, no handler.
KILLED_RENDER = """
import os, signal
from pathlib import Path
from remem.engine import render
from remem.engine.store import Store

real, done = Path.unlink, []

def unlink(self, *args, **kwargs):
    real(self, *args, **kwargs)
    done.append(self)
    if len(done) == 2:
        os.kill(os.getpid(), signal.SIGKILL)

Path.unlink = unlink
with Store() as store:
    render.render(store)
"""


def test_a_render_killed_after_its_second_removal_vetoes_nothing(home):
    folders = projects(3)
    with Store() as store:
        ids = general_lessons(store)
        render.render(store)
    for folder in folders[1:]:
        unused(folder)
    child = subprocess.run([sys.executable, "-c", KILLED_RENDER], cwd=str(ROOT), capture_output=True,
                           text=True, timeout=120)
    assert child.returncode == -9, child.stderr
    assert len(lesson_files()) == 3 * len(WORDS) - 2
    with Store() as store:
        assert render.render(store)["vetoed"] == 0
        no_veto(store, ids)
    assert lesson_files() == {folders[0] / "memory" / render_files.lesson_filename(lid) for lid in ids}


def test_a_file_gone_from_a_folder_its_lesson_no_longer_goes_to_is_no_veto(store):
    """Only a file missing where the lesson is still shown is the person's veto: one of a
    project now unused (render removes it anyway) is not, before the merge pass nor at render."""
    used, idle = projects(2)
    ids = general_lessons(store)
    render.render(store)
    unused(idle)
    (idle / "memory" / render_files.lesson_filename(ids[0])).unlink()
    assert render.take_vetoes(store) == []
    assert render.render(store)["vetoed"] == 0
    no_veto(store, ids)
    assert (used / "memory" / render_files.lesson_filename(ids[0])).exists()
