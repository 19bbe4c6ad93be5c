"""Opposite surprises kept apart; reports read as reports again.

Reading a surprise's rewording loosely let any one word differ once the shared words outnumbered
it: "the integration tests hang when Docker is not running" and "… pass when Docker is not
running" made one lesson, seen twice, that taught the first. And a model's space puts many
opposites near ("enabled" and "disabled", "larger" and "smaller" reach the cut), so a word's
vector alone cannot tell a rewording from an opposite.

A sentence's "don't get me wrong", "don't get any output", "don't think twice" were read as
orders ("Don't get me wrong, I like the layout" was a correction), and "No data in the table",
"No output from the tests", "No error on my side" as rules: reports of what the person sees,
which the sleep would have made lessons of.

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the real CLI in process, the
real ingest and sleep.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from remem.engine import clock
from remem.engine.consolidate import (_FRAME_WORDS, _OPPOSITES, _TURNING, _stem, content_words, is_name,
                                      opposite, said_again)
from remem.engine.detect_corrections import pushback
from remem.engine.ingest import ingest_paths
from remem.engine.lessons import add_lesson
from remem.engine.lessons_pass import waiting
from tests.test_consolidate_surprises import _alike, _surprise
from tests.test_detect_pasted_lines import _transcript
from tests.test_sleep import _at, lessons, run

# --------------------------------------------------------------------------- surprises

OPPOSITE = [
    ("Huh, the integration tests hang when Docker is not running",
     "Turns out the integration tests pass when Docker is not running"),
    ("Turns out uploads over the limit are rejected by nginx",
     "Turns out uploads over the limit are accepted by nginx"),
    ("Turns out the migration runs before the tests in CI",
     "Turns out the migration runs after the tests in CI"),
    ("Surprisingly the build cache is invalidated on every push",
     "Surprisingly the build cache is reused on every push"),
    ("Turns out the API returns dates as strings", "Turns out the API returns dates as integers"),
    # opposites the model's space puts at or past the cut
    ("Turns out the feature flag is enabled in the config", "Turns out the feature flag is disabled in the config"),
    ("Turns out the upload limit is larger than the docs say",
     "Turns out the upload limit is smaller than the docs say"),
    ("Turns out the login check succeeds on the second try", "Turns out the login check fails on the second try"),
    ("Turns out the table names are lowercase in the dump", "Turns out the table names are uppercase in the dump"),
    ("Turns out the search is fast with the index", "Turns out the search is slow with the index"),
    ("Turns out the cache is shared between branches", "Turns out the cache is not shared across branches"),
    # a word on each side that meets none of the other's: two facts, each waiting for a repeat
    # (a rewording so read waits for one more; a wrong merge would teach the wrong fact)
    ("Turns out the API returns dates as strings, not datetime objects.",
     "Surprisingly the API gives back dates as plain strings rather than datetimes."),
]


@pytest.mark.parametrize("x, y, a, b", [(x, y, *OPPOSITE[n]) for n, (x, y) in enumerate(
    [("enabled", "disabled"), ("larger", "smaller"), ("succeeds", "fails"), ("lowercase", "uppercase"),
     ("fast", "slow")], start=5)])
def test_opposites_the_models_space_puts_near_are_still_two_facts(x, y, a, b):
    """Why a vector alone does not make two words one: the bundled model puts these opposites
    at or past the cut."""
    alike = _alike()
    assert alike(x, y)
    assert not said_again(content_words(a), content_words(b), alike)


@pytest.mark.parametrize("a, b", OPPOSITE)
def test_surprises_that_say_opposite_things_are_not_one_said_again(a, b):
    alike = _alike()
    assert not said_again(content_words(a), content_words(b), alike)
    assert not said_again(content_words(b), content_words(a), alike)


def test_opposite_surprises_each_wait_and_rewordings_still_meet(store):
    opposed = OPPOSITE[:-1]  # the last says what "returns dates as strings" says, and more
    said = [(f"o{n}{side}", text) for n, pair in enumerate(opposed) for side, text in zip("ab", pair)]
    said += [("r1", "Turns out the release job hangs unless the VPN is connected."),
             ("r2", "Interestingly, the release job hangs when the VPN is not connected."),
             ("r3", "Turns out ruff ignores the settings in pyproject.toml."),
             ("r4", "Surprisingly ruff ignores the config in pyproject.toml.")]
    with clock.frozen(_at(100)):
        store.put_episodes([_surprise(i, text, hours) for hours, (i, text) in enumerate(said, start=1)])
        run(store)
    made = sorted(sorted(l["sources"]) for l in lessons(store))
    assert made == [["r1", "r2"], ["r3", "r4"]], made
    assert waiting(store)["surprises"] == 2 * len(opposed)


def test_remember_two_opposite_surprises_then_sleep_makes_no_lesson(store, cli):
    """The review's steps, through the CLI."""
    for words in OPPOSITE[0]:
        done = cli("remember", "--kind", "surprise", words)
        assert done.exit_code == 0, done.output
    slept = cli("sleep")
    assert slept.exit_code == 0, slept.output
    assert [l for l in lessons(store) if l["status"] == "active"] == []
    assert "2 surprises were each seen once" in slept.output


def test_the_merge_pass_keeps_two_lessons_of_opposite_surprises_apart(store):
    hang, passes = OPPOSITE[0]
    with clock.frozen(_at(100)):
        store.put_episodes([_surprise("h1", hang, 1), _surprise("h2", f"Oddly, {hang[5:]}", 2),
                            _surprise("p1", passes, 3), _surprise("p2", f"Huh, {passes[10:]}", 4)])
        add_lesson(store, f"Keep in mind: {hang}", "surprise", sources=["h1", "h2"], created=_at(10))
        add_lesson(store, f"Keep in mind: {passes}", "surprise", sources=["p1", "p2"], created=_at(20))
        summary = run(store, passes=["merge"])
    assert summary["passes"]["merge"].get("themes", 0) == 0, summary["passes"]["merge"]
    assert len([l for l in lessons(store) if l["status"] == "active"]) == 2


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=9)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORD, min_size=2, max_size=8, unique=True), at=st.integers(0, 7), one=_WORD, other=_WORD,
       lead=st.sampled_from(["Turns out", "Huh,", "Surprisingly", ""]))
def test_one_word_on_each_side_that_meets_none_of_the_others_is_another_fact(words, at, one, other, lead):
    """However many words the two share, a word of each that is no form of the other's, nor
    near it, nor a preposition or a turn, makes two facts."""
    at = min(at, len(words) - 1) + 1  # the first word, what the two are about, stays shared
    assume(_stem(one) != _stem(other) and not {one, other} & set(words))
    assume(not {one, other} & (_FRAME_WORDS | _TURNING) and not is_name(one) and not is_name(other))
    a = content_words(f"{lead} {' '.join([*words[:at], one, *words[at:]])}")
    b = content_words(f"{lead} {' '.join([*words[:at], other, *words[at:]])}")
    assume(one in a and other in b and len(a) == len(b))
    never = lambda x, y: False  # noqa: E731 — no two different words alike
    assert not said_again(a, b, never) and not said_again(b, a, never)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORD, min_size=1, max_size=8, unique=True), at=st.integers(0, 8),
       pair=st.sampled_from(_OPPOSITES), turned=st.booleans())
def test_opposites_never_meet_however_near_their_vectors(words, at, pair, turned):
    """Even where every two words are near (a space that puts opposites together), a word and
    its opposite make two facts."""
    one, other = pair[::-1] if turned else pair
    at = min(at, len(words))
    a = content_words(" ".join([*words[:at], one, *words[at:]]))
    b = content_words(" ".join([*words[:at], other, *words[at:]]))
    assume(one in a and other in b and not {one, other} & set(words))
    always = lambda x, y: True  # noqa: E731 — every two words alike
    assert opposite(one, other)
    assert not said_again(a, b, always) and not said_again(b, a, always)


@pytest.mark.parametrize("x, y, turned", [
    *[(x, y, True) for x, y in [("succeeds", "fails"), ("succeeded", "failed"), ("rejected", "accepted"),
                                ("larger", "smaller"), ("higher", "lower"), ("earlier", "later"), ("closed", "opened"),
                                ("enabled", "disabled"), ("invalid", "valid"), ("lowercase", "uppercase"),
                                ("ascending", "descending"), ("imports", "exports"), ("uploads", "downloads"),
                                ("disconnected", "connected")]],
    *[(x, y, False) for x, y in [("wiped", "erased"), ("removed", "deleted"), ("settings", "config"),
                                 ("datetime", "datetimes"), ("db", "database"), ("between", "across"),
                                 ("unless", "not"), ("hangs", "hang"), ("installed", "reinstalled")]]])
def test_a_word_and_its_opposite_in_any_of_their_forms(x, y, turned):
    assert opposite(x, y) is turned and opposite(y, x) is turned


# --------------------------------------------------------------------------- pushback

READS = {
    # "don't get / think …" that forbid nothing
    "Don't get me wrong, I like the layout. Can you also add a footer with the totals?": None,
    "Don't get us wrong, it's great": None,
    "don't get confused by the old file": None,
    "don't get lost in the old migrations": None,
    "don't think twice": None,
    "Don't think twice about deleting it": None,
    "don't get any output": None,
    "Never get any output": None,
    "don't get an error anymore": None,
    # still orders: they object to a way of working
    "Don't get too clever": "don't",
    "Don't get fancy, keep it simple": "don't",
    "Don't get the config from env, read the file": "don't",
    "Don't get rid of the cache": "don't",
    "Don't think about performance yet": "don't",
    # "No …" reporting what is seen, and where it was looked for
    "No output from the tests": None,
    "No data in the table": None,
    "No logs in the terminal": None,
    "No images on the page": None,
    "No text in the input field": None,
    "No error on my side": None,
    "No warnings from the linter": None,
    "No error in the logs, all good": None,
    "No hits in the search results": None,
    "No match for that query": None,
    "No output at all in the console": None,
    # "No …" rules: where the thing must not be
    "No debug output in production": "no",
    "No print statements at all": "no",
    "No log statements in the hot loop": "no",
    "No images in the README": "no",
    "No debug output in the hot loop": "no",
    "No network calls in unit tests": "no",
    "No emojis in commit messages": "no",
    "No page reloads, use htmx": "no",
}


def test_reports_read_as_reports_and_orders_as_orders():
    assert {said: pushback(said) for said in READS} == READS


_SEEN_NOUN = st.sampled_from(["output", "data", "logs", "images", "text", "error", "errors", "warnings", "content",
                              "output at all", "logs either", "debug output", "build output"])
_LOOKED = st.sampled_from(["in the table", "in the terminal", "in the logs", "on the page", "on my side",
                           "from the tests", "from the linter", "in the input field", "in the console",
                           "in my browser", "on the dashboard", "in the network tab", "from the server"])
_AFTER = st.sampled_from(["", ", all good", " now", " either", ". Weird.", " when I reload"])


_RULE = st.sampled_from(["images", "debug output", "log statements", "network calls", "print statements",
                         "emojis", "inline styles", "output files"])
_KEPT_OUT = st.sampled_from(["in the README", "in the hot loop", "in production", "in unit tests",
                             "in commit messages", "in the public API", "in library code", "in the docs"])


@given(seen=st.tuples(_SEEN_NOUN, _LOOKED, _AFTER), rule=st.tuples(_RULE, _KEPT_OUT),
       case=st.sampled_from(["No", "no"]))
@settings(max_examples=300, deadline=None)
def test_a_thing_seen_where_one_looked_is_a_report_and_one_kept_out_of_a_place_a_rule(seen, rule, case):
    noun, where, after = seen
    assert pushback(f"{case} {noun} {where}{after}") is None
    noun, where = rule
    assert pushback(f"{case} {noun} {where}") == "no"


@given(get=st.sampled_from(["get me wrong", "get us wrong", "get any output", "get an error anymore", "get a response",
                             "get no logs", "get confused by the old file", "get lost in the old migrations",
                             "think twice"]),
       lead=st.sampled_from(["", "Huh. ", "Weird, ", "Sorry, "]),
       dont=st.sampled_from(["Don't", "don't", "Never", "do not"]),
       after=st.sampled_from(["", ", I like the layout", ". Can you also add a footer?", " when I run it"]))
@settings(max_examples=200, deadline=None)
def test_a_dont_that_says_what_one_sees_or_a_heads_up_forbids_nothing(get, lead, dont, after):
    assert pushback(f"{lead}{dont} {get}{after}") is None
    assert pushback(f"{lead}{dont} get too clever{after}") == "don't"


def test_the_reviews_transcript_makes_no_correction_nor_lesson(store, tmp_path):
    """Reports after a hand-back, ingested and slept on: no correction, no lesson; a rule
    beside them still makes its lesson."""
    project = tmp_path / "projects" / "-home-u-app"
    project.mkdir(parents=True)
    reports = ["No data in the table",
               "Don't get me wrong, I like the layout. Can you also add a footer with the totals?",
               "No output from the tests", "No error in the logs, all good", "don't get any output"]
    for n, said in enumerate([*reports, "No images in the README"], start=1):
        _transcript(project, n, said)
    summary = ingest_paths(store, [project])
    assert summary["errors"] == [] and summary["sessions"] == len(reports) + 1
    corrections = [r["title"] for r in store.rows("SELECT title FROM episodes WHERE kind = 'correction'")]
    assert corrections == ["No images in the README"]
    with clock.frozen("2026-03-03T10:00:00Z"):
        run(store)
    active = [l["text"] for l in lessons(store) if l["status"] == "active"]
    assert len(active) == 1 and "README" in active[0], active
