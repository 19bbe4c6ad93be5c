"""The queries an older release logged with its lesson choices (`primes.query`, a hook's
prompt or a proxied question as it came) are redacted by the next sleep's redact pass, once."""

from __future__ import annotations

import json

API_KEY = "sk-proj-Qw3rTy7UiOp9AsDfGh2JkL5zXc"
API_KEY_WORD = "Qw3rTy7UiOp9AsDfGh2JkL5zXc"


def _before_primes_sweep() -> int:
    """The schema the release before left: every migration before the one marking the queries."""
    from remem.engine.schema import MIGRATIONS

    return [fn.__name__ for fn in MIGRATIONS].index("_m010_primes_redaction_sweep")


def _log_choice(store, query: str) -> int:
    """A lesson choice as an older release logged it: the query as it came."""
    with store.write() as conn:
        return conn.execute("INSERT INTO primes (at, session_id, agent, event, lesson_ids, query, chars) "
                            "VALUES ('2026-11-01T00:00:00+00:00', 's1', 'claude-code', 'prompt', '[]', ?, 10)",
                            (query,)).lastrowid


def test_a_raw_query_an_older_release_logged_is_redacted_by_remem_sleep(home, cli):
    from remem.engine import scrub
    from remem.engine.store import Store

    with Store(migrate_upto=_before_primes_sweep()) as store:  # the release before logged these
        raw = _log_choice(store, f"why does the API say 401 with {API_KEY}?")
        plain = _log_choice(store, "why does the docker build fail?")

    def redact_counts() -> dict:
        res = cli("sleep", "--json")
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)["passes"]["redact"]

    first = redact_counts()
    assert first["primes"] == 1 and first["checked"] >= 2
    with Store() as store:
        queries = {r["id"]: r["query"] for r in store.rows("SELECT id, query FROM primes")}
        assert queries[raw] == "why does the API say 401 with [secret]?"
        assert queries[plain] == "why does the docker build fail?"
        assert scrub.marks(store)["primes"]["checked"] == scrub.marks(store)["primes"]["upto"] >= plain
        # What agents are handed is what doctor warns of; the logged queries are not among it.
        assert "primes" not in scrub.pending(store)
    assert redact_counts()["primes"] == 0


def test_a_query_an_older_process_logs_after_the_first_sweep_is_redacted_by_the_next(home, cli):
    """A `remem serve` or a proxy of the older release, running across the upgrade, goes on
    logging queries as they came: the next sleep reads the ones logged since the last."""
    from remem.engine.store import Store

    with Store(migrate_upto=_before_primes_sweep()) as store:
        _log_choice(store, "an early question")
    assert cli("sleep", "--json").exit_code == 0
    with Store() as store:  # the older process, still running after the upgrade
        late = _log_choice(store, f"token={API_KEY_WORD}")
    res = cli("sleep", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["passes"]["redact"]["primes"] == 1
    with Store() as store:
        assert store.scalar("SELECT query FROM primes WHERE id = ?", (late,)) == "token=[secret]"


def test_the_morning_line_of_the_redact_pass_names_the_logged_queries_it_redacted():
    from remem.engine.sleep_describe import describe_pass

    line = describe_pass("redact", {"checked": 5, "episodes": 0, "lessons": 1, "primes": 2})
    assert line == "checked 5 rows an older release may have written: secrets redacted in 1 lesson, 2 logged queries"
    assert describe_pass("redact", {"checked": 2, "primes": 0}).endswith("no secret found")


def test_a_memory_this_release_made_never_reads_its_logged_queries_again(home, cli):
    """Its queries were redacted as they were logged (prime.stored_query): no sleep reads them."""
    from remem.engine import scrub
    from remem.engine.store import Store

    with Store() as store:
        _log_choice(store, "why does the docker build fail?")
    for _ in range(2):
        with Store() as store:
            _log_choice(store, "and the cache?")
        res = cli("sleep", "--json")
        assert res.exit_code == 0 and json.loads(res.stdout)["passes"]["redact"]["checked"] == 0
    with Store() as store:
        assert scrub.marks(store)["primes"]["upto"] == 0
