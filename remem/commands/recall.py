"""remem recall: the memories that best match a query, with filters and the score explained."""

from __future__ import annotations

from typing import List, Optional

import typer

from remem.commands._out import emit_json, open_store, short, table


def register(app: typer.Typer) -> None:
    @app.command()
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
            print("nothing remembered matches; `remem status` shows what the memory holds")
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
            print(f"   relevance {p['relevance']:.3f} (cosine {p['semantic']:.3f}, bm25 {p['keyword']:.3f}, "
                  f"date {p['when']:.2f}, speaker {p.get('speaker', 0.0):.0f}) · "
                  f"recency {p['recency']:.3f}{flash} · "
                  f"retention {p['strength']:.3f}")
            if p.get("demoted"):
                print(f"   below the relevance floor ({p['relevance_floor']:.3f}): ranked after "
                      "every memory above it")
        print(f"score = {rc['w_relevance']}·relevance + {rc['w_recency']}·recency + "
              f"{rc['w_strength']}·retention; relevance mixes cosine and BM25 "
              f"(semantic_weight {rc['semantic_weight']}) and a date the query names "
              f"(date_weight {rc['date_weight']}) and a speaker it names "
              f"(speaker_weight {rc['speaker_weight']}); a memory whose relevance is under "
              f"relevance_floor {rc['relevance_floor']} × the best one's ranks after the rest; "
              "see docs/RECALL.md")


def _kind(hit: dict) -> str:
    return f"lesson:{hit['kind']}" if hit["type"] == "lesson" else hit["kind"]
