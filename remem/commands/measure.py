"""measure, compare: does remem help, from your own history."""

from __future__ import annotations

import sys

import typer

from remem.commands._out import emit_json, open_store, short, table


def register(app: typer.Typer) -> None:
    _register_model_tests(app)

    @app.command()
    def measure(
        days: int = typer.Option(30, "--days", help="How far back to look."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Repeat-yourself and repeated-error rates, prediction accuracy, themes, primed vs held out.

        Example: remem measure --days 14
        """
        from remem.engine.measure import check_days, summary_lines
        from remem.engine.measure import measure as do_measure

        check_days(days)
        with open_store() as store:
            result = do_measure(store, days)
        if json_out:
            emit_json(result)
            return
        for line in summary_lines(result):
            print(line)
        pvh = result["primed_vs_held_out"]
        if pvh["ci95"]:
            print(f"  primed {pvh['primed']['with_repeat']}/{pvh['primed']['sessions']} sessions repeated, "
                  f"held out {pvh['held_out']['with_repeat']}/{pvh['held_out']['sessions']}; "
                  f"difference {pvh['difference']:+.2f}, 95 % interval {pvh['ci95'][0]:+.2f} to {pvh['ci95'][1]:+.2f}")
        if result["repeat_yourself_by_day"]:
            table("Corrections by day", ["day", "corrections", "repeats", "rate"],
                  [(d["day"], d["total"], d["repeats"], f"{d['rate']:.0%}") for d in result["repeat_yourself_by_day"]])
        if result["themes"]:
            table("Themes", ["lesson", "kind", "new sources"],
                  [(short(t["text"], 60), t["kind"], t["new_sources"]) for t in result["themes"]])

    @app.command()
    def compare(
        k: int = typer.Option(5, "-k", help="How many episodes retrieve-similar would inject (1-100)."),
        limit: int = typer.Option(50, "--limit", help="Rows shown: the latest N corrections (0: the "
                                  "totals alone). The totals always count every correction."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Replay your corrections: would remem's lessons, or retrieve-similar memory, have covered them?

        Example: remem compare -k 5 --limit 20
        """
        from remem.engine.compare import compare as do_compare

        if not 1 <= k <= 100:
            raise ValueError("-k must be between 1 and 100")
        if not 0 <= limit <= 1_000_000:
            raise ValueError("--limit must be between 0 and 1,000,000")
        with open_store() as store:
            result = do_compare(store, k, limit=limit)
        if json_out:
            emit_json(result)
            return
        if not result["corrections"]:
            print("no corrections in the memory yet; `remem ingest` reads your sessions")
            return
        if result["rows"]:
            table(None, ["when", "correction", "remem", "tokens", "similar", "tokens"],
                  [(r["at"][:16], short(r["text"], 48), "yes" if r["remem"] else "-", r["remem_tokens"],
                    "yes" if r["similar"] else "-", r["similar_tokens"]) for r in result["rows"]])
        if result["rows_omitted"] and result["rows"]:  # --limit 0 asked for the totals alone
            print(f"showing the latest {len(result['rows'])} of {result['corrections']} corrections "
                  "(--limit N for more)")
        t = result["totals"]
        print(f"remem covered {t['remem_covered']} of {result['corrections']} with {t['remem_tokens']} tokens; "
              f"retrieve-similar (k={result['k']}) covered {t['similar_covered']} with {t['similar_tokens']} tokens; "
              f"only remem {t['only_remem']}, only retrieve-similar {t['only_similar']}")


def _register_model_tests(app: typer.Typer) -> None:
    @app.command()
    def experiment(
        limit: int = typer.Option(10, "--limit", help="How many of the strongest lessons to test (1-1000)."),
        pairs: str = typer.Option(None, "--pairs", help="Write training pairs (JSONL) from passing answers."),
        force: bool = typer.Option(False, "--force", help="With --pairs: replace a file that is not a "
                                   "training-pairs file."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Test a configured model on your lessons: behaviour with and without the reminder, and boundary.

        Needs `llm.url` (any OpenAI-compatible server: Ollama, llama.cpp, LM Studio).
        Example: remem experiment --limit 5 --pairs pairs.jsonl
        """
        from remem.engine import experiment as exp
        from remem.engine import llm

        exp.check_limit(limit)  # before anything runs: 0 tested nothing, -1 left a lesson out
        if pairs is not None and not pairs.strip():
            raise ValueError("--pairs is empty; name a file, e.g. --pairs pairs.jsonl")
        if pairs:
            exp.check_pairs_target(pairs, force=force)  # before the model is asked anything
        # No model: nothing is tested and the exit is 1; with --pairs, the pairs earlier runs
        # kept are written all the same. --json has the shape of a run either way (untested()),
        # with the line said on stderr as its error.
        error = None
        with open_store() as store:
            untested = not llm.enabled()
            if untested:
                result = exp.untested()
                error = (exp.NO_MODEL if not pairs else
                         "no model configured, so no lesson was tested; the pairs are the passing answers "
                         "earlier runs kept (set a model: `remem config set llm.url http://127.0.0.1:11434`)")
                print(f"remem: {error}", file=sys.stderr)
            else:
                result = exp.run(store, limit=limit)
            result["pairs_written"] = exp.write_training_pairs(store, pairs, force=force) if pairs else None
        # Lessons were put to the model and no verdict came back yes or no: nothing measured.
        nothing_judged = bool(result["lessons"]) and not exp.judged(result)
        if result["no_answer"] or nothing_judged:
            from remem import config, paths

            url = config.load()["llm"].get("url")
            if result["no_answer"]:
                said = (f"the model at {url} gave no answer {result['no_answer']} times"
                        f"{', so nothing was judged' if nothing_judged else ''} (see {paths.log_file()})")
            else:
                said = (f"no verdict of the model at {url} began with yes or no, so nothing was judged "
                        "(a model that follows instructions better: `remem config set llm.model …`)")
            print(f"remem: {said}", file=sys.stderr)
            if nothing_judged:
                error = said
        # Without a model nothing was tested: exit 1, once the pairs earlier runs kept are
        # written (the line on stderr says so). So too when nothing was judged.
        failed = untested or nothing_judged
        if json_out:
            # As every command's --json error: an "error" key on stdout, the line on stderr.
            emit_json({**result, "error": error} if failed else result)
            if failed:
                raise typer.Exit(1)
            return
        def rate(share: dict) -> str:
            return "n/a" if share["rate"] is None else f"{share['rate']:.0%} of {share['judged']}"
        if not untested:
            print(f"model {result['model']}, {result['lessons']} lessons")
            print(f"  follows the lesson without the reminder: {rate(result['behaviour_without_reminder'])}")
            print(f"  follows the lesson with the reminder:    {rate(result['behaviour_with_reminder'])}")
            print(f"  asks first where asking is right:        {rate(result['boundary_asks_first'])}")
        if pairs and not result["pairs_written"]:
            print(f"no training pairs to write yet (no passing answer kept); {pairs} was not touched")
        elif pairs:
            earlier = " (from earlier runs)" if untested else ""
            print(f"wrote {result['pairs_written']} training pairs to {pairs}{earlier}")
        if failed:
            raise typer.Exit(1)

    @app.command()
    def goals(
        days: int = typer.Option(30, "--days", help="The window the measures look at."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """remem's own goals, each with its number, target and pass/fail/unknown.

        Example: remem goals
        """
        from remem.engine.goals import check
        from remem.engine.measure import check_days

        check_days(days)
        with open_store() as store:
            found = check(store, days)
        if json_out:
            emit_json(found)
            return
        table(None, ["", "goal", "number", "target", "status"],
              [(g["id"], g["goal"], "-" if g["number"] is None else g["number"], g["target"], g["status"])
               for g in found])
