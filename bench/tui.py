"""TUI speed on a large memory: first paint (imports included), the Overview's measures, opening
the Episodes tab, a page down, and the Lessons tab.

By default the realistic case: a synthetic store (bench/synth.py) of 100,000 episodes over a
year, 2,000 lessons and 20,000 `primes` decisions in the sessions of the last 60 days, with
REMEM_NOW set to the end of that year, so the Overview's 30-day window is full (about 8,000
episodes, 2,000 corrections and 10,000 decisions). `--legacy` builds the old case instead:
500 lessons, no primes, dates all over 2026 (the 30-day window empty).

Each run is a fresh process, timed from before it starts (interpreter and imports included) to
the Overview's counts on screen, then to its measures (worked out after the first paint) on
screen; then the tabs, under Textual's pilot at 120x36. The process's CPU seconds at those two
moments are shown too: on a shared machine they move far less than the wall clock. Budget
(DESIGN.md): first paint <= 1.5 s.

    python bench/tui.py [--episodes 100000] [--lessons 2000] [--primes 20000] [--runs 3]
                        [--store DIR] [--legacy] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KINDS = ("session", "correction", "error", "surprise", "environment", "note")
WORDS = ("install", "test", "build", "deploy", "cache", "database", "migration", "lint", "format", "docker",
         "python", "node", "git", "branch", "merge", "timeout", "permission", "module", "config", "api")
NOW = "2026-11-30T12:00:00+00:00"


def build_legacy(n: int, lessons: int) -> None:
    """The first version of this bench's store: no primes, dates all over 2026."""
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.lessons import add_lesson
    from remem.engine.store import EPISODE_COLUMNS, Store, prepare_episode

    rng = random.Random(7)
    with Store() as store:
        batch = []
        for i in range(n):
            words = " ".join(rng.choice(WORDS) for _ in range(8))
            batch.append(prepare_episode({
                "id": f"ep{i:07d}", "kind": KINDS[i % len(KINDS)], "title": f"{words[:50]} #{i}",
                "gist": words, "cwd": f"/home/dev/project{i % 12}", "at": f"2026-{1 + i % 11:02d}-{1 + i % 28:02d}T10:00:00+00:00",
            }))
            if len(batch) == 5000 or i == n - 1:
                with store.write() as conn:
                    conn.executemany(
                        f"INSERT INTO episodes ({', '.join(EPISODE_COLUMNS)}) VALUES ({', '.join('?' for _ in EPISODE_COLUMNS)})",
                        [[row[c] for c in EPISODE_COLUMNS] for row in batch])
                batch = []
        emb = get_embedder()
        texts = [f"lesson {i}: prefer {rng.choice(WORDS)} over {rng.choice(WORDS)}" for i in range(lessons)]
        for text, vec in zip(texts, emb.encode(texts)):
            add_lesson(store, text, "correction", space=emb.space, embedding=to_blob(vec))


def _text(app, selector: str) -> str:
    try:
        return str(app.query_one(selector).render())
    except Exception:  # not there (yet, or in this version of the app)
        return ""


def _cpu() -> float:
    """This process's CPU seconds so far (every thread, from its start: imports included)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _until(pilot, ready, timeout: float = 120.0) -> None:
    deadline = time.perf_counter() + timeout
    while not ready():
        if time.perf_counter() > deadline:
            raise SystemExit("timed out waiting for the TUI")
        await pilot.pause(0.005)


async def _drive(spawned: float, imported: float) -> dict[str, float]:
    from remem.tui.app import RememApp

    out = {"start_to_imported_s": imported - spawned}
    app = RememApp()
    async with app.run_test(size=(120, 36)) as pilot:
        # polled every 5 ms: pilot.pause() with no delay would wait for the CPU to go idle,
        # measures included
        await _until(pilot, lambda: _text(app, "#overview-counts").strip())
        out["first_paint_s"] = time.time() - spawned  # counts drawn (the measures may follow)
        out["first_paint_cpu_s"] = _cpu()
        await _until(pilot, lambda: "measuring" not in _text(app, "#overview-measure"))
        out["measures_shown_s"] = time.time() - spawned
        out["measures_shown_cpu_s"] = _cpu()
        out["measures"] = _text(app, "#overview-measure").strip().replace("\n", " | ")[:200]
        t = time.perf_counter()
        await pilot.press("2")
        await pilot.pause()
        out["episodes_tab_s"] = time.perf_counter() - t
        t = time.perf_counter()
        await pilot.press("n")
        await pilot.pause()
        out["page_down_s"] = time.perf_counter() - t
        out["page_status"] = _text(app, "#episode-status").strip()  # "51-100 of 100,000 ..."
        t = time.perf_counter()
        await pilot.press("3")
        await pilot.pause()
        out["lessons_tab_s"] = time.perf_counter() - t
    return out


def _child() -> None:
    spawned = float(os.environ["BENCH_SPAWNED"])
    import remem.tui.app  # noqa: F401  (what `remem tui` imports before it draws)

    imported = time.time()
    print(json.dumps(asyncio.run(_drive(spawned, imported))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--lessons", type=int, help="2,000 (--legacy: 500)")
    parser.add_argument("--primes", type=int, default=20_000)
    parser.add_argument("--primes-days", type=float, default=60.0, help="the decisions fall in the last N days")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--store", help="build the memory here, or reuse the one built there before")
    parser.add_argument("--legacy", action="store_true", help="the old case: no primes, an empty 30-day window")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child()
        return 0
    home = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="remem-bench-tui-"))
    env = {**os.environ, "REMEM_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    if not args.legacy:
        env["REMEM_NOW"] = NOW
    os.environ.update(env)
    built = None
    if not (home / "built").exists():
        t = time.perf_counter()
        home.mkdir(parents=True, exist_ok=True)
        if args.legacy:
            build_legacy(args.episodes, args.lessons or 500)
        else:
            from bench.synth import build

            build(home, episodes=args.episodes, lessons=args.lessons or 2_000, primes=args.primes,
                  primes_days=args.primes_days, embed="random")
        built = round(time.perf_counter() - t, 1)
        (home / "built").write_text("legacy\n" if args.legacy else "synth\n")
    runs = []
    for _ in range(args.runs):
        env["BENCH_SPAWNED"] = repr(time.time())
        done = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"the TUI run failed: {done.stderr[-3000:]}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    from remem.engine.store import Store

    with Store() as store:
        counts = {"episodes": store.scalar("SELECT count(*) FROM episodes"),
                  "lessons": store.scalar("SELECT count(*) FROM lessons"),
                  "primes": store.scalar("SELECT count(*) FROM primes")}
    result = {"case": "legacy" if args.legacy else "realistic", **counts, "build_s": built, "runs": args.runs,
              "now": os.environ.get("REMEM_NOW") or "(the real clock)"}
    for key in runs[0]:
        if key not in ("measures", "page_status"):
            result[key] = round(statistics.median(r[key] for r in runs), 3)
    result["measures"] = runs[-1]["measures"]
    result["page_status"] = runs[-1]["page_status"]
    result["budget_first_paint_s"] = 1.5
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'measure (median of runs; from before the process starts)':<58}{'value':>12}")
    for key, value in result.items():
        if key not in ("measures", "page_status"):
            print(f"{key:<58}{value!s:>12}")
    print(f"measures shown: {result['measures']}")
    print(f"episodes after a page down: {result['page_status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
