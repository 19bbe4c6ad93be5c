"""What `remem share` says: what trusting an origin did and could not do alone, and the
candidates table read in an ordinary 80-column terminal."""

from __future__ import annotations

from remem.engine import lessons, share
from tests.test_share import GOOD, add, folder, mems  # noqa: F401  (fixtures)

OTHER = "0123456789abcdef"


def test_trust_says_how_many_of_the_origins_lessons_still_wait_for_a_second_voice(mems, folder):
    a, b, c = mems["A"], mems["B"], mems["C"]
    add(a, GOOD)
    add(a, "Prefer tabs in Makefiles")
    add(c, GOOD)
    for mem in (a, c, b):
        mem.sync(folder)
    first = share.trust(b.store, a.origin, identity_dir=b.idir)
    assert first["activated"] == [] and first["waiting"] == 2  # one trusted origin is not enough
    second = share.trust(b.store, c.origin, identity_dir=b.idir)
    assert [x["id"] for x in second["activated"]] == [b.by_hash(GOOD)["id"]]
    assert second["waiting"] == 0  # C sent only the lesson that is now active
    assert share.trust(b.store, a.origin, identity_dir=b.idir)["waiting"] == 1  # the Makefile one
    assert share.trust(b.store, a.origin, False, identity_dir=b.idir)["waiting"] == 0


def test_the_cli_says_what_still_waits_and_how_to_take_it(cli, store):
    lessons.add_lesson(store, "Prefer tabs in Makefiles", "correction", status="candidate",
                       origin=OTHER, origins=[OTHER])
    res = cli("share", "trust", OTHER)
    assert res.exit_code == 0, res.output
    assert f"{OTHER} trusted" in res.output
    assert "1 of its lessons still wait" in res.output and "remem share accept ID" in res.output
    res = cli("share", "trust", OTHER, "--off")
    assert "still wait" not in res.output


def test_candidates_at_80_columns_keep_the_lesson_readable(remem_cli, home):
    from remem.engine.store import Store

    text = "Never force-push; use --force-with-lease instead of a plain force"
    with Store() as store:
        lessons.add_lesson(store, text, "correction", status="candidate", origin=OTHER, origins=[OTHER])
    res = remem_cli("share", "candidates", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    cells = " ".join(line.split("│")[3].strip() for line in lines if line.count("│") == 5)
    # whole words per line (the lesson column is wide enough to read), cut at 60 characters
    assert cells.endswith("…") and text.startswith(cells[:-1]) and len(cells) >= 55
    assert OTHER[:8] in res.stdout and "untrusted origin" in res.stdout
