"""Stress: concurrent writers over one memory, counted.

8 workers each fire real `remem hook prompt` / `remem hook pre-tool` processes in a loop
(realistic payloads, varied session ids), while a `remem ingest` of generated transcripts,
a `remem sleep` and `remem serve --http` (with its background lifecycle tasks, answering
/memory/recall and /memory/remember) run at the same time. Reports per op type: count,
errors, p50/p95; then "database is locked" reports found in any stderr or log, episodes
missing at the end (the ingest's, checked against a private run of the same input, and every
remembered id), integrity_check and FTS consistency. tests/test_stress.py is the short version;
bench/kill.py is the crash test.

    python bench/stress.py [--workers 8] [--hooks 60] [--recalls 200] [--remembers 50] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import reliability_kit as kit  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8, help="hook-firing workers")
    ap.add_argument("--hooks", type=int, default=60, help="hook calls per worker")
    ap.add_argument("--recalls", type=int, default=200, help="recalls through the HTTP API")
    ap.add_argument("--remembers", type=int, default=50, help="remembers through the HTTP API")
    ap.add_argument("--base-sessions", type=int, default=80, help="transcripts ingested before")
    ap.add_argument("--new-sessions", type=int, default=120, help="transcripts the concurrent ingest reads")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    log = (lambda *a: print(*a, file=sys.stderr)) if not args.json else None
    with tempfile.TemporaryDirectory(prefix="remem-stress-") as tmp:
        out = kit.run_stress(Path(tmp), workers=args.workers, hooks_per_worker=args.hooks,
                             recalls=args.recalls, remembers=args.remembers,
                             base_sessions=args.base_sessions, new_sessions=args.new_sessions, log=log)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print("op | count | errors | p50 ms | p95 ms")
        for row in out["rows"]:
            print(f"{row['op']} | {row['count']} | {row['errors']} | {row['p50_ms']} | {row['p95_ms']}")
        print(f"total ops {out['ops']}, errors {out['errors']}, locked {out['locked']}, "
              f"wall {out['wall_s']} s")
        print(f"episodes expected {out['episodes_expected']}, missing {out['missing']}; "
              f"primes recorded {out['primes_recorded']}; integrity {out['db_integrity']}, "
              f"fts {out['db_fts']}, duplicates {out['db_duplicates']}")
        for problem in out["problems"]:
            print(f"  {problem}")
    bad = out["errors"] or out["locked"] or out["missing"] or not out["db_ok"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
