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
not pip" is about, and close to it, but it takes it back.

Episodes are taken in time order and in blocks: the similarities a block needs (block x
lessons, block x pool, block x block) are three matrix products, and the greedy decisions
inside the block are replayed exactly from them. All vectors are unit length, so the mean
cosine to a lesson's sources is `v · sum(sources) / n`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Generator, Sequence

import numpy as np

from remem.engine.contradiction import Directions, Stance, as_a_whole, contradicts, stance
from remem.engine.programs import CLAUSE, CODE_SPAN, EDGE, program_base, program_names

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
    or the first member preferring a program a group preferring none — then that member's (as a
    group's stance is its first member's with one). While neither is about a program, the
    programs named in passing add up and a member naming none makes the group `bare` (it then
    takes no correction about a program): "commit messages" joins "git commit messages", and
    "svn commit messages" still meets neither. So a lesson never holds corrections preferring
    different programs, nor one about a program and one naming none, nor ones naming different
    programs in passing, whatever order they came in."""
    if (member.prefers and not group.prefers) or (member.about and not group.about):
        return member
    if not group.about and not member.about:
        return Topic(names=group.names | member.names, bare=group.bare or member.bare)
    return group


@dataclass
class Group:
    """A lesson being built or extended: its members (episode ids) and the sum of their vectors."""

    lesson_id: str | None  # None for a lesson made in this run
    members: list[str]
    total: np.ndarray
    klass: str = ""
    added: list[str] = field(default_factory=list)  # members added in this run
    stand_in: int = 0  # 1 when the lesson's own vector (in `total`) stands for its gone sources
    stance: Stance | None = None  # which way its lesson points (contradiction.stance), if known
    topic: Topic = NO_TOPIC  # the programs it is about (`topic_of`, `joined`)

    @property
    def n(self) -> int:
        return len(self.members) + self.stand_in


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
) -> Generator[int, None, Outcome]:
    """Add the new episodes (time order) to `groups`, in place; yields how many are done.
    Episodes meet only their own class (errors: `error_class`); the programs each is about
    (`topic_of`; none: every episode that is no correction in words) keep it from joining a
    group, or clustering with a pending episode, about other programs (`same_programs`; a
    group's topic: `joined`).
    The stances (contradiction.stance of each episode's words; None: unknown) keep an episode
    from joining a group, or clustering with a pending episode, that points the other way; a
    group without a stance takes that of its first member with one."""
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
    # Groups by their stance, the only ones an episode with a stance may contradict.
    polar = Directions()
    for g, group in enumerate(groups):
        polar.add(g, group.stance)
    use_class = kind == "error"
    codes: dict[str, int] = {}

    for start in range(0, len(new_ids), BLOCK):
        X = new_vecs[start:start + BLOCK]
        ids = new_ids[start:start + BLOCK]
        cls = new_classes[start:start + BLOCK]
        sts = new_st[start:start + BLOCK]
        nms = new_nm[start:start + BLOCK]
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
            if best >= 0 and means[best] >= cut and not same_programs(nms[i], groups[best].topic):
                best = _best_about(means, cut, nms[i], groups)
            if best >= 0 and means[best] >= cut:
                groups[best].topic = joined(groups[best].topic, nms[i])
                if groups[best].stance is None and sts[i] is not None:
                    # Its first member with a direction sets the group's: the other way never joins.
                    groups[best].stance = sts[i]
                    polar.add(best, sts[i])
                groups[best].members.append(ids[i])
                groups[best].added.append(ids[i])
                counts[best] += 1
                jg_b[nb], jj_b[nb] = best, i
                nb += 1
                out.joined += 1
                continue
            if not repeat:
                members = [ids[i]]
                old_hits: list[int] = []
                blk_hits: list[int] = [i]
                pointed = sts[i]
                named = nms[i]
            else:
                # Errors and surprises: cluster with the pending episodes like this one.
                old_hits = [int(q) for q in np.nonzero(p_alive & (C[i] >= cut))[0]] if len(p_ids) else []
                blk_hits = [j for j in block_pool if W[i, j] >= cut]
                if use_class:
                    old_hits = [q for q in old_hits if p_cls[q] == cls[i]]
                    blk_hits = [j for j in blk_hits if cls[j] == cls[i]]
                # Those pointing the way it points, or the first direction among them.
                old_hits, pointed = _agreeing(sts[i], old_hits, p_st)
                blk_hits, pointed = _agreeing(pointed, blk_hits, sts)
                old_hits, named = _about(nms[i], old_hits, p_nm)
                blk_hits, named = _about(named, blk_hits, nms)
                if not old_hits and not blk_hits:
                    block_pool.append(i)
                    continue
                blk_hits = blk_hits + [i]
                members = [p_ids[q] for q in old_hits] + [ids[j] for j in blk_hits]
            groups.append(Group(None, members, np.zeros(dim, np.float32), cls[i], list(members), stance=pointed,
                                topic=named))
            gi = L
            polar.add(gi, pointed)
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
            p_vec = np.vstack([p_vec, X[block_pool]]) if len(p_vec) else X[block_pool].copy()
            p_alive = np.concatenate([p_alive, np.ones(len(block_pool), dtype=bool)])
        if (~p_alive).sum() > 1024:
            p_ids = [p for p, a in zip(p_ids, p_alive) if a]
            p_cls = [c for c, a in zip(p_cls, p_alive) if a]
            p_st = [t for t, a in zip(p_st, p_alive) if a]
            p_nm = [m for m, a in zip(p_nm, p_alive) if a]
            p_vec = p_vec[p_alive]
            p_alive = np.ones(len(p_ids), dtype=bool)
        yield min(start + BLOCK, len(new_ids))
    out.pending = int(p_alive.sum())
    return out


def _agreeing(pointed: Stance | None, hits: list[int], stances: Sequence[Stance | None]
              ) -> tuple[list[int], Stance | None]:
    """The hits (in order) that do not point against the cluster's direction, and that
    direction after them: `pointed`, or the first one among the hits when it had none."""
    kept = []
    for h in hits:
        if contradicts(pointed, stances[h]):
            continue
        if pointed is None:
            pointed = stances[h]
        kept.append(h)
    return kept, pointed


def _best_about(means: np.ndarray, cut: float, topic: Topic, groups: list[Group]) -> int:
    """The group with the highest mean (ties: the first) of those at the cut or above that are
    about the programs `topic` is (`same_programs`); -1 when none is."""
    at_cut = np.nonzero(means >= cut)[0]
    for g in at_cut[np.argsort(-means[at_cut], kind="stable")].tolist():
        if same_programs(topic, groups[g].topic):
            return g
    return -1


def _about(topic: Topic, hits: list[int], hit_topics: Sequence[Topic]) -> tuple[list[int], Topic]:
    """The hits (in order) about the programs the cluster is about (`same_programs`), and the
    cluster's topic after them (`joined`)."""
    kept = []
    for h in hits:
        if same_programs(topic, hit_topics[h]):
            topic = joined(topic, hit_topics[h])
            kept.append(h)
    return kept, topic


def medoid(vecs: np.ndarray) -> int:
    """The row closest to the group's mean direction (ties: the earliest)."""
    if len(vecs) <= 2:
        return 0
    mean = vecs.sum(axis=0)
    return int(np.argmax(vecs @ mean))


def merge_groups(
    totals: np.ndarray, counts: Sequence[int], cut: float, changed: Sequence[bool],
    classes: Sequence[str] | None = None, apart: Sequence[tuple[int, int]] = (),
    topics: Sequence[Topic] | None = None,
) -> list[list[int]]:
    """Agglomerate groups whose average linkage is >= cut; only pairs touching a changed group
    are considered (unchanged pairs were already below the cut). Groups of different
    `classes`, the pairs in `apart` (lessons that contradict each other), and clusters about
    other programs (`topics`: each group's; `same_programs` of the two clusters' topics, a
    cluster's topic being `joined` in index order) are never put in one cluster, however close.
    Returns clusters of indices (each sorted, singletons left out)."""
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
