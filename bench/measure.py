"""`remem measure` and `remem goals` on a long history with a large `primes` log.

A synthetic memory (bench/synth.py: 100,000 episodes over a year, 2,000 lessons, and by default
520,000 `primes` rows, the hooks' log of a busy year; REMEM_NOW fixed) is built once into
--stores (kept, reused), then each case runs in a fresh process so its peak RSS is its own:
`measure.measure(store, days)` for each --days, and `goals.check(store, days)` (which measures
too, then the trends, prediction and priming checks). --impl FILE runs another measure.py for
the measure rows (e.g. the previous one: `git show HEAD:remem/engine/measure.py > /tmp/m.py`).

    python bench/measure.py [--primes 520000] [--days 30 365] [--stores DIR] [--impl FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _child(home: str, case: str, days: int, impl: str | None) -> None:
    os.environ["REMEM_HOME"] = home
    if impl and case == "measure":
        import importlib.util

        spec = importlib.util.spec_from_file_location("measure_impl", impl)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        run = module.measure
    elif case == "measure":
        from remem.engine.measure import measure as run
    else:
        from remem.engine.goals import check as run
    from remem.engine.store import Store

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    u0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    with Store() as store:
        result = run(store, days)
    wall = time.perf_counter() - t0
    u1 = resource.getrusage(resource.RUSAGE_SELF)
    summary: dict[str, Any] = {}
    if case == "measure":
        pvh = result["primed_vs_held_out"]
        summary = {"corrections": result["corrections"], "errors": result["errors"],
                   "primed": pvh["primed"]["sessions"], "held_out": pvh["held_out"]["sessions"],
                   "rate": result["repeat_yourself_rate"]}
    else:
        summary = {g["id"]: g["status"] for g in result}
    print(json.dumps({
        "wall_s": round(wall, 2), "cpu_s": round(u1.ru_utime - u0.ru_utime + u1.ru_stime - u0.ru_stime, 2),
        "peak_rss_mb": round(u1.ru_maxrss / 1024, 1), "rss_before_mb": round(rss0 / 1024, 1), **summary,
    }))


def _store(stores: Path, episodes: int, lessons: int, primes: int) -> Path:
    home = stores / f"e{episodes}-l{lessons}-p{primes}-random"
    if (home / "built").exists():
        return home
    home.mkdir(parents=True, exist_ok=True)
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
            f"from bench.synth import build; print(build(Path({str(home)!r}), episodes={episodes}, "
            f"lessons={lessons}, primes={primes}, embed='random'))")
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
    (home / "built").write_text("ok\n")
    return home


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--lessons", type=int, default=2_000)
    parser.add_argument("--primes", type=int, default=520_000)
    parser.add_argument("--days", type=int, nargs="+", default=[30, 365])
    parser.add_argument("--no-goals", action="store_true", help="time measure only")
    parser.add_argument("--stores", help="keep the synthetic memories here (default: a temporary folder)")
    parser.add_argument("--impl", help="a measure.py file to run instead of remem.engine.measure")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]), args.impl)
        return 0
    stores = Path(args.stores) if args.stores else Path(tempfile.mkdtemp(prefix="remem-bench-measure-"))
    env = {**os.environ, "REMEM_NOW": "2026-11-30T12:00:00+00:00", "HF_HUB_OFFLINE": "1"}
    os.environ.update(env)
    home = _store(stores, args.episodes, args.lessons, args.primes)
    results = []
    for case in ("measure",) + (() if args.no_goals else ("goals",)):
        for days in args.days:
            argv = [sys.executable, __file__, "--child", str(home), case, str(days)]
            if args.impl:
                argv += ["--impl", args.impl]
            done = subprocess.run(argv, capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"{case} --days {days} failed: {done.stderr[-2000:]}")
            results.append({"case": case, "days": days, **json.loads(done.stdout.strip().splitlines()[-1])})
    if args.json:
        print(json.dumps({"impl": args.impl or "remem.engine.measure", "episodes": args.episodes,
                          "lessons": args.lessons, "primes": args.primes, "runs": results}, indent=2))
        return 0
    print(f"{args.impl or 'remem.engine.measure'}: {args.episodes} episodes, {args.lessons} lessons, "
          f"{args.primes} primes rows")
    print(f"{'case':<10}{'days':>6}{'wall s':>9}{'CPU s':>8}{'peak RSS MB':>13}{'RSS before':>12}  answer")
    for r in results:
        rest = {k: v for k, v in r.items() if k not in ("case", "days", "wall_s", "cpu_s", "peak_rss_mb",
                                                        "rss_before_mb")}
        print(f"{r['case']:<10}{r['days']:>6}{r['wall_s']:>9}{r['cpu_s']:>8}{r['peak_rss_mb']:>13}"
              f"{r['rss_before_mb']:>12}  {json.dumps(rest)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
