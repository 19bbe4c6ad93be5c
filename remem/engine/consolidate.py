"""Consolidation: episodes of one kind become lessons (the sleep's `lessons` pass does the I/O).

Rules (DESIGN.md, Sleep): an episode joins the lesson whose sources it resembles — the mean
cosine between it and the lesson's sources is at least the cut (0.62 in a model's space, 0.55
hashed). Otherwise a correction makes a lesson at once, while an error or a stated surprise
waits in a pool of pending episodes until one like it comes again; then the two (and every
pending one like them) cluster into a new lesson. Errors only meet errors of the same class
(`ModuleNotFoundError` never joins `FileNotFoundError`, however close the words); the
lessons pass gives every error its class in one form (detect's names, e.g. module_not_found),
with what failed: the command its call ran, or the module or command found missing
(lessons_pass._with_what), since two error outputs share most of their words. Corrections
meet only corrections about the same known programs (`topic_of`, `same_programs`): two that each
prefer a program meet only when they prefer the same one ("Use pnpm, not yarn" and "Use pnpm,
not npm" do; "Use yarn, not npm" and "Use pnpm, not npm" never do), one about a program (it
prefers it or names it as a whole: "use ruff for linting", "always invoke uv with -v") never
meets one naming no program ("use black for formatting": `black` is no known tool), however
close the words — each would be lost in a lesson that speaks for the other. A program named
only in passing, as a way of running it ("no emojis in git commit messages"), keeps no
correction from one naming none; otherwise one names every program the other names. A lesson
is about what its first correction preferring a program prefers (`joined`), so the order its
corrections came in never lets it hold two that prefer different programs.

A correction never meets a lesson or a pending correction that points the other way (its
stance contradicts theirs: contradiction.py): "don't use uv anymore" is about what "use uv,
not pip" is about, and close to it, but it takes it back. A lesson points every way its
corrections point (`Group.stances`), not only its first one's: "stop using npm" that "use pnpm
not npm" joined never takes "stop using pnpm".

Stated surprises meet only surprises that say the same thing (`said_again` of their
`content_words`). Where the words one says and the other does not name other things on both
sides (programs, environments, files: "ruff" and "mypy", "staging" and "production") or the two
are about other things, each such word must mean the same as one of the other's, or one say
all the other says (`say_alike`): "ruff ignores the settings in pyproject.toml" and "mypy
ignores the settings in pyproject.toml" are closer than the cut as wholes, the words they share
outweighing the one that tells them apart; "the staging DB is wiped" and "staging database gets
wiped" are one. Otherwise a rewording is read loosely (prepositions, a turn on each side,
another form of a word aside; a short word read in full), and one must still say all the other
says: "ruff ignores the settings in pyproject.toml" and "ruff ignores the config in
pyproject.toml" are one, "the tests hang when Docker is not running" and "the tests pass when
Docker is not running" two. A word one says whose opposite the other says ("enabled",
"disabled"; `opposite`) always makes two facts: a model's space puts many opposites near.

Episodes are taken in time order and in blocks: the similarities a block needs (block x
lessons, block x pool, block x block) are three matrix products, and the greedy decisions
inside the block are replayed exactly from them. All vectors are unit length, so the mean
cosine to a lesson's sources is `v · sum(sources) / n`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Generator, Iterable, Sequence

import numpy as np

from remem.engine.contradiction import Directions, Stance, as_a_whole, contradicts, stance
from remem.engine.keywords import STOP_WORDS
from remem.engine.programs import (CLAUSE, CODE_SPAN, EDGE, KNOWN_PROGRAMS, SENTENCE_WORDS,
                                  VERSIONED_FAMILIES, program_base, program_names)

CONSOLIDATED_KINDS = ("correction", "error", "surprise")
MUST_REPEAT = ("error", "surprise")
BLOCK = 512
_ERROR_CLASS = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Timeout|Failure|Interrupt))\b")


def error_class(text: str) -> str:
    """The error class an error episode names (`ModuleNotFoundError`), or '' when none."""
    m = _ERROR_CLASS.search(text or "")
    if m:
        return m.group(1)
    low = (text or "").lower()
    for word in ("permission denied", "command not found", "no such file", "timed out",
                 "exit code", "syntax error", "merge conflict"):
        if word in low:
            return word
    return ""


Names = frozenset[str]
NONE: Names = frozenset()


def programs_named(text: str) -> Names:
    """The known programs a correction names (programs.program_names, versions dropped: pip3
    is pip): "Use pnpm, not npm" -> {npm, pnpm}."""
    return frozenset(program_base(name) for name in program_names(text or ""))


@dataclass(frozen=True)
class Topic:
    """Which known programs a correction (or a lesson) is about, as `same_programs` reads them:
    `names`, every one it names; `prefers`, those it prefers (contradiction.stance); `about`,
    those it prefers, else those it names as a whole, not only a way of running them
    (`whole_names`; none: it names programs only in passing); `bare`, it is (or a lesson holds)
    a correction naming no program."""

    names: Names = frozenset()
    about: Names = frozenset()
    prefers: Names = frozenset()
    bare: bool = False


NO_TOPIC = Topic()  # not a correction in words: no program rule applies
BARE = Topic(bare=True)  # a correction naming no program


def whole_names(text: str, among: Names | None = None) -> Names:
    """The known programs a text names as a whole (contradiction's reading: nothing after the
    name but a sentence's words — "invoke uv with -v", "never npm", a code span holding
    `black` alone), not only a way of running one ("git commit", "npm install", `npm run build`);
    `among`: the programs it names (`programs_named`), when already read."""
    text = text or ""
    among = programs_named(text) if among is None else among
    found: set[str] = set()
    for span in CODE_SPAN.findall(text):
        if as_a_whole(f"`{span}`"):
            found |= programs_named(f"`{span}`")
    words = (CODE_SPAN.sub(" ", text) if "`" in text else text).split()
    for i, word in enumerate(words):
        if program_base(word.strip(EDGE).lower() or "-") not in among:
            continue
        named = programs_named(word)
        if not named:
            continue
        # The name and the word after it, unless the name ends its clause ("… with git.").
        window = word if CLAUSE.search(word[-1:] + " ") or i + 1 == len(words) else f"{word} {words[i + 1]}"
        if as_a_whole(window):
            found |= named
    return frozenset(found)


def topic_of(text: str | None, pointed: Stance | None | bool = False) -> Topic:
    """What a correction's words are about (`Topic`); `pointed`: their stance when already read
    (None: no clear direction), else it is read here."""
    text = text or ""
    names = programs_named(text)
    if not names:
        return BARE
    if pointed is False:
        pointed = stance(text)
    prefers = frozenset(program_base(p) for p in pointed.prefers) if isinstance(pointed, Stance) else NONE
    return Topic(names, prefers or whole_names(text, names) & names, prefers)


def same_programs(a: Topic, b: Topic) -> bool:
    """Whether two corrections (or a correction and a lesson, or two lessons: their `joined`
    topics) may meet. Both prefer programs: the same ones (one's contain the other's: "use pnpm"
    and "Use pnpm, not npm"; not "Use yarn, not npm" and "Use pnpm, not npm"). One names no
    program: the other names programs only in passing ("no emojis in commit messages" and "no
    emojis in git commit messages"; not "use black for formatting" and "use ruff for linting").
    Else one names every program the other names. The one rule of the lessons, merge and
    verify passes."""
    if a.prefers and b.prefers:
        return a.prefers <= b.prefers or b.prefers <= a.prefers
    if (a.bare and b.about) or (b.bare and a.about):
        return False  # a lesson holding a correction naming no program takes none about one
    if not a.names or not b.names:
        return not a.about and not b.about
    return a.names <= b.names or b.names <= a.names


def joined(group: Topic, member: Topic) -> Topic:
    """A group's topic (a lesson's, a cluster's) after a member it meets (`same_programs`)
    joins: that of its first member, until a member about a program joins a group about none,
    or the first member preferring a program a group preferring none — then that member's.
    While neither is about a program, the programs named in passing add up and a member naming
    none makes the group `bare` (it then takes no correction about a program): "commit
    messages" joins "git commit messages", and "svn commit messages" still meets neither. So a
    lesson never holds corrections preferring
    different programs, nor one about a program and one naming none, nor ones naming different
    programs in passing, whatever order they came in."""
    if (member.prefers and not group.prefers) or (member.about and not group.about):
        return member
    if not group.about and not member.about:
        return Topic(names=group.names | member.names, bare=group.bare or member.bare)
    return group


Words = tuple[str, ...]
# Whether two words mean the same (their vectors' cosine reaches the cut): the lessons pass's.
Alike = Callable[[str, str], bool]
# Words that carry no fact in a statement of surprise: those detect reads a surprise by
# ("turns out", "surprisingly", "I didn't expect …"), a sentence's glue and its adverbs of
# place and time ("here", "now"), and "get" as a sentence's verb ("the staging database gets
# wiped").
_SURPRISE_WORDS = frozenset("""
    huh wow oh hmm surprise surprised surprising surprisingly unexpected unexpectedly turns turned
    out odd oddly strange strangely weird interesting interestingly assumed expected expecting
    expect thought contrary apparently actually didn't wasn't get gets got getting gotten
    here there now again
""".split())
_GLUE = STOP_WORDS | SENTENCE_WORDS | _SURPRISE_WORDS
# A word: letters first (numbers, "/tmp/47"'s 47, say nothing of what a statement is about),
# a file name with its dots ("pyproject.toml"), a contraction with its apostrophe.
_CONTENT = re.compile(r"[a-z][a-z0-9_+#'-]*(?:\.[a-z0-9_+#-]+)*")
_MOST_WORDS = 600  # a statement is read this far


def content_words(text: str | None) -> Words:
    """A statement's content words, in order, each once: lower case, no numbers, no glue
    (stop words, the words that say it surprised), a known program by its name without a
    version (pip3: pip). "Huh, ruff ignores the settings in pyproject.toml in this repo." ->
    (ruff, ignores, settings, pyproject.toml, repo)."""
    text = (text or "")[:_MOST_WORDS].lower().replace("\u2019", "'")
    found = (program_base(w.removesuffix("'s").strip("'-")) for w in _CONTENT.findall(text))
    return tuple(dict.fromkeys(w for w in found if len(w) > 1 and w not in _GLUE))


def differing(a: Words, b: Words) -> tuple[Words, Words] | None:
    """The words each of two statements says and the other does not (in order), when each
    says some; None when one says all the other says (a repeat in fewer or more words).
    "ruff ignores the settings" and "mypy ignores the settings": ((ruff,), (mypy,))."""
    held_a, held_b = set(a), set(b)
    only_a = tuple(w for w in a if w not in held_b)
    only_b = tuple(w for w in b if w not in held_a)
    if not only_a or not only_b:
        return None
    return only_a, only_b


def say_alike(a: Words, b: Words, alike: Alike) -> bool:
    """Whether two statements may be one said again: one says all the other says, in the same
    words or in words that mean the same (each word it does not share has one among the
    other's that does: `alike`); what the other says besides is more of the same. Two
    statements alike in every word but their subject ("ruff ignores …", "mypy ignores …";
    "the staging database is wiped …", "the production database is backed up …") come closer
    than the cut as wholes, the words they share outweighing the ones that tell them apart:
    they are two facts. "The staging DB is wiped …" and "Staging database gets wiped …" are
    one (db and database mean the same)."""
    said = differing(a, b)
    if said is None:
        return True
    only_a, only_b = said
    return (all(any(alike(x, y) for y in only_b) for x in only_a)
            or all(any(alike(y, x) for x in only_a) for y in only_b))


# Words a statement may say in other words without saying another thing: prepositions and
# particles ("shared between branches", "shared across branches"; "gives back").
_FRAME_WORDS = frozenset("""
    between across among amongst within through throughout via per along around over under onto
    upon toward towards beside besides beyond versus vs back off away
""".split())
# Words that turn a clause around: one on each side, the two say it the same way ("hang unless
# Docker is running", "hang when Docker is not running"; "strings, not datetime objects",
# "strings rather than datetimes").
_TURNING = frozenset("""
    not no never unless without except rather than instead otherwise cannot can't don't doesn't
    isn't aren't won't
""".split())
# Names whose difference makes two facts however alike the rest: environments, days, platforms,
# languages and services (a known program, or a word with a dot, an underscore, a slash or a
# digit — a file, a variable, a version — is a name too: `is_name`).
_NAMES = frozenset("""
    staging production prod dev development local qa ci preview sandbox
    monday tuesday wednesday thursday friday saturday sunday
    linux macos mac osx windows wsl ubuntu debian alpine fedora centos arm arm64 x86 ios android
    node deno bun golang java javascript js typescript ts rust ruby python php kotlin swift scala
    elixir erlang haskell postgres postgresql mysql mariadb sqlite redis mongo mongodb kafka
    rabbitmq elasticsearch chrome firefox safari aws gcp azure
""".split())
_NAME_MARK = re.compile(r"[._/#+0-9]")


def is_name(word: str) -> bool:
    """Whether a content word names a thing a fact is about (a program, an environment, a day,
    a platform, a file or a variable), so that another name in its place says another fact:
    "ruff" and "mypy", "staging" and "production", "pyproject.toml" and "setup.cfg"."""
    return (word in KNOWN_PROGRAMS or word in VERSIONED_FAMILIES or word in _NAMES
            or _NAME_MARK.search(word) is not None)


def _subject(words: Words) -> str:
    """What a statement is about: its first content word that does not turn it around ("the
    integration tests hang …": integration; "the staging DB is wiped …": staging)."""
    return next((w for w in words if w not in _TURNING), "")


def _stem(word: str) -> str:
    """A word without its ending, so that two forms of it meet: datetime and datetimes, hang and
    hangs, cache and caches, run and running."""
    for _ in range(2):
        for ending in ("ing", "ed", "es", "s", "e"):
            if word.endswith(ending) and len(word) - len(ending) >= 3:
                word = word[:-len(ending)]
                break
    if len(word) > 3 and word[-1] == word[-2]:
        word = word[:-1]
    return word


# Words that say the opposite of one another, by their stems (`_forms`): a model's space puts
# many of them near ("enabled" and "disabled", "larger" and "smaller", "succeeds" and "fails",
# "fast" and "slow" reach the cut), and two surprises that differ by them say other things.
_OPPOSITES = tuple(tuple(pair.split(":")) for pair in """
    before:after first:last early:late earlier:later above:below over:under inside:outside
    inner:outer upper:lower top:bottom left:right start:stop start:end begin:end open:close
    open:closed add:remove create:delete accept:reject allow:deny allow:block allow:forbid pass:fail
    succeed:fail success:failure true:false up:down input:output read:write push:pull show:hide
    fast:slow quick:slow large:small big:small long:short high:low more:less more:fewer most:least
    many:few min:max minimum:maximum new:old hot:cold empty:full light:dark always:never all:none
    same:different public:private local:remote client:server sync:async static:dynamic
    explicit:implicit absolute:relative strict:loose lazy:eager online:offline manual:automatic
    within:beyond toward:away towards:away onto:off keep:drop keep:lose win:lose gain:lose
    present:missing present:absent hang:pass work:fail work:break found:missing
""".split())
# What turns a word into its opposite at its start: "enabled" and "disabled", "valid" and
# "invalid", "lowercase" and "uppercase", "include" and "exclude", "upload" and "download".
_TURNING_PREFIXES = frozenset("""
    un in im il ir dis non de en em a ab ex up down upper lower out mis anti
""".split()) | {""}
# Words written short, read in full when two are compared: "the settings" and "the config"
# are one ("settings" and "configuration" reach the cut).
_SHORT_FOR = {
    "config": "configuration", "conf": "configuration", "cfg": "configuration", "db": "database",
    "dbs": "databases", "repo": "repository", "repos": "repositories", "dir": "directory",
    "dirs": "directories", "env": "environment", "envs": "environments", "doc": "documentation",
    "docs": "documentation", "dep": "dependency", "deps": "dependencies", "creds": "credentials",
    "auth": "authentication", "arg": "argument", "args": "arguments", "param": "parameter",
    "params": "parameters", "perms": "permissions", "pkg": "package", "pkgs": "packages",
    "lib": "library", "libs": "libraries", "msg": "message", "msgs": "messages", "img": "image",
    "imgs": "images",
}


def _root(word: str) -> str:
    """A word's stem stemmed until it keeps still, so that every form of it meets: succeed,
    succeeds and succeeded; close and closed."""
    while (stem := _stem(word)) != word:
        word = stem
    return word


def _forms(word: str) -> set[str]:
    """The roots a word may be read by: its own, and that of the word it compares when it is
    a comparative or a superlative ("larger": large, "easiest": easy)."""
    forms = {_root(word)}
    for ending in ("er", "est"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            base = word[:-len(ending)]
            forms.add(_root(base[:-1] + "y" if base.endswith("i") else base))
    return forms


_OPPOSITE_STEMS: dict[str, set[str]] = {}
for _one, _other in _OPPOSITES:
    for _x in _forms(_one):
        for _y in _forms(_other):
            _OPPOSITE_STEMS.setdefault(_x, set()).add(_y)
            _OPPOSITE_STEMS.setdefault(_y, set()).add(_x)


def opposite(x: str, y: str) -> bool:
    """Whether two words say the opposite of one another: a known pair (`_OPPOSITES`, in any
    of their forms: "rejected" and "accepted", "larger" and "smaller"), or one word with
    another start that turns it ("enabled" and "disabled", "valid" and "invalid", "lowercase"
    and "uppercase")."""
    if x == y:
        return False
    if any(_OPPOSITE_STEMS.get(fx, set()) & _forms(y) for fx in _forms(x)):
        return True
    same_end = 0
    while same_end < min(len(x), len(y)) and x[-1 - same_end] == y[-1 - same_end]:
        same_end += 1
    return any(x[:len(x) - n] in _TURNING_PREFIXES and y[:len(y) - n] in _TURNING_PREFIXES
               for n in range(3, same_end + 1))


def said_again(a: Words, b: Words, alike: Alike) -> bool:
    """Whether a stated surprise is another said again (the rule the lessons and merge passes
    read, through `Sayings`):

    - a word one says whose opposite the other says (`opposite`: "hang" and "pass", "enabled"
      and "disabled", "before" and "after") makes two facts, however near their vectors;
    - when the words they do not share name other things on both sides (`is_name`: "ruff" and
      "mypy"; "staging" and "production") or the two are about other things (their first words,
      `_subject`: "the integration tests …", "the unit tests …"), one must say all the other
      says, in the same words or in words that mean the same: `say_alike`;
    - otherwise a rewording is no other fact when one says all the other says, its words read
      loosely: prepositions and particles aside ("between" and "across branches"), a turn on
      each side aside ("unless Docker is running", "when Docker is not running"; a turn on one
      side only is another fact), and a word meets one of the other's that means the same
      (`alike`, a short word read in full: "settings" and "config") or is another form of it
      (datetime, datetimes). A word of each that meets none of the other's makes two facts:
      "the tests hang …" and "the tests pass …", "docker hangs" and "docker crashes".
    One that says all the other says in the same words (`differing` is None) is always said
    again."""
    said = differing(a, b)
    if said is None:
        return True
    only_a, only_b = said
    if any(opposite(x, y) for x in only_a for y in only_b):
        return False

    def near(x: str, y: str) -> bool:
        x, y = _SHORT_FOR.get(x, x), _SHORT_FOR.get(y, y)
        return x == y or alike(x, y)

    if say_alike(a, b, near):
        return True
    if (any(map(is_name, only_a)) and any(map(is_name, only_b))) or (
            _subject(a) not in b and _subject(b) not in a):
        return False
    rest_a = [w for w in only_a if w not in _FRAME_WORDS]
    rest_b = [w for w in only_b if w not in _FRAME_WORDS]
    turned_a, turned_b = any(w in _TURNING for w in rest_a), any(w in _TURNING for w in rest_b)
    if turned_a != turned_b:
        return False  # "not shared between branches", "shared across branches"
    rest_a = [w for w in rest_a if w not in _TURNING]
    rest_b = [w for w in rest_b if w not in _TURNING]

    def meets(x: str, y: str) -> bool:
        return _stem(x) == _stem(y) or near(x, y)

    return (all(any(meets(x, y) for y in rest_b) for x in rest_a)
            or all(any(meets(x, y) for x in rest_a) for y in rest_b))


class Sayings:
    """Statements by their content words, numbered, and which two say alike (`said_again`,
    with `alike`), each pair read once: surprises in one frame ("I did not expect X to need
    Y") meet the same others again and again, and the pool of those waiting grows with every
    fact seen once."""

    def __init__(self, alike: Alike) -> None:
        self.alike = alike
        self._number: dict[Words, int] = {}
        self._words: list[Words] = []
        self._pairs: dict[tuple[int, int], bool] = {}

    def number(self, words: Words | None) -> int:
        """The statement's number; -1 for words not read (they meet anything)."""
        if words is None:
            return -1
        found = self._number.get(words)
        if found is None:
            found = self._number[words] = len(self._words)
            self._words.append(words)
        return found

    def words(self, n: int) -> Words:
        return self._words[n]

    def agree(self, a: int, b: int) -> bool:
        if a == b or a < 0 or b < 0:
            return True
        key = (a, b) if a < b else (b, a)
        found = self._pairs.get(key)
        if found is None:
            found = self._pairs[key] = said_again(self._words[a], self._words[b], self.alike)
        return found

    def agree_all(self, a: int, held: Iterable[int]) -> bool:
        return all(self.agree(a, b) for b in held)


def saying_apart(totals: np.ndarray, counts: Sequence[int], cut: float, changed: Sequence[bool],
                 said: Sequence[Sequence[Words]], sayings: Sayings
                 ) -> tuple[list[tuple[int, int]], Callable[[list[int], list[int]], bool]]:
    """For the merge pass (`merge_groups`) over surprise lessons (`said`: each lesson's
    sources' content words): the pairs (i < j) touching a changed lesson and close enough to
    merge (average linkage at the cut) one of whose statements says something another of the
    other's does not mean (kept apart before merging starts), and whether two clusters, by
    their lessons, may merge (a cluster's linkage to another may reach the cut when no pair
    of theirs did)."""
    numbers = [[sayings.number(words) for words in held] for held in said]

    def may_join(one: list[int], other: list[int]) -> bool:
        return all(sayings.agree(a, b) for i in one for j in other for a in numbers[i] for b in numbers[j])

    t = totals.astype(np.float64)
    c = np.asarray(counts, dtype=np.float64)
    hot = np.asarray(changed, dtype=bool)
    close = np.triu((t @ t.T) / np.outer(c, c) >= cut, k=1) & (hot[:, None] | hot[None, :])
    apart = [(int(i), int(j)) for i, j in zip(*np.nonzero(close)) if not may_join([int(i)], [int(j)])]
    return apart, may_join


@dataclass
class Group:
    """A lesson being built or extended: its members (episode ids) and the sum of their vectors."""

    lesson_id: str | None  # None for a lesson made in this run
    members: list[str]
    total: np.ndarray
    klass: str = ""
    added: list[str] = field(default_factory=list)  # members added in this run
    stand_in: int = 0  # 1 when the lesson's own vector (in `total`) stands for its gone sources
    stance: Stance | None = None  # which way its lesson's words point (contradiction.stance), if known
    topic: Topic = NO_TOPIC  # the programs it is about (`topic_of`, `joined`)
    # Every way it points: `stance` and each member's (contradiction.lesson_stances), each once.
    stances: list[Stance] = field(default_factory=list)
    # The content words of its members (surprises: `content_words`), each set once.
    words: list[Words] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.stance is not None and self.stance not in self.stances:
            self.stances.insert(0, self.stance)

    @property
    def n(self) -> int:
        return len(self.members) + self.stand_in

    def points(self, pointed: Stance | None) -> None:
        """A member pointing this way joined."""
        if pointed is not None and pointed not in self.stances:
            self.stances.append(pointed)

    def says(self, words: Words | None) -> None:
        """A member saying these content words joined."""
        if words is not None and words not in self.words:
            self.words.append(words)


@dataclass
class Outcome:
    joined: int = 0
    created: int = 0
    pending: int = 0


def consolidate_kind(
    kind: str,
    groups: list[Group],
    pool_ids: list[str],
    pool_vecs: np.ndarray,
    pool_classes: list[str],
    new_ids: list[str],
    new_vecs: np.ndarray,
    new_classes: list[str],
    cut: float,
    pool_stances: Sequence[Stance | None] | None = None,
    new_stances: Sequence[Stance | None] | None = None,
    pool_topics: Sequence[Topic] | None = None,
    new_topics: Sequence[Topic] | None = None,
    pool_words: Sequence[Words | None] | None = None,
    new_words: Sequence[Words | None] | None = None,
    sayings: Sayings | None = None,
) -> Generator[int, None, Outcome]:
    """Add the new episodes (time order) to `groups`, in place; yields how many are done.
    Episodes meet only their own class (errors: `error_class`); the programs each is about
    (`topic_of`; none: every episode that is no correction in words) keep it from joining a
    group, or clustering with a pending episode, about other programs (`same_programs`; a
    group's topic: `joined`).
    The stances (contradiction.stance of each episode's words; None: unknown) keep an episode
    from joining a group, or clustering with pending episodes, any member of which points the
    other way: every member's direction is the group's (`Group.stances`), so "stop using pnpm"
    never joins "stop using npm" once "use pnpm not npm" has joined it.
    The words (`content_words`; None: not read, as for every kind but surprises) keep an
    episode from joining a group, or clustering with pending episodes, any member of which
    says something else (`say_alike`, read by `sayings`)."""
    out = Outcome()
    dim = new_vecs.shape[1] if new_vecs.size else (pool_vecs.shape[1] if pool_vecs.size else 0)
    if not new_ids:
        out.pending = len(pool_ids)  # still waiting, though nothing new came to meet them
        return out
    repeat = kind in MUST_REPEAT
    # The pool: pending episodes (errors, surprises) that have not yet met their like.
    p_ids = list(pool_ids)
    p_cls = list(pool_classes)
    p_vec = pool_vecs.astype(np.float32, copy=False).reshape(-1, dim)
    p_alive = np.ones(len(p_ids), dtype=bool)
    p_st: list[Stance | None] = list(pool_stances) if pool_stances is not None else [None] * len(p_ids)
    new_st: Sequence[Stance | None] = new_stances if new_stances is not None else [None] * len(new_ids)
    p_nm: list[Topic] = list(pool_topics) if pool_topics is not None else [NO_TOPIC] * len(p_ids)
    new_nm: Sequence[Topic] = new_topics if new_topics is not None else [NO_TOPIC] * len(new_ids)
    # What each says, by number (`Sayings`; -1: not read), when words are read (surprises).
    p_sid = np.array([sayings.number(w) for w in pool_words] if sayings and pool_words is not None
                     else [-1] * len(p_ids), dtype=np.int64)
    new_sid = [sayings.number(w) for w in new_words] if sayings and new_words is not None else [-1] * len(new_ids)
    new_wd: Sequence[Words | None] = new_words if new_words is not None else [None] * len(new_ids)
    g_said = [[sayings.number(w) for w in g.words] if sayings else [] for g in groups]
    # Groups by their stances, the only ones an episode with a stance may contradict.
    polar = Directions()
    for g, group in enumerate(groups):
        for pointed in group.stances:
            polar.add(g, pointed)
    use_class = kind == "error"
    codes: dict[str, int] = {}

    for start in range(0, len(new_ids), BLOCK):
        X = new_vecs[start:start + BLOCK]
        ids = new_ids[start:start + BLOCK]
        cls = new_classes[start:start + BLOCK]
        sts = new_st[start:start + BLOCK]
        nms = new_nm[start:start + BLOCK]
        wds = new_wd[start:start + BLOCK]
        sds = new_sid[start:start + BLOCK]
        B = len(ids)
        L0 = len(groups)
        S = np.stack([g.total for g in groups]).astype(np.float32) if L0 else np.zeros((0, dim), np.float32)
        A = X @ S.T if L0 else np.zeros((B, 0), np.float32)              # block x lesson sums
        C = X @ p_vec.T if len(p_ids) else np.zeros((B, 0), np.float32)  # block x old pool
        W = X @ X.T                                                       # block x block
        # Members added inside this block, replayed into later rows and into the sums at the
        # end: (group, block row) and (group, old-pool row).
        jg_b = np.empty(B, dtype=np.int64)
        jj_b = np.empty(B, dtype=np.int64)
        jg_p = np.empty(len(p_ids), dtype=np.int64)
        jq_p = np.empty(len(p_ids), dtype=np.int64)
        nb = npool = 0
        # Per-group counts and class codes, with room for the groups this block may create.
        counts = np.zeros(L0 + B, dtype=np.float32)
        counts[:L0] = [g.n for g in groups]
        g_cls = np.full(L0 + B, -1, dtype=np.int64)
        g_cls[:L0] = [codes.setdefault(g.klass, len(codes)) for g in groups]
        L = L0
        block_pool: list[int] = []  # block rows waiting in the pool
        for i in range(B):
            dots = np.zeros(L, dtype=np.float32)
            dots[:L0] = A[i]
            if nb:
                dots += np.bincount(jg_b[:nb], weights=W[i, jj_b[:nb]], minlength=L)[:L]
            if npool:
                dots += np.bincount(jg_p[:npool], weights=C[i, jq_p[:npool]], minlength=L)[:L]
            means = dots / np.maximum(counts[:L], 1.0)
            if use_class and L:
                means = np.where(g_cls[:L] == codes.setdefault(cls[i], len(codes)), means, -1.0)
            for g in polar.against(sts[i]):
                means[g] = -1.0
            best = int(np.argmax(means)) if L else -1
            if best >= 0 and means[best] >= cut and not _fits(best, nms[i], sds[i], groups, g_said, sayings):
                best = _best_fitting(means, cut, nms[i], sds[i], groups, g_said, sayings)
            if best >= 0 and means[best] >= cut:
                group = groups[best]
                group.topic = joined(group.topic, nms[i])
                if sts[i] is not None and sts[i] not in group.stances:
                    # Every member's direction is the group's: what points against any never joins.
                    group.points(sts[i])
                    polar.add(best, sts[i])
                if sds[i] >= 0 and sds[i] not in g_said[best]:
                    g_said[best].append(sds[i])
                    group.says(wds[i])
                group.members.append(ids[i])
                group.added.append(ids[i])
                counts[best] += 1
                jg_b[nb], jj_b[nb] = best, i
                nb += 1
                out.joined += 1
                continue
            pointed = [sts[i]] if sts[i] is not None else []
            said = [sds[i]] if sds[i] >= 0 else []
            named = nms[i]
            if not repeat:
                members = [ids[i]]
                old_hits: list[int] = []
                blk_hits: list[int] = [i]
            else:
                # Errors and surprises: cluster with the pending episodes like this one.
                near = np.nonzero(p_alive & (C[i] >= cut))[0] if len(p_ids) else np.zeros(0, np.int64)
                if sayings is not None and sds[i] >= 0 and near.size:
                    # Those saying something else, by what they say (many say the same).
                    told = np.unique(p_sid[near])
                    near = near[np.isin(p_sid[near], [n for n in told.tolist() if sayings.agree(sds[i], n)])]
                old_hits = near.tolist()
                blk_hits = [j for j in block_pool if W[i, j] >= cut]
                if use_class:
                    old_hits = [q for q in old_hits if p_cls[q] == cls[i]]
                    blk_hits = [j for j in blk_hits if cls[j] == cls[i]]
                # Those that agree with it and with each other taken before them: pointing no
                # other way, about its programs, saying the same.
                old_hits, named = _joining(old_hits, p_st, p_nm, p_sid, pointed, named, said, sayings)
                blk_hits, named = _joining(blk_hits, sts, nms, sds, pointed, named, said, sayings)
                if not old_hits and not blk_hits:
                    block_pool.append(i)
                    continue
                blk_hits = blk_hits + [i]
                members = [p_ids[q] for q in old_hits] + [ids[j] for j in blk_hits]
            groups.append(Group(None, members, np.zeros(dim, np.float32), cls[i], list(members), topic=named,
                                stances=pointed, words=[sayings.words(n) for n in said] if sayings else []))
            g_said.append(said)
            gi = L
            for one in pointed:
                polar.add(gi, one)
            counts[gi] = len(members)
            g_cls[gi] = codes.setdefault(cls[i], len(codes))
            L += 1
            for q in old_hits:
                p_alive[q] = False
                jg_p[npool], jq_p[npool] = gi, q
                npool += 1
            for j in blk_hits:
                if j in block_pool:
                    block_pool.remove(j)
                jg_b[nb], jj_b[nb] = gi, j
                nb += 1
            out.created += 1
        # Fold this block's members into the sums; its pending rows join the pool.
        for g, j in zip(jg_b[:nb].tolist(), jj_b[:nb].tolist()):
            groups[g].total = groups[g].total + X[j]
        for g, q in zip(jg_p[:npool].tolist(), jq_p[:npool].tolist()):
            groups[g].total = groups[g].total + p_vec[q]
        if block_pool:
            p_ids += [ids[j] for j in block_pool]
            p_cls += [cls[j] for j in block_pool]
            p_st += [sts[j] for j in block_pool]
            p_nm += [nms[j] for j in block_pool]
            p_sid = np.concatenate([p_sid, np.array([sds[j] for j in block_pool], dtype=np.int64)])
            p_vec = np.vstack([p_vec, X[block_pool]]) if len(p_vec) else X[block_pool].copy()
            p_alive = np.concatenate([p_alive, np.ones(len(block_pool), dtype=bool)])
        if (~p_alive).sum() > 1024:
            p_ids = [p for p, a in zip(p_ids, p_alive) if a]
            p_cls = [c for c, a in zip(p_cls, p_alive) if a]
            p_st = [t for t, a in zip(p_st, p_alive) if a]
            p_nm = [m for m, a in zip(p_nm, p_alive) if a]
            p_sid = p_sid[p_alive]
            p_vec = p_vec[p_alive]
            p_alive = np.ones(len(p_ids), dtype=bool)
        yield min(start + BLOCK, len(new_ids))
    out.pending = int(p_alive.sum())
    return out


def _fits(g: int, topic: Topic, said: int, groups: list[Group], g_said: list[list[int]],
          sayings: Sayings | None) -> bool:
    """Whether an episode may join a group its vector is close enough to: about the same
    programs (`same_programs`) and saying what each member says (`say_alike`; always when
    words are not read)."""
    return same_programs(topic, groups[g].topic) and (sayings is None or sayings.agree_all(said, g_said[g]))


def _joining(hits: list[int], stances: Sequence[Stance | None], topics: Sequence[Topic],
             sids: Sequence[int] | np.ndarray, pointed: list[Stance], topic: Topic, said: list[int],
             sayings: Sayings | None) -> tuple[list[int], Topic]:
    """The hits (in order) that may cluster with a new episode and the hits kept before them:
    pointing against none of their directions (`pointed`), about the programs the cluster is
    about (`same_programs`), saying what each says (`said`, by number). `pointed` and `said`
    grow, in place, by each one kept; returns those kept and the cluster's topic after them
    (`joined`)."""
    kept = []
    for h in hits:
        st, sid = stances[h], int(sids[h])
        if st is not None and any(contradicts(p, st) for p in pointed):
            continue
        if not same_programs(topic, topics[h]) or (sayings is not None and not sayings.agree_all(sid, said)):
            continue
        topic = joined(topic, topics[h])
        if st is not None and st not in pointed:
            pointed.append(st)
        if sid >= 0 and sid not in said:
            said.append(sid)
        kept.append(h)
    return kept, topic


def _best_fitting(means: np.ndarray, cut: float, topic: Topic, said: int, groups: list[Group],
                  g_said: list[list[int]], sayings: Sayings | None) -> int:
    """The group with the highest mean (ties: the first) of those at the cut or above that an
    episode may join (`_fits`); -1 when none is."""
    at_cut = np.nonzero(means >= cut)[0]
    for g in at_cut[np.argsort(-means[at_cut], kind="stable")].tolist():
        if _fits(g, topic, said, groups, g_said, sayings):
            return g
    return -1


def medoid(vecs: np.ndarray) -> int:
    """The row closest to the group's mean direction (ties: the earliest)."""
    if len(vecs) <= 2:
        return 0
    mean = vecs.sum(axis=0)
    return int(np.argmax(vecs @ mean))


def merge_groups(
    totals: np.ndarray, counts: Sequence[int], cut: float, changed: Sequence[bool],
    classes: Sequence[str] | None = None, apart: Sequence[tuple[int, int]] = (),
    topics: Sequence[Topic] | None = None, may_join: Callable[[list[int], list[int]], bool] | None = None,
) -> list[list[int]]:
    """Agglomerate groups whose average linkage is >= cut; only pairs touching a changed group
    are considered (unchanged pairs were already below the cut). Groups of different
    `classes`, the pairs in `apart` (lessons that contradict each other), clusters about
    other programs (`topics`: each group's; `same_programs` of the two clusters' topics, a
    cluster's topic being `joined` in index order), and two clusters `may_join` refuses (given
    the groups of each: surprises saying other things) are never put in one cluster, however
    close. Returns clusters of indices (each sorted, singletons left out)."""
    n = len(counts)
    if n < 2 or not any(changed):
        return []
    t = totals.astype(np.float64).copy()
    c = np.asarray(counts, dtype=np.float64)
    alive = np.ones(n, dtype=bool)
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    hot = np.asarray(changed, dtype=bool)
    cls = np.asarray(list(classes)) if classes is not None else None
    # Each cluster's topic, by its number among the distinct topics; which of those meet
    # which (`same_programs`), a row read when a cluster with that topic is first looked at.
    distinct = list(dict.fromkeys(topics)) if topics is not None else [NO_TOPIC]
    number = {topic: k for k, topic in enumerate(distinct)}
    about = np.array([number[topic] for topic in topics] if topics is not None else [0] * n, dtype=np.int64)
    meets: dict[int, np.ndarray] = {}
    # Which clusters may not join which (by the index that stands for each cluster).
    kept_apart: dict[int, set[int]] = {}
    for a, b in apart:
        kept_apart.setdefault(a, set()).add(b)
        kept_apart.setdefault(b, set()).add(a)
    while True:
        idx = np.nonzero(alive & hot)[0]
        if not idx.size:
            break
        link = (t[idx] @ t.T) / np.outer(c[idx], c)
        link[:, ~alive] = -1.0
        if cls is not None:
            link[cls[idx][:, None] != cls[None, :]] = -1.0
        link[np.arange(len(idx)), idx] = -1.0
        for r, i in enumerate(idx.tolist()):
            if i in kept_apart:
                link[r, list(kept_apart[i])] = -1.0
        if len(distinct) > 1:
            for k in set(about[idx].tolist()) - meets.keys():
                meets[k] = np.array([same_programs(distinct[k], other) for other in distinct], dtype=bool)
            link[~np.stack([meets[k] for k in about[idx].tolist()])[:, about]] = -1.0
        r, col = np.unravel_index(int(np.argmax(link)), link.shape)
        if link[r, col] < cut:
            break
        a, b = sorted((int(idx[r]), int(col)))
        if may_join is not None and not may_join(members[a], members[b]):
            # Kept apart from now on: a cluster that grows only holds more that may refuse.
            kept_apart.setdefault(a, set()).add(b)
            kept_apart.setdefault(b, set()).add(a)
            continue
        t[a] += t[b]
        c[a] += c[b]
        alive[b] = False
        members[a] += members.pop(b)
        topic = joined(distinct[about[a]], distinct[about[b]])
        if topic not in number:  # names in passing added up: a topic no cluster had
            number[topic] = len(distinct)
            distinct.append(topic)
            meets.clear()  # rows are as long as `distinct`: read again
        about[a] = number[topic]
        hot[a] = True
        if b in kept_apart:  # the cluster a now holds b's members: it is kept from b's others
            others = kept_apart.pop(b)
            kept_apart.setdefault(a, set()).update(others)
            for o in others:
                kept_apart[o].discard(b)
                kept_apart[o].add(a)
    return [sorted(m) for m in members.values() if len(m) > 1]


def as_matrix(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim).astype(np.float32)
