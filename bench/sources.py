"""Benchmark the sources: events files and Codex rollouts, in a throwaway memory.

- events: N note events (one per conversation turn, the LoCoMo shape: speaker, session, a tag,
  some detail) in one file; times validation alone, the first ingest (embed in one batch, one
  write transaction) and a second ingest of the same file (idempotent: adds nothing).
- codex: a synthetic rollout of about M megabytes in the real shape (messages, function calls
  with JSON-string arguments, outputs with exit codes, event_msg copies, token counts); times
  parse_rollout alone and `ingest_paths` end to end (detectors, embedding, store).

Usage: python bench/sources.py [--events 6000] [--codex-mb 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def write_events(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            ev: dict[str, Any] = {
                "v": 1, "at": f"2023-05-{1 + (i // 400) % 28:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
                "kind": "note", "session": f"conv-{i // 600}:session_{1 + i // 20}",
                "speaker": "Caroline" if i % 2 else "Melanie", "source": "bench",
                "tags": [f"D{1 + i // 20}:{1 + i % 20}"],
                "text": f"Turn {i}: I went to the support group on day {i % 31} and met {i % 7} new people.",
            }
            if i % 5 == 0:
                ev["detail"] = f"Melanie: how was it?\nCaroline: powerful, turn {i}"
            fh.write(json.dumps(ev) + "\n")


def write_rollout(path: Path, megabytes: float) -> None:
    uuid = "0199a1b2-7c3d-7e4f-8a9b-000000000000"

    def line(ts: str, typ: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": ts, "type": typ, "payload": payload}) + "\n"

    with open(path, "w", encoding="utf-8") as fh:
        fh.write(line("2026-11-20T10:00:00.000Z", "session_meta",
                      {"id": uuid, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/home/dev/shop",
                       "originator": "codex_cli_rs", "cli_version": "0.63.0"}))
        i = 0
        log = "".join(f"tests/test_{k}.py::test_case PASSED\n" for k in range(40))
        while fh.tell() < megabytes * 1_000_000:
            ts = f"2026-11-20T{10 + (i // 3600) % 12:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
            ask = f"Step {i}: fix the coupon rounding in module {i % 17} and run the tests."
            fh.write(line(ts, "turn_context", {"cwd": "/home/dev/shop", "model": "gpt-5-codex"}))
            fh.write(line(ts, "response_item", {"type": "message", "role": "user",
                                                "content": [{"type": "input_text", "text": ask}]}))
            fh.write(line(ts, "event_msg", {"type": "user_message", "message": ask}))
            for j in range(3):
                cid = f"call_{i}_{j}"
                fh.write(line(ts, "response_item", {"type": "function_call", "name": "shell", "call_id": cid,
                                                    "arguments": json.dumps({"command": ["bash", "-lc", f"make test-{j}"]})}))
                code = 1 if (i + j) % 9 == 0 else 0
                fh.write(line(ts, "response_item", {"type": "function_call_output", "call_id": cid,
                                                    "output": f"Exit code: {code}\nWall time: 1.2 seconds\nOutput:\n{log}"}))
            reply = f"Done with step {i}: the rounding now uses Decimal."
            fh.write(line(ts, "response_item", {"type": "message", "role": "assistant",
                                                "content": [{"type": "output_text", "text": reply}]}))
            fh.write(line(ts, "event_msg", {"type": "agent_message", "message": reply}))
            fh.write(line(ts, "event_msg", {"type": "token_count", "info": {"total_token_usage": {"total_tokens": i}}}))
            i += 1


def run(n_events: int, codex_mb: float) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="remem-bench-sources-") as tmp:
        os.environ["REMEM_HOME"] = str(Path(tmp) / "home")
        os.environ["CODEX_HOME"] = str(Path(tmp) / "codex")
        from remem.engine import codex, events
        from remem.engine.embed import get_embedder
        from remem.engine.ingest import ingest_paths
        from remem.engine.store import Store

        get_embedder().encode(["warm up"])  # model load is not the sources' cost
        path = Path(tmp) / "turns.jsonl"
        write_events(path, n_events)
        t0 = time.perf_counter()
        found, bad = events.parse_event_lines(path.read_text(encoding="utf-8").split("\n"))
        parse_s = time.perf_counter() - t0
        assert not bad and len(found) == n_events
        with Store() as store:
            t0 = time.perf_counter()
            first = events.ingest_events_file(store, path)
            first_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            second = events.ingest_events_file(store, path)
            second_s = time.perf_counter() - t0
        assert first["episodes"] == n_events and second["episodes"] == 0, (first, second)
        results["events"] = {"n": n_events, "validate_s": parse_s, "first_ingest_s": first_s,
                             "events_per_s": n_events / first_s, "second_ingest_s": second_s,
                             "added_second": second["episodes"]}

        day = Path(tmp) / "codex" / "sessions" / "2026" / "11" / "20"
        day.mkdir(parents=True)
        rollout = day / "rollout-2026-11-20T10-00-00-0199a1b2-7c3d-7e4f-8a9b-000000000000.jsonl"
        write_rollout(rollout, codex_mb)
        size = rollout.stat().st_size
        t0 = time.perf_counter()
        session = codex.parse_rollout(rollout)
        parse_s = time.perf_counter() - t0
        with Store() as store:
            t0 = time.perf_counter()
            summary = ingest_paths(store, source="codex")
            ingest_s = time.perf_counter() - t0
        results["codex"] = {"bytes": size, "turns": len(session.turns), "calls": len(session.tool_calls()),
                            "parse_s": parse_s, "parse_mb_s": size / 1e6 / parse_s,
                            "ingest_s": ingest_s, "ingest_mb_s": size / 1e6 / ingest_s,
                            "episodes": summary["episodes"]}
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=6000)
    ap.add_argument("--codex-mb", type=float, default=20.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    r = run(args.events, args.codex_mb)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    e, c = r["events"], r["codex"]
    rows = [
        (f"events: validate {e['n']:,} lines", f"{e['validate_s']:.2f} s"),
        (f"events: first ingest of {e['n']:,} (embed + store)", f"{e['first_ingest_s']:.2f} s ({e['events_per_s']:,.0f}/s)"),
        ("events: second ingest (adds nothing)", f"{e['second_ingest_s']:.2f} s, {e['added_second']} added"),
        (f"codex: parse {c['bytes'] / 1e6:.1f} MB ({c['turns']:,} turns, {c['calls']:,} calls)",
         f"{c['parse_s']:.2f} s ({c['parse_mb_s']:.0f} MB/s)"),
        ("codex: ingest end to end", f"{c['ingest_s']:.2f} s ({c['ingest_mb_s']:.0f} MB/s, {c['episodes']} episodes)"),
    ]
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"{a.ljust(width)}  {b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
