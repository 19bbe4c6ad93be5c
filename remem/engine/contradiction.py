"""Corrections that take back an earlier one: which way a correction points, and whether two
point opposite ways.

"no, use uv not pip" and, weeks later, "don't use uv anymore in this repo, plain pip install
is what we use now" are about the same thing, so their vectors are close (a vector is the
topic, not the direction), and the lessons pass would join the second to the lesson of the
first — strengthening the lesson it takes back. `stance` reads the direction of a text from
the programs it names, with the readers of programs.py (known tools, code spans, the words
that reject): those it prefers ("use X", "just use X", "X is fine", "switch (back) to X", the
X of "X, not Y") and those it rejects ("not Y", "never Y", "don't use Y", "stop using Y", "no
more Y", "Y anymore"). A clause that names no known program, or more than one, says nothing,
nor does a text that sets a condition ("if uv is not installed, use pip"): it is unclear, and
what is unclear behaves as before. Two texts `contradict` when one prefers
what the other rejects — both ways, where both ways are known.

A lesson points every way its words and its corrections point (`lesson_stances`): "Stop using
npm." that "use pnpm not npm" joined prefers pnpm too, so "stop using pnpm" contradicts it.
The lessons pass never joins a correction to a lesson it contradicts, the merge pass never
merges two such lessons, and verify never lets one confirm the other's prediction. The newer
correction wins in its project (`settle`): the older lesson is retired there. A lesson applies
in one project or in all (its `cwd`), so: one that applied only in that project is vetoed,
with the note "superseded by <lesson> in <project>" (`remem lessons restore` brings it back;
nothing joins it any more, so the same correction said again later makes a new lesson); one
learned in other projects too keeps those, and its sources from that project no longer count
toward where it applies — recorded as `contradicts` connections (origin auto) from the new
correction to them, which is also what the morning report reads ("Contradicted"). When its
other sources share one project it becomes that project's lesson; when they span several it
stays a lesson of every project, and the report says so.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

from remem.engine.programs import CLAUSE, EDGE, KNOWN_PROGRAMS, REJECTS, SENTENCE_WORDS, masked_spans, named_in_lesson
from remem.engine.projects import is_under

if TYPE_CHECKING:
    from remem.engine.sleep_passes import Context

# The note of a lesson a later correction retired: "superseded by <lesson> in <project>".
SUPERSEDED = "superseded by "
# A text longer than this is read only this far: a correction is a sentence or a few.
_MOST = 600
# Words that reject what follows them besides programs.REJECTS ("not", "never", "don't",
# "instead of" …): "stop using pip", "no more npm".
_ALSO_REJECTS = re.compile(r"\b(?:stop(?:ped)?\s+(?:using|running)|no\s+more)\b", re.IGNORECASE)
# Of those, the ones that set one thing against another: the X of "X, not Y", "X instead of
# Y" is preferred.
_CONTRASTS = re.compile(r"not|instead of|rather than", re.IGNORECASE)
# "Y anymore": the clause before it rejects Y ("we don't need uv anymore" says it twice).
_ANYMORE = re.compile(r"\banymore\b", re.IGNORECASE)
# Words that prefer the program after them ("use uv", "just use pip", "switch back to npm").
# Not "run": "run `npm test` before pushing" is about testing, not about npm over another.
_PREFERS = re.compile(r"\b(?:use|using|switch(?:ed)?\s+(?:back\s+)?to|go(?:es)?\s+back\s+to|"
                      r"prefer|stick\s+with)\b", re.IGNORECASE)
# Words that prefer the program before them ("pip is fine now").
_FINE = re.compile(r"\b(?:is|are)\s+(?:fine|ok|okay|good|allowed)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9][a-z0-9_.+-]*")
# A condition makes a direction unclear: "if uv is not installed, use pip" prefers pip only then.
_CONDITION = re.compile(r"\b(?:if|unless|except|otherwise)\b", re.IGNORECASE)
# Words that may follow a program named as a whole ("we never use pip here", "uv is fine",
# "not pip anymore"); any other word after it is a subcommand or an argument ("pip install").
_GOES_ON = SENTENCE_WORDS | frozenset("""
    not is are was here now anymore again instead either too then there everywhere any more
""".split())
# Two names of one program: "stop using pip3" rejects what "pip is fine" prefers.
_SAME_PROGRAM = {"pip3": "pip", "ripgrep": "rg"}


class Stance:
    """Which programs a text prefers and which it rejects (`stance`), by name; `rejecting`:
    whether it rejects anything at all, a program or not ("not pytest directly", "not make");
    `whole`: the programs it names as a whole, not only a way of running them."""

    __slots__ = ("prefers", "rejects", "rejecting", "whole")

    def __init__(self, prefers: frozenset[str], rejects: frozenset[str], rejecting: bool,
                 whole: frozenset[str] = frozenset()) -> None:
        self.prefers, self.rejects, self.rejecting = prefers, rejects, rejecting
        self.whole = whole  # the programs it names as a whole somewhere (`as_a_whole`)

    def __repr__(self) -> str:
        return f"Stance(prefers={sorted(self.prefers)}, rejects={sorted(self.rejects)})"

    def _key(self) -> tuple[frozenset[str], frozenset[str], bool, frozenset[str]]:
        return self.prefers, self.rejects, self.rejecting, self.whole

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stance) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _could_name_a_program(text: str) -> bool:
    """Cheap first look: a code span, or a known tool among the words."""
    return "`" in text or any(w in KNOWN_PROGRAMS for w in _WORD.findall(text.lower()))


def _one_program(words: str) -> str | None:
    """The program a stretch of words names when it names exactly one (a code span's command
    or a known tool, by name); None when it names none or several (unclear)."""
    named = named_in_lesson(words)
    if len(named) != 1 or not named[0]:
        return None
    return _SAME_PROGRAM.get(named[0][0], named[0][0])


def as_a_whole(words: str) -> bool:
    """Whether a stretch names its program as a whole, not a way of running it: a code span
    holding the program alone, or a tool's name with no subcommand, argument or flag after it
    ("never pip here", "uv is fine"; not "pip install", "git commit -a", "pytest with -s")."""
    named = named_in_lesson(words)
    if len(named) != 1 or len(named[0]) != 1:
        return False
    if "`" in words:
        return True
    tokens = [w.strip(EDGE).lower() for w in words.split()]
    if any(t.startswith("-") for t in tokens) or named[0][0] not in tokens:
        return False
    after = tokens[tokens.index(named[0][0]) + 1:]
    return not after or not after[0] or after[0] in _GOES_ON


def _clause_start(masked: str, end: int) -> int:
    """Where the clause that ends at `end` starts (after the last clause mark before it)."""
    start = 0
    for mark in CLAUSE.finditer(masked, 0, end):
        start = mark.end()
    return start


def stance(text: str | None) -> Stance | None:
    """Which way a correction or lesson points: the programs it prefers and rejects (see the
    module's doc); None when it names no program with a clear direction, or sets a condition
    ("if uv is not installed, use pip"). A program a text both prefers and rejects ("don't
    use uv pip install, use uv add") counts as neither."""
    text = (text or "")[:_MOST]
    if not text or not _could_name_a_program(text) or _CONDITION.search(text):
        return None
    masked = masked_spans(text)  # a code span's "not" or "," is a command's, not the sentence's
    rejects: set[str] = set()
    prefers: set[str] = set()
    spans: list[tuple[int, int]] = []  # the stretches that reject: a "use" inside is no preference
    rejecting = False
    whole: set[str] = set()

    def named(words: str) -> str | None:
        program = _one_program(words)
        if program and as_a_whole(words):
            whole.add(program)
        return program

    for found in sorted([*REJECTS.finditer(masked), *_ALSO_REJECTS.finditer(masked)], key=lambda m: m.start()):
        rejecting = True
        clause = CLAUSE.search(masked, found.end())
        end = clause.start() if clause else len(text)
        spans.append((found.start(), end))
        rejected = named(text[found.end():end])
        if rejected:
            rejects.add(rejected)
            if _CONTRASTS.fullmatch(found.group(0)):  # "uv, not pip": the words before are preferred
                head = masked[:found.start()].rstrip(" ,")
                preferred = named(text[_clause_start(masked, len(head)):len(head)])
                if preferred:
                    prefers.add(preferred)
    for found in _ANYMORE.finditer(masked):
        rejecting = True
        start = _clause_start(masked, found.start())
        spans.append((start, found.end()))
        rejected = named(text[start:found.start()])
        if rejected:
            rejects.add(rejected)
    for found in _PREFERS.finditer(masked):
        if any(a <= found.start() < b for a, b in spans):
            continue
        clause = CLAUSE.search(masked, found.end())
        preferred = named(text[found.end():clause.start() if clause else len(text)])
        if preferred:
            prefers.add(preferred)
    for found in _FINE.finditer(masked):
        preferred = named(text[_clause_start(masked, found.start()):found.start()])
        if preferred:
            prefers.add(preferred)
    both = prefers & rejects
    prefers -= both
    rejects -= both
    if not prefers and not rejects:
        return None
    return Stance(frozenset(prefers), frozenset(rejects), rejecting, frozenset(whole & (prefers | rejects)))


def contradicts(a: Stance | None, b: Stance | None) -> bool:
    """Whether two stances point opposite ways: one prefers a program the other rejects; and
    where each direction is known (one prefers something and the other rejects something),
    it holds both ways; and one of them names the program as a whole. "Use pnpm, not npm" and
    "just use npm" contradict; "use npm run build, not make" does not contradict "use pnpm, not
    npm" (it rejects make, not pnpm)."""
    if a is None or b is None:
        return False
    # A program only one way of running of which is named on both sides ("use pytest -x" and
    # "stop running pytest with -s", "use git rebase" and "don't commit with git commit -a")
    # is no program one side takes back from the other.
    named_whole = a.whole | b.whole
    forward = b.prefers & a.rejects & named_whole
    backward = a.prefers & b.rejects & named_whole
    if not forward and not backward:
        return False
    if b.prefers and a.rejecting and not forward:
        return False
    if a.prefers and b.rejecting and not backward:
        return False
    return True


def episode_stance(row: dict[str, Any]) -> Stance | None:
    """`stance` of an episode row's words (the person's words: its gist, else its title), read
    once and kept in the row (the lessons pass reads its rows once per sleep)."""
    if "_stance" not in row:
        row["_stance"] = stance(row.get("gist") or row.get("title"))
    return row["_stance"]


class Directions:
    """Things (groups, lessons: any key) by the programs their stances prefer and reject, so
    the ones a stance contradicts are found without reading every one. A thing may have
    several stances (a lesson: its words' and each of its corrections'): a stance contradicts
    it when it contradicts any of them."""

    def __init__(self) -> None:
        self.stances: dict[Any, list[Stance]] = {}
        self._prefer: dict[str, set[Any]] = {}
        self._reject: dict[str, set[Any]] = {}

    def add(self, key: Any, pointed: Stance | None) -> None:
        if pointed is None:
            return
        held = self.stances.setdefault(key, [])
        if pointed in held:
            return
        held.append(pointed)
        for name in pointed.prefers:
            self._prefer.setdefault(name, set()).add(key)
        for name in pointed.rejects:
            self._reject.setdefault(name, set()).add(key)

    def against(self, pointed: Stance | None) -> set[Any]:
        """The keys with a stance that contradicts `pointed`."""
        if pointed is None:
            return set()
        near: set[Any] = set()
        for name in pointed.prefers:
            near |= self._reject.get(name, set())
        for name in pointed.rejects:
            near |= self._prefer.get(name, set())
        return {key for key in near if any(contradicts(held, pointed) for held in self.stances[key])}


def pairs_apart(stances: Sequence[Stance | None | Sequence[Stance]]) -> list[tuple[int, int]]:
    """Every pair (i < j) of things that contradict each other: each thing's stance, or its
    stances (a lesson's: `lesson_stances`), any of which contradicting any of the other's."""
    seen = Directions()
    out = []
    for j, pointed in enumerate(stances):
        own = [pointed] if pointed is None or isinstance(pointed, Stance) else list(pointed)
        against: set[int] = set()
        for one in own:
            against |= seen.against(one)
        out += [(i, j) for i in sorted(against)]
        for one in own:
            seen.add(j, one)
    return out


def lesson_stances(text: str | None, sources: Sequence[str], rows: Sequence[dict[str, Any]],
                   index: dict[str, int]) -> list[Stance]:
    """Every way a correction lesson points: its words' stance, and each of its corrections'
    still here (`episode_stance`; a refusal with no words points nowhere), each once. A lesson
    "Stop using npm." that "use pnpm not npm" joined prefers pnpm too, though its words do not
    say so: "stop using pnpm" takes it back."""
    out: list[Stance] = []
    for pointed in [stance(text), *(episode_stance(rows[index[s]]) for s in sources
                                    if s in index and not rows[index[s]].get("wordless"))]:
        if pointed is not None and pointed not in out:
            out.append(pointed)
    return out


def superseded_note(lesson_id: str, project: str) -> str:
    """The note of a lesson retired because a later correction in `project` contradicted it."""
    return f"{SUPERSEDED}{lesson_id} in {project}"


def is_superseded(status: str | None, note: str | None) -> bool:
    """Whether a lesson was retired by a later correction (not by the person's veto)."""
    return status == "vetoed" and (note or "").startswith(SUPERSEDED)


def retired_by_remem(status: str | None, note: str | None) -> bool:
    """Whether remem retired the lesson, not the person: superseded by a later correction, or
    learned only from findings a re-read no longer found (lessons.NOT_FOUND_AGAIN). Such a
    lesson takes nothing in (a person's veto holds; these do not): the same words said again
    make a new lesson."""
    from remem.engine.lessons import NOT_FOUND_AGAIN

    return is_superseded(status, note) or (status == "vetoed" and note == NOT_FOUND_AGAIN)


# --------------------------------------------------------------------------- the store side

def taken_back(store: Any) -> set[str]:
    """The episodes a later correction contradicted in their own project: the `dst` of each
    auto `contradicts` connection whose `src` (the later correction) was made in the project
    of the `dst` or above it. They no longer count toward where their lesson applies."""
    out: set[str] = set()
    for row in store.rows(
        "SELECT c.dst, s.cwd AS src_cwd, d.cwd AS dst_cwd FROM connections c "
        "JOIN episodes s ON s.id = c.src JOIN episodes d ON d.id = c.dst "
        "WHERE c.type = 'contradicts' AND c.origin = 'auto'"
    ):
        if is_under(row["dst_cwd"], row["src_cwd"]):
            out.add(row["dst"])
    return out


def settle(ctx: "Context", placed: dict[str, str], rows: list[dict[str, Any]], index: dict[str, int]) -> None:
    """The newer correction wins in its project. `placed`: each correction the lessons pass
    put in a lesson in this run -> that lesson's id; rows/index: the pass's correction rows.

    In time order, each one with a stance and a project retires, in that project, every other
    active correction lesson of this memory that it contradicts, that applies there, and that
    has no source later than it (a lesson said again since stands): see the module's doc.
    Each is recorded as `contradicts` connections (origin auto) from the correction to the
    lesson's sources in that project (or, with none there, its latest source), and in the
    run's events (`contradicted`: old, new, in, by, how = retired | narrowed | kept)."""
    from remem.engine import clock
    from remem.engine.lessons import applies_in
    from remem.engine.lessons_pass import _common_cwd, _cwds
    from remem.engine.store import loads_list

    said = []
    for episode_id, lesson_id in placed.items():
        row = rows[index[episode_id]]
        pointed = episode_stance(row) if row.get("cwd") and not row.get("wordless") else None
        if pointed is not None:
            said.append((row["at"], row["seq"], episode_id, lesson_id, pointed, row["cwd"]))
    if not said:
        return
    store = ctx.store
    polar: list[dict[str, Any]] = []
    directions = Directions()
    for lesson in store.rows("SELECT id, text, cwd, sources FROM lessons WHERE kind = 'correction' "
                             "AND status = 'active' AND origin IS NULL ORDER BY created, id"):
        lesson["sources"] = [s for s in loads_list(lesson["sources"]) if isinstance(s, str)]
        # Which ways it points: its words and its corrections ("Stop using npm." that "use pnpm
        # not npm" joined prefers pnpm too).
        pointed = lesson_stances(lesson["text"], lesson["sources"], rows, index)
        if pointed:
            for one in pointed:
                directions.add(len(polar), one)
            lesson["_held"] = set(lesson["sources"])
            lesson["_latest"] = max((rows[index[s]]["at"] for s in lesson["sources"] if s in index), default="")
            polar.append(lesson)
    if not polar:
        return
    back = taken_back(store)
    retired: set[str] = set()
    for at, _, episode_id, lesson_id, pointed, project in sorted(said, key=lambda s: s[:3]):
        for lesson in (polar[n] for n in sorted(directions.against(pointed))):
            srcs = lesson["sources"]
            if (lesson["id"] == lesson_id or lesson["id"] in retired or episode_id in lesson["_held"]
                    or not applies_in(lesson["cwd"], project) or lesson["_latest"] > at):
                continue
            there = [s for s in srcs if s in index and is_under(rows[index[s]]["cwd"], project)]
            live = [s for s in srcs if s in index]
            linked = there or live[-1:]
            rest = [s for s in srcs if s not in there]
            stamp = clock.iso()
            whole = is_under(lesson["cwd"], project) or not rest
            cwd = lesson["cwd"] if whole else _common_cwd(_cwds(rest, rows, index, [(lesson["cwd"], srcs)], back))
            with store.write() as conn:
                for source in linked:
                    conn.execute(
                        "INSERT INTO connections (src, dst, type, weight, origin, created) "
                        "SELECT ?, ?, 'contradicts', 1.0, 'auto', ? WHERE NOT EXISTS (SELECT 1 FROM "
                        "connections WHERE type = 'contradicts' AND ((src = ? AND dst = ?) OR (src = ? AND dst = ?)))",
                        (episode_id, source, stamp, episode_id, source, source, episode_id))
                if whole:
                    conn.execute("UPDATE lessons SET status = 'vetoed', note = ?, updated = ? WHERE id = ?",
                                 (superseded_note(lesson_id, project), stamp, lesson["id"]))
                elif cwd != lesson["cwd"]:
                    conn.execute("UPDATE lessons SET cwd = ?, updated = ? WHERE id = ?", (cwd, stamp, lesson["id"]))
            back.update(there)
            if whole:
                retired.add(lesson["id"])
                how = "retired"
            else:
                how = "kept" if applies_in(cwd, project) else "narrowed"
                lesson["cwd"] = cwd
                ctx.changed_lessons.add(lesson["id"])
            ctx.events.setdefault("contradicted", []).append(
                {"old": lesson["id"], "new": lesson_id, "in": project, "by": episode_id, "how": how})


def told_since(store: Any, since: str | None) -> list[dict[str, Any]]:
    """The contradictions recorded since a time (None: all), for the morning report, in the
    order they were found: {old, new (lesson dicts: id, text, kind, seen, status, cwd, note),
    in (the project), state} — state is where the older lesson stands now: "retired" (the
    later correction superseded it), "moved" (it applies elsewhere only), "still applies" (it
    was learned in several projects and applies in all), or its status."""
    from remem.engine.lessons import applies_in
    from remem.engine.store import loads_list

    edges = store.rows(
        "SELECT c.src, c.dst, e.cwd FROM connections c JOIN episodes e ON e.id = c.src "
        "WHERE c.type = 'contradicts' AND c.origin = 'auto'" + (" AND c.created >= ?" if since else "")
        + " ORDER BY c.created, c.id", (since,) if since else (),
    )
    if not edges:
        return []
    wanted = {e["src"] for e in edges} | {e["dst"] for e in edges}
    holder: dict[str, dict[str, Any]] = {}
    for lesson in store.rows("SELECT id, text, kind, seen, status, cwd, note, sources FROM lessons "
                             "WHERE kind = 'correction' ORDER BY created, id"):
        for source in loads_list(lesson.pop("sources")):
            if source in wanted:
                holder[source] = lesson
    out: list[dict[str, Any]] = []
    told: set[tuple[str, str]] = set()
    for edge in edges:
        new, old = holder.get(edge["src"]), holder.get(edge["dst"])
        if not new or not old or new["id"] == old["id"] or (old["id"], new["id"]) in told:
            continue
        told.add((old["id"], new["id"]))
        project = edge["cwd"]
        if is_superseded(old["status"], old["note"]):
            state = "retired"
        elif old["status"] != "active":
            state = old["status"]
        elif applies_in(old["cwd"], project):
            state = "still applies"
        else:
            state = "moved"
        out.append({"old": old, "new": new, "in": project, "state": state})
    return out
