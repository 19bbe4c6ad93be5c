"""forget, promote, connect, graph, list, tasks: a memory's life and its connections."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator, List, Optional

import typer

from remem.commands._out import console, emit_json, open_store, safe, short, table
from remem.commands.options import OnceCommand

# `remem list` pages: at most this many rows at once (the engine's cap), skipping at most
# MAX_OFFSET (far past any memory, well inside SQLite's 64-bit numbers).
MAX_LIMIT = 10_000
MAX_OFFSET = 10 ** 12
# `remem list` narrower than WIDE_LIST columns leaves out str and v/a; narrower than
# NARROW_LIST, imp and hp too.
WIDE_LIST = 120
NARROW_LIST = 100


def undo_hint(memory_id: str) -> str:
    """The command that brings an archived memory back, safe to paste whatever the id is (one
    starting with "-" is not read as an option; one with spaces or quotes stays one word)."""
    import shlex

    quoted = shlex.quote(safe(memory_id))
    if quoted == memory_id and not memory_id.startswith("-"):
        return f"remem forget {memory_id} --undo"
    return f"remem forget --undo -- {quoted}"


def _flags(row: dict) -> str:
    marks = []
    if row.get("archived"):
        marks.append("archived")
    if row.get("flashbulb_until"):
        marks.append("flashbulb")
    if row.get("expires_at"):
        marks.append(f"expires {str(row['expires_at'])[5:16].replace('T', ' ')}")
    return ", ".join(marks)


@contextmanager
def _lesson_given(command: str) -> Iterator[None]:
    """A lesson's id given where a memory's was expected (`remem recall` lists both, ids alike):
    the store says how a lesson is hidden, which fits `forget`; the other commands say what
    they do with memories instead, and where the lesson is read."""
    from remem.errors import LessonNotMemory

    try:
        yield
    except LessonNotMemory as exc:
        if command == "forget":
            raise
        lesson_id = exc.lesson_id
        show = f"`remem lessons show {lesson_id}`"
        why = {
            "graph": f"graph walks memories' connections; {show} shows the memories it came from",
            "promote": f"only memories are short- or long-term; {show} reads it",
            "connect": f"connect joins memories; {show} reads it, with the memories it came from",
            "undo": (f"`forget --undo` brings back archived memories; `remem lessons restore {lesson_id}` "
                     f"brings back a vetoed lesson ({show} reads it)"),
        }[command]
        raise LessonNotMemory(f"{lesson_id} is a lesson, not a memory: {why}", lesson_id) from None


def register(app: typer.Typer) -> None:
    @app.command()
    def forget(
        memory_id: str = typer.Argument(..., metavar="ID", help="The memory's id (or a unique prefix)."),
        hard: bool = typer.Option(False, "--hard", help="Delete it everywhere instead of archiving."),
        undo: bool = typer.Option(False, "--undo", help="Bring an archived memory back."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Archive a memory (hidden from recall, kept), or delete it everywhere with --hard.

        Example: remem forget 3f9a2c --hard
        """
        from remem.engine import lifecycle

        if hard and undo:
            raise ValueError("--hard and --undo cannot go together; a hard delete cannot be undone")
        with open_store() as store, _lesson_given("undo" if undo else "forget"):
            if undo:
                try:
                    result = {**lifecycle.restore(store, memory_id), "changed": True}
                    message = f"restored {safe(result['id'])}"
                except lifecycle.NothingToUndo as done:  # a no-op, as `lessons restore` of an active one
                    from remem.engine.memories import public

                    result = {**public(store.episode(memory_id)), "changed": False, "message": str(done)}
                    message = safe(str(done))
            else:
                result = lifecycle.forget(store, memory_id, hard=hard)
                if hard:
                    message = f"deleted {safe(result['id'])} everywhere"
                elif result.get("archived_already"):
                    message = f"{safe(result['id'])} is archived already ({undo_hint(result['id'])} brings it back)"
                else:
                    message = f"archived {safe(result['id'])} ({undo_hint(result['id'])} brings it back)"
        if json_out:
            emit_json(result)
        else:
            print(message)

    @app.command()
    def promote(
        memory_id: str = typer.Argument(..., metavar="ID", help="The memory's id (or a unique prefix)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Make a short-term memory long-term (it no longer expires).

        Example: remem promote 3f9a2c
        """
        from remem.engine import lifecycle

        with open_store() as store, _lesson_given("promote"):
            memory = lifecycle.promote(store, memory_id)
        if json_out:
            emit_json(memory)
        else:
            print(f"{safe(memory['id'])} is long-term")

    @app.command()
    def connect(
        a: str = typer.Argument(..., metavar="A", help="From this memory (id or prefix)."),
        b: str = typer.Argument(..., metavar="B", help="To this memory (id or prefix)."),
        kind: str = typer.Option(..., "--type", help="related_to, caused_by, part_of, references, "
                                 "contradicts, supports, similar_to or derived_from."),
        weight: float = typer.Option(1.0, "--weight", help="How strong the connection is: more than 0, at most 1."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Connect two memories with a typed edge (an existing edge is kept, never doubled).

        Example: remem connect 3f9a2c 81d0e4 --type caused_by
        """
        from remem.engine import graph

        with open_store() as store, _lesson_given("connect"):
            edge = graph.connect(store, a, b, kind, weight=weight)
        if json_out:
            emit_json(edge)
        else:
            state = "connected" if edge["new"] else "already connected"
            print(f"{state}: {safe(edge['src'])} -{edge['type']}-> {safe(edge['dst'])}"
                  + (f"; {edge['note']}" if edge.get("note") else ""))

    @app.command("graph")
    def graph_cmd(
        memory_id: str = typer.Argument(..., metavar="ID", help="Start from this memory."),
        depth: int = typer.Option(1, "--depth", help="How many steps out (1-10)."),
        kind: List[str] = typer.Option([], "--type", help="Only walk edges of this type (repeatable)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON: a list of levels."),
    ) -> None:
        """The memories connected to one, level by level (breadth-first).

        Example: remem graph 3f9a2c --depth 2 --type caused_by
        """
        from remem.engine import graph

        with open_store() as store, _lesson_given("graph"):
            levels = graph.traverse(store, memory_id, depth=depth, types=kind or None)
            # Nothing reached: every edge touching it, both ways, to say why (the walk follows
            # edges out of a memory, so one that only comes in is not walked).
            touching = graph.edges_of(store, levels[0][0]["id"]) if len(levels) == 1 and not json_out else []
        if json_out:
            emit_json(levels)  # each memory as every edge shows one (graph._node)
            return
        root = levels[0][0]
        print(f"{safe(root['id'])}  {short(root['title'])}")
        if len(levels) == 1:
            for line in _nothing_walked(touching, kind, graph.SYMMETRIC):
                print(line)
            return
        rows = []
        for d, level in enumerate(levels[1:], start=1):
            for node in level:
                via = node["via"]
                arrow = f"<-{via['type']}-" if via["direction"] == "in" else f"-{via['type']}->"
                rows.append((d, f"{safe(via['from'])[:10]} {arrow}", node["id"][:10], f"{via['weight']:.2f}",
                             short(node["title"], 60), _flags(node)))
        table(None, ["depth", "via", "id", "weight", "memory", ""], rows)

    @app.command("list", cls=OnceCommand)  # `--project a --project b` is refused, not read as b
    def list_cmd(
        tag: List[str] = typer.Option([], "--tag", "-t", help="Has this tag (repeatable: any of them)."),
        all_tags: bool = typer.Option(False, "--all-tags", help="Must have every --tag given."),
        since: Optional[str] = typer.Option(None, "--since", help="From this time: 2026-11-01 or 7d (ago)."),
        until: Optional[str] = typer.Option(None, "--until", help="Up to this time: 2026-11-20 or 1d (ago)."),
        field: str = typer.Option("created", "--field", help="Time field for --since/--until and order: "
                                  "created, last_touched or at."),
        memory_type: Optional[str] = typer.Option(None, "--type", help="short_term or long_term."),
        archived: bool = typer.Option(False, "--archived", help="Archived memories instead of live ones."),
        kind: List[str] = typer.Option([], "--kind", help="Of this kind (repeatable: any of them): session, "
                                       "error, correction, surprise, environment or note."),
        project: Optional[str] = typer.Option(None, "--project", help="Only memories of this project folder (and "
                                              "below): a path, or the name of a folder remem has seen."),
        limit: int = typer.Option(50, "--limit", help="At most this many."),
        offset: int = typer.Option(0, "--offset", help="Skip this many (paging)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON rows (every column but the vector)."),
    ) -> None:
        """Memories newest first, filtered by tags, time window, type, kind or archive.

        Example: remem list --tag python --since 7d --type short_term
        """
        from remem.commands.core import project_folder
        from remem.engine import lifecycle

        if limit < 1:
            raise ValueError("--limit must be at least 1")
        if limit > MAX_LIMIT:
            raise ValueError(f"--limit must be at most {MAX_LIMIT:,}; page with --offset for more")
        if offset < 0:
            raise ValueError("--offset must be 0 or more")
        if offset > MAX_OFFSET:  # SQLite holds 64-bit numbers: a larger one overflowed
            raise ValueError(f"--offset must be at most {MAX_OFFSET:,}, not {offset}")
        # Before the folder is looked up: a blank --project resolves to none (every project).
        lifecycle.check_filters(kinds=kind, project=project)
        with open_store() as store:
            filters = dict(tags=tag, all_tags=all_tags, since=since, until=until, field=field,
                           memory_type=memory_type, kinds=kind, project=project_folder(store, project))
            rows = lifecycle.list_memories(store, **filters, archived=archived, limit=limit, offset=offset)
            empty = None if rows or json_out else _why_none_listed(store, filters, archived, offset)
        if json_out:
            emit_json(rows)
            return
        if not rows:
            print(empty)
            return
        from remem.engine import clock

        # When it happened (`at`), not when remem stored it (`created`): an ingest of last
        # month's sessions stores them all today. --field last_touched orders by the last
        # touch: shown too.
        times = ["at"] + (["last_touched"] if field == "last_touched" else [])
        this_year = clock.now().strftime("%Y")
        # Month and day, with the year when the page reaches into another year.
        cut = 0 if any(str(r[f] or "")[:4] not in ("", this_year) for r in rows for f in times) else 5
        headers = {"at": "when", "last_touched": "touched"}
        columns = ["id", "kind", "type", "imp", "hp", "str", "v/a", *(headers[f] for f in times), "memory"]
        cells = [(r["id"][:8], r["kind"], (r["memory_type"] or "").split("_")[0], f"{r['importance']:.2f}",
                  f"{r['health']:.0f}", f"{r['strength']:.2f}", f"{r['valence']:+.1f}/{r['arousal']:.1f}",
                  *(str(r[f] or "")[cut:10] for f in times),
                  short(r["title"], 40) + "".join(f" #{t}" for t in r["tags"])
                  + (f" ({_flags(r)})" if _flags(r) else ""))
                 for r in rows]
        # The short columns stay whole and the memory takes the rest; a narrow terminal (or a
        # pipe, 80 columns) leaves out the scores that least need a glance, so the memory column
        # keeps room for whole words (`--json` has every field).
        width = console().width
        left_out = (set() if width >= WIDE_LIST else {"str", "v/a"} if width >= NARROW_LIST
                    else {"str", "v/a", "imp", "hp"})
        keep = [i for i, col in enumerate(columns) if col not in left_out]
        table(None, [columns[i] for i in keep], [[row[i] for i in keep] for row in cells],
              no_wrap=set(columns) - {"memory"})

    @app.command()
    def tasks(
        run: bool = typer.Option(False, "--run", help="Run the tasks that are due."),
        force: bool = typer.Option(False, "--force", help="Run every enabled task now, due or not "
                                   "(implies --run)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """The lifecycle tasks: when each last ran and is next due; --run runs what is due,
        --force (alone or with --run) runs every enabled task now.

        Example: remem tasks --run
        """
        from remem.engine import lifecycle

        run = run or force  # --force alone is never ignored: it means run them all now
        with open_store() as store:
            report = lifecycle.run_due_tasks(store, force=force) if run else None
            status = lifecycle.task_status(store)
        # A task that raised is reported (it stays due) and the command exits 1: a script or
        # schedule that runs `remem tasks --run` must not read a failure as success.
        failed = {name: item["error"] for name, item in (report or {}).items() if item.get("error")}
        # What was to run and was left to another command (consolidate: `remem sleep`), so the
        # table's "due yes" for it after --run is explained.
        skipped = [name for name, item in (report or {}).items() if item.get("left_to")]
        if json_out:
            emit_json({"ran": report, "skipped": skipped, "tasks": status} if report is not None
                      else {"tasks": status})
            for name, error in failed.items():
                print(f"failed {name}: {error}", file=sys.stderr)
            if failed:
                raise typer.Exit(1)
            return
        if report is not None:
            for name, item in report.items():
                if item["ran"]:
                    result = item["result"]
                    detail = ", ".join(f"{k} {v}" for k, v in result.items()) if isinstance(result, dict) else str(result)
                    print(f"ran {name}: {detail}")
            for name, error in failed.items():
                print(f"failed {name}: {error}", file=sys.stderr)
            if skipped:
                print(f"skipped {', '.join(skipped)}: {'it runs' if len(skipped) == 1 else 'they run'} "
                      "with `remem sleep`, not `remem tasks`")
        table(None, ["task", "every", "last run", "next", "due"],
              [(s["name"], _every(s["interval_s"]), (s["last_run"] or "never")[:16].replace("T", " "),
                "now" if s.get("note") else (s["next_run"] or "off")[:16].replace("T", " "),
                "yes" if s["due"] else "")
               for s in status])
        # A last run after now (the clock was ahead): said plainly, one line per task.
        for s in status:
            if s.get("note"):
                print(safe(s["note"]))
        if report is None:
            print("`remem tasks --run` runs what is due (consolidate runs in `remem sleep`).")
        if failed:
            raise typer.Exit(1)


def _why_none_listed(store, filters: dict, archived: bool, offset: int) -> str:
    """What `remem list` says for an empty page: an --offset past the last memory that matches
    (with how many do), or no match at all, with the archived ones named only when some match."""
    from remem.engine import lifecycle

    if offset and lifecycle.list_memories(store, **filters, archived=archived, limit=1):
        matched, page = 0, MAX_LIMIT
        while page == MAX_LIMIT:  # counted page by page, at most MAX_LIMIT rows at once
            page = len(lifecycle.list_memories(store, **filters, archived=archived, limit=MAX_LIMIT,
                                               offset=matched))
            matched += page
        noun = ("archived " if archived else "") + ("memory" if matched == 1 else "memories")
        return (f"--offset {offset} is past the end: {matched:,} {noun} match{'es' * (matched == 1)}; "
                f"--offset {matched - 1} shows the last")
    if not archived and lifecycle.list_memories(store, **filters, archived=True, limit=1):
        return "no live memories match; some archived ones do: add --archived to list them"
    return "no memories match"


def _graph_hint(memory_id: str) -> str:
    """`remem graph ID`, safe to paste whatever the id is (as undo_hint)."""
    import shlex

    quoted = shlex.quote(safe(memory_id))
    if quoted == memory_id and not memory_id.startswith("-"):
        return f"remem graph {memory_id}"
    return f"remem graph -- {quoted}"


def _nothing_walked(edges: list[dict], types: List[str], symmetric: frozenset) -> List[str]:
    """Why `remem graph` reached no memory, from the edges touching it (graph.edges_of): none
    at all, only ones of other types than --type, or only directed ones coming in, which the
    walk does not follow (it walks from a memory to the next; related_to, similar_to and
    contradicts both ways); those are counted, with the command that shows them."""
    if not edges:
        return ["no connections; `remem connect A B --type T` adds one"]
    walked = [e for e in edges if e["direction"] == "out" or e["type"] in symmetric]
    incoming = [e for e in edges if e["direction"] == "in" and e["type"] not in symmetric
                and (not types or e["type"] in types)]
    of_type = f" of type {', '.join(dict.fromkeys(types))}" if types else ""
    lines = [f"no connections{of_type} going out: the walk follows edges out of a memory "
             f"(related_to, similar_to and contradicts both ways)"]
    others = [e for e in walked if types and e["type"] not in types]
    if len(others) == 1:
        lines.append(f"1 of another type goes out ({others[0]['type']}); without --type the walk follows it")
    elif others:
        lines.append(f"{len(others)} of other types go out; without --type the walk follows them")
    if incoming:
        named = ", ".join(f"{safe(e['src'])[:10]} ({e['type']})" for e in incoming[:3])
        more = f" and {len(incoming) - 3} more" if len(incoming) > 3 else ""
        if len(incoming) == 1:
            lines.append(f"1 connection comes in, from {named}; `{_graph_hint(incoming[0]['src'])}` shows it")
        else:
            lines.append(f"{len(incoming)} connections come in, from {named}{more}; "
                         f"`{_graph_hint(incoming[0]['src'])}` shows the first")
    return lines


def _every(seconds: float) -> str:
    if seconds <= 0:
        return "off"
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
