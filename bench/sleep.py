"""Benchmark `remem sleep` over a large synthetic memory (budget: 100,000 episodes in 60 s).

Builds a memory in a temporary REMEM_HOME (never the real one) with N episodes, already
embedded by the bundled model as ingest would leave them: sessions, corrections (200 topics,
each said in several ways), errors (classes x modules, as detect_errors.py names them), stated
surprises, environment facts and notes, spread over 90 days. Then times:

1. the first sleep over all of it (every episode is new to consolidation), pass by pass;
2. a nightly sleep after `--new` more episodes arrive (only they are consolidated).

Usage: python bench/sleep.py [--episodes 100000] [--new 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MIX = (("session", 0.40), ("correction", 0.15), ("error", 0.25), ("surprise", 0.05),
       ("environment", 0.10), ("note", 0.05))
TOOLS = ["uv", "pip", "poetry", "npm", "pnpm", "yarn", "pytest", "unittest", "ruff", "black",
         "mypy", "pyright", "docker", "podman", "make", "just", "cargo", "go", "bun", "deno"]
TASKS = ["install packages", "run the tests", "format the code", "check types", "build the image",
         "start the dev server", "lint the repo", "publish a release", "add a dependency",
         "run the migrations"]
FILLERS = ["", "no, ", "please ", "I said ", "again: ", "stop, ", "actually "]
ERRORS = [("module_not_found", "module not found: No module named '{m}'"),
          ("file_not_found", "file not found: No such file or directory: '{m}.yaml'"),
          ("permission_denied", "permission denied: cannot write /var/lib/{m}"),
          ("timeout", "timed out: connection to {m} timed out after 30s"),
          ("test_failure", "tests failed: 3 failed in tests/test_{m}.py"),
          ("command_not_found", "command not found: {m}")]
MODULES = ["requests", "numpy", "pandas", "yaml", "redis", "boto3", "flask", "django", "httpx",
           "torch", "sqlalchemy", "pydantic", "celery", "jinja2", "click", "rich", "typer",
           "scipy", "attrs", "orjson", "lxml", "pillow", "grpc", "kafka", "psycopg", "alembic",
           "uvicorn", "fastapi", "starlette", "tomli", "cryptography", "paramiko", "docker",
           "kubernetes", "openai", "anthropic", "polars", "duckdb", "arrow", "msgpack"]
WORDS = ("refactor the parser add a cache fix the flaky test update the schema rename the module "
         "split the handler write docs for the api review the migration speed up the import bump "
         "the version clean the logs tune the query move config to toml wire the hook").split()


def correction_text(rng: random.Random, topic: int) -> str:
    good, bad = TOOLS[topic % len(TOOLS)], TOOLS[(topic * 7 + 3) % len(TOOLS)]
    task = TASKS[(topic // len(TOOLS)) % len(TASKS)]
    shapes = [f"use {good}, not {bad}, to {task}", f"we {task} with {good} here, never {bad}",
              f"don't use {bad} to {task}; it's {good} in this repo",
              f"{task} with {good} instead of {bad}"]
    return rng.choice(FILLERS) + rng.choice(shapes)


def synthetic(n: int, seed: int = 0, start: str = "2026-08-01T00:00:00+00:00") -> list[dict[str, Any]]:
    from remem.engine import clock

    rng = random.Random(seed)
    t0 = clock.parse(start)
    kinds = [k for k, _ in MIX]
    weights = [w for _, w in MIX]
    out = []
    for i in range(n):
        kind = rng.choices(kinds, weights)[0]
        at = clock.iso(t0 + timedelta(seconds=rng.randint(0, 90 * 86400)))
        cwd = f"/home/u/proj{rng.randint(0, 9)}"
        tags: list[str] = []
        if kind == "correction":
            title = gist = correction_text(rng, rng.randint(0, 199))
        elif kind == "error":
            cls, shape = rng.choice(ERRORS)
            line = shape.format(m=rng.choice(MODULES))
            title = f"Bash {line}"
            gist = f"python app.py\n{line}"
            tags = [f"error:{cls}", "tool:bash"]
        elif kind == "surprise":
            title = gist = f"I did not expect {rng.choice(MODULES)} to need {rng.choice(TOOLS)}"
        elif kind == "environment":
            title = gist = f"{rng.choice(TOOLS)} {rng.randint(1, 20)}.{rng.randint(0, 9)} installed"
        else:
            title = " ".join(rng.choices(WORDS, k=rng.randint(4, 9)))
            gist = title + ". " + " ".join(rng.choices(WORDS, k=rng.randint(10, 30)))
        # created = when ingest stored it: just after it happened (not one frozen instant).
        out.append({"id": f"b{seed}-{i:07d}", "kind": kind, "title": title, "gist": gist, "at": at,
                    "created": at,
                    "cwd": cwd, "session_id": f"s{i // 20}", "source": "claude-code", "tags": tags})
    return out


def load(store: Any, episodes: list[dict[str, Any]]) -> float:
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.sleep_passes import episode_text

    emb = get_embedder()
    t = time.perf_counter()
    for start in range(0, len(episodes), 5000):
        chunk = episodes[start:start + 5000]
        vecs = emb.encode([episode_text(e) for e in chunk])
        for e, v in zip(chunk, vecs):
            e["space"], e["embedding"] = emb.space, to_blob(v)
        store.put_episodes(chunk)
    return time.perf_counter() - t


def timed_sleep(store: Any) -> tuple[float, dict[str, float], dict[str, Any]]:
    from remem.engine.sleep import run_sleep

    per: dict[str, float] = {}
    summary: dict[str, Any] = {}
    t0 = last = time.perf_counter()
    current = None
    for event in run_sleep(store):
        now = time.perf_counter()
        if current is not None:
            per[current] = per.get(current, 0.0) + (now - last)
        current, last = event.pass_name, now
        if event.pass_name == "sleep":
            summary = event.counts or {}
    return time.perf_counter() - t0, per, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=1_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="remem-bench-sleep-") as tmp:
        os.environ["REMEM_HOME"] = str(Path(tmp) / "home")
        os.environ["CLAUDE_CONFIG_DIR"] = str(Path(tmp) / "claude")
        for p in range(10):
            (Path(tmp) / "claude" / "projects" / f"-home-u-proj{p}").mkdir(parents=True)
        from remem.engine import clock
        from remem.engine.store import Store

        with clock.frozen("2026-11-01T03:00:00+00:00"), Store() as store:
            setup = load(store, synthetic(args.episodes))
            first, first_per, first_sum = timed_sleep(store)
            clock.advance(days=1)
            load(store, synthetic(args.new, seed=1, start="2026-10-31T03:00:00+00:00"))
            nightly, nightly_per, nightly_sum = timed_sleep(store)
            lessons = store.scalar("SELECT count(*) FROM lessons")
    result = {
        "episodes": args.episodes, "new": args.new, "setup_s": round(setup, 2),
        "first_sleep_s": round(first, 2), "nightly_sleep_s": round(nightly, 2),
        "budget_s": 60.0, "within_budget": first <= 60.0,
        "first_passes_s": {k: round(v, 2) for k, v in first_per.items() if k != "sleep"},
        "nightly_passes_s": {k: round(v, 2) for k, v in nightly_per.items() if k != "sleep"},
        "lessons": lessons,
        "first_counts": first_sum.get("passes", {}).get("lessons", {}),
        "nightly_counts": nightly_sum.get("passes", {}).get("lessons", {}),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"sleep over {args.episodes:,} episodes (setup: load + embed {result['setup_s']} s, not timed)")
    print(f"{'pass':<10}{'first sleep s':>15}{'nightly s':>12}")
    for name in result["first_passes_s"]:
        print(f"{name:<10}{result['first_passes_s'][name]:>15.2f}{result['nightly_passes_s'].get(name, 0):>12.2f}")
    print(f"{'total':<10}{first:>15.2f}{nightly:>12.2f}   budget 60 s: "
          f"{'within' if first <= 60 else 'OVER'} ({first / 60:.2f} of it)")
    print(f"lessons: {lessons}; first sleep {result['first_counts']}; nightly (+{args.new}) {result['nightly_counts']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
