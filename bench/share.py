"""Benchmark sharing: export, receive and an idle re-sync between two memories in one folder.

Memory A holds --lessons shareable lessons, B holds a third as many of its own and trusts A.
Measured (wall clock, one process, bundled model already loaded by a warm-up):
  export A       A's first sync: sign and write every lesson
  receive B      B's first sync: verify, check, embed, store as candidates, corroborate
  idle sync B    B's second sync with nothing new (reads and verifies every file again)
  idle sync A    A's second sync (reads B's lessons and confirmations)

Usage: python bench/share.py [--lessons 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

TOPICS = ["tests", "installs", "commits", "deploys", "docs", "migrations", "releases", "reviews",
          "logging", "caching", "fixtures", "builds"]
VERBS = ["Always check", "Never skip", "Prefer to batch", "Ask before changing", "Write down",
         "Double-check", "Keep small", "Automate"]


def run(n: int) -> list[dict[str, object]]:
    from remem.engine import lessons, share
    from remem.engine.embed import get_embedder
    from remem.engine.store import Store

    get_embedder().encode(["warm up"])
    rng = random.Random(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        folder = base / "share"
        folder.mkdir()
        a, b = Store(base / "a" / "memory.db"), Store(base / "b" / "memory.db")
        ida, idb = base / "a" / "identity", base / "b" / "identity"
        for i in range(n):
            lessons.add_lesson(a, f"{rng.choice(VERBS)} the {rng.choice(TOPICS)} for service {i} when "
                                  f"{rng.choice(TOPICS)} fail", "correction", strength=1.5)
        for i in range(n // 3):
            lessons.add_lesson(b, f"{rng.choice(VERBS)} {rng.choice(TOPICS)} in project {i}",
                               "correction", strength=1.5)
        # B trusts A before A has ever synced (A's key is not in the folder yet)
        share.trust(b, share.identity(ida).origin, identity_dir=idb, force=True)
        for name, store, ident in (("export A", a, ida), ("receive B", b, idb),
                                   ("idle sync B", b, idb), ("idle sync A", a, ida)):
            start = time.perf_counter()
            out = share.sync(store, folder, identity_dir=ident)
            seconds = time.perf_counter() - start
            s = out["summary"]
            rows.append({"step": name, "seconds": round(seconds, 3), "exported": s["exported"],
                         "received": s["received"], "activated": s["activated"],
                         "confirmed_ours": s["confirmed_ours"]})
        a.close()
        b.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = run(args.lessons)
    if args.json:
        print(json.dumps({"lessons": args.lessons, "rows": rows}, indent=2))
        return
    cols = ["step", "seconds", "exported", "received", "activated", "confirmed_ours"]
    print("  ".join(f"{c:>14}" for c in cols))
    for r in rows:
        print("  ".join(f"{str(r[c]):>14}" for c in cols))


if __name__ == "__main__":
    main()
