"""One place says what a lesson's vector is made from, and every step that writes a lesson
embeds it so when it writes it (the lessons pass, a received share, the redact pass); a
refused file tool's lesson names the file inside its project relative to it; one check of a
missing folder for export, backup and training pairs; the engine's share sync makes a missing
share folder; `remem restore`'s question takes Ctrl-D as a no and Ctrl-C as an interrupt.

Real store in a tmp REMEM_HOME, the real bundled model, Claude Code transcripts written here
read by the real ingest, the real sleep, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem import paths
from tests.conftest import answer_remem_in_a_terminal, run_remem

CWD = "/home/dev/shop"
SESSIONS = ("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222")
AFTER = "2026-03-03T09:00:00.000000+00:00"  # a day after the second session
RG_MISSING = "Exit code 127\n/bin/bash: line 1: rg: command not found"
REFUSED = ("The user doesn't want to proceed with this tool use. The tool use was rejected "
           "(eg. if it was a file edit, the new_string was NOT written to the file).")
DRAFTED_ERROR = ("`make deploy` failed here (the key [secret] was refused); find out why before "
                 "running it again.")


def own_words_vector(text: str, kind: str = "error") -> bytes:
    """The vector of a lesson's own words (no template around them), as it should be stored."""
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.programs import matchable_text

    return to_blob(get_embedder().encode([matchable_text(text, kind)])[0])


@pytest.fixture
def no_repair(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sleep's repair of whole-text vectors turned off, so a vector checked is the one the
    step that wrote the lesson made; returns a list that counts the repair's calls."""
    from remem.engine import sleep_passes

    calls: list[int] = []
    monkeypatch.setattr(sleep_passes, "reembed_lessons", lambda ctx: calls.append(1) or 0)
    return calls


def transcript(session_id: str, day: int) -> str:
    """A session in the shop project: `rg` is not installed, and the person refuses the agent's
    Write of the project's CLAUDE.md, saying nothing."""
    records: list[str] = []
    at = f"2026-03-0{day}T10:00:00.000Z"

    def add(kind: str, message: dict) -> None:
        records.append(json.dumps({"type": kind, "sessionId": session_id, "uuid": f"{session_id[:4]}-{len(records)}",
                                   "timestamp": at, "cwd": CWD, "message": message}))

    add("user", {"role": "user", "content": "find where the products are listed"})
    calls = [("Bash", {"command": "rg -n get_products"}, RG_MISSING),
             ("Write", {"file_path": f"{CWD}/CLAUDE.md", "content": "# Notes\n"}, REFUSED)]
    for n, (tool, inp, result) in enumerate(calls):
        add("assistant", {"id": f"m{n}", "role": "assistant", "model": "claude-x", "content": [
            {"type": "tool_use", "id": f"toolu_{n}", "name": tool, "input": inp}]})
        add("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "is_error": True, "content": result}]})
    return "\n".join(records) + "\n"


@pytest.fixture
def learned(store, no_repair) -> list[dict]:
    """The two sessions read and slept on; the lessons the sleep learned."""
    from remem.engine import clock, ingest, sleep

    folder = paths.claude_projects_dir() / "-home-dev-shop"
    folder.mkdir(parents=True)
    for day, session_id in enumerate(SESSIONS, start=1):
        (folder / f"{session_id}.jsonl").write_text(transcript(session_id, day))
    with clock.frozen(AFTER):
        ingest.ingest_paths(store)
        sleep.run_sleep_collect(store)
    return store.rows("SELECT id, kind, text, embedding FROM lessons ORDER BY created, id")


# --------------------------------------------------------------------------- 1. one vector text

def test_a_lesson_the_lessons_pass_writes_has_its_own_words_vector_at_once(learned, no_repair):
    drafted = [r for r in learned if r["kind"] == "error" and "failed here" in r["text"]]
    assert [r["text"] for r in drafted] == [
        "`rg -n get_products` failed here (command not found); check the tool is installed, or use another."]
    assert drafted[0]["embedding"] == own_words_vector(drafted[0]["text"])
    assert no_repair  # the embed pass still calls the repair of older stores; it changed nothing here


def test_a_received_lesson_has_its_own_words_vector_at_once(tmp_path: Path, no_repair):
    from remem.engine import lessons, share
    from remem.engine.store import Store

    folder = tmp_path / "share"
    folder.mkdir()
    with Store(tmp_path / "a" / "memory.db") as a, Store(tmp_path / "b" / "memory.db") as b:
        mine = lessons.add_lesson(a, DRAFTED_ERROR, "error", strength=1.5)
        share.sync(a, folder, identity_dir=tmp_path / "a" / "identity")
        got = share.sync(b, folder, identity_dir=tmp_path / "b" / "identity")
        assert [r["hash"] for r in got["receive"]["received"]] == [mine["hash"]]
        row = b.one("SELECT text, embedding FROM lessons WHERE hash = ?", (mine["hash"],))
    assert row["text"] == DRAFTED_ERROR
    assert row["embedding"] == own_words_vector(DRAFTED_ERROR)


def test_a_lesson_the_redact_pass_rewrites_has_its_own_words_vector_at_once(home):
    from remem.engine import lessons, sleep
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.store import Store
    from tests.test_scrub_stored_secrets import API_KEY, _before_sweep_schema

    stored = DRAFTED_ERROR.replace("[secret]", API_KEY)  # as a release before redaction kept it
    emb = get_embedder()
    with Store(migrate_upto=_before_sweep_schema()) as old:
        made = lessons.add_lesson(old, stored, "error", space=emb.space,
                                  embedding=to_blob(emb.encode([stored])[0]))
    with Store() as store:
        counts = sleep.run_sleep_collect(store, passes=["redact"])["passes"]["redact"]
        row = store.one("SELECT text, embedding FROM lessons WHERE id = ?", (made["id"],))
    assert counts["lessons"] == 1
    assert row["text"] == DRAFTED_ERROR
    assert row["embedding"] == own_words_vector(DRAFTED_ERROR)


def test_every_step_embeds_a_lesson_from_one_place():
    from remem.engine.lessons import vector_text

    assert vector_text(DRAFTED_ERROR, "error") == "`make deploy` (the key [secret] was refused)"
    assert vector_text("Use uv, never pip.", "correction") == "Use uv, never pip."
    assert vector_text("Within 14 days this error will come again: x", None).endswith(": x")


# --------------------------------------------------------------------------- 2. refusals name files in the project

def test_a_refused_write_names_the_file_relative_to_its_project(learned):
    refusals = [r["text"] for r in learned if "refused" in r["text"]]
    assert refusals == ["Ask before using Write on `CLAUDE.md` (the person refused it)."]


def test_a_refused_write_outside_the_project_keeps_its_full_path():
    from remem.engine import lesson_text

    outside = {"gist": "refused Write: /etc/hosts", "cwd": CWD}
    assert lesson_text.draft("correction", [outside]) == \
        "Ask before using Write on `/etc/hosts` (the person refused it)."
    # A sibling folder whose name starts with the project's is not inside it.
    sibling = {"gist": f"refused Edit: {CWD}-old/app.py", "cwd": CWD}
    assert lesson_text.draft("correction", [sibling]) == \
        f"Ask before using Edit on `{CWD}-old/app.py` (the person refused it)."


# --------------------------------------------------------------------------- 3. one missing-folder check

def test_export_backup_and_pairs_say_the_same_of_a_missing_folder(store, tmp_path: Path):
    from remem.engine import experiment

    missing = tmp_path / "no" / "such"
    said = f"no folder {missing}; create it first or name another file"
    for args in (("export", str(missing / "memory.jsonl")), ("backup", str(missing / "memory.db"))):
        result = run_remem(*args)
        assert result.returncode == 1 and result.stderr.strip() == f"remem: {said}", (args, result.stderr)
    with pytest.raises(ValueError) as refused:
        experiment.check_pairs_target(missing / "pairs.jsonl")
    assert str(refused.value) == said


def test_export_and_pairs_name_a_file_standing_where_a_folder_should(store, tmp_path: Path):
    """A file where the folder should be is no folder to create: the check says so."""
    from remem.engine import experiment

    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    result = run_remem("export", str(notes / "memory.jsonl"))
    assert result.returncode == 1
    assert result.stderr.strip() == (f"remem: cannot use {notes / 'memory.jsonl'} ({notes} is a file, "
                                     "not a folder); check the path")
    with pytest.raises(ValueError, match=r"is a file, not a folder\); check the path"):
        experiment.check_pairs_target(notes / "pairs.jsonl")
    assert notes.read_text() == "mine\n"


# --------------------------------------------------------------------------- 4. the engine's sync makes its folder

def test_the_engines_sync_makes_a_missing_share_folder_whose_parent_is_there(store, tmp_path: Path):
    """The TUI's sync calls the engine with the configured folder; the quick start's
    ~/Sync/remem is missing until the first sync makes it."""
    from remem import config
    from remem.engine import share

    sync_tool = tmp_path / "Sync"
    sync_tool.mkdir()
    config.set_value("share.folder", str(sync_tool / "remem"))
    out = share.sync(store, identity_dir=tmp_path / "identity")
    assert (sync_tool / "remem").is_dir() and out["folder"] == str((sync_tool / "remem").resolve())


def test_the_engines_sync_refuses_a_share_folder_with_no_parent(store, tmp_path: Path):
    from remem.engine import share
    from remem.engine.share_sign import ShareError

    with pytest.raises(ShareError, match="is no folder to make it in"):
        share.sync(store, tmp_path / "nowhere" / "remem", identity_dir=tmp_path / "identity")
    assert not (tmp_path / "nowhere").exists()


# --------------------------------------------------------------------------- 5. restore's question

@pytest.fixture
def backup(store, tmp_path: Path) -> Path:
    from remem.engine import memories

    memories.remember(store, "the staging database is on port 5433", kind="note")
    path = tmp_path / "memory-backup.db"
    assert run_remem("backup", str(path)).returncode == 0
    return path


def memory_files() -> list[str]:
    return sorted(p.name for p in paths.home().iterdir() if p.name.startswith("memory.db"))


def test_ctrl_d_at_restores_question_is_a_no(backup):
    before = memory_files()
    code, out, err = answer_remem_in_a_terminal(["restore", str(backup)], b"with this backup?", b"\x04")
    assert code == 0, err
    assert out.decode().rstrip().endswith("nothing changed")
    assert b"Aborted" not in out + err and err == b""
    assert memory_files() == before  # no memory.db.before-restore-…: nothing was replaced


def test_ctrl_c_at_restores_question_says_interrupted_and_exits_130(backup):
    before = memory_files()
    code, out, err = answer_remem_in_a_terminal(["restore", str(backup)], b"with this backup?", None)
    assert code == 130, err
    assert err.decode().strip() == "remem: interrupted"
    assert b"Aborted" not in out + err
    assert memory_files() == before
