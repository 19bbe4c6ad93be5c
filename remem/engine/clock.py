"""The one clock every rule reads, so tests (and subprocesses via REMEM_NOW) can control time."""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Iterator

_frozen: datetime | None = None
# A day or a week with no time of day, in any form ISO 8601 (and datetime.fromisoformat) has
# for one: 2026-11-20, 20261120, 2026-W47-5, 2026W475, or a week, 2026-W47; optionally with a
# zone: Z (UTC) or an offset. As a bound it means the whole of that day or week (`when`).
_DATE_ONLY = re.compile(
    r"(?:(?P<day>\d{4}-\d{2}-\d{2}|\d{8})|(?P<week>\d{4}-?W\d{2})(?P<weekday>-?\d)?)"
    r"(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)?\Z", re.IGNORECASE)


def now() -> datetime:
    if _frozen is not None:
        return _frozen
    env = os.environ.get("REMEM_NOW")
    if env:
        return parse(env)
    return datetime.now(timezone.utc)


def iso(dt: datetime | None = None) -> str:
    """ISO 8601 UTC with microseconds: the one timestamp format in the store."""
    dt = dt or now()
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat(timespec="microseconds")


class TimeOutOfRange(ValueError, OverflowError):
    """An ISO time whose UTC falls before year 1 or after 9999. A ValueError, so every caller
    that refuses a bad time refuses this one too; an OverflowError, as datetime raised it."""


def parse(text: str) -> datetime:
    """An ISO 8601 time as an aware UTC datetime (naive: UTC); ValueError when it is none,
    TimeOutOfRange (a ValueError) when it is one whose UTC datetime cannot hold."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        return dt.astimezone(timezone.utc)
    except OverflowError:  # "0001-01-01T00:00:00+05:00" is a real ISO time, but before year 1 in UTC
        raise TimeOutOfRange(f"{text[:40]!r} is outside year 1 to 9999 in UTC") from None


def normalise(value: object) -> str | None:
    """Any ISO 8601 time as the store's one canonical form, or None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return iso(parse(value))
    except (ValueError, TypeError, OverflowError):
        return None


def when(value: str | datetime | None, name: str = "time") -> str | None:
    """A `--since`/`--until` value: an ISO date/time, a datetime, or a duration back from now
    ("7d", "12h"; the unit is required: a bare number is refused, never read as seconds)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return iso(value)
    text = str(value).strip()
    if text and text[-1].lower() in _UNITS and text[:-1].strip().replace(".", "", 1).isdigit():
        try:
            return iso(now() - timedelta(seconds=parse_duration(text.replace(" ", ""))))
        except ValueError as exc:  # 1M: m is minutes
            raise ValueError(f"{name}: {exc}") from None
        except OverflowError:  # before year 1: datetime cannot hold it
            raise ValueError(f"{name}: {text!r} is too far back; use a date (2026-05-01) or a "
                             "shorter duration (365d)") from None
    try:
        return _whole_period(text, end=name == "until") or iso(parse(text))
    except TimeOutOfRange as exc:  # a real ISO time, but not one in UTC: say so, not "not a time"
        raise ValueError(f"{name}: {exc}; give a time within it (9999-12-31T23:59:59Z)") from None
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{name}: not a time: {text!r} (use 2026-05-01, 2026-05-01T09:00, "
                         "or a duration back from now: 7d, 2h)") from None


def _whole_period(text: str, end: bool) -> str | None:
    """A day (or week) with no time of day as a bound: its first microsecond, or with `end` its
    last (`--until 2026-11-20` includes that day; read as its start, 00:00, it left the day
    out). UTC unless a zone is given. None when `text` is no such form; ValueError when it is
    one but names no real day (2026-02-30), TimeOutOfRange when the day is outside year 1 to
    9999 in UTC. (datetime.fromisoformat alone read 2026-03-01+02:00 as 02:00 that day.)"""
    found = _DATE_ONLY.match(text)
    if not found:
        return None
    zone = (found["zone"] or "Z").upper()
    tz = timezone.utc
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        if offset >= timedelta(days=1) or int(digits[2:] or 0) > 59:
            raise ValueError(text)
        tz = timezone(-offset if zone[0] == "-" else offset)
    if found["day"]:
        start, length = datetime.fromisoformat(found["day"]), timedelta(days=1)
    elif found["weekday"]:
        start, length = datetime.fromisoformat(found["week"].upper() + found["weekday"]), timedelta(days=1)
    else:  # a week without a day: Monday to Sunday
        start, length = datetime.fromisoformat(found["week"].upper()), timedelta(days=7)
    start = start.replace(tzinfo=tz)
    try:
        return iso(start + (length - timedelta(microseconds=1)) if end else start)
    except OverflowError:
        raise TimeOutOfRange(f"{text[:40]!r} is outside year 1 to 9999 in UTC") from None


def days_between(earlier: str | datetime | None, later: datetime | None = None) -> float:
    """Days from `earlier` to `later` (default now); 0 when earlier is missing or in the future."""
    if earlier is None:
        return 0.0
    start = parse(earlier) if isinstance(earlier, str) else earlier
    delta = (later or now()) - start
    return max(0.0, delta.total_seconds() / 86400.0)


@contextmanager
def frozen(at: datetime | str) -> Iterator[None]:
    """Freeze now() for the duration (tests)."""
    global _frozen
    old = _frozen
    _frozen = parse(at) if isinstance(at, str) else at
    try:
        yield
    finally:
        _frozen = old


def advance(**kwargs: float) -> None:
    """Move a frozen clock forward (tests): advance(days=3)."""
    global _frozen
    if _frozen is None:
        raise RuntimeError("advance() needs a frozen clock")
    _frozen = _frozen + timedelta(**kwargs)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_TTL_DAYS = 36500  # 100 years, as lifecycle.short_term_ttl allows


def parse_duration(text: str) -> float:
    """'30s', '10m', '2h', '7d', '1w' (or plain seconds) -> seconds. Any case but "M", which
    reads as months and is refused, not taken for minutes."""
    text = str(text).strip()
    if text.endswith("M"):
        raise ValueError(f"not a duration: {text!r} (m is minutes; for months use 30d)")
    text = text.lower()
    try:
        if text and text[-1] in _UNITS:
            seconds = float(text[:-1]) * _UNITS[text[-1]]
        else:
            seconds = float(text)
        if not math.isfinite(seconds):  # "inf", "nan", "1e999d": no time can be that far
            raise ValueError(text)
        return seconds
    except ValueError:
        raise ValueError(f"not a duration: {text!r} (use 30s, 10m, 2h, 7d)") from None


def parse_ttl(value: str | float) -> float:
    """A short-term memory's lifetime in seconds, as a person or a tool gives it: a duration
    with its unit (30s, 10m, 2h, 7d, 1w; a bare number is refused, as for --since), from 1s to
    MAX_TTL_DAYS days. A number passed in-process is seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds, text = float(value), f"{value:g}s"
    else:
        text = str(value).strip()
        if text and not text[-1].isalpha():  # 3600, 1e3: seconds or a slip?
            n = text if text.isdecimal() and len(text) <= 12 else "30"
            raise ValueError(f"ttl {text[:20]!r} needs a unit: {n}s, {n}m, {n}h or {n}d")
        try:
            seconds = parse_duration(text)
        except ValueError as exc:
            raise ValueError(f"ttl: {exc}") from None
    if not 1 <= seconds <= MAX_TTL_DAYS * 86400:
        raise ValueError(f"ttl must be from 1s to {MAX_TTL_DAYS}d, not {text[:20]!r}")
    return seconds
