"""Kill test at length: SIGKILL `remem ingest` and `remem sleep` at random points, each time
followed by a run that completes, and check the database after every one.

Each cycle: start the command (real subprocess), SIGKILL it at a random point between the
time remem takes to start (`remem status`) and 90 % of an uninterrupted run's wall time, run it again to completion, then check
PRAGMA integrity_check, both FTS indexes against their tables, duplicate episode ids, and the
episode ids and active lessons against an uninterrupted run of the same input. tests/test_crash.py
is the short version (REMEM_KILLS per command).

    python bench/kill.py [--kills 50] [--sync-kills 20] [--sessions 120] [--seed 1] [--json]

--kills is the total, split evenly between ingest and sleep. --sync-kills (default 20) kills
`remem share sync` of 3,000 lessons, half while memory A exports them into a folder, half while
memory B receives them; each time both syncs then complete and B must hold exactly the lessons an
uninterrupted pair of syncs gives it, every share file must parse (for sync rows, "lost" counts
lessons B is missing and "extra" counts unreadable share files).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import reliability_kit as kit  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=50, help="total kills, half ingest, half sleep")
    ap.add_argument("--sessions", type=int, default=300, help="transcripts in the input")
    ap.add_argument("--sync-kills", type=int, default=20,
                    help="kills of `remem share sync`, half exporting, half receiving")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    started = time.monotonic()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="remem-kill-") as tmp:
        root = Path(tmp)
        prep = kit.prepare_kill(root, sessions=args.sessions)
        timed_s = {c: prep[f"{c}_s"] for c in ("ingest", "sleep")}
        rows = []
        per = {"ingest": args.kills - args.kills // 2, "sleep": args.kills // 2}
        for command, count in per.items():
            results = [kit.kill_cycle(command, prep, root / "work" / "home", rng, fresh=True)
                       for _ in range(count)]
            rows.append({
                "command": command, "cycles": count,
                "killed": sum(r["killed"] for r in results),
                "integrity_ok": sum(r["integrity"] == "ok" for r in results),
                "fts_ok": sum(all(v == "ok" for v in r["fts"].values()) for r in results),
                "duplicated": sum(r["duplicates"] for r in results),
                "lost": sum(r["lost"] for r in results),
                "extra": sum(r["extra"] for r in results),
                "lessons_same": sum(r["lessons_same"] for r in results),
                "clean": sum(r["clean"] for r in results),
                "uninterrupted_s": round(timed_s[command], 2),
                "failures": [r for r in results if not r["clean"]][:5],
            })
        if args.sync_kills:
            sprep = kit.prepare_sync_kill(root / "sync")
            stimed = {side: sprep[f"{side}_s"] for side in ("export", "receive")}
            half = {"export": args.sync_kills - args.sync_kills // 2, "receive": args.sync_kills // 2}
            for side, count in half.items():
                results = [kit.sync_kill_cycle(side, sprep, root / "sync-work", rng) for _ in range(count)]
                rows.append({
                    "command": f"share sync ({side})", "cycles": count,
                    "killed": sum(r["killed"] for r in results),
                    "integrity_ok": sum(r["integrity"] == "ok" for r in results),
                    "fts_ok": sum(all(v == "ok" for v in r["fts"].values()) for r in results),
                    "duplicated": sum(r["duplicates"] for r in results),
                    "lost": sum(r["missing"] for r in results),
                    "extra": sum(r["unreadable_files"] for r in results),
                    "lessons_same": sum(r["lessons_same"] for r in results),
                    "clean": sum(r["clean"] for r in results),
                    "uninterrupted_s": round(stimed[side], 2),
                    "failures": [r for r in results if not r["clean"]][:5],
                })
    wall = time.monotonic() - started
    out = {"kills": args.kills, "sessions": args.sessions, "wall_s": round(wall, 1), "rows": rows}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    cols = ["command", "cycles", "killed", "integrity_ok", "fts_ok", "duplicated", "lost", "extra",
            "lessons_same", "clean", "uninterrupted_s"]
    print(" | ".join(cols))
    for row in rows:
        print(" | ".join(str(row[c]) for c in cols))
        for failure in row["failures"]:
            print(f"  not clean: {failure}")
    print(f"wall {wall:.1f} s for {args.kills} kills over {args.sessions} transcripts")
    if any(row["clean"] != row["cycles"] for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
