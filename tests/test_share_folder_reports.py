"""What a receiver reports about an origin's folder: names that are not UTF-8 shown escaped
(the report still prints and is still JSON), an origin whose lessons/ is missing or no folder,
and a document that names no hash."""

from __future__ import annotations

import json
import os
from pathlib import Path

from remem.engine import share
from tests.test_share import GOOD, add, folder, mems  # noqa: F401  (fixtures)

CAFE = b"caf\xe9"  # Latin-1 "café": no UTF-8 name


def _plant(path: bytes, data: bytes = b"x") -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def test_names_that_are_not_utf8_are_shown_escaped_by_the_real_cli(mems, folder, remem_cli):
    a = mems["A"]
    add(a, GOOD)
    a.sync(folder)
    root = os.fsencode(folder)
    _plant(root + b"/" + CAFE + b" notes.txt")  # beside the origins
    _plant(root + b"/" + a.origin.encode() + b"/lessons/" + CAFE + b".json")  # in an origin's lessons/
    strict = {"PYTHONIOENCODING": "utf-8"}  # stdout refuses what is not UTF-8

    res = remem_cli("share", "sync", "--folder", str(folder), "--json", env=strict)
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)["receive"]
    assert {"path": "caf\\xe9 notes.txt", "reason": "not an origin folder (ignored)"} in rec["ignored"]
    assert [p["path"] for p in rec["rejected"]] == [f"{a.origin}/lessons/caf\\xe9.json"]
    assert rec["origins_seen"] == [a.origin] and len(rec["received"]) == 1

    res = remem_cli("share", "receive", "--folder", str(folder), env=strict)
    assert res.returncode == 0, res.stderr
    assert f"{a.origin}/lessons/caf\\xe9.json" in res.stdout and "received 0" in res.stdout


def test_an_origin_without_its_lessons_folder_says_so(mems, folder):
    a, b = mems["A"], mems["B"]
    add(a, GOOD)
    a.sync(folder)
    lessons_dir = folder / a.origin / "lessons"
    for name in os.listdir(lessons_dir):
        os.unlink(lessons_dir / name)
    lessons_dir.rmdir()
    rep = b.receive(folder)
    assert rep["incomplete"] == [{"path": f"{a.origin}/lessons", "reason": (
        "lessons/ is missing: none of this origin's lessons is read (half-synced? read again next time)")}]
    assert rep["rejected"] == []

    lessons_dir.write_text("not a folder")
    rep = b.receive(folder)
    assert [p["path"] for p in rep["rejected"]] == [f"{a.origin}/lessons"]
    assert rep["rejected"][0]["reason"].startswith("lessons/ is not a folder: none of this origin's lessons is read")
    assert rep["incomplete"] == []


def test_a_folder_just_made_with_no_key_yet_is_no_origin_missing_its_lessons(mems, folder):
    b = mems["B"]
    (folder / "0123456789abcdef").mkdir()  # a sync tool has made the folder, nothing in it yet
    rep = b.receive(folder)
    assert rep["incomplete"] == [{"path": "0123456789abcdef/key.pub", "reason": "no key.pub yet (half-synced?)"}]
    assert rep["rejected"] == []


def test_a_document_without_its_hash_is_refused_for_that(mems, folder: Path):
    a, b = mems["A"], mems["B"]
    add(a, GOOD)
    a.sync(folder)
    name = "0123456789abcdef0123456789abcdef.json"
    (folder / a.origin / "confirm" / name).write_bytes(b'{"v":1}\n')
    rep = share.receive(b.store, folder, identity_dir=b.idir)
    [problem] = [p for p in rep["rejected"] if p["path"].endswith(name)]
    assert "no \"hash\" in the document" in problem["reason"]
    assert "does not match" not in problem["reason"]
