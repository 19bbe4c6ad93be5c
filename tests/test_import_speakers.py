"""An export imported into a memory that already holds its episodes with a speaker: the rows
are updated in place (a forget, an edit carry over), never refused for the speaker's name."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.engine import backup as backup_mod
from remem.engine import events
from remem.engine.lifecycle import forget
from remem.engine.memories import update_memory, visible
from remem.engine.store import Store
from tests.conftest import run_remem


def _note(id_: str, text: str, speaker: str) -> dict:
    return events.validate({"v": 1, "id": id_, "at": "2026-11-29T12:00:00Z", "kind": "note",
                            "text": text, "speaker": speaker})


def _export(store: Store) -> str:
    out = io.StringIO()
    backup_mod.export_jsonl(store, out)
    return out.getvalue()


def _import(store: Store, text: str) -> dict:
    return backup_mod.import_jsonl(store, io.StringIO(text))


def _healthy(store: Store) -> None:
    assert store.scalar("PRAGMA integrity_check") == "ok"
    with store.write() as conn:  # the full-text index still follows its rows
        conn.execute("INSERT INTO episodes_fts(episodes_fts) VALUES ('integrity-check')")


def test_a_forget_and_an_edit_carry_over_to_a_copy_holding_the_speakers_episodes(home, tmp_path):
    with Store() as mine:
        events.ingest_events(mine, [_note("t-d1", "notes about deploy", "Caroline"),
                                    _note("t-d2", "the staging database is on port 5433", "Caroline")])
        copy_path = backup_mod.backup(mine, tmp_path / "copy.db")
        forget(mine, "t-d1")
        update_memory(mine, "t-d2", text="the staging database moved to port 6543")
        # A new memory by a speaker the copy already knows: inserted, not refused either.
        events.ingest_events(mine, [_note("t-d3", "rollbacks need the release tag", "Caroline")])
        exported = _export(mine)
        before = backup_mod.snapshot(mine)
    with Store(copy_path) as copy:
        result = _import(copy, exported)
        assert result["errors"] == [] and result["imported"]["episodes"] == 3, result
        rows = {r["id"]: r for r in copy.rows("SELECT id, archived, gist, speaker FROM episodes")}
        assert rows["t-d1"]["archived"] == 1  # the forget carried over
        assert "6543" in rows["t-d2"]["gist"]  # so did the edit
        assert {r["speaker"] for r in rows.values()} == {"Caroline"}
        assert copy.rows("SELECT name FROM speakers")[0]["name"] == "Caroline"
        assert backup_mod.snapshot(copy) == before
        _healthy(copy)
        # Its own export, imported back: nothing refused, nothing changed.
        again = _import(copy, _export(copy))
        assert again["errors"] == [], again
        assert backup_mod.snapshot(copy) == before
        _healthy(copy)


def test_the_cli_round_trip_with_a_speaker(tmp_path: Path):
    """The commands a person runs: ingest, copy the home, forget in one, export, import into
    the other, recall there; then import the other's own export."""
    events_file = tmp_path / "s.jsonl"
    events_file.write_text(json.dumps({"v": 1, "id": "t-d1", "at": "2026-11-29T12:00:00Z", "kind": "note",
                                       "text": "notes about deploy", "speaker": "Caroline"}) + "\n")
    a, b = tmp_path / "hA", tmp_path / "hB"
    assert run_remem("--home", str(a), "ingest", "--events", str(events_file)).returncode == 0
    shutil.copytree(a, b)
    assert run_remem("--home", str(a), "forget", "t-d1").returncode == 0
    exp_a = tmp_path / "expA.jsonl"
    assert run_remem("--home", str(a), "export", str(exp_a)).returncode == 0

    imported = run_remem("--home", str(b), "import", str(exp_a))
    assert imported.returncode == 0 and "skipped" not in imported.stderr, imported.stderr
    assert "1 episodes" in imported.stdout
    found = run_remem("--home", str(b), "recall", "Caroline deploy", "--json")
    assert found.returncode == 0 and "t-d1" not in [h["id"] for h in found.json()]

    exp_b = tmp_path / "expB.jsonl"
    assert run_remem("--home", str(b), "export", str(exp_b)).returncode == 0
    again = run_remem("--home", str(b), "import", str(exp_b))
    assert again.returncode == 0 and again.stderr == "", again.stderr
    listed = run_remem("--home", str(b), "list", "--archived", "--json")
    assert [(r["id"], bool(r["archived"])) for r in listed.json()] == [("t-d1", True)]


_names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=24).filter(visible)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(speakers=st.lists(_names, min_size=1, max_size=4), forgotten=st.integers(0, 3))
def test_any_speakers_survive_an_import_into_a_memory_holding_them(home, tmp_path, speakers, forgotten):
    """Whatever the names (one repeated, Unicode, one only differing in case), an export
    imports into a memory holding the same episodes without a refused row, and the forget
    made where the export was written is there after."""
    work = Path(tmp_path) / f"run-{abs(hash((tuple(speakers), forgotten)))}"
    work.mkdir(exist_ok=True)
    notes = [_note(f"e-{n}", f"remark number {n} about the deploy", name) for n, name in enumerate(speakers)]
    with Store(work / "a.db") as mine:
        events.ingest_events(mine, notes)
        copy_path = backup_mod.backup(mine, work / "b.db", force=True)
        gone = f"e-{forgotten % len(notes)}"
        forget(mine, gone)
        exported = _export(mine)
        before = backup_mod.snapshot(mine)
    with Store(copy_path) as copy:
        result = _import(copy, exported)
        assert result["errors"] == [], result
        assert copy.scalar("SELECT archived FROM episodes WHERE id = ?", (gone,)) == 1
        assert backup_mod.snapshot(copy) == before
        assert _import(copy, _export(copy))["errors"] == []
        _healthy(copy)
    shutil.rmtree(work)
