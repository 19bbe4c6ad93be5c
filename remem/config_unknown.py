"""config.toml's keys and sections remem does not know (a misspelling, a key from a newer
remem): named once on stderr by commands, with the fix by `remem doctor`, and left out of
`remem config show`. Hooks never import this: a hook's load leaves it to doctor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from remem import config, paths
from remem.errors import ConfigError


def warn_unknown(path: Path, data: dict[str, Any]) -> None:
    """One stderr line naming the unknown keys of a parsed config.toml, once per process."""
    unknown = unknown_settings(data)
    if unknown:
        config.warn_once(f"{path}: {_unknown_said(unknown)}, so nothing uses {'them' if len(unknown) > 1 else 'it'}; "
                   "`remem doctor` names the fix")


def known(cfg: dict[str, Any], defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """A config without the keys and sections remem does not know (unknown_settings names
    them): what `remem config show` shows, so a misspelt key is not taken for a setting."""
    defaults = config.DEFAULTS if defaults is None else defaults
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key not in defaults:
            continue
        want = defaults[key]
        out[key] = known(value, want) if isinstance(want, dict) and isinstance(value, dict) else value
    return out


def unknown_settings(data: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each key or section config.toml holds that remem does not know (a misspelling, a key
    from a newer remem): {"name": "prime.min_relevence" or "recal" for a whole section,
    "section": whether it is one, "in": the known section it is in (None above them), "value", "guess": the known key or section it most likely
    meant, or None}. Nothing reads them; `config show` leaves them out. `data` is the parsed file
    (read here when not given; ConfigError when it cannot be)."""
    if data is None:
        path = paths.config_path()
        if not path.exists():
            return []
        data = config.parse_toml(path, config.read_text(path))
    found: list[dict[str, Any]] = []
    for key, value in data.items():
        want = config.DEFAULTS.get(key)
        if want is None:
            section = isinstance(value, dict)
            found.append({"name": key, "section": section, "in": None, "value": value,
                          "guess": _guess_section(key) if section else _guess_key(key, None)})
        elif isinstance(want, dict) and isinstance(value, dict):
            for leaf, item in value.items():
                if leaf not in want:
                    found.append({"name": f"{key}.{leaf}", "section": False, "in": key, "value": item,
                                  "guess": _guess_key(leaf, key)})
    return found


def _close(word: str, choices: list[str]) -> str | None:
    import difflib  # only when a config holds an unknown key

    lowered = {choice.lower(): choice for choice in choices}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def _guess_section(name: str) -> str | None:
    return _close(name, [s for s, keys in config.DEFAULTS.items() if isinstance(keys, dict)])


def _guess_key(leaf: str, section: str | None) -> str | None:
    """The known key `leaf` most likely meant: one of `section`'s keys close to it, else the
    one key of that name (or close to it) in another section (`k` outside [recall])."""
    if section is not None:
        near = _close(leaf, list(config.DEFAULTS[section]))
        if near is not None:
            return f"{section}.{near}"
    elsewhere = [f"{s}.{k}" for s, keys in config.DEFAULTS.items() if isinstance(keys, dict) and s != section
                 for k in keys]
    same = [name for name in elsewhere if name.split(".", 1)[1] == leaf.lower()]
    if len(same) == 1:
        return same[0]
    near = _close(leaf, [name.split(".", 1)[1] for name in elsewhere])
    owners = [name for name in elsewhere if near is not None and name.split(".", 1)[1] == near]
    return owners[0] if len(owners) == 1 else None


def _unknown_name(item: dict[str, Any]) -> str:
    """How a line names it: prime.min_relevence, [recal]; quoted when it is no plain word (a
    terminal control character in a key is shown, not sent)."""
    name = _plain(item["name"])
    return f"[{name}]" if item["section"] else name


def _plain(word: str) -> str:
    if word and len(word) <= 80 and all(c.isascii() and (c.isalnum() or c in "_-.") for c in word):
        return word
    return repr(word[:60])


def _unknown_said(unknown: list[dict[str, Any]], most: int = 5) -> str:
    """"remem does not know prime.min_relevence (did you mean prime.min_relevance?) or [recal]
    (did you mean [recall]?)": the first `most` of them, and how many more."""
    parts = []
    for item in unknown[:most]:
        guess = item["guess"]
        shown = f"[{guess}]" if guess and item["section"] else guess
        parts.append(_unknown_name(item) + (f" (did you mean {shown}?)" if guess else ""))
    more = len(unknown) - most
    if more > 0:
        parts.append(f"{more} more")
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" or {parts[-1]}"
    return f"remem does not know {listed}"


def _shown_value(value: Any) -> str | None:
    """A value as `remem config set` takes it, quoted for the shell; None for a table or a date."""
    import shlex

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return shlex.quote(str(value))
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return shlex.quote(" ".join(str(v) for v in value))
    return None


def unknown_problem(path: Path | None = None) -> dict[str, str] | None:
    """`remem doctor`'s problem for the keys and sections config.toml holds that remem does not
    know, with the fix: the `remem config set` of the key each most likely meant, and the line
    or section to delete. None when there is none (or the file cannot be read: load says why)."""
    path = path or paths.config_path()
    try:
        data = config.parse_toml(path, config.read_text(path)) if path.exists() else {}
    except (ConfigError, OSError):
        return None
    unknown = unknown_settings(data)
    if not unknown:
        return None
    fixes = []
    for item in unknown:
        name, guess = item["name"], item["guess"]
        if item["section"]:
            sets = []
            if guess is not None:
                for leaf, value in item["value"].items():
                    shown = _shown_value(value)
                    if leaf in config.DEFAULTS[guess] and shown is not None:
                        sets.append(f"`remem config set {guess}.{leaf} {shown}`")
            fixes.append((" and ".join(sets) + ", then " if sets else "") + f"delete the [{_plain(name)}] section")
            continue
        section = item["in"]
        leaf = name[len(section) + 1:] if section else name
        where = f"`{_plain(leaf)}` under [{section}]" if section else f"the `{_plain(leaf)}` line above every section"
        shown = _shown_value(item["value"])
        if guess is not None and shown is not None:
            fixes.append(f"`remem config set {guess} {shown}`, then delete {where}")
        else:
            fixes.append(f"delete {where}")
    return {"problem": f"{path}: {_unknown_said(unknown, most=len(unknown))}, so nothing uses "
                       f"{'them' if len(unknown) > 1 else 'it'}",
            "fix": "; ".join(fixes) + f" (in {path})"}
