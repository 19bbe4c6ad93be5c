"""`remem setup --remove` takes out what sleep rendered into Claude Code's memory folders for
this memory: its lesson files, and its lines of each MEMORY.md (the markers too once no memory
has a line there). They used to stay after an uninstall, and Claude Code kept reading them.

Deleting a rendered lesson file is the person's veto, so a file the remove takes out must
never read as one: the next `remem sleep` renders the lessons again, still active."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from remem import paths
from remem.engine import render, render_files, render_text, render_vetoes, sleep
from remem.engine.lessons import add_lesson, get_lesson
from remem.engine.store import Store

SHOP, API = "/home/u/shop", "/home/u/api"
MINE = "# My notes\n- keep me, exactly  \n"


def project_memory(cwd: str) -> Path:
    """A project's Claude Code memory folder (Claude Code makes the project's folder)."""
    folder = paths.claude_projects_dir() / paths.project_folder_name(cwd) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def lesson_files() -> list[Path]:
    return sorted(paths.claude_projects_dir().glob("*/memory/remem-*.md"))


def everything_under_claude() -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(paths.claude_projects_dir().rglob("*")) if p.is_file()}


def remove(cli, *args: str):
    # --no-schedule: the machine's own crontab is never looked at.
    res = cli("setup", "--remove", "--yes", "--no-schedule", *args)
    assert res.exit_code == 0, res.output
    return res


def rendered_memory(store: Store, cli) -> tuple[dict, dict]:
    """Two lessons slept into two projects: one for every project, one for the shop only.
    The shop's MEMORY.md holds the person's own notes."""
    shop = project_memory(SHOP)
    project_memory(API)
    (shop / "MEMORY.md").write_bytes(MINE.encode())
    everywhere = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    shop_only = add_lesson(store, "Never push to main.", "correction", sources=["y"], cwd=SHOP)
    res = cli("sleep", "--quiet")
    assert res.exit_code == 0, res.output
    assert len(lesson_files()) == 3 and render_text.BEGIN in (shop / "MEMORY.md").read_text()
    return everywhere, shop_only


def test_remove_takes_out_the_rendered_lessons_and_the_next_sleep_renders_them_again(store, cli):
    everywhere, shop_only = rendered_memory(store, cli)
    rendered = lesson_files()
    shop, api = project_memory(SHOP), project_memory(API)
    out = remove(cli).output
    assert "deleted 3 lesson files" in out
    assert lesson_files() == []
    assert (shop / "MEMORY.md").read_bytes() == MINE.encode()  # the person's, byte for byte
    assert not (api / "MEMORY.md").exists()  # it held nothing but remem's section
    # A second remove finds nothing left.
    assert remove(cli).output.startswith("nothing to change")
    # The person runs sleep again: no removed file was taken as a veto.
    res = cli("sleep", "--quiet")
    assert res.exit_code == 0, res.output
    for lesson in (everywhere, shop_only):
        assert get_lesson(store, lesson["id"])["status"] == "active"
        assert not render_vetoes.has_veto(lesson)
    assert lesson_files() == rendered
    assert render_files.lesson_filename(shop_only["id"]) in (shop / "MEMORY.md").read_text()


def test_a_file_the_person_deleted_before_the_remove_is_still_their_veto(store, cli):
    everywhere, shop_only = rendered_memory(store, cli)
    (project_memory(SHOP) / render_files.lesson_filename(shop_only["id"])).unlink()  # the person's veto
    remove(cli)
    res = cli("sleep", "--quiet")
    assert res.exit_code == 0, res.output
    assert get_lesson(store, shop_only["id"])["status"] == "vetoed"
    assert get_lesson(store, everywhere["id"])["status"] == "active"
    assert [p.name for p in lesson_files()] == [render_files.lesson_filename(everywhere["id"])] * 2


def test_remove_leaves_another_memorys_files_and_lines(home, tmp_path, monkeypatch, cli):
    """Two memories render into one ~/.claude: each remove takes out only its own, and the
    markers go with the last memory's lines."""
    shop = project_memory(SHOP)
    (shop / "MEMORY.md").write_bytes(MINE.encode())
    work, personal = home, tmp_path / "personal-memory"
    names = {}
    for where, text in ((work, "Use uv, not pip."), (personal, "Run make lint first.")):
        monkeypatch.setenv("REMEM_HOME", str(where))
        with Store() as store:
            names[where] = render_files.lesson_filename(add_lesson(store, text, "correction", sources=["x"])["id"])
            render.render(store)
    monkeypatch.setenv("REMEM_HOME", str(work))
    remove(cli)
    assert [p.name for p in lesson_files()] == [names[personal]]
    text = (shop / "MEMORY.md").read_text()
    assert text.startswith(MINE) and names[personal] in text and names[work] not in text
    assert render_text.BEGIN in text and render_text.END in text
    monkeypatch.setenv("REMEM_HOME", str(personal))
    remove(cli)
    assert lesson_files() == [] and (shop / "MEMORY.md").read_bytes() == MINE.encode()


def test_dry_run_shows_the_files_and_json_lists_them_writing_nothing(store, cli):
    rendered_memory(store, cli)
    files = [str(p) for p in lesson_files()]
    before = everything_under_claude()
    written = (paths.home() / "written.json").read_bytes()
    res = cli("setup", "--remove", "--dry-run", "--no-schedule")
    assert res.exit_code == 0, res.output
    for path in files:
        assert f"delete {path}" in res.output
    assert "-- [Use uv, not pip.]" in res.output  # MEMORY.md's diff
    res = cli("setup", "--remove", "--dry-run", "--no-schedule", "--json")
    assert res.exit_code == 0, res.output
    shown = json.loads(res.output)["rendered"]
    assert shown["files"] == files
    assert sorted(m["path"] for m in shown["memory_md"]) == sorted(
        str(project_memory(cwd) / "MEMORY.md") for cwd in (SHOP, API))
    assert everything_under_claude() == before
    assert (paths.home() / "written.json").read_bytes() == written
    applied = json.loads(remove(cli, "--json").output)["rendered"]
    assert applied["files"] == files and "diff" not in applied["memory_md"][0]


def test_removing_another_agent_leaves_the_lesson_files(store, cli):
    rendered_memory(store, cli)
    before = everything_under_claude()
    remove(cli, "--agent", "codex")
    assert everything_under_claude() == before


def test_a_sleep_running_keeps_the_files_and_names_the_fix(store, cli):
    """A sleep running meanwhile would write the files again: the remove waits for none, says so
    and exits 1, and the files stay as they were."""
    rendered_memory(store, cli)
    before = everything_under_claude()
    with sleep.sleep_lock():
        res = cli("setup", "--remove", "--yes", "--no-schedule")
    assert res.exit_code == 1
    assert "another sleep is running" in res.output and "remem setup --remove" in res.output
    assert everything_under_claude() == before


@pytest.mark.parametrize("mine", ["", "notes\n", "notes\r\n", "a\n\n# b\n"])
def test_the_section_render_appended_goes_with_the_blank_line_before_it(mine):
    tag = render_files.memory_tag()
    body = f"## Lessons\n- [Use uv.]({render_files.lesson_filename('0a1b2c3d4e5f', tag)})"
    assert render_text.without_own_lines(render_text.replace_section(mine, body), tag, set()) == mine


def test_a_section_between_the_persons_lines_leaves_them_exactly():
    tag = render_files.memory_tag()
    other = "- [Run make lint first.](remem-0123abcd-5f4e3d2c1b0a.md)"
    above, below = "# top\r\n\r\n  spaced  \n", "## below\n\tkept\n"
    original = (f"{above}{render_text.BEGIN}\n## Lessons\n"
                f"- [Use uv.]({render_files.lesson_filename('0a1b2c3d4e5f', tag)})\n"
                f"- [Old name.](remem-0a1b2c3d4e5f.md)\n{other}\n{render_text.END}\n{below}")
    kept = render_text.without_own_lines(original, tag, {"remem-0a1b2c3d4e5f.md"})
    assert kept == f"{above}{render_text.BEGIN}\n## Lessons\n{other}\n{render_text.END}\n{below}"
    assert render_text.without_own_lines(kept, "0123abcd", set()) == above + below


def test_files_named_by_this_memory_go_even_with_their_record_lost(store, cli):
    """written.json lost (deleted with a half-cleaned home, say): the files named with this
    memory's tag are still its own, and still go."""
    rendered_memory(store, cli)
    (paths.home() / "written.json").unlink()
    remove(cli)
    assert lesson_files() == []
    assert (project_memory(SHOP) / "MEMORY.md").read_bytes() == MINE.encode()


# ------------------------------------------------------------------------------ setup's own files

def _claude_code_and_codex_installed() -> Path:
    """Claude Code's and Codex's folders, with no config file yet: setup creates each one."""
    user = Path(os.environ["HOME"])
    (user / ".claude").mkdir()
    (user / ".codex").mkdir()
    return user


def test_remove_after_remem_home_was_deleted_makes_no_home_again(home, cli, tmp_path, monkeypatch):
    """docs/SETUP.md's "Uninstalled already?" path: setup, a sleep, the home deleted, then
    --remove. It used to make the home again (setup.json, backups/setup/, sleep.lock)."""
    from tests.test_setup import FAKE_CRONTAB

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "crontab").write_text(FAKE_CRONTAB)
    (bin_dir / "crontab").chmod(0o755)
    cron = tmp_path / "crontab.txt"
    monkeypatch.setenv("FAKE_CRONTAB_FILE", str(cron))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    user = _claude_code_and_codex_installed()
    project_memory(SHOP)
    with Store() as store:
        add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    assert cli("setup", "--yes").exit_code == 0
    assert cli("sleep", "--quiet").exit_code == 0
    assert lesson_files() and "remem: nightly sleep" in cron.read_text()
    created = [user / ".claude" / "settings.json", user / ".claude.json", user / ".codex" / "config.toml",
               user / ".codex" / "hooks.json"]
    assert all(p.is_file() for p in created)
    shutil.rmtree(home)

    res = cli("setup", "--remove", "--yes")
    assert res.exit_code == 0, res.output
    assert not home.exists()
    assert not cron.exists() and lesson_files() == []  # the job and the lessons went all the same
    assert f"{home} does not exist, so --remove kept no backups" in res.output
    # setup.json knew which files setup created; without it they stay, named, for the person.
    for path in created:
        assert path.is_file() and str(path) in res.output


def test_remove_deletes_a_file_setup_created_that_the_agent_rewrote_and_remem_alone_filled(home, cli):
    """A file setup created, rewritten since by its agent (the same content in its own format),
    holds nothing once remem's entries are out: it goes, not a `{}` stub. One the person put
    something of their own in stays, with that."""
    user = _claude_code_and_codex_installed()
    assert cli("setup", "--yes", "--no-schedule").exit_code == 0
    hooks = user / ".codex" / "hooks.json"
    hooks.write_text(json.dumps(json.loads(hooks.read_text()), indent=4))
    config = user / ".codex" / "config.toml"
    config.write_text(config.read_text().replace("\n", "\r\n"))
    settings = user / ".claude" / "settings.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "model": "opus"}))

    preview = json.loads(cli("setup", "--remove", "--dry-run", "--no-schedule", "--json").stdout)
    actions = {Path(c["path"]).name: c["action"] for c in preview["changes"]}
    assert actions["hooks.json"] == actions["config.toml"] == "delete"
    remove(cli)
    assert not hooks.exists() and not config.exists()
    assert json.loads(settings.read_text()) == {"model": "opus"}
