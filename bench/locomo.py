"""Retrieval on LoCoMo-format conversations: turn- and session-level R@5 / R@10.

For each conversation: a fresh REMEM_HOME, one `kind: note` event per turn (dated by its
session, `speaker`, `text`, `tags: [dia_id]`, `detail` = the neighbouring turns of the same
session) written to an events file and ingested through remem's own events path
(`events.ingest_events_file`). Every question of categories 1-4 with evidence is then asked
through `recall.recall`, the function behind `remem recall`, with touch=False (touching would
change strength between questions, and the benchmark must not depend on question order) and
lessons off (there are none).

The metric (the evaluation data's README): turn-level R@k = the share of a question's evidence
turns among the top k results, averaged over questions; session-level R@k = the same with each
turn mapped to its session (a session is found when any of its turns is in the top k).
Malformed evidence ids are repaired when unambiguous ("D:11:26" -> D11:26, "D30:05" -> D30:5,
"D8:6; D9:17" -> both); the rest ("D") are dropped, and so are ids not in the conversation.
Untidy conversations are measured, not refused: a session with an unreadable date is dated a
day after the one before it; a turn without an id, speaker or text, or repeating an id, is left
out; each such case is printed on stderr (and listed under "warnings" with --json).

Baselines in the same run, over the same stores: remem's keyword mode (BM25 alone) and
semantic mode (cosine alone); and `bm25-plain`, SQLite FTS5 (porter) over each turn's own
text with every query word, no context and no stop words (the reference baseline).

Usage: python bench/locomo.py --data locomo.json [--json] [--context 2] [--only conv-26]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CATEGORIES = (1, 2, 3, 4)
_ID = re.compile(r"D:?(\d+):0*(\d+)", re.I)
_WORD = re.compile(r"[A-Za-z0-9_]+")


def repair_evidence(raw: Any) -> list[str]:
    """Evidence strings -> valid dia ids ("D3:7"), repairing what is unambiguous."""
    out: list[str] = []
    for item in raw if isinstance(raw, list) else [raw]:
        for part in re.split(r"[;,\s]+", str(item)):
            m = _ID.fullmatch(part.strip())
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(out))


def session_date(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" -> ISO 8601 UTC."""
    text = " ".join(str(text).split())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).isoformat()
        except ValueError:
            continue
    from remem.engine.query_dates import date_spans

    spans = date_spans(text)  # any other written date: its day, at midnight
    if spans:
        first = spans[0][0]
        return datetime(first.year, first.month, first.day, tzinfo=timezone.utc).isoformat()
    raise ValueError(f"unreadable session date {text!r}")


def sessions_of(conv: dict[str, Any], warn: Any = None) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """(number, ISO date, turns) per session, in order. A session whose date cannot be read
    is dated a day after the one before it (said through `warn`), not dropped."""
    found = sorted((int(m.group(1)), key) for key in conv
                   if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(conv[key], list) and conv[key])
    out: list[tuple[int, str, list[dict[str, Any]]]] = []
    for number, key in found:
        raw = conv.get(f"{key}_date_time")
        try:
            at = session_date(raw)
        except ValueError:
            before = datetime.fromisoformat(out[-1][1]) if out else datetime(2000, 1, 1, tzinfo=timezone.utc)
            at = (before + timedelta(days=1)).isoformat()
            if warn:
                warn(f"{key}: unreadable date {raw!r}; dated a day after the session before it")
        out.append((number, at, conv[key]))
    return out


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text") or "")
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def _usable(turns: list[Any], seen: set[str], warn: Any) -> list[dict[str, Any]]:
    """The turns that can be memories: a dict with a new dia_id, a speaker and some text."""
    out = []
    for turn in turns:
        dia = turn.get("dia_id") if isinstance(turn, dict) else None
        if not dia or not turn.get("speaker") or not turn_text(turn).strip():
            warn(f"turn {dia or turn!r:.60}: no dia_id, speaker or text; left out")
        elif dia in seen:
            warn(f"turn {dia}: dia_id seen before in this conversation; the second one left out")
        else:
            seen.add(dia)
            out.append(turn)
    return out


def events_for(sample: dict[str, Any], context: int, warn: Any = None) -> list[dict[str, Any]]:
    """One note event per turn; `detail` holds the `context` turns either side."""
    sid = str(sample.get("sample_id", "conv"))
    warn = warn or (lambda message: None)
    events = []
    seen: set[str] = set()
    for number, at, raw_turns in sessions_of(sample["conversation"], warn):
        turns = _usable(raw_turns, seen, warn)
        for i, turn in enumerate(turns):
            around = [f"{t['speaker']}: {turn_text(t)}"
                      for t in turns[max(0, i - context): i + context + 1] if t is not turn]
            events.append({
                "v": 1, "id": f"{sid}:{turn['dia_id']}", "kind": "note", "at": at,
                "session": f"{sid}:session_{number}", "speaker": turn["speaker"],
                "text": turn_text(turn), "tags": [turn["dia_id"]],
                "detail": "\n".join(around), "source": "locomo",
            })
    return events


def questions_of(sample: dict[str, Any], known: set[str]) -> list[dict[str, Any]]:
    out = []
    for qa in sample.get("qa") or []:
        if not isinstance(qa, dict) or not str(qa.get("question") or "").strip():
            continue
        try:
            category = int(qa.get("category"))
        except (TypeError, ValueError):
            continue
        if category not in CATEGORIES:
            continue
        evidence = [e for e in repair_evidence(qa.get("evidence", [])) if e in known]
        if evidence:
            out.append({"question": str(qa["question"]), "evidence": evidence, "category": category})
    return out


def _session_of(dia: str) -> str:
    return dia.split(":")[0]


class Tally:
    def __init__(self) -> None:
        self.sums = {"turn": {5: 0.0, 10: 0.0}, "session": {5: 0.0, 10: 0.0}}
        self.n = 0

    def add(self, ranked: list[str], evidence: list[str]) -> None:
        ev = set(evidence)
        ev_sessions = {_session_of(e) for e in ev}
        for k in (5, 10):
            top = ranked[:k]
            self.sums["turn"][k] += len(ev & set(top)) / len(ev)
            self.sums["session"][k] += len(ev_sessions & {_session_of(d) for d in top}) / len(ev_sessions)
        self.n += 1

    def result(self) -> dict[str, Any]:
        n = max(self.n, 1)
        return {level: {f"R@{k}": round(v / n, 4) for k, v in ks.items()}
                for level, ks in self.sums.items()} | {"questions": self.n}


def plain_bm25(turns: list[tuple[str, str]]) -> Any:
    """The reference baseline: FTS5 porter over each turn's own text, every query word OR'd."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(dia UNINDEXED, text, tokenize='porter unicode61')")
    db.executemany("INSERT INTO t (dia, text) VALUES (?, ?)", turns)

    def search(question: str, k: int) -> list[str]:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        return [r[0] for r in db.execute(
            "SELECT dia FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, k))]

    return search


def run(data: list[dict[str, Any]], context: int, only: set[str] | None = None,
        baselines: bool = True) -> dict[str, Any]:
    from remem import config
    from remem.engine import events as events_mod
    from remem.engine import vectors
    from remem.engine.recall import recall
    from remem.engine.store import Store

    systems = ("remem", "bm25", "cosine", "bm25-plain")
    tallies = {s: Tally() for s in systems}
    by_category: dict[int, Tally] = {}
    old_home = os.environ.get("REMEM_HOME")
    started = time.perf_counter()
    ingest_s = 0.0
    query_times: list[float] = []
    warnings: list[str] = []
    try:
        for number, sample in enumerate(data):
            if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
                warnings.append(f"sample {number}: no conversation; left out")
                continue
            sid = str(sample.get("sample_id", "conv"))
            if only and sid not in only:
                continue
            with tempfile.TemporaryDirectory(prefix="remem-locomo-") as tmp:
                os.environ["REMEM_HOME"] = tmp
                vectors.drop_caches()
                cfg = config.load()
                evs = events_for(sample, context, lambda m, sid=sid: warnings.append(f"{sid} {m}"))
                path = Path(tmp) / "turns.jsonl"
                path.write_text("".join(json.dumps(e) + "\n" for e in evs), encoding="utf-8")
                t0 = time.perf_counter()
                with Store() as store:
                    summary = events_mod.ingest_events_file(store, path)
                    if summary["errors"] or summary["episodes"] != len(evs):
                        raise SystemExit(f"{sid}: ingest stored {summary['episodes']} of {len(evs)} "
                                         f"turns: {summary['errors'][:3]}")
                    ingest_s += time.perf_counter() - t0
                    known = {e["tags"][0] for e in evs}
                    plain = plain_bm25([(e["tags"][0], e["text"]) for e in evs])
                    prefix = f"{sid}:"
                    for q in questions_of(sample, known):
                        ranked: dict[str, list[str]] = {}
                        for system, mode in (("remem", "hybrid"), ("bm25", "keyword"), ("cosine", "semantic")):
                            if system != "remem" and not baselines:
                                ranked[system] = []
                                continue
                            t1 = time.perf_counter()
                            hits = recall(store, q["question"], 10, mode=mode, touch=False,
                                          lessons=False, cfg=cfg)
                            if system == "remem":
                                query_times.append(time.perf_counter() - t1)
                            ranked[system] = [h["id"][len(prefix):] for h in hits]
                        ranked["bm25-plain"] = plain(q["question"], 10)
                        for system in systems:
                            tallies[system].add(ranked[system], q["evidence"])
                        by_category.setdefault(q["category"], Tally()).add(ranked["remem"], q["evidence"])
    finally:
        if old_home is None:
            os.environ.pop("REMEM_HOME", None)
        else:
            os.environ["REMEM_HOME"] = old_home
        vectors.drop_caches()
    result = tallies["remem"].result()
    query_times.sort()
    result["baselines"] = {s: tallies[s].result() for s in systems if s != "remem"}
    result["by_category"] = {str(c): t.result() for c, t in sorted(by_category.items())}
    result["context_turns"] = context
    result["warnings"] = warnings
    result["seconds"] = {
        "total": round(time.perf_counter() - started, 1), "ingest": round(ingest_s, 1),
        "recall_p50_ms": round(1000 * query_times[len(query_times) // 2], 2) if query_times else None,
    }
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="a file in LoCoMo's format (locomo10.json)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--context", type=int, default=2,
                    help="neighbouring turns either side kept in each turn's detail (default 2)")
    ap.add_argument("--only", action="append", help="only this sample_id (repeatable)")
    args = ap.parse_args(argv)
    try:
        data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"locomo: cannot read {args.data}: {exc}", file=sys.stderr)
        return 1
    if not isinstance(data, list):
        print("locomo: expected a list of samples (LoCoMo's locomo10.json format)", file=sys.stderr)
        return 1
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = run(data, args.context, set(args.only) if args.only else None)
    for line in result["warnings"][:20]:
        print(f"locomo: {line}", file=sys.stderr)
    if len(result["warnings"]) > 20:
        print(f"locomo: … and {len(result['warnings']) - 20} more", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"LoCoMo retrieval, {result['questions']} questions (categories 1-4), "
          f"context ±{args.context} turns")
    print(f"{'system':<12} {'turn R@5':>9} {'turn R@10':>10} {'sess R@5':>9} {'sess R@10':>10}")
    rows = [("remem", result)] + list(result["baselines"].items())
    for name, r in rows:
        print(f"{name:<12} {r['turn']['R@5']:>9.3f} {r['turn']['R@10']:>10.3f} "
              f"{r['session']['R@5']:>9.3f} {r['session']['R@10']:>10.3f}")
    print("remem by category:")
    for cat, r in result["by_category"].items():
        print(f"  {cat}: n={r['questions']:<4} turn R@5 {r['turn']['R@5']:.3f}  "
              f"session R@5 {r['session']['R@5']:.3f}")
    s = result["seconds"]
    print(f"time: {s['total']} s total, {s['ingest']} s ingest, recall p50 {s['recall_p50_ms']} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
