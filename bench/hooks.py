"""Whole-process latency of `remem hook prompt` and `remem hook pre-tool`.

A synthetic store with 2,000 active lessons (embedded with the bundled model) and 100,000
episodes is built once (kept in --store, default /tmp/remem-bench-hooks), then each hook is
run as a fresh process --runs times, through the installed console script and through
`python -m remem`, beside `python -c pass` in the same run. Budgets (docs/DESIGN.md):
prompt p50 <= 120 ms, pre-tool p50 <= 80 ms.

A third of the lessons are error lessons in the words remem drafts them in ("`pip install`
failed here (command not found); check the tool is installed, or use another."), so hundreds
of lessons share the template's words ("failed", "check", "tool"). Two more rows time what
only such a store costs: prompts that share those words ("why is the build failing", a long
prompt of common words), and tool calls that are long scripts (thirty commands and a push, a
here-document and a push, a generated megabyte of continued lines).

    python bench/hooks.py [--runs 40] [--lessons 2000] [--episodes 100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import pct  # noqa: E402

# The vocabulary the synthetic lessons are made of, shared with bench/synth.py.
from bench.synth import ACTIONS, ADVICE, OBJECTS, TOOLS  # noqa: E402

PROMPTS = [
    "build the docker image for the api service and push it",
    "run the tests for the payments module",
    "why does npm install fail here",
    "write a haiku about the sea",
    "migrate the database to the new schema",
    "explain what this function does",
]
# Prompts sharing the drafted error lessons' template words ("fail", "why", "check", "tool",
# "tests", "here"): each of those lessons is a keyword hit.
COMMON_PROMPTS = [
    "why is the build failing",
    "please help me with the project we need to make the code better and fix the thing that is not "
    "working when we run it on the server and also check the tool and the build and the tests "
    "because something failed again here today",
    "find out why the tests fail here and check the tool is installed",
]
# Long scripts: many commands, then the one a lesson is about; a generated megabyte.
LONG_SCRIPTS = [
    "; ".join(f"echo step{i}" for i in range(30)) + "; git push --force",
    "cat > notes.md <<'EOF'\n" + "lorem ipsum dolor sit amet, consectetur adipiscing elit\n" * 55
    + "EOF\ngit add notes.md && git push --force",
    "x \\\n" * 300_000 + "git push --force",
]
TOOL_CALLS = [
    {"tool_name": "Bash", "tool_input": {"command": "docker build -t api ."}},
    {"tool_name": "Bash", "tool_input": {"command": "npm install left-pad"}},
    {"tool_name": "Read", "tool_input": {"file_path": "/home/dev/shop/README.md"}},
    {"tool_name": "Bash", "tool_input": {"command": "pytest -q tests/test_store.py"}},
]


# How a drafted error lesson says what failed, and its advice (lesson_text's wordings).
DRAFTED = [
    ("command not found", "check the tool is installed, or use another"),
    ("exit 1: {obj} failed", "find out why before running it again"),
    ("tests failed: 3 failed in {obj}", "expect these tests to fail until the cause is fixed"),
    ("network error: connection refused", "check that the service it needs is running"),
    ("permission denied", "check the permissions first"),
]


def build_store(home: Path, lessons: int, episodes: int) -> None:
    os.environ["REMEM_HOME"] = str(home)
    import numpy as np

    from remem.engine import clock
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.lessons import lesson_hash
    from remem.engine.programs import matchable_text
    from remem.engine.store import EPISODE_COLUMNS, Store, prepare_episode, stable_id

    rng = random.Random(7)
    emb = get_embedder()
    texts = []
    kinds = ["correction", "error", "surprise"]
    for i in range(lessons):
        tool, act, obj, adv = (rng.choice(TOOLS), rng.choice(ACTIONS), rng.choice(OBJECTS), rng.choice(ADVICE))
        if kinds[i % 3] == "error":  # as remem drafts an error lesson, its template around its words
            how, advice = DRAFTED[i % len(DRAFTED)]
            texts.append(f"`{tool} {act} {i}` failed here ({how.format(obj=obj)}); {advice}.")
        else:
            texts.append(f"When you {act} {obj} with {tool}, {adv} (case {i})")
    # Embedded from their own words, as the sleep embeds a lesson (programs.matchable_text).
    vecs = emb.encode([matchable_text(t, kinds[i % 3]) for i, t in enumerate(texts)])
    stamp = clock.iso()
    store = Store(home / "memory.db")
    with store.write() as conn:
        for i, (text, vec) in enumerate(zip(texts, vecs)):
            kind = kinds[i % 3]
            conn.execute(
                "INSERT INTO lessons (id, text, kind, cwd, strength, seen, sources, status, created, updated, "
                "hash, space, embedding) VALUES (?, ?, ?, ?, ?, 1, '[]', 'active', ?, ?, ?, ?, ?)",
                (f"L{i:05d}", text, kind, None if i % 4 else "/home/dev/shop", 1.0 + (i % 5) / 5,
                 stamp, stamp, lesson_hash(text, kind), emb.space, to_blob(vec)),
            )
    np_rng = np.random.default_rng(7)
    batch = 5000
    for start in range(0, episodes, batch):
        rows = []
        vecs = np_rng.standard_normal((min(batch, episodes - start), emb.dim)).astype("<f4")
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        for j, vec in enumerate(vecs):
            n = start + j
            tool, act, obj = TOOLS[n % len(TOOLS)], ACTIONS[n % len(ACTIONS)], OBJECTS[n % len(OBJECTS)]
            ep = prepare_episode({
                "id": stable_id("bench", str(n)), "session_id": f"s{n // 20}", "source": "claude-code",
                "cwd": "/home/dev/shop", "kind": ["session", "error", "correction", "note"][n % 4],
                "title": f"{act} {obj} with {tool}", "gist": f"Session {n}: {act} {obj} using {tool}; it went fine.",
                "space": emb.space, "embedding": vec.tobytes(),
            }, stamp)
            rows.append([ep[c] for c in EPISODE_COLUMNS])
        with store.write() as conn:
            conn.executemany(
                f"INSERT INTO episodes ({', '.join(EPISODE_COLUMNS)}) VALUES ({', '.join('?' for _ in EPISODE_COLUMNS)})",
                rows,
            )
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()


def timed(argv: list[str], payload: str | None, env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock ms and CPU ms (user + system) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = subprocess.run(argv, input=payload, capture_output=True, text=True, env=env)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    if res.returncode != 0 or "skipped" in res.stderr:
        raise SystemExit(f"{argv} failed: {res.stderr}")
    return elapsed, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--lessons", type=int, default=2000)
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--store", default=str(Path(tempfile.gettempdir()) / "remem-bench-hooks"))
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    home = Path(args.store) / f"{args.lessons}-{args.episodes}-drafted"  # its error lessons drafted
    if args.rebuild and home.exists():
        shutil.rmtree(home)
    if not (home / "memory.db").exists():
        home.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        build_store(home, args.lessons, args.episodes)
        print(f"built {home} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    else:  # a store an older remem built: upgraded once here, as any command would (hooks never do)
        from remem.engine.store import Store

        Store(home / "memory.db").close()
    env = dict(os.environ, REMEM_HOME=str(home))
    env.pop("REMEM_HOOK_MODULES_OUT", None)
    # As installed: bytecode cached (pip compiles it). Kept out of the tree with a prefix.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(args.store) / "pycache")
    script = shutil.which("remem") or str(Path(sys.executable).parent / "remem")
    py = sys.executable
    cases = {
        "python -c pass": ([py, "-c", "pass"], lambda i: None),
        "remem hook prompt": ([script, "hook", "prompt"], lambda i: json.dumps(
            {"prompt": PROMPTS[i % len(PROMPTS)], "session_id": f"bench-{i}", "cwd": "/home/dev/shop"})),
        "python -m remem hook prompt": ([py, "-m", "remem", "hook", "prompt"], lambda i: json.dumps(
            {"prompt": PROMPTS[i % len(PROMPTS)], "session_id": f"bench-m-{i}", "cwd": "/home/dev/shop"})),
        "remem hook pre-tool": ([script, "hook", "pre-tool"], lambda i: json.dumps(
            {**TOOL_CALLS[i % len(TOOL_CALLS)], "session_id": f"bench-t-{i}", "cwd": "/home/dev/shop"})),
        "python -m remem hook pre-tool": ([py, "-m", "remem", "hook", "pre-tool"], lambda i: json.dumps(
            {**TOOL_CALLS[i % len(TOOL_CALLS)], "session_id": f"bench-tm-{i}", "cwd": "/home/dev/shop"})),
        "remem hook prompt, template words": ([script, "hook", "prompt"], lambda i: json.dumps(
            {"prompt": COMMON_PROMPTS[i % len(COMMON_PROMPTS)], "session_id": f"bench-c-{i}",
             "cwd": "/home/dev/shop"})),
        "remem hook pre-tool, long script": ([script, "hook", "pre-tool"], lambda i: json.dumps(
            {"tool_name": "Bash", "tool_input": {"command": LONG_SCRIPTS[i % len(LONG_SCRIPTS)]},
             "session_id": f"bench-l-{i}", "cwd": "/home/dev/shop"})),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    for name, (argv, payload) in cases.items():  # warm the page cache (and remem's vocab cache) once
        timed(argv, payload(0), env)
    for i in range(args.runs):  # interleaved, so drift hits every case alike
        for name, (argv, payload) in cases.items():
            wall, cpu = timed(argv, payload(i + 1), env)
            times[name].append(wall)
            cpus[name].append(cpu)
    budgets = {"remem hook prompt": 120, "remem hook pre-tool": 80}
    base = statistics.median(times["python -c pass"])
    rows = []
    for name, vals in times.items():
        rows.append({"case": name, "runs": len(vals), "p50_ms": round(statistics.median(vals), 1),
                     "p95_ms": round(pct(vals, 95), 1), "cpu_p50_ms": round(statistics.median(cpus[name]), 1),
                     "x_python": round(statistics.median(vals) / base, 2),
                     "budget_p50_ms": budgets.get(name.replace("python -m ", "").split(",")[0])})
    if args.json:
        print(json.dumps({"lessons": args.lessons, "episodes": args.episodes, "load": os.getloadavg(),
                          "rows": rows}, indent=2))
        return
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.lessons} lessons, {args.episodes} episodes, {args.runs} runs each (load average {load})")
    print(f"{'case':34} {'p50 ms':>8} {'p95 ms':>8} {'CPU p50':>8} {'x python':>9} {'budget p50':>11}")
    for r in rows:
        budget = f"{r['budget_p50_ms']}" if r["budget_p50_ms"] else "-"
        print(f"{r['case']:34} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {r['cpu_p50_ms']:8.1f} "
              f"{r['x_python']:9.2f} {budget:>11}")


if __name__ == "__main__":
    main()
