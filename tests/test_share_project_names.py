"""Project names across systems (one spelling of "café" in NFC, another in NFD as macOS stores
names) are the same project; `share accept --project` takes only a folder that is there or a
project this memory has seen, and its hints can be pasted into a shell."""

from __future__ import annotations

import json
import shlex
import unicodedata
from pathlib import Path

import pytest

from remem import paths
from remem.engine import lessons, share
from remem.engine.projects import resolve_project
from tests.test_share import Mem, add, folder, mems  # noqa: F401  (fixtures)

TEXT = "Run the migrations before the seed script here"
NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
OTHER = "0123456789abcdef"


@pytest.fixture
def b(store, home: Path) -> Mem:
    """The receiving memory: the test's REMEM_HOME, so the CLI sees it."""
    return Mem(store, paths.identity_dir())


def _seen(mem: Mem, cwd: str) -> None:
    mem.store.put_episodes([{"kind": "note", "title": f"worked in {cwd}", "gist": "work", "cwd": cwd}])


def test_a_lesson_from_an_nfc_folder_binds_to_the_nfd_folder_here(mems, folder, b, remem_cli):
    assert NFC != NFD
    a = mems["A"]
    add(a, TEXT, cwd=f"/home/ana/code/{NFC}")
    a.sync(folder)
    mine = f"/Users/bo/code/{NFD}"  # macOS keeps the decomposed spelling
    _seen(b, mine)
    res = remem_cli("share", "sync", "--folder", str(folder), "--json")
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)["receive"]
    assert rec["waiting_for_project"] == []
    row = b.by_hash(TEXT)
    assert row["cwd"] == mine  # the stored folder keeps its own spelling


def test_a_lesson_from_an_nfd_folder_goes_out_named_in_nfc(mems, folder):
    a = mems["A"]
    add(a, TEXT, cwd=f"/Users/ana/code/{NFD}")
    a.sync(folder)
    [doc] = [json.loads(p.read_text()) for p in (folder / a.origin / "lessons").glob("*.json")]
    assert doc["project"] == NFC


def test_a_bare_name_in_either_spelling_finds_the_project(store):
    mine = f"/Users/bo/code/{NFD}"
    store.put_episodes([{"kind": "note", "title": "work", "gist": "work", "cwd": mine}])
    assert resolve_project(store, NFC) == mine
    assert resolve_project(store, NFD) == mine


def _waiting(store) -> str:
    return lessons.add_lesson(store, TEXT, "correction", status="candidate", origin=OTHER,
                              origins=[OTHER], cwd="shop-api")["id"]


def test_accept_refuses_a_project_path_that_is_no_folder_here(remem_cli, store, tmp_path):
    lesson_id = _waiting(store)
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    for given, what in ((str(tmp_path / "no" / "where"), "does not exist"), (str(a_file), "is a file")):
        res = remem_cli("share", "accept", lesson_id, "--project", given)
        assert res.returncode == 1, res.stdout
        line = res.stderr.strip()
        assert line.count("\n") == 0 and what in line and "--project" in line, line
    assert lessons.get_lesson(store, lesson_id)["status"] == "candidate"
    there = tmp_path / "code" / "shop-api"
    there.mkdir(parents=True)
    res = remem_cli("share", "accept", lesson_id, "--project", str(there), "--json")
    assert res.returncode == 0, res.stderr
    assert res.json()["cwd"] == str(there)


def test_accept_takes_a_project_seen_here_though_its_folder_is_gone(remem_cli, store):
    seen = "/srv/old-mount/shop-api"  # sessions came from it; the mount is not there now
    store.put_episodes([{"kind": "note", "title": "work", "gist": "work", "cwd": seen}])
    lesson_id = _waiting(store)
    res = remem_cli("share", "accept", lesson_id, "--project", seen, "--json")
    assert res.returncode == 0, res.stderr
    assert res.json()["cwd"] == seen


def test_the_hint_for_an_unknown_name_can_be_pasted_into_a_shell(remem_cli, store):
    lesson_id = _waiting(store)
    res = remem_cli("share", "accept", lesson_id, "--project", "my shop api")
    assert res.returncode == 1
    line = res.stderr.strip()
    assert "`--project ~/'code/my shop api'`" in line, line
    example = line.split("`")[1]
    assert shlex.split(example) == ["--project", "~/code/my shop api"]
    # A plain name stays as it was.
    plain = remem_cli("share", "accept", lesson_id, "--project", "shop").stderr
    assert "`--project ~/code/shop`" in plain


def test_accept_in_the_engine_refuses_the_same(store, tmp_path):
    lesson_id = _waiting(store)
    with pytest.raises(share.ShareError, match="does not exist, and is no project this memory has seen"):
        share.accept(store, lesson_id, project=str(tmp_path / "nowhere"))
