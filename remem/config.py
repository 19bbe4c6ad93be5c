"""config.toml under REMEM_HOME: read with tomllib, written with tomlkit so comments survive.

Every key has a default here; a missing file means all defaults. tomlkit is imported only
when writing, so reading config stays cheap on the hook path.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remem import paths
from remem.errors import ConfigError

# How long the agents wait for a hook `remem setup` wires before they kill it: HOOK_TIMEOUT_S
# (Claude Code, Codex, Gemini CLI), and CODEX_SESSION_END_TIMEOUT_S for Codex's SessionEnd
# (Codex cuts those off at 3 s and warns on every run about a longer one). Kept here, where
# setup writes them from and the hook reads them (importing setup would cost every hook ~35 ms).
HOOK_TIMEOUT_S = 5
CODEX_SESSION_END_TIMEOUT_S = 3
# What a hook leaves of that time unused: Python's start before its budget counts (a few
# hundred ms on a loaded machine), and its last wait for a lock, its log line and its exit after.
HOOK_MARGIN_MS = 1000
HOOK_CAP_ENV = "REMEM_HOOK_CAP_MS"  # tests: the cap in place of the agents' timeouts


def hook_cap_override() -> int | None:
    """REMEM_HOOK_CAP_MS when it is a whole number of at least 1 ms (tests on a loaded machine,
    docs/CONFIG.md), else None: 0 would stop every hook at once, with no word of why."""
    override = os.environ.get(HOOK_CAP_ENV, "")
    if override.isascii() and override.isdigit() and int(override) >= 1:
        return int(override)
    return None


def _agent_timeout_s(event: str) -> int:
    """The shortest time an agent waits for a hook of `event` as `remem setup` wires it."""
    return CODEX_SESSION_END_TIMEOUT_S if event == "session-end" else HOOK_TIMEOUT_S


def hook_budget_cap_ms(event: str = "prompt") -> int:
    """The most a hook of `event` ever spends, prime.timeout_ms or not: less than the shortest
    time an agent gives it as `remem setup` wires it, so it gives up before it is killed."""
    override = hook_cap_override()
    if override is not None:
        return override
    return _agent_timeout_s(event) * 1000 - HOOK_MARGIN_MS


def hook_budget_ms(timeout_ms: Any, event: str = "prompt") -> float:
    """A hook's budget in ms: prime.timeout_ms (`timeout_ms`), at most hook_budget_cap_ms(event)."""
    return max(0.0, min(float(timeout_ms), float(hook_budget_cap_ms(event))))


def hook_budget_said(timeout_ms: Any, event: str = "prompt") -> str:
    """What sets a hook's budget, for the lines that name it: "prime.timeout_ms", or, when the
    cap cuts it, that too ("prime.timeout_ms, capped below the agent's 5 s timeout")."""
    try:
        cut = float(timeout_ms) > hook_budget_cap_ms(event)
    except (TypeError, ValueError):
        return "prime.timeout_ms"
    if not cut:
        return "prime.timeout_ms"
    if hook_cap_override() is not None:
        return f"prime.timeout_ms, capped by {HOOK_CAP_ENV}"
    return f"prime.timeout_ms, capped below the agent's {_agent_timeout_s(event)} s timeout"


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
        # A memory less relevant than this share of the query's best relevance ranks after
        # every memory at or above it, whatever its recency and retention (0: off).
        "relevance_floor": 0.5,
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
    "render": {
        # remem's lines in each MEMORY.md: Claude Code reads only its first 200 lines (~25 KB),
        # so the strongest lessons that fit, then one line naming the command that lists the rest.
        "index_lines": 50,
        "index_bytes": 8192,
        # A lesson with no project goes to the project folders with a session in this many days
        # (or with a memory folder remem did not make); 0: every project folder.
        "general_days": 60,
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
        # Origins (full 16-hex ids) whose folders receive never reads: `remem share block ORIGIN`.
        "blocked_origins": [],
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
        # Inbox files read and moved to inbox/done/ are deleted this many days after the move
        # (their events are in the memory); 0: kept.
        "keep_done_days": 30,
    },
}

_cache: dict[str, tuple[float, dict[str, Any]]] = {}


def _copy(value: Any) -> Any:
    """A deep copy of a config (dicts and lists of TOML's immutable values): copy.deepcopy's
    result, without its import and its cost on every hook."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = _copy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load(path: Path | None = None, *, warn: bool = True) -> dict[str, Any]:
    """The config with defaults filled in. Raises ConfigError (one line) if it is malformed.
    Unknown keys are named on stderr once (warn=False: not by this parse; a hook's, which runs
    on every prompt and tool call, leaves them to `remem doctor`)."""
    path = path or paths.config_path()
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return _copy(DEFAULTS)
    cached = _cache.get(str(path))
    if cached and cached[0] == mtime:
        return _copy(cached[1])
    data = parse_toml(path, read_text(path))
    found = _problem(data, DEFAULTS)
    if found:
        fix = _fix(found[0])
        how = f"fix it with `{fix}` (the default) or another allowed value" if fix else "fix that line"
        raise ConfigError(f"{path}: {found[1]}; {how}")
    if warn:
        from remem import config_unknown  # not on a hook's path

        config_unknown.warn_unknown(path, data)
    merged = _merge(DEFAULTS, data)  # an unknown key stays (nothing reads it; `config show` leaves it out)
    if isinstance(merged["share"].get("blocked_origins"), list):  # 16 hex digits, in either case
        merged["share"]["blocked_origins"] = _origins(merged["share"]["blocked_origins"])
    _cache[str(path)] = (mtime, merged)
    return _copy(merged)


def read_text(path: Path) -> str:
    """config.toml's text, past a UTF-8 byte order mark (some editors on Windows write one).
    Raises ConfigError naming the fix when the file cannot be read or is not UTF-8."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc}); fix its permissions or move it aside") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}); save it "
                          "as UTF-8 in your editor (or `iconv -f latin1 -t utf-8`), or move it aside") from None


_warned: set[str] = set()


def warn_once(message: str) -> None:
    """One line on stderr, `remem: warning: …`, once per process for each message (a hook's
    stdout is what its agent reads, so it never goes there). Never raises."""
    if message in _warned:
        return
    _warned.add(message)
    try:
        import sys

        print(f"remem: warning: {message}", file=sys.stderr)
    except Exception:
        pass


PARSED_CACHE = "config-toml.json"  # in paths.vectors_dir(): the last config.toml read, parsed


def parse_toml(path: Path, text: str) -> dict[str, Any]:
    """tomllib.loads(text); for remem's own config.toml, the parse kept in the cache folder
    when it was made of this very text (importing tomllib is most of what reading a config
    costs a hook). The cache is keyed by the whole text, so an edit is never missed; what
    JSON cannot hold as it is (dates, NaN) is parsed every time."""
    import json

    cache = paths.vectors_dir() / PARSED_CACHE if path == paths.config_path() else None
    if cache is not None:
        try:
            kept = json.loads(cache.read_text(encoding="utf-8"))
            if kept.get("text") == text and isinstance(kept.get("data"), dict):
                return kept["data"]
        except (OSError, ValueError, AttributeError):
            pass
    import tomllib  # only for a config not read before: most hooks skip its import

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix that line or move the file aside") from None
    if cache is not None:
        try:
            record = json.dumps({"text": text, "data": data})
            if json.loads(record)["data"] == data:
                from remem.engine.files import write_atomic

                # Through a 0600 temp file (mkstemp), removed if the write fails: the copy holds
                # what the config does (a token, an API key) and must be no more readable.
                write_atomic(cache, record)
        except (OSError, TypeError, ValueError):
            pass
    return data


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
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def _number_text(x: float) -> str:
    """A bound for people: 1,000,000 (not 1e+06), 0.5."""
    return f"{int(x):,}" if math.isfinite(x) and x == int(x) else f"{x:,g}"


class Range:
    """The numbers a key allows: low..high, both included unless `above` (then low is not).
    A plain class: a NamedTuple costs every hook ~3 ms to create (namedtuple compiles code)."""

    __slots__ = ("above", "high", "low")

    def __init__(self, low: float, high: float, above: bool = False) -> None:
        self.low, self.high, self.above = low, high, above

    def __repr__(self) -> str:
        return f"Range(low={self.low!r}, high={self.high!r}, above={self.above!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Range) and (self.low, self.high, self.above) == (other.low, other.high, other.above)

    def __hash__(self) -> int:
        return hash((self.low, self.high, self.above))

    def holds(self, value: float) -> bool:
        # NaN compares false with everything, so it is never in range; inf is past any high.
        return (self.low < value if self.above else self.low <= value) and value <= self.high

    def text(self) -> str:
        low, high = _number_text(self.low), _number_text(self.high)
        if self.high == math.inf:
            return f"more than {low}" if self.above else f"at least {low}"
        return f"more than {low} and at most {high}" if self.above else f"from {low} to {high}"


_DAYS = 36500  # 100 years: past that a date overflows, and no rate needs it
_SECONDS = _DAYS * 86400
_SHARE = Range(0, 1)  # weights, shares, cuts, probabilities

# Every number's allowed range, checked by `remem config set` and by `load` (a bad value in
# config.toml stops commands with one line naming the key, its range and the fix). Out of
# range meant a crash later (recall.recency_half_life_days 0 divided by zero), a silent change
# (lifecycle.archive_below 5 archived every memory; prime.max_chars -5 injected nothing) or
# invalid JSON (recall.w_relevance nan). A key whose 0 means "off" allows 0.
RANGES: dict[str, Range] = {
    "recall.k": Range(1, 100),
    "recall.w_relevance": _SHARE,
    "recall.w_recency": _SHARE,
    "recall.w_strength": _SHARE,
    "recall.recency_half_life_days": Range(0, _DAYS, above=True),
    "recall.semantic_weight": _SHARE,
    "recall.date_weight": _SHARE,
    "recall.date_half_life_days": Range(0, _DAYS, above=True),
    "recall.speaker_weight": _SHARE,
    "recall.bm25_title": Range(0, 100),
    "recall.bm25_gist": Range(0, 100),
    "recall.bm25_detail": Range(0, 100),
    "recall.candidates": Range(1, 100_000),
    "recall.recent_candidates": Range(0, 100_000),
    "recall.max_candidates": Range(1, 1_000_000),
    "recall.common_term_share": Range(0, 1, above=True),
    "recall.keyword_budget": Range(1, 100_000_000),
    "recall.relevance_floor": _SHARE,
    "recall.touch_strength": _SHARE,
    "recall.touch_health": Range(0, 100),
    "lifecycle.flashbulb_arousal": _SHARE,
    "lifecycle.flashbulb_importance": _SHARE,
    "lifecycle.flashbulb_days": Range(0, _DAYS),
    "lifecycle.importance_decay_per_day": _SHARE,
    "lifecycle.health_decay_short_term": Range(0, 100),
    "lifecycle.health_decay_long_term": Range(0, 100),
    "lifecycle.strength_half_life_days": Range(0, _DAYS),  # 0: strength never decays
    "lifecycle.archive_below": _SHARE,
    "lifecycle.cleanup_archived_days": Range(0, _DAYS),  # 0: archived memories are kept
    "graph.auto_threshold": _SHARE,
    "graph.auto_top_k": Range(0, 100),
    **{f"tasks.{name}": Range(0, _SECONDS) for name in DEFAULTS["tasks"]},  # 0: the task is off
    "sleep.surprise_cut_model": _SHARE,
    "sleep.surprise_cut_hashed": _SHARE,
    "sleep.prediction_days": Range(1, _DAYS),
    "sleep.verify_cut_hashed": _SHARE,
    "sleep.connect_max": Range(0, 100_000_000),  # 0: all
    "render.index_lines": Range(1, 1000),
    # A line is at most ~600 bytes (120 characters of up to 4 bytes, and the link): one fits.
    "render.index_bytes": Range(1024, 10_000_000),
    "render.general_days": Range(0, _DAYS),  # 0: every project folder
    # Below about 230 not even one lesson fits in the fenced block: nothing would be injected.
    "prime.max_chars": Range(300, 100_000),
    "prime.max_lessons": Range(1, 50),
    # Relevance is cosine plus keyword and command evidence, so it can pass 1 a little.
    "prime.min_relevance": Range(0, 1.5),
    "prime.timeout_ms": Range(1, 60_000),
    "share.min_strength": Range(0, 100),
    "share.corroborate_cut": _SHARE,
    "share.max_file_bytes": Range(1024, 1_000_000_000),
    "server.port": Range(1, 65535),
    "proxy.port": Range(1, 65535),
    "llm.timeout_s": Range(0, 3600, above=True),
    # backup.keep 0 made `remem backup` delete the backup it had just made with every other one.
    "backup.keep": Range(1, math.inf),
    "events.max_file_bytes": Range(1, 10 ** 12),
    "events.keep_done_days": Range(0, _DAYS),  # 0: inbox/done/ is kept
}


def _duration_problem(value: str) -> str | None:
    from remem.engine.clock import parse_duration

    try:
        seconds = parse_duration(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= _SECONDS:
        # An older remem read "30M" as minutes: say why it stops now, and what it meant.
        hint = "; M is not read: m is minutes, 30d a month" if str(value).strip().endswith("M") else ""
        return f"a duration from 1s to {_DAYS}d (30s, 10m, 2h, 7d{hint})"
    return None


def _url_problem(value: str) -> str | None:
    if not value:
        return None
    from urllib.parse import urlsplit  # only for a URL set: most configs have none

    try:
        parts = urlsplit(value)
        # .port raises ValueError for a port that is no number, or past 65535
        ok = (value.startswith(("http://", "https://")) and bool(parts.hostname)
              and not any(c.isspace() for c in value) and (parts.port is None or parts.port > 0))
    except ValueError:
        ok = False
    if not ok:
        return 'an http:// or https:// URL with a host, such as http://127.0.0.1:11434/v1 (or "" for no model)'
    return None


def _host_problem(value: str) -> str | None:
    if not value.strip() or any(c.isspace() for c in value):
        return "an address such as 127.0.0.1 (another one needs a token)"
    return None


def _origins_problem(value: list[Any]) -> str | None:
    for item in value:
        if not (isinstance(item, str) and len(item) == 16 and all(ch in "0123456789abcdefABCDEF" for ch in item)):
            return "a list of origin ids, each all 16 hex digits (`remem share peers` lists them)"
    return None


def _origins(value: list[Any]) -> list[Any]:
    """share.blocked_origins as remem compares them: lowercase, each once, in their order."""
    return list(dict.fromkeys(item.lower() if isinstance(item, str) else item for item in value))


# Strings (and lists) with a shape: each check returns what the key must be, or None when the value is fine.
SHAPES: dict[str, Callable[[Any], str | None]] = {
    "share.blocked_origins": _origins_problem,
    "lifecycle.short_term_ttl": _duration_problem,
    "llm.url": _url_problem,
    "server.host": _host_problem,
}


def _problem(data: dict[str, Any], defaults: dict[str, Any], prefix: str = "") -> tuple[str, str] | None:
    """(key, what is wrong) for the first known key whose value has the wrong type or is outside
    its range (unknown keys are left alone, so a config written by a newer remem still loads;
    load() names them in a warning, and `remem doctor` with their fix).
    Wrong values are refused, not replaced by the default: a setting silently ignored is worse
    than one line naming it."""
    for key, value in data.items():
        if key not in defaults:
            continue
        want, name = defaults[key], f"{prefix}{key}"
        if isinstance(want, dict):
            if not isinstance(value, dict):
                return name, f"{name} must be a [section], not {value!r}"[:300]
            problem = _problem(value, want, f"{name}.")
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
            return name, f"{name} must be {_type_name(want)}, not {value!r}"[:300]
        allowed = RANGES.get(name)
        if allowed is not None and not allowed.holds(value):
            return name, f"{name} must be {allowed.text()}, not {value!r}"[:300]
        shape = SHAPES.get(name)
        wrong = shape(value) if shape is not None else None
        if wrong:
            return name, f"{name} must be {wrong}, not {value!r}"[:300]
    return None


def _type_problem(data: dict[str, Any], defaults: dict[str, Any], prefix: str = "") -> str | None:
    """What is wrong with the first bad known key, or None (see `_problem`)."""
    found = _problem(data, defaults, prefix)
    return found[1] if found else None


def _fix(key: str) -> str | None:
    """The command that puts a key back to its default (None for a whole section)."""
    import shlex

    try:
        default = get(key, DEFAULTS)
    except ConfigError:
        return None
    if isinstance(default, dict):
        return None
    shown = (("true" if default else "false") if isinstance(default, bool)
             else " ".join(default) if isinstance(default, list) else str(default))
    return f"remem config set {key} {shlex.quote(shown)}"


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
        if isinstance(default, list):  # "a b" or "a,b"; "" is the empty list
            listed = raw.replace(",", " ").split()
            return _origins(listed) if dotted == "share.blocked_origins" else listed
    except ValueError:
        raise ConfigError(f"{dotted} must be {_type_name(default)}, not {raw!r}") from None
    if dotted == "share.folder" and raw:
        # Its whole path: a relative one would be read from whatever folder remem runs in next
        # (a cron job, another project), and name another folder or none there.
        return os.path.abspath(os.path.expanduser(raw))
    return raw


def _share_folder_problem(value: Any) -> None:
    """ConfigError when share.folder is remem's home or its identity folder, holds one of them,
    or lies inside one: refused here, before it is written, as every sharing command refuses
    it at use (share_folder._not_remem_home, whose words it gives)."""
    if not isinstance(value, str) or not value:
        return
    from remem.engine.share_folder import _not_remem_home
    from remem.engine.share_sign import ShareError

    try:
        _not_remem_home(Path(value), "config.toml was left unchanged; set another")
    except ShareError as exc:
        raise ConfigError(str(exc)) from None


def _leaf_default(dotted: str) -> Any:
    """The default of a settable key. A whole section is refused: `recall = "1"` would make
    the file fail to load, and every later command (and every hook) with it."""
    default = get(dotted, DEFAULTS)
    if isinstance(default, dict):
        raise ConfigError(f"{dotted} is a section; set {dotted}.KEY (`remem config show` lists them)")
    return default


def usable_model(ref: str) -> str:
    """`embed.model` as `remem config set` is to write it, once the embedder has loaded it here,
    offline, as every command and hook will: a model that cannot be loaded raises ConfigError, so
    it is refused before it is written (it would stop most commands and silence every hook). A
    relative folder becomes absolute: hooks run in each project's folder, where it would name
    another folder or none. (set_value itself writes any string: a model can also go missing
    after it was set, and that is named when it is used.)"""
    if ref in ("", "hashed"):  # the bundled model (checked by `remem doctor`) and the fallback
        return ref
    from remem.engine import embed

    if not embed._looks_like_path(ref) and Path(ref).is_dir():
        ref = os.path.abspath(ref)  # `models/m2v` as typed here, not a hub id
    elif ref.startswith("."):
        ref = os.path.abspath(ref)
    found = embed.model_problem(ref)
    if found:
        raise ConfigError(f"{found['problem']}; config.toml was left unchanged (embed.model takes \"\" "
                          "for the bundled model, a model2vec folder, or a hub id already downloaded)")
    return ref


def set_value(dotted: str, value: Any, path: Path | None = None) -> Any:
    """Write one key into config.toml, keeping the person's comments and formatting; returns
    the value written (a command-line string read as the key's type).

    The value is checked (type and range) before anything is read. A config.toml with a bad
    value on this very key can be repaired this way; one bad on another key is left unchanged
    (the caller names it: `load` still refuses the file). Written by update_value."""
    if isinstance(value, str):
        value = _coerce(dotted, value)
    else:
        _leaf_default(dotted)  # validates the key
        if dotted == "share.blocked_origins" and isinstance(value, list):
            value = _origins(value)
    _check_alone(dotted, value)
    if dotted == "share.folder":
        _share_folder_problem(value)
    return update_value(dotted, lambda _now: value, path)


def _alone(dotted: str, value: Any) -> dict[str, Any]:
    """{"recall": {"k": value}} for "recall.k"."""
    *sections, leaf = dotted.split(".")
    alone: dict[str, Any] = {leaf: value}
    for section in reversed(sections):
        alone = {section: alone}
    return alone


def _check_alone(dotted: str, value: Any) -> None:
    problem = _type_problem(_alone(dotted, value), DEFAULTS)
    if problem:
        raise ConfigError(f"{problem}; config.toml was left unchanged")


def lock_path(path: Path | None = None) -> Path:
    """The lock file beside config.toml that every edit of it holds (update_value)."""
    path = path or paths.config_path()
    return path.with_name(path.name + ".lock")


@contextmanager
def _file_locked(path: Path) -> Iterator[None]:
    """An exclusive flock on the folder that holds config.toml's file itself (links followed),
    held with lock_path's for an edit: two homes whose config.toml links to one file (or one
    linking to the other's) lock the same folder, where each home's own lock file would let
    their edits overlap and lose one. A folder, not a lock file beside the file: that would
    be left in a dotfiles folder (a git repo), and the rename leaves the folder in place. Where
    a folder cannot be locked (no flock; a file system that refuses it), only lock_path's is."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        fd = os.open(os.path.dirname(os.path.realpath(path)), os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)


def _dangling_link(path: Path) -> None:
    """ConfigError when config.toml is a link into a folder that does not exist: nothing can
    be written there (nor its lock made), and the system's own words would name a temp file."""
    if not path.is_symlink():
        return
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise ConfigError(f"{path} links to {target}, whose folder does not exist; fix or remove "
                          "the link (config.toml was left unchanged)")


def update_value(dotted: str, change: Callable[[Any], Any], path: Path | None = None) -> Any:
    """The one edit of config.toml: `change(value now)` becomes the key's value (the default
    when the file does not hold a good one); returns it. The value is checked before it is
    written, and comments and formatting are kept.

    An exclusive flock on config.toml.lock beside the file, and one on the folder of the file
    it is (links followed: _file_locked), are held from the read to the rename, so edits made
    at once (`remem config set` run in parallel, `remem share block`, from one home or from two
    linking one file) each see the one before: none is lost. A symlinked config.toml (a
    dotfiles link) stays a link: the file it points to is written, keeping its mode; a plain
    file is written 0600, as it may hold server.token or llm.api_key. A link into a folder
    that does not exist is refused, naming the link (_dangling_link)."""
    import tomllib

    import tomlkit

    from remem.engine.files import locked, write_atomic

    path = path or paths.config_path()
    default = _leaf_default(dotted)  # validates the key
    *sections, leaf = dotted.split(".")
    path.parent.mkdir(parents=True, exist_ok=True)
    _dangling_link(path)
    with locked(lock_path(path)), _file_locked(path):
        before = read_text(path) if path.exists() else ""
        try:
            data = tomllib.loads(before)
        except tomllib.TOMLDecodeError as exc:  # tomlkit cannot edit it either: refuse to rewrite it
            raise ConfigError(f"{path} is not valid TOML ({exc}); fix that line or move the file aside") from None
        try:
            now = get(dotted, data)
        except ConfigError:
            now = default
        if _type_problem(_alone(dotted, now), DEFAULTS):
            now = default
        value = change(_copy(now))
        if dotted == "share.blocked_origins" and isinstance(value, list):
            value = _origins(value)
        _check_alone(dotted, value)
        doc = tomlkit.parse(before) if before else tomlkit.document()
        node: Any = doc
        for depth, section in enumerate(sections):
            if section not in node:
                node[section] = tomlkit.table()
            elif not isinstance(node[section], dict):
                name = ".".join(sections[:depth + 1])
                raise ConfigError(f"{path}: {name} must be a [section], not {node[section]!r}; fix that "
                                  "line first (config.toml was left unchanged)")
            node = node[section]
        node[leaf] = value
        text = tomlkit.dumps(doc)
        # Only this key changed: a problem left elsewhere was there before (and is named by the
        # next command), but the new file must hold this key as it was checked above.
        found = _problem(tomllib.loads(text), DEFAULTS)
        if found and (found[0] == dotted or dotted.startswith(found[0] + ".")):
            raise ConfigError(f"{path}: {found[1]}; config.toml was left unchanged")
        linked = path.is_symlink()
        write_atomic(path, text, through_links=True, mode=None if linked else 0o600)
        _cache.pop(str(path), None)
    return value
