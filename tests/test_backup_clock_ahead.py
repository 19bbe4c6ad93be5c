"""Backups named while the clock was ahead: every backup made once it is right again holds
later writes, so those count as the oldest, for the restore doctor names and for rotation.
The clock is moved with REMEM_NOW; the store and the backups are real files."""

from __future__ import annotations

import pytest

from remem.engine import backup
from remem.engine.memories import remember


def at(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    monkeypatch.setenv("REMEM_NOW", when)


def test_a_backup_named_in_the_future_is_neither_the_newest_nor_kept_over_later_ones(store, monkeypatch):
    at(monkeypatch, "2027-06-01T00:00:00+00:00")
    ahead = backup.backup(store, check=True)
    made = []
    for n, when in enumerate(("2026-12-01T09:00:00+00:00", "2026-12-01T10:00:00+00:00")):
        at(monkeypatch, when)
        remember(store, f"the release checklist has step {n}")
        made.append(backup.backup(store, check=True))
    assert ahead.name > made[-1].name  # by name alone it would win
    assert backup.last_good_backup(ahead.parent) == made[-1]
    assert backup.newest_first(ahead.parent) == [made[1], made[0], ahead]
    removed = backup.rotate(2, ahead.parent, just_made=made[-1])
    assert removed == [ahead] and not ahead.exists() and all(p.exists() for p in made)


def test_a_backup_named_in_the_future_is_still_the_one_to_restore_when_it_is_the_only_good_one(store, monkeypatch):
    at(monkeypatch, "2027-06-01T00:00:00+00:00")
    ahead = backup.backup(store, check=True)
    at(monkeypatch, "2026-12-01T09:00:00+00:00")
    assert backup.last_good_backup(ahead.parent) == ahead
    assert backup.rotate(1, ahead.parent) == [] and ahead.exists()


def test_a_backup_named_by_hand_in_the_folder_is_never_rotated_and_can_still_be_restored(store, monkeypatch):
    at(monkeypatch, "2026-12-01T09:00:00+00:00")
    first = backup.backup(store, check=True)
    named = backup.backup(store, first.parent / "memory-before-upgrade.db", check=True)
    made = []
    for when in ("2026-12-01T10:00:00+00:00", "2026-12-01T11:00:00+00:00"):
        at(monkeypatch, when)
        made.append(backup.backup(store, check=True))
    assert backup.rotate(2, first.parent, just_made=made[-1]) == [first]
    assert named.exists() and backup.newest_first(first.parent) == [made[1], made[0]]
    for path in made:
        path.unlink()
    assert backup.last_good_backup(first.parent) == named
