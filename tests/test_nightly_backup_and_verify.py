"""Follow-ups to the sleep, doctor and context changes: a correction about other programs never
confirms a lesson's prediction; `unclear` is always in the sleep's counts; a damaged memory's
fix names the backup to restore; a failed nightly backup is told (its error's advice, the
morning report, doctor); `context` without a project names where the lessons are."""

from __future__ import annotations

import json

import pytest

from remem import config, paths
from remem.engine import clock, prime, sleep
from tests.conftest import call_ok, server_in_process
from tests.test_hooks import seed
from tests.test_sleep import _at, episode, run

SHOP = "/home/dev/shop"


def _problems(cli) -> list[dict]:
    res = cli("doctor", "--json", "--no-run")
    assert "Traceback" not in res.output, res.output
    return json.loads(res.stdout)["problems"]


def _backup_problems(cli) -> list[dict]:
    return [p for p in _problems(cli) if "backup" in p["problem"]]


# --------------------------------------------------------------------------- 1. verify

def test_a_correction_about_other_programs_never_confirms_a_lessons_prediction(store):
    with clock.frozen(_at(24)):
        store.put_episodes([episode("c1", "correction", "Use pnpm, not npm.", hours=1, cwd=SHOP)])
        run(store)
        [pnpm] = store.rows("SELECT id FROM lessons WHERE status = 'active'")
        clock.advance(days=1)
        store.put_episodes([episode("y1", "correction", "Use yarn, not npm.", hours=25, cwd=SHOP)])
        other = run(store)
        assert other["events"]["confirmed"] == []
        assert store.rows("SELECT outcome FROM predictions WHERE lesson_id = ?", (pnpm["id"],)) == \
            [{"outcome": None}]
        # The same programs again still confirm it.
        clock.advance(days=1)
        store.put_episodes([episode("c2", "correction", "no, use pnpm not npm here", hours=49, cwd=SHOP)])
        again = run(store)
    [confirmed] = again["events"]["confirmed"]
    assert store.one("SELECT lesson_id, evidence FROM predictions WHERE id = ?", (confirmed,)) == \
        {"lesson_id": pnpm["id"], "evidence": "c2"}


def test_a_refused_calls_lesson_is_still_confirmed_by_the_same_refusal(store):
    """A wordless refusal's lesson ("Ask before using Edit on `/x/y.py` …") names a file the
    refusal's own words do not read as a program: the call keeps those apart, not programs."""
    def refused(i: str, hours: float) -> dict:
        return episode(i, "correction", "refused Edit: /home/dev/shop/deploy.yaml", hours=hours,
                       cwd=SHOP, tags=("refused",))

    with clock.frozen(_at(24)):
        store.put_episodes([refused("r1", 1), refused("r2", 2)])
        run(store)
        [lesson] = store.rows("SELECT id FROM lessons WHERE status = 'active'")
        clock.advance(days=1)
        store.put_episodes([refused("r3", 25)])
        summary = run(store)
    [confirmed] = summary["events"]["confirmed"]
    assert store.one("SELECT lesson_id FROM predictions WHERE id = ?", (confirmed,)) == {"lesson_id": lesson["id"]}


# --------------------------------------------------------------------------- 2. unclear always there

def test_unclear_is_in_the_sleeps_json_counts_when_no_correction_said_nothing(store, cli):
    store.put_episodes([episode("c1", "correction", "use uv, not pip", hours=1)])
    res = cli("sleep", "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["passes"]["lessons"]["unclear"] == 0 and summary["waiting"]["unclear"] == 0


# --------------------------------------------------------------------------- 3. a damaged memory's fix

def _damage(store) -> None:
    """A table gone: the memory opens, and cannot be read (as a damaged page reads)."""
    store.conn.execute("DROP TABLE tags")


def test_a_damaged_memorys_fix_names_the_newest_good_backup_and_it_works(store, cli):
    store.put_episodes([episode("c1", "correction", "use uv, not pip", hours=1)])
    assert cli("backup").exit_code == 0
    [good] = sorted(paths.backups_dir().glob("memory-*.db"))
    _damage(store)
    [fix] = [p["fix"] for p in _problems(cli) if "cannot be read" in p["problem"]]
    assert fix == f"remem restore {good} --yes   (the damaged memory is kept beside it)"
    store.close()
    res = cli(*fix.split("   ")[0].split()[1:])  # the fix as it reads
    assert res.exit_code == 0, res.output
    assert not [p for p in _problems(cli) if "cannot be read" in p["problem"]]
    assert list(paths.db_path().parent.glob("memory.db.before-restore-*"))  # kept beside it


def test_a_damaged_memory_without_a_good_backup_says_to_start_anew(store, cli):
    _damage(store)
    report = json.loads(cli("doctor", "--json", "--no-run").stdout)
    [fix] = [p["fix"] for p in report["problems"] if "cannot be read" in p["problem"]]
    assert fix == f"no good backup in {paths.backups_dir()}; move {paths.db_path()} aside to start anew"
    assert report["store"]["ok"] is False


# --------------------------------------------------------------------------- 4, 5. a failed nightly backup

def _block_backups() -> None:
    """The backups folder is a file: no backup can be written (a real OS error, not faked)."""
    paths.backups_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.backups_dir().write_text("not a folder\n")


def test_a_failed_nightly_backup_is_at_the_top_of_the_morning_report_and_doctor_names_it(store, cli):
    _block_backups()
    with clock.frozen(_at(24)):
        store.put_episodes([episode("c1", "correction", "use uv, not pip", hours=1)])
        summary = run(store)
    error = summary["backup"]["error"]
    assert error.startswith("backup failed (") and error.endswith("; run `remem backup` by hand")  # an OS error
    report = cli("morning").stdout
    assert report.index("## Nightly backup failed\n- " + error) < report.index("## Learned")
    [problem] = _backup_problems(cli)  # what blocked it is named, with the fix that works
    assert "is a file, not a folder" in problem["problem"] and problem["fix"].startswith(f"mv {paths.backups_dir()} ")
    paths.backups_dir().rename(paths.backups_dir().with_name("backups.aside"))
    [problem] = _backup_problems(cli)
    assert problem["problem"] == f"the nightly backup after the last sleep: {error}"
    assert problem["fix"].startswith("remem backup")
    assert cli("backup").exit_code == 0 and _backup_problems(cli) == []


def _damage_a_page(store) -> None:
    """A page of a table no pass reads overwritten: the memory opens and sleeps, and a copy of
    it fails SQLite's quick check."""
    store.conn.execute("CREATE TABLE junk (x TEXT)")
    store.conn.executemany("INSERT INTO junk VALUES (?)", [("x" * 200,) for _ in range(200)])
    root = store.scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'junk'")
    size = store.scalar("PRAGMA page_size")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(paths.db_path(), "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xff" * 64)


def test_the_nightly_backup_of_a_damaged_memory_names_the_restore_not_a_backup_by_hand(store):
    from remem.engine.store import Store

    store.put_episodes([episode("c1", "correction", "use uv, not pip", hours=1)])
    assert run(store)["backup"].get("path")  # a good backup to name
    _damage_a_page(store)
    with clock.frozen(_at(48)), Store() as damaged:  # opened anew: nothing read before the damage
        result = sleep._nightly_backup(damaged, config.load())
    assert "the memory is damaged" in result["error"] and "remem restore" in result["error"]
    assert "by hand" not in result["error"]


def test_doctor_warns_when_the_newest_backup_is_days_older_than_the_last_full_sleep(store, cli):
    store.put_episodes([episode("c1", "correction", "use uv, not pip", hours=1)])
    with clock.frozen(_at(24)):
        assert run(store)["backup"].get("path")
    assert _backup_problems(cli) == []  # a backup as new as the sleep
    config.set_value("backup.nightly", False)
    with clock.frozen(_at(24 * 4)):  # sleeps made no backup for three days
        run(store)
    assert _backup_problems(cli) == []  # none was asked for
    config.set_value("backup.nightly", True)
    [problem] = _backup_problems(cli)
    assert problem["problem"] == (f"the newest backup in {paths.backups_dir()} is 3 days older than the "
                                  "last sleep: the nightly backups are failing")
    for made in paths.backups_dir().glob("memory-*.db"):
        made.unlink()
    [problem] = _backup_problems(cli)
    assert problem["problem"] == f"no backup in {paths.backups_dir()}, though the sleep has run with backup.nightly on"


def test_a_backup_timed_after_now_does_not_hide_that_the_nightly_backups_are_failing(store, cli):
    store.put_episodes([episode("c1", "correction", "use uv, not pip", hours=1)])
    with clock.frozen(_at(24)):
        made = run(store)["backup"]["path"]
    config.set_value("backup.nightly", False)
    with clock.frozen(_at(24 * 4)):
        run(store)
    config.set_value("backup.nightly", True)
    ahead = paths.backups_dir() / "memory-29990101-000000.db"  # made while the clock was ahead
    ahead.write_bytes(open(made, "rb").read())
    [problem] = _backup_problems(cli)
    assert "is 3 days older than the last sleep" in problem["problem"]


def test_doctor_says_nothing_of_backups_before_any_full_sleep(store, cli):
    with clock.frozen(_at(24)):
        run(store, passes=["lessons"])
    assert _backup_problems(cli) == []


# --------------------------------------------------------------------------- 6. context without a project

@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_context_without_a_project_names_where_the_lessons_are(store):
    from mcp.client import Client

    seed(store, [("Build the docker image with make image", "correction", "/work/shop")])
    shown = prime.preview(store, None)
    assert shown["lessons"] == [] and shown["elsewhere"] == {"cwd": "/work/shop", "n": 1}
    assert prime.preview(store, "/work/shop")["lessons"]  # and none elsewhere to name there
    async with Client(server_in_process()) as client:  # the MCP tool says it in its own words
        served = await call_ok(client, "context", {})
    assert served["lessons"] == [] and served["note"].startswith("no project given")
