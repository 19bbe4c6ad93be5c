"""Editing a lesson that is shared (docs/SHARING.md, "Editing a shared lesson"). New words are a
new lesson (the hash is a lesson's identity): the author's edit revokes the earlier words, so
every receiver retires them and takes the new ones as any new lesson, to decide on again. A
received lesson held active becomes the editor's own, its author's words kept out; one still
waiting for a decision is its author's words and is not edited."""

from __future__ import annotations

import pytest

from remem.engine import lessons, share
from remem.engine.store import Store
from tests.test_share import GOOD, Mem, add, folder, mems  # noqa: F401 (fixtures)

NEW = "Run the whole test suite, not one file, before handing back work"


def _accepted_in_b(mems: dict[str, Mem], folder) -> tuple[Mem, Mem, dict]:
    a, b = mems["A"], mems["B"]
    mine = add(a, GOOD)
    a.sync(folder)
    b.sync(folder)
    share.accept(b.store, b.by_hash(GOOD)["id"], identity_dir=b.idir, folder=folder)
    a.sync(folder)  # A sees B's confirmation
    assert b.origin in lessons.get_lesson(a.store, mine["id"])["origins"]
    return a, b, mine


def test_the_authors_edit_revokes_the_earlier_words_everywhere(mems, folder):
    a, b, mine = _accepted_in_b(mems, folder)
    edited = lessons.edit_text(a.store, mine["id"], NEW, identity_dir=a.idir)
    assert edited["id"] == mine["id"] and edited["text"] == NEW and edited["origins"] == []
    kept = lessons.get_lesson(a.store, edited["replaced"])
    assert (kept["text"], kept["status"], kept["hash"]) == (GOOD, "revoked", mine["hash"])
    assert f"replaced by your edit of lesson {mine['id']}" in kept["note"]

    out = a.sync(folder)
    assert out["export"]["revocations"] == [{"id": kept["id"], "hash": mine["hash"]}]
    assert (folder / a.origin / "revoked" / f"{mine['hash']}.json").exists()
    assert [e["hash"] for e in out["export"]["exported"]] == [lessons.lesson_hash(NEW, "correction")]

    rep = b.sync(folder)["receive"]
    old = b.by_hash(GOOD)
    assert old["status"] == "revoked" and rep["revoked"] == [{"id": old["id"], "by": a.origin}]
    assert b.by_hash(NEW)["status"] == "candidate"  # new words: B decides on them again
    c = mems["C"]  # a memory that never had the earlier words never takes them in
    c.sync(folder)
    assert c.by_hash(GOOD) is None and c.by_hash(NEW)["status"] == "candidate"
    before = b.by_hash(NEW)
    a.sync(folder)
    b.sync(folder)
    assert b.by_hash(NEW) == before and b.by_hash(GOOD)["status"] == "revoked"


def test_an_edit_that_keeps_the_hash_or_in_a_memory_that_never_shared_keeps_no_earlier_words(mems, folder):
    a, c = mems["A"], mems["C"]
    mine = add(a, GOOD)
    a.sync(folder)
    same = lessons.edit_text(a.store, mine["id"], GOOD.upper() + ".", identity_dir=a.idir)
    assert same["replaced"] is None and same["hash"] == mine["hash"]  # the same lesson, in other letters
    theirs = add(c, GOOD)  # C has no identity: it never shared, so there is nothing to withdraw
    edited = lessons.edit_text(c.store, theirs["id"], NEW, identity_dir=c.idir)
    assert edited["replaced"] is None
    assert [r["text"] for r in lessons.list_lessons(c.store, statuses=None)] == [NEW]
    assert not c.idir.exists()


def test_a_received_lesson_edited_becomes_yours_and_its_authors_words_stay_out(mems, folder):
    a, b, _ = _accepted_in_b(mems, folder)
    held = b.by_hash(GOOD)
    confirm = folder / b.origin / "confirm" / f"{held['hash']}.json"
    assert confirm.exists()
    edited = lessons.edit_text(b.store, held["id"], NEW, identity_dir=b.idir)
    assert edited["origin"] is None and edited["origins"] == [] and edited["status"] == "active"
    theirs = lessons.get_lesson(b.store, edited["replaced"])
    assert (theirs["text"], theirs["status"], theirs["origin"]) == (GOOD, "vetoed", a.origin)

    out = b.sync(folder)
    assert not confirm.exists()  # our confirmation of its words is withdrawn
    assert out["receive"]["received"] == []  # A's words do not come back as a candidate
    assert [e["id"] for e in out["export"]["exported"]] == [held["id"]]  # ours now, exported as ours
    a.sync(folder)
    assert a.by_hash(NEW)["origin"] == b.origin and b.origin not in a.by_hash(GOOD)["origins"]


@pytest.mark.parametrize("status", ["candidate", "quarantined", "vetoed", "revoked"])
def test_a_received_lesson_not_held_active_is_not_edited(store, status):
    row = lessons.add_lesson(store, GOOD, "correction", status=status, origin="0123456789abcdef",
                             origins=["0123456789abcdef"])
    with pytest.raises(ValueError) as refused:
        lessons.edit_text(store, row["id"], NEW)
    assert "\n" not in str(refused.value)
    if status in ("candidate", "quarantined"):
        assert f"accept it first (`remem share accept {row['id']}`)" in str(refused.value)
    assert lessons.get_lesson(store, row["id"])["text"] == GOOD


def test_lessons_edit_says_what_became_of_the_earlier_words(cli, home, tmp_path):
    assert cli("share", "keys").exit_code == 0  # this memory shares: it has an identity
    with Store() as store:
        mine = lessons.add_lesson(store, GOOD, "correction", strength=1.5)
        waiting = lessons.add_lesson(store, "Prefer small commits", "correction", status="candidate",
                                     origin="0123456789abcdef", origins=["0123456789abcdef"])
    result = cli("lessons", "edit", mine["id"], "--text", NEW)
    assert result.exit_code == 0, result.output
    assert "are withdrawn where they were shared at the next `remem share sync`" in result.output
    result = cli("lessons", "edit", waiting["id"], "--text", "Prefer tiny commits")
    assert result.exit_code == 1
    assert f"accept it first (`remem share accept {waiting['id']}`)" in result.output


OTHER = "Prefer small commits, one change each"


def test_the_revoked_row_an_edit_keeps_cannot_be_edited_into_another_lesson(mems, folder):
    a, b = mems["A"], mems["B"]
    mine = add(a, GOOD)
    other = add(a, OTHER)
    a.sync(folder)
    b.sync(folder)
    kept = lessons.edit_text(a.store, mine["id"], NEW, identity_dir=a.idir)["replaced"]
    with pytest.raises(ValueError) as refused:
        lessons.edit_text(a.store, kept, OTHER, identity_dir=a.idir)
    why = str(refused.value)
    assert f"{kept} is revoked" in why and "nothing to edit" in why and "\n" not in why
    assert lessons.get_lesson(a.store, kept)["text"] == GOOD
    out = a.sync(folder)
    assert out["export"]["withheld"] == []  # the other lesson is still shared ...
    assert (folder / a.origin / "lessons" / f"{other['hash']}.json").exists()
    b.sync(folder)
    assert b.by_hash(OTHER)["status"] == "candidate"  # ... and not retired where it went


def test_a_lesson_revoked_with_share_revoke_cannot_be_edited(mems, folder):
    a = mems["A"]
    mine = add(a, GOOD)
    a.sync(folder)
    share.revoke(a.store, mine["id"], folder, identity_dir=a.idir)
    with pytest.raises(ValueError, match=f"{mine['id']} is revoked"):
        lessons.edit_text(a.store, mine["id"], NEW, identity_dir=a.idir)


def test_editing_back_to_words_revoked_earlier_says_they_stay_unshared(cli, home, tmp_path):
    share_folder = tmp_path / "share"
    share_folder.mkdir()
    assert cli("share", "keys").exit_code == 0  # this memory shares: it has an identity
    with Store() as store:
        mine = lessons.add_lesson(store, GOOD, "correction", strength=1.5)
    assert cli("share", "export", "--folder", str(share_folder)).exit_code == 0
    assert cli("lessons", "edit", mine["id"], "--text", NEW).exit_code == 0
    result = cli("lessons", "edit", mine["id"], "--text", GOOD)  # back to the first words
    assert result.exit_code == 0, result.output
    with Store() as store:
        [first] = [r for r in lessons.list_lessons(store, statuses=("revoked",)) if r["text"] == GOOD]
    [line] = [ln for ln in result.output.splitlines() if "revoked earlier" in ln]
    assert f"these words were revoked earlier ({first['id']}) and stay unshared" in line
    assert f"word it differently (`remem lessons edit {mine['id']}`)" in line
    result = cli("share", "export", "--folder", str(share_folder))
    assert f"withheld {mine['id']}: revoked: these words were revoked earlier" in result.output
    assert f"`remem lessons edit {mine['id']}`" in result.output
    result = cli("lessons", "edit", mine["id"], "--text", "Run every test before handing back work")
    assert "revoked earlier" not in result.output
