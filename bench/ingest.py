"""Benchmark ingest end to end over a large synthetic Claude Code history.

Generates realistic v2-shaped transcripts (streamed assistant records with usage metadata,
progress and file-history-snapshot lines, tool results of file reads, command output and
failures duplicated in toolUseResult as Claude Code writes them, corrections, offers,
surprises) into a temporary folder, then runs `ingest_paths` into a fresh store with the
bundled model and reports MB/s against the budget (>= 30 MB/s) and peak memory.

`--into N` ingests into a store that already holds N episodes as ingest and sleep leave them
(bench/sleep.py's generator: 40 % sessions, each tagged with its source, corrections, errors
tagged by class, over 90 days; embedded with the bundled model; filling it is not timed): what
a long-used memory pays per transcript for the queries ingest runs against what is stored. The
default (an empty store) takes about a minute; `--into 100000` several more.

Usage: python bench/ingest.py [--mb 200] [--into 100000] [--json] [--keep DIR]
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
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUDGET_MB_S = 30.0

_WORDS = (
    "the cache test fails because redis is not running locally so I will mock the client and "
    "rerun the suite after updating the fixture in conftest which builds the connection at import "
    "time the migration adds a column to products and the view needs the new name as well"
).split()
_ASKS = [
    "fix the failing test in tests/test_cart.py", "add pagination to the products endpoint",
    "why is the build slow on CI", "rename get_user to fetch_user everywhere",
    "upgrade the http client and fix what breaks", "write docs for the cache module",
]
_PUSHBACK = ["no, use uv instead of pip", "don't touch the migrations folder", "that's not what I asked, only the tests",
             "stop, I'll do the release myself", "try again with the smaller fixture"]
_ERRORS = [
    "Exit code 1\nFAILED tests/test_cart.py::test_total - assert 9.99 == 10.0\n1 failed, 41 passed in 2.31s",
    "Exit code 127\n/bin/bash: line 1: rg: command not found",
    "Exit code 1\nModuleNotFoundError: No module named 'fakeredis'",
    "Exit code 1\nCONFLICT (content): Merge conflict in app/cart.py",
    "<tool_use_error>File does not exist.</tool_use_error>",
]


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(lo, hi)))


def _code(rng: random.Random, lines: int) -> str:
    return "\n".join(f"{i + 1:6d}→    {_text(rng, 4, 12)}" for i in range(lines))


def make_session(rng: random.Random, cwd: str, target_bytes: int) -> tuple[str, list[str]]:
    """One transcript of about target_bytes: a list of JSONL lines."""
    sid = str(uuid.UUID(int=rng.getrandbits(128)))
    out: list[str] = []
    clock = [0]

    def stamp() -> str:
        clock[0] += rng.randint(1, 20)
        s = clock[0]
        return f"2026-11-20T{(s // 3600) % 24:02d}:{(s // 60) % 60:02d}:{s % 60:02d}.{s % 1000:03d}Z"

    def base() -> dict[str, Any]:
        return {"parentUuid": str(uuid.UUID(int=rng.getrandbits(128))), "isSidechain": False,
                "userType": "external", "cwd": cwd, "sessionId": sid, "version": "2.1.38",
                "gitBranch": "main", "uuid": str(uuid.UUID(int=rng.getrandbits(128))), "timestamp": stamp()}

    size = [0]

    def emit(rec: dict[str, Any]) -> None:
        line = json.dumps(rec, ensure_ascii=False) + "\n"
        size[0] += len(line)
        out.append(line)

    def user(content: Any, **extra: Any) -> None:
        emit({**base(), "type": "user", "message": {"role": "user", "content": content}, **extra})

    def assistant(mid: str, block: dict[str, Any]) -> None:
        emit({**base(), "type": "assistant", "requestId": f"req_{mid}", "message": {
            "model": "claude-opus-4-6", "id": mid, "type": "message", "role": "assistant", "content": [block],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": rng.randint(100, 20000),
                      "cache_read_input_tokens": rng.randint(1000, 90000), "output_tokens": rng.randint(5, 900),
                      "service_tier": "standard"}}})

    emit({"type": "file-history-snapshot", "messageId": sid, "snapshot": {"messageId": sid, "trackedFileBackups": {},
                                                                           "timestamp": stamp()}, "isSnapshotUpdate": False})
    user(rng.choice(_ASKS), permissionMode="default")
    n = 0
    while size[0] < target_bytes:
        n += 1
        mid = f"msg_{rng.getrandbits(64):016x}"
        assistant(mid, {"type": "thinking", "thinking": _text(rng, 20, 80), "signature": "x" * 200})
        if rng.random() < 0.5:
            assistant(mid, {"type": "text", "text": _text(rng, 10, 60)})
        calls = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            cid = f"toolu_{rng.getrandbits(64):016x}"
            kind = rng.random()
            if kind < 0.45:
                inp = {"file_path": f"{cwd}/app/mod{rng.randint(1, 60)}.py"}
                name = "Read"
            elif kind < 0.8:
                inp = {"command": rng.choice(["uv run pytest -q", "git status", "ls -la app", "python --version"]),
                       "description": _text(rng, 3, 8)}
                name = "Bash"
            else:
                inp = {"file_path": f"{cwd}/app/mod{rng.randint(1, 60)}.py", "old_string": _text(rng, 5, 20),
                       "new_string": _text(rng, 5, 25)}
                name = "Edit"
            assistant(mid, {"type": "tool_use", "id": cid, "name": name, "input": inp})
            calls.append((cid, name))
        for cid, name in calls:
            for _ in range(rng.randint(1, 3)):
                emit({**base(), "type": "progress", "data": {"type": "hook_progress", "hookEvent": "PostToolUse",
                                                            "hookName": f"PostToolUse:{name}", "command": "callback"},
                      "toolUseID": cid, "parentToolUseID": cid})
            failed = rng.random() < 0.06
            if failed:
                content = rng.choice(_ERRORS)
            elif name == "Read":
                content = _code(rng, rng.randint(20, 250))
            elif name == "Bash":
                content = "\n".join(_text(rng, 5, 15) for _ in range(rng.randint(1, 40)))
            else:
                content = f"The file {cwd}/app/x.py has been updated."
            extra = {"stdout": content, "stderr": "", "interrupted": False, "isImage": False} if name == "Bash" else \
                {"type": "text", "file": {"filePath": f"{cwd}/app/x.py", "content": content}}
            user([{"tool_use_id": cid, "type": "tool_result", "content": content, "is_error": failed}],
                 toolUseResult=extra, sourceToolAssistantUUID=str(uuid.UUID(int=rng.getrandbits(128))))
        if rng.random() < 0.12:
            hand = f"msg_{rng.getrandbits(64):016x}"
            text = _text(rng, 20, 80)
            if rng.random() < 0.3:
                text += " Turns out the fixture was shared between tests."
            text += rng.choice([" Shall I run the tests?", " Would you like me to commit this?", ""])
            assistant(hand, {"type": "text", "text": text})
            user(rng.choice(_PUSHBACK + ["yes", "go ahead", "now the docs please", "looks good"]))
    return sid, out


def generate(folder: Path, total_mb: float, seed: int = 7) -> tuple[int, int]:
    """Write about total_mb of transcripts under folder/projects/*; returns (files, bytes)."""
    rng = random.Random(seed)
    target = int(total_mb * 1_000_000)
    written = files = 0
    projects = [folder / "projects" / f"-home-dev-code-app{i}" for i in range(8)]
    for p in projects:
        p.mkdir(parents=True, exist_ok=True)
    while written < target:
        project = rng.choice(projects)
        per_file = min(target - written, rng.choice((200_000, 600_000, 1_500_000, 3_000_000)))
        sid, lines = make_session(rng, "/home/dev/code/" + project.name.rsplit("-", 1)[-1], per_file)
        data = "".join(lines).encode("utf-8")
        (project / f"{sid}.jsonl").write_bytes(data)
        written += len(data)
        files += 1
    return files, written


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _json_floor(folder: Path) -> tuple[float, float]:
    """Reading every line and json.loads-ing it, nothing else: the floor ingest sits on."""
    cpu0, t0 = _cpu(), time.perf_counter()
    for path in folder.rglob("*.jsonl"):
        with path.open("rb") as fh:
            for line in fh:
                json.loads(line)
    return time.perf_counter() - t0, _cpu() - cpu0


def prefill(n: int) -> None:
    """n episodes as a long-used memory holds them (bench/sleep.py's mix), sessions tagged with
    their source as ingest tags them, into $REMEM_HOME's store. Run in a process of its own, so
    the bench's peak RSS stays ingest's."""
    from bench.sleep import load, synthetic
    from remem.engine.store import Store

    episodes = synthetic(n, seed=3, start="2026-08-01T00:00:00+00:00")
    for ep in episodes:
        if ep["kind"] == "session":
            ep["tags"] = [ep["source"]]
    with Store() as store:
        load(store, episodes)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def run(total_mb: float, keep: str | None = None, into: int = 0) -> dict[str, Any]:
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="remem-bench-ingest-"))
    try:
        claude = work / "claude"
        t0 = time.perf_counter()
        files, size = generate(claude, total_mb)
        gen_s = time.perf_counter() - t0
        os.environ["REMEM_HOME"] = str(work / "home")
        os.environ["CLAUDE_CONFIG_DIR"] = str(claude)
        os.environ["CODEX_HOME"] = str(work / "codex")
        from remem.engine.embed import get_embedder
        from remem.engine.ingest import ingest_paths
        from remem.engine.store import Store

        t_fill = time.perf_counter()
        if into:
            code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from bench.ingest import prefill; prefill({into})"
            subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
        fill_s = time.perf_counter() - t_fill
        get_embedder().encode(["warm up"])  # model load is not ingest
        floor_s, floor_cpu = _json_floor(claude)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with Store() as store:
            before = int(store.scalar("SELECT count(*) FROM episodes"))
            cpu0 = _cpu()
            t1 = time.perf_counter()
            summary = ingest_paths(store, source="claude-code")
            ingest_s = time.perf_counter() - t1
            cpu_s = _cpu() - cpu0
            t2 = time.perf_counter()
            again = ingest_paths(store, source="claude-code")
            rerun_s = time.perf_counter() - t2
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        mb = size / 1_000_000
        return {
            "files": files, "mb": round(mb, 1), "generate_s": round(gen_s, 1),
            "episodes_before": before, "prefill_s": round(fill_s, 1),
            "ingest_s": round(ingest_s, 2), "mb_per_s": round(mb / ingest_s, 1), "budget_mb_per_s": BUDGET_MB_S,
            "within_budget": mb / ingest_s >= BUDGET_MB_S,
            "cpu_s": round(cpu_s, 2), "mb_per_cpu_s": round(mb / cpu_s, 1),
            "json_floor_s": round(floor_s, 2), "json_floor_mb_per_cpu_s": round(mb / floor_cpu, 1),
            "sessions": summary["sessions"], "episodes": summary["episodes"], "by_kind": summary["by_kind"],
            "rerun_s": round(rerun_s, 3), "rerun_skipped": again["skipped"],
            "peak_rss_mb": round(peak_kb / 1024, 1), "rss_before_ingest_mb": round(rss_before / 1024, 1),
        }
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200.0, help="size of the synthetic history (MB)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--keep", help="generate into this folder and keep it")
    parser.add_argument("--into", type=int, default=0, metavar="N",
                        help="ingest into a store already holding N episodes (e.g. 100000)")
    args = parser.parse_args()
    result = run(args.mb, args.keep, args.into)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    rows = [
        ("transcripts", f"{result['files']} files, {result['mb']} MB"),
        ("store before ingest", f"{result['episodes_before']} episodes"
                                + (f" (filled in {result['prefill_s']} s, not timed)" if result['episodes_before'] else "")),
        ("ingest time", f"{result['ingest_s']} s"),
        ("throughput", f"{result['mb_per_s']} MB/s (budget >= {BUDGET_MB_S:.0f} MB/s: "
                       f"{'met' if result['within_budget'] else 'NOT met'})"),
        ("per CPU second", f"{result['mb_per_cpu_s']} MB (cpu {result['cpu_s']} s; the machine may be shared)"),
        ("json floor", f"{result['json_floor_mb_per_cpu_s']} MB per CPU second for reading + json.loads alone"),
        ("sessions / episodes", f"{result['sessions']} / {result['episodes']}"),
        ("episodes by kind", ", ".join(f"{k} {v}" for k, v in sorted(result["by_kind"].items()))),
        ("re-run (all unchanged)", f"{result['rerun_s']} s, {result['rerun_skipped']} skipped"),
        ("peak memory (RSS)", f"{result['peak_rss_mb']} MB (before ingest {result['rss_before_ingest_mb']} MB)"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
