"""The typer app. Commands live in remem/commands/*; each body imports what it needs, lazily."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from remem import __version__
from remem.errors import RememError, database_problem

# Each module defines register(app); listed here so `remem --help` shows every command.
COMMAND_MODULES = ("core", "recall", "data", "proxy", "server", "ingest", "lifecycle", "measure", "share", "hooks", "sleep", "tui")


HELP_ORDER = ("demo", "status", "remember", "recall", "ingest", "list", "sleep", "morning", "lessons",
              "context", "setup", "doctor", "tui", "serve", "tools", "call", "share", "forget", "promote",
              "connect", "graph", "tasks", "measure", "compare", "goals", "experiment", "proxy", "config",
              "paths", "backup", "restore", "export", "import", "hook")

# Commands that only make sense on a memory that exists: given a --home that does not exist (a
# typo, most often), they stop with a line rather than start an empty memory there.
NEEDS_A_MEMORY = frozenset({
    "status", "recall", "list", "sleep", "morning", "lessons", "context", "tui", "forget", "promote",
    "connect", "graph", "tasks", "measure", "compare", "goals", "experiment", "backup", "export",
    "share", "call"})


class WholeHelpGroup(TyperGroup):
    """Lists each command's whole first sentence, wrapped, rather than cut with '...'."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=200)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class RememGroup(WholeHelpGroup):
    """Turns expected failures into one line on stderr and exit 1, never a traceback."""

    def list_commands(self, ctx: Any) -> list[str]:
        # `remem --help` in the order a new person meets them; commands not named here follow.
        names = list(super().list_commands(ctx))
        rank = {name: i for i, name in enumerate(HELP_ORDER)}
        return sorted(names, key=lambda n: rank.get(n, len(rank)))

    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except Exception as exc:
            _usage_exit(exc)
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (RememError, ValueError) as exc:
            print(f"remem: {exc}", file=sys.stderr)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            print("remem: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None
        except BrokenPipeError:
            _reader_gone()
        except OSError as exc:
            if not getattr(exc, "filename", None):
                raise
            # A path the person gave that cannot be read or written: not a bug, name the path.
            print(f"remem: cannot use {exc.filename} ({exc.strerror or exc}); check the path and its "
                  "permissions", file=sys.stderr)
            raise typer.Exit(1) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            import click

            # typer >= 0.17 vendors its own click: its usage errors derive from TyperException
            usage = (click.ClickException, click.exceptions.Exit, getattr(typer, "TyperException", click.ClickException))
            if isinstance(exc, usage):
                _usage_exit(exc)
                raise
            problem = database_problem(exc)
            if problem:
                print(f"remem: {problem}", file=sys.stderr)
                raise typer.Exit(1) from None
            if os.environ.get("REMEM_DEBUG"):
                raise
            from remem.log import log_exception

            where = log_exception("cli", exc)
            print(f"remem: unexpected error: {exc!r} (traceback in {where})", file=sys.stderr)
            raise typer.Exit(1) from None


def _reader_gone() -> None:
    """The reader of stdout went away (`remem export | head`): stop quietly, as Unix tools do."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise typer.Exit(141) from None


def _usage_exit(exc: BaseException) -> None:
    """A usage error (missing argument, unknown option, bad value) as one line, exit 1."""
    kinds = {c.__name__ for c in type(exc).__mro__}
    if "UsageError" not in kinds or "NoArgsIsHelpError" in kinds:
        return  # not a usage error, or a bare group that shows its help
    names, node = [], getattr(exc, "ctx", None)
    while node is not None and node.parent is not None:  # the command's words, without argv[0]
        names.insert(0, node.info_name)
        node = node.parent
    where = " ".join(["remem", *names])  # the same whether started as `remem` or `python -m remem`
    message = exc.format_message().strip().rstrip(".")  # type: ignore[attr-defined]
    message = message[:1].lower() + message[1:]
    if getattr(exc, "option_name", None) == "--home":  # a common slip: it belongs before the command
        print(f"remem: --home goes before the command: remem --home DIR {' '.join(names) or 'COMMAND'} …",
              file=sys.stderr)
        raise typer.Exit(1) from None
    print(f"remem: {message}; see `{where} --help`", file=sys.stderr)
    raise typer.Exit(1) from None


app = typer.Typer(
    cls=RememGroup,
    name="remem",
    help="Long-term memory for AI coding agents, on your own machine.\n\n"
    "Example: remem demo && remem --home ~/.remem-demo recall 'which installer'",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"remem {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    home: Optional[str] = typer.Option(
        None, "--home", help="Use this folder as remem's home for this command (overrides REMEM_HOME)."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    if home:
        os.environ["REMEM_HOME"] = os.path.abspath(os.path.expanduser(home))
        from remem.commands import _out

        _out.home_flag = os.environ["REMEM_HOME"]
        if ctx.invoked_subcommand in NEEDS_A_MEMORY:
            _out.named_home = os.environ["REMEM_HOME"]


for _name in COMMAND_MODULES:
    importlib.import_module(f"remem.commands.{_name}").register(app)
for _group in app.registered_groups:  # `remem lessons --help` etc. list whole summaries too
    _group.cls = WholeHelpGroup


def run() -> None:
    try:
        app()
    finally:
        try:
            sys.stdout.flush()  # a reader gone after the last write must not print a traceback
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
