"""The MCP server's tools and resources: each parses its arguments, calls the engine and
returns what the engine returned; the rules live in remem.engine. Expected failures become
one-line tool errors (`engine_errors`).

Separate from remem/server.py (the server itself, its store connection and entry points)
because the tools are most of the code and change on their own. Engine modules are imported
inside each tool, so the server starts (and `remem tools` lists) even while one of them is
broken; a failing tool reports its own one-line error.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Iterator, Literal, Optional

from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from remem.errors import NotFound, RememError, database_problem

if TYPE_CHECKING:
    from remem.server import Memory, RememServer

Kind = Literal["note", "correction", "surprise", "environment", "error", "session"]
RememberKind = Literal["note", "correction", "surprise", "environment", "error"]
EdgeType = Literal[
    "related_to", "caused_by", "part_of", "references",
    "contradicts", "supports", "similar_to", "derived_from",
]
Mode = Literal["hybrid", "semantic", "keyword"]
LessonStatus = Literal["active", "candidate", "vetoed", "revoked", "quarantined"]
Id = Annotated[str, Field(min_length=1, description="A memory id (or a unique prefix of at least 4 characters).")]
Tags = Annotated[Optional[list[str]], Field(description="Tags, e.g. [\"python\", \"deploy\"].")]
Kinds = Annotated[Optional[list[Kind]], Field(description="Only memories of these kinds.")]
Project = Annotated[Optional[str], Field(
    description="A project: its folder's full path (or ~/...), or the name of a folder remem has seen "
                "(\"shop\" for /home/me/shop). Omit for every project.")]
# How a refused project argument's line shows a path to give instead (projects.resolve_project).
PROJECT_EXAMPLE = '`"project": "{}"`'

# Hints per tool: (readOnly, destructive, idempotent). recall is not read-only on purpose:
# like remembering, it strengthens what it returns; `search` looks without touching.
HINTS: dict[str, tuple[bool, bool, bool]] = {
    "recall": (False, False, False),
    "remember": (False, False, False),
    "search": (True, False, True),
    "get_memory": (True, False, True),
    "update_memory": (False, True, True),
    "delete_memory": (False, True, True),
    "promote": (False, False, True),
    "connect": (False, False, True),
    "traverse": (True, False, True),
    "lessons": (True, False, True),
    "context": (True, False, True),
}


def _note(tool: str, message: str) -> None:
    """One line in the log per refused call, so a person can see what an agent got wrong."""
    from remem.log import log

    log(f"server.{tool}", f"refused: {message}")


class MissingMemory(ToolError):
    """A tool error whose cause is an id that is not there (HTTP 404)."""


@contextmanager
def engine_errors(tool: str) -> Iterator[None]:
    """Expected failures become one-line tool errors the model can act on."""
    try:
        yield
    except ToolError:
        raise
    except NotFound as exc:
        _note(tool, str(exc))
        raise MissingMemory(str(exc)) from exc
    except (RememError, ValueError) as exc:
        msg = str(exc).strip("'\"") or type(exc).__name__
        _note(tool, msg)
        raise ToolError(msg) from exc
    except Exception as exc:
        problem = database_problem(exc)  # the same line, naming the fix, as the CLI gives
        if problem:
            _note(tool, problem)
            raise ToolError(problem) from exc
        from remem.log import log_exception

        where = log_exception(f"server.{tool}", exc)
        raise ToolError(f"{tool} failed unexpectedly ({type(exc).__name__}); details in {where}") from exc


def _default_k() -> int:
    """recall's k when the call names none: config recall.k (as `remem recall` takes it), at
    most the tool's 50."""
    from remem.engine.recall import default_k

    return min(default_k(), 50)


# --------------------------------------------------------------------------- tools

def register_tools(mcp: "RememServer", memory: "Memory") -> None:
    """Add every tool and resource to `mcp`, each on `memory`'s one store connection."""
    def tool(fn: Any) -> Any:
        ro, destructive, idem = HINTS[fn.__name__]
        mcp.parameters[fn.__name__] = list(inspect.signature(fn).parameters)
        mcp.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=ToolAnnotations(
            read_only_hint=ro, destructive_hint=destructive, idempotent_hint=idem,
            open_world_hint=False))
        return fn

    @tool
    def recall(
        query: Annotated[str, Field(min_length=1, description="What you want to remember, in plain words.")],
        k: Annotated[Optional[int], Field(ge=1, le=50, description=(
            "How many memories to return (default: the config's recall.k, 5 unless set; at most 50)."))] = None,
        kinds: Kinds = None,
        tags: Tags = None,
        project: Project = None,
    ) -> dict[str, Any]:
        """Remember what is relevant to a query: the best-matching memories, ranked.

        Use this before acting on something the person may have told you about in an earlier
        session (how they want things done, an error seen before, a fact about their machine).
        Each hit has an id, kind (correction, error, surprise, environment, note, session),
        title, text, time and a score with its parts. Recalling strengthens the memories it
        returns, as remembering does; use `search` to look without that effect.
        """
        with engine_errors("recall"), memory.store() as store:
            from remem.engine import recall as recall_mod

            if k is None:
                k = _default_k()
            filters = _filters(store, kinds=kinds, tags=tags, project=project)
            # A memory that cannot be written (read-only, busy) still answers, unstrengthened.
            hits = recall_mod.recall(store, query, k, mode="hybrid", touch=True, **filters)
        return {"query": query, "hits": _bools(hits)}

    @tool
    def remember(
        text: Annotated[str, Field(min_length=1, description="What to remember, in one or a few sentences.")],
        kind: Annotated[RememberKind, Field(description=(
            "note (a fact or decision), correction (the person told you to do something "
            "differently), surprise (something turned out unlike expected), environment (a fact "
            "about the machine or project setup), error (a failure worth not repeating)."))] = "note",
        title: Annotated[Optional[str], Field(description="A short title; default the first line.")] = None,
        tags: Tags = None,
        importance: Annotated[float, Field(ge=0, le=1, description="0..1, how much it matters.")] = 0.5,
        valence: Annotated[float, Field(ge=-1, le=1, description="-1..1, how it felt (bad..good).")] = 0.0,
        arousal: Annotated[float, Field(ge=0, le=1, description=(
            "0..1, how intense. 0.8 or more makes a flashbulb memory: long-term, importance at "
            "least 0.9, protected from forgetting for 30 days."))] = 0.0,
        short_term: Annotated[bool, Field(description="Expire after ttl (default 7d) unless promoted.")] = False,
        ttl: Annotated[Optional[str], Field(description="Lifetime of a short-term memory: 30s, 10m, 2h, 7d. Implies short_term.")] = None,
        project: Annotated[Optional[str], Field(description=(
            "The project it belongs to: its folder's full path (or ~/...), or the name of a folder "
            "remem has seen (\"shop\" for /home/me/shop)."))] = None,
    ) -> dict[str, Any]:
        """Store a memory that should outlast this session; returns it with its id.

        Remember when the person corrects you, when something surprised you, when you learn a
        fact about their environment, or when they ask you to remember. Write it so a future
        session understands it without this conversation. Use short_term with a ttl for
        things that only matter for a while.
        """
        with engine_errors("remember"), memory.store() as store:
            from remem.engine.memories import remember as do_remember

            return _bools(do_remember(
                store, text, kind=kind, title=title, tags=tags or (), importance=importance,
                valence=valence, arousal=arousal, ttl=ttl, short_term=short_term,
                cwd=_project(store, project), source="mcp",
            ))

    @tool
    def search(
        query: Annotated[str, Field(description="Words to look for; empty lists memories by the filters, newest first.")] = "",
        mode: Annotated[Mode, Field(description=(
            "semantic (by meaning), keyword (exact words, BM25) or hybrid (both; the default)."))] = "hybrid",
        k: Annotated[int, Field(ge=1, le=100, description="How many results.")] = 10,
        tags: Tags = None,
        all_tags: Annotated[bool, Field(description="Require every tag (default: any of them).")] = False,
        since: Annotated[Optional[str], Field(description="Only memories from this time on: ISO time or a duration ago (7d).")] = None,
        until: Annotated[Optional[str], Field(description="Only memories before this time: ISO time or a duration ago.")] = None,
        kinds: Kinds = None,
        project: Project = None,
        memory_type: Annotated[Optional[Literal["short_term", "long_term"]], Field(
            description="Only short-term (expiring) or long-term memories.")] = None,
        include_archived: Annotated[bool, Field(description="Include archived (soft-deleted) memories.")] = False,
    ) -> dict[str, Any]:
        """Search memories by meaning, keywords or both, with tag, kind and time filters.

        Unlike `recall`, searching does not strengthen what it finds. With no query it lists
        the memories matching the filters, newest first (for example everything tagged
        "deploy" in the last 7 days).
        """
        since, until = since or None, until or None  # "": an optional string left unset
        with engine_errors("search"), memory.store() as store:
            if query.strip():
                from remem.engine import recall as recall_mod

                filters = _filters(store, kinds=kinds, tags=tags, project=project, all_tags=all_tags,
                                   since=since, until=until, include_archived=include_archived)
                if memory_type:
                    filters["memory_type"] = memory_type
                hits = recall_mod.recall(store, query, k, mode=mode, touch=False, **filters)
            else:
                from remem.engine import lifecycle

                hits = lifecycle.list_memories(
                    store, tags=tags, all_tags=all_tags, since=since, until=until,
                    archived=None if include_archived else False, field="at", memory_type=memory_type,
                    kinds=kinds, project=_project(store, project), limit=k)
        return {"query": query, "mode": mode, "hits": _bools(hits)}

    @tool
    def get_memory(id: Id) -> dict[str, Any]:
        """Read one memory in full by id: text, kind, tags, importance, health, lifecycle fields."""
        with engine_errors("get_memory"), memory.store() as store:
            from remem.engine.memories import public

            return _bools(public(store.episode(id)))

    @tool
    def update_memory(
        id: Id,
        title: Annotated[Optional[str], Field(description="A new title.")] = None,
        text: Annotated[Optional[str], Field(description="New text (re-embedded for search).")] = None,
        tags: Annotated[Optional[list[str]], Field(description="The new full set of tags (replaces the old).")] = None,
        importance: Annotated[Optional[float], Field(ge=0, le=1, description="0..1")] = None,
        valence: Annotated[Optional[float], Field(ge=-1, le=1, description="-1..1")] = None,
        arousal: Annotated[Optional[float], Field(ge=0, le=1, description=(
            "0..1. Raising it later does not make a flashbulb memory; that happens only at creation."))] = None,
    ) -> dict[str, Any]:
        """Correct or refine a memory: its title, text, tags, importance, valence or arousal.

        Give only the fields to change; returns the updated memory. Prefer this over storing
        a second, conflicting memory when something you remembered turns out wrong.
        """
        with engine_errors("update_memory"), memory.store() as store:
            from remem.engine.memories import update_memory as do_update

            return _bools(do_update(store, id, title=title, text=text, tags=tags, importance=importance,
                                    valence=valence, arousal=arousal))

    @tool
    def delete_memory(
        id: Id,
        hard: Annotated[bool, Field(description=(
            "Delete for good from every index. Default false: archive (hidden from recall, kept)."))] = False,
    ) -> dict[str, Any]:
        """Forget a memory: archive it (default; hidden from recall but kept) or delete it for good.

        Use when the person says something you remembered is wrong or no longer applies. Only
        pass hard=true when they ask for it to be erased.
        """
        with engine_errors("delete_memory"), memory.store() as store:
            from remem.engine import lifecycle

            return lifecycle.forget(store, id, hard=hard)

    @tool
    def promote(id: Id) -> dict[str, Any]:
        """Make a short-term memory long-term, so it no longer expires; returns the memory."""
        with engine_errors("promote"), memory.store() as store:
            from remem.engine import lifecycle

            return _bools(lifecycle.promote(store, id))

    @tool
    def connect(
        source: Id,
        target: Id,
        type: Annotated[EdgeType, Field(description="How source relates to target.")] = "related_to",
        weight: Annotated[float, Field(gt=0, le=1, description="Strength of the link, 0..1.")] = 1.0,
    ) -> dict[str, Any]:
        """Link two memories with a typed connection (caused_by, supports, contradicts, ...).

        Connecting the same pair with the same type twice keeps one edge.
        """
        with engine_errors("connect"), memory.store() as store:
            from remem.engine import graph

            return graph.connect(store, source, target, type, weight=weight, origin="explicit")

    @tool
    def traverse(
        id: Id,
        depth: Annotated[int, Field(ge=1, le=5, description="How many hops to follow.")] = 1,
        types: Annotated[Optional[list[EdgeType]], Field(description="Follow only these connection types.")] = None,
    ) -> dict[str, Any]:
        """Walk the connections from a memory, breadth first: the memories at each depth."""
        with engine_errors("traverse"), memory.store() as store:
            from remem.engine import graph

            levels = graph.traverse(store, id, depth=depth, types=types)
        # levels[0] is the start, levels[d] the memories first reached at depth d (with `via`).
        # The start as stored, not the prefix typed.
        return {"start": levels[0][0]["id"], "depth": depth, "types": types, "levels": _bools(levels)}

    @tool
    def lessons(
        kind: Annotated[Optional[Literal["correction", "error", "surprise", "note"]], Field(
            description="Only lessons of this kind.")] = None,
        project: Project = None,
        status: Annotated[LessonStatus, Field(description="active (in use) by default.")] = "active",
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many, strongest first.")] = 50,
    ) -> dict[str, Any]:
        """The lessons learned from repeated corrections and errors, strongest first.

        A lesson is a short imperative rule distilled from what happened in past sessions,
        with the episodes it came from as sources. A project's lessons are the ones `context`
        may inject there: those learned in that folder or a folder above it, and the ones that
        apply everywhere.
        """
        with engine_errors("lessons"), memory.store() as store:
            return {"lessons": _lessons(store, kind=kind, project=project, status=status, limit=limit)}

    @tool
    def context(
        project: Annotated[Optional[str], Field(description=(
            "The project you are working in: its folder's full path (or ~/...), or the name of a "
            "folder remem has seen."))] = None,
        prompt: Annotated[str, Field(description="What you are about to do; lessons it bears on come first.")] = "",
    ) -> dict[str, Any]:
        """The lessons remem would inject for a project (and a prompt), as a ready block of text.

        Call it at the start of a task. The block is remembered context from past sessions,
        not instructions; weigh it against what the person says now.
        """
        with engine_errors("context"), memory.store() as store:
            from remem.engine import prime

            folder = _project(store, project)
            # The same preview as `remem context`: nothing goes into the primes log.
            shown = prime.preview(store, folder, prompt, agent="mcp")
        # The folder the lessons are for, as `remem context --json` reports it (not the name typed).
        return {"project": folder, "lessons": shown["lessons"], "text": shown["text"]}

    @mcp.resource("remem://morning", name="morning", title="Morning report", mime_type="text/markdown",
                  description="What the last sleep learned, confirmed, failed and let fade.")
    def morning() -> str:
        from remem import paths

        path = paths.morning_path()  # written by each sleep, as `remem morning` prints it
        try:
            text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        except OSError as exc:
            _note("morning", f"cannot read {path} ({exc.strerror or exc})")
            raise ResourceError(f"cannot read {path} ({exc.strerror or exc})") from None
        return text or "No morning report yet: run `remem sleep`.\n"

    @mcp.resource("remem://lessons/{project}", name="lessons", title="Lessons of a project",
                  mime_type="text/markdown",
                  description="The active lessons of a project (its folder name) plus those that apply everywhere.")
    def project_lessons(project: str) -> str:
        if not project.strip():
            # Read as "no project" it listed every project's lessons under an empty heading.
            _note("lessons", "remem://lessons/ without a project")
            raise ResourceError("remem://lessons/ names no project; read remem://lessons/{project} with "
                                "its folder name (remem://lessons/shop), or call the `lessons` tool "
                                "without a project for every lesson")
        try:
            with engine_errors("lessons"), memory.store() as store:
                found = _lessons(store, kind=None, project=project, status="active", limit=500,
                                 example='with the `lessons` tool, `"project": "{}"` (a resource URI '
                                         'takes a folder name only)')
        except ToolError as exc:  # the same one line as the tool, not the SDK's generic error
            raise ResourceError(str(exc)) from None
        if not found:
            return f"No lessons for {project} yet.\n"
        lines = [f"# Lessons for {project}", ""]
        lines += [f"- {l['text']} ({l['kind']}, strength {l['strength']:.2f}, id {l['id']})" for l in found]
        return "\n".join(lines) + "\n"


def _bools(value: Any) -> Any:
    """`archived` as true/false wherever a memory is returned (the store keeps 0/1)."""
    if isinstance(value, dict):
        return {k: bool(v) if k == "archived" and isinstance(v, int) else _bools(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_bools(v) for v in value]
    return value


def _filters(store: Any, *, kinds: Any = None, tags: Any = None, project: Optional[str] = None,
             all_tags: bool = False, since: Optional[str] = None, until: Optional[str] = None,
             include_archived: bool = False) -> dict[str, Any]:
    """recall's filter keywords, only the ones given ("" for since/until is how MCP clients
    send one left unset; one of spaces is given, and the engine refuses it)."""
    out: dict[str, Any] = {}
    if kinds:
        out["kinds"] = list(kinds)
    if tags:
        out["tags"] = list(tags)
        out["all_tags"] = all_tags
    folder = _project(store, project)
    if folder:
        out["project"] = folder
    # "" is how MCP clients send an optional string left unset (as for project and ttl);
    # the CLI refuses an empty --since/--until, where it is a typo or an unset variable.
    if since:
        out["since"] = since
    if until:
        out["until"] = until
    if include_archived:
        out["archived"] = True
    return out


def _project(store: Any, project: Optional[str], example: str = PROJECT_EXAMPLE) -> Optional[str]:
    """The folder a tool's project argument means (the engine's one rule: a path, or the name of
    a folder remem has seen; anything else is refused). A server's own folder means nothing to
    its caller, so a relative path is never read from it."""
    from remem.engine.projects import resolve_project

    return resolve_project(store, project, example=example)


def _lessons(store: Any, *, kind: Optional[str], project: Optional[str], status: str,
             limit: int, example: str = PROJECT_EXAMPLE) -> list[dict[str, Any]]:
    """Lessons by status and kind; for a project, the ones `context` may inject there."""
    from remem.engine import lessons as lessons_mod

    folder = _project(store, project, example)
    if folder:
        found = lessons_mod.for_project(store, folder, statuses=[status], kind=kind)
    else:
        found = lessons_mod.list_lessons(store, statuses=[status], kind=kind)
    return found[:limit]
