"""How long a command keeps other writers out: the longest spans during which a second
connection could not take the write lock (BEGIN IMMEDIATE with busy_timeout 0, tried every
5 ms) while `remem sleep` (or any command) runs on a copy of a store.

A hook waits at most what is left of prime.timeout_ms (1 s by default) to record its
decision, so spans under that never reach anyone.

    python bench/lockhold.py --store /tmp/remem-bench-hooks/2000-100000/memory.db [--json] [-- sleep --quiet]

(bench/hooks.py builds that store: 2,000 lessons and 100,000 episodes.)
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def probe(home: Path, args: list[str]) -> dict:
    env = dict(os.environ, REMEM_HOME=str(home), HOME=str(home / "user"), HF_HUB_OFFLINE="1")
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "remem", *args], env=env, cwd=str(ROOT),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    conn = sqlite3.connect(str(home / "memory.db"), timeout=0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 0")
    spans: list[float] = []
    since = None
    tries = 0
    while proc.poll() is None:
        now = time.monotonic()
        tries += 1
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("COMMIT")
            if since is not None:
                spans.append(now - since)
                since = None
        except sqlite3.OperationalError:
            if since is None:
                since = now
        time.sleep(0.005)
    conn.close()
    spans.sort(reverse=True)
    return {"command": args, "exit": proc.returncode, "wall_s": round(time.monotonic() - started, 1),
            "tries": tries, "blocked_spans": len(spans),
            "longest_ms": [round(s * 1000) for s in spans[:5]],
            "over_1s": sum(s > 1.0 for s in spans), "stderr": (proc.stderr.read() or "")[-300:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, help="a memory.db to copy (never written)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("command", nargs="*", default=["sleep", "--quiet"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="remem-lockhold-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        src = sqlite3.connect(args.store)
        dst = sqlite3.connect(str(home / "memory.db"))
        src.backup(dst)
        dst.close()
        src.close()
        out = probe(home, args.command or ["sleep", "--quiet"])
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print("command | exit | wall s | blocked spans | longest ms | over 1 s")
    print(f"{' '.join(out['command'])} | {out['exit']} | {out['wall_s']} | {out['blocked_spans']} | "
          f"{', '.join(map(str, out['longest_ms']))} | {out['over_1s']}")


if __name__ == "__main__":
    main()
