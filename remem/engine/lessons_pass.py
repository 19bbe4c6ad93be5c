"""The sleep's `lessons` and `merge` passes: the store side of consolidate.py.

lessons: new episodes (past the watermark) of the consolidated kinds join the lesson whose
sources they resemble, or make new lessons (see consolidate.py for the rules). Two kinds of
correction follow the rules of errors instead — they must repeat — because one alone is
ambiguous and a wrong lesson costs more than a late one: a refused tool call the person gave
no words for (it only meets refusals of the same kind of call), and an interrupt followed by a
plain instruction, which detect tags `unconfirmed` (it meets any correction like it: another
unconfirmed one, or a correction in words, whose lesson it joins). Corrections meet only those
about the same known programs (consolidate.same_programs of their topics). A lesson's sources are
episode ids in time order; seen is how many; strength grows by one per source. A
correction never joins a lesson it contradicts (contradiction.py: a lesson points every way
its words and its corrections do), nor does anything join a lesson a later correction
superseded; after the corrections are placed, each that takes an
older lesson back retires it in its project (contradiction.settle), and a lesson's project
leaves out the sources taken back so (`_cwds`).

merge: lessons of one kind whose sources mean the same (average linkage >= the cut) become
one theme: a lesson whose text was rewritten (a person's edit) first, else the one with the
most sources. The others become aliases (aliases table, with their created time kept) and
their open predictions move to the theme. Two corrections that contradict never merge, nor
two about other programs, nor two surprises that say other things.

Stated surprises meet only surprises that say the same thing (consolidate.say_alike of their
content words), in both passes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Generator, Iterable, Iterator

import numpy as np

from remem.engine import clock, contradiction, lesson_text
from remem.engine.consolidate import (
    CONSOLIDATED_KINDS, MUST_REPEAT, NO_TOPIC, Group, Outcome, Sayings, Topic, Words, as_matrix, consolidate_kind,
    content_words, error_class, joined, medoid, merge_groups, saying_apart, topic_of,
)
from remem.engine.detect_corrections import refused_call_kind
from remem.engine.detect_errors import CLASS_OF_LABEL, ERROR_CLASSES, missing_name
from remem.engine.detect_errors import error_class as detect_error_class
from remem.engine.embed import to_blob
from remem.engine.lessons import lesson_hash, vector_text
from remem.engine.shell_words import SHELL_TOOLS, program_words
from remem.engine.store import Store, chunks, dumps, loads_list, new_id, stable_id

if TYPE_CHECKING:
    from remem.engine.sleep_passes import Context, Progress

WRITE_BATCH = 250  # lessons per write transaction (a hook waits for at most one)


def _progress(*args: Any) -> "Progress":
    from remem.engine.sleep_passes import Progress

    return Progress(*args)


# A refused call the person gave no words for: detect tags it `refused` and its text is
# "refused <the call>" (a refusal with words keeps the words). 1 or 0.
_WORDLESS = ("(kind = 'correction' AND gist LIKE 'refused %' AND EXISTS (SELECT 1 FROM tags "
             "WHERE memory_id = episodes.id AND tag = 'refused'))")
# A correction detect could not confirm (an interrupt, then a plain instruction): tagged
# `unconfirmed`. 1 or 0.
_UNCONFIRMED = ("(kind = 'correction' AND EXISTS (SELECT 1 FROM tags "
                "WHERE memory_id = episodes.id AND tag = 'unconfirmed'))")


# Which tool's call failed: detect tags the tool (`tool:bash`) and starts the gist with the call
# ("Bash: npm run build").
_TOOL = ("(SELECT substr(tag, 6) FROM tags WHERE memory_id = episodes.id AND tag LIKE 'tool:%' "
         "LIMIT 1) AS tool")
# What an error's lesson is drafted from (lesson_text.draft), which its class is read from
# (_klass): the detail only when it may hold a fix, the one thing read from it.
_DRAFTED = (f"{_TOOL}, gist, CASE WHEN "
            + " OR ".join(f"instr(lower(detail), '{w}') > 0" for w in lesson_text.FIX_WORDS)
            + " THEN detail END AS detail, ")


def _kind_rows(store: Store, kind: str, space: str) -> list[dict[str, Any]]:
    return store.rows(
        "SELECT seq, id, kind, at, cwd, title, archived, strength, embedding, "
        f"{_DRAFTED if kind == 'error' else 'gist, ' if kind in ('correction', 'surprise') else ''}"
        "(SELECT substr(tag, 7) FROM tags WHERE memory_id = episodes.id AND tag LIKE 'error:%' "
        f"LIMIT 1) AS eclass, {_WORDLESS} AS wordless, {_UNCONFIRMED} AS unconfirmed FROM episodes "
        "WHERE kind = ? AND space = ? AND embedding IS NOT NULL ORDER BY at, seq",
        (kind, space),
    )


# Live episodes, and those archived because they faded (an old history imported at once has
# faded before its first sleep); not the ones the person archived by hand (`remem forget`).
_LEARNABLE = "(archived = 0 OR strength < ?)"


# --------------------------------------------------------------------------- what waits

# Why an episode the lessons pass has read makes no lesson yet: each must be seen a second
# time (the rules above, and consolidate.py's). In the order they are told.
WAIT_REASONS = ("errors", "surprises", "refusals", "unconfirmed")
_WAIT_NAMES = {  # reason: (one, many, what must come again)
    "errors": ("error", "errors", "error"),
    "surprises": ("stated surprise", "stated surprises", "surprise"),
    "refusals": ("refused tool call with no reason given", "refused tool calls with no reason given",
                 "refused call"),
    "unconfirmed": ("plain instruction after an interrupt", "plain instructions after an interrupt",
                    "instruction after an interrupt"),
}


def waiting(store: Store, cfg: dict[str, Any] | None = None, watermark: int | None = None) -> dict[str, int]:
    """What makes no lesson yet, and why: {errors, surprises, refusals, unconfirmed, unclear,
    total, next_sleep}.

    The four reasons count episodes the lessons pass has read (seq <= watermark) that are in
    no lesson and must be seen again: errors and stated surprises, refused tool calls the
    person gave no words for, and plain instructions after an interrupt (`total` is their
    sum). A correction in words never waits: it makes a lesson at once, unless it says only
    that something was wrong ("No, that's wrong."): those read make no lesson at all
    (`unclear`, not in `total`: seeing one again teaches nothing either). `next_sleep` counts
    the learnable episodes the next sleep's lessons pass reads as new (stored since the last
    one, or archived by hand and restored since). watermark: the last episode seq the lessons
    pass read; None reads it from the last finished sleep. Archived-by-hand episodes are left
    out, as the pass leaves them out; a lesson received from another memory holds none.
    """
    from remem import config as config_mod
    from remem.engine.sleep_passes import last_watermark

    cfg = cfg or config_mod.load()
    faded_below = float(cfg["lifecycle"]["archive_below"])
    if watermark is None:
        watermark = last_watermark(store)
    held: set[str] = set()
    for row in store.rows("SELECT sources FROM lessons WHERE status != 'candidate'"):
        held.update(s for s in loads_list(row["sources"]) if isinstance(s, str))
    kinds = ",".join(f"'{k}'" for k in CONSOLIDATED_KINDS)
    out = {reason: 0 for reason in (*WAIT_REASONS, "unclear")}
    out["next_sleep"] = 0
    for row in store.rows(
        f"SELECT id, seq, kind, gist, title, {_WORDLESS} AS wordless, {_UNCONFIRMED} AS unconfirmed "
        f"FROM episodes WHERE kind IN ({kinds}) AND {_LEARNABLE}", (faded_below,)
    ):
        if row["id"] in held:
            continue
        if row["kind"] == "correction":
            reason = ("refusals" if row["wordless"] else "unclear" if says_nothing(row)
                      else "unconfirmed" if row["unconfirmed"] else None)
        else:
            reason = row["kind"] + "s"
        if row["seq"] > watermark or reason is None:
            out["next_sleep"] += 1
        else:
            out[reason] += 1
    out["total"] = sum(out[reason] for reason in WAIT_REASONS)
    return out


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def waiting_text(counts: dict[str, int], detail: bool = True) -> str | None:
    """What waits (`waiting`'s counts) in words for people, None when nothing does: how many
    corrections and errors were seen once, the rule that makes them wait, and (detail) each
    reason; then how many corrections said nothing to learn from (`unclear`)."""
    total = int(counts.get("total") or 0)
    unclear = int(counts.get("unclear") or 0)
    nothing = (f"{_plural(unclear, 'correction', 'corrections')} said only that something was wrong, "
               f"so {'it makes' if unclear == 1 else 'they make'} no lesson: a lesson needs words "
               "that say what to do instead.") if unclear else ""
    if not total:
        return nothing or None
    present = [r for r in WAIT_REASONS if counts.get(r)]
    corrections = int(counts.get("refusals") or 0) + int(counts.get("unconfirmed") or 0)
    heads = [_plural(n, one, many) for n, one, many in (
        (corrections, "correction", "corrections"), (int(counts.get("errors") or 0), "error", "errors"),
        (int(counts.get("surprises") or 0), "surprise", "surprises")) if n]
    head = " and ".join(heads) if len(heads) < 3 else f"{heads[0]}, {heads[1]} and {heads[2]}"
    again = [_WAIT_NAMES[r][2] for r in present]
    same = again[0] if len(again) == 1 else ", ".join(again[:-1]) + " or " + again[-1]
    seen = "was seen once, so it waits" if total == 1 else "were each seen once, so they wait"
    text = f"{head} {seen}: a lesson needs a second sighting of the same {same} (in this session or another)."
    if detail and (len(present) > 1 or corrections):
        text += " Waiting: " + ", ".join(_plural(int(counts[r]), *_WAIT_NAMES[r][:2]) for r in present) + "."
    return f"{text} {nothing}" if nothing else text


def no_lessons_why(counts: dict[str, int] | None, slept: bool, *, detail: bool = True) -> dict[str, str | None]:
    """Why a memory has no active lesson yet, and what to do about it: the one wording of
    `remem lessons list` and `remem doctor`. {"why": the reason in words; "run": the command
    that would help, None when none would (a sleep that read every correction and error and
    learned nothing is not told to run again); "fix": that command and what it does, or what
    to expect instead}.

    counts: `waiting`'s counts (None: they could not be read, as with a config in error);
    slept: whether a sleep has finished; detail: name each reason something waits for (when
    not, "fix" says where they are named)."""
    unread = int((counts or {}).get("next_sleep") or 0)
    if counts is None or unread:
        what = "correction or error waits" if unread == 1 else "corrections and errors wait"
        why = (f"{unread} new {what} for `remem sleep`, which learns lessons from them" if unread
               else "`remem sleep` learns them from the corrections and errors of your agents' sessions")
        return {"why": why, "run": "remem sleep", "fix": "remem sleep   (turns corrections and errors into lessons)"}
    told = waiting_text(counts, detail=detail)
    if told and not counts.get("total"):  # only corrections that said nothing to learn from
        return {"why": told, "run": None,
                "fix": "nothing to run: lessons come from corrections that say what to do, and from errors, "
                       "in your agents' sessions"}
    if told:
        where = "" if detail else " (`remem lessons list` says what waits)"
        return {"why": told, "run": None,
                "fix": f"nothing to run now: the first sleep after one like them comes again makes the lesson{where}"}
    why = ("the last sleep found no correction or error to learn from" if slept
           else "no correction or error has come in to learn from")
    return {"why": why, "run": None,
            "fix": "nothing to run: lessons come from corrections and errors in your agents' sessions, "
                   "which the nightly `remem ingest` and `remem sleep` read"}


def no_lessons_listed(counts: dict[str, int] | None, slept: bool) -> str:
    """What `remem lessons list` says with no active lesson: no_lessons_why's reason, then,
    when it names no command to run, what to expect. A list that reads nothing in yet says
    where lessons come from in its own words, not as the doctor's "nothing to run" fix."""
    said = no_lessons_why(counts, slept)
    text = f"no lessons yet: {said['why']}"
    if said["run"]:  # the command is named in the reason
        return text
    if waiting_text(counts or {}):
        return f"{text}\n{said['fix']}"
    return (f"{text}\nlessons will come from the corrections and errors in your agents' sessions, "
            "once the nightly `remem ingest` and `remem sleep` have read them")


def _kind_data(ctx: "Context", kind: str) -> tuple[list[dict[str, Any]], dict[str, int], np.ndarray]:
    """Rows, id -> row index and the vector matrix of one kind; read once per sleep (episodes
    do not change between the lessons and merge passes)."""
    cache = ctx.__dict__.setdefault("_kind_cache", {})
    if kind not in cache:
        emb = ctx.embedder
        rows = _kind_rows(ctx.store, kind, emb.space)
        matrix = as_matrix([r.pop("embedding") for r in rows], emb.dim)
        cache[kind] = (rows, {r["id"]: i for i, r in enumerate(rows)}, matrix)
    return cache[kind]


def _klass(row: dict[str, Any]) -> str:
    """An episode's class, which keeps it from meeting episodes of another class. An error's
    is the class its lesson's words give (_error_lesson_klass of the lesson drafted from it
    alone), so a lesson whose sources are gone stands in with the class they had. A surprise's
    is one form of its class, whether tagged (`error:ModuleNotFoundError`, stored lower-cased)
    or only named in its title. A wordless refusal's class is the kind of call refused
    (`refused:shell git push`), which no error class shares; every other correction has none
    (''), so an unconfirmed one meets any correction (about the same programs: `_topic`)."""
    if row.get("wordless"):
        return _refused_klass(row.get("title") or "")
    if row.get("kind") == "correction":
        return ""
    if row.get("kind") == "error":
        return _error_lesson_klass({"draft": lesson_text.draft("error", [row])})
    tag = (row.get("eclass") or "").strip().lower()
    if tag in ERROR_CLASSES and tag != "other":
        return tag
    if tag and tag != "other":
        return _text_klass(tag) or tag
    return _text_klass(row.get("title") or "")


def _error_lesson_klass(lesson: dict[str, Any]) -> str:
    """An error lesson's class, read from its draft (the words it was made with) or text, as
    lesson_text.error_lesson_parts reads them back: how it failed (the label of a failed call,
    "module not found"; else the class its words name), with what failed (_with_what). An
    episode's class is that of the lesson drafted from it (_klass): the class of the lesson
    stands for those of its sources when they are gone, so the same failure again joins it and
    a veto on it holds. (A lesson whose fix another source than the one it was worded from
    recorded has the class of its fix's wording, "On <class>: <fix>", which keeps what is
    missing but names no command a detected failure ran: a detected error seldom has a fix.)"""
    label, how, command = lesson_text.error_lesson_parts(lesson.get("draft") or lesson.get("text") or "")
    klass = CLASS_OF_LABEL[label] if label and label != "failed" else _text_klass(how)
    return _with_what(klass, how, " ".join(program_words(command, by_name=True)))


def _with_what(klass: str, words: str, ran: str) -> str:
    """An error's class with what failed: for a missing module or command the one missing
    (whatever command met it: `python app.py` and `pytest` both missing `requests` are one
    error), for any other the command that failed (`ran`: its program and up to two more
    words, "npm run build", a program run by its path named by its file name, "gradlew
    build"; for a tool that is not a shell, the tool, "edit"; '' when no command is named, as
    for most errors a person told). The words of two error outputs are mostly the same
    boilerplate ("Bash failed: …", "Exit code 1"): a failed `npm run build` and a lint
    finding of `ruff check` came closer than the cut, and with no class detect names
    ("other") nothing else kept them apart. A missing command whose name the words do not
    keep is the program that was run (`fd . src`: fd)."""
    what = missing_name(klass, words) or (ran.split(" ", 1)[0] if klass == "command_not_found" else ran)
    return f"{klass}|{what}" if what else klass


def _refused_klass(title: str) -> str:
    """The class of a refused call ("refused Bash: git push origin main"): `refused:` and the
    kind of call. Every shell tool (Bash, exec_command …) is `shell`: the lesson's words do not
    say which one ran the command, and its class is read back from them (_lesson_klass)."""
    tool, _, rest = refused_call_kind(title).partition(" ")
    return "refused:" + " ".join(w for w in ("shell" if tool in SHELL_TOOLS else tool, rest) if w)


# The wordings of lesson_text._refused, the lesson of refused calls the person gave no words
# for: which call was refused, read back from them.
_REFUSED_WORDINGS = (
    (re.compile(r"Ask before running `([^`]*)` \(the person refused it\)\."), "shell: {0}"),
    (re.compile(r"Ask before running (\S+) commands like this \(the person refused one\)\."), "{0}"),
    (re.compile(r"Ask before using (\S+) on `([^`]*)` \(the person refused it\)\."), "{0}: {1}"),
    (re.compile(r"Ask before using (\S+) \(the person refused it\)\."), "{0}"),
)


def _lesson_klass(lesson: dict[str, Any]) -> str:
    """The class a correction lesson whose sources are all gone stands in with: a wordless
    refusal's lesson that of the call refused (read from its draft, the words it was made with,
    or its text), so the same call refused again joins it, and a veto on it holds; '' for
    any other correction."""
    words = (lesson.get("draft") or lesson.get("text") or "").strip()
    for wording, call in _REFUSED_WORDINGS:
        found = wording.fullmatch(words)
        if found:
            return _refused_klass("refused " + call.format(*found.groups()))
    return ""


def _topic(row: dict[str, Any]) -> Topic:
    """The known programs a correction in words is about (consolidate.topic_of the person's
    words, with their stance), which keep it from meeting corrections about others; none for a
    wordless refusal (its class keeps it apart) and for every other kind. Read once per row."""
    if "_topic" not in row:
        row["_topic"] = (topic_of(lesson_text.person_words(row), contradiction.episode_stance(row))
                         if row.get("kind") == "correction" and not row.get("wordless") else NO_TOPIC)
    return row["_topic"]


def _group_topic(rows: list[dict[str, Any]], idx: list[int]) -> Topic:
    """A lesson's topic from its sources, in time order (consolidate.joined): once it prefers a
    program, no later source changes it, and those are not read."""
    topic = _topic(rows[idx[0]]) if idx else NO_TOPIC
    for i in idx[1:]:
        if topic.prefers:
            break
        topic = joined(topic, _topic(rows[i]))
    return topic


# Python classes whose name detect's patterns miss, though their message would match.
_PY_CLASSES = {"permissionerror": "permission_denied", "connectionerror": "network",
               "connectionrefusederror": "network", "connectionreseterror": "network"}


def _text_klass(text: str) -> str:
    """detect's class of a text; a class detect has no name for (KeyError) in lower case."""
    found = detect_error_class(text or "")
    if found != "other":
        return found
    named = error_class(text or "").lower()
    return _PY_CLASSES.get(named, named)


def _common_cwd(cwds: list[str | None]) -> str | None:
    found = {c for c in cwds}
    return found.pop() if len(found) == 1 else None


def _cwds(sources: list[str], rows: list[dict[str, Any]], index: dict[str, int],
          lessons: list[tuple[str | None, list[str]]], back: set[str] | frozenset[str] = frozenset()
          ) -> list[str | None]:
    """The projects of the sources still here, and the cwd of each (cwd, sources) lesson with
    a source gone, which stands for those: a lesson once learned in two projects stays in both.
    Sources a later correction took back in their project (`back`: contradiction.taken_back)
    do not count, unless nothing else would: the lesson has left that project."""
    gone = [cwd for cwd, srcs in lessons if any(s not in index for s in srcs)]
    live = [s for s in sources if s in index]
    counted = [s for s in live if s not in back] or ([] if gone else live)
    return [rows[index[s]]["cwd"] for s in counted] + gone


def _full_rows(store: Store, ids: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        for row in store.rows(
            f"SELECT id, kind, at, cwd, title, gist, detail, {_TOOL} FROM episodes WHERE id IN ({marks})", chunk
        ):
            out[row["id"]] = row
    return out


def _relay(gen: Generator[int, None, Outcome], base: int, total: int, kind: str
           ) -> Generator["Progress", None, Outcome]:
    while True:
        try:
            done = next(gen)
        except StopIteration as stop:
            return stop.value
        yield _progress("lessons", base + done, total, f"{kind}: {done}")


def _reword_enabled(ctx: "Context") -> bool:
    return bool(ctx.cfg.get("llm", {}).get("url")) and bool(ctx.cfg["sleep"].get("reword", True)) \
        and not ctx.dry_run


def consolidate(ctx: "Context", watermark: int) -> Iterator["Progress"]:
    store, emb = ctx.store, ctx.embedder
    cut = ctx.cut(emb.space)
    faded_below = float(ctx.cfg["lifecycle"]["archive_below"])
    lessons = store.rows(
        "SELECT id, kind, text, draft, cwd, strength, sources, created, origin, space, embedding, status, note "
        "FROM lessons WHERE status != 'candidate' ORDER BY created, id"
    )
    consolidated: set[str] = set()
    by_kind: dict[str, list[tuple[dict[str, Any], list[str]]]] = defaultdict(list)
    for lesson in lessons:
        srcs = [s for s in loads_list(lesson["sources"]) if isinstance(s, str)]
        consolidated.update(srcs)
        # A lesson a later correction superseded, or one retired when its findings were not
        # found again, takes nothing in (unlike a person's veto, which holds): the same
        # correction said again makes a new lesson, as the newest word.
        if not contradiction.retired_by_remem(lesson["status"], lesson["note"]):
            by_kind[lesson["kind"]].append((lesson, srcs))
    mark = _mark(store, watermark, faded_below, emb.space)
    plans = {}
    for kind in CONSOLIDATED_KINDS:
        rows = _kind_data(ctx, kind)[0]
        if rows:
            plans[kind] = _streams(kind, rows, consolidated, watermark, mark, faded_below)
    total = sum(len(new_idx) for streams in plans.values() for _, _, new_idx, _ in streams)
    yield _progress("lessons", 0, total, f"{total} new episodes to consolidate")
    counts = {"new_episodes": 0, "joined": 0, "created": 0, "pending": 0}
    # New corrections that said nothing to learn from (`says_nothing`).
    unclear = sum(1 for r in _kind_data(ctx, "correction")[0] if watermark < r["seq"] <= mark
                  and r["id"] not in consolidated and says_nothing(r))
    existing_ids = {r["id"] for r in store.rows("SELECT id FROM lessons UNION SELECT old FROM aliases")}
    back = contradiction.taken_back(store)
    base = 0
    for kind, streams in plans.items():
        rows, index, matrix = _kind_data(ctx, kind)
        groups: list[Group] = []
        originals: dict[str, dict[str, Any]] = {}
        for lesson, srcs in by_kind.get(kind, []):
            group = _group(lesson, srcs, rows, index, matrix, emb.space)
            if group is not None:
                groups.append(group)
                originals[lesson["id"]] = {"lesson": lesson, "sources": srcs}
        # The streams of one kind share its lessons: a lesson one of them makes, the next can grow.
        for rules, pool_idx, new_idx, again in streams:
            counts["new_episodes"] += len(new_idx) - again
            outcome = yield from _relay(consolidate_kind(
                rules, groups,
                [rows[i]["id"] for i in pool_idx], matrix[pool_idx], [_klass(rows[i]) for i in pool_idx],
                [rows[i]["id"] for i in new_idx], matrix[new_idx], [_klass(rows[i]) for i in new_idx],
                cut, _stances(rows, pool_idx), _stances(rows, new_idx),
                [_topic(rows[i]) for i in pool_idx], [_topic(rows[i]) for i in new_idx],
                *([[_words(rows[i]) for i in pool_idx], [_words(rows[i]) for i in new_idx], _sayings(ctx)]
                  if kind == "surprise" else []),
            ), base, total, kind)
            base += len(new_idx)
            counts["joined"] += outcome.joined
            counts["created"] += outcome.created
            counts["pending"] += outcome.pending
        placed = _write_groups(ctx, kind, groups, originals, rows, index, matrix, existing_ids, back)
        if kind == "correction":
            contradiction.settle(ctx, placed, rows, index)
    ctx.watermark = mark
    ctx.counts["lessons"] = {**counts, "unclear": unclear}
    # What made no lesson and why, for the summary and the people reading it.
    ctx.waiting = waiting(store, ctx.cfg, mark)


def _mark(store: Store, watermark: int, faded_below: float, space: str) -> int:
    """The new watermark: the last episode seq, but before any learnable episode not yet in
    the current space (it is not consolidated yet)."""
    kinds = ",".join(f"'{k}'" for k in CONSOLIDATED_KINDS)
    low = store.scalar(
        f"SELECT min(seq) FROM episodes WHERE seq > ? AND {_LEARNABLE} AND kind IN ({kinds}) "
        "AND (embedding IS NULL OR space IS NULL OR space != ?)", (watermark, faded_below, space),
    )
    return int(low) - 1 if low is not None else int(store.scalar("SELECT max(seq) FROM episodes") or 0)


def _streams(kind: str, rows: list[dict[str, Any]], consolidated: set[str], watermark: int,
             mark: int, faded_below: float) -> list[tuple[str, list[int], list[int], int]]:
    """How one kind's rows are consolidated: (the kind whose rules they follow, pending pool,
    to consolidate now, how many of those were pending already), in order.

    Corrections come in three streams, sharing the kind's lessons. Wordless refusals first,
    under the rules of errors (consolidate_kind's "error": they must repeat, and only meet
    refusals of the same kind of call): one refused permission prompt says no more than one
    failed command. Then corrections in words, which teach at once. Last the unconfirmed ones
    (an interrupt, then a plain instruction), under the rules of errors too; their class is
    that of any correction, so one joins a lesson a correction in words made, even in this
    run. They are read again at every sleep rather than kept in the pool (where only a newcomer
    can meet them): a correction in words that comes after one of them then confirms it too.
    A correction that says only that something was wrong (`says_nothing`) is in none of them."""
    if kind != "correction":
        every = range(len(rows))
        return [(kind, *_split(rows, every, consolidated, watermark, mark, kind in MUST_REPEAT, faded_below), 0)]
    wordless = [i for i, r in enumerate(rows) if r["wordless"]]
    worded = [i for i, r in enumerate(rows) if not r["wordless"] and not says_nothing(r)]
    unconfirmed = [i for i in worded if rows[i]["unconfirmed"]]
    said = [i for i in worded if not rows[i]["unconfirmed"]]
    _, waiting = _split(rows, unconfirmed, consolidated, watermark, mark, False, faded_below)
    again = sum(1 for i in waiting if rows[i]["seq"] <= watermark)
    return [("error", *_split(rows, wordless, consolidated, watermark, mark, True, faded_below), 0),
            ("correction", *_split(rows, said, consolidated, watermark, mark, False, faded_below), 0),
            ("error", [], waiting, again)]


def _split(rows: list[dict[str, Any]], among: Iterable[int], consolidated: set[str], watermark: int,
           mark: int, repeat: bool, faded_below: float) -> tuple[list[int], list[int]]:
    """Row indices (of those `among`) of the pending pool and of the episodes to consolidate
    now. Below the watermark, what must repeat still waits for its like; a correction no lesson
    holds is taken now (it was archived by hand when its sleep ran, and restored since)."""
    pool_idx, new_idx = [], []
    for i in among:
        r = rows[i]
        if r["id"] in consolidated or r["seq"] > mark or (r["archived"] and r["strength"] >= faded_below):
            continue
        if r["seq"] <= watermark and repeat:
            pool_idx.append(i)
        else:
            new_idx.append(i)
    return pool_idx, new_idx


def says_nothing(row: dict[str, Any]) -> bool:
    """Whether a correction in words says only that something was wrong ("No, that's
    wrong."; lesson_text.says_nothing): it makes no lesson, joins none, and waits (`unclear`
    in `waiting`). Read once per row."""
    if "_says_nothing" not in row:
        row["_says_nothing"] = (row.get("kind") == "correction" and not row.get("wordless")
                                and lesson_text.says_nothing(lesson_text.person_words(row)))
    return row["_says_nothing"]


def _stances(rows: list[dict[str, Any]], idx: list[int]) -> list[Any]:
    """Which way each correction among rows[idx] points (contradiction.stance of the person's
    words); None for a refusal the person gave no words for, and for every other kind."""
    return [contradiction.episode_stance(rows[i]) if rows[i]["kind"] == "correction" and not rows[i]["wordless"]
            else None for i in idx]


def _lesson_vec(lesson: dict[str, Any], space: str, dim: int) -> np.ndarray | None:
    blob = lesson.get("embedding")
    if not blob or lesson.get("space") != space or len(blob) != 4 * dim:
        return None
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def _group(lesson: dict[str, Any], srcs: list[str], rows: list[dict[str, Any]],
           index: dict[str, int], matrix: np.ndarray, space: str) -> Group | None:
    """A lesson as consolidation sees it: its live sources. When none is left (the lifecycle
    deletes faded episodes), its own vector stands in for them, so what comes again still
    joins it (and a veto holds) rather than making a second lesson. Not for a lesson received
    from another memory (its sources were never here): sharing keeps those apart."""
    members = [s for s in srcs if s in index]
    kind = lesson.get("kind")
    if members:
        idx = [index[s] for s in members]
        group = Group(lesson["id"], members, matrix[idx].sum(axis=0), _klass(rows[idx[0]]),
                      topic=_group_topic(rows, idx))
    else:
        if lesson.get("origin"):
            return None
        vec = _lesson_vec(lesson, space, matrix.shape[1])
        if vec is None:
            return None
        klass = (_lesson_klass(lesson) if kind == "correction" else _error_lesson_klass(lesson) if kind == "error"
                 else _text_klass(lesson["text"]))
        topic = topic_of(lesson.get("draft") or lesson["text"]) if kind == "correction" and not klass else NO_TOPIC
        group = Group(lesson["id"], [], vec, klass, stand_in=1, topic=topic)
    if kind == "correction" and not group.klass:  # a refusal's lesson points nowhere
        # Every way it points: its words' and its corrections' ("Stop using npm." that "use pnpm
        # not npm" joined prefers pnpm, so "stop using pnpm" takes it back).
        group.stances = contradiction.lesson_stances(lesson["text"], members, rows, index)
    elif kind == "surprise":
        said = [_words(rows[index[m]]) for m in members] or [_lesson_words(lesson)]
        group.words = list(dict.fromkeys(said))
    return group


def _words(row: dict[str, Any]) -> Words:
    """A surprise's content words (consolidate.content_words of the person's words). Read once
    per row."""
    if "_words" not in row:
        row["_words"] = content_words(lesson_text.person_words(row))
    return row["_words"]


_SURPRISE_LEAD = "Keep in mind: "  # how lesson_text words a surprise's lesson


def _lesson_words(lesson: dict[str, Any]) -> Words:
    """The content words of a surprise lesson whose sources are gone: of the words it was made
    with, "Keep in mind: " aside."""
    words = (lesson.get("draft") or lesson.get("text") or "").strip()
    return content_words(words.removeprefix(_SURPRISE_LEAD))


def _sayings(ctx: "Context") -> Sayings:
    """Which surprises say alike (consolidate.Sayings), for the lessons and merge passes of one
    sleep: two words mean the same when their vectors' cosine reaches the cut in this sleep's
    space (consolidate.say_alike reads the words two surprises do not share so). Each word is
    embedded once, each pair of words and of statements read once."""
    if "_sayings" not in ctx.__dict__:
        emb, cut = ctx.embedder, ctx.cut(ctx.embedder.space)
        vectors: dict[str, np.ndarray] = {}
        pairs: dict[tuple[str, str], bool] = {}

        def vector(word: str) -> np.ndarray:
            if word not in vectors:
                vectors[word] = emb.encode([word])[0]
            return vectors[word]

        def alike(a: str, b: str) -> bool:
            key = (a, b) if a < b else (b, a)
            if key not in pairs:
                pairs[key] = float(vector(a) @ vector(b)) >= cut
            return pairs[key]

        ctx.__dict__["_sayings"] = Sayings(alike)
    return ctx.__dict__["_sayings"]


def _write_groups(
    ctx: "Context", kind: str, groups: list[Group], originals: dict[str, dict[str, Any]],
    rows: list[dict[str, Any]], index: dict[str, int], matrix: np.ndarray, existing_ids: set[str],
    back: set[str],
) -> dict[str, str]:
    """Writes the lessons made and grown in this run; returns each episode they took in ->
    its lesson's id."""
    store = ctx.store
    made = [g for g in groups if g.lesson_id is None]
    grown = [g for g in groups if g.lesson_id is not None and g.added]
    placed: dict[str, str] = {}
    if not made and not grown:
        return placed
    need = [m for g in made for m in g.members]
    full = _full_rows(store, need)
    new_rows: list[dict[str, Any]] = []
    stamp = clock.iso()
    for g in made:
        members = sorted(g.members, key=lambda m: index[m])
        eps = [full[m] for m in members if m in full]
        rep = medoid(matrix[[index[m] for m in members]])
        draft = lesson_text.draft(kind, eps, rep)
        text = draft
        if _reword_enabled(ctx):
            text = lesson_text.reword(draft, kind, eps) or draft
        lesson_id = stable_id("lesson", kind, members[0])[:12]
        if lesson_id in existing_ids:
            lesson_id = new_id()[:12]
        existing_ids.add(lesson_id)
        placed.update(dict.fromkeys(members, lesson_id))
        new_rows.append({
            "id": lesson_id, "text": text, "kind": kind,
            "cwd": _common_cwd([rows[index[m]]["cwd"] for m in members]),
            "strength": float(len(members)), "seen": len(members), "sources": dumps(members),
            "status": "active", "created": stamp, "updated": stamp, "origin": None,
            "hash": lesson_hash(text, kind), "origins": "[]",
            "draft": draft if text != draft else None,
        })
    vecs = ctx.embedder.encode([vector_text(r["text"], r["kind"]) for r in new_rows]) if new_rows else []
    space = ctx.embedder.space
    for row, vec in zip(new_rows, vecs):
        row["space"], row["embedding"] = space, to_blob(vec)
    # In batches: a first sleep over a large history makes thousands of lessons, and one
    # transaction for all of them kept hooks out of the store for over a second. Each batch
    # is whole; after a crash between batches, the next run skips the episodes already in a
    # lesson's sources, so nothing is learned twice.
    for batch in chunks(new_rows, WRITE_BATCH):
        with store.write() as conn:
            for row in batch:
                cols = list(row)
                conn.execute(
                    f"INSERT INTO lessons ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                    [row[c] for c in cols],
                )
    for batch in chunks(grown, WRITE_BATCH):
        with store.write() as conn:
            for g in batch:
                orig = originals[g.lesson_id]  # type: ignore[index]
                sources = list(orig["sources"]) + [m for m in g.added if m not in orig["sources"]]
                cwds = _cwds(sources, rows, index, [(orig["lesson"]["cwd"], orig["sources"])], back)
                conn.execute(
                    "UPDATE lessons SET sources = ?, seen = ?, strength = strength + ?, cwd = ?, "
                    "updated = ? WHERE id = ?",
                    (dumps(sources), len(sources), float(len(g.added)), _common_cwd(cwds), stamp,
                     g.lesson_id),
                )
    ctx.events["learned"] += [r["id"] for r in new_rows]
    ctx.events["grew"] += [g.lesson_id for g in grown]
    ctx.changed_lessons.update(r["id"] for r in new_rows)
    ctx.changed_lessons.update(g.lesson_id for g in grown if g.lesson_id)
    for g in grown:
        placed.update(dict.fromkeys(g.added, g.lesson_id))
    return placed


# --------------------------------------------------------------------------- merge

def _last_merge_started(store: Any) -> str | None:
    """When the last finished sleep that ran the merge pass started; None if none has."""
    row = store.one("SELECT started FROM runs WHERE kind = 'sleep' AND status = 'ok' "
                    "AND summary LIKE '%\"merge\":{%' ORDER BY id DESC LIMIT 1")
    return row["started"] if row else None


def merge(ctx: "Context") -> Iterator["Progress"]:
    store, emb = ctx.store, ctx.embedder
    space = emb.space
    cut = ctx.cut(space)
    everything = "lessons" not in ctx.passes  # run alone: look at every pair
    # Lessons that changed since the last merge (by this run, or by a run without a merge, such
    # as `sleep --pass lessons`): pairs of two older ones were already below the cut.
    since = _last_merge_started(store)
    everything = everything or since is None
    counts = {"themes": 0, "aliased": 0}
    yield _progress("merge", 0, len(CONSOLIDATED_KINDS), "looking for lessons that mean the same")
    for step, kind in enumerate(CONSOLIDATED_KINDS, start=1):
        lessons = store.rows(
            "SELECT id, kind, text, draft, cwd, strength, sources, created, updated, origin, space, embedding "
            "FROM lessons WHERE status = 'active' AND kind = ? ORDER BY created, id", (kind,)
        )
        if len(lessons) < 2:
            continue
        rows, index, matrix = _kind_data(ctx, kind)
        live, totals, sizes, classes, changed, stances, topics, said = [], [], [], [], [], [], [], []
        for lesson in lessons:
            srcs = [s for s in loads_list(lesson["sources"]) if isinstance(s, str)]
            group = _group(lesson, srcs, rows, index, matrix, space)
            if group is None:
                continue
            lesson["_sources"] = srcs
            live.append(lesson)
            totals.append(group.total)
            sizes.append(group.n)
            # Errors merge within their class, refusal lessons within the call refused
            # (`git push` and `git pull` stay apart); worded corrections have class "", and
            # merge only with those about the same programs.
            classes.append(group.klass if kind in ("error", "correction") else "")
            topics.append(group.topic)
            changed.append(everything or lesson["id"] in ctx.changed_lessons
                           or (lesson["updated"] or lesson["created"] or "") >= since)
            stances.append(group.stances)
            said.append(group.words)
        if len(live) < 2:
            continue
        # Lessons that point opposite ways mean the same topic, not the same thing: never one;
        # nor surprises that say other things.
        apart, may_join = contradiction.pairs_apart(stances), None
        if kind == "surprise":
            saying, may_join = saying_apart(np.stack(totals), sizes, cut, changed, said, _sayings(ctx))
            apart += saying
        clusters = merge_groups(np.stack(totals), sizes, cut, changed, classes, apart, topics, may_join)
        if clusters:
            _write_merges(ctx, [[live[i] for i in c] for c in clusters], rows, index, counts,
                          contradiction.taken_back(store))
        yield _progress("merge", step, len(CONSOLIDATED_KINDS), kind)
    ctx.counts["merge"] = counts


def _theme(cluster: list[dict[str, Any]]) -> dict[str, Any]:
    """The lesson the others merge into: one whose words were rewritten (its draft differs
    from its text) first, so a person's edit is never deleted; then most sources; then the
    oldest."""
    def rewritten(lesson: dict[str, Any]) -> bool:
        return bool(lesson.get("draft")) and lesson["draft"] != lesson["text"]

    return min(cluster, key=lambda l: (not rewritten(l), -len(l["_sources"]), l["created"], l["id"]))


def _write_merges(ctx: "Context", clusters: list[list[dict[str, Any]]], rows: list[dict[str, Any]],
                  index: dict[str, int], counts: dict[str, int], back: set[str]) -> None:
    stamp = clock.iso()
    with ctx.store.write() as conn:
        for cluster in clusters:
            theme = _theme(cluster)
            others = [l for l in cluster if l is not theme]
            seen: set[str] = set()
            sources: list[str] = []
            for lesson in [theme] + others:
                for s in lesson["_sources"]:
                    if s not in seen:
                        seen.add(s)
                        sources.append(s)
            sources.sort(key=lambda s: (index.get(s, -1), s))
            cwds = _cwds(sources, rows, index, [(l["cwd"], l["_sources"]) for l in cluster], back)
            conn.execute(
                "UPDATE lessons SET sources = ?, seen = ?, strength = ?, cwd = ?, updated = ? WHERE id = ?",
                (dumps(sources), len(sources), float(sum(l["strength"] for l in cluster)),
                 _common_cwd(cwds), stamp, theme["id"]),
            )
            for old in others:
                conn.execute(
                    "INSERT OR REPLACE INTO aliases (old, new, at, created) VALUES (?, ?, ?, ?)",
                    (old["id"], theme["id"], stamp, old["created"]),
                )
                conn.execute("UPDATE aliases SET new = ? WHERE new = ?", (theme["id"], old["id"]))
                conn.execute("UPDATE predictions SET lesson_id = ? WHERE lesson_id = ?", (theme["id"], old["id"]))
                conn.execute("DELETE FROM lessons WHERE id = ?", (old["id"],))
            counts["themes"] += 1
            counts["aliased"] += len(others)
            ctx.events["merged"].append({"theme": theme["id"], "old": [o["id"] for o in others]})
            ctx.changed_lessons.add(theme["id"])
            _retarget_events(ctx.events, theme["id"], {o["id"] for o in others})


def _retarget_events(events: dict[str, list[Any]], theme: str, gone: set[str]) -> None:
    """Lessons merged away no longer exist: the report names the theme instead (as grown,
    unless it was itself learned in this run)."""
    touched = any(i in gone for i in events["learned"] + events["grew"])
    events["learned"] = [i for i in events["learned"] if i not in gone]
    events["grew"] = [i for i in events["grew"] if i not in gone]
    if touched and theme not in events["learned"] and theme not in events["grew"]:
        events["grew"].append(theme)
