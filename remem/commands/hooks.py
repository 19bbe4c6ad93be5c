"""hook, setup, doctor, context: wiring remem into agents and checking it works."""

from __future__ import annotations

import sys
from typing import Any, List, Optional

import typer

from remem.commands._out import emit_json, go_ahead, safe, short, table


def _rendered_summary(rendered: dict[str, Any], deleted: str, took: str) -> str:
    """One line for what --remove does in Claude Code's memory folders (the files are listed
    by --dry-run and --json)."""
    files, memory_md = len(rendered["files"]), len(rendered["memory_md"])
    folders = len(rendered.get("folders") or ())
    parts = [f"{deleted} {files} lesson file{'s' * (files != 1)} sleep rendered"] * bool(files)
    parts += [f"{took} {memory_md} MEMORY.md"] * bool(memory_md)
    parts += [f"{deleted} {folders} empty memory folder{'s' * (folders != 1)} sleep made"] * bool(folders)
    return " and ".join(parts) + " in Claude Code's projects folder"


def register(app: typer.Typer) -> None:
    @app.command(
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                          "help_option_names": []},
        add_help_option=False,
    )
    def hook(ctx: typer.Context) -> None:
        """Run a hook for an agent: prompt, pre-tool, stop or session-end (reads the agent's JSON on stdin).

        Agents run this; `remem setup` wires it. Always exits 0.
        Example: echo '{"prompt": "run the tests", "session_id": "s1"}' | remem hook prompt --agent codex
        """
        from remem.hooks import main as hook_main

        raise typer.Exit(hook_main(list(ctx.args) or ["--help"]))

    @app.command()
    def setup(
        agent: List[str] = typer.Option([], "--agent", "-a", help="claude-code, codex, gemini, cursor, windsurf, "
                                        "claude-desktop or vscode (repeatable; default: every agent found)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the diff of every change; write nothing."),
        remove: bool = typer.Option(False, "--remove", help="Take out exactly what setup added, and the lesson "
                                    "files sleep rendered into Claude Code's memory folders."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask (never asked when stdin is not a terminal)."),
        no_schedule: bool = typer.Option(False, "--no-schedule", help="Leave the nightly ingest and sleep out "
                                         "(remembered: doctor notes it, not as a problem)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON (in a terminal, needs --yes: a question "
                                      "would mix with the JSON)."),
    ) -> None:
        """Wire remem into your agents: hooks, the MCP server, and `remem ingest` before each nightly `remem sleep`.

        Each changed file is backed up first; a second run changes nothing; --remove restores
        the files byte for byte when nothing else changed them, and deletes the lesson files
        sleep rendered (with remem's lines of each MEMORY.md).
        Example: remem setup --agent claude-code --dry-run
        """
        from remem import paths
        from remem.engine import setup as setup_mod
        from remem.setup_toml import TomlkitEditor

        demo_refusal = None
        if paths.is_demo() and not remove:
            # Wiring real agents (~/.claude.json, the nightly timer) to the demo is never wanted.
            # Named by how the demo was chosen: --home, or REMEM_HOME (which --home would not undo).
            from remem.commands import _out

            how = ("run `remem setup` without --home" if _out.home_flag else
                   "unset REMEM_HOME (or point it at your own memory) and run `remem setup`")
            demo_refusal = f"{paths.home()} is the demo memory; {how} to wire your own"
            if not dry_run:
                raise ValueError(demo_refusal)
        edits = setup_mod.plan(agent or None, remove=remove, schedule=not no_schedule,
                               toml_editor=TomlkitEditor())
        changed = [e for e in edits if e.changed]
        errors = [e.error for e in edits if e.error]
        notes = [e.note for e in edits if e.note]
        if not remove and any(e.changed and not e.unwires for e in edits):
            # remem's command goes into configs: said when that remem sits in a virtual
            # environment (a clone's .venv), which deleted leaves every hook "command not found".
            from remem.engine.setup_edit import venv_note

            in_venv = venv_note()
            if in_venv:
                notes.append(in_venv)
        # --remove: the lesson files sleep rendered for this memory, and its lines of MEMORY.md.
        rendered = setup_mod.plan_unrender(agent or None) if remove else None
        unrender = bool(rendered and (rendered["files"] or rendered["memory_md"] or rendered["folders"]))
        if not agent and not remove and not setup_mod.found_agents():
            scheduled = any(e.target == setup_mod.SCHEDULE and not e.error and not e.note for e in edits)
            only = "; only the nightly sleep is set up" if scheduled else ""
            warning = (f"no agent found ({', '.join(setup_mod.AGENTS)}){only}. Install one, or "
                       "name it with --agent")
            if json_out:
                notes.insert(0, warning)
            else:
                print(f"remem: {warning}", file=sys.stderr)
        if dry_run or not (changed or unrender):
            errors += rendered["problems"] if rendered else []
            if demo_refusal:  # the diff is shown, but the run it previews would be refused: exit 1
                errors.insert(0, demo_refusal)
            if not dry_run:  # nothing to write, but the choice of schedule still counts
                if not remove:
                    setup_mod.ensure_log_folder()  # a log folder deleted since: the nightly line needs it
                setup_mod.remember_schedule_choice(schedule=not no_schedule, remove=remove)
            if json_out:
                out = {"dry_run": dry_run, "changes": [dict(e.as_dict(), diff=e.diff()) for e in changed],
                       "errors": errors, "notes": notes, "applied": [],
                       "next_steps": setup_mod.next_steps(edits, remove=remove)}
                if rendered is not None:
                    out["rendered"] = rendered
                emit_json(out)
            else:
                for e in changed:
                    sys.stdout.write(e.diff() or f"{e.path}: {e.as_dict()['action']}\n")
                for path in rendered["files"] if rendered else []:
                    print(f"delete {path} (a lesson file sleep rendered)")
                for change in rendered["memory_md"] if rendered else []:
                    sys.stdout.write(change["diff"])
                for folder in rendered["folders"] if rendered else []:
                    print(f"delete {folder} (a memory folder sleep made, empty once its files go)")
                if not changed and not unrender:
                    # "wired already" only when every file was read and something was checked,
                    # and no note says a part is off (a disabled timer, a commented cron line).
                    if errors or notes:
                        print("nothing changed")
                    elif not edits:
                        print("nothing to change: no agent and no schedule to check")
                    else:
                        print("nothing to change" + ("" if remove else ": remem is wired already"))
                for note in notes:
                    print(f"remem: {note}", file=sys.stderr)
                for err in errors:
                    print(f"remem: {err}", file=sys.stderr)
            if errors:  # with --json too, whether or not anything changed
                raise typer.Exit(1)
            return
        if not json_out:
            for e in changed:
                # Said as apply will report it: a new file is created, not changed.
                action = e.as_dict()["action"]
                verb = ("remove remem from" if remove else
                        {"create": "create", "delete": "delete", "restore": "restore"}.get(action, "change"))
                print(f"will {verb} {e.path} ({', '.join(e.what) or action})")
            if unrender:
                print(f"will {_rendered_summary(rendered, 'delete', 'take remem out of')}")
        if not yes and sys.stdin.isatty() and json_out:
            # A question would mix with the JSON (as with `remem restore --json`): nothing written.
            raise ValueError("setup --json asks no question, so in a terminal it writes only with --yes; "
                             "add --yes (or --dry-run to see the changes)")
        if not yes and sys.stdin.isatty() and not go_ahead("Go ahead?"):
            print("nothing changed")  # no is an answer, not an error: not even $REMEM_HOME is made
            return
        if changed and not setup_mod.keeps_records(remove):
            notes.append(setup_mod.unrecorded_note(changed))
        # Only with a config to change: apply() writes setup.json, which a remove that only
        # deletes lesson files has no reason to create.
        done = setup_mod.apply(edits, remove=remove) if changed else []
        took_out = any(d.get("target") == setup_mod.SCHEDULE and d.get("changed") and not d.get("error")
                       for d in done)
        setup_mod.remember_schedule_choice(schedule=not no_schedule, remove=remove, took_out=took_out)
        errors += [d["error"] for d in done if d.get("error")]
        notes += [d["note"] for d in done if d.get("note")]
        unrendered = setup_mod.apply_unrender(agent or None) if unrender else rendered
        errors += unrendered["problems"] if unrendered else []
        steps = setup_mod.next_steps(edits, remove=remove)  # with the errors: none for a half-wired agent
        if json_out:
            out = {"dry_run": False, "changes": [e.as_dict() for e in changed], "applied": done,
                   "errors": errors, "notes": notes, "next_steps": steps}
            if unrendered is not None:
                out["rendered"] = unrendered
            emit_json(out)
        else:
            for d in done:
                if d.get("error"):
                    continue
                where = f" (backup {d['backup']})" if d.get("backup") else ""
                print(f"{d.get('action', 'done')}: {d['path']}{where}")
            if unrendered and (unrendered["files"] or unrendered["memory_md"] or unrendered["folders"]):
                print(f"{_rendered_summary(unrendered, 'deleted', 'took remem out of')}; the next "
                      "`remem sleep` writes them again")
            for step in steps:
                print(f"next: {step}")
            for note in notes:
                print(f"remem: {note}", file=sys.stderr)
            for err in errors:
                print(f"remem: {err}", file=sys.stderr)
        if errors:
            raise typer.Exit(1)

    @app.command()
    def doctor(
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
        no_run: bool = typer.Option(False, "--no-run", help="Do not run the wired hook commands."),
        repair_fts: bool = typer.Option(False, "--repair-fts", help="Rebuild the full-text indexes first."),
    ) -> None:
        """What is wired where, whether each hook runs and how fast, the store's health, and fixes.

        Exits 1 when it finds a problem (with --json too), as setup does with errors.
        Example: remem doctor --json
        """
        from remem.commands._out import require_memory
        from remem.engine import doctor as doctor_mod

        require_memory()  # `--home` with a typo: named, not diagnosed as a new empty memory
        if repair_fts:
            doctor_mod.repair_fts()
        report = doctor_mod.diagnose(run_hooks=not no_run)
        if json_out:
            emit_json(report)
            if report["problems"]:  # a script checking the exit status learns of them too
                raise typer.Exit(1)
            return
        table("agents", ["agent", "found", "MCP", "hooks"],
              [(a["agent"], "yes" if a["found"] else "no", "yes" if a["mcp"] else "no",
                ", ".join(a["hooks"]) or "-") for a in report["agents"]])
        if report["hooks"]:
            table("hook runs", ["agent", "event", "ok", "ms"],
                  [(h["agent"], h["event"], "yes" if h["ok"] else f"no: {h['error']}", h["ms"])
                   for h in report["hooks"]])
        st = report["store"]
        if st.get("exists"):
            print(f"store: {safe(st['path'])}  integrity {st.get('integrity', '?')}  "
                  f"fts {', '.join(f'{k} {v}' for k, v in (st.get('fts') or {}).items())}  "
                  f"schema {st.get('schema')}/{st.get('schema_latest')}  active lessons {st.get('active_lessons')}")
        sched = report["schedule"]
        state = f", {sched['state']}" if sched.get("state") else ""
        print(f"nightly sleep: {'scheduled' if sched['wired'] else 'not scheduled'} ({sched['how']}{safe(state)})")
        for note in report.get("notes") or []:
            print(f"note: {safe(note)}")
        if report["problems"]:
            print("\nproblems:")
            for p in report["problems"]:  # they quote config files and hook output: escaped
                print(f"  - {safe(p['problem'])}\n      fix: {safe(p['fix'])}")
            raise typer.Exit(1)
        print("\nno problems found")

    @app.command()
    def context(
        project: Optional[str] = typer.Option(None, "--project", "-p", help="The project: its folder, or the name "
                                              "of a folder remem has seen (default: here)."),
        prompt: Optional[str] = typer.Option(None, "--prompt", help="Preview what this prompt would be shown."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """The lessons that may be shown in a project (with --prompt, exactly what a hook would inject).

        A preview: nothing is recorded. Example: remem context --project ~/code/shop --prompt "build the image"
        """
        import os

        from remem import config
        from remem.commands._out import open_store
        from remem.commands.core import project_folder
        from remem.engine import prime
        from remem.engine.lifecycle import check_filters

        # A blank --project (an unset variable) is refused, as `remem remember` refuses it: read
        # as none, it would preview the shell's folder instead without a word.
        check_filters(project=project)
        cfg = config.load()
        with open_store() as store:
            # --project by the one rule every edge uses (a path, or a known folder's name).
            cwd = project_folder(store, project) or os.path.abspath(os.getcwd())
            shown = prime.preview(store, cwd, prompt, cfg=cfg)
        lessons, text, near = shown["lessons"], shown["text"], shown["near_misses"]
        if json_out:
            emit_json({"project": cwd, "prompt": prompt, "lessons": lessons, "text": text,
                       "near_misses": near, "min_relevance": shown["min_relevance"]})
            return
        elsewhere = shown.get("elsewhere")
        if not lessons:
            if elsewhere and not prompt:
                print(f"no lessons would be injected for {safe(cwd)}; {elsewhere['n']} active lessons are for "
                      f"other projects, e.g. `remem context --project {safe(elsewhere['cwd'])}`")
            else:
                print(f"no lessons would be injected for {safe(cwd)}"
                      + (" with that prompt" if prompt else "; lessons come from `remem sleep`"))
        else:
            table(f"lessons for {cwd}", ["id", "kind", "project", "text"],
                  [(l["id"], l["kind"], "yes" if l.get("project") else "-", short(l["text"], 80)) for l in lessons])
        if near:
            print(f"closest below prime.min_relevance {shown['min_relevance']:g} (not shown):")
            for n in near:
                below = int(n["relevance"] * 1000) / 1000  # cut, not rounded: never shown as the bar
                print(f"  {safe(n['id'])}  {below:.3f}  {short(n['text'], 70)}")
        if not lessons:
            return
        print(safe(text, multiline=True))  # the block the agent would get, shown escaped
