"""What the proxy costs: added latency per request (p50/p95) and 50 concurrent streams.

Runs a local server that answers like the OpenAI API, then sends the same requests straight
to it and through `remem proxy` (memory on, recording on, a store with 200 lessons).
Every request opens a new conversation, so each one pays for choosing its memory.

    python bench/proxy.py [--requests 200] [--streams 50] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def _timed(client, url: str, n: int, tag: str, stream: bool = False) -> list[float]:
    times = []
    for i in range(n):
        body = {"model": "m", "stream": stream,
                "messages": [{"role": "user", "content": f"{tag} {i}: how do I install the requests package?"}]}
        start = time.perf_counter()
        reply = await client.post(url + "/v1/chat/completions", json=body)
        await reply.aread()
        times.append((time.perf_counter() - start) * 1000)
        assert reply.status_code == 200, reply.text
    return times


async def _streams(client, url: str, count: int) -> tuple[float, int]:
    async def one(i: int) -> int:
        body = {"model": "m", "stream": True,
                "messages": [{"role": "user", "content": f"stream {i}: fix the failing test"}]}
        chunks = 0
        async with client.stream("POST", url + "/v1/chat/completions", json=body) as reply:
            async for _ in reply.aiter_bytes():
                chunks += 1
        return chunks

    start = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(count)))
    return time.perf_counter() - start, sum(1 for c in results if c > 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="remem-bench-proxy-"))
    os.environ["REMEM_HOME"] = str(home)
    os.environ["HF_HUB_OFFLINE"] = "1"
    import httpx2

    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.store import Store
    from remem.proxy import create_app
    from tests.fake_llm_api import FakeAPI, ServerThread

    embedder = get_embedder()
    texts = [f"lesson {i}: prefer tool {i} over tool {i + 1} when building module {i % 17}" for i in range(200)]
    vectors = embedder.encode(texts)
    with Store() as store:
        for text, vec in zip(texts, vectors):
            lessons.add_lesson(store, text, "correction", space=embedder.space, embedding=to_blob(vec))

    fake = FakeAPI()

    async def run(upstream_url: str, proxy_url: str) -> dict:
        limits = httpx2.Limits(max_connections=100, max_keepalive_connections=100)
        async with httpx2.AsyncClient(timeout=60, limits=limits) as client:
            await _timed(client, upstream_url, 5, "warm")
            await _timed(client, proxy_url, 5, "warm")
            direct = await _timed(client, upstream_url, args.requests, "direct")
            proxied = await _timed(client, proxy_url, args.requests, "proxied")
            elapsed_direct, ok_direct = await _streams(client, upstream_url, args.streams)
            elapsed_proxy, ok_proxy = await _streams(client, proxy_url, args.streams)
        return {
            "requests": args.requests,
            "direct_p50_ms": round(statistics.median(direct), 2),
            "direct_p95_ms": round(_percentile(direct, 0.95), 2),
            "proxied_p50_ms": round(statistics.median(proxied), 2),
            "proxied_p95_ms": round(_percentile(proxied, 0.95), 2),
            "added_p50_ms": round(statistics.median(proxied) - statistics.median(direct), 2),
            "added_p95_ms": round(_percentile(proxied, 0.95) - _percentile(direct, 0.95), 2),
            "streams": args.streams,
            "streams_complete_direct": ok_direct,
            "streams_complete_proxied": ok_proxy,
            "streams_per_s_direct": round(args.streams / elapsed_direct, 1),
            "streams_per_s_proxied": round(args.streams / elapsed_proxy, 1),
        }

    with ServerThread(fake.app) as upstream, ServerThread(create_app(upstream.url)) as proxy:
        result = asyncio.run(run(upstream.url, proxy.url))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'measure':<34}{'value':>12}")
    for key, value in result.items():
        print(f"{key:<34}{value:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
