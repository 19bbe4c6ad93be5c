"""Option rules shared by commands.

A filter given twice (`remem list --project alpha --project beta`) keeps only the last value:
the answer is then for beta alone, and nothing says alpha was dropped. A command built with
`cls=OnceCommand` refuses a repeated filter in one line instead ("give --project once").
Repeatable options (`--tag`, `--kind`) and flags (`--json`, `--archived`) are left as they are,
and so are the options that shape the answer rather than say what it is about (`-k`,
`--limit`, `--offset`, `--mode`): there the last one wins, as in most tools, so a shell alias
holding `--limit 20` still takes `--limit 5` after it.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand


# The filters that take one value: given twice, they read as "both", which one value cannot say.
ONCE = frozenset({"--project", "--type", "--since", "--until", "--field"})


def _single_value(param: Any) -> bool:
    """Whether `param` is a filter that takes one value, once (not a flag, not repeatable)."""
    return (getattr(param, "param_type_name", "") == "option" and not getattr(param, "multiple", False)
            and not getattr(param, "is_flag", False) and not getattr(param, "count", False)
            and _name(param) in ONCE)


def _name(param: Any) -> str:
    """The option as people type it: its long form (`--project`), else its short one (`-k`)."""
    opts = list(getattr(param, "opts", None) or [])
    longs = [o for o in opts if o.startswith("--")]
    return (longs or opts or [str(param.name)])[0]


def repeated_option(command: Any, ctx: Any, args: list[str]) -> str | None:
    """The first single-value filter of `command` given more than once in `args` (as
    `--project` names it), or None. Read with the command's own parser, so `--project=a`,
    `-k3` and a value after `--` count as click counts them. Words the parser refuses are
    left for the real parse to report, as it always has."""
    try:
        parser = command.make_parser(ctx)
        _, _, order = parser.parse_args(args=list(args))
    except Exception:  # an unknown option, a missing value: the command's own parse says so
        return None
    if any(getattr(param, "name", None) == "help" for param in order):
        return None  # --help wins, as click has it: the help is shown, nothing is run
    seen: dict[int, int] = {}
    for param in order:
        if _single_value(param):
            seen[id(param)] = seen.get(id(param), 0) + 1
            if seen[id(param)] == 2:
                return _name(param)
    return None


def refuse_repeats(command: Any, ctx: Any, args: list[str]) -> None:
    """Refuse a single-value filter given twice, in one line naming the fix."""
    if getattr(ctx, "resilient_parsing", False):  # shell completion reads a half-typed line
        return
    flag = repeated_option(command, ctx, args)
    if flag:
        raise ValueError(f"{flag} was given more than once; give {flag} once")


class OnceCommand(TyperCommand):
    """A command whose single-value filters may each be given once: `@app.command(cls=OnceCommand)`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        refuse_repeats(self, ctx, args)
        return super().parse_args(ctx, args)
