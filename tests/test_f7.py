"""Defects found in F7: a copied memory's sleep vetoed every lesson of the original; the TUI
loaded every pane (and every lesson) at first paint; the lesson detail scanned every prime;
`lessons list` printed every lesson; `lessons edit` started vim without a terminal; the
`--status` help left out a status it accepts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from remem import paths
from remem.engine import render
from remem.engine.lessons import add_lesson, get_lesson
from tests.conftest import run_remem


# --------------------------------------------------------------------------- 1. copied memories

def _lesson_files(home: Path) -> list[Path]:
    return sorted((home / "claude" / "projects").glob("*/memory/remem-*.md"))


def _lesson_id(path: Path) -> str:
    """The lesson of a rendered file: remem-<memory>-<lesson>.md, or remem-<lesson>.md as named
    before names carried the memory."""
    return path.stem.rsplit("-", 1)[-1]


def _demo_and_copy(tmp_path: Path, *, legacy: bool = False) -> tuple[Path, Path]:
    """`remem --home A demo` (its lessons rendered), then `cp -a A B`. legacy: A's written.json
    and file names as remem wrote them before version 2 (absolute paths, no owner, and files
    named remem-<lesson>.md)."""
    a, b = tmp_path / "A", tmp_path / "B"
    assert run_remem("--home", str(a), "demo").returncode == 0
    assert len(_lesson_files(a)) == 5
    if legacy:
        record = json.loads((a / "written.json").read_text())
        files = {}
        for path in _lesson_files(a):
            older = path.with_name(f"remem-{_lesson_id(path)}.md")
            path.rename(older)
            files[str(older)] = {"lesson": _lesson_id(path)}
        assert len(record["files"]) == len(files)
        (a / "written.json").write_text(json.dumps({"version": 1, "files": files}))
    shutil.copytree(a, b, symlinks=True)
    return a, b


def _sleep(home: Path) -> dict:
    res = run_remem("--home", str(home), "sleep", "--json")
    assert res.returncode == 0, res.stderr
    return res.json()


@pytest.mark.parametrize("legacy", [False, True], ids=["written-v2", "written-v1"])
def test_sleeping_in_a_copied_memory_leaves_the_originals_lesson_files_and_vetoes_alone(tmp_path, legacy):
    """B's render removed A's remem-*.md (written.json held A's absolute paths), and A's next
    sleep took every missing file as the person's veto: "vetoed 5"."""
    a, b = _demo_and_copy(tmp_path, legacy=legacy)
    before = {p: p.read_bytes() for p in _lesson_files(a)}
    out = _sleep(b)
    # B removes at most its own copies (file names carry the memory: B's differ from A's)
    assert out["passes"]["render"]["removed"] == (0 if legacy else 5)
    assert {p: p.read_bytes() for p in _lesson_files(a)} == before  # not one byte of A's changed
    written = json.loads((b / "written.json").read_text())
    assert written["home"] == str(b.resolve())
    assert all(not Path(k).is_absolute() and k.startswith("claude/") for k in written["files"])
    out = _sleep(a)
    assert out["events"]["vetoed"] == [] and out["passes"]["render"]["vetoed"] == 0
    assert len(_lesson_files(a)) == 5
    active = run_remem("--home", str(a), "lessons", "list", "--json").json()
    assert len(active) == 5


def test_each_copy_owns_its_own_copies_of_the_files(tmp_path):
    """A veto by deleting a file still works in the copy, and only there."""
    a, b = _demo_and_copy(tmp_path)
    gone = _lesson_files(b)[0]
    lesson_id = _lesson_id(gone)
    gone.unlink()
    out = _sleep(b)
    assert out["events"]["vetoed"] == [lesson_id]
    assert len(_lesson_files(b)) == 4 and len(_lesson_files(a)) == 5
    assert _sleep(a)["events"]["vetoed"] == []
    statuses = {l["id"]: l["status"] for l in
                run_remem("--home", str(a), "lessons", "list", "--status", "all", "--json").json()}
    assert statuses[lesson_id] == "active"


def _project(cwd: str) -> Path:
    folder = paths.claude_projects_dir() / paths.project_folder_name(cwd) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_a_written_json_of_another_live_memory_is_never_acted_on_and_is_rewritten(store, tmp_path):
    """Two memories rendering into one ~/.claude: B's written.json came from A (its `home`
    names A, which still holds a memory). A file of it that is missing is no veto in B, and
    B's render removes nothing it lists."""
    other = tmp_path / "other-memory"
    other.mkdir()
    (other / "memory.db").write_bytes(b"")
    folder = _project("/home/u/shop")
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    stray = folder / "remem-feedbeef0000.md"  # a lesson file of A's this memory never had
    stray.write_text("A's lesson\n")
    listed = {str(folder / f"remem-{lesson['id']}.md"): {"lesson": lesson["id"]},  # missing here
              str(stray): {"lesson": "feedbeef0000"}}
    render.written_path().parent.mkdir(parents=True, exist_ok=True)
    render.written_path().write_text(json.dumps({"version": 2, "home": str(other.resolve()), "files": listed}))
    assert render.take_vetoes(store) == []
    out = render.render(store)
    assert out["vetoed"] == 0 and out["removed"] == 0 and stray.exists()
    assert get_lesson(store, lesson["id"])["status"] == "active"
    written = json.loads(render.written_path().read_text())
    assert written["home"] == str(paths.home().resolve())
    assert list(written["files"].values()) == [{"lesson": lesson["id"]}]
    # From now on the list is this memory's own: deleting its file is a veto.
    (folder / render.lesson_filename(lesson["id"])).unlink()
    assert render.render(store)["vetoed_ids"] == [lesson["id"]]


def test_a_written_json_entry_that_is_no_lesson_file_of_ours_is_never_removed(store, tmp_path):
    """Only `remem-<lesson>.md` in a project's memory folder under the Claude Code folder this
    memory renders into is ever removed."""
    _project("/home/u/shop")
    elsewhere = tmp_path / "notes" / "memory"
    elsewhere.mkdir(parents=True)
    victims = [elsewhere / "remem-abc123.md", paths.user_home() / ".bashrc",
               paths.claude_projects_dir() / "-home-u-shop" / "memory" / "MEMORY-notes.md"]
    for victim in victims:
        victim.write_text("keep me\n")
    render.written_path().parent.mkdir(parents=True, exist_ok=True)
    render.written_path().write_text(json.dumps({"version": 1, "files": {
        str(victims[0]): {"lesson": "abc123"}, str(victims[1]): {"lesson": "abc123"},
        str(victims[2]): {"lesson": "abc123"}, "../../etc/remem-abc123.md": {"lesson": "abc123"}}}))
    out = render.render(store)
    assert out["removed"] == 0 and all(v.read_text() == "keep me\n" for v in victims)


def test_a_memory_moved_to_another_folder_keeps_its_list(store, tmp_path):
    """`mv ~/.remem ~/.remem2`: the list names a home that holds no memory any more, so it is
    this memory's, and a file deleted meanwhile is still a veto."""
    folder = _project("/home/u/shop")
    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    render.render(store)
    record = json.loads(render.written_path().read_text())
    record["home"] = str(tmp_path / "where-it-was")
    render.written_path().write_text(json.dumps(record))
    (folder / render.lesson_filename(lesson["id"])).unlink()
    assert render.take_vetoes(store) == [lesson["id"]]


def test_an_older_written_json_of_this_memory_still_vetoes_a_deleted_file(store):
    """Upgrading keeps the vetoes a person made before it: a version 1 list (absolute paths,
    no owner) of files in this memory's folders is this memory's."""
    folder = _project("/home/u/shop")
    keep = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    drop = add_lesson(store, "Never push to main.", "correction", sources=["y"])
    render.render(store)
    files = {str(folder / f"remem-{l['id']}.md"): {"lesson": l["id"]} for l in (keep, drop)}
    for l in (keep, drop):  # named as before names carried the memory
        (folder / render.lesson_filename(l["id"])).rename(folder / f"remem-{l['id']}.md")
    render.written_path().write_text(json.dumps({"version": 1, "files": files}))
    (folder / f"remem-{drop['id']}.md").unlink()
    assert render.take_vetoes(store) == [drop["id"]]
    assert get_lesson(store, drop["id"])["status"] == "vetoed"


# --------------------------------------------------------------------------- 5-7. lessons CLI

def _many_lessons(n: int) -> list[str]:
    from remem.engine.store import Store

    with Store() as store:
        return [add_lesson(store, f"Lesson number {i}: prefer tool {i} over the old one.", "correction",
                           sources=[f"s{i}"], strength=1.0 + i / 1000)["id"] for i in range(n)]


def test_lessons_list_shows_a_page_and_says_how_many_more(home):
    """2,055 lessons printed whole took 1.7 s and 810 KB: the table shows 50 unless --limit."""
    ids = _many_lessons(60)
    strongest_first = ids[::-1]
    res = run_remem("lessons", "list", env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert {i for i in ids if i in res.stdout} == set(strongest_first[:50])
    assert res.stdout.rstrip().splitlines()[-1] == "… 10 more; use --limit N (0: every lesson) or --json"
    res = run_remem("lessons", "list", "--limit", "7", env={"COLUMNS": "200"})
    assert {i for i in ids if i in res.stdout} == set(strongest_first[:7]) and "… 53 more" in res.stdout
    res = run_remem("lessons", "list", "--limit", "0", env={"COLUMNS": "200"})
    assert all(i in res.stdout for i in ids) and "more;" not in res.stdout
    # --json stays complete unless --limit is given.
    assert [l["id"] for l in run_remem("lessons", "list", "--json").json()] == strongest_first
    assert [l["id"] for l in run_remem("lessons", "list", "--json", "--limit", "3").json()] == strongest_first[:3]
    bad = run_remem("lessons", "list", "--limit", "-1")
    assert bad.returncode == 1 and bad.stderr.strip() == "remem: --limit must be 0 (every lesson) or more, not -1"


def test_lessons_list_status_help_names_every_status_it_accepts(home):
    """The help said "active, candidate, vetoed, revoked or all" but quarantined was accepted."""
    from remem.engine.store import LESSON_STATUSES

    res = run_remem("lessons", "list", "--help", env={"COLUMNS": "300"})
    assert res.returncode == 0
    helped = " ".join(res.stdout.split())
    assert f"{', '.join(LESSON_STATUSES)} or all." in helped
    for status in (*LESSON_STATUSES, "all"):
        assert run_remem("lessons", "list", "--status", status).returncode == 0, status
    assert "quarantined" in LESSON_STATUSES


def test_lessons_edit_without_an_editor_or_a_terminal_refuses_at_once(home, monkeypatch):
    """No $EDITOR or $VISUAL and stdin not a terminal: click started vim, which flooded the
    output with terminal codes before "could not run the editor"."""
    from remem.engine.store import Store

    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    with Store() as store:
        lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    res = run_remem("lessons", "edit", lesson["id"], input="", timeout=30)
    assert res.returncode == 1
    assert res.stdout == "" and "\x1b" not in res.stderr
    assert res.stderr == ('remem: could not run the editor (no $VISUAL or $EDITOR set, and no terminal here '
                          'for vi); give the text with --text "…", or set $EDITOR\n')
    with Store() as store:
        assert get_lesson(store, lesson["id"])["text"] == "Use uv, not pip."


# --------------------------------------------------------------------------- 4. lesson detail

def _primes(store, rows: list[list[str]]) -> None:
    with store.write() as conn:
        conn.executemany(
            "INSERT INTO primes (at, session_id, agent, event, lesson_ids, held_out, query, chars) "
            "VALUES (?, ?, 'claude-code', 'prompt', ?, 0, 'q', 10)",
            [(f"2026-11-01T00:00:00.{i:06d}+00:00", f"s{i}", json.dumps(ids)) for i, ids in enumerate(rows)])


def test_the_lesson_detail_reads_only_the_newest_prime_decisions(store):
    """It scanned every row of `primes` (LIKE '%"id"%', ordered by time) on every cursor move:
    75 ms at 520,000 rows. Now newest first by rowid, at most `primes_window` rows."""
    from remem.engine import browse

    lesson = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    other = add_lesson(store, "Never push to main.", "correction", sources=["y"])
    lid = lesson["id"]
    # 10 old decisions that primed it, then 300 that did not, then 30 that did.
    _primes(store, [[lid]] * 10 + [[other["id"]]] * 300 + [[other["id"], lid]] * 30)
    found = browse.lesson_detail(store, lid, primes_window=100)
    assert len(found["primes"]) == browse.PRIMES_SHOWN == 20
    assert [p["session_id"] for p in found["primes"]] == [f"s{i}" for i in range(339, 319, -1)]  # newest first
    assert found["primes_window"] == 100  # older decisions were not read
    assert browse.lesson_detail(store, other["id"], primes_window=20)["primes_window"] == 20
    # The old ones are outside a window of 100: not read, and the detail says how far it looked.
    with store.write() as conn:
        conn.execute("DELETE FROM primes WHERE lesson_ids LIKE ?", (f'%"{other["id"]}", "{lid}"%',))
    found = browse.lesson_detail(store, lid, primes_window=100)
    assert found["primes"] == [] and found["primes_window"] == 100
    everything = browse.lesson_detail(store, lid, primes_window=None)
    assert len(everything["primes"]) == 10 and everything["primes_window"] is None
    # A window holding every decision says so: no match then means never.
    assert browse.lesson_detail(store, lid, primes_window=10_000)["primes_window"] is None
    assert browse.lesson_detail(store, lid)["primes_window"] is None  # the default window, 20,000
    # `%` and `_` in an id are plain characters (instr, not LIKE).
    assert browse.lesson_primes(store, "%")[0] == []


# --------------------------------------------------------------------------- 2-3. the TUI

from tests.tui.conftest import anyio_backend, demo_home, new_app, screen_text  # noqa: E402,F401


@pytest.mark.anyio
async def test_the_first_paint_reads_only_the_overview_and_measures_off_the_ui_thread(demo_home, monkeypatch):
    """Every pane read the store at mount: the Overview's measures (most of a second at
    100,000 episodes), every lesson, every candidate. Now only the tab shown is read, and the
    measures are worked out in a thread once the rest is drawn."""
    import threading

    from remem.engine import browse, measure, share

    calls: dict[str, list[bool]] = {"measure": [], "lessons": [], "candidates": []}

    def spy(name, real):
        def wrapped(*args, **kwargs):
            calls[name].append(threading.current_thread() is threading.main_thread())
            return real(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(measure, "measure", spy("measure", measure.measure))
    monkeypatch.setattr(browse, "page_lessons", spy("lessons", getattr(browse, "page_lessons", None)), raising=False)
    monkeypatch.setattr(share, "candidates", spy("candidates", share.candidates))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if calls["measure"]:
                break
        assert calls["measure"] == [False]  # once, in a thread
        assert "Repeat-yourself" in str(app.query_one("#overview-measure").render())
        assert calls["lessons"] == [] and calls["candidates"] == []
        assert app.query_one("#lesson-table").row_count == 0
        assert app.query_one("#candidate-table").row_count == 0
        assert app.query_one("#sleep-history").row_count == 0
        assert app.stale == {"episodes", "lessons", "sleep", "shared"}
        await pilot.press("3")
        await pilot.pause()
        assert len(calls["lessons"]) == 1 and app.query_one("#lesson-table").row_count == 3
        await pilot.press("5")
        await pilot.pause()
        assert len(calls["candidates"]) == 1 and app.query_one("#candidate-table").row_count == 1
        await pilot.press("3", "5")
        await pilot.pause()
        assert len(calls["lessons"]) == 1 and len(calls["candidates"]) == 1  # read once, not at each show
        # ctrl+r reads the tab shown now, the others when they are next shown.
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert len(calls["candidates"]) == 2 and len(calls["lessons"]) == 1
        assert app.stale == {"overview", "episodes", "lessons", "sleep"}


@pytest.mark.anyio
async def test_an_action_from_the_palette_on_a_tab_not_yet_shown_acts_on_its_row(demo_home):
    """The palette shows the tab and runs the action at once: the tab is read first."""
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.run_pane_action("lessons", "veto")  # the strongest lesson, L1, is under the cursor
        await pilot.pause()
        with __import__("remem.engine.store", fromlist=["Store"]).Store() as store:
            assert get_lesson(store, "L1")["status"] == "vetoed"


def _add_lessons(n: int, **kw) -> list[str]:
    from remem.engine.store import Store

    with Store() as store:
        return [add_lesson(store, f"Paged lesson {i}: use tool{i}.", "correction", sources=[f"p{i}"],
                           strength=0.5 - i / 1000, **kw)["id"] for i in range(n)]


def _status_line(app, selector: str) -> str:
    return str(app.query_one(selector).render())


@pytest.mark.anyio
async def test_the_lessons_tab_is_paged(demo_home):
    """It held every lesson (2,055 rows, each veto read them all again: 0.54 s)."""
    ids = _add_lessons(120)  # weaker than the demo's three: they come after them
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one("#lesson-table")
        assert table.row_count == 50
        assert _status_line(app, "#lesson-status-line").startswith("1-50 of 123 lessons · n/p page · e edit")
        await pilot.press("n")
        await pilot.pause()
        assert table.row_count == 50 and str(table.get_row(ids[47])[4]).startswith("Paged lesson 47")
        assert _status_line(app, "#lesson-status-line").startswith("51-100 of 123 lessons")
        await pilot.press("pagedown")
        await pilot.pause()
        assert table.row_count == 23 and _status_line(app, "#lesson-status-line").startswith("101-123 of 123")
        await pilot.press("pagedown")  # no page to turn: the table scrolls
        await pilot.pause()
        assert table.cursor_row > 0 and _status_line(app, "#lesson-status-line").startswith("101-123")
        await pilot.press("p", "p")
        await pilot.pause()
        assert _status_line(app, "#lesson-status-line").startswith("1-50 of 123")
        # A filter starts at its first page.
        await pilot.press("n")
        await pilot.pause()
        app.query_one("#lesson-status").value = "candidate"
        await pilot.pause()
        assert table.row_count == 1 and _status_line(app, "#lesson-status-line").startswith("1 lessons · e edit")


@pytest.mark.anyio
async def test_a_veto_redraws_its_row_and_reads_no_page(demo_home, monkeypatch):
    from remem.engine import browse
    from remem.engine.store import Store

    _add_lessons(60)
    pages = []
    real = browse.page_lessons
    monkeypatch.setattr(browse, "page_lessons", lambda *a, **k: pages.append(k) or real(*a, **k))
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one("#lesson-table")
        table.move_cursor(row=table.get_row_index("L2"))
        await pilot.pause()
        read = len(pages)
        await pilot.press("v")
        await pilot.pause()
        assert len(pages) == read  # the row alone was drawn again
        assert str(table.get_row("L2")[1]) == "vetoed" and table.row_count == 50
        assert "vetoed" in screen_text(app)
        await pilot.press("v")  # restore
        await pilot.pause()
        assert len(pages) == read and str(table.get_row("L2")[1]) == "active"
        with Store() as store:
            assert get_lesson(store, "L2")["status"] == "active"
        # Filtered to active lessons, a vetoed one leaves the page: the page is read again.
        app.query_one("#lesson-status").value = "active"
        await pilot.pause()
        table.move_cursor(row=table.get_row_index("L2"))
        await pilot.pause()
        read = len(pages)
        await pilot.press("v")
        await pilot.pause()
        assert len(pages) == read + 1 and "L2" not in [str(k.value) for k in table.rows]
        assert table.row_count == 50  # the next active lesson came up into the page


@pytest.mark.anyio
async def test_the_shared_candidates_table_is_paged(demo_home):
    _add_lessons(60, status="candidate", origin="b7e1c0ffee00aa11")
    app = new_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        table = app.query_one("#candidate-table")
        assert table.row_count == 50
        assert _status_line(app, "#shared-status").startswith("candidates 1-50 of 61 · n/p page · sync folder")
        await pilot.press("n")
        await pilot.pause()
        assert table.row_count == 11 and _status_line(app, "#shared-status").startswith("candidates 51-61 of 61")
        table.move_cursor(row=3)
        await pilot.pause()
        chosen = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        await pilot.press("x")  # reject the one under the cursor, on the second page
        await pilot.pause()
        from remem.engine.store import Store

        with Store() as store:
            assert get_lesson(store, chosen)["status"] != "candidate"
        assert table.row_count == 10
