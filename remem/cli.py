"""The typer app. Commands live in remem/commands/*; each body imports what it needs, lazily."""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import Any, NoReturn, Optional

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
# typo, most often), they stop with a line rather than start an empty memory there. The others
# (ingest, remember, import, demo, restore …) start one.
NEEDS_A_MEMORY = frozenset({
    "status", "recall", "list", "sleep", "morning", "lessons", "context", "tui", "forget", "promote",
    "connect", "graph", "tasks", "measure", "compare", "goals", "experiment", "backup", "export",
    "share", "call", "doctor", "serve"})

# Commands whose errors are JSON on stdout too, whether or not they were given --json: their
# output is always JSON.
ALWAYS_JSON = frozenset({"call"})

# What a Ctrl-C leaves behind, for the long commands: said instead of a bare "interrupted".
INTERRUPTED = {
    "sleep": "sleep interrupted; the passes it finished are kept: run `remem sleep` again to do the rest",
    "ingest": "ingest interrupted; what it read so far is kept: run the same command again (unchanged "
              "files are skipped)",
    "import": "import interrupted; the lines read so far are kept: run the same `remem import` again "
              "(same ids are updated, not duplicated)",
    "demo": "demo interrupted; run `remem demo` again: it builds the demo anew",
    "backup": "backup interrupted; no half-written copy is left: run `remem backup` again",
    "export": "export interrupted; no file is left half-written (what went to a pipe is cut short): "
              "run `remem export` again",
}
DRY_RUN_INTERRUPTED = "{} --dry-run interrupted; nothing was changed"


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
        global _json_errors
        _json_errors = False  # until invoke reads the command's words
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except Exception as exc:
            _usage_exit(exc)
            raise

    def invoke(self, ctx: Any) -> Any:
        global _json_errors, _command_words
        # The command's own words (`list --json`, `lessons show ID --json`): an error is then
        # also {"error": …} on stdout, so a script reading JSON reads why it failed.
        words = [*getattr(ctx, "_protected_args", []), *ctx.args]
        _command_words = words[:words.index("--")] if "--" in words else words
        _json_errors = _asks_for_json(words) or bool(words) and words[0] in ALWAYS_JSON
        try:
            return super().invoke(ctx)
        except (RememError, ValueError) as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail(_interrupted(ctx.invoked_subcommand, _command_words), 130)
        except BrokenPipeError:
            _reader_gone()
        except OSError as exc:
            if exc.errno in WRITE_ERRNOS and not getattr(exc, "filename", None):
                # stdout (or a file already open) on a full disk, /dev/full, a dead device; what
                # stdout still buffers goes nowhere, so the flush on the way out cannot fail again
                _stdout_to_devnull()
                _fail(f"could not write: {exc.strerror or exc}", json_too=False)
            if not getattr(exc, "filename", None):
                raise
            # A path the person gave that cannot be read or written: not a bug, name the path.
            _fail(f"cannot use {exc.filename} ({exc.strerror or exc}); check the path and its permissions")
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            import click

            # typer >= 0.17 vendors its own click: its usage errors derive from TyperException
            usage = (click.ClickException, click.exceptions.Exit, getattr(typer, "TyperException", click.ClickException))
            if isinstance(exc, usage):
                _usage_exit(exc, ctx.command)
                raise
            problem = database_problem(exc)
            if problem:
                _fail(problem)
            if os.environ.get("REMEM_DEBUG"):
                raise
            from remem.log import log_exception

            where = log_exception("cli", exc)
            _fail(f"unexpected error: {exc!r} (traceback in {where})")


# errno values of a write that cannot be done (a full disk, /dev/full, a quota, a dead device).
WRITE_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS")
                         if hasattr(errno, name))

# Set for each command run: whether its arguments ask for JSON, and its words after remem's
# own options, up to any -- (see RememGroup.invoke).
_json_errors = False
_command_words: list[str] = []


def _interrupted(command: str | None, words: list[str]) -> str:
    """The line a Ctrl-C ends `command` (given `words`, up to any --) with: for a long command,
    what was kept and what to run next; else just "interrupted" (a question, a quick command)."""
    if command and "--dry-run" in words:
        return DRY_RUN_INTERRUPTED.format(command)
    return INTERRUPTED.get(command or "", "interrupted")


def _asks_for_json(args: list[str]) -> bool:
    words = args[:args.index("--")] if "--" in args else args
    return "--json" in words


def _fail(message: str, code: int = 1, json_too: bool = True) -> NoReturn:
    """The one way a command fails: `remem: <message>` on stderr and exit `code`; with --json,
    also {"error": <message>} on stdout."""
    if _json_errors and json_too:
        try:
            from remem.commands._out import json_text

            sys.stdout.write(json_text({"error": message}) + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):  # stdout itself is what failed: stderr still says why
            pass
    print(f"remem: {message}", file=sys.stderr)
    raise typer.Exit(code) from None


def _reader_gone() -> NoReturn:
    """The reader of stdout went away (`remem export | head`): stop quietly, as Unix tools do."""
    _stdout_to_devnull()
    raise typer.Exit(141) from None


def _after_the_command(exc: BaseException, option: str) -> str | None:
    """`remem --json share peers` as it should have been typed (`remem share peers --json`),
    when a command follows the misplaced option; else None."""
    words = sys.argv[1:]
    group = getattr(getattr(exc, "ctx", None), "command", None)
    known = set(getattr(group, "commands", {}) or {})
    if option not in words:
        return None
    before, rest = words[:words.index(option)], words[words.index(option) + 1:]
    if not rest or rest[0] not in known:
        return None
    command = group
    for word in rest:  # down to the command that would take the option (`share` -> `peers`)
        sub = (getattr(command, "commands", None) or {}).get(word)
        if sub is None:
            break
        command = sub
    if not any(option in (*p.opts, *p.secondary_opts) for p in getattr(command, "params", [])):
        return None
    import shlex  # quoted as typed: `recall "which installer"` stays one argument

    return shlex.join(["remem", *before, *rest, *([] if option in rest else [option])])


def _failing_command(exc: BaseException, root: Any) -> tuple[list[str], Any]:
    """The words naming the command a usage error is about (`lessons list`, without argv[0])
    and that command. Most errors carry the command's context; an option missing its value
    (`remem recall x -k`) fails before that context exists, so the words are read from the
    command line, down from `root` (the group they were given to; None: remem's own options)."""
    node = getattr(exc, "ctx", None)
    if node is not None:
        names, command = [], node.command
        while node.parent is not None:
            names.insert(0, node.info_name)
            node = node.parent
        return names, command
    names, command = [], root
    for word in _command_words if root is not None else []:
        sub = (getattr(command, "commands", None) or {}).get(word)
        if sub is None:
            break
        names.append(word)
        command = sub
    return names, command


def _typed_word(option: str) -> str:
    """The command-line word `option` was read from: `-3 days` for -3, `--a=b` for --a (click
    names only the option); `option` itself when no word is found."""
    words = _command_words
    if option in words:
        return option
    for word in words:
        if option.startswith("--") and word.startswith(option + "="):
            return word
        if len(option) == 2 and word[:1] == "-" and word[1:2] != "-" and option[1] in word[1:]:
            return word  # a cluster of short options (`-3 days`), read letter by letter
    return option


def _is_a_value(word: str) -> bool:
    """Whether a word click read as an option is plainly a value: a negative number (`-3`,
    `-0.5`, `-inf`) or one holding a space (a sentence: "--force-with-lease is safer")."""
    if any(c.isspace() for c in word):
        return True
    try:
        float(word)
    except ValueError:
        return False
    return True


def _takes_values(command: Any) -> bool:
    """Whether `command` takes arguments (a word it does not know as an option could be one)."""
    return any(getattr(p, "param_type_name", "") == "argument" for p in getattr(command, "params", None) or [])


def _usage_exit(exc: BaseException, root: Any = None) -> None:
    """A usage error (missing argument, unknown option, bad value) as one line, exit 1.
    root: the group the command's words were given to, when the error came from them."""
    kinds = {c.__name__ for c in type(exc).__mro__}
    if "NoArgsIsHelpError" in kinds and getattr(exc, "ctx", None) is not None:
        # `remem` or a group alone (`remem lessons`): its help is the answer, as with --help
        # (stdout, exit 0), not an error (click's stderr and exit 2; errors exit 1).
        print(exc.ctx.get_help())  # type: ignore[attr-defined]
        raise typer.Exit(0)
    if "UsageError" not in kinds or "NoArgsIsHelpError" in kinds:
        return  # not a usage error, or a bare group that shows its help
    names, command = _failing_command(exc, root)
    where = " ".join(["remem", *names])  # the same whether started as `remem` or `python -m remem`
    message = exc.format_message().strip().rstrip(".")  # type: ignore[attr-defined]
    message = message[:1].lower() + message[1:]
    option = str(getattr(exc, "option_name", "") or "")
    if option == "--home":
        if "NoSuchOption" in kinds:  # a common slip: given after the command, it belongs before
            _fail(f"--home goes before the command: remem --home DIR {' '.join(names) or 'COMMAND'} …")
        # `remem --home` and nothing after it: it was before the command; the folder is missing
        _fail("--home needs a folder: remem --home DIR COMMAND …")
    typed = _after_the_command(exc, option) if "NoSuchOption" in kinds and not names else None
    if typed:  # `remem --json ingest`: a command's own option, put before the command
        _fail(f"{option} goes after the command: {typed}")
    word = _typed_word(option) if "NoSuchOption" in kinds and names and _takes_values(command) else None
    if word is not None and _is_a_value(word):
        # `remem recall -3`, `remem remember "--force-with-lease is safer"`: a value that starts
        # with - was read as an option; say how to pass it as a value (and not which options it
        # is close to). Not for a word that reads as an option (`--limit`, `--jsn`): passed
        # after --, it would be searched for or stored.
        import shlex

        message = (f"no such option: {option} (to pass {shlex.quote(word)} as a value, put -- before "
                   f"the arguments: {where} -- …)")
    _fail(f"{message}; see `{where} --help`")


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
    if home is not None and not home.strip():
        # '' would fall back to REMEM_HOME or ~/.remem: the real memory, not the one asked for.
        raise RememError(f"--home is empty; name a folder, e.g. remem --home ~/.remem-demo "
                         f"{ctx.invoked_subcommand or 'status'}")
    command = ctx.invoked_subcommand
    if command == "hook":
        # Hooks never stop here: they fail open in remem/hooks (entry.py runs them without
        # this app; this is `remem hook` reached some other way).
        return
    from remem import paths
    from remem.commands import _out

    _out.home_flag = _out.named_home = None  # one command's, not the last one's
    if home:
        os.environ["REMEM_HOME"] = os.path.abspath(os.path.expanduser(home))
        _out.home_flag = os.environ["REMEM_HOME"]
    else:
        problem = paths.empty_home_problem()
        if problem:
            raise RememError(problem)
    where = str(paths.home())
    if os.path.exists(where) and not os.path.isdir(where):
        how = "REMEM_HOME=DIR" if not home and os.environ.get("REMEM_HOME") else "--home DIR"
        raise RememError(f"{where} is a file, not a folder; give a folder ({how}) or move the file aside")
    if not home or os.path.isdir(where):
        # A REMEM_HOME not made yet is how a memory is often named before its first ingest (an
        # agent's MCP entry, a script): it is used as it is.
        return
    # A home named by --home that does not exist: a typo, most often.
    if command in NEEDS_A_MEMORY:
        _out.named_home = where
    words = _command_words
    if "--help" in words:
        return
    if command == "config" and words[1:2] == ["set"]:
        import shlex

        # config.toml alone in a new folder would pass for a memory configured, and is not the
        # one the person meant when the name is a typo: the folder is made on purpose first.
        raise RememError(f"{_out.missing_home(where)}; to configure a new memory before "
                         f"its first ingest, make the folder first: mkdir -p {shlex.quote(where)}")
    if command == "setup" and "--remove" not in words:
        # Setup may well prepare a new home (the first ingest starts the memory): said, not refused.
        print(f"remem: {where} does not exist yet (check --home if you meant another memory); "
              "setup wires the agents to it and the first ingest starts the memory there",
              file=sys.stderr)


for _name in COMMAND_MODULES:
    importlib.import_module(f"remem.commands.{_name}").register(app)
for _group in app.registered_groups:  # `remem lessons --help` etc. list whole summaries too
    _group.cls = WholeHelpGroup


def run() -> None:
    try:
        app()
    finally:
        # Output still buffered is written now: a reader gone after the last write exits
        # quietly, a full disk (`remem status > /dev/full`) is one line and exit 1, never a
        # traceback (nor a second one when Python flushes again on the way out).
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _stdout_to_devnull()
        except OSError as exc:
            _stdout_to_devnull()
            print(f"remem: could not write: {exc.strerror or exc}", file=sys.stderr)
            raise SystemExit(1) from None


def _stdout_to_devnull() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
