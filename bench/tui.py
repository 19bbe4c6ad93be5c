"""TUI speed on a large memory: first paint, opening the episodes tab, and a page down.

Builds a synthetic store of N episodes (default 100,000) and 500 lessons, then drives the real
app under Textual's pilot, timing each step. Budget (DESIGN.md): first paint <= 1.5 s.

    python bench/tui.py [--episodes 100000] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

KINDS = ("session", "correction", "error", "surprise", "environment", "note")
WORDS = ("install", "test", "build", "deploy", "cache", "database", "migration", "lint", "format", "docker",
         "python", "node", "git", "branch", "merge", "timeout", "permission", "module", "config", "api")


def build(n: int) -> None:
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
            if len(batch) == 5000:
                with store.write() as conn:
                    conn.executemany(
                        f"INSERT INTO episodes ({', '.join(EPISODE_COLUMNS)}) VALUES ({', '.join('?' for _ in EPISODE_COLUMNS)})",
                        [[row[c] for c in EPISODE_COLUMNS] for row in batch])
                batch = []
        emb = get_embedder()
        texts = [f"lesson {i}: prefer {rng.choice(WORDS)} over {rng.choice(WORDS)}" for i in range(500)]
        for text, vec in zip(texts, emb.encode(texts)):
            add_lesson(store, text, "correction", space=emb.space, embedding=to_blob(vec))


async def measure_once() -> dict[str, float]:
    from remem.tui.app import RememApp

    start = time.perf_counter()
    app = RememApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        first_paint = time.perf_counter() - start
        t = time.perf_counter()
        await pilot.press("2")
        await pilot.pause()
        episodes_tab = time.perf_counter() - t
        t = time.perf_counter()
        await pilot.press("n")
        await pilot.pause()
        page_down = time.perf_counter() - t
        status = str(app.query_one("#episode-status").render())
        assert "51-100 of" in status, status
        t = time.perf_counter()
        await pilot.press("3")
        await pilot.pause()
        lessons_tab = time.perf_counter() - t
    return {"first_paint_s": first_paint, "episodes_tab_s": episodes_tab, "page_down_s": page_down,
            "lessons_tab_s": lessons_tab}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="remem-bench-tui-"))
    os.environ["REMEM_HOME"] = str(home)
    os.environ["HF_HUB_OFFLINE"] = "1"
    t = time.perf_counter()
    build(args.episodes)
    built = time.perf_counter() - t
    runs = [asyncio.run(measure_once()) for _ in range(args.runs)]
    result = {"episodes": args.episodes, "lessons": 500, "build_s": round(built, 1), "runs": args.runs}
    for key in runs[0]:
        result[key] = round(statistics.median(r[key] for r in runs), 3)
    result["budget_first_paint_s"] = 1.5
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'measure (median of runs)':<28}{'value':>10}")
    for key, value in result.items():
        print(f"{key:<28}{value:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
