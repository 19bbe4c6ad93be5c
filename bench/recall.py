"""Recall latency and memory at 10,000 and 100,000 synthetic episodes.

For each size: a fresh REMEM_HOME filled with synthetic episodes (Zipf-distributed words from a
generated vocabulary, 6-24 words each, dates over two years, real embeddings from the bundled
model, tags), then:

- build: the first recall with no cache on disk, which writes it whole (once per store and
  model; later changes are applied incrementally);
- warm: `recall()` of unrelated queries in this process, the way the MCP server and TUI call it (touch on, so the
  write of touching is included), p50/p95 over --queries queries;
- warm-known-item: queries of 4-6 words taken from one stored memory;
- warm-filtered: the unrelated queries with two kinds and a 90-day window;
- exactness: how much of the top 5 an exhaustive scan (every episode scored) shares;
- cold: `python -m remem recall QUERY --json` as a fresh process each time (interpreter start,
  imports, model load, store open, recall, touch, JSON out), p50/p95 over --cold runs;
- peak memory: max RSS of the warm process (this one) and of the cold processes; it counts the
  mapped vector file's pages (shared, file-backed, evictable), which are most of it at 100k.

Wall-clock times on a shared machine mostly measure the other load; each figure is given
with the CPU time the recall itself used (process CPU) and the load average.

Budgets (DESIGN.md): warm p95 <= 30 ms and cold <= 500 ms at 100,000 episodes.

Usage: python bench/recall.py [--sizes 10000,100000] [--queries 200] [--cold 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The warm figures stand for remem's long-running processes, which keep BLAS to one thread
# (remem/entry.py); this must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench.common import pct  # noqa: E402

BASE = (
    "use uv not pip to install packages run the tests before committing the build failed "
    "because numpy was missing prefer ripgrep over grep keep commits small the migration "
    "broke on sqlite never push to main without review the hook timed out retry with "
    "backoff format with ruff the import is slow cache the model load lazily deploy docker "
    "compose kubernetes staging production database index query latency memory leak"
).split()
KINDS = ("session", "error", "correction", "surprise", "environment", "note")


def vocabulary(n: int, rng: random.Random) -> list[str]:
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "gi", "fu", "be", "ch"]
    words = list(dict.fromkeys(BASE))
    while len(words) < n:
        words.append("".join(rng.choice(syll) for _ in range(rng.randint(2, 4))))
    return list(dict.fromkeys(words))


def sentences(n: int, vocab: list[str], rng: random.Random) -> list[str]:
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]  # Zipf
    return [" ".join(rng.choices(vocab, weights=weights, k=rng.randint(6, 24))) for _ in range(n)]


def build(home: Path, size: int, seed: int = 7) -> float:
    """Fill a store with `size` synthetic episodes; returns seconds."""
    os.environ["REMEM_HOME"] = str(home)
    from remem.engine import clock
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.store import Store

    rng = random.Random(seed)
    vocab = vocabulary(20_000, rng)
    embedder = get_embedder()
    now = clock.now()
    started = time.perf_counter()
    with Store() as store:
        for start in range(0, size, 5000):
            texts = sentences(min(5000, size - start), vocab, rng)
            vecs = embedder.encode(texts)
            eps = []
            for i, (text, vec) in enumerate(zip(texts, vecs)):
                at = clock.iso(now.fromtimestamp(now.timestamp() - rng.random() * 730 * 86400, now.tzinfo))
                eps.append({
                    "id": f"syn{start + i:07d}", "kind": rng.choice(KINDS), "title": text[:80],
                    "gist": text, "at": at, "cwd": f"/home/dev/p{rng.randint(0, 19)}",
                    "session_id": f"s{(start + i) // 40}", "space": embedder.space,
                    "embedding": to_blob(vec), "tags": [f"t{rng.randint(0, 49)}"],
                })
            store.put_episodes(eps)
    return time.perf_counter() - started


# `remem recall QUERY -k 5 --json` as `python -m remem` runs it, reporting its own peak RSS
# (VmHWM: ru_maxrss would count the parent's pages the forked child held before exec).
_CHILD = (
    "import resource, runpy, sys\n"
    "sys.argv = ['remem', 'recall', sys.argv[1], '-k', '5', '--json']\n"
    "code = 0\n"
    "try:\n    runpy.run_module('remem', run_name='__main__', alter_sys=True)\n"
    "except SystemExit as exc:\n    code = exc.code\n"
    "try:\n"
    "    peak = int([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])\n"
    "except (OSError, IndexError):\n"
    "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "sys.stderr.write('\\nrss_kb %d\\n' % peak)\n"
    "sys.exit(code)\n"
)


def measure(home: Path, size: int, queries: int, cold_runs: int) -> dict[str, Any]:
    os.environ["REMEM_HOME"] = str(home)
    from remem import config
    from remem.engine import vectors
    from remem.engine.recall import recall
    from remem.engine.store import Store

    rng = random.Random(11)
    vocab = vocabulary(20_000, random.Random(7))
    # Unrelated: words from the vocabulary's middle, nothing in particular matches (the worst
    # case: relevance is flat, so recency decides and the candidate lists are read deepest).
    qs = [" ".join(rng.sample(vocab[:3000], rng.randint(2, 6))) for _ in range(queries)]
    cfg = config.load()
    vectors.drop_caches()
    shutil.rmtree(home / "cache", ignore_errors=True)  # so the first recall builds it whole
    out: dict[str, Any] = {"episodes": size}
    with Store() as store:
        t0 = time.perf_counter()
        recall(store, "first query builds the cache", 5, cfg=cfg, touch=False)
        out["build_ms"] = round(1000 * (time.perf_counter() - t0), 1)
        recall(store, qs[0], 5, cfg=cfg)  # warm-up
        # Known item: four to six words of one stored memory, the way people half-remember.
        picks = [rng.randint(1, size) for _ in range(queries)]
        known = []
        for seq in picks:
            words = (store.scalar("SELECT gist FROM episodes WHERE seq = ?", (seq,)) or "").split()
            known.append(" ".join(rng.sample(words, min(len(words), rng.randint(4, 6)))))
        for name, kwargs, found in (("warm", {}, qs), ("warm_known_item", {}, known),
                                    ("warm_filtered", {"kinds": ["error", "correction"], "since": "90d"}, qs)):
            times, cpu = [], []
            for q in found:
                t0, c0 = time.perf_counter(), time.process_time()
                recall(store, q, 5, cfg=cfg, **kwargs)
                times.append(1000 * (time.perf_counter() - t0))
                cpu.append(1000 * (time.process_time() - c0))
            out[name] = {"p50_ms": round(pct(times, 50), 2), "p95_ms": round(pct(times, 95), 2),
                         "cpu_p50_ms": round(pct(cpu, 50), 2), "cpu_p95_ms": round(pct(cpu, 95), 2)}
    out["warm_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    with Store() as store:  # after the peak RSS: scanning every row costs memory of its own
        exhaustive = config.load()
        exhaustive["recall"].update(candidates=10**7, recent_candidates=10**7, max_candidates=10**7)
        for name, found in (("unrelated", qs), ("known_item", known)):
            same = 0.0
            for q in found[:20]:
                a = {h["id"] for h in recall(store, q, 5, cfg=cfg, touch=False)}
                b = {h["id"] for h in recall(store, q, 5, cfg=exhaustive, touch=False)}
                same += len(a & b) / 5
            out[f"{name}_overlap_with_exhaustive"] = round(same / min(20, len(found)), 3)
    times, cpu, rss = [], [], []
    env = dict(os.environ, REMEM_HOME=str(home), HF_HUB_OFFLINE="1")
    for q in qs[:cold_runs]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _CHILD, q], capture_output=True, text=True,
                              env=env, cwd=str(ROOT))
        times.append(1000 * (time.perf_counter() - t0))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(1000 * (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime))
        if proc.returncode != 0:
            raise SystemExit(f"remem recall failed: {proc.stderr.strip()}")
        rss.append(float(proc.stderr.strip().splitlines()[-1].split()[-1]) / 1024)
    out["cold"] = {"p50_ms": round(pct(times, 50), 1), "p95_ms": round(pct(times, 95), 1),
                   "cpu_p50_ms": round(pct(cpu, 50), 1), "cpu_p95_ms": round(pct(cpu, 95), 1)}
    out["load_average"] = round(os.getloadavg()[0], 1)
    out["cold_peak_rss_mb"] = round(max(rss), 1)
    cache_bytes = sum(p.stat().st_size for p in (home / "cache").glob("*") if p.is_file())
    out["cache_mb"] = round(cache_bytes / 1e6, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cold", type=int, default=15)
    ap.add_argument("--keep", help="build stores under this folder and keep them (reused if there)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="remem-bench-recall-") as tmp:
            home = Path(args.keep) / f"n{size}" if args.keep else Path(tmp)
            fresh = not (home / "memory.db").exists()
            build_s = build(home, size) if fresh else None
            r = measure(home, size, args.queries, args.cold)
            r["fill_s"] = round(build_s, 1) if build_s is not None else None
            results.append(r)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print("milliseconds: wall-clock p50 / p95 [process CPU p50 / p95]")
    for r in results:
        print(f"{r['episodes']:,} episodes (load average {r['load_average']}):")
        for name in ("warm", "warm_known_item", "warm_filtered", "cold"):
            m = r[name]
            print(f"  {name:<16} {m['p50_ms']:>8.1f} / {m['p95_ms']:>8.1f}   "
                  f"[{m['cpu_p50_ms']:>6.1f} / {m['cpu_p95_ms']:>6.1f}]")
        print(f"  cache build {r['build_ms']:.0f} ms, cache {r['cache_mb']:.0f} MB, peak RSS warm "
              f"{r['warm_peak_rss_mb']:.0f} MB / cold {r['cold_peak_rss_mb']:.0f} MB; top 5 shared with "
              f"an exhaustive scan: unrelated {r['unrelated_overlap_with_exhaustive']:.2f}, "
              f"known item {r['known_item_overlap_with_exhaustive']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
