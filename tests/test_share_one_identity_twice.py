"""One identity on two machines: a memory moved by copying $REMEM_HOME while the old one keeps
syncing. Each export would delete the other's lesson files and withdraw its confirmations,
silently, on every sync; instead what this memory never wrote is left alone, and said."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from remem.engine import share
from remem.engine.share_export import EXPORTED, NOT_WRITTEN_HERE, SIGNED_TIMES
from remem.engine.store import Store
from tests.test_share import GOOD, Mem, add, folder, mems  # noqa: F401 (fixtures)

THERE = "Prefer small commits over large ones"


def _copied(mem: Mem, tmp_path: Path) -> Mem:
    """The memory as moved to a second machine: its files copied, and the first one still used."""
    there = tmp_path / "moved"
    shutil.copytree(mem.idir, there / "identity")
    mem.store.close()
    shutil.copy2(mem.store.path, there / "memory.db")
    mem.store = Store(Path(mem.store.path))
    return Mem(Store(there / "memory.db"), there / "identity")


def test_two_machines_with_one_identity_keep_each_others_files_and_are_told(mems, folder, tmp_path):
    here = mems["A"]
    add(here, GOOD)
    author = mems["C"]
    add(author, "Read the changelog before upgrading a dependency")
    author.sync(folder)
    here.sync(folder)
    there = _copied(here, tmp_path)
    assert there.origin == here.origin
    add(there, THERE)  # learned on the second machine alone
    there.sync(folder)
    share.accept(here.store, here.by_hash("Read the changelog before upgrading a dependency")["id"],
                 identity_dir=here.idir, folder=folder)  # confirmed on the first alone

    first = here.sync(folder)
    second = there.sync(folder)
    here.sync(folder)

    ours = folder / here.origin
    assert (ours / "lessons" / f"{here.by_hash(GOOD)['hash']}.json").exists()
    assert (ours / "lessons" / f"{there.by_hash(THERE)['hash']}.json").exists()
    taken = here.by_hash("Read the changelog before upgrading a dependency")["hash"]
    assert (ours / "confirm" / f"{taken}.json").exists() and not (ours / "withdrawn" / f"{taken}.json").exists()
    assert first["export"]["not_written_here"] == [there.by_hash(THERE)["hash"]]
    assert second["confirmations"]["not_written_here"] == [taken]
    said = [p for p in first["export"]["problems"] if p["reason"] == NOT_WRITTEN_HERE]
    assert said == [{"path": here.origin, "reason": NOT_WRITTEN_HERE}]
    assert "a copy of this memory's identity/ is syncing from another machine" in NOT_WRITTEN_HERE
    assert "give one of them a new identity (move its identity/ aside" in NOT_WRITTEN_HERE
    author.sync(folder)  # the first machine's word stands: no withdrawal of it reached the author
    assert author.by_hash("Read the changelog before upgrading a dependency")["origins"] == [here.origin]
    there.store.close()


def test_what_this_memory_wrote_and_no_longer_shares_still_goes(mems, folder):
    """Vetoed, too weak, revoked, edited to new words, merged away: the file goes, and nothing is
    reported."""
    from remem.engine import lessons

    a = mems["A"]
    vetoed = add(a, "Never squash merge")
    weak = add(a, "Prefer tabs in Makefiles")
    revoked = add(a, "Pin the linter version")
    edited = add(a, "Use uv to install packages")
    merged = add(a, "Keep the changelog current")
    a.sync(folder)
    lessons.update_lesson(a.store, vetoed["id"], status="vetoed")
    lessons.update_lesson(a.store, weak["id"], strength=0.2)
    share.revoke(a.store, revoked["id"], folder, identity_dir=a.idir)
    lessons.edit_text(a.store, edited["id"], "Use uv, never pip, to install packages")
    with a.store.write() as conn:  # as a merge into another lesson leaves it: gone from the memory
        conn.execute("DELETE FROM lessons WHERE id = ?", (merged["id"],))

    rep = a.sync(folder)["export"]
    left = {p.stem for p in (folder / a.origin / "lessons").glob("*.json")}
    assert left == {lessons.by_hash(a.store, lessons.lesson_hash("Use uv, never pip, to install packages",
                                                                  "correction"))["hash"]}
    assert rep["not_written_here"] == [] and not rep["problems"]


def _as_an_older_remem_left_it(mem: Mem) -> None:
    """An older remem kept no record of what it exported or signed: the files it wrote are in
    the share folder, and neither list is beside the memory or its key."""
    (Path(mem.store.path).parent / EXPORTED).unlink(missing_ok=True)
    (mem.idir / SIGNED_TIMES).unlink(missing_ok=True)


def test_lesson_files_an_older_remem_exported_still_go_when_the_lesson_leaves(mems, folder):
    a = mems["A"]
    merged = add(a, "Keep the changelog current")
    add(a, GOOD)
    a.sync(folder)
    _as_an_older_remem_left_it(a)
    with a.store.write() as conn:  # as a merge into another lesson leaves it: gone from the memory
        conn.execute("DELETE FROM lessons WHERE id = ?", (merged["id"],))

    rep = a.sync(folder)["export"]

    left = {p.stem for p in (folder / a.origin / "lessons").glob("*.json")}
    assert left == {a.by_hash(GOOD)["hash"]}
    assert rep["removed"] == [merged["hash"]]
    assert rep["not_written_here"] == [] and not rep["problems"]
    # From now on there is a record: a file of ours this memory never wrote is told apart.
    assert a.origin in json.loads((Path(a.store.path).parent / EXPORTED).read_text())


def test_confirmations_an_older_remem_signed_are_still_withdrawn(mems, folder):
    a, author = mems["A"], mems["C"]
    add(author, "Read the changelog before upgrading a dependency")
    author.sync(folder)
    a.sync(folder)
    taken = a.by_hash("Read the changelog before upgrading a dependency")
    share.accept(a.store, taken["id"], identity_dir=a.idir, folder=folder)
    author.sync(folder)
    assert author.by_hash("Read the changelog before upgrading a dependency")["origins"] == [a.origin]
    _as_an_older_remem_left_it(a)
    share.reject(a.store, taken["id"], identity_dir=a.idir)  # no folder at hand: the next sync withdraws

    rep = a.sync(folder)["confirmations"]

    assert rep["withdrawn"] == [taken["hash"]] and rep["removed"] == [taken["hash"]]
    assert rep["not_written_here"] == [] and not rep["problems"]
    assert not (folder / a.origin / "confirm" / f"{taken['hash']}.json").exists()
    author.sync(folder)
    assert author.by_hash("Read the changelog before upgrading a dependency")["origins"] == []
    assert (a.idir / SIGNED_TIMES).exists()


def test_a_memory_that_never_signed_a_confirmation_keeps_a_record_of_that(mems, folder):
    """The first sync leaves both lists, even empty: a copy of the memory made after it tells the
    other machine's files apart from its first sync on."""
    a = mems["A"]
    a.sync(folder)
    assert json.loads((Path(a.store.path).parent / EXPORTED).read_text()) == {a.origin: {}}
    assert json.loads((a.idir / SIGNED_TIMES).read_text()) == {"confirm": {}, "withdraw": {}}
