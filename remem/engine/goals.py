"""remem's own goals, checked from the store, the measures and the kept experiments.

Each goal has a number, a target and a status: pass, fail, or unknown when there is not yet
enough to tell. docs/GOALS.md explains each one.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from remem import config as config_mod
from remem.engine import clock
from remem.engine.experiment import results as experiment_results
from remem.engine.measure import measure, repeat_flags
from remem.engine.store import Store

FRESH_DAYS = 2.0
SELECT_BUDGET_MS = 50.0


def _goal(gid: str, goal: str, number: Any, target: str, status: str) -> dict[str, Any]:
    return {"id": gid, "goal": goal, "number": number, "target": target, "status": status}


def _trend(store: Store, kind: str, since: str, days: int) -> tuple[float | None, float | None]:
    """The repeat rate in the earlier and the later half of the window (split at its calendar
    midpoint, since + days / 2); (None, None) when either half has no episode of the kind."""
    middle = clock.iso(clock.parse(since) + timedelta(days=days / 2))
    halves = {False: [0, 0], True: [0, 0]}  # later half? -> [episodes, repeats], counted as read
    for _, _, at, _, repeat in repeat_flags(store, kind, since):
        half = halves[at >= middle]
        half[0] += 1
        half[1] += repeat
    (early, early_repeats), (late, late_repeats) = halves[False], halves[True]
    if not early or not late:
        return None, None
    return early_repeats / early, late_repeats / late


def _prime_latency_ms(store: Store) -> float | None:
    """None when there is no active lesson (timing an empty choice would measure nothing).
    Choosing for a prompt in the project with the most lessons, as a hook there would (with
    no project, only general lessons compete: that would time less than a hook does)."""
    from remem.engine import prime

    if not store.scalar("SELECT 1 FROM lessons WHERE status = 'active' LIMIT 1"):
        return None
    cwd = store.scalar("SELECT cwd FROM lessons WHERE status = 'active' AND cwd IS NOT NULL AND cwd <> '' "
                       "GROUP BY cwd ORDER BY count(*) DESC LIMIT 1")
    start = time.perf_counter()
    for _ in range(5):
        prime.candidates(store, "how do I install the dependencies and run the tests", event="prompt",
                         cwd=cwd)
    return (time.perf_counter() - start) * 1000 / 5


def check(store: Store, days: int = 30, cfg: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    cfg = cfg or config_mod.load()
    m = measure(store, days)
    goals: list[dict[str, Any]] = []

    early, late = _trend(store, "correction", m["since"], days)
    goals.append(_goal(
        "G1", "The repeat-yourself rate is falling", None if late is None else round(late, 3),
        "later half of the window below the earlier half, or zero",
        "unknown" if late is None else ("pass" if late < early or late == 0 else "fail"),
    ))
    early_e, late_e = _trend(store, "error", m["since"], days)
    goals.append(_goal(
        "G2", "The repeated-error rate is falling", None if late_e is None else round(late_e, 3),
        "later half of the window below the earlier half, or zero",
        "unknown" if late_e is None else ("pass" if late_e < early_e or late_e == 0 else "fail"),
    ))
    pvh = m["primed_vs_held_out"]
    goals.append(_goal(
        "G3", "Primed sessions repeat less than held-out sessions", pvh["difference"],
        "95 % interval of (primed - held out) below zero",
        "unknown" if pvh["ci95"] is None else ("pass" if pvh["ci95"][1] < 0 else "fail"),
    ))
    pa = m["prediction_accuracy"]
    goals.append(_goal(
        "G4", "Lessons are verified by what happens next", pa["accuracy"], ">= 0.5 of at least 5 resolved predictions",
        "unknown" if pa["resolved"] < 5 else ("pass" if pa["accuracy"] >= 0.5 else "fail"),
    ))
    exp = experiment_results(store)
    with_r = exp.get("behaviour_with_reminder", {}).get("rate")
    without_r = exp.get("behaviour_without_reminder", {}).get("rate")
    goals.append(_goal(
        "G5", "A reminder makes the model follow the lesson", with_r,
        "pass rate with the reminder above the rate without",
        "unknown" if with_r is None or without_r is None else ("pass" if with_r > without_r else "fail"),
    ))
    boundary = exp.get("boundary_with_reminder", {}).get("rate")
    goals.append(_goal(
        "G6", "Reminders do not stop the model asking when asking is right", boundary, ">= 0.8 ask first",
        "unknown" if boundary is None else ("pass" if boundary >= 0.8 else "fail"),
    ))
    latency = _prime_latency_ms(store)
    goals.append(_goal(
        "G7", "Choosing what to prime stays fast (in-process)", None if latency is None else round(latency, 1),
        f"<= {SELECT_BUDGET_MS:.0f} ms over the active lessons (whole-hook budgets: bench/hooks.py)",
        "unknown" if latency is None else ("pass" if latency <= SELECT_BUDGET_MS else "fail"),
    ))
    last_ingest = store.meta_times()["last_ingest"]
    age = clock.days_between(last_ingest) if last_ingest else None
    goals.append(_goal(
        "G8", "Sessions are read soon after they happen", None if age is None else round(age, 2),
        f"last ingest within {FRESH_DAYS:.0f} days", "unknown" if age is None else ("pass" if age <= FRESH_DAYS else "fail"),
    ))
    from remem.engine.sleep import last_full_sleep

    last_sleep = (last_full_sleep(store) or (None,))[0]
    age = clock.days_between(last_sleep) if last_sleep else None
    goals.append(_goal(
        "G9", "Sleep runs nightly", None if age is None else round(age, 2), f"last full sleep (every pass) within {FRESH_DAYS:.0f} days",
        "unknown" if age is None else ("pass" if age <= FRESH_DAYS else "fail"),
    ))
    integrity = store.scalar("PRAGMA quick_check")
    goals.append(_goal("G10", "The memory is intact", integrity, "ok", "pass" if integrity == "ok" else "fail"))
    return goals
