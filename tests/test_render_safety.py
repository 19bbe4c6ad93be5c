"""Render keeps the person's files safe: MEMORY.md is theirs (and Claude Code's) with remem's
section in it, and a lesson file they changed is theirs too. Each test is a way a render lost
or mangled what the person wrote: a missing end marker or a quoted begin marker replaced their
notes, a lesson holding a marker grew MEMORY.md every night, an index of hundreds of lessons
pushed their notes past what Claude Code reads, a vetoed lesson's file that could not be removed
once stayed for good, hand edits and links were overwritten, a line added inside the section
was dropped, read-only and hard-linked files were replaced, CRLF files flipped to LF, and one
MEMORY.md linked into two projects took turns holding each one's lessons."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import paths
from remem.engine import render, render_files, render_text, render_vetoes, sleep
from remem.engine.lessons import add_lesson, edit_text, get_lesson
from remem.engine.store import Store
from tests.conftest import ROOT

BEGIN, END = render_text.BEGIN, render_text.END
HEADING = "## Lessons remem learned (delete a file to veto it)"
SHOP = "/home/u/shop"


def memory_folder(cwd: str = SHOP) -> Path:
    """The memory folder of Claude Code's folder for the project at `cwd` (the project folder made)."""
    folder = paths.claude_projects_dir() / paths.project_folder_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "memory"


def render_pass(store: Store) -> dict:
    """The sleep's render pass, as `remem sleep --pass render` runs it."""
    return sleep.run_sleep_collect(store, passes=["render"])["passes"]["render"]


def problems_of(out: dict) -> str:
    return "\n".join(out.get("problems", []))


def lines_of(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8").split("\n")


def file_of(folder: Path, lesson: dict) -> Path:
    return folder / render_files.lesson_filename(lesson["id"])


def written_entries() -> dict[str, dict]:
    return json.loads(render_files.written_path().read_text())["files"]


# --------------------------------------------------------------------------- markers are whole lines, one pair


def test_a_missing_end_marker_leaves_memory_md_alone_and_names_the_fix(store):
    """The end marker lost (a merge, an edit): the next render replaced everything from the
    begin marker on, the person's notes below it included, and appended a new section."""
    folder = memory_folder()
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    memory = folder / "MEMORY.md"
    text = memory.read_text(encoding="utf-8").replace(END + "\n", "")
    text = "# My own notes\nKeep this.\n\n" + text + "\n## After remem's section\nIMPORTANT PERSONAL NOTE\n"
    memory.write_text(text, encoding="utf-8")
    add_lesson(store, "Never push to main.", "correction", sources=["y"], cwd=SHOP)
    for _ in range(2):
        out = render_pass(store)
        assert memory.read_text(encoding="utf-8") == text
        assert f"{memory}: remem's section has its `{BEGIN}` line but no `{END}` line" in problems_of(out)
        assert f"restore `{END}` on a line of its own after remem's lines, or delete the section" in problems_of(out)
    # Put right, the section is rewritten and the notes are where they were.
    memory.write_text(text.replace("\n\n## After", f"\n{END}\n\n## After"), encoding="utf-8")
    out = render_pass(store)
    assert "problems" not in out
    after = memory.read_text(encoding="utf-8")
    assert after.count(BEGIN) == after.count(END) == 1 and "Never push to main." in after
    assert after.startswith("# My own notes\nKeep this.\n\n") and after.endswith("IMPORTANT PERSONAL NOTE\n")


def test_the_markers_quoted_in_the_persons_notes_are_text(store):
    """Notes documenting remem quoted its begin marker: everything from the quote to remem's
    end marker (a deploy checklist) was replaced by the section."""
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    memory = folder / "MEMORY.md"
    notes = (f"# Notes\nremem keeps its lessons between `{BEGIN}` and `{END}`; do not edit there.\n\n"
             "## Deploy checklist\n- step 1: tag\n- step 2: announce\n\n")
    memory.write_text(notes + memory.read_text(encoding="utf-8"), encoding="utf-8")
    add_lesson(store, "Never push to main.", "correction", sources=["y"], cwd=SHOP)
    out = render_pass(store)
    after = memory.read_text(encoding="utf-8")
    assert "problems" not in out and after.startswith(notes)
    assert "Never push to main." in after and file_of(folder, lesson).name in after


@pytest.mark.parametrize("extra", [BEGIN, END], ids=["begin-twice", "end-twice"])
def test_a_marker_line_twice_leaves_memory_md_alone(store, extra):
    """A marker pasted on a line of its own in a code block: which pair is remem's is a guess,
    and a wrong one replaces the person's lines."""
    folder = memory_folder()
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    memory = folder / "MEMORY.md"
    text = memory.read_text(encoding="utf-8") + f"\n## How remem marks its lines\n```\n{extra}\n```\n"
    memory.write_text(text, encoding="utf-8")
    add_lesson(store, "Never push to main.", "correction", sources=["y"], cwd=SHOP)
    out = render_pass(store)
    assert memory.read_text(encoding="utf-8") == text
    assert "keep one pair, around remem's lines" in problems_of(out)


def test_unrender_leaves_a_memory_md_with_a_missing_end_marker_alone(store):
    folder = memory_folder()
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    memory = folder / "MEMORY.md"
    text = memory.read_text(encoding="utf-8").replace(END + "\n", "") + "\n## Mine\nIMPORTANT PERSONAL NOTE\n"
    memory.write_text(text, encoding="utf-8")
    out = render.unrender()
    assert memory.read_text(encoding="utf-8") == text
    assert any(f"no `{END}` line" in p for p in out["problems"])


# --------------------------------------------------------------------------- markers in a lesson's words


def test_a_lesson_holding_the_end_marker_keeps_memory_md_one_section(store):
    """A lesson whose words hold `<!-- remem:end -->` added a line to MEMORY.md every night."""
    folder = memory_folder()
    lesson = add_lesson(store, f"Never edit below {END} in MEMORY.md files, nor open <!-- a comment.",
                        "correction", sources=["x"], cwd=SHOP)
    memory = folder / "MEMORY.md"
    sizes = []
    for _ in range(3):
        render_pass(store)
        sizes.append(memory.read_bytes())
        assert [line.strip() for line in lines_of(memory)].count(END) == 1
    assert sizes[0] == sizes[1] == sizes[2]
    index = next(line for line in lines_of(memory) if lesson["id"] in line)
    lesson_text = file_of(folder, lesson).read_text(encoding="utf-8")
    for shown in (index, lesson_text):  # no HTML comment opened or closed, the words still there
        assert "<!--" not in shown and "-->" not in shown
        assert "Never edit below <\\!-- remem:end --\\> in MEMORY.md" in shown


@given(st.text(alphabet="<!-> ab", max_size=60))
def test_quoted_markup_leaves_no_comment_opened_or_closed(text):
    quoted = render_text.quoted_markup(text)
    assert "<!--" not in quoted and "-->" not in quoted
    assert quoted.replace("\\", "") == text.replace("\\", "")  # only backslashes were added


# --------------------------------------------------------------------------- the index's size


def _config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def test_memory_md_lists_the_strongest_lessons_that_fit_and_names_the_command_for_the_rest(store, home, cli):
    """500 lessons made a 506-line, 67 KB MEMORY.md; Claude Code reads its first 200 lines."""
    folder = memory_folder()
    memory = folder / "MEMORY.md"
    memory.parent.mkdir(parents=True)
    memory.write_text("# My project notes\n", encoding="utf-8")
    made = [add_lesson(store, f"Lesson {i}: in module m{i} prefer the new approach, as said on review.",
                       "correction", sources=[f"s{i}"], cwd=SHOP if i % 2 else None) for i in range(130)]
    with store.write() as conn:  # lesson i is the (i+1)-th weakest
        conn.executemany("UPDATE lessons SET strength = ? WHERE id = ?",
                         [(1.0 + i / 100, l["id"]) for i, l in enumerate(made)])
    render_pass(store)
    own = [line for line in lines_of(memory) if "](remem-" in line]
    assert len(own) == 50  # render.index_lines
    strongest = [l["id"] for l in reversed(made)][:50]
    assert [re.search(r"-(\w+)\.md\)$", line).group(1) for line in own] == strongest
    more = f"- … 80 more lessons (remem {render_files.memory_tag()}): `remem lessons list --project {SHOP} --limit 0`"
    assert more in lines_of(memory)
    assert len(memory.read_bytes()) < 8192 + 1000 and len(lines_of(memory)) < 60
    assert len(list(folder.glob("remem-*.md"))) == 130  # every lesson keeps its file: delete it to veto
    # A note appended by Claude Code stays after the section, and within what it reads.
    with memory.open("a", encoding="utf-8") as handle:
        handle.write("- [User prefers tabs](tabs.md)\n")
    render_pass(store)
    assert lines_of(memory).index("- [User prefers tabs](tabs.md)") < 60
    # The byte budget, from the config: fewer lines fit.
    assert cli("config", "set", "render.index_bytes", "2000").exit_code == 0
    render_pass(store)
    own = [line for line in lines_of(memory) if "](remem-" in line]
    assert 0 < len(own) < 50 and sum(len(line.encode()) + 1 for line in own) <= 2000
    assert cli("config", "set", "render.index_lines", "0").exit_code != 0  # out of range


def _age(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_a_long_unused_project_folder_gets_no_lessons_of_every_project(store):
    """A hundred general lessons went into each of two hundred old project folders: a memory
    folder and a MEMORY.md made in every one, 85 MB of files."""
    used = memory_folder("/home/u/used")
    old = memory_folder("/home/u/old")
    transcript = old.parent / "0b8e6c6e-session.jsonl"
    transcript.write_text("{}\n")
    _age(transcript, 200)
    _age(old.parent, 200)
    own_memory = memory_folder("/home/u/notes-of-its-own")  # Claude Code's own memory in it
    own_memory.mkdir()
    (own_memory / "MEMORY.md").write_text("# Claude's notes\n", encoding="utf-8")
    _age(own_memory.parent, 200)
    lesson = add_lesson(store, "Always write commit messages in the imperative mood.", "correction", sources=["x"])
    render_pass(store)
    assert file_of(used, lesson).exists() and file_of(own_memory, lesson).exists()
    assert not old.exists()
    # A project whose own lesson is there gets the general ones beside it.
    own = add_lesson(store, "Run make check before pushing.", "correction", sources=["y"], cwd="/home/u/old")
    render_pass(store)
    assert file_of(old, own).exists() and file_of(old, lesson).exists()
    # A folder remem made that has gone unused loses them: removed, never a veto.
    gone = used.parent
    _age(gone, 200)
    out = render_pass(store)
    assert not file_of(used, lesson).exists() and out["vetoed"] == 0
    assert get_lesson(store, lesson["id"])["status"] == "active"
    assert not used.exists() and used.parent.is_dir()  # the memory folder remem made goes with its stub


# --------------------------------------------------------------------------- a file that could not be removed


def _as_a_person(*args: str) -> subprocess.CompletedProcess[str]:
    """`remem ARGS` with file permissions applying as they do to a person (root's override of
    them dropped: a read-only folder then refuses root too)."""
    command = [sys.executable, "-m", "remem", *args]
    if os.geteuid() == 0:
        capsh = shutil.which("capsh")
        if capsh is None:
            pytest.skip("root, and no capsh to drop the override of file permissions")
        command = [capsh, "--drop=cap_dac_override,cap_dac_read_search", "--",
                   "-c", " ".join(f"'{part}'" for part in command)]
    return subprocess.run(command, capture_output=True, text=True, cwd=str(ROOT), timeout=120, check=False)


def test_a_vetoed_lessons_file_that_could_not_be_removed_is_removed_by_a_later_sleep(store):
    """A read-only memory folder for one sleep: the vetoed lesson's file stayed for good."""
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    path = file_of(folder, lesson)
    render_vetoes.veto_lesson(store, lesson["id"])
    folder.chmod(0o555)
    try:
        res = _as_a_person("sleep", "--pass", "render", "--json")
    finally:
        folder.chmod(0o755)
    assert res.returncode == 0, res.stderr
    assert f"cannot remove {path}" in problems_of(json.loads(res.stdout)["passes"]["render"])
    assert path.exists() and str(path) in written_entries()
    out = render_pass(store)
    assert not path.exists() and out["removed"] == 1 and str(path) not in written_entries()


def test_a_file_listed_to_be_removed_and_then_deleted_is_no_veto(store):
    folder = memory_folder("/home/u/a")
    lesson = add_lesson(store, "Never push to main.", "correction", sources=["x"])
    render_pass(store)
    path = file_of(folder, lesson)
    record = json.loads(render_files.written_path().read_text())
    for info in record["files"].values():
        info["remove"] = True  # as a render that could not remove it left it
    render_files.written_path().write_text(json.dumps(record))
    _age(folder.parent, 200)  # the project went unused: the general lesson is not wanted there
    path.unlink()
    out = render_pass(store)
    assert out["vetoed"] == 0 and get_lesson(store, lesson["id"])["status"] == "active"


def test_a_hand_edited_file_whose_project_is_in_use_again_is_vetoed_when_deleted(store):
    """Kept (changed by hand) while its project was out of use, it stayed marked to remove
    when the project came back, so deleting it was no veto and it was written again."""
    folder = memory_folder("/home/u/a")
    lesson = add_lesson(store, "Never push to main.", "correction", sources=["x"])
    render_pass(store)
    path = file_of(folder, lesson)
    path.write_text(path.read_text() + "Mine: ask first.\n", encoding="utf-8")
    transcript = folder.parent / "0b8e6c6e-session.jsonl"
    transcript.write_text("{}\n")
    for old in (transcript, folder, folder.parent):
        _age(old, 200)
    render_pass(store)  # out of use: kept, the person's edit
    transcript.write_text("{}\n{}\n")  # a session there again
    render_pass(store)
    path.unlink()
    out = render_pass(store)
    assert out["vetoed"] == 1 and get_lesson(store, lesson["id"])["status"] == "vetoed"


def test_taking_out_a_section_that_opens_the_file_keeps_its_byte_order_mark():
    text = (f"\ufeff{BEGIN}\n{HEADING}\n- [Use uv](remem-0123abcd-L1.md)\n{END}\nmine\n")
    assert render_text.without_own_lines(text, "0123abcd", set()) == "\ufeffmine\n"
    alone = f"\ufeff{BEGIN}\n{HEADING}\n- [Use uv](remem-0123abcd-L1.md)\n{END}\n"
    assert render_text.without_own_lines(alone, "0123abcd", set()) == "\ufeff"


# --------------------------------------------------------------------------- lesson files the person changed


def test_a_lesson_file_changed_by_hand_is_left_alone_until_the_lesson_is_edited(store):
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    path = file_of(folder, lesson)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("My clarification: except in the legacy/ folder.\n")
    edited = path.read_bytes()
    with store.write() as conn:  # seen again: the file remem would write differs now
        conn.execute("UPDATE lessons SET sources = ?, seen = 2 WHERE id = ?", ('["x", "z"]', lesson["id"]))
    for _ in range(2):
        out = render_pass(store)
        assert path.read_bytes() == edited
        assert f"{path} was changed by hand, so remem leaves it as it is" in problems_of(out)
        assert f"`remem lessons edit {lesson['id']}`" in problems_of(out)
    assert get_lesson(store, lesson["id"])["status"] == "active"
    # The person puts their words into the lesson: the file is remem's again, written from them.
    edit_text(store, lesson["id"], "Use uv, not pip, except in the legacy/ folder.")
    out = render_pass(store)
    assert "problems" not in out and "Use uv, not pip, except in the legacy/ folder." in path.read_text()
    # Deleting it is still a veto.
    path.unlink()
    render_pass(store)
    assert get_lesson(store, lesson["id"])["status"] == "vetoed"


def test_a_retired_lessons_file_changed_by_hand_stays(store):
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    path = file_of(folder, lesson)
    path.write_text(path.read_text() + "Mine: see also docs/uv.md\n", encoding="utf-8")
    render_vetoes.veto_lesson(store, lesson["id"])
    out = render_pass(store)
    assert path.exists() and "Mine: see also" in path.read_text()
    assert "no longer shown to agents here, so remem leaves your file as it is" in problems_of(out)
    path.unlink()  # the person is done with it: forgotten, no veto of anything
    out = render_pass(store)
    assert "problems" not in out and str(path) not in written_entries()


def test_a_lesson_file_made_a_link_stays_a_link(store, tmp_path):
    folder = memory_folder()
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    path = file_of(folder, lesson)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "lesson.md"
    shutil.copy(path, target)
    path.unlink()
    path.symlink_to(target)
    edit_text(store, lesson["id"], "Use uv, never pip.")
    render_pass(store)
    assert path.is_symlink() and "Use uv, never pip." in target.read_text()


# --------------------------------------------------------------------------- lines added inside the section


def test_a_line_added_inside_the_section_moves_below_it(store):
    """Claude Code's own memory writer appended its index line to the list it sits in, remem's:
    the next render dropped it."""
    folder = memory_folder()
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    memory = folder / "MEMORY.md"
    theirs = "- [User prefers rebase over merge](feedback_rebase.md)"
    memory.write_text(memory.read_text().replace(END, f"{theirs}\n  a note of mine  \n{END}"), encoding="utf-8")
    render_pass(store)
    lines = lines_of(memory)
    end = lines.index(END)
    assert lines[end + 1:end + 3] == [theirs, "  a note of mine  "]
    before = memory.read_bytes()
    render_pass(store)
    assert memory.read_bytes() == before  # stays put
    render.unrender()
    assert theirs in lines_of(memory) and "  a note of mine  " in lines_of(memory)


def test_unrender_keeps_the_persons_lines_inside_the_section(store):
    folder = memory_folder()
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    memory = folder / "MEMORY.md"
    memory.write_text("# mine\n\n" + memory.read_text().replace(END, f"- [rebase](feedback_rebase.md)\n{END}"),
                      encoding="utf-8")
    render.unrender()
    assert memory.read_text() == "# mine\n\n- [rebase](feedback_rebase.md)\n"


# --------------------------------------------------------------------------- read-only and hard-linked files


def test_a_write_protected_memory_md_and_lesson_file_are_left_alone(store):
    folder = memory_folder()
    folder.mkdir(parents=True)
    memory = folder / "MEMORY.md"
    memory.write_text("# My notes (read-only on purpose)\n", encoding="utf-8")
    memory.chmod(0o444)
    lesson = add_lesson(store, "Use uv, never pip.", "correction", sources=["x"], cwd=SHOP)
    out = render_pass(store)
    assert memory.read_text() == "# My notes (read-only on purpose)\n"
    assert stat.S_IMODE(memory.stat().st_mode) == 0o444
    assert f"cannot write {memory} (it is write-protected" in problems_of(out)
    path = file_of(folder, lesson)
    path.chmod(0o444)
    before = path.read_bytes()
    edit_text(store, lesson["id"], "Use uv, never pip or poetry.")
    out = render_pass(store)
    assert path.read_bytes() == before and f"cannot write {path} (it is write-protected" in problems_of(out)
    assert get_lesson(store, lesson["id"])["status"] == "active"


def test_a_hard_linked_memory_md_keeps_its_link(store, tmp_path):
    folder = memory_folder()
    folder.mkdir(parents=True)
    notes = tmp_path / "notes.md"
    notes.write_text("# My notes\n", encoding="utf-8")
    os.link(notes, folder / "MEMORY.md")
    add_lesson(store, "Use uv, never pip.", "correction", sources=["x"], cwd=SHOP)
    out = render_pass(store)
    assert os.path.samefile(notes, folder / "MEMORY.md") and notes.stat().st_nlink == 2
    assert notes.read_text() == "# My notes\n"
    assert "hard links, which replacing it would break; make it a symlink instead" in problems_of(out)


# --------------------------------------------------------------------------- CRLF


def test_a_crlf_memory_md_stays_crlf(store):
    """The section was written with LF into a CRLF file (with a BOM), and flipped back after
    each save of the person's editor; a blank line was added before it."""
    folder = memory_folder()
    folder.mkdir(parents=True)
    memory = folder / "MEMORY.md"
    memory.write_bytes("\ufeff# Notes\r\nMine.\r\n\r\n".encode("utf-8"))
    lesson = add_lesson(store, "Use uv, never pip.", "correction", sources=["x"], cwd=SHOP)
    render_pass(store)
    raw = memory.read_bytes()
    name = file_of(folder, lesson).name
    assert raw == (f"\ufeff# Notes\r\nMine.\r\n\r\n{BEGIN}\r\n{HEADING}\r\n"
                   f"- [Use uv, never pip.]({name})\r\n{END}\r\n").encode()
    render_pass(store)
    assert memory.read_bytes() == raw
    # Unrender takes the section out, and the blank line before it, in CRLF too.
    render.unrender()
    assert memory.read_bytes() == "\ufeff# Notes\r\nMine.\r\n".encode("utf-8")


# --------------------------------------------------------------------------- one MEMORY.md, several projects


def test_one_memory_md_linked_into_two_projects_lists_neither_projects_lessons(store, tmp_path):
    """A MEMORY.md kept in a dotfiles repo and linked into two projects held, after each sleep,
    the lessons of whichever project was written last."""
    shared = tmp_path / "dotfiles" / "MEMORY.md"
    shared.parent.mkdir()
    folders = [memory_folder("/home/u/alpha"), memory_folder("/home/u/gamma")]
    for folder in folders:
        folder.mkdir(parents=True)
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd="/home/u/alpha")
    add_lesson(store, "Tag releases with make release.", "correction", sources=["y"], cwd="/home/u/gamma")
    render_pass(store)  # first each its own (an earlier render's section)
    shared.write_text("# Shared notes\n\n" + (folders[1] / "MEMORY.md").read_text(), encoding="utf-8")
    for folder in folders:
        (folder / "MEMORY.md").unlink()
        (folder / "MEMORY.md").symlink_to(shared)
    out = render_pass(store)
    text = shared.read_text()
    assert text.startswith("# Shared notes\n") and "](remem-" not in text
    assert f"{shared} is the MEMORY.md of 2 project folders" in problems_of(out)
    assert sum(f"{shared} is the MEMORY.md" in p for p in out["problems"]) == 1
    render_pass(store)
    assert shared.read_text() == text and all((f / "MEMORY.md").is_symlink() for f in folders)
    assert all(len(list(f.glob("remem-*.md"))) == 1 for f in folders)  # the lesson files are there


# --------------------------------------------------------------------------- never a line of the person's lost


def _remem_shaped(line: str) -> bool:
    """A line render reads as its own inside the section (the test's own description of it)."""
    bare = line.strip()
    return (not bare or bare.startswith(("## Lessons", "- … "))
            or bool(re.fullmatch(r"- \[.*\]\(remem-[^()/\\\s]+\.md\)", bare)))


_PERSONS = st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), min_size=1,
                   max_size=30).filter(
    lambda line: not _remem_shaped(line) and line.strip(" \t\ufeff") not in (BEGIN, END))
_MARKER = {marker: st.tuples(st.sampled_from(["", " ", "\t"]), st.just(marker), st.sampled_from(["", "  "])).map(
    lambda parts: ("marker", "".join(parts))) for marker in (BEGIN, END)}
_TEXT = st.one_of(_PERSONS.map(lambda words: ("person", words)),
                  _PERSONS.map(lambda words: ("person", f"see `{BEGIN}` {words} {END}")))  # markers quoted
_INNER = st.one_of(_TEXT, st.sampled_from(["", HEADING, "- [Old lesson.](remem-0123abcd-0ld1e55on000.md)"]).map(
    lambda line: ("remem", line)))
# The marker lines of a section, and the ways they are found out of place.
_SHAPES = {"section": (BEGIN, END), "none": (), "no end": (BEGIN,), "no begin": (END,),
           "begin twice": (BEGIN, BEGIN, END), "end twice": (BEGIN, END, END), "reversed": (END, BEGIN)}


@st.composite
def _memory_md(draw: st.DrawFn) -> list[tuple[str, str]]:
    """MEMORY.md's lines: the person's around a section whose marker lines are in place or not,
    with the person's lines and remem's inside it."""
    markers = _SHAPES[draw(st.sampled_from(sorted(_SHAPES)))]
    lines = draw(st.lists(_TEXT, max_size=4))
    for marker in markers:
        lines.append(draw(_MARKER[marker]))
        lines += draw(st.lists(_INNER, max_size=4))
    return lines + draw(st.lists(_TEXT, max_size=4))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_memory_md(), crlf=st.booleans(), final_break=st.booleans())
def test_rendering_never_loses_a_line_the_person_wrote(store, lines, crlf, final_break):
    folder = memory_folder()
    folder.mkdir(parents=True, exist_ok=True)
    if not store.scalar("SELECT count(*) FROM lessons"):
        add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], cwd=SHOP)
    nl = "\r\n" if crlf else "\n"
    original = nl.join(words for _, words in lines) + (nl if final_break and lines else "")
    memory = folder / "MEMORY.md"
    memory.write_bytes(original.encode("utf-8"))
    out = render.render(store, morning=False)
    after = memory.read_bytes().decode("utf-8")
    if f"{memory}:" in problems_of(out):  # markers out of place: not one byte changed
        assert after == original
        return
    found = [line.removesuffix("\r") for line in after.split("\n")]
    for _, words in (pair for pair in lines if pair[0] == "person"):
        assert found.count(words) >= sum(1 for kind, w in lines if kind == "person" and w == words), (original, after)
    assert [line.strip(" \t\ufeff") for line in found].count(BEGIN) == 1
    render.render(store, morning=False)
    assert memory.read_bytes().decode("utf-8") == after  # and a second render changes nothing
    # Unrender (`remem setup --remove`) keeps them too: from the file as it was, and as rendered,
    # taking out this memory's lines or the other memory's ("0123abcd") in the section.
    for text in (original, after):
        for tag in (render_files.memory_tag(), "0123abcd"):
            unrendered = render_text.without_own_lines(text, tag, set())
            kept = [line.removesuffix("\r") for line in unrendered.split("\n")]
            for _, words in (pair for pair in lines if pair[0] == "person"):
                assert words in kept, (text, unrendered)
