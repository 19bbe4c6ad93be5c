"""One memory holding the same words in two of its own lessons (one of every project and one of a
project, or one in each of two projects: `lessons edit` can make it). The hash is the lesson's
identity, so its one file must speak for both rows, and say the same on every export."""

from __future__ import annotations

import json
from pathlib import Path

from remem.engine import share
from tests.test_share import Mem, add, folder, mems, snapshot  # noqa: F401  (fixtures)

WORDS = "Run the migrations check before merging"


def _document(mem: Mem, folder: Path, text_hash: str) -> dict:
    return json.loads((folder / mem.origin / "lessons" / f"{text_hash}.json").read_text())


def test_the_same_words_in_a_global_and_a_project_lesson_go_out_as_one_unchanging_document(mems, folder):
    a, b = mems["A"], mems["B"]
    first = add(a, WORDS, strength=2.0)  # of every project
    a.sync(folder)
    b.sync(folder)
    taken = b.by_hash(WORDS)
    share.accept(b.store, taken["id"], identity_dir=b.idir, folder=folder)
    b.sync(folder)
    # The same words later learned in a project too, weaker and newer: exported after the
    # global row, it was the one left in the file.
    add(a, WORDS, strength=1.2, cwd="/x/billing")

    share.export_lessons(a.store, folder, identity_dir=a.idir)
    before = snapshot(folder)
    again = share.export_lessons(a.store, folder, identity_dir=a.idir)

    assert again["exported"] == [] and again["unchanged"] == 1
    assert snapshot(folder) == before
    doc = _document(a, folder, first["hash"])
    assert "project" not in doc  # one row applies everywhere: so does the lesson
    assert doc["strength"] == "2.00" and doc["created"] == first["created"]

    b.sync(folder)
    held = b.by_hash(WORDS)
    assert held["status"] == "active" and held["cwd"] is None
    assert (folder / b.origin / "confirm" / f"{first['hash']}.json").exists()


def test_the_same_words_in_two_projects_go_out_with_a_project_only_when_both_are_the_same(mems, folder):
    a = mems["A"]
    one = add(a, WORDS, cwd="/x/billing", strength=1.2)
    add(a, WORDS, cwd="/y/billing", strength=1.8)
    share.export_lessons(a.store, folder, identity_dir=a.idir)
    assert _document(a, folder, one["hash"])["project"] == "billing"
    assert _document(a, folder, one["hash"])["strength"] == "1.80"

    add(a, WORDS, cwd="/x/shop-api")
    rep = share.export_lessons(a.store, folder, identity_dir=a.idir)
    assert [e["hash"] for e in rep["exported"]] == [one["hash"]]
    assert "project" not in _document(a, folder, one["hash"])
