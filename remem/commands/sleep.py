"""sleep, morning, lessons list|show|edit|veto|restore."""

from __future__ import annotations

import sys
from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator, List, Optional

import typer

from remem.commands._out import emit_json, open_store, safe, short, table
from remem.errors import RememError


LIST_LIMIT = 50  # `lessons list` shows this many lessons unless --limit says otherwise

# DESIGN names two passes by what they do; the engine by a word. Both are accepted.
PASS_ALIASES = {"consolidate": "lessons", "discover": "connect", "discover_connections": "connect",
                "discover-connections": "connect"}


def _pass_names(names: Optional[List[str]], known: Any) -> Optional[List[str]]:
    """--pass values with the aliases resolved, each once, in the order given (None: all)."""
    if not names:
        return None
    out: List[str] = []
    for name in names:
        real = PASS_ALIASES.get(name.strip().lower(), name.strip().lower())
        if real not in known:
            raise ValueError(f"unknown pass {name!r}; the passes are {', '.join(known)} (aliases: "
                             + ", ".join(f"{a} = {b}" for a, b in PASS_ALIASES.items()) + ")")
        if real not in out:
            out.append(real)
    return out


def register(app: typer.Typer) -> None:
    @app.command()
    def sleep(
        pass_: Optional[List[str]] = typer.Option(
            None, "--pass", help="Run only this pass (repeatable): redact, embed, expire, decay, lessons, "
            "merge, verify, predict, connect, render (aliases: consolidate = lessons, discover or "
            "discover_connections = connect)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Work on a copy: change and write nothing."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars and no summary (bars are "
                                   "only drawn on a terminal anyway)."),
        json_out: bool = typer.Option(False, "--json", help="Print the run's summary as JSON."),
    ) -> None:
        """The nightly consolidation: lessons from repeated corrections and errors, predictions,
        and the lesson files agents read. Safe to run again; meant for cron.

        Example: remem sleep    (or: remem sleep --pass lessons --dry-run --json)
        """
        from remem.engine import sleep as sleep_mod

        passes = _pass_names(pass_, sleep_mod.PASSES)
        # Bars only for a person watching: piped or in cron they would be a second, truncated
        # copy of the summary in the log.
        bars = not (quiet or json_out) and sys.stderr.isatty()
        with open_store() as store, (_bars() if bars else nullcontext(None)) as show:
            summary = sleep_mod.run_sleep_collect(store, passes, dry_run=dry_run, on_progress=show)
        if summary.get("backup", {}).get("error"):  # the sleep's work is kept; say why no backup
            print(f"remem: {summary['backup']['error']}", file=sys.stderr)
        if json_out:
            emit_json(summary)
        elif not quiet:
            _print_summary(summary)

    @app.command()
    def morning(json_out: bool = typer.Option(
            False, "--json", help="Print the report, the span it covers and the last runs as JSON "
            "(for scripts: it does not count as read).")) -> None:
        """The morning report: what every sleep since you last read it learned, merged,
        confirmed, failed and let fade, and the delegation counts. Reading it here (or in the
        TUI) starts the next report's span.

        Example: remem morning
        """
        from remem import paths
        from remem.commands._out import require_memory
        from remem.engine import render_morning
        from remem.engine import sleep as sleep_mod

        require_memory()  # a mistyped --home is named, as by every command that reads a memory
        if json_out:
            report, covers, runs = sleep_mod.morning_report(mark_read=False), None, []
            # No memory there yet (a REMEM_HOME named before its first ingest): nothing to
            # report, and reading it starts no memory there (nor does the text form).
            if paths.db_path().exists():
                with open_store() as store:
                    covers, runs = sleep_mod.report_covers(store), sleep_mod.history(store, 5)
            emit_json({"report": report, "covers": covers,
                       "read_at": render_morning.read_at(), "runs": runs})
            return
        text = sleep_mod.morning_report()
        if text is None:
            # Nothing yet, not a failure: said on stdout, exit 0, as `remem lessons list` says it
            # of a new memory (and as --json gives "report": null).
            print("no morning report yet; run `remem sleep` first")
            return
        print(safe(text, multiline=True), end="")  # lesson words come from transcripts and peers

    from remem.engine.store import LESSON_STATUSES  # light: the --status help names them

    lessons_app = typer.Typer(help="The lessons sleep learned: list, show, edit, veto, restore.\n\n"
                              "Example: remem lessons list --status all",
                              no_args_is_help=True)
    app.add_typer(lessons_app, name="lessons")

    @lessons_app.command("list")
    def lessons_list(
        status: str = typer.Option("active", "--status", help=f"{', '.join(LESSON_STATUSES)} or all."),
        kind: Optional[str] = typer.Option(None, "--kind", help="correction, error, surprise or note."),
        project: Optional[str] = typer.Option(
            None, "--project", help="Only the lessons that apply in this project (its folder, or the name "
            "of a folder remem has seen): those learned there or in a folder above it, and the general ones."),
        limit: Optional[int] = typer.Option(
            None, "--limit", help=f"Show at most N lessons, strongest first: the table shows {LIST_LIMIT} "
            "unless given, --json every lesson unless given; 0 shows every lesson.", metavar="N"),
        json_out: bool = typer.Option(False, "--json", help="Print JSON (every lesson with its sources)."),
    ) -> None:
        """The lessons, strongest first. Example: remem lessons list --status all --json"""
        from remem.commands.core import project_folder
        from remem.engine.lessons import LESSON_KINDS, for_project, list_lessons
        from remem.engine.lifecycle import check_filters
        from remem.engine.memories import with_provenance

        # Before the folder is looked up: a blank --project resolves to none (every project).
        check_filters(project=project)
        if status != "all" and status not in LESSON_STATUSES:
            raise ValueError(f"--status must be all or one of {', '.join(LESSON_STATUSES)}")
        if kind is not None and kind not in LESSON_KINDS:
            raise ValueError(f"--kind must be one of {', '.join(LESSON_KINDS)}, not {kind!r}")
        if limit is not None and limit < 0:
            raise ValueError(f"--limit must be 0 (every lesson) or more, not {limit}")
        statuses = None if status == "all" else [status]
        with open_store() as store:
            # As the MCP `lessons` tool and GET /memory/lessons?project= choose them: a project's
            # are the ones `context` may inject there.
            folder = project_folder(store, project)
            if folder:
                found = for_project(store, folder, statuses=statuses, kind=kind)
            else:
                found = list_lessons(store, statuses=statuses, kind=kind)
            found = with_provenance(store, found)  # who sent a received lesson
        most = (0 if json_out else LIST_LIMIT) if limit is None else limit
        more = len(found) - most if most else 0
        if more > 0:
            found = found[:most]
        if json_out:
            emit_json(found)
            return
        if not found:
            if folder:
                print(f"no {'' if status == 'all' else status + ' '}lessons{f' of kind {kind}' if kind else ''} "
                      f"apply in {safe(folder)}; without --project every project's are listed")
            elif status == "all" and kind:
                print(f"no lessons of kind {kind}; without --kind every kind is listed")
            elif status not in ("active", "all") or kind:
                print(f"no {status} lessons{f' of kind {kind}' if kind else ''}; "
                      "`remem lessons list --status all` shows every lesson")
            else:  # no active lesson, or none at all: why, and what waits
                print(_no_lessons_yet())
            return
        # A received lesson says who sent it after its words, not in a column of its own: in
        # 80 columns the lesson is already the narrowest column, and its words come first.
        table(None, ["id", "kind", "status", "strength", "seen", "lesson"],
              [(l["id"], l["kind"], l["status"], f"{l['strength']:.1f}", l["seen"],
                short(l["text"], 80) + (f" (from {_sender(l, short_form=True)})" if l["received"] else ""))
               for l in found])
        if more > 0:
            print(f"… {more} more; use --limit N (0: every lesson) or --json")

    @lessons_app.command("show")
    def lessons_show(
        lesson_id: str = typer.Argument(..., help="A lesson id (or its first characters)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """One lesson with its sources and predictions. Example: remem lessons show 3fa2"""
        from remem.engine.browse import lesson_detail
        from remem.engine.memories import with_provenance

        with open_store() as store:
            found = lesson_detail(store, lesson_id, sources_limit=200, predictions_limit=None)
            (lesson,) = with_provenance(store, [found["lesson"]])
        sources, aliases = found["episodes"], found["aliases"]
        preds = found["predictions"][::-1]  # oldest first: the order they were made in
        if json_out:
            emit_json({**lesson, "source_episodes": sources, "predictions": preds, "aliases": aliases})
            return
        # Stored words (a received lesson's id, text and note among them) never drive the terminal.
        print(f"{safe(lesson['id'])}  {lesson['kind']}  {lesson['status']}  strength {lesson['strength']:.1f}"
              f"  seen {lesson['seen']}")
        print(f"\n  {safe(lesson['text'], multiline=True)}\n")
        if lesson.get("draft") and lesson["draft"] != lesson["text"]:
            # The words before the model's rewording or a person's edit, not the lesson's now.
            print(f"  earlier text: {safe(lesson['draft'], multiline=True)}")
        if lesson["received"]:
            print(f"  from: {_sender(lesson)}")
            print("  corroborated by: " + (", ".join(_sender(o) for o in lesson["corroborated_by"])
                                           or "no other memory yet"))
        if lesson.get("note"):
            print(f"  note: {safe(lesson['note'], multiline=True)}")
        print(f"  created {lesson['created']}, updated {lesson['updated']}, {_where(lesson.get('cwd'))}")
        if sources:
            table("sources", ["id", "kind", "at", "title"],
                  [(s["id"], s["kind"], s["at"][:16], short(s["title"], 70)) for s in sources])
        if preds:
            table("predictions", ["made", "outcome", "prediction"],
                  [(p["made"][:16], p["outcome"] or "open", short(p["text"], 70)) for p in preds])
        if aliases:
            print("merged into it: " + ", ".join(safe(a["old"]) for a in aliases))

    @lessons_app.command("edit")
    def lessons_edit(
        lesson_id: str = typer.Argument(..., help="A lesson id."),
        text: Optional[str] = typer.Option(None, "--text", help="The new text (else $EDITOR opens)."),
        json_out: bool = typer.Option(False, "--json", help="Print the lesson as JSON, with `changed`, "
                                      "`redacted`, `cut`, `replaced` and `revoked_words`."),
    ) -> None:
        """Change a lesson's words; the next sleep renders them.

        Example: remem lessons edit 3fa2 --text "Install packages with uv, never pip."
        """
        from remem.engine.lessons import edit_text, get_lesson

        with open_store() as store:
            lesson = get_lesson(store, lesson_id)
            if text is None:
                edited = _edit(lesson["text"] + "\n")
                if edited is None:
                    # The keys an edit's JSON always has, as an edit that wrote nothing has them.
                    said = {"replaced": None, "revoked_words": None, "redacted": False, "cut": 0}
                    _edit_unchanged({**lesson, **said}, "unchanged: the editor was closed unsaved", json_out)
                    return
                text = edited
            if not text.strip():
                raise ValueError("a lesson needs text; use `remem lessons veto ID` to drop it")
            changed = edit_text(store, lesson["id"], text)
        if not changed["changed"]:
            _edit_unchanged(changed, f"{changed['id']} says this already: nothing to change", json_out)
            return
        if json_out:
            emit_json(changed)
            return
        print(f"{safe(changed['id'])}: {safe(changed['text'], multiline=True)}")
        from remem.engine.lessons import edit_notes

        for note in edit_notes(changed, was_received=bool(lesson.get("origin")), sync="`remem share sync`",
                               edit=f"`remem lessons edit {changed['id']}`"):
            print(f"  {safe(note)}")

    @lessons_app.command("veto")
    def lessons_veto(
        lesson_id: str = typer.Argument(..., help="A lesson id."),
        note: Optional[str] = typer.Option(None, "--note", help="Why (kept with the lesson)."),
        json_out: bool = typer.Option(False, "--json", help="Print the lesson as JSON, with `changed` "
                                      "(false: it was vetoed already)."),
    ) -> None:
        """Never hand this lesson to an agent again (its files go at the next sleep).

        Example: remem lessons veto 3fa2 --note "only true for the old repo"
        """
        from remem.engine.render_vetoes import NothingToDo, veto_lesson, veto_said
        from remem.engine.share_export import exported_before

        try:
            with open_store() as store:
                lesson = veto_lesson(store, lesson_id, note=note, how="remem lessons veto")
                # A veto is this memory's: the memories that took the lesson from the share
                # folder keep it until its author revokes it.
                exported = exported_before(store, lesson)
        except NothingToDo as done:  # a no-op, as `restore` of an active lesson: not a failure
            _unchanged(lesson_id, done, json_out)
            return
        if json_out:
            emit_json({**lesson, "changed": True, "exported": exported})
            return
        print(veto_said(lesson["id"], exported=exported, revoke=f"`remem share revoke {lesson['id']}`"))

    @lessons_app.command("restore")
    def lessons_restore(
        lesson_id: str = typer.Argument(..., help="A lesson id."),
        json_out: bool = typer.Option(False, "--json", help="Print the lesson as JSON, with `changed` "
                                      "(false: no veto held it back)."),
    ) -> None:
        """Undo a veto: the lesson goes back to the status it had (active: rendered again; a
        received lesson that was waiting for a decision waits again, in `remem share candidates`).

        Example: remem lessons restore 3fa2
        """
        from remem.engine.render_vetoes import NothingToDo, restore_lesson

        try:
            with open_store() as store:
                lesson = restore_lesson(store, lesson_id)
        except NothingToDo as done:  # a no-op, as `veto` of a vetoed lesson: not a failure
            _unchanged(lesson_id, done, json_out)
            return
        if json_out:
            emit_json({**lesson, "changed": True})
            return
        if lesson["status"] == "active":
            print(f"restored {lesson['id']}; the next sleep renders it again")
        else:
            print(f"restored {lesson['id']} to {lesson['status']}: it waits in `remem share candidates` "
                  "for you to accept or reject it")


def _edit_unchanged(lesson: dict, why: str, json_out: bool) -> None:
    """An edit, veto or restore that changed nothing: its line, or with --json the lesson as it
    is, `changed` false and that line as `message`."""
    if json_out:
        emit_json({**lesson, "changed": False, "message": why})
    else:
        print(safe(why))


def _unchanged(lesson_id: str, done: Exception, json_out: bool) -> None:
    """A veto or restore that found the lesson as asked already (_edit_unchanged, the lesson
    read only for --json)."""
    if not json_out:
        _edit_unchanged({}, str(done), False)
        return
    from remem.engine.lessons import get_lesson

    with open_store() as store:
        _edit_unchanged(get_lesson(store, lesson_id), str(done), True)


def _sender(lesson: dict, *, short_form: bool = False) -> str:
    """Who sent a lesson (or a corroborating origin, {"origin", "label"}): the label the person
    gave that peer and its origin, as `remem share candidates` names it (short_form: the label,
    else the origin's first 8 characters; `remem share peers` gives the full id)."""
    from remem.engine.memories import sender_name

    return safe(sender_name(lesson.get("origin"), lesson.get("origin_label", lesson.get("label")),
                            brief=short_form))


def _where(cwd: str | None) -> str:
    """Where a lesson applies, for `lessons show`: its folder, every project, or, for a shared
    lesson this memory cannot place, the project it waits for (a bare name, not a folder)."""
    from remem.engine.lessons import unbound_project

    if not cwd:
        return "cwd every project"
    if unbound_project(cwd):
        return f"for project '{safe(cwd)}' (not placed here)"
    return f"cwd {safe(cwd)}"


def _no_lessons_yet() -> str:
    """Why there is no lesson yet, and what (if anything) to run: the engine's words, the
    reason the one `remem doctor` gives too."""
    from remem.engine.lessons_pass import no_lessons_listed, waiting

    with open_store() as store:
        return no_lessons_listed(waiting(store), bool(store.meta_times()["last_sleep"]))


def _edit(text: str) -> str | None:
    """The text after the person's $EDITOR (None: closed unsaved). An editor that is missing,
    fails, or cannot run here (vim without a terminal) is one line naming --text; so is text
    saved in another encoding than UTF-8, kept in a file of its own that the line names."""
    import os

    import click

    if not (os.environ.get("VISUAL") or os.environ.get("EDITOR")) and not (
            sys.stdin.isatty() and sys.stdout.isatty()):
        # click would start vi, which floods a pipe with terminal codes before it fails.
        raise RememError('could not run the editor (no $VISUAL or $EDITOR set, and no terminal here '
                         'for vi); give the text with --text "…", or set $EDITOR')
    try:
        # Bytes in and out, decoded here: click decodes the saved file itself and deletes it,
        # so words saved in another encoding would be lost with its UnicodeDecodeError.
        saved = click.edit(text.encode("utf-8"))
    except click.ClickException as exc:
        var = "VISUAL" if os.environ.get("VISUAL") else "EDITOR"
        editor = os.environ.get(var)
        who = f"${var}={editor}" if editor else "no $VISUAL or $EDITOR set"
        why = exc.format_message()
        if editor and why.startswith(editor + ": "):
            why = why[len(editor) + 2:]
        raise RememError(f"could not run the editor ({who}: {why}); give the text with "
                         '--text "…"') from None
    if saved is None:
        return None
    try:
        return bytes(saved).decode("utf-8-sig").replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        import tempfile

        fd, kept = tempfile.mkstemp(prefix="remem-edit-", suffix=".txt")  # private to this user
        with os.fdopen(fd, "wb") as out:
            out.write(saved)
        raise RememError(f"the edited text is not UTF-8 (byte 0x{exc.object[exc.start]:02x}): nothing was "
                         f"changed, and your text is kept in {kept}; save it as UTF-8 in your editor, or "
                         'give the text with --text "…"') from None


@contextmanager
def _bars() -> Iterator[Callable[[Any], None]]:
    """Live progress bars on stderr, one per pass: yields the on_progress callback."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from remem.commands._out import console

    tasks: dict[str, Any] = {}
    with Progress(TextColumn("{task.fields[name]:<8}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.description}", markup=False),
                  console=console(stderr=True)) as bars:
        # The message gets what the other columns leave: a longer one squeezed the elapsed
        # time to "0…".
        room = max(20, bars.console.width - 48)

        def show(event: Any) -> None:
            if event.pass_name == "sleep":  # the run's end: its summary, not a bar
                return
            if event.pass_name not in tasks:
                tasks[event.pass_name] = bars.add_task("", total=None, name=event.pass_name)
            task = tasks[event.pass_name]
            bars.update(task, completed=event.done, total=event.total or None,
                        description=short(event.message, room))
            if event.counts is not None:
                bars.update(task, completed=event.total or 1, total=event.total or 1)

        yield show


def _print_summary(summary: dict) -> None:
    from remem.engine.lessons_pass import waiting_text
    from remem.engine.sleep_describe import describe_pass

    passes = summary.get("passes", {})
    rows = [(name, describe_pass(name, counts)) for name, counts in passes.items()]
    title = "sleep (dry run: nothing was changed)" if summary.get("dry_run") else "sleep"
    table(title, ["pass", "what happened"], rows)
    for problem in passes.get("render", {}).get("problems", []):
        print(f"remem: {problem}", file=sys.stderr)
    events = summary.get("events", {})
    print(f"learned {len(events.get('learned', []))}, merged {len(events.get('merged', []))}, "
          f"confirmed {len(events.get('confirmed', []))}, failed {len(events.get('failed', []))}, "
          f"vetoed {len(events.get('vetoed', []))}")
    waits = waiting_text(summary.get("waiting") or {})
    if waits:  # why nothing (or not everything) became a lesson
        print(waits)
    if summary.get("backup", {}).get("path"):
        print(f"backed up to {summary['backup']['path']}")
    if summary.get("dry_run"):
        return
    if summary.get("morning"):
        print("`remem morning` shows the report; `remem lessons list` the lessons.")
    else:  # morning.md is written by a run with the render pass and one that learns
        print("`remem lessons list` shows the lessons; the next `remem sleep` (every pass) puts "
              "this run in the `remem morning` report.")
