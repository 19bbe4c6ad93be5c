"""Every cap, one test each: what exceeds it is cut with a marker or refused with the reason,
never silently dropped. Also the nightly backup a full sleep takes (backup.nightly, backup.keep):
taken by the engine for every edge, and a failed one said without losing the night's work."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from remem import config, paths
from remem.engine import sleep
from remem.engine.store import MAX_DETAIL, MAX_GIST, MAX_TITLE, TRUNCATED, Store


def _config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")
    config._cache.clear()


def test_an_episode_over_its_caps_is_cut_with_the_marker(store):
    store.put_episodes([{"id": "big", "kind": "note", "title": "t" * 10_000, "gist": "g" * 100_000,
                         "detail": "d" * 1_000_000}])
    row = store.episode("big")
    for column, cap in (("title", MAX_TITLE), ("gist", MAX_GIST), ("detail", MAX_DETAIL)):
        assert len(row[column]) == cap and row[column].endswith(TRUNCATED), column


def test_a_remembered_text_over_the_cap_is_kept_cut_not_refused(store):
    from remem.engine.memories import remember

    memory = remember(store, "the staging database moved. " * 2000)
    row = store.episode(memory["id"])
    assert row["gist"].endswith(TRUNCATED) and len(row["gist"]) <= MAX_GIST


def test_a_lesson_over_its_cap_is_cut_with_the_marker(store):
    from remem.engine.lessons import MAX_LESSON, add_lesson, get_lesson, update_lesson

    lesson = add_lesson(store, "always run the tests first. " * 500, "correction")
    assert len(lesson["text"]) == MAX_LESSON and lesson["text"].endswith(TRUNCATED)
    update_lesson(store, lesson["id"], text="never push on a friday. " * 500)
    again = get_lesson(store, lesson["id"])
    assert len(again["text"]) == MAX_LESSON and again["text"].endswith(TRUNCATED)


def test_a_tag_over_its_cap_is_cut_with_the_marker_when_stored_and_when_filtering(store):
    from remem.engine.lifecycle import list_memories
    from remem.engine.memories import remember
    from remem.engine.store import MAX_TAG

    huge = "t" * 100_000
    memory = remember(store, "a memory with an absurd tag", tags=[huge, "ok"])
    (tag,) = [t for t in memory["tags"] if t != "ok"]
    assert len(tag) == MAX_TAG and tag.endswith(TRUNCATED)
    found = list_memories(store, tags=[huge])  # the same cap when filtering
    assert [m["id"] for m in found] == [memory["id"]]


def _hook(argv: list[str], data: bytes) -> tuple[int, str, str]:
    from remem import hooks

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = hooks.main(argv)
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_a_hooks_output_is_capped_at_prime_max_chars_with_a_marker(store, home):
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.lessons import add_lesson

    _config(home, "[prime]\nmax_chars = 400\nmin_relevance = 0.0\nholdout = false\n")
    emb = get_embedder()
    for i in range(3):
        text = f"Use uv, not pip, to install packages (case {i}). " + "Details follow. " * 100
        add_lesson(store, text, "correction", space=emb.space, embedding=to_blob(emb.encode([text])[0]))
    code, out, err = _hook(["prompt"], json.dumps({"prompt": "install packages with pip",
                                                    "session_id": "s-limits"}).encode())
    assert code == 0, err
    block = max(_strings(json.loads(out)), key=len)
    assert len(block) <= 400 and "…" in block


def test_a_hooks_input_over_its_cap_is_ignored_with_a_reason(home):
    from remem import hooks

    code, out, err = _hook(["prompt"], b'{"prompt": "' + b"x" * (hooks.MAX_STDIN + 10) + b'"}')
    assert code == 0 and out.strip() in ("", "{}")
    assert "larger than" in err


def test_an_inbox_file_over_its_cap_is_kept_with_a_report(store, home):
    from remem import paths
    from remem.engine import events

    _config(home, "[events]\nmax_file_bytes = 1000\n")
    inbox = paths.inbox_dir()
    inbox.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"v": 1, "kind": "note", "text": "the staging db is on 5433"})
    big = inbox / "big.jsonl"
    big.write_text("\n".join([line] * 100) + "\n", encoding="utf-8")
    summary = events.ingest_inbox(store)
    assert summary["episodes"] == 0
    assert any("over the 1,000 cap (events.max_file_bytes)" in e for e in summary["errors"])
    assert big.exists()  # not consumed, not lost
    report = big.with_name(big.name + ".errors.txt")
    assert report.exists() and "events.max_file_bytes" in report.read_text()


def test_a_share_file_over_its_cap_is_refused_with_the_reason(tmp_path):
    from remem.engine import share_files

    origin = "0123456789abcdef"
    (tmp_path / origin / "lessons").mkdir(parents=True)
    from remem.engine.share_sign import public_line

    (tmp_path / origin / "key.pub").write_text(public_line(b"k" * 32) + "\n")
    (tmp_path / origin / "lessons" / ("b" * 32 + ".json")).write_text(json.dumps({"text": "x" * 500}))
    scan = share_files.scan_origin(tmp_path.resolve(), origin, 200)
    reasons = [p.reason for p in scan.rejected + scan.incomplete]
    assert any("too large" in r and "share.max_file_bytes" in r for r in reasons), reasons


def test_an_import_line_over_its_cap_is_reported_by_number(store, monkeypatch):
    from remem.engine import backup

    monkeypatch.setattr(backup, "MAX_IMPORT_LINE", 100)
    lines = [json.dumps({"table": "tags", "memory_id": "m", "tag": "t"}),
             json.dumps({"table": "tags", "memory_id": "m", "tag": "x" * 200})]
    result = backup.import_jsonl(store, iter(lines))
    assert result["imported"] == {"tags": 1}
    assert result["errors"] == ["line 2: longer than 100 characters"]


# --------------------------------------------------------------------------- nightly backup

def test_a_full_sleep_takes_a_rotated_backup(cli, home, store):
    from remem import paths

    store.put_episodes([{"kind": "note", "title": "the staging db is on 5433"}])
    _config(home, "[backup]\nkeep = 2\n")
    for stamp in ("2026-11-01T03:17:00+00:00", "2026-11-02T03:17:00+00:00", "2026-11-03T03:17:00+00:00"):
        from remem.engine import clock

        with clock.frozen(stamp):
            result = cli("sleep", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["backup"]["path"].startswith(str(paths.backups_dir()))
    kept = sorted(p.name for p in paths.backups_dir().glob("memory-*.db"))
    assert kept == ["memory-20261102-031700.db", "memory-20261103-031700.db"]
    assert cli("sleep", "--pass", "render", "--quiet").exit_code == 0  # a single pass: no backup
    assert len(list(paths.backups_dir().glob("memory-*.db"))) == 2


def test_backup_nightly_false_takes_none(cli, home, store):
    from remem import paths

    _config(home, "[backup]\nnightly = false\n")
    result = cli("sleep", "--json")
    assert result.exit_code == 0 and "backup" not in json.loads(result.stdout)
    assert not list(paths.backups_dir().glob("memory-*.db"))


def _backups() -> list[Path]:
    folder = paths.backups_dir()
    return sorted(folder.glob("memory-*.db")) if folder.is_dir() else []


def test_a_full_sleep_through_the_engine_makes_a_rotated_backup_and_says_so(store):
    """run_sleep_collect is what the TUI's Sleep tab runs: every pass makes the backup."""
    seen: list[str] = []
    summary = sleep.run_sleep_collect(store, on_progress=lambda e: seen.append(e.pass_name))
    [made] = _backups()
    assert summary["backup"] == {"path": str(made), "rotated_out": 0}
    assert "backup" in seen
    assert sleep.history(store, 1)[0]["summary"]["backup"]["path"] == str(made)  # the run's record too
    with Store(made) as copy:  # the copy holds this run as finished, with its watermark
        assert copy.scalar("SELECT status FROM runs ORDER BY id DESC LIMIT 1") == "ok"


def test_only_a_full_real_sleep_with_nightly_on_makes_a_backup(store):
    from remem import config

    assert "backup" not in sleep.run_sleep_collect(store, passes=["lessons"])
    assert "backup" not in sleep.run_sleep_collect(store, dry_run=True)
    cfg = config.load()
    cfg["backup"]["nightly"] = False
    assert "backup" not in sleep.run_sleep_collect(store, cfg=cfg)
    assert _backups() == []


def test_a_failed_backup_keeps_the_nights_work_and_names_the_fix(store, cli):
    paths.backups_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.backups_dir().write_text("not a folder")
    summary = sleep.run_sleep_collect(store)
    assert summary["backup"]["error"].startswith("backup failed (")
    assert summary["backup"]["error"].endswith("run `remem backup` by hand")
    assert sleep.history(store, 1)[0]["status"] == "ok"
    res = cli("sleep", "--quiet")  # the CLI only tells it
    assert res.exit_code == 0 and "remem: backup failed (" in res.stderr


def test_cli_sleep_prints_the_engines_backup(home, cli):
    res = cli("sleep", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["backup"]["path"] == str(_backups()[0])
    out = cli("sleep").stdout
    assert f"backed up to {_backups()[-1]}" in out
