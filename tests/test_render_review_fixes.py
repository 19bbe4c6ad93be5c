"""Render where a review found it wrong: a lesson of a project path too long for a folder name
stopped every sleep of every project; a long path's lessons waited for a folder that was there
(Claude Code cuts such a folder's name short); an unreadable vetoed.json or written.json was
taken for an empty one and written over (records lost, a hand edit overwritten); an unused
project kept remem's empty section and memory folder; a MEMORY.md that is a folder or not
UTF-8, and a `memory` that is a file or a link to nothing, were passed over without a word (or
written through); and a lesson's provenance showed empty dates for forgotten episodes.

The store, the bundled model, ingest and the sleep are the real ones; Claude Code's folders
are made by hand where noted (its hash suffix for a long path is made up: remem never guesses
it, it reads the folder from the transcripts)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import paths
from remem.engine import render, render_files, render_text, render_vetoes, sleep
from remem.engine.ingest import ingest_paths
from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.store import Store
from tests.conftest import ROOT, run_remem

SHOP = "/home/u/shop"
LONG_300 = "/home/you/" + "x" * 300  # no folder name can hold it (255 bytes at most)
LONG_230 = "/home/dev/projects/" + "very-long-name-" * 14  # Claude Code cuts its folder's name
TRANSCRIPT = ROOT / "tests" / "fixtures" / "claude_code" / "v2_tools.jsonl"


def memory_folder(cwd: str = SHOP) -> Path:
    folder = paths.claude_projects_dir() / paths.project_folder_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "memory"


def render_pass(store: Store) -> dict:
    """The sleep's render pass, as `remem sleep --pass render` runs it."""
    return sleep.run_sleep_collect(store, passes=["render"])["passes"]["render"]


def problems_of(out: dict) -> str:
    return "\n".join(out.get("problems", []))


def file_of(folder: Path, lesson: dict) -> Path:
    return folder / render_files.lesson_filename(lesson["id"])


def set_aside_files(name: str) -> list[Path]:
    return sorted(paths.home().glob(f"{name}.bad-*"))


# --------------------------------------------------------------------------- 1. a path too long for a folder name


def test_a_project_path_too_long_for_a_folder_name_never_stops_the_render_of_the_others(store):
    """`cannot use …/projects/-home-you-xxx… (File name too long)`: the sleep failed, every
    night, and no project got its lessons."""
    shop = memory_folder()
    ours = add_lesson(store, "Use pnpm, not npm, for installs.", "correction", sources=["x"], cwd=LONG_300)
    theirs = add_lesson(store, "Run make check before pushing.", "correction", sources=["y"], cwd=SHOP)
    out = render_pass(store)
    assert out["no_project_folder"] == 1 and not out.get("problems")
    assert file_of(shop, theirs).exists() and not file_of(shop, ours).exists()
    summary = sleep.run_sleep_collect(store)  # a whole sleep: the take of vetoes too
    assert summary["passes"]["render"]["no_project_folder"] == 1
    assert store.scalar("SELECT status FROM runs WHERE kind = 'sleep' ORDER BY finished DESC LIMIT 1") == "ok"
    assert get_lesson(store, ours["id"])["status"] == "active"


# --------------------------------------------------------------------------- 2. Claude Code's folder of a long path


def _claude_code_folder_of_a_long_path(cwd: str) -> Path:
    """A Claude Code project folder as it names a long path's: the name cut at 200 characters
    and a suffix of its own (made up here), with one session's transcript in it."""
    name = paths.project_folder_name(cwd)[:200] + "-1k3x9q"
    folder = paths.claude_projects_dir() / name
    folder.mkdir(parents=True)
    text = TRANSCRIPT.read_text(encoding="utf-8").replace('"/home/dev/projects/shop"', json.dumps(cwd))
    (folder / "33333333-3333-4333-8333-333333333333.jsonl").write_text(text, encoding="utf-8")
    return folder


def test_a_long_paths_lessons_go_to_the_folder_its_transcripts_came_from_suffix_made_up(store):
    """"5 wait for a project folder", every sleep, while the folder was there: its name is not
    the whole path's (Claude Code cuts it at 200 characters and adds a hash)."""
    assert len(paths.project_folder_name(LONG_230)) > 200
    folder = _claude_code_folder_of_a_long_path(LONG_230)
    ingest_paths(store)
    assert store.scalar("SELECT count(*) FROM episodes WHERE cwd = ?", (LONG_230,))
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=LONG_230)
    out = render_pass(store)
    assert out["no_project_folder"] == 0 and out["folders"] == 1
    assert file_of(folder / "memory", lesson).exists()
    assert lesson["id"] in (folder / "memory" / "MEMORY.md").read_text(encoding="utf-8")
    # Deleting that file is the person's veto, as anywhere else.
    file_of(folder / "memory", lesson).unlink()
    out = render_pass(store)
    assert out["vetoed"] == 1 and get_lesson(store, lesson["id"])["status"] == "vetoed"


# --------------------------------------------------------------------------- 3. unreadable records


def test_an_unreadable_vetoed_json_is_set_aside_never_written_over(store):
    """A trailing comma in vetoed.json: `remem sleep --pass render` rewrote it as {} and every
    veto record in it was lost, without a word."""
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    memory_folder()
    render_vetoes.veto_lesson(store, lesson["id"])
    path = render_vetoes.vetoed_path()
    broken = path.read_text(encoding="utf-8").rstrip().rstrip("}").rstrip() + ",\n}\n"
    path.write_text(broken, encoding="utf-8")
    out = render_pass(store)
    kept = set_aside_files("vetoed.json")
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == broken  # nothing lost
    said = problems_of(out)
    assert str(path) in said and kept[0].name in said and "not valid JSON" in said
    assert json.loads(path.read_text(encoding="utf-8")) == {}  # a new one, readable
    assert get_lesson(store, lesson["id"])["status"] == "vetoed"  # still vetoed


def test_a_whole_sleep_takes_no_veto_over_an_unreadable_vetoed_json(store):
    """Sleep takes the vetoes of deleted files before its merge pass: with vetoed.json
    unreadable, that wrote the new veto alone over it."""
    folder = memory_folder()
    first = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    second = add_lesson(store, "Run make check before pushing.", "correction", sources=["y"], cwd=SHOP)
    render_pass(store)
    render_vetoes.veto_lesson(store, first["id"])
    path = render_vetoes.vetoed_path()
    path.write_bytes(path.read_bytes()[:-3])  # cut short
    before = path.read_bytes()
    file_of(folder, second).unlink()  # the person's veto
    summary = sleep.run_sleep_collect(store)
    assert [p.read_bytes() for p in set_aside_files("vetoed.json")] == [before]
    assert get_lesson(store, second["id"])["status"] == "vetoed"
    assert second["id"] in json.loads(path.read_text(encoding="utf-8"))
    assert "vetoed.json" in problems_of(summary["passes"]["render"])


def test_a_veto_or_restore_refuses_while_vetoed_json_is_unreadable_and_changes_nothing(store):
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    path = render_vetoes.vetoed_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"abc": {"was": "active"},}', encoding="utf-8")
    res = run_remem("lessons", "veto", lesson["id"])
    assert res.returncode == 1 and res.stderr.strip().count("\n") == 0
    assert "vetoed.json cannot be read" in res.stderr and "remem sleep --pass render" in res.stderr
    assert get_lesson(store, lesson["id"])["status"] == "active"
    assert path.read_text(encoding="utf-8") == '{"abc": {"was": "active"},}'


def test_an_unreadable_written_json_never_costs_a_hand_edit_and_says_so(store):
    """`printf '{"files": {' > written.json`: a hand-edited lesson file was overwritten, a
    vetoed lesson's file was never removed, and neither sleep said anything."""
    folder = memory_folder()
    edited = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    plain = add_lesson(store, "Run make check before pushing.", "correction", sources=["y"], cwd=SHOP)
    dropped = add_lesson(store, "Never push to main.", "correction", sources=["z"], cwd=SHOP)
    render_pass(store)
    mine = file_of(folder, edited).read_text(encoding="utf-8") + "\nMy own note: uv sync first.\n"
    file_of(folder, edited).write_text(mine, encoding="utf-8")
    render_vetoes.veto_lesson(store, dropped["id"])
    render_files.written_path().write_text('{"files": {', encoding="utf-8")
    out = render_pass(store)
    said = problems_of(out)
    kept = set_aside_files("written.json")
    assert [p.read_text(encoding="utf-8") for p in kept] == ['{"files": {']
    assert "written.json could not be read" in said and kept[0].name in said
    assert file_of(folder, edited).read_text(encoding="utf-8") == mine  # the person's, kept
    assert f"{file_of(folder, edited)} was changed by hand" in said
    assert file_of(folder, plain).exists()
    assert not file_of(folder, dropped).exists()  # exactly what remem wrote: remem's, removed
    # From the new record on, the edit stays the person's and a deleted file is a veto again.
    again = render_pass(store)
    assert file_of(folder, edited).read_text(encoding="utf-8") == mine
    file_of(folder, plain).unlink()
    again = render_pass(store)
    assert again["vetoed"] == 1 and get_lesson(store, plain["id"])["status"] == "vetoed"


def test_setup_remove_removes_no_lesson_file_while_written_json_is_unreadable(store):
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    file_of(folder, lesson).write_text("my words now\n", encoding="utf-8")
    render_files.written_path().write_text("[1, 2", encoding="utf-8")
    out = render.unrender()
    assert file_of(folder, lesson).read_text(encoding="utf-8") == "my words now\n"
    assert out["files"] == [] and any("written.json could not be read" in p for p in out["problems"])
    assert render_files.written_path().read_text(encoding="utf-8") == "[1, 2"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=60))
def test_whatever_written_json_holds_a_render_loses_none_of_it(store, raw):
    """Any bytes in written.json: the render never fails over them, and they are either read
    (valid JSON) or kept, byte for byte, in the file set aside."""
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    for old in set_aside_files("written.json"):
        old.unlink()
    render_files.written_path().parent.mkdir(parents=True, exist_ok=True)
    render_files.written_path().write_bytes(raw)
    record, why = render_files.read_record(render_files.written_path(), {})
    out = render.render(store)
    kept = set_aside_files("written.json")
    if why is None:
        assert kept == [] and isinstance(record, dict)
    else:
        assert [p.read_bytes() for p in kept] == [raw] and kept[0].name in problems_of(out)
    assert file_of(folder, lesson).exists()
    json.loads(render_files.written_path().read_text(encoding="utf-8"))  # readable again


# --------------------------------------------------------------------------- 5. nothing of remem's left behind


def _age(path: Path, days: float) -> None:
    """Set a file's or folder's times `days` back (the file system's clock: what render reads)."""
    import time

    when = time.time() - days * 86400
    os.utime(path, (when, when))


def test_an_unused_project_keeps_no_memory_md_nor_memory_folder_of_remems(store):
    """The lesson file went, but a MEMORY.md holding only remem's markers and the memory
    folder remem made stayed, against docs/SLEEP.md."""
    used = memory_folder("/home/u/used")
    add_lesson(store, "Always write commit messages in the imperative mood.", "correction", sources=["x"])
    render_pass(store)
    assert (used / "MEMORY.md").exists()
    _age(used.parent, 200)
    out = render_pass(store)
    assert out["vetoed"] == 0 and not used.exists() and used.parent.is_dir()
    assert str(used) not in render_files.written_path().read_text(encoding="utf-8")


def test_a_folder_whose_lessons_were_all_vetoed_keeps_the_persons_notes_only(store):
    notes = memory_folder("/home/u/notes")
    kept_folder = memory_folder("/home/u/bare")
    for folder in (notes,):
        folder.mkdir()
        (folder / "MEMORY.md").write_text("# My notes\n\n- deploy on Fridays? never\n", encoding="utf-8")
    first = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd="/home/u/notes")
    second = add_lesson(store, "Never push to main.", "correction", sources=["y"], cwd="/home/u/bare")
    render_pass(store)
    assert render_text.BEGIN in (notes / "MEMORY.md").read_text(encoding="utf-8")
    render_vetoes.veto_lesson(store, first["id"])
    render_vetoes.veto_lesson(store, second["id"])
    render_pass(store)
    assert (notes / "MEMORY.md").read_text(encoding="utf-8") == "# My notes\n\n- deploy on Fridays? never\n"
    assert not kept_folder.exists()  # remem made it and nothing else is in it


# --------------------------------------------------------------------------- 6. 7. what cannot be written is said


def test_a_memory_md_that_is_a_folder_or_not_utf8_is_left_alone_and_said(store):
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    folder.mkdir()
    (folder / "MEMORY.md").mkdir()
    out = render_pass(store)
    assert f"{folder / 'MEMORY.md'} is a folder, not a file" in problems_of(out)
    assert file_of(folder, lesson).exists()
    (folder / "MEMORY.md").rmdir()
    latin = "# Notizen f\xfcr sp\xe4ter\n".encode("latin-1")
    (folder / "MEMORY.md").write_bytes(latin)
    out = render_pass(store)
    assert f"{folder / 'MEMORY.md'} is not UTF-8 text" in problems_of(out) and "save it as UTF-8" in problems_of(out)
    assert (folder / "MEMORY.md").read_bytes() == latin


def test_a_memory_that_is_a_file_is_said_once_not_once_per_lesson(store):
    folder = memory_folder()
    folder.write_text("not a folder\n", encoding="utf-8")
    for i in range(3):
        add_lesson(store, f"Lesson number {i} about uv and pip.", "correction", sources=[f"x{i}"], cwd=SHOP)
    out = render_pass(store)
    said = out.get("problems", [])
    assert said == [f"{folder} is a file, not a folder: remem writes no lessons there; move it aside (or point "
                    "the link at a folder) and the next sleep writes them"]
    assert folder.read_text(encoding="utf-8") == "not a folder\n"


def test_a_memory_link_to_nothing_makes_no_folder_at_its_end(store, tmp_path):
    folder = memory_folder()
    target = tmp_path / "dotfiles" / "claude-memory"
    folder.symlink_to(target)
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    out = render_pass(store)
    assert not target.exists() and not target.parent.exists()
    assert f"{folder} is a link to nothing, not a folder" in problems_of(out)
    target.mkdir(parents=True)  # the person points it at a folder: the lessons go there
    render_pass(store)
    assert (target / "MEMORY.md").exists() and folder.is_symlink()


# --------------------------------------------------------------------------- 8. provenance of forgotten episodes


def test_a_forgotten_source_episode_reads_forgotten_not_empty_parentheses(store):
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["2389c689a6c5ce51", "e2183112364b671d"],
                        cwd=SHOP)
    render_pass(store)
    text = file_of(folder, lesson).read_text(encoding="utf-8")
    assert "2389c689a6c5ce51 (forgotten), e2183112364b671d (forgotten)" in text and "()" not in text
