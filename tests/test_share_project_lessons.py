"""A shared lesson of a project stays a lesson of that project: it travels with the project's
folder name (never its path), signed, and a receiver binds it to its own project of that name.
A memory that has no such project (or several) keeps it waiting, applying nowhere, until a
session from that folder arrives or the person names the folder (`accept --project`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem import paths
from remem.engine import lessons, prime, render, render_files, share, share_safety
from remem.engine.lessons import applies_in, filed_under, unbound_project
from remem.engine.share_sign import verify
from tests.test_share import GOOD, Mem, _put, _signed_lesson, add, folder, mems  # noqa: F401  (fixtures)

UV = "We use uv here, not pip, to install packages"
THEIRS = "/home/you/code/shop-api"  # the author's project: its path must never leave A
MINE = "/srv/b/work/shop-api"  # the same project on B, at another path
BLOG = "/srv/b/work/blog"  # an unrelated project of B's


@pytest.fixture
def b(store, home: Path) -> Mem:
    """The receiving memory: the test's own REMEM_HOME, so render and the CLI see it."""
    return Mem(store, paths.identity_dir())


def seen_project(mem: Mem, *cwds: str) -> None:
    """Sessions from these folders were ingested: the memory knows them as projects."""
    mem.store.put_episodes([{"kind": "note", "title": f"worked in {cwd}", "gist": "work", "cwd": cwd}
                            for cwd in cwds])


def claude_memory(cwd: str) -> Path:
    """The project's Claude Code memory folder, made (render writes only into existing ones)."""
    folder = paths.claude_projects_dir() / paths.project_folder_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "memory"


def rendered_in(memory: Path, lesson_id: str) -> bool:
    """Whether render wrote this lesson into a project's Claude Code memory folder."""
    index = memory / "MEMORY.md"
    name = render_files.lesson_filename(lesson_id)
    return (memory / name).exists() or (index.exists() and name in index.read_text())


def shown_in(mem: Mem, cwd: str | None) -> list[str]:
    """The texts the hooks may show in this folder."""
    return [l["text"] for l in prime.for_project(mem.store, cwd)]


def two_authors_send_the_project_lesson(mems: dict, folder: Path, b: Mem) -> dict:
    """A and C both learned UV in their own shop-api; B trusts both (corroboration enough to
    activate a lesson of every project) and syncs. Returns B's row."""
    a, c = mems["A"], mems["C"]
    add(a, UV, cwd=THEIRS)
    add(c, UV, cwd="/Users/cy/src/shop-api")
    for mem in (a, c):
        mem.sync(folder)
    b.trust(a, c)
    b.sync(folder)
    return b.by_hash(UV)


# --------------------------------------------------------------------------- what goes out

def test_a_project_lesson_goes_out_with_its_folder_name_signed_and_no_path(mems, folder):
    a = mems["A"]
    project = add(a, UV, cwd=THEIRS)
    general = add(a, GOOD)
    share.export_lessons(a.store, folder, identity_dir=a.idir)
    lesson_dir = folder / a.origin / "lessons"
    raw = (lesson_dir / f"{project['hash']}.json").read_text()
    doc = json.loads(raw)
    assert doc["project"] == "shop-api"
    assert "/home/you" not in raw and "code/" not in raw  # the path stays on A
    assert verify(doc, share.identity(a.idir).public_raw)
    # A lesson of every project goes out exactly as before: no project member at all.
    plain = json.loads((lesson_dir / f"{general['hash']}.json").read_text())
    assert set(plain) == {"v", "type", "origin", "hash", "text", "kind", "created", "strength", "signature"}


def test_a_lesson_whose_project_name_would_be_refused_or_names_this_machine_is_withheld(mems, folder):
    a = mems["A"]
    hosty = add(a, UV, cwd="/srv/build01.internal")
    rep = share.export_lessons(a.store, folder, identity_dir=a.idir)
    assert rep["exported"] == []
    assert rep["withheld"][0]["id"] == hosty["id"]
    assert rep["withheld"][0]["reasons"] == ["its project: environment-specific: a host name or IP address"]
    assert share_safety.project_outgoing("alice-laptop", names=("alice-laptop",)) == [
        "its project: environment-specific: this machine's user or host name"]


@pytest.mark.parametrize("name, reason", [
    ("/home/you/code/shop-api", "path separator"),
    ("code\\shop-api", "path separator"),
    ("..", "no folder name"),
    ("~you", "no folder name"),
    ("", "empty"),
    ("x" * 129, "at most 128"),
    (" shop-api", "spaces at either end"),
    ("shop\u202eipa", "control or invisible"),
    ("shop\napi", "control or invisible"),
    ("sh\u043ep-api", "look-alike"),  # a Cyrillic о inside a Latin word
    (7, "is text"),
])
def test_the_safety_checks_cover_the_project_name(name, reason):
    problems = share_safety.project_problems(name)
    assert any(reason in p for p in problems), problems


@pytest.mark.parametrize("name", ["shop-api", "my project", "app.v2", "тесты", "a" * 128])
def test_ordinary_folder_names_pass(name):
    assert share_safety.project_problems(name) == []


# --------------------------------------------------------------------------- what comes in

def test_b_binds_it_to_its_own_project_of_that_name_and_shows_it_only_there(mems, folder, b):
    seen_project(b, MINE, BLOG)
    shop_memory, blog_memory = claude_memory(MINE), claude_memory(BLOG)
    row = two_authors_send_the_project_lesson(mems, folder, b)
    assert row["status"] == "active" and row["cwd"] == MINE
    assert applies_in(row["cwd"], MINE) and applies_in(row["cwd"], MINE + "/src")
    assert not applies_in(row["cwd"], BLOG) and not applies_in(row["cwd"], None)
    assert UV in shown_in(b, MINE)
    assert UV not in shown_in(b, BLOG) and UV not in shown_in(b, None)
    assert [c["text"] for c in prime.candidates(b.store, "how do I install packages", event="prompt",
                                                cwd=BLOG)] == []
    render.render(b.store)
    assert rendered_in(shop_memory, row["id"]) and not rendered_in(blog_memory, row["id"])


def test_without_that_project_it_waits_applies_nowhere_and_accept_needs_the_folder(mems, folder, b, tmp_path):
    seen_project(b, BLOG)
    blog_memory = claude_memory(BLOG)
    row = two_authors_send_the_project_lesson(mems, folder, b)
    # Two trusted origins would activate a lesson of every project; this one keeps waiting.
    assert row["status"] == "candidate" and row["cwd"] == "shop-api" and unbound_project(row["cwd"])
    for where in (BLOG, "/srv/b/work/shop-api", "/", None):
        assert not applies_in(row["cwd"], where)
        assert UV not in shown_in(b, where)
    assert not filed_under(row["cwd"], "/")
    # Not even where a folder is given by that bare name (a hook payload's cwd is taken as sent).
    assert not applies_in(row["cwd"], "shop-api") and not filed_under(row["cwd"], "shop-api")
    render.render(b.store)
    assert not rendered_in(blog_memory, row["id"])

    [waiting] = share.candidates(b.store, identity_dir=b.idir)
    assert waiting["project"] == "shop-api" and waiting["folder"] is None
    assert waiting["waits"] == "for project 'shop-api', which this memory has not seen"
    assert "--project DIR" in waiting["corroboration"]["needed"]

    with pytest.raises(share.ShareError, match=r"has not seen; name the folder .*--project DIR"):
        share.accept(b.store, row["id"], identity_dir=b.idir)
    assert b.by_hash(UV)["status"] == "candidate"
    mine = tmp_path / "work" / "shop-api"  # a folder on this machine, though no project seen yet
    mine.mkdir(parents=True)
    done = share.accept(b.store, row["id"], identity_dir=b.idir, project=str(mine))
    assert done["status"] == "active" and done["cwd"] == str(mine)
    assert UV in shown_in(b, str(mine)) and UV not in shown_in(b, BLOG)


def test_a_waiting_lesson_binds_when_a_session_from_that_folder_comes_in(mems, folder, b):
    row = two_authors_send_the_project_lesson(mems, folder, b)
    assert row["status"] == "candidate"
    seen_project(b, MINE)  # an ingest brings a session from a folder of that name
    out = b.sync(folder)
    assert out["receive"]["bound"] == [{"id": row["id"], "project": "shop-api", "cwd": MINE}]
    now = b.by_hash(UV)
    assert now["status"] == "active" and now["cwd"] == MINE
    assert UV in shown_in(b, MINE) and UV not in shown_in(b, BLOG)


def test_a_name_several_projects_here_share_waits_for_the_person_to_choose(mems, folder, b):
    other = "/srv/b/old/shop-api"
    seen_project(b, MINE, other)
    row = two_authors_send_the_project_lesson(mems, folder, b)
    assert row["status"] == "candidate" and row["cwd"] == "shop-api"
    [waiting] = share.candidates(b.store, identity_dir=b.idir)
    assert waiting["waits"] == f"for project 'shop-api', which 2 projects here are named ({other}, {MINE})"
    with pytest.raises(share.ShareError, match="2 projects here"):
        share.accept(b.store, row["id"], identity_dir=b.idir)
    assert share.accept(b.store, row["id"], identity_dir=b.idir, project=other)["cwd"] == other


def test_a_tampered_project_fails_verification_and_nothing_is_stored(mems, folder, b):
    a = mems["A"]
    seen_project(b, MINE, BLOG)
    lesson = add(a, UV, cwd=THEIRS)
    a.sync(folder)
    path = folder / a.origin / "lessons" / f"{lesson['hash']}.json"
    signed = json.loads(path.read_text())
    for tampered in ({**signed, "project": "blog"},
                     {k: v for k, v in signed.items() if k != "project"}):  # made a lesson of every project
        _put(folder, a, tampered)
        rep = b.receive(folder)
        assert [r["reason"] for r in rep["rejected"]] == [
            f"signature does not verify against {a.origin}'s key (changed after signing, or signed by another key)"]
        assert b.by_hash(UV) is None


def test_a_signed_project_that_is_a_path_is_refused(mems, folder, b):
    a = mems["A"]
    _put(folder, a, _signed_lesson(a, UV, project=THEIRS))
    (folder / a.origin / "key.pub").write_text(share.keys(a.idir)["key_pub_line"] + "\n")
    rep = b.receive(folder)
    [refused] = rep["rejected"]
    assert refused["reason"].startswith("malformed project: a path separator")
    assert b.by_hash(UV) is None


def test_a_lesson_without_a_project_behaves_as_before(mems, folder, b):
    seen_project(b, MINE, BLOG)
    a = mems["A"]
    add(a, GOOD)
    a.sync(folder)
    b.sync(folder)
    [waiting] = share.candidates(b.store, identity_dir=b.idir)
    assert waiting["project"] is None and waiting["waits"] is None and waiting["folder"] is None
    done = share.accept(b.store, waiting["id"], identity_dir=b.idir)
    assert done["status"] == "active" and done["cwd"] is None
    for where in (MINE, BLOG, None):
        assert GOOD in shown_in(b, where)


@pytest.mark.parametrize("has_the_project", [True, False])
def test_a_lesson_taken_in_for_every_project_takes_the_project_its_author_now_sends(
        mems, folder, b, has_the_project):
    """A memory that received a project lesson from a file without its project (and accepted it
    into every project) puts it back in that project once the author's file names it, when it
    has its own folder of that name; when it has none, the person's accept stands."""
    a = mems["A"]
    seen_project(b, *([MINE, BLOG] if has_the_project else [BLOG]))
    _put(folder, a, _signed_lesson(a, UV))  # the file as it was: no project
    (folder / a.origin / "key.pub").write_text(share.keys(a.idir)["key_pub_line"] + "\n")
    b.receive(folder)
    share.accept(b.store, b.by_hash(UV)["id"], identity_dir=b.idir)
    assert UV in shown_in(b, BLOG)
    add(a, UV, cwd=THEIRS)
    a.sync(folder)  # the same lesson, now with its project
    rep = b.sync(folder)["receive"]
    row = b.by_hash(UV)
    if has_the_project:
        assert row["status"] == "active" and row["cwd"] == MINE
        assert rep["bound"] == [{"id": row["id"], "project": "shop-api", "cwd": MINE}]
        assert UV in shown_in(b, MINE)
        assert UV not in shown_in(b, BLOG)
    else:
        assert row["status"] == "active" and row["cwd"] is None  # not undone behind their back
        assert rep["waiting_for_project"] == [] and UV in shown_in(b, BLOG)


def test_a_lesson_trust_activated_for_every_project_waits_once_its_project_is_named(mems, folder, b):
    """Trust, not the person, made it a lesson of every project: once its author names the
    project and this memory has none of that name, it waits like any lesson of that project."""
    a, c = mems["A"], mems["C"]
    seen_project(b, BLOG)
    for mem in (a, c):
        _put(folder, mem, _signed_lesson(mem, UV))  # the files as they were: no project
        (folder / mem.origin / "key.pub").write_text(share.keys(mem.idir)["key_pub_line"] + "\n")
    b.trust(a, c)
    b.receive(folder)
    assert b.by_hash(UV)["status"] == "active" and UV in shown_in(b, BLOG)
    add(a, UV, cwd=THEIRS)
    add(c, UV, cwd="/Users/cy/src/shop-api")
    for mem in (a, c):  # both files now name shop-api (whichever B counts as the author)
        mem.sync(folder)
    rep = b.sync(folder)["receive"]
    row = b.by_hash(UV)
    assert row["status"] == "candidate" and row["cwd"] == "shop-api"
    assert [w["id"] for w in rep["waiting_for_project"]] == [row["id"]]
    assert UV not in shown_in(b, BLOG)


def test_the_home_folder_is_no_project_a_lesson_learned_there_goes_out_for_every_project(mems, folder):
    a = mems["A"]
    made = add(a, UV, cwd=str(paths.user_home()))
    share.export_lessons(a.store, folder, identity_dir=a.idir)
    doc = json.loads((folder / a.origin / "lessons" / f"{made['hash']}.json").read_text())
    assert "project" not in doc


# --------------------------------------------------------------------------- the CLI

def test_the_cli_says_why_it_waits_and_accept_asks_for_the_folder(mems, folder, b, cli, tmp_path):
    seen_project(b, BLOG)
    a = mems["A"]
    add(a, UV, cwd=THEIRS)
    a.sync(folder)
    b.sync(folder)
    lesson_id = b.by_hash(UV)["id"]
    res = cli("share", "candidates")
    assert res.exit_code == 0, res.output
    assert f"{lesson_id} waits: for project 'shop-api', which this memory has not seen" in res.output
    assert f"remem share accept {lesson_id} --project DIR" in res.output

    res = cli("share", "accept", lesson_id, "--folder", str(folder))
    assert res.exit_code == 1
    assert res.output.strip().count("\n") == 0 and "--project DIR" in res.output
    mine = tmp_path / "work" / "shop-api"
    mine.mkdir(parents=True)
    res = cli("share", "accept", lesson_id, "--project", str(mine), "--folder", str(folder))
    assert res.exit_code == 0, res.output
    assert f"accepted {lesson_id} (in {mine})" in res.output
    assert b.by_hash(UV)["cwd"] == str(mine)
