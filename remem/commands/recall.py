"""remem recall: the memories that best match a query, with filters and the score explained."""

from __future__ import annotations

from typing import List, Optional

import typer

from remem.commands._out import emit_json, open_store, short, table
from remem.commands.options import OnceCommand


def register(app: typer.Typer) -> None:
    @app.command(cls=OnceCommand)  # `--project a --project b` is refused, not read as b
    def recall(
        query: str = typer.Argument(..., help="What you are looking for, in your own words."),
        k: Optional[int] = typer.Option(None, "-k", help="How many results (default: config recall.k, 5)."),
        mode: str = typer.Option("hybrid", "--mode", help="hybrid, semantic or keyword."),
        kind: List[str] = typer.Option([], "--kind", help="Only this kind (repeatable): session, "
                                       "error, correction, surprise, environment, note."),
        project: Optional[str] = typer.Option(None, "--project", help="Only memories of this project folder (and "
                                              "below): a path, or the name of a folder remem has seen."),
        tag: List[str] = typer.Option([], "--tag", "-t", help="Only memories with this tag (repeatable; any of them)."),
        all_tags: bool = typer.Option(False, "--all-tags", help="With several --tag: memories carrying all of them."),
        since: Optional[str] = typer.Option(None, "--since", help="Dated at or after: 2026-05-01, 2026-05-01T09:00 or 7d (ago)."),
        until: Optional[str] = typer.Option(None, "--until", help="Dated at or before (same forms as --since)."),
        memory_type: Optional[str] = typer.Option(None, "--type", help="short_term or long_term."),
        archived: bool = typer.Option(False, "--archived", help="Include archived memories."),
        lessons: Optional[bool] = typer.Option(None, "--lessons/--no-lessons",
                                               help="Let active lessons compete (default: config recall.include_lessons)."),
        explain: bool = typer.Option(False, "--explain", help="Show each result's score parts."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON (score parts included)."),
    ) -> None:
        """The memories that best match a query, best first. Touches what it returns.

        Example: remem recall "which package installer should I use" -k 3 --kind correction --explain
        """
        from remem import config
        from remem.commands.core import project_folder
        from remem.engine.lifecycle import check_filters
        from remem.engine.recall import MAX_K, default_k
        from remem.engine.recall import recall as do_recall

        cfg = config.load()
        # Before the folder is looked up: a blank --project resolves to none (every project).
        check_filters(project=project)
        if k is None:
            k = default_k(cfg)
        if not 1 <= k <= MAX_K:
            raise ValueError(f"-k must be between 1 and {MAX_K:,}")
        with open_store() as store:
            hits = do_recall(
                store, query, k, mode=mode, cfg=cfg, kinds=kind, project=project_folder(store, project), tags=tag,
                all_tags=all_tags, since=since, until=until, memory_type=memory_type,
                archived=archived, lessons=lessons,
            )
        if json_out:
            emit_json(hits)
            return
        if not hits:
            print(_nothing(mode, _filters(kind, project, tag, all_tags, since, until, memory_type)))
            return
        if not explain:
            table(None, ["score", "kind", "id", "memory"],
                  [(f"{h['score']:.3f}", _kind(h), h["id"][:10], short(h["title"] or h["text"])) for h in hits])
            return
        rc = cfg["recall"]
        for n, h in enumerate(hits, start=1):
            p = h["parts"]
            print(f"{n}. {h['score']:.3f}  {_kind(h)}  {h['id'][:10]}  {short(h['title'] or h['text'], 56)}")
            flash = " (flashbulb)" if p.get("flashbulb") else ""
            print(f"   relevance {p['relevance']:.3f} ({_evidence(mode, p)}) · "
                  f"recency {p['recency']:.3f}{flash} · "
                  f"retention {p['strength']:.3f}")
            if p.get("demoted"):
                print(f"   below the relevance floor ({p['relevance_floor']:.3f}): ranked after "
                      "every memory above it")
        print(f"score = {rc['w_relevance']}·relevance + {rc['w_recency']}·recency + "
              f"{rc['w_strength']}·retention; {_relevance(mode, rc)}; a memory whose relevance "
              f"is under relevance_floor {rc['relevance_floor']} × the best one's ranks after "
              "the rest; see docs/RECALL.md")


def _kind(hit: dict) -> str:
    return f"lesson:{hit['kind']}" if hit["type"] == "lesson" else hit["kind"]


def _relevance(mode: str, rc: dict) -> str:
    """What relevance is in this mode, for the --explain footer."""
    if mode == "semantic":
        return "relevance is the cosine alone (--mode semantic: BM25, dates and speakers unused)"
    if mode == "keyword":
        return ("relevance is the BM25 alone, over this query's best (--mode keyword: cosine, "
                "dates and speakers unused; only memories holding a word of the query)")
    return (f"relevance mixes cosine and BM25 (semantic_weight {rc['semantic_weight']}) and a "
            f"date the query names (date_weight {rc['date_weight']}) and a speaker it names "
            f"(speaker_weight {rc['speaker_weight']})")


def _evidence(mode: str, parts: dict) -> str:
    """A hit's evidence for --explain; "—" for what this mode does not use (its part is 0)."""
    unused = "—"
    cosine = unused if mode == "keyword" else f"{parts['semantic']:.3f}"
    bm25 = unused if mode == "semantic" else f"{parts['keyword']:.3f}"
    hybrid = mode == "hybrid"  # only hybrid weighs a named date or speaker
    date = f"{parts['when']:.2f}" if hybrid else unused
    speaker = f"{parts.get('speaker', 0.0):.0f}" if hybrid else unused
    return f"cosine {cosine}, bm25 {bm25}, date {date}, speaker {speaker}"


def _filters(kinds: List[str], project: Optional[str], tags: List[str], all_tags: bool,
             since: Optional[str], until: Optional[str], memory_type: Optional[str]) -> str:
    """The filters given, as typed (quoted for a shell where needed): "" for none."""
    import shlex

    given = [*(("--kind", k) for k in kinds), ("--project", project), *(("--tag", t) for t in tags),
             ("--all-tags", "" if all_tags and len(tags) > 1 else None),
             ("--since", since), ("--until", until), ("--type", memory_type)]
    return " ".join(f"{flag} {shlex.quote(value)}" if value else flag
                    for flag, value in given if value is not None)


def _nothing(mode: str, filters: str) -> str:
    """Why a recall returned nothing, and what to try."""
    if filters and mode == "keyword":
        return (f"no memory matching {filters} holds a word of the query; drop a filter, or "
                "--mode hybrid finds the nearest in meaning")
    if filters:
        return (f"no memory matches {filters}; drop a filter, or see what there is (kinds, "
                "tags, dates) with `remem list`")
    if mode == "keyword":
        return "no memory holds a word of the query; --mode hybrid finds the nearest in meaning"
    return "nothing remembered matches; `remem status` shows what the memory holds"
