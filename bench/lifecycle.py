"""Benchmark the lifecycle tasks and the graph at scale, in a throwaway memory.

Builds N synthetic episodes (real bundled-model vectors of generated sentences, a few tags,
times spread over a year), then times: auto-discovery for one new memory (cold and warm),
every lifecycle task run once (discover_connections over all N on its first run), a second
forced run of them all (nothing owed: the idempotent case), and paged lists by tag and time.

Usage: python bench/lifecycle.py [--n 100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_WORDS = (
    "use uv not pip to install packages run the tests before committing the build failed "
    "because numpy was missing prefer ripgrep over grep keep commits small the migration "
    "broke on sqlite never push to main without review the hook timed out retry with "
    "backoff format with ruff the import is slow cache the model load lazily deploy staging "
    "database index query plan lock timeout docker compose port config token secret vault"
).split()
_TAGS = ("python", "ops", "git", "tests", "style", "db", "ci", "docs")


def build(store: Any, n: int, seed: int = 0) -> None:
    from remem.engine import clock
    from remem.engine.embed import get_embedder, to_blob

    rng = random.Random(seed)
    embedder = get_embedder()
    now = clock.now()
    batch = 5000
    for start in range(0, n, batch):
        texts = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 14)))
                 for _ in range(min(batch, n - start))]
        vectors = embedder.encode(texts)
        episodes = []
        for i, (text, vec) in enumerate(zip(texts, vectors)):
            when = clock.iso(now - timedelta(days=rng.uniform(0, 365)))
            episodes.append({
                "id": f"b{start + i:015d}", "kind": rng.choice(("session", "error", "note")),
                "title": text[:60], "gist": text, "at": when, "created": when,
                "memory_type": "short_term" if rng.random() < 0.05 else "long_term",
                "expires_at": clock.iso(now + timedelta(days=rng.uniform(-3, 7))) if rng.random() < 0.05 else None,
                "tags": rng.sample(_TAGS, rng.randint(0, 2)),
                "space": embedder.space, "embedding": to_blob(vec),
            })
        store.put_episodes(episodes)


CPU: dict[str, float] = {}


def timed(fn: Any, name: str | None = None) -> tuple[float, Any]:
    """Wall seconds (and CPU seconds of this process into CPU[name]: the machine is shared)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    if name:
        CPU[name] = time.process_time() - c0
    return time.perf_counter() - t0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results: dict[str, Any] = {"n": args.n}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["REMEM_HOME"] = tmp
        from remem.engine import graph, lifecycle
        from remem.engine.memories import remember
        from remem.engine.store import Store

        with Store() as store:
            results["build_s"], _ = timed(lambda: build(store, args.n))
            results["discover_for_cold_s"], _ = timed(
                lambda: remember(store, "retry the docker compose deploy with backoff"))
            warm = []
            for i in range(20):
                t, _ = timed(lambda: remember(store, f"the staging database lock timeout {i}"))
                warm.append(t)
            results["remember_with_discover_warm_p50_s"] = statistics.median(warm)
            ids = [r["id"] for r in store.rows("SELECT id FROM episodes ORDER BY seq DESC LIMIT 20")]
            per = []
            for mid in ids:
                t, _ = timed(lambda: graph.discover_for(store, mid))
                per.append(t)
            results["discover_for_warm_p50_s"] = statistics.median(per)
            tasks: dict[str, float] = {}

            def progress(name: str, done: int, total: int, message: str) -> None:
                if message.startswith("running"):
                    tasks[name] = time.perf_counter()
                elif message.endswith("done"):
                    tasks[name] = time.perf_counter() - tasks[name]

            results["first_run_s"], report = timed(
                lambda: lifecycle.run_due_tasks(store, force=True, progress=progress), "first_run_cpu_s")
            results["first_run_tasks_s"] = {k: round(v, 3) for k, v in tasks.items()}
            results["first_run_results"] = {k: v.get("result") for k, v in report.items() if v["ran"]}
            tasks.clear()
            results["second_run_s"], _ = timed(
                lambda: lifecycle.run_due_tasks(store, force=True, progress=progress), "second_run_cpu_s")
            results["second_run_tasks_s"] = {k: round(v, 3) for k, v in tasks.items()}
            results["list_by_tag_s"], _ = timed(lambda: lifecycle.list_memories(store, tags=["ops", "db"], limit=100))
            results["list_all_tags_s"], _ = timed(
                lambda: lifecycle.list_memories(store, tags=["ops", "db"], all_tags=True, limit=100))
            results["list_since_page_s"], _ = timed(
                lambda: lifecycle.list_memories(store, since="30d", limit=100, offset=200))
            results["traverse_depth3_s"], _ = timed(lambda: graph.traverse(store, ids[0], depth=3))
            results["connections"] = store.scalar("SELECT count(*) FROM connections")
            results.update(CPU)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"lifecycle and graph at {args.n:,} episodes")
    print(f"{'measure':<44} {'seconds':>10}")
    for key, value in results.items():
        if isinstance(value, float):
            print(f"{key:<44} {value:>10.4f}")
    for key in ("first_run_tasks_s", "second_run_tasks_s"):
        for name, value in results[key].items():
            print(f"{key[:-2] + ': ' + name:<44} {value:>10.4f}")
    print(f"connections: {results['connections']:,}; first run: {json.dumps(results['first_run_results'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
