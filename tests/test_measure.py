"""measure and compare over a synthetic history built with a controlled clock."""

from __future__ import annotations

from datetime import timedelta

from remem.config import DEFAULTS
from remem.engine import clock, lessons
from remem.engine.compare import compare
from remem.engine.embed import get_embedder, to_blob
from remem.engine.measure import measure
from remem.engine.store import Store

START = "2026-10-01T09:00:00+00:00"
WORDS = [
    "use uv, not pip, to install packages",
    "don't use pip here, install with uv",
    "I said uv for installs, not pip",
]


def _episode(store: Store, eid: str, kind: str, text: str, at: str, session: str) -> None:
    emb = get_embedder()
    store.put_episodes([{
        "id": eid, "kind": kind, "title": text[:60], "gist": text, "at": at, "session_id": session,
        "space": emb.space, "embedding": to_blob(emb.encode([text])[0]),
    }])


def _lesson(store: Store, text: str, sources: list[str], created: str) -> str:
    emb = get_embedder()
    made = lessons.add_lesson(store, text, "correction", sources=sources, created=created,
                              space=emb.space, embedding=to_blob(emb.encode([text])[0]))
    return made["id"]


def _history(store: Store, primed_sessions: int, held_sessions: int, primed_repeats: int, held_repeats: int) -> None:
    """Day 0: the person corrects once and a lesson is learned. Later sessions: some primed,
    some held out; a share of each repeats the correction after the decision (and sleep adds
    it to the lesson)."""
    start = clock.parse(START)
    _episode(store, "c0", "correction", WORDS[0], START, "s0")
    lesson_id = _lesson(store, "Use uv, not pip, to install packages", ["c0"], clock.iso(start + timedelta(hours=1)))
    sources = ["c0"]
    n = 0
    for group, count, repeated in (("p", primed_sessions, primed_repeats), ("h", held_sessions, held_repeats)):
        for i in range(count):
            n += 1
            at = clock.iso(start + timedelta(days=1 + n % 20, minutes=n))
            session = f"{group}{i}"
            with store.write() as conn:
                conn.execute(
                    "INSERT INTO primes (at, session_id, agent, event, lesson_ids, held_out, query, chars) "
                    "VALUES (?, ?, 'claude-code', 'prompt', ?, ?, 'install deps', 50)",
                    (at, session, f'["{lesson_id}"]', int(group == "h")),
                )
            if i < repeated:  # later in the session the person says it again
                eid = f"c-{session}"
                later = clock.iso(clock.parse(at) + timedelta(minutes=5))
                _episode(store, eid, "correction", WORDS[1 + i % 2], later, session)
                sources.append(eid)
    lessons.update_lesson(store, lesson_id, sources=sources, seen=len(sources))


def test_priming_that_halves_repeats_is_reported_with_its_interval(store):
    with clock.frozen("2026-10-25T00:00:00+00:00"):
        _history(store, primed_sessions=40, held_sessions=40, primed_repeats=12, held_repeats=24)
        result = measure(store, days=60)
    pvh = result["primed_vs_held_out"]
    assert pvh["primed"] == {"sessions": 40, "with_repeat": 12, "rate": 0.3}
    assert pvh["held_out"] == {"sessions": 40, "with_repeat": 24, "rate": 0.6}
    assert pvh["difference"] == -0.3
    low, high = pvh["ci95"]
    assert low < -0.3 < high < 0
    assert "repeat less" in pvh["verdict"]
    # every later correction repeated a lesson that already existed; the first did not
    assert result["corrections"] == 37 and result["repeat_yourself_rate"] == round(36 / 37, 4)
    assert result["themes"][0]["new_sources"] == 37


def _prime(store: Store, session: str, at: str, lesson_id: str, held_out: bool, query: str,
           event: str = "prompt") -> None:
    with store.write() as conn:
        conn.execute(
            "INSERT INTO primes (at, session_id, agent, event, lesson_ids, held_out, query, chars) "
            "VALUES (?, ?, 'claude-code', ?, ?, ?, ?, 50)",
            (at, session, event, f'["{lesson_id}"]', int(held_out), " ".join(query.split())),
        )


def test_a_lesson_chosen_for_the_repeated_correction_itself_is_not_a_prime(store):
    """A session is primed for a lesson only by decisions made before its first repeat of it:
    the prompt hook picking the lesson for the correction's own words (recorded just before or
    at the correction) is the repeat, not a prime — in both arms."""
    start = clock.parse(START)

    def at(day: int, minutes: float) -> str:
        return clock.iso(start + timedelta(days=day, minutes=minutes))

    _episode(store, "c0", "correction", WORDS[0], START, "s0")
    lesson_id = _lesson(store, "Use uv, not pip, to install packages", ["c0"], at(0, 60))
    with store.write() as conn:  # an older lesson merged into it: its primes count for the theme
        conn.execute("INSERT INTO aliases (old, new, at, created) VALUES ('old-lesson', ?, ?, ?)",
                     (lesson_id, at(0, 90), at(0, 30)))
    said = "I said uv for installs,\n  not pip"
    sources = ["c0"]

    def repeat(session: str, when: str) -> None:
        _episode(store, f"c-{session}", "correction", said, when, session)
        sources.append(f"c-{session}")

    # primed arm
    repeat("p-late", at(1, 10))  # the only decision is the hook answering the correction
    _prime(store, "p-late", at(1, 9.99), lesson_id, False, said)
    _prime(store, "p-early", at(2, 0), lesson_id, False, "install the deps")  # then repeats
    repeat("p-early", at(2, 10))
    _prime(store, "p-quiet", at(3, 0), lesson_id, False, "install the deps")  # never repeats
    # held-out arm, the same rule
    repeat("h-late", at(4, 10))
    _prime(store, "h-late", at(4, 10), lesson_id, True, said)
    repeat("h-after", at(5, 10))  # a decision after the repeat, on another prompt
    _prime(store, "h-after", at(5, 12), lesson_id, True, "pip install requests", event="pre-tool")
    _prime(store, "h-early", at(6, 0), "old-lesson", True, "install the deps")  # then repeats
    repeat("h-early", at(6, 10))
    lessons.update_lesson(store, lesson_id, sources=sources, seen=len(sources))

    with clock.frozen(at(20, 0)):
        pvh = measure(store, days=60)["primed_vs_held_out"]
    assert pvh["primed"] == {"sessions": 2, "with_repeat": 1, "rate": 0.5}  # p-early, p-quiet
    assert pvh["held_out"] == {"sessions": 1, "with_repeat": 1, "rate": 1.0}  # h-early


def test_too_short_a_history_says_so(store):
    with clock.frozen("2026-10-25T00:00:00+00:00"):
        _history(store, primed_sessions=3, held_sessions=2, primed_repeats=1, held_repeats=2)
        pvh = measure(store, days=60)["primed_vs_held_out"]
    assert pvh["difference"] is None and pvh["ci95"] is None
    assert pvh["verdict"].startswith("too little data to tell")


def test_prediction_accuracy_counts_resolved_only(store):
    with store.write() as conn:
        for i, outcome in enumerate(["confirmed", "confirmed", "failed", None]):
            conn.execute(
                "INSERT INTO predictions (id, lesson_id, text, made, resolved, outcome) VALUES (?, 'l', 't', ?, ?, ?)",
                (f"p{i}", START, START if outcome else None, outcome),
            )
    with clock.frozen("2026-10-02T00:00:00+00:00"):
        pa = measure(store, days=30)["prediction_accuracy"]
    assert pa == {"confirmed": 2, "failed": 1, "resolved": 3, "open": 1, "accuracy": round(2 / 3, 4)}


def test_compare_remem_against_retrieve_similar_with_token_counts(store):
    start = clock.parse(START)
    noise = [f"ran the test suite for module {i} and it passed after fixing the fixtures, the flaky "
             f"network mocks and the slow database setup that the integration tests share" for i in range(8)]
    for i, text in enumerate(noise):
        _episode(store, f"n{i}", "session", text, clock.iso(start + timedelta(minutes=i)), "sx")
    _episode(store, "c0", "correction", WORDS[0], clock.iso(start + timedelta(hours=1)), "s0")
    lesson_id = _lesson(store, "Use uv, not pip, to install packages", ["c0"], clock.iso(start + timedelta(hours=2)))
    _episode(store, "c1", "correction", WORDS[1], clock.iso(start + timedelta(days=1)), "s1")
    _episode(store, "c2", "correction", WORDS[2], clock.iso(start + timedelta(days=2)), "s2")
    lessons.update_lesson(store, lesson_id, sources=["c0", "c1", "c2"])
    result = compare(store, k=5)
    by_id = {r["id"]: r for r in result["rows"]}
    assert result["corrections"] == 3
    assert by_id["c0"]["remem"] is False and by_id["c0"]["similar"] is False  # nothing known yet
    assert by_id["c1"]["remem"] and by_id["c2"]["remem"]
    # remem injects one short lesson in its block; retrieve-similar injects k whole episodes
    assert 0 < by_id["c2"]["remem_tokens"] < by_id["c2"]["similar_tokens"]
    totals = result["totals"]
    assert totals["remem_covered"] == 2
    assert totals["remem_tokens"] < totals["similar_tokens"]


def test_compare_counts_what_priming_injects_and_each_episode_once(store):
    """remem's cost is the block priming renders (fence, header, "- (correction) ..." line), not
    the bare lesson; retrieve-similar's is each episode's gist, plus its title only when it differs."""
    from remem import config
    from remem.engine import prime

    start = clock.parse(START)
    _episode(store, "c0", "correction", WORDS[0], START, "s0")  # title == gist
    emb = get_embedder()
    long_text = "ran the whole test suite and it passed " * 3  # title (60 chars) != gist
    store.put_episodes([{"id": "n0", "kind": "session", "title": "test run", "gist": long_text,
                         "at": clock.iso(start + timedelta(minutes=5)), "session_id": "sx",
                         "space": emb.space, "embedding": to_blob(emb.encode([long_text])[0])}])
    _lesson(store, "Use uv, not pip, to install packages", ["c0"], clock.iso(start + timedelta(hours=1)))
    _episode(store, "c1", "correction", WORDS[1], clock.iso(start + timedelta(days=1)), "s1")
    row = {r["id"]: r for r in compare(store, k=5)["rows"]}["c1"]
    shown = prime.select(store, WORDS[1], event="prompt", cfg=config.load(), record=False)
    assert [lesson["kind"] for lesson in shown["lessons"]] == ["correction"]
    assert row["remem"] and row["remem_tokens"] == len(shown["text"]) // 4
    assert row["similar_tokens"] == (len(WORDS[0]) + len(long_text) + len("test run")) // 4


def test_compare_scores_a_lesson_as_priming_does_cosine_plus_keywords(store):
    """The cosine alone is below prime.min_relevance, the keyword evidence lifts it over: the
    lesson `remem context --prompt` shows for the correction covers it."""
    from remem import config
    from remem.engine import prime

    cfg = config.load()
    start = clock.parse(START)
    nginx = "Don't restart nginx during business hours; reload it instead."
    later = "why did you bounce the nginx service at noon"
    _episode(store, "c0", "correction", nginx, START, "s0")
    _lesson(store, nginx, ["c0"], clock.iso(start + timedelta(hours=1)))
    _episode(store, "c1", "correction", later, clock.iso(start + timedelta(days=1)), "s1")
    scored = prime.candidates(store, later, cfg=cfg)
    assert scored[0]["semantic"] < cfg["prime"]["min_relevance"] <= scored[0]["relevance"]
    assert prime.select(store, later, event="prompt", cfg=cfg, record=False)["lessons"]
    row = {r["id"]: r for r in compare(store, cfg=cfg)["rows"]}["c1"]
    assert row["remem"] is True


def test_compare_shows_only_active_lessons_that_priming_may_show_in_that_cwd(store):
    """A vetoed lesson, or one of another project, is never primed: it covers nothing."""
    emb = get_embedder()
    start = clock.parse(START)

    def correction(eid: str, text: str, days: int, cwd: str) -> None:
        store.put_episodes([{"id": eid, "kind": "correction", "title": text, "gist": text, "cwd": cwd,
                             "at": clock.iso(start + timedelta(days=days)), "session_id": eid,
                             "space": emb.space, "embedding": to_blob(emb.encode([text])[0])}])

    nginx = "Don't restart nginx during business hours; reload it instead."
    correction("c0", WORDS[0], 0, "/home/dev/shop")
    correction("c1", nginx, 0, "/home/dev/shop")
    born = clock.iso(start + timedelta(hours=1))
    lessons.add_lesson(store, WORDS[0], "correction", sources=["c0"], created=born, status="vetoed",
                       space=emb.space, embedding=to_blob(emb.encode([WORDS[0]])[0]))
    lessons.add_lesson(store, nginx, "correction", sources=["c1"], created=born, cwd="/home/dev/shop",
                       space=emb.space, embedding=to_blob(emb.encode([nginx])[0]))
    correction("c2", WORDS[0], 1, "/home/dev/shop")  # only the vetoed lesson fits
    correction("c3", nginx, 1, "/home/dev/blog")  # another project
    correction("c4", nginx, 2, "/home/dev/shop/api")  # inside the project
    rows = {r["id"]: r for r in compare(store)["rows"]}
    assert rows["c2"]["remem"] is False and rows["c2"]["remem_tokens"] == 0
    assert rows["c3"]["remem"] is False and rows["c3"]["remem_tokens"] == 0
    assert rows["c4"]["remem"] is True


def test_measure_and_compare_cli_json(cli):
    import json

    out = cli("measure", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    for key in ("repeat_yourself_rate", "repeated_error_rate", "prediction_accuracy", "themes", "primed_vs_held_out"):
        assert key in data
    out = cli("compare", "--json")
    assert out.exit_code == 0
    data = json.loads(out.stdout)
    # an empty store keeps the keys a full answer has
    assert data["corrections"] == 0 and data["k"] == 5
    assert data["cut"] == DEFAULTS["prime"]["min_relevance"]


def test_compare_cli_shows_the_latest_rows_and_says_how_many_it_left_out(store, cli):
    start = clock.parse(START)
    names = ["alpha", "bravo", "charlie"]
    for day, name in enumerate(names):
        _episode(store, f"c{day}", "correction", name, clock.iso(start + timedelta(days=day)), f"s{day}")
    out = cli("compare", "--limit", "1")
    assert out.exit_code == 0, out.output
    assert "showing the latest 1 of 3 corrections" in out.stdout
    assert "charlie" in out.stdout and "alpha" not in out.stdout  # the latest, not the first
    out = cli("compare", "--limit", "0")
    assert out.exit_code == 0 and "remem covered" in out.stdout and "charlie" not in out.stdout
