"""Dates named in a query ("on 25 May, 2022", "in July 2022", "2024-03-01") as day ranges.

Recall uses them as evidence: a memory dated inside (or near) a range the query names is more
likely what the person means ("what did we decide on 3 June?"). Only explicit calendar dates
count; a bare year or a month without a year is too vague to help, and relative phrases
("last week") are left to the reader of the results.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime

_NAMES = "january february march april may june july august september october november december"
MONTHS: dict[str, int] = {}
for _i, _m in enumerate(_NAMES.split(), start=1):
    MONTHS[_m] = _i
    MONTHS[_m[:3]] = _i
MONTHS["sept"] = 9

_MON = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
        r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s*(?:of\s+)?{_MON}\.?,?\s+(\d{{4}})\b", re.I)
_MDY = re.compile(rf"\b{_MON}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MY = re.compile(rf"\b{_MON}\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I)


def date_spans(text: str) -> list[tuple[date, date]]:
    """Every explicit date or month in `text`, as inclusive (first day, last day) ranges."""
    text = text or ""
    out: list[tuple[date, date]] = []
    used: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        return all(m.end() <= a or m.start() >= b for a, b in used)

    def add(m: re.Match[str], first: date, last: date) -> None:
        out.append((first, last))
        used.append(m.span())

    for m in _ISO.finditer(text):
        try:
            day = date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            continue
        add(m, day, day)
    for rx, day_first in ((_DMY, True), (_MDY, False)):
        for m in rx.finditer(text):
            if not free(m):
                continue
            d, mon, yr = (m[1], m[2], m[3]) if day_first else (m[2], m[1], m[3])
            try:
                day = date(int(yr), MONTHS[mon.lower()], int(d))
            except (ValueError, KeyError):
                continue
            add(m, day, day)
    for m in _MY.finditer(text):
        if not free(m):
            continue
        mon, yr = MONTHS[m[1].lower()], int(m[2])
        try:
            first = date(yr, mon, 1)
        except ValueError:  # year 0 or past 9999: not a date a memory can have
            continue
        last = date(yr, mon, calendar.monthrange(yr, mon)[1])
        add(m, first, last)
    return out


def closeness(at: datetime | date, spans: list[tuple[date, date]], half_life_days: float) -> float:
    """1 inside a span, halving every `half_life_days` outside it; the best over all spans."""
    day = at.date() if isinstance(at, datetime) else at
    best = 0.0
    for first, last in spans:
        if first <= day <= last:
            return 1.0
        gap = (first - day).days if day < first else (day - last).days
        best = max(best, 2.0 ** (-gap / half_life_days))
    return best
