"""The block replay in consolidate.py decides exactly as one-episode-at-a-time would."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import consolidate
from remem.engine.contradiction import contradicts, stance


def _vectors(seed: int, n: int, dim: int = 12, centres: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, dim))
    x = c[rng.integers(0, centres, n)] + 0.45 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _run(kind: str, block: int, vecs: np.ndarray, classes: list[str], pool: int,
         monkeypatch: pytest.MonkeyPatch) -> tuple[list[list[str]], tuple[int, int, int]]:
    monkeypatch.setattr(consolidate, "BLOCK", block)
    ids = [f"e{i}" for i in range(len(vecs))]
    # One existing lesson over the first two episodes, a pool of the next `pool`, the rest new.
    groups = [consolidate.Group("L", ids[:2], vecs[:2].sum(axis=0), classes[0])]
    p = slice(2, 2 + pool)
    n = slice(2 + pool, None)
    gen = consolidate.consolidate_kind(kind, groups, ids[p], vecs[p], classes[p],
                                       ids[n], vecs[n], classes[n], 0.55)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            out = stop.value
            break
    return [g.members for g in groups], (out.joined, out.created, out.pending)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 90), pool=st.integers(0, 10),
       kind=st.sampled_from(["correction", "error", "surprise"]), block=st.integers(2, 40))
def test_blocks_decide_as_one_at_a_time(seed, n, pool, kind, block):
    vecs = _vectors(seed, n + pool + 2)
    classes = [("a", "b")[i % 2] if kind == "error" else "" for i in range(len(vecs))]
    with pytest.MonkeyPatch.context() as mp:
        one = _run(kind, 1, vecs, classes, pool, mp)
        many = _run(kind, block, vecs, classes, pool, mp)
    assert many == one


def test_corrections_make_lessons_at_once_and_errors_wait(monkeypatch):
    vecs = _vectors(1, 8, centres=1)  # all alike
    out = _run("correction", 512, vecs, [""] * 8, 0, monkeypatch)
    assert out[1] == (6, 0, 0)  # all join the existing lesson
    far = np.eye(12, dtype=np.float32)[:6]  # orthogonal: nothing alike
    groups: list[consolidate.Group] = []
    gen = consolidate.consolidate_kind("error", groups, [], np.zeros((0, 12), np.float32), [],
                                       [f"x{i}" for i in range(6)], far, [""] * 6, 0.55)
    for _ in gen:
        pass
    assert groups == []


def test_average_linkage_merge_only_touches_changed_groups():
    t = np.eye(3, dtype=np.float32)
    t = np.vstack([t[0], t[0], t[1]])
    assert consolidate.merge_groups(t, [1, 1, 1], 0.9, [False, False, False]) == []
    assert consolidate.merge_groups(t, [1, 1, 1], 0.9, [True, False, False]) == [[0, 1]]
    assert consolidate.merge_groups(t, [1, 1, 1], 0.9, [True, False, False], classes=["a", "b", "a"]) == []


UV, PIP = stance("use uv not pip"), stance("use pip not uv")


def _run_pointed(kind: str, block: int, vecs: np.ndarray, pointed: list, pool: int,
                 monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    monkeypatch.setattr(consolidate, "BLOCK", block)
    ids = [f"e{i}" for i in range(len(vecs))]
    groups = [consolidate.Group("L", ids[:2], vecs[:2].sum(axis=0), "", stance=pointed[0])]
    p, n = slice(2, 2 + pool), slice(2 + pool, None)
    for _ in consolidate.consolidate_kind(kind, groups, ids[p], vecs[p], [""] * pool, ids[n], vecs[n],
                                          [""] * len(ids[n]), 0.55, pointed[p], pointed[n]):
        pass
    return [g.members for g in groups]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 60), pool=st.integers(0, 10),
       kind=st.sampled_from(["correction", "error"]), block=st.integers(2, 40))
def test_corrections_pointing_opposite_ways_never_share_a_group_in_blocks_or_one_at_a_time(seed, n, pool, kind, block):
    vecs = _vectors(seed, n + pool + 2, centres=2)  # few topics: most episodes are alike
    rng = np.random.default_rng(seed)
    pointed = [(None, UV, PIP)[k] for k in rng.integers(0, 3, len(vecs))]
    with pytest.MonkeyPatch.context() as mp:
        one = _run_pointed(kind, 1, vecs, pointed, pool, mp)
        many = _run_pointed(kind, block, vecs, pointed, pool, mp)
    assert many == one
    of = {f"e{i}": s for i, s in enumerate(pointed)}
    for members in one:
        taken = [of[m] for m in members if m not in ("e0", "e1")]  # the lesson's own sources aside
        if members[:2] == ["e0", "e1"]:
            taken.append(pointed[0])  # the lesson's direction
        assert not any(contradicts(a, b) for a in taken for b in taken), members
