"""Secrets an older release stored (before ingest redacted them) are redacted by the next
sleep, once: episodes, the lessons made from them and their predictions; the full-text
index and the vectors follow; doctor says how many are left; hooks never do this work."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.conftest import run_remem

# Secrets of three kinds the patterns know, each in a different place.
API_KEY = "sk-proj-Qw3rTy7UiOp9AsDfGh2JkL5zXc"
API_KEY_WORD = "Qw3rTy7UiOp9AsDfGh2JkL5zXc"  # the part full-text search indexes as one word
PASSWORD = "Zq8vLm2RxPelicanWing"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OWN_TOKEN = "OwnT0kenRemembered42x"  # in a note the person remembered by hand
SECRETS = (API_KEY_WORD, PASSWORD, GITHUB_TOKEN, OWN_TOKEN)
SESSION = "sess-old-1"
ERROR_TITLE = f"Bash failed: curl -H 'Authorization: Bearer {API_KEY}' https://api.example.com"
CORRECTION_TITLE = f"no, push with the token {GITHUB_TOKEN} not the ssh key"


def _before_sweep_schema() -> int:
    """The schema an older release left: every migration before the redaction sweep's."""
    from remem.engine.schema import MIGRATIONS

    return [fn.__name__ for fn in MIGRATIONS].index("_m007_redaction_sweep")


def _vector(text: str) -> bytes:
    from remem.engine.embed import get_embedder, to_blob

    return to_blob(get_embedder().encode([text])[0])


def _ids() -> dict[str, str]:
    from remem.engine.store import stable_id

    return {"error": stable_id(SESSION, "error", ERROR_TITLE),
            "correction": stable_id(SESSION, "correction", CORRECTION_TITLE)}


def old_memory(home) -> dict[str, str]:
    """A memory as an older release left it: secrets in an error finding's title and gist, in
    a correction's title alone, in an explicit event, in a lesson and its prediction; a note
    the person remembered by hand; a tag and a connection on the error."""
    from remem.engine import lessons
    from remem.engine.embed import get_embedder
    from remem.engine.store import Store

    space = get_embedder().space
    ids = _ids()
    error_gist = f"export OPENAI_API_KEY={API_KEY} then the zebra tests failed"
    correction_gist = "push over https, never over ssh"
    note_gist = f"the staging password={PASSWORD} opens the pelican dashboard"
    with Store(migrate_upto=_before_sweep_schema()) as old:
        old.put_episodes([
            {"id": ids["error"], "kind": "error", "title": ERROR_TITLE, "gist": error_gist,
             "detail": "giraffe traceback", "session_id": SESSION, "source": "claude-code",
             "space": space, "embedding": _vector(f"{ERROR_TITLE}\n{error_gist}"), "tags": ["mine"]},
            {"id": ids["correction"], "kind": "correction", "title": CORRECTION_TITLE,
             "gist": correction_gist, "session_id": SESSION, "source": "claude-code",
             "space": space, "embedding": _vector(correction_gist)},
            {"id": "event-note", "kind": "note", "title": "staging access", "gist": note_gist,
             "source": "events", "space": space, "embedding": _vector(f"staging access\n{note_gist}")},
            {"id": "own-note", "kind": "note", "title": "my token", "gist": f"token={OWN_TOKEN}",
             "source": "remember", "space": space, "embedding": _vector(f"my token\ntoken={OWN_TOKEN}")},
        ])
        text = f"On 401 errors: call the API with the key {API_KEY}."
        lesson = lessons.add_lesson(old, text, "error", sources=[ids["error"]], draft=f"Use {API_KEY}.",
                                    space=space, embedding=_vector(text))
        with old.write() as conn:
            conn.execute("INSERT INTO connections (src, dst, type, origin, created) "
                         "VALUES (?, 'event-note', 'related_to', 'explicit', '2026-11-01T00:00:00+00:00')",
                         (ids["error"],))
            conn.execute("INSERT INTO predictions (id, lesson_id, text, made, space, embedding) "
                         "VALUES ('p1', ?, ?, '2026-11-01T00:00:00+00:00', ?, ?)",
                         (lesson["id"], f"Within 14 days this error will come again: {text}", space,
                          _vector(text)))
    return {**ids, "lesson": lesson["id"]}


def everything_stored(store) -> str:
    """Every word of every row the sweep may touch, as one text to search for secrets."""
    rows = []
    for table in ("episodes", "lessons", "predictions", "tags", "connections"):
        rows += [{k: v for k, v in r.items() if k != "embedding"}
                 for r in store.rows(f"SELECT * FROM {table}")]
    return json.dumps(rows)


def fts(store, table: str, word: str) -> list[int]:
    found = store.rows(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (f'"{word}"',))
    return [r["rowid"] for r in found]


def check_fts(store) -> None:
    for table in ("episodes_fts", "lessons_fts"):
        store.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 1)")


def rows_since_the_sweep(store) -> int:
    """The rows stored after the last sweep's mark: what the next sweep reads."""
    from remem.engine import scrub

    marks = scrub.marks(store)
    return sum(store.scalar(f"SELECT count(*) FROM {table} WHERE {scrub._SEQ[table]} > ? AND {scope}",
                            (marks[table]["checked"],))
               for table, scope in scrub.SCOPE.items())


def sleep_summary(store, **kw) -> dict:
    from remem.engine import sleep

    return sleep.run_sleep_collect(store, **kw)


# --------------------------------------------------------------------------- the sweep

def test_sleep_redacts_what_an_older_release_stored_and_keeps_every_other_word(home):
    from remem.engine.recall import recall
    from remem.engine.sleep_passes import episode_text
    from remem.engine.store import Store, stable_id

    ids = old_memory(home)
    with Store() as store:
        assert recall(store, API_KEY_WORD, mode="keyword", touch=False)  # found before the sleep
        assert fts(store, "episodes_fts", API_KEY_WORD) and fts(store, "lessons_fts", API_KEY_WORD)

        counts = sleep_summary(store)["passes"]["redact"]

        assert counts == {"checked": 5, "episodes": 4, "renamed": 2, "lessons": 1, "primes": 0}
        stored = everything_stored(store)
        for secret in SECRETS:
            assert secret not in stored
        assert store.episode("own-note")["gist"] == "token=[secret]"
        for secret in (API_KEY_WORD, PASSWORD):
            assert fts(store, "episodes_fts", secret) == [] and fts(store, "lessons_fts", secret) == []
            found = recall(store, secret, mode="keyword", touch=False)
            assert secret not in json.dumps(found, default=str)
        check_fts(store)

        # The other words stay, and full-text search still finds each row by them.
        error_id = stable_id(SESSION, "error", ERROR_TITLE.replace(API_KEY, "[secret]"))
        error = store.episode(error_id)
        assert error["gist"] == "export OPENAI_API_KEY=[secret] then the zebra tests failed"
        assert error["detail"] == "giraffe traceback"
        assert fts(store, "episodes_fts", "zebra") == fts(store, "episodes_fts", "giraffe") == [error["seq"]]
        note = store.episode("event-note")
        assert note["gist"] == "the staging password=[secret] opens the pelican dashboard"
        assert fts(store, "episodes_fts", "pelican") == [note["seq"]]
        found = recall(store, "pelican dashboard", mode="keyword", touch=False)
        assert [r["id"] for r in found][:1] == ["event-note"]
        lesson = store.one("SELECT * FROM lessons WHERE id = ?", (ids["lesson"],))
        assert lesson["text"] == "On 401 errors: call the API with the key [secret]."
        assert lesson["draft"] == "Use [secret]."
        assert fts(store, "lessons_fts", "401") == [lesson["seq"]]

        # Vectors are made from the new words, as ingest would make them.
        assert error["embedding"] == _vector(episode_text(error))
        assert lesson["embedding"] == _vector(lesson["text"])
        prediction = store.one("SELECT * FROM predictions WHERE id = 'p1'")
        assert prediction["text"].endswith("the key [secret].")
        assert prediction["embedding"] == _vector(prediction["text"])

        # A finding takes the id its new title gives (as reading its session again would),
        # and what named it follows; a correction's vector (its gist) had nothing to change.
        assert store.scalar("SELECT count(*) FROM episodes WHERE id IN (?, ?)",
                            (ids["error"], ids["correction"])) == 0
        assert store.tags_of(error_id) == ["mine"]
        assert store.scalar("SELECT src FROM connections WHERE dst = 'event-note'") == error_id
        assert json.loads(lesson["sources"]) == [error_id]
        new_title = CORRECTION_TITLE.replace(GITHUB_TOKEN, "[secret]")
        correction = store.episode(stable_id(SESSION, "correction", new_title))
        assert correction["embedding"] == _vector("push over https, never over ssh")


def test_a_session_read_again_after_the_sweep_adds_no_twin_of_a_redacted_finding(home):
    """The renamed finding has the id ingest now gives it: reading its session again finds it."""
    from remem.engine.detect_common import Finding
    from remem.engine.session_episodes import _finding_episode
    from remem.engine.store import Store

    old_memory(home)
    with Store() as store:
        sleep_summary(store, passes=["redact"])
        finding = Finding(kind="error", title=ERROR_TITLE, text="whatever")  # as ingest makes it now
        fresh = _finding_episode(finding, {"session_id": SESSION, "source": "claude-code", "cwd": None}, "")
        assert store.scalar("SELECT count(*) FROM episodes WHERE id = ?", (fresh["id"],)) == 1


def test_a_second_sleep_changes_nothing(home):
    from remem.engine import clock
    from remem.engine.store import Store

    old_memory(home)
    with Store() as store, clock.frozen(clock.iso()):  # one instant: decay has nothing to do again
        assert sleep_summary(store)["passes"]["redact"]["episodes"] == 4
        before = {t: store.rows(f"SELECT * FROM {t} ORDER BY 1")
                  for t in ("episodes", "lessons", "predictions", "tags", "connections")}
        # What the first sleep's later passes stored (its lessons) is read once, as any row
        # stored after a sweep in a memory an older release made; nothing else is.
        since = rows_since_the_sweep(store)
        again = sleep_summary(store)["passes"]["redact"]
        after = {t: store.rows(f"SELECT * FROM {t} ORDER BY 1") for t in before}
        assert rows_since_the_sweep(store) == 0
        assert sleep_summary(store)["passes"]["redact"]["checked"] == 0
    assert again == {"checked": since, "episodes": 0, "renamed": 0, "lessons": 0, "primes": 0}
    assert after == before


def test_an_interrupted_sweep_goes_on_where_it_stopped(home, monkeypatch):
    """Progress is written with each batch: a sleep killed after one batch is not read again."""
    from remem import config
    from remem.engine import scrub
    from remem.engine.sleep_passes import Context
    from remem.engine.store import Store

    old_memory(home)
    monkeypatch.setattr(scrub, "BATCH", 1)
    with Store() as store:
        steps = scrub.sweep(Context(store=store, cfg=config.load(), dry_run=False, passes=("redact",)))
        next(steps), next(steps)  # the start, then the first batch
        steps.close()  # the sleep dies here
        assert scrub.marks(store)["episodes"]["checked"] == 1
        assert scrub.pending(store) == {"episodes": 3, "lessons": 1}
        counts = sleep_summary(store, passes=["redact"])["passes"]["redact"]
        assert counts["checked"] == 4 and scrub.pending(store) == {}  # the first row is not read again
        for secret in SECRETS:
            assert secret not in everything_stored(store)


def test_a_memory_made_by_this_release_has_nothing_to_sweep(store):
    """Ingest redacts what it makes now, and no older release opens a memory this one made:
    a new memory's rows are never read by the sweep, however many sleeps and rows come."""
    from remem.engine import scrub

    store.put_episodes([{"id": "n1", "kind": "note", "title": "t", "gist": f"password={PASSWORD}",
                         "source": "events"}])
    assert scrub.pending(store) == {}
    assert sleep_summary(store, passes=["redact"])["passes"]["redact"]["checked"] == 0
    store.put_episodes([{"id": "n2", "kind": "note", "title": "t2", "gist": "more", "source": "events"}])
    assert sleep_summary(store, passes=["redact"])["passes"]["redact"]["checked"] == 0
    assert {t: (m["checked"], m["upto"]) for t, m in scrub.marks(store).items()} == {
        "episodes": (0, 0), "lessons": (0, 0), "primes": (0, 0)}


def test_what_an_older_process_running_across_the_upgrade_stores_is_redacted_by_the_next_sleep(home, cli):
    """A `remem serve` (or a sleep) of an older release, open when this one upgraded the memory,
    goes on storing unredacted words: each sleep reads the rows stored since the last one
    (those alone), so none of them keeps a secret, and the sleep after reads nothing."""
    from remem.engine import lessons
    from remem.engine.embed import get_embedder
    from remem.engine.store import Store

    old_memory(home)

    def redact_counts() -> dict:
        res = cli("sleep", "--json")
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)["passes"]["redact"]

    with Store(migrate_upto=_before_sweep_schema()) as older:  # opened before the upgrade
        assert redact_counts()["episodes"] == 4  # this release upgrades the memory and sweeps it
        gist = f"the staging API key is {API_KEY}"
        older.put_episodes([{"id": "late-note", "kind": "note", "title": "staging key", "gist": gist,
                             "source": "mcp", "space": get_embedder().space,
                             "embedding": _vector(f"staging key\n{gist}")}])
        text = f"Call the staging API with {API_KEY}."
        lessons.add_lesson(older, text, "note", sources=["late-note"], space=get_embedder().space,
                           embedding=_vector(text))

    with Store() as store:
        since = rows_since_the_sweep(store)  # those two, and the lessons this release's sleep made
        assert 2 <= since < store.scalar("SELECT count(*) FROM episodes")
    assert redact_counts() == {"checked": since, "episodes": 1, "renamed": 0, "lessons": 1, "primes": 0}
    with Store() as store:
        assert API_KEY_WORD not in everything_stored(store)
        assert store.episode("late-note")["gist"] == "the staging API key is [secret]"
        since = rows_since_the_sweep(store)
    found = cli("recall", "staging API key", "--json")
    assert found.exit_code == 0 and API_KEY_WORD not in found.stdout
    assert redact_counts() == {"checked": since, "episodes": 0, "renamed": 0, "lessons": 0, "primes": 0}


def test_a_dry_run_changes_nothing_and_says_what_a_sleep_would_redact(home):
    from remem.engine.store import Store

    old_memory(home)
    with Store() as store:
        before = everything_stored(store)
        counts = sleep_summary(store, passes=["redact"], dry_run=True)["passes"]["redact"]
        assert counts["episodes"] == 4 and counts["lessons"] == 1
        assert everything_stored(store) == before


# --------------------------------------------------------------------------- doctor, hooks

def test_doctor_says_how_many_older_rows_are_left_before_the_sleep_and_nothing_after(home):
    from remem.engine import doctor
    from remem.engine.store import Store

    old_memory(home)

    def said() -> list[str]:
        return [p["problem"] for p in doctor.store_health()["problems"] if "secrets" in p["problem"]]

    assert said() == ["4 memories and 1 lesson stored by an older remem may still hold secrets (API keys, "
                      "tokens, passwords) that recall can hand to agents; the next sleep redacts them"]
    with Store() as store:
        sleep_summary(store, passes=["redact"])
    assert said() == []


def test_a_hook_leaves_an_older_memory_to_a_command_which_upgrades_it_but_never_sweeps_it(home):
    """A hook never upgrades (RELIABILITY.md: the copy kept before an upgrade could outlast its
    timeout): it says so in one line and shows nothing. A command upgrades (one max(seq) per
    table) and does nothing more: the sweep is the sleep's work, however many rows wait."""
    from remem.engine import scrub
    from remem.engine.schema import MIGRATIONS
    from remem.engine.store import Store

    ids = old_memory(home)
    payload = {"prompt": "how do I call the API after a 401 error", "session_id": "s-hook",
               "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    res = run_remem("hook", "prompt", "--agent", "claude-code", input=json.dumps(payload))
    assert res.returncode == 0 and "needs an upgrade" in res.stderr, res.stderr
    conn = sqlite3.connect(home / "memory.db")
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] < len(MIGRATIONS)  # left as it was
    finally:
        conn.close()
    with Store() as command_store:  # as any remem command opens it: upgraded
        assert command_store.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        title = command_store.one("SELECT title FROM episodes WHERE id = ?", (ids["error"],))["title"]
        assert title == ERROR_TITLE  # its secret still there: nothing was swept
        assert scrub.pending(command_store) == {"episodes": 4, "lessons": 1}
        assert API_KEY_WORD in everything_stored(command_store)


# --------------------------------------------------------------------------- the CLI, restore, import

def test_remem_sleep_and_doctor_from_the_command_line(home, cli):
    old_memory(home)

    def problems() -> list[dict]:
        res = cli("doctor", "--json", "--no-run")
        return [p for p in json.loads(res.stdout)["problems"] if "secrets" in p["problem"]]

    assert [p["fix"] for p in problems()] == ["remem sleep   (or let the nightly sleep do it)"]
    res = cli("sleep", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["passes"]["redact"]["episodes"] == 4
    found = cli("recall", "staging pelican dashboard password", "--json")
    assert found.exit_code == 0 and "[secret]" in found.stdout and PASSWORD not in found.stdout
    assert problems() == []


def test_a_restored_backup_from_an_older_release_is_swept_by_the_next_sleep(home, tmp_path):
    from remem.engine import backup, scrub
    from remem.engine.store import Store

    old_memory(home)
    older = tmp_path / "older.db"
    (home / "memory.db").rename(older)  # a backup an older release made
    for suffix in ("-wal", "-shm"):
        (home / f"memory.db{suffix}").unlink(missing_ok=True)
    with Store() as store:  # a new memory, swept already
        assert scrub.pending(store) == {}
    backup.restore(older)
    with Store() as store:
        assert scrub.pending(store) == {"episodes": 4, "lessons": 1}
        sleep_summary(store, passes=["redact"])
        assert API_KEY_WORD not in everything_stored(store)


@pytest.mark.parametrize("over_existing", [False, True])
def test_an_import_starts_the_sweep_over(home, tmp_path, over_existing):
    """Imported rows may hold secrets, new ones and ones over rows already here (which keep
    their place, below where the sweep got): the next sleep reads every row again."""
    import io

    from remem.engine import backup, scrub
    from remem.engine.store import Store

    old_memory(home)
    with Store() as store:
        export = io.StringIO()
        backup.export_jsonl(store, export)
        if over_existing:
            sleep_summary(store, passes=["redact"])  # swept; the import brings the secrets back
    if not over_existing:
        for suffix in ("", "-wal", "-shm"):
            (home / f"memory.db{suffix}").unlink(missing_ok=True)
    with Store() as store:
        assert scrub.pending(store) == {}
        result = backup.import_jsonl(store, io.StringIO(export.getvalue()))
        assert result["errors"] == []
        assert API_KEY_WORD in everything_stored(store)
        assert scrub.pending(store)["episodes"] >= 4
        sleep_summary(store, passes=["redact"])
        for secret in SECRETS:
            assert secret not in everything_stored(store)
        assert scrub.pending(store) == {}

