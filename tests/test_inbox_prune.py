"""inbox/done/ does not grow for ever: each read of the inbox deletes the files moved there
more than events.keep_done_days ago (0: kept), counting from the move; what is not a moved
file is left alone, and the memory keeps what it took from them.

The clock is moved with clock.frozen / REMEM_NOW; the store, the bundled model, the config
and the CLI are the real ones."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import config, paths
from remem.engine import clock, events

T0 = "2026-03-01T09:00:00+00:00"
NOTE = {"kind": "note", "text": "The staging db resets on Sundays."}


def _age(path: Path, days: float) -> None:
    """Set a file's time to `days` before the clock's now (a file moved, or written, then)."""
    when = clock.now().timestamp() - days * 86400
    os.utime(path, (when, when), follow_symlinks=False)


def test_done_files_older_than_keep_done_days_go_at_the_next_inbox_read(store, tmp_path) -> None:
    done = paths.inbox_dir() / "done"
    with clock.frozen(T0):
        events.append_to_inbox([NOTE], name="tool")
        first = events.ingest_inbox(store)
        assert first["moved"] == 1 and first["pruned"] == 0
        moved = done / "tool.jsonl"
        assert moved.stat().st_mtime == clock.now().timestamp()  # its age counts from the move
        # Not moved files, all old: another name, a folder, a link (and the file it points to).
        other = done / "notes.txt"
        other.write_text("mine")
        folder = done / "old.jsonl"
        folder.mkdir()
        outside = tmp_path / "kept.jsonl"
        outside.write_text(json.dumps(NOTE) + "\n")
        link = done / "link.jsonl"
        link.symlink_to(outside)
        for p in (other, folder, outside, link):
            _age(p, 400)
        clock.advance(days=29)
        assert events.ingest_inbox(store)["pruned"] == 0 and moved.exists()
        clock.advance(days=2)  # 31 days after the move: past the default 30
        assert events.ingest_inbox(store)["pruned"] == 1
    assert not moved.exists()
    assert other.exists() and folder.is_dir() and link.is_symlink() and outside.exists()
    assert store.one("SELECT gist FROM episodes")["gist"] == NOTE["text"]  # the memory keeps it


def test_keep_done_days_0_keeps_every_done_file_and_a_bad_value_is_refused(cli, store) -> None:
    done = paths.inbox_dir() / "done"
    done.mkdir(parents=True)
    old = done / "proxy-1.jsonl"
    old.write_text(json.dumps({**NOTE, "v": 1, "at": T0}) + "\n")
    _age(old, 3650)
    said = cli("config", "set", "events.keep_done_days", "0")
    assert said.exit_code == 0, said.output
    assert events.ingest_inbox(store)["pruned"] == 0 and old.exists()
    bad = cli("config", "set", "events.keep_done_days", "-1")
    assert bad.exit_code != 0 and "events.keep_done_days" in bad.output
    assert config.load()["events"]["keep_done_days"] == 0  # left as it was
    assert cli("config", "set", "events.keep_done_days", "7").exit_code == 0
    assert events.ingest_inbox(store)["pruned"] == 1 and not old.exists()


def test_plain_remem_ingest_prunes_done_and_logs_it(remem_cli, home: Path) -> None:
    """The real console script: `remem ingest --source events` reads the inbox and prunes done/."""
    done = paths.inbox_dir() / "done"
    done.mkdir(parents=True)
    old, recent = done / "old.jsonl", done / "recent.jsonl"
    for p in (old, recent):
        p.write_text(json.dumps({**NOTE, "v": 1, "at": T0}) + "\n")
    then = time.time() - 40 * 86400  # moved there by an older remem 40 days ago
    os.utime(old, (then, then))
    result = remem_cli("ingest", "--source", "events", "--json")
    assert result.returncode == 0, result.stderr
    assert not old.exists() and recent.exists()
    assert "inbox: deleted 1 file(s)" in paths.log_file().read_text(encoding="utf-8")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ages_h=st.lists(st.integers(min_value=0, max_value=24 * 400), min_size=1, max_size=6),
       keep=st.integers(min_value=0, max_value=365))
def test_a_done_file_goes_exactly_when_it_is_older_than_keep_done_days(ages_h: list[int], keep: int) -> None:
    cfg = config.load()
    cfg["events"]["keep_done_days"] = keep
    with tempfile.TemporaryDirectory() as tmp, clock.frozen(T0):
        inbox = Path(tmp)
        (inbox / "done").mkdir()
        files = []
        for i, hours in enumerate(ages_h):
            path = inbox / "done" / f"f{i}.jsonl"
            path.write_text("{}\n")
            _age(path, hours / 24)
            files.append((path, hours))
        deleted = events.prune_done(inbox, cfg)
        gone = [hours > keep * 24 if keep else False for _, hours in files]
        assert [not p.exists() for p, _ in files] == gone
        assert deleted == sum(gone)
