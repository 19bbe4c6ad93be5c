"""status, paths, remember, config, demo."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, List, Optional

import typer

from remem.commands._out import emit_json, open_store, table

if TYPE_CHECKING:
    from remem.engine.store import Store


def project_folder(store: Store, project: Optional[str]) -> Optional[str]:
    """The folder a `--project` means, by the engine's one rule (projects.resolve_project): a
    path (relative to the shell's folder), or the name of a folder remem has seen."""
    import os

    from remem.engine.projects import resolve_project

    if project is None:  # read no folder: the shell's may have been deleted under it
        return None
    try:
        here = os.getcwd()
    except OSError:
        here = None  # a relative path is then refused by the rule, an absolute one still works
    return resolve_project(store, project, here=here, example="`--project {}`")


def _when(stamp: str | None) -> str:
    """An ISO stamp as 'YYYY-MM-DD HH:MM UTC' for people (--json keeps the full stamp)."""
    if not stamp:
        return "never"
    from remem.engine import clock

    try:
        return clock.parse(stamp).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return stamp


# Settings config.toml keeps 0600 for: `remem config show` hides their values unless asked.
SECRET_KEYS = (("server", "token"), ("llm", "api_key"))


def _hide_secrets(cfg: dict) -> list[tuple[str, str]]:
    """Each secret set in `cfg` replaced by a placeholder giving its length (an empty one is
    no secret: shown as it is); returns the keys hidden."""
    hidden = []
    for section, key in SECRET_KEYS:
        value = (cfg.get(section) or {}).get(key)
        if isinstance(value, str) and value:
            cfg[section][key] = f"<hidden: {len(value)} characters>"
            hidden.append((section, key))
    return hidden


def register(app: typer.Typer) -> None:
    @app.command()
    def status(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """What the memory holds: counts per table, embedding space, size, last ingest and sleep.

        Example: remem status --json
        """
        from remem.engine import status as status_mod
        from remem.engine.embed import get_embedder

        with open_store() as store:
            info = status_mod.summary(store)
        embedder = get_embedder()
        info.update(space=embedder.space, dim=embedder.dim)
        counts, by_kind = info["counts"], info["episodes_by_kind"]
        if json_out:
            emit_json(info)
            return
        rows = [(name, n) for name, n in counts.items()]
        print(f"remem memory at {info['home']}")  # a table title would wrap a long path
        table(None, ["table", "rows"], rows)
        kinds = ", ".join(f"{k} {n}" for k, n in by_kind.items()) or "none yet"
        print(f"episodes by kind: {kinds}")
        print(f"embedding space:  {info['space']} ({info['dim']} dimensions)")
        print(f"database size:    {info['db_bytes'] / 1e6:.1f} MB")
        print(f"last ingest:      {_when(info['last_ingest'])}")
        print(f"last sleep:       {_when(info['last_sleep'])}")
        if not by_kind:
            print("nothing yet: `remem ingest` reads your agent sessions, `remem remember TEXT` adds a "
                  "note, `remem demo` builds a sample memory to try")

    @app.command()
    def paths(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Every location remem uses and whether it exists, and the variables that move them.

        Example: REMEM_HOME=/tmp/m remem paths
        """
        from remem import paths as paths_mod

        found = {k: str(v) for k, v in paths_mod.all_paths().items()}
        if json_out:
            emit_json(found)
            return
        table(None, ["what", "path", "exists"],
              [(k, v, "yes" if __import__("os").path.exists(v) else "no") for k, v in found.items()])
        print("Move them with REMEM_HOME, CLAUDE_CONFIG_DIR, CODEX_HOME and HOME (APPDATA on Windows); "
              "XDG_CONFIG_HOME moves the nightly systemd timer and, on Linux, Claude Desktop's and VS Code's files.")

    @app.command()
    def remember(
        text: str = typer.Argument(..., help="What to remember."),
        kind: str = typer.Option("note", "--kind", help="note, correction, error, surprise or environment."),
        tag: List[str] = typer.Option([], "--tag", "-t", help="A tag (repeatable)."),
        importance: float = typer.Option(0.5, "--importance", help="0..1"),
        valence: float = typer.Option(0.0, "--valence", help="-1..1, how it felt."),
        arousal: float = typer.Option(0.0, "--arousal", help="0..1; >= 0.8 makes a flashbulb memory."),
        ttl: Optional[str] = typer.Option(None, "--ttl", help="Short-term with this lifetime: 30s, 10m, 2h, 7d (1s to 36500d)."),
        short_term: bool = typer.Option(False, "--short-term", help="Short-term (expires after --ttl or the default)."),
        project: Optional[str] = typer.Option(
            None, "--project", help="The project it belongs to: its folder (a path), or the name of a "
            "folder remem has seen."),
        json_out: bool = typer.Option(False, "--json", help="Print the stored memory as JSON."),
    ) -> None:
        """Remember something now.

        Example: remem remember "use uv, not pip, to install packages" --tag python
        """
        from remem.engine.lifecycle import check_filters
        from remem.engine.memories import check_tags, remember_noting

        # A blank --tag or --project (an unset variable) is refused, as recall and list refuse it:
        # dropped, the memory would be stored untagged, or under no project. A tag too long to
        # keep whole is refused too, as the MCP tools refuse it, rather than stored cut.
        check_filters(project=project)
        check_tags(tag)
        if ttl is not None and not ttl.strip():
            # The engine reads "" as "no lifetime" (MCP clients send it for unset), which would
            # keep the memory for good: a person typing --ttl meant a lifetime.
            raise ValueError("--ttl is empty; give a lifetime such as 30s, 10m, 2h or 7d "
                             "(or leave --ttl out for a long-term memory)")

        with open_store() as store:
            memory, said = remember_noting(
                store, text, kind=kind, tags=tag, importance=importance, valence=valence,
                arousal=arousal, ttl=ttl, short_term=short_term, cwd=project_folder(store, project),
            )
        if json_out:
            emit_json({**memory, "note": said} if said else memory)  # the note as MCP gives it
        else:
            extra = " (flashbulb)" if memory.get("flashbulb_until") else ""
            if memory.get("expires_at"):
                extra += f" (short-term, expires {memory['expires_at'][:16].replace('T', ' ')} UTC)"
            print(f"remembered {memory['id']}{extra}")
        if said:  # stored otherwise than typed (cut, a secret replaced): never without a word
            print(f"remem: {said}", file=sys.stderr)

    config_app = typer.Typer(help="Read and change config.toml (comments are kept).\n\n"
                             "Example: remem config set recall.k 8", no_args_is_help=True)
    app.add_typer(config_app, name="config")

    @config_app.command("show")
    def config_show(
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
        show_secrets: bool = typer.Option(False, "--show-secrets", help="Print server.token and llm.api_key "
                                          "as they are (hidden otherwise: a screen or a log is seen by others)."),
    ) -> None:
        """Every setting with its current value, as TOML. Example: remem config show"""
        from remem import config, config_unknown

        cfg = config_unknown.known(config.load())
        hidden = [] if show_secrets else _hide_secrets(cfg)
        if json_out:
            emit_json(cfg)
            return
        import tomlkit

        # As TOML (true, "", 30.0), so what is shown can be pasted into config.toml as it is.
        # Only the keys remem knows: one it does not know (a misspelling) is used by nothing,
        # and load() names it on stderr (`remem doctor` names the fix).
        doc = tomlkit.document()
        doc.update(cfg)
        for section, key in hidden:  # a hidden value says so on its line, with how to see it
            doc[section][key].comment("`remem config show --show-secrets` prints it")
        print(tomlkit.dumps(doc), end="")

    # `remem config set recall.k -3`: a value that starts with "-" is a value, not an unknown
    # option (the value is then checked by config.set_value).
    @config_app.command("set", context_settings={"ignore_unknown_options": True})
    def config_set(
        key: str,
        value: str,
        json_out: bool = typer.Option(False, "--json", help='Print {"key", "value"} as JSON, the value as set.'),
    ) -> None:
        """Set one key. Example: remem config set recall.k 8"""
        from remem import config

        if key.strip() == "embed.model":  # one that cannot be loaded would silence every hook
            value = config.usable_model(value)
        written = config.set_value(key, value)  # as checked and written: no reload of the file
        try:
            config.load()
        except config.ConfigError as exc:  # another key, bad before: this one is set all the same
            print(f"remem: warning: {exc}", file=sys.stderr)
        if key.strip() == "prime.timeout_ms" and written > config.hook_budget_cap_ms():
            # Set as asked, but no prompt, pre-tool or stop hook spends that long (doctor says so too).
            why = (f"while {config.HOOK_CAP_ENV} is set (a setting for tests)"
                   if config.hook_cap_override() is not None else
                   f"so they give up before the agent's {config.HOOK_TIMEOUT_S} s timeout")
            print(f"remem: note: hooks use at most {config.hook_budget_cap_ms()} ms of it, {why}",
                  file=sys.stderr)
        if json_out:
            emit_json({"key": key, "value": written})
            return
        import tomlkit

        print(f"{key} = {tomlkit.item(written).as_string()}")  # as config.toml holds it

    @app.command()
    def demo(
        folder: Optional[str] = typer.Option(
            None, "--dir", help="Where to build the demo memory (default ~/.remem-demo)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Build a small demo memory in its own folder (never your real one) and show it.

        Example: remem demo
        """
        from remem.commands import _out
        from remem.engine.demo import build_demo

        if folder is not None and not folder.strip():
            # '' would fall back to ~/.remem-demo: a folder the person did not name.
            raise ValueError("--dir is empty; name a folder, e.g. remem demo --dir /tmp/remem-demo "
                             "(or leave --dir out for ~/.remem-demo)")
        # `remem --home DIR demo` means DIR; a folder that is not a demo is refused, never emptied.
        summary = build_demo(folder or _out.home_flag)
        if json_out:
            emit_json(summary)
            return
        print(f"Built a demo memory in {summary['home']}")
        for line in summary["lines"]:
            print(f"  {line}")
        print("\nBrowse it (--home points any command at the demo; your own memory is not touched):")
        for cmd in summary["try"]:
            print(f"  {cmd}")
