"""Warm recall latency over MCP at 100,000 episodes: the round trip an agent sees.

A fresh REMEM_HOME is filled with synthetic episodes (the generator of bench/recall.py: real
embeddings from the bundled model), then `remem serve` is started and driven by the mcp SDK's
client, once over stdio and once over streamable HTTP. After a first call (which builds or
loads recall's vector cache) and some warm-up calls, each query is one `tools/call recall`
(k=5, touch on, so the write of touching is included), timed from the client's send to the
parsed result. Background lifecycle tasks are off (--no-tasks) so they do not share the two
cores with the measurement; a server started without that flag runs them once at start and
then every few minutes.

Budget (DESIGN.md): p95 <= 30 ms at 100,000 episodes (warm).

The same queries are also run in-process (no MCP) as the baseline, and a get_memory round
trip shows what the protocol alone costs.

Usage: python bench/mcp.py [--size 100000] [--queries 200] [--transports in-process,stdio,http]
                           [--home DIR] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# This file is named like the mcp package: keep its folder off the path so `import mcp` works.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.common import pct  # noqa: E402


def _recall_bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_recall", ROOT / "bench" / "recall.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _floor(client: Any, memory_id: str, n: int = 100) -> float:
    """p50 of a get_memory round trip: the protocol's own cost, with almost no engine work."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        await client.call_tool("get_memory", {"id": memory_id})
        times.append((time.perf_counter() - t0) * 1000)
    return round(pct(times, 50), 2)


async def _drive(client: Any, queries: list[str], warmup: int) -> dict[str, float]:
    started = time.perf_counter()
    first = await client.call_tool("recall", {"query": queries[0], "k": 5})
    first_ms = (time.perf_counter() - started) * 1000
    assert not first.is_error, first.content
    for q in queries[1:warmup + 1]:
        await client.call_tool("recall", {"query": q, "k": 5})
    times = []
    for q in queries[warmup + 1:]:
        t0 = time.perf_counter()
        result = await client.call_tool("recall", {"query": q, "k": 5})
        times.append((time.perf_counter() - t0) * 1000)
        assert not result.is_error and result.structured_content["hits"], result.content
    floor = await _floor(client, first.structured_content["hits"][0]["id"])
    return {"first_ms": round(first_ms, 1), "p50_ms": round(pct(times, 50), 2),
            "p95_ms": round(pct(times, 95), 2), "max_ms": round(max(times), 2), "calls": len(times),
            "get_memory_p50_ms": floor}


def in_process(home: Path, queries: list[str], warmup: int) -> dict[str, float]:
    """The same recall calls without MCP: what the tool itself costs in a warm process."""
    os.environ["REMEM_HOME"] = str(home)
    from remem.engine.recall import recall
    from remem.engine.store import Store

    with Store() as store:
        t0 = time.perf_counter()
        recall(store, queries[0], 5)
        first_ms = (time.perf_counter() - t0) * 1000
        for q in queries[1:warmup + 1]:
            recall(store, q, 5)
        times = []
        for q in queries[warmup + 1:]:
            t0 = time.perf_counter()
            recall(store, q, 5)
            times.append((time.perf_counter() - t0) * 1000)
    return {"first_ms": round(first_ms, 1), "p50_ms": round(pct(times, 50), 2),
            "p95_ms": round(pct(times, 95), 2), "max_ms": round(max(times), 2), "calls": len(times),
            "get_memory_p50_ms": None}


async def over_stdio(env: dict[str, str], queries: list[str], warmup: int) -> dict[str, float]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "remem", "serve", "--no-tasks"],
                                   env=env, cwd=str(ROOT))
    with open(os.devnull, "w") as quiet:
        async with Client(stdio_client(params, errlog=quiet), read_timeout_seconds=600) as client:
            return await _drive(client, queries, warmup)


async def over_http(env: dict[str, str], queries: list[str], warmup: int) -> dict[str, float]:
    import httpx2
    from mcp.client import Client

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--http", "--no-tasks", "--port", str(port)],
                            env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx2.get(f"{url}/memory/health", timeout=5).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("remem serve --http did not start")
            time.sleep(0.2)
        async with Client(f"{url}/mcp", read_timeout_seconds=600) as client:
            return await _drive(client, queries, warmup)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main(argv: list[str] | None = None) -> int:
    import anyio

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--transports", default="in-process,stdio,http",
                    help="Any of in-process (no MCP, the baseline), stdio, http.")
    ap.add_argument("--home", help="Reuse (or build once into) this folder instead of a new temp one.")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    rb = _recall_bench()
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="remem-bench-mcp-"))
    build_s = 0.0
    if not (home / "memory.db").exists():
        build_s = rb.build(home, args.size)
    rng = random.Random(11)
    vocab = rb.vocabulary(20_000, rng)
    queries = [" ".join(rng.choices(vocab[:400], k=rng.randint(3, 8)))
               for _ in range(args.queries + args.warmup + 1)]
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_TOKEN": "", "HF_HUB_OFFLINE": "1"}
    rows = []
    for transport in [t.strip() for t in args.transports.split(",") if t.strip()]:
        if transport == "in-process":
            figures = in_process(home, queries, args.warmup)
        else:
            run = over_stdio if transport == "stdio" else over_http
            figures = anyio.run(run, env, queries, args.warmup)
        rows.append({"transport": transport, "episodes": args.size, **figures})
    if args.json:
        print(json.dumps({"build_s": round(build_s, 1), "results": rows}, indent=2))
        return 0
    print(f"store: {args.size:,} synthetic episodes, built in {build_s:.1f} s; recall k=5 over MCP")
    print(f"{'transport':<11} {'first call':>11} {'p50':>8} {'p95':>8} {'max':>8} {'calls':>6} {'get_memory p50':>15}")
    for r in rows:
        floor = "" if r["get_memory_p50_ms"] is None else f"{r['get_memory_p50_ms']:.1f}ms"
        print(f"{r['transport']:<11} {r['first_ms']:>9.0f}ms {r['p50_ms']:>6.1f}ms {r['p95_ms']:>6.1f}ms "
              f"{r['max_ms']:>6.1f}ms {r['calls']:>6} {floor:>15}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
