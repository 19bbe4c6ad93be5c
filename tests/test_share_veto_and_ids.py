"""What sharing commands say: vetoing a lesson other memories hold names `share revoke`,
origin ids that are no hex are called that, `block` names itself when refusing our own
origin, and a known bad origin can be blocked ahead of its first write."""

from __future__ import annotations

from pathlib import Path

from remem import config
from remem.engine import lessons, share

GOOD = "Run the full test suite before handing back work"
BAD_ORIGIN = "9fdc95440e981985"


def test_vetoing_a_shared_lesson_says_others_keep_it_and_names_revoke(remem_cli, store, tmp_path):
    shared = lessons.add_lesson(store, GOOD, "correction", strength=1.5)
    kept_home = lessons.add_lesson(store, "Prefer tabs in Makefiles", "correction", strength=0.2)  # too weak to go
    folder = tmp_path / "share"
    res = remem_cli("share", "sync", "--folder", str(folder), "--json")
    assert res.returncode == 0, res.stderr

    res = remem_cli("lessons", "veto", shared["id"])
    assert res.returncode == 0, res.stderr
    assert f"`remem share revoke {shared['id']}` withdraws it everywhere" in res.stdout
    assert res.stdout.count("\n") == 1

    res = remem_cli("lessons", "veto", kept_home["id"], "--json")
    assert res.returncode == 0, res.stderr
    assert res.json()["exported"] is False and res.json()["changed"] is True
    assert remem_cli("lessons", "restore", shared["id"]).returncode == 0
    res = remem_cli("lessons", "veto", shared["id"], "--json")
    assert res.json()["exported"] is True
    # The revoke it names works on the vetoed lesson.
    res = remem_cli("share", "revoke", shared["id"], "--folder", str(folder))
    assert res.returncode == 0, res.stderr


def test_a_veto_in_a_memory_that_never_shared_says_nothing_of_sharing(remem_cli, store):
    row = lessons.add_lesson(store, GOOD, "correction", strength=1.5)
    res = remem_cli("lessons", "veto", row["id"])
    assert res.returncode == 0 and "share" not in res.stdout


def test_an_id_that_is_no_hex_is_called_that(cli, store):
    res = cli("share", "trust", "ghijklmn")
    assert res.exit_code == 1
    assert "is not an origin id: 'g', 'h', 'i', 'j', 'k' are not hex" in res.output
    assert "first 4 or more" not in res.output
    res = cli("share", "trust", "3f9")  # hex, too short: the length is what is wrong
    assert res.exit_code == 1 and "16 hex digits, or the first 4 or more" in res.output


def test_blocking_our_own_origin_names_block(cli, store):
    ours = share.keys()["origin"]
    res = cli("share", "block", ours)
    assert res.exit_code == 1
    assert "trust, reject and block are for other memories' origins" in res.output


def test_a_full_id_never_seen_can_be_blocked_ahead_of_time(remem_cli, home: Path):
    res = remem_cli("share", "block", BAD_ORIGIN)
    assert res.returncode == 0, res.stderr
    assert "ahead of time" in res.stdout and "has written here yet" in res.stdout
    assert config.load()["share"]["blocked_origins"] == [BAD_ORIGIN]
    res = remem_cli("share", "block", BAD_ORIGIN, "--json")
    assert res.returncode == 0 and res.json()["seen"] is False and res.json()["changed"] is False
    # A prefix is still refused: only a full id is blocked unseen.
    res = remem_cli("share", "block", BAD_ORIGIN[:8])
    assert res.returncode == 1 and "no known origin starts with" in res.stderr
