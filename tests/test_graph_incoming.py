"""`remem graph ID` for a memory that a directed edge only points at: not "no connections" (it
has one), but that the walk follows edges out of a memory, how many come in, and the command
that shows them. The CLI runs in-process on the real store."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from remem.engine import graph


def put(store: Any, *ids: str) -> None:
    """Memories with no embedding: nothing is connected but what a test connects."""
    store.put_episodes([{"id": i, "kind": "note", "title": f"memory {i}", "gist": f"memory {i}"} for i in ids])


def hint(output: str) -> list[str]:
    """The `remem graph …` the output names, as the words a shell would pass."""
    found = re.findall(r"`(remem graph [^`]+)`", output)
    assert len(found) == 1, output
    return shlex.split(found[0])[1:]


def test_only_an_incoming_edge_is_counted_with_the_command_that_shows_it(cli: Any, store: Any) -> None:
    put(store, "aaaa000000000001", "bbbb000000000002")
    graph.connect(store, "aaaa000000000001", "bbbb000000000002", "caused_by")
    result = cli("graph", "bbbb000000000002")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "`remem connect A B --type T` adds one" not in out, out
    assert "no connections going out: the walk follows edges out of a memory" in out, out
    assert "1 connection comes in, from aaaa000000 (caused_by); `remem graph aaaa000000000001` shows it" in out, out
    # The command named shows the edge.
    shown = cli(*hint(out))
    assert shown.exit_code == 0 and "bbbb000000" in shown.stdout and "caused_by" in shown.stdout, shown.output
    # JSON stays the levels alone.
    assert [[n["id"] for n in level] for level in json.loads(cli("graph", "bbbb000000000002", "--json").stdout)] \
        == [["bbbb000000000002"]]
    # A memory with no edge at all is still told how to add one.
    put(store, "lonely0000000003")
    out = cli("graph", "lonely0000000003").stdout
    assert "no connections; `remem connect A B --type T` adds one" in out and "comes in" not in out, out


def test_several_incoming_edges_are_counted_and_named(cli: Any, store: Any) -> None:
    put(store, "dddd000000000000", *(f"src{n}000000000000" for n in range(5)))
    for n, kind in enumerate(["caused_by", "part_of", "supports", "references", "derived_from"]):
        graph.connect(store, f"src{n}000000000000", "dddd000000000000", kind)
    out = cli("graph", "dddd000000000000").stdout
    line = next(l for l in out.splitlines() if "come in" in l)
    assert line.startswith("5 connections come in, from "), out
    assert "and 2 more" in line and line.count("(") == 3, line
    shown = cli(*hint(out))
    assert shown.exit_code == 0 and "dddd000000" in shown.stdout, shown.output


def test_with_type_the_edges_of_other_types_are_said_too(cli: Any, store: Any) -> None:
    put(store, "aaaa000000000001", "bbbb000000000002", "cccc000000000003")
    graph.connect(store, "aaaa000000000001", "bbbb000000000002", "caused_by")
    graph.connect(store, "bbbb000000000002", "cccc000000000003", "supports")
    out = cli("graph", "bbbb000000000002", "--type", "caused_by").stdout
    assert "no connections of type caused_by going out" in out, out
    assert "1 of another type goes out (supports); without --type the walk follows it" in out, out
    assert "1 connection comes in, from aaaa000000 (caused_by)" in out, out
    # An incoming edge of a type not asked for is not counted.
    out = cli("graph", "bbbb000000000002", "--type", "part_of").stdout
    assert "no connections of type part_of going out" in out and "comes in" not in out, out


def test_the_command_named_is_safe_to_paste_for_an_odd_id(cli: Any, store: Any) -> None:
    put(store, "-odd id", "target000000001")
    graph.connect(store, "-odd id", "target000000001", "part_of")
    out = cli("graph", "target000000001").stdout
    assert "`remem graph -- '-odd id'` shows it" in out, out
    shown = cli(*hint(out))
    assert shown.exit_code == 0 and "target0000" in shown.stdout, shown.output

