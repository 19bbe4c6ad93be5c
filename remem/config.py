"""config.toml under REMEM_HOME: read with tomllib, written with tomlkit so comments survive.

Every key has a default here; a missing file means all defaults. tomlkit is imported only
when writing, so reading config stays cheap on the hook path.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from remem import paths
from remem.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "embed": {
        # "" = the bundled model; else a local model2vec folder or a hub id.
        "model": "",
    },
    "recall": {
        "k": 5,
        "w_relevance": 0.6,
        "w_recency": 0.25,
        "w_strength": 0.15,
        "recency_half_life_days": 30.0,
        # Blend of semantic and keyword evidence inside relevance (see docs/RECALL.md).
        "semantic_weight": 0.33,
        # Share of relevance given to closeness to a date the query names ("on 3 June, 2025").
        "date_weight": 0.29,
        "date_half_life_days": 7.0,
        # Share of relevance given to the speaker a query names ("what did Ana say about …").
        "speaker_weight": 0.2,
        # FTS5 BM25 column weights for episodes (title repeats the gist's first line, so half;
        # detail holds surrounding context). Measured on LoCoMo dev: docs/RECALL.md.
        "bm25_title": 0.5,
        "bm25_gist": 1.0,
        "bm25_detail": 0.3,
        # First depth of the candidate lists (best by relevance, most recent); recall reads
        # them 4x deeper until no unread memory can reach the top k, at most
        # max(max_candidates, 4 x pool), where pool = max(candidates, 20 x k).
        "candidates": 100,
        "recent_candidates": 50,
        "max_candidates": 400,
        # In a store of 1,000+ episodes, query words found in more than this share of them are
        # left out of the BM25 query (they cost the most and weigh the least).
        "common_term_share": 0.2,
        # ... and of the rest, the rarest are kept while their matches add up to at most this
        # many memories (BM25 costs about 1 ms per 1,000 matches at 100,000 episodes).
        "keyword_budget": 15000,
        # Active lessons compete with episodes in recall results (type "lesson").
        "include_lessons": True,
        "touch_strength": 0.1,
        "touch_health": 10.0,
    },
    "lifecycle": {
        "short_term_ttl": "7d",
        "flashbulb_arousal": 0.8,
        "flashbulb_importance": 0.9,
        "flashbulb_days": 30,
        "importance_decay_per_day": 0.005,
        "health_decay_short_term": 8.0,
        "health_decay_long_term": 2.0,
        "strength_half_life_days": 45.0,
        "archive_below": 0.15,
        # cleanup_archived deletes archived memories untouched this long (docs/LIFECYCLE.md).
        "cleanup_archived_days": 180,
    },
    "graph": {
        "auto_threshold": 0.7,
        "auto_top_k": 5,
    },
    "tasks": {
        "expire_short_term": 300,
        "importance_decay": 86400,
        "active_forgetting": 86400,
        "consolidate": 604800,
        "cleanup_archived": 2592000,
        "discover_connections": 3600,
        # Seconds between runs; 0 turns a task off.
        "strength_decay": 86400,
    },
    "sleep": {
        "surprise_cut_model": 0.62,
        "surprise_cut_hashed": 0.55,
        "prediction_days": 14,
        # A prediction is confirmed by an episode this close to its lesson's sources (hashed
        # space; in a model's space the consolidation cut is used).
        "verify_cut_hashed": 0.5,
        # Let the configured local model (llm.url) reword new lessons; the plain text is kept.
        "reword": True,
        # At most this many new memories get connections discovered per sleep (0 = all).
        "connect_max": 2000,
    },
    "prime": {
        "max_chars": 1200,
        "max_lessons": 3,
        "holdout": True,
        # cosine + 0.15 x keyword evidence; chosen with bench/prime.py (docs/BENCHMARKS.md): at 0.5
        # four in five prompts that bear on no lesson were shown one anyway.
        "min_relevance": 0.65,
        "stop_block": True,
        "timeout_ms": 1000,
    },
    "share": {
        "folder": "",
        "min_strength": 1.0,
        "corroborate_cut": 0.85,
        "max_file_bytes": 65536,
        # Off: an origin's lessons wait as candidates until `remem share trust ORIGIN`.
        "trust_on_first_use": False,
    },
    "server": {
        "host": "127.0.0.1",
        "port": 4545,
        "token": "",
    },
    "proxy": {
        "port": 4546,
        "inject": True,
        "record": True,
    },
    "llm": {
        # An OpenAI-compatible endpoint (Ollama, llama.cpp, LM Studio). Empty = no model.
        "url": "",
        "model": "",
        "api_key": "",
        "timeout_s": 20.0,
    },
    "backup": {
        "keep": 7,
        # A rotated backup after every full `remem sleep` (the nightly schedule runs one).
        "nightly": True,
    },
    "events": {
        # An events file (--events FILE or the inbox) larger than this is refused with the reason.
        "max_file_bytes": 50_000_000,
    },
}

_cache: dict[str, tuple[float, dict[str, Any]]] = {}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load(path: Path | None = None) -> dict[str, Any]:
    """The config with defaults filled in. Raises ConfigError (one line) if it is malformed."""
    path = path or paths.config_path()
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return copy.deepcopy(DEFAULTS)
    cached = _cache.get(str(path))
    if cached and cached[0] == mtime:
        return copy.deepcopy(cached[1])
    import tomllib  # only when there is a file: hooks with no config skip its import

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix that line or move the file aside") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path} ({exc}); fix its permissions or move it aside") from None
    problem = _type_problem(data, DEFAULTS)
    if problem:
        raise ConfigError(f"{path}: {problem}; fix that line, or delete it to use the default")
    merged = _merge(DEFAULTS, data)
    _cache[str(path)] = (mtime, merged)
    return copy.deepcopy(merged)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string (in quotes)"
    if isinstance(value, dict):
        return "a [section]"
    return f"a {type(value).__name__}"


def _type_problem(data: dict[str, Any], defaults: dict[str, Any], prefix: str = "") -> str | None:
    """The first known key whose value has the wrong type (unknown keys are left alone, so a
    config written by a newer remem still loads). Wrong types are refused, not replaced by the
    default: a setting silently ignored is worse than one line naming it."""
    for key, value in data.items():
        if key not in defaults:
            continue
        want, name = defaults[key], f"{prefix}{key}"
        if isinstance(want, dict):
            if not isinstance(value, dict):
                return f"{name} must be a [section], not {value!r}"
            problem = _type_problem(value, want, f"{name}.")
            if problem:
                return problem
            continue
        if isinstance(want, bool):
            ok = isinstance(value, bool)
        elif isinstance(want, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(want, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            ok = isinstance(value, type(want))
        if not ok:
            return f"{name} must be {_type_name(want)}, not {value!r}"[:300]
        if name in _AT_LEAST and value < _AT_LEAST[name]:
            return f"{name} must be at least {_AT_LEAST[name]}, not {value!r}"
    return None


# Keys whose value has a floor. backup.keep 0 made `remem backup` delete the backup it had
# just made along with every other one.
_AT_LEAST: dict[str, int] = {"backup.keep": 1}


def get(dotted: str, cfg: dict[str, Any] | None = None) -> Any:
    """A value by dotted key, e.g. get("recall.k")."""
    node: Any = cfg if cfg is not None else load()
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"unknown config key {dotted!r}; `remem config show` lists the keys")
        node = node[part]
    return node


def _coerce(dotted: str, raw: str) -> Any:
    """Turn a command-line string into the type of the key's default."""
    default = _leaf_default(dotted)
    try:
        if isinstance(default, bool):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        raise ConfigError(f"{dotted} must be {_type_name(default)}, not {raw!r}") from None
    return raw


def _leaf_default(dotted: str) -> Any:
    """The default of a settable key. A whole section is refused: `recall = "1"` would make
    the file fail to load, and every later command (and every hook) with it."""
    default = get(dotted, DEFAULTS)
    if isinstance(default, dict):
        raise ConfigError(f"{dotted} is a section; set {dotted}.KEY (`remem config show` lists them)")
    return default


def set_value(dotted: str, value: Any, path: Path | None = None) -> None:
    """Write one key into config.toml, keeping the person's comments and formatting."""
    import tomllib

    import tomlkit

    path = path or paths.config_path()
    if isinstance(value, str):
        value = _coerce(dotted, value)
    else:
        _leaf_default(dotted)  # validates the key
    load(path)  # refuse to rewrite a malformed file
    doc = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    *sections, leaf = dotted.split(".")
    node: Any = doc
    for section in sections:
        if section not in node:
            node[section] = tomlkit.table()
        node = node[section]
    node[leaf] = value
    text = tomlkit.dumps(doc)
    # The new file must load, or it is not written: a bad value would stop every command.
    problem = _type_problem(tomllib.loads(text), DEFAULTS)
    if problem:
        raise ConfigError(f"{problem}; config.toml was left unchanged")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    _cache.pop(str(path), None)
