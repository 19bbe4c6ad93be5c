"""Two memories (two REMEM_HOMEs: a work and a personal one, or a test memory imported from the
real one) rendering into one ~/.claude. Both named a lesson they held under the same id
`remem-<id>.md`: one overwrote the other's file, and when one vetoed the lesson and removed
its file, the other took the missing file as the person's veto. Each also rewrote MEMORY.md's
section with its own lessons only, dropping the other's."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from remem import paths
from remem.engine import render, render_files, render_text, render_vetoes
from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.store import Store
from tests.conftest import run_remem

SHOP = "/home/u/shop"
UV, PUSH = "0a1b2c3d4e5f", "5f4e3d2c1b0a"  # lesson ids, as a copy or an import keeps them


@contextmanager
def memory(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[Store]:
    """The memory in `home`, with every other location (HOME, ~/.claude) shared."""
    monkeypatch.setenv("REMEM_HOME", str(home))
    with Store() as store:
        yield store


def project_memory(cwd: str = SHOP) -> Path:
    folder = paths.claude_projects_dir() / paths.project_folder_name(cwd) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def files_of(folder: Path, lesson_id: str) -> list[Path]:
    """Every rendered file of one lesson in a folder, whichever memory wrote it."""
    return sorted(p for p in folder.glob("remem-*.md") if p.stem.endswith(lesson_id))


def written_by(home: Path) -> dict[str, Path]:
    """The file of each lesson that the memory in `home` wrote (its written.json)."""
    files = json.loads((home / "written.json").read_text())["files"]
    return {info["lesson"]: Path(path) for path, info in files.items()}


def section(folder: Path) -> str:
    text = (folder / "MEMORY.md").read_text(encoding="utf-8")
    return text[text.index(render_text.BEGIN):text.index(render_text.END) + len(render_text.END)]


def the_same_lessons(store: Store) -> None:
    """Lessons with fixed ids: a copy or an import of a memory keeps its lessons' ids."""
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], lesson_id=UV)
    add_lesson(store, "Never push to main.", "correction", sources=["y"], lesson_id=PUSH)


def test_two_memories_holding_the_same_lessons_write_a_file_each_and_veto_only_their_own(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    work, personal = home, tmp_path / "personal-memory"
    folder = project_memory()
    names = {}
    for where in (work, personal):
        with memory(monkeypatch, where) as store:
            the_same_lessons(store)
            render.render(store)
        names[where] = written_by(where)
    for lesson_id in (UV, PUSH):  # one file per memory, never one shared
        assert files_of(folder, lesson_id) == sorted([names[work][lesson_id], names[personal][lesson_id]])
    personal_bytes = names[personal][UV].read_bytes()
    # The work memory's person vetoes a lesson: only the work memory's file goes ...
    with memory(monkeypatch, work) as store:
        render_vetoes.veto_lesson(store, UV)
        assert render.render(store)["removed"] == 1
    assert files_of(folder, UV) == [names[personal][UV]]
    # ... and the personal memory keeps its lesson and its file: no veto was taken there.
    with memory(monkeypatch, personal) as store:
        assert render.take_vetoes(store) == []
        assert render.render(store)["vetoed"] == 0
        assert get_lesson(store, UV)["status"] == "active"
    assert names[personal][UV].read_bytes() == personal_bytes
    assert UV not in json.loads((personal / "vetoed.json").read_text())
    # The person deletes the personal memory's file of the other lesson: a veto there only.
    names[personal][PUSH].unlink()
    with memory(monkeypatch, personal) as store:
        assert render.render(store)["vetoed_ids"] == [PUSH]
    with memory(monkeypatch, work) as store:
        assert render.render(store)["vetoed"] == 0
        assert get_lesson(store, PUSH)["status"] == "active"
    assert files_of(folder, PUSH) == [names[work][PUSH]]


def test_memory_md_lists_every_memorys_lessons_and_each_rewrites_only_its_own(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    work, personal = home, tmp_path / "personal-memory"
    folder = project_memory()
    (folder / "MEMORY.md").write_text("# my notes\n", encoding="utf-8")
    ids = {}
    for where, text in ((work, "Run the tests with pytest -n 2."), (personal, "Write commit messages in English.")):
        with memory(monkeypatch, where) as store:
            ids[where] = add_lesson(store, text, "correction", sources=["x"])["id"]
    sections = []
    for where in (work, personal, work):
        with memory(monkeypatch, where) as store:
            render.render(store)
        sections.append(section(folder))
    [work_file], [personal_file] = files_of(folder, ids[work]), files_of(folder, ids[personal])
    assert personal_file.name not in sections[0]  # the personal memory had not rendered yet
    for both in sections[1:]:
        assert f"Run the tests with pytest -n 2.]({work_file.name})" in both
        assert f"Write commit messages in English.]({personal_file.name})" in both
    assert sections[1] == sections[2]  # one section for both, not each its own in turn
    assert (folder / "MEMORY.md").read_text(encoding="utf-8").startswith("# my notes\n")
    with memory(monkeypatch, work) as store:
        render_vetoes.veto_lesson(store, ids[work])
        render.render(store)
    assert files_of(folder, ids[work]) == []
    now = section(folder)
    assert ids[work] not in now and f"Write commit messages in English.]({personal_file.name})" in now


def older_render(home: Path, folder: Path, lesson_ids: list[str]) -> list[Path]:
    """The files, MEMORY.md section and written.json a render left before file names carried
    the memory: remem-<lesson id>.md."""
    made = [folder / f"remem-{lid}.md" for lid in lesson_ids]
    for path in made:
        path.write_text(f"---\nname: {path.stem}\n---\n\nA lesson.\n", encoding="utf-8")
    index = "\n".join(f"- [A lesson.]({path.name})" for path in made)
    (folder / "MEMORY.md").write_text(f"# mine\n\n{render_text.BEGIN}\n## Lessons remem learned\n{index}\n"
                                      f"{render_text.END}\n", encoding="utf-8")
    home.mkdir(parents=True, exist_ok=True)
    (home / "written.json").write_text(json.dumps({"version": 2, "home": str(home.resolve()), "files": {
        str(path): {"lesson": lid} for path, lid in zip(made, lesson_ids)}}))
    return made


def test_files_named_before_names_carried_the_memory_are_renamed_and_a_deleted_one_is_a_veto(store):
    folder = project_memory()
    keep = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    drop = add_lesson(store, "Never push to main.", "correction", sources=["y"])
    kept_old, dropped_old = older_render(paths.home(), folder, [keep["id"], drop["id"]])
    dropped_old.unlink()  # the person's veto, made before this render
    out = render.render(store)
    assert out["vetoed_ids"] == [drop["id"]] and get_lesson(store, drop["id"])["status"] == "vetoed"
    assert get_lesson(store, keep["id"])["status"] == "active"
    [renamed] = files_of(folder, keep["id"])
    assert renamed != kept_old and not kept_old.exists() and "Use uv, not pip." in renamed.read_text()
    assert files_of(folder, drop["id"]) == []
    text = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert text.startswith("# mine\n\n") and renamed.name in text and kept_old.name not in text
    assert list(json.loads(render_files.written_path().read_text())["files"]) == [str(renamed)]
    # From now on the new name is the one whose deletion is a veto.
    renamed.unlink()
    assert render.render(store)["vetoed_ids"] == [keep["id"]]


def test_a_shared_file_of_the_older_naming_that_the_other_memory_renamed_is_no_veto(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Two memories holding the same lesson both listed its one remem-<id>.md. The first to
    render with names of its own replaces the file with its own and removes it: the other
    memory must not take that as the person's veto. A file the person did delete, of a lesson
    only that memory holds, is still a veto."""
    work, personal = home, tmp_path / "personal-memory"
    folder = project_memory()
    with memory(monkeypatch, work) as store:
        the_same_lessons(store)
    with memory(monkeypatch, personal) as store:
        the_same_lessons(store)
        own = add_lesson(store, "Write commit messages in English.", "correction", sources=["z"])["id"]
    shared = older_render(work, folder, [UV, PUSH])
    older_render(personal, folder, [UV, PUSH, own])[-1].unlink()  # a veto
    with memory(monkeypatch, work) as store:
        out = render.render(store)
        assert out["vetoed"] == 0 and out["removed"] == 2
    assert not any(path.exists() for path in shared)
    with memory(monkeypatch, personal) as store:
        assert render.take_vetoes(store) == [own]
        out = render.render(store)
        assert out["vetoed"] == 0  # taken just before, by take_vetoes
        statuses = {lid: get_lesson(store, lid)["status"] for lid in (UV, PUSH, own)}
    assert statuses == {UV: "active", PUSH: "active", own: "vetoed"}
    for lesson_id in (UV, PUSH):
        assert len(files_of(folder, lesson_id)) == 2  # the work memory's and the personal one's
    index = section(folder)
    assert index.count("](remem-") == 4 and own not in index


def test_a_test_memory_imported_from_the_real_one_vetoes_nothing_of_it(tmp_path: Path):
    """The reported case, through `remem`: a test memory imported from the real one renders
    into the same ~/.claude; a veto in the real memory leaves the test memory's lessons alone."""
    real, test = tmp_path / "real", tmp_path / "test"
    folder = project_memory()
    with Store(real / "memory.db") as store:
        the_same_lessons(store)
    env_real, env_test = {"REMEM_HOME": str(real)}, {"REMEM_HOME": str(test)}
    export = tmp_path / "real.jsonl"
    assert run_remem("export", str(export), env=env_real).returncode == 0
    assert run_remem("import", str(export), env=env_test).returncode == 0
    for env in (env_real, env_test):
        assert run_remem("sleep", "--pass", "render", "-q", env=env).returncode == 0
    assert len(files_of(folder, UV)) == 2
    assert run_remem("lessons", "veto", UV, env=env_real).returncode == 0
    for env in (env_real, env_test, env_real, env_test):
        res = run_remem("sleep", "--pass", "render", "--json", env=env)
        assert res.returncode == 0, res.stderr
        assert res.json()["passes"]["render"]["vetoed"] == 0
    listed = run_remem("lessons", "list", "--status", "all", "--json", env=env_test).json()
    assert {l["id"]: l["status"] for l in listed} == {UV: "active", PUSH: "active"}
    assert len(files_of(folder, UV)) == 1
