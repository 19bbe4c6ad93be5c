"""Typed connections: explicit edges, auto-discovery (capped, thresholded, one space), traversal."""

from __future__ import annotations

import math

import numpy as np
import pytest

from remem.engine import clock, graph, lifecycle
from remem.engine.embed import to_blob
from remem.engine.memories import remember
from remem.errors import NotFound
from tests.conftest import run_remem

DIM = 16
SPACE = "test-space"


def vec_at(cos: float, axis: int) -> np.ndarray:
    """A unit vector whose cosine with e0 is exactly `cos` (tilted towards `axis`)."""
    v = np.zeros(DIM, dtype=np.float32)
    v[0] = cos
    v[axis] = math.sqrt(max(0.0, 1 - cos * cos))
    return v


def put(store, mid: str, vector: np.ndarray, space: str = SPACE, **extra) -> str:
    store.put_episodes([{"id": mid, "kind": "note", "title": mid, "gist": mid, "space": space,
                         "embedding": to_blob(vector), **extra}])
    return mid


def chain(store) -> dict[str, str]:
    """a -caused_by-> b -caused_by-> c -part_of-> d; a -references-> e; d -related_to- a (cycle)."""
    ids = {n: put(store, n, vec_at(0.0, i + 1)) for i, n in enumerate("abcdef")}
    graph.connect(store, "a", "b", "caused_by")
    graph.connect(store, "b", "c", "caused_by")
    graph.connect(store, "c", "d", "part_of")
    graph.connect(store, "a", "e", "references")
    graph.connect(store, "d", "a", "related_to")
    graph.connect(store, "f", "e", "supports")  # points at e; directed, so not walked from e
    return ids


def level_ids(levels) -> list[list[str]]:
    return [sorted(n["id"] for n in level) for level in levels]


def test_traversal_by_depth_breadth_first_without_revisits(store):
    chain(store)
    # d -related_to- a is symmetric, so it is walked from a too.
    assert level_ids(graph.traverse(store, "a", depth=1)) == [["a"], ["b", "d", "e"]]
    assert level_ids(graph.traverse(store, "a", depth=2)) == [["a"], ["b", "d", "e"], ["c"]]
    assert level_ids(graph.traverse(store, "a", depth=3)) == [["a"], ["b", "d", "e"], ["c"]]
    levels = graph.traverse(store, "a", depth=3, types=["caused_by", "part_of"])
    assert level_ids(levels) == [["a"], ["b"], ["c"], ["d"]]
    assert levels[3][0]["via"] == {"from": "c", "type": "part_of", "weight": 1.0,
                                   "origin": "explicit", "direction": "out"}
    assert level_ids(graph.traverse(store, "a", depth=3, types=["caused_by"])) == [["a"], ["b"], ["c"]]
    assert level_ids(graph.traverse(store, "e", depth=3)) == [["e"]]  # only incoming directed edges
    assert level_ids(graph.traverse(store, "b", depth=2, types=["related_to"])) == [["b"]]


def test_traverse_refuses_bad_depth_type_and_id(store):
    chain(store)
    with pytest.raises(ValueError):
        graph.traverse(store, "a", depth=0)
    with pytest.raises(ValueError):
        graph.traverse(store, "a", types=["loves"])
    with pytest.raises(NotFound):
        graph.traverse(store, "zzzz-none")


def test_connect_validates_and_never_doubles_an_edge(store):
    put(store, "m1", vec_at(0.0, 1))
    put(store, "m2", vec_at(0.0, 2))
    first = graph.connect(store, "m1", "m2", "supports", weight=0.5)
    assert first["new"] is True and first["origin"] == "explicit" and first["weight"] == 0.5
    assert graph.connect(store, "m1", "m2", "supports")["new"] is False
    assert graph.connect(store, "m2", "m1", "supports")["new"] is True  # directed: the other way is new
    graph.connect(store, "m1", "m2", "similar_to")
    assert graph.connect(store, "m2", "m1", "similar_to")["new"] is False  # symmetric: same edge
    assert store.scalar("SELECT count(*) FROM connections") == 3
    with pytest.raises(ValueError):
        graph.connect(store, "m1", "m2", "loves")
    with pytest.raises(ValueError):
        graph.connect(store, "m1", "m1", "related_to")
    with pytest.raises(NotFound):
        graph.connect(store, "m1", "nowhere-at-all", "related_to")
    with pytest.raises(ValueError):
        graph.connect(store, "m1", "m2", "related_to", origin="magic")
    directions = sorted((e["direction"], e["type"]) for e in graph.edges_of(store, "m1"))
    assert directions == [("in", "supports"), ("out", "similar_to"), ("out", "supports")]


def test_auto_discovery_is_capped_and_thresholded(store):
    from remem import config

    cfg = config.load()
    assert cfg["graph"]["auto_threshold"] == 0.7 and cfg["graph"]["auto_top_k"] == 5
    q = put(store, "query", vec_at(1.0, 1))
    near = {f"near{i}": c for i, c in enumerate([0.97, 0.93, 0.9, 0.85, 0.8, 0.76, 0.72, 0.71], start=2)}
    for i, (mid, cos) in enumerate(near.items(), start=2):
        put(store, mid, vec_at(cos, i))
    put(store, "below", vec_at(0.69, 12))
    put(store, "far", vec_at(0.1, 13))
    put(store, "other-space", vec_at(1.0, 1), space="another-model")  # identical vector, other space
    put(store, "hidden", vec_at(0.99, 14), archived=1)
    made = graph.discover_for(store, "query")
    assert sorted(e["dst"] for e in made) == ["near2", "near3", "near4", "near5", "near6"]
    assert all(e["type"] == "similar_to" and e["origin"] == "auto" and e["weight"] >= 0.7 for e in made)
    assert graph.discover_for(store, "query") == []  # capped: nothing more, nothing doubled
    assert store.scalar("SELECT count(*) FROM connections WHERE src = 'query'") == 5
    # The task goes over everything: each memory originates at most 5 auto edges, all >= 0.7.
    result = graph.discover_all(store)
    assert result["memories"] == 12
    per_src = store.rows("SELECT src, count(*) AS n, min(weight) AS w FROM connections GROUP BY src")
    assert all(r["n"] <= 5 and r["w"] >= 0.7 for r in per_src)
    touched = {r["src"] for r in per_src} | {r["dst"] for r in store.rows("SELECT dst FROM connections")}
    assert not touched & {"far", "other-space", "hidden"}
    assert store.scalar("SELECT count(*) FROM connections WHERE (src = 'query' AND dst = 'below') "
                        "OR (dst = 'query' AND src = 'below')") == 0


def test_discover_all_only_looks_at_memories_created_since(store):
    with clock.frozen("2026-05-01T00:00:00+00:00"):
        put(store, "old1", vec_at(0.95, 1))
        put(store, "old2", vec_at(0.95, 2))
        clock.advance(hours=2)
        mark = clock.iso()
        clock.advance(hours=1)
        put(store, "new1", vec_at(0.95, 3))
        assert graph.discover_all(store, since=mark) == {"memories": 1, "edges": 2}
        assert {r["src"] for r in store.rows("SELECT src FROM connections")} == {"new1"}


def test_remember_discovers_connections_and_hard_delete_removes_them(store):
    a = remember(store, "install python packages with uv instead of pip")
    b = remember(store, "install python packages with uv, not pip")
    edges = graph.edges_of(store, b["id"])
    assert [(e["dst"], e["type"], e["origin"]) for e in edges] == [(a["id"], "similar_to", "auto")]
    lifecycle.forget(store, a["id"], hard=True)
    assert graph.edges_of(store, b["id"]) == []


def test_vector_cache_follows_new_and_deleted_memories(store):
    put(store, "x1", vec_at(1.0, 1))
    put(store, "x2", vec_at(0.9, 2))
    assert [e["dst"] for e in graph.discover_for(store, "x1")] == ["x2"]
    put(store, "x3", vec_at(0.95, 3))  # appended to the cached matrix
    assert [e["dst"] for e in graph.discover_for(store, "x1")] == ["x3"]
    store.hard_delete(["x2", "x3"])
    put(store, "x4", vec_at(0.8, 4))  # cache reloads after deletions
    assert [e["dst"] for e in graph.discover_for(store, "x1")] == ["x4"]


@pytest.mark.parametrize("weight", [0, -0.5, 1.5, 1e9])
def test_connect_refuses_a_weight_outside_zero_to_one_as_the_mcp_tool_does(store, weight):
    put(store, "m1", vec_at(0.0, 1))
    put(store, "m2", vec_at(0.0, 2))
    with pytest.raises(ValueError, match=r"weight must be more than 0 and at most 1"):
        graph.connect(store, "m1", "m2", "related_to", weight=weight)
    assert store.scalar("SELECT count(*) FROM connections") == 0


def test_cli_connect_weight_is_one_line_error(store):
    put(store, "m1", vec_at(0.0, 1))
    put(store, "m2", vec_at(0.0, 2))
    out = run_remem("connect", "m1", "m2", "--type", "related_to", "--weight", "5")
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert "weight must be more than 0 and at most 1" in out.stderr


def test_disconnect_is_gone():
    from remem.engine import graph

    assert not hasattr(graph, "disconnect")
