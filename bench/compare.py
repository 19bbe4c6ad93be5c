"""`remem compare` on a large history: wall clock, CPU, peak memory and the size of its answer.

For each size, a synthetic memory (bench/synth.py: episodes over a year, a quarter of them
corrections, lessons learned along the way, REMEM_NOW fixed) is built once into --stores (kept
and reused: building 100,000 episodes embeds them with the bundled model) and `compare.compare`
runs in a fresh process, so its peak RSS is its own. The answer's size is its JSON, as
`remem compare --json` prints it. --impl FILE runs another compare.py (e.g. the previous one,
`git show HEAD~1:remem/engine/compare.py > /tmp/compare_old.py`) for a before/after table.

    python bench/compare.py [--episodes 20000 100000] [--lessons 2000] [--stores DIR]
                            [--impl FILE] [--timeout 1800] [--json]
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


def _child(home: str, k: int, impl: str | None, limit: str | None) -> None:
    """Run compare once in this process; print one JSON line of figures."""
    os.environ["REMEM_HOME"] = home
    if impl:
        import importlib.util

        spec = importlib.util.spec_from_file_location("compare_impl", impl)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        from remem.engine import compare as module
    from remem.engine.embed import get_embedder
    from remem.engine.store import Store

    get_embedder().encode_py("warm up")  # the model load is not compare
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    with Store() as store:
        kwargs: dict[str, Any] = {"k": k}
        if limit is not None:
            kwargs["limit"] = None if limit == "all" else int(limit)
        result = module.compare(store, **kwargs)
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out = json.dumps(result, ensure_ascii=False)
    t = result["totals"]
    print(json.dumps({
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime - usage0.ru_utime + usage.ru_stime - usage0.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "rss_before_mb": round(rss0 / 1024, 1),
        "corrections": result["corrections"], "rows": len(result["rows"]), "json_bytes": len(out),
        "remem_covered": t["remem_covered"], "similar_covered": t["similar_covered"],
        "remem_tokens": t["remem_tokens"], "similar_tokens": t["similar_tokens"],
    }))


def _store(stores: Path, episodes: int, lessons: int, primes: int) -> Path:
    home = stores / f"e{episodes}-l{lessons}-p{primes}"
    if (home / "built").exists():
        return home
    home.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
            f"from bench.synth import build; print(build(Path({str(home)!r}), episodes={episodes}, "
            f"lessons={lessons}, primes={primes}))")
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
    (home / "built").write_text(f"{time.perf_counter() - t0:.1f}\n")
    return home


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--lessons", type=int, default=2_000)
    parser.add_argument("--primes", type=int, default=20_000)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--limit", help="rows to return (compare's `limit`; 'all' for every row); "
                                        "default: compare's own default")
    parser.add_argument("--stores", help="keep the synthetic memories here (default: a temporary folder)")
    parser.add_argument("--impl", help="a compare.py file to run instead of remem.engine.compare")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before a run is stopped")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.k, args.impl, args.limit)
        return 0
    stores = Path(args.stores) if args.stores else Path(tempfile.mkdtemp(prefix="remem-bench-compare-"))
    env = {**os.environ, "REMEM_NOW": "2026-11-30T12:00:00+00:00", "HF_HUB_OFFLINE": "1",
           "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    os.environ.update(env)
    results = []
    for n in args.episodes:
        home = _store(stores, n, args.lessons, args.primes)
        argv = [sys.executable, __file__, "--child", str(home), "-k", str(args.k)]
        if args.impl:
            argv += ["--impl", args.impl]
        if args.limit is not None:
            argv += ["--limit", args.limit]
        t0 = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            results.append({"episodes": n, "lessons": args.lessons, "timed_out_after_s": args.timeout})
            continue
        if done.returncode != 0:
            raise SystemExit(f"compare failed at {n}: {done.stderr[-2000:]}")
        row = {"episodes": n, "lessons": args.lessons, **json.loads(done.stdout.strip().splitlines()[-1]),
               "process_s": round(time.perf_counter() - t0, 2)}
        results.append(row)
    if args.json:
        print(json.dumps({"impl": args.impl or "remem.engine.compare", "runs": results}, indent=2))
        return 0
    cols = ["episodes", "corrections", "wall_s", "cpu_s", "peak_rss_mb", "rows", "json_bytes",
            "remem_covered", "similar_covered"]
    print(f"compare: {args.impl or 'remem.engine.compare'}, k={args.k}, {args.lessons} lessons")
    print("  ".join(f"{c:>15}" for c in cols))
    for r in results:
        if "timed_out_after_s" in r:
            print(f"{r['episodes']:>15}  timed out after {r['timed_out_after_s']:.0f} s")
            continue
        print("  ".join(f"{r[c]!s:>15}" for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
