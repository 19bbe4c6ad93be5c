"""backup, restore, export, import: the memory as a file you can keep or move."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer

from remem.commands._out import emit_json, go_ahead, open_store


def register(app: typer.Typer) -> None:
    @app.command()
    def backup(
        path: Optional[str] = typer.Argument(
            None, help="File or folder; a path ending in / is a folder, created if missing "
            "(default: $REMEM_HOME/backups/)."),
        force: bool = typer.Option(False, "--force", help="Replace PATH even if it is not a remem backup."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """A consistent copy of the live memory, safe while hooks and sleep write.

        Without PATH it goes to the backups folder, which keeps the newest `backup.keep`
        copies (config). Example: remem backup ~/remem-backup.db
        """
        from remem import config
        from remem.engine import backup as backup_mod

        if path is not None and not path.strip():
            raise ValueError("the backup path is empty; name a file or folder, or leave it out for "
                             "the backups folder")
        with open_store() as store:
            if path:
                dest, removed = backup_mod.backup(store, path, force=force, check=True), []
            else:
                dest, removed = backup_mod.rotated_backup(store, int(config.get("backup.keep")))
        if json_out:
            emit_json({"backup": str(dest), "rotated_out": [str(p) for p in removed]})
        else:
            print(f"backed up to {dest}")
            if removed:
                print(f"removed {len(removed)} older backup(s)")

    @app.command()
    def restore(
        path: str = typer.Argument(..., help="A backup made by `remem backup`."),
        yes: bool = typer.Option(False, "--yes", help="Do not ask (needed when stdin is not a terminal)."),
        json_out: bool = typer.Option(False, "--json", help='Print {"restored", "into", "kept", "next"} as JSON '
                                      "(needs --yes: a question would mix with the JSON)."),
    ) -> None:
        """Replace the memory with a backup (the current one is kept beside it as
        memory.db.before-restore-YYYYMMDDTHHMMSS; earlier ones are never overwritten).

        Example: remem restore ~/.remem/backups/memory-20261129-030000.db --yes
        """
        from remem.engine import backup as backup_mod

        if not yes:
            # No one to ask (a script, a pipe): refuse rather than replace the memory unasked.
            if json_out or sys.stdin is None or not sys.stdin.isatty():
                raise ValueError("restore replaces the memory; confirm with --yes")
            if not go_ahead("Replace the current memory with this backup?"):
                print("nothing changed")  # no is an answer, not an error
                return
        dest, kept = backup_mod.restore(path)
        source, dest = Path(os.path.expanduser(path)).absolute(), dest.absolute()
        # The lesson files (lessons.jsonl, MEMORY.md, remem-*.md) still tell the replaced memory.
        then = "run `remem sleep --pass render` to rewrite the lesson files from the restored memory"
        if json_out:
            emit_json({"restored": str(source), "into": str(dest),
                       "kept": None if kept is None else str(kept), "next": then})
            return
        print(f"restored {source} into {dest}")
        if kept is not None:
            print(f"the memory it replaced is kept as {kept}")
        print(f"next: {then}")

    @app.command("export")
    def export_cmd(
        file: Optional[str] = typer.Argument(None, help="Write here (default, or -: stdout)."),
        force: bool = typer.Option(False, "--force", help="Replace FILE even if it is not a remem export "
                                   "(never the live memory or a remem backup)."),
    ) -> None:
        """The whole memory as JSONL (episodes, lessons, predictions, connections, tags …).

        Example: remem export memory.jsonl
        """
        from remem.engine import backup as backup_mod

        if file == "-":  # as `remem import -` reads stdin
            file = None
        if file is not None and not file.strip():
            raise ValueError("the export file is empty; name a file, or - (or nothing) for stdout")
        target: Path | None = None
        if file is not None:
            target = Path(os.path.expanduser(file))  # ~nobody/… stays as typed, never a crash
            if target.is_dir():
                raise ValueError(f"{file} is a folder; name a file, e.g. {target / 'memory.jsonl'}")
            # The live memory, its -wal/-shm, its config or keys, another home's memory: never,
            # --force or not; a database is named as one, with no --force offered.
            backup_mod.refuse_live_file(target, "the export")
            backup_mod.need_folder(target)
            if not target.exists() or target.is_file():  # a FIFO or /dev/stdout is written to as it is
                backup_mod.refuse_database(target, "a remem export", force=force)
                backup_mod.check_replaceable(target, backup_mod.is_export, "a remem export", force=force)
        with open_store() as store:
            if target is None:
                backup_mod.export_jsonl(store, sys.stdout)
                return
            if target.exists() and not target.is_file():
                # A FIFO, /dev/stdout, a terminal: written to as it is, never replaced by a
                # regular file (a rename over it would).
                try:
                    out = open(target, "w", encoding="utf-8")
                except OSError as exc:
                    raise ValueError(f"cannot write to {target} ({exc.strerror}); check the path") from None
                try:
                    with out:
                        counts = backup_mod.export_jsonl(store, out)
                except OSError as exc:  # /dev/full, a reader gone: name the file, in one line
                    raise ValueError(f"could not write to {target} ({exc.strerror or exc})") from None
            else:
                tmp = target.with_name(target.name + ".partial")
                try:
                    with open(tmp, "w", encoding="utf-8") as out:
                        counts = backup_mod.export_jsonl(store, out)
                    os.replace(tmp, target)
                except BaseException as exc:  # a failed write, a Ctrl-C: no half export left behind
                    if tmp.is_file():
                        tmp.unlink(missing_ok=True)
                    if isinstance(exc, OSError):
                        raise ValueError(f"cannot write to {target} ({exc.strerror}); check the path "
                                         "and its permissions") from None
                    raise
        print(f"exported to {target}: " + ", ".join(f"{n} {t}" for t, n in counts.items()), file=sys.stderr)

    @app.command("import")
    def import_cmd(
        file: str = typer.Argument(..., help="A file written by `remem export` (- for stdin)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Load a memory exported with `remem export`; same ids are updated, not duplicated.

        Example: remem import memory.jsonl
        """
        # A byte that is not UTF-8 is read as U+FFFD, from a file as from stdin, and the rest of
        # its line is imported: one bad byte never stops an import halfway.
        read: list[bool] = []  # True once a line that is not blank is read
        result = _import(file, read)
        if not read and file != "-":
            # Not even the header line every export starts with: no export at all.
            raise ValueError(f"{file} is empty, not a remem export (an export starts with its header "
                             "line); `remem export FILE` writes one")
        if not result["imported"] and result["errors"]:
            raise ValueError(f"nothing imported from {file} ({len(result['errors'])} lines skipped, first: "
                             f"{result['errors'][0]}); `remem import` reads what `remem export` writes")
        if json_out:
            emit_json(result)
            return
        print("imported: " + (", ".join(f"{n} {t}" for t, n in result["imported"].items())
                              or ("nothing" if read else "nothing (stdin was empty)")))
        kept = result.get("kept", {})
        names = {"episodes": ("memory", "memories"), "lessons": ("lesson", "lessons")}
        newer = " and ".join(f"{kept[k]} {names[k][kept[k] != 1]}" for k in names if kept.get(k))
        if newer:
            print(f"kept {newer} as they are here: changed here since the export")
        rejected = " and ".join(f"{kept[k + '_lessons']} {k}" for k in ("vetoed", "revoked")
                                if kept.get(k + "_lessons"))
        if rejected:
            print(f"kept {rejected} lesson(s) as they are here: an import never makes them active again")
        if result["left_out_forgotten"]:
            print(f"left out {len(result['left_out_forgotten'])} memories deleted for good here "
                  "(`remem forget --hard`)")
        for error in result["errors"][:20]:
            print(f"  skipped {error}", file=sys.stderr)


def _import(file: str, read: list[bool]) -> dict:
    """Import FILE (- for stdin) into the memory: import_jsonl's result. `read` gets True
    once a line that is not blank is read (an empty file is no export)."""
    import io

    from remem.engine import backup as backup_mod

    def noting(lines):
        for line in lines:
            if not read and line.strip():
                read.append(True)
            yield line

    with open_store() as store:
        if file == "-":
            raw = getattr(sys.stdin, "buffer", None)
            if raw is None:  # a stdin that is text only
                return backup_mod.import_jsonl(store, noting(sys.stdin))
            stream = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
            try:
                return backup_mod.import_jsonl(store, noting(stream))
            finally:
                stream.detach()  # stdin stays open
        path = os.path.expanduser(file)  # as `export` writes a quoted ~/…
        try:
            handle = open(path, encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ValueError(backup_mod.cannot_read(path, exc)) from None
        with handle:
            return backup_mod.import_jsonl(store, noting(handle))
