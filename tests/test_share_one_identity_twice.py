"""One identity on two machines: a memory moved by copying $REMEM_HOME while the old one keeps
syncing. Each export would delete the other's lesson files and withdraw its confirmations,
silently, on every sync; instead what this memory never wrote is left alone, and said."""

from __future__ import annotations

import shutil
from pathlib import Path

from remem.engine import share
from remem.engine.share_export import NOT_WRITTEN_HERE
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
