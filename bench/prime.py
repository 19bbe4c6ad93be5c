"""Precision and recall of hook priming: which lessons `prime.select` shows, against hand labels.

bench/prime_cases.json holds ~47 lessons a coding agent's user might have (four projects
and some without a project) and ~220 prompts and pre-tool calls (Bash commands, Edit/Write
paths), each labelled by hand with the lessons that SHOULD be shown (`should`, often none)
and those that MAY be shown without harm (`may`). The cases tagged `command` (ids pc*, pn*,
tc*, tn*) run or name a program: prompts that are a shell command or name a tool, tool calls
through a runner (`npx`, `uv run`), and hard negatives naming a program (or a subcommand) no
lesson is about, a sentence that starts with a program's name ("Make the header sticky",
"Find where the config is loaded") and a call that runs an error lesson's remedy (`uv run
pytest` for "`pytest` fails …; run it as `uv run pytest`"); the bench reports them on their
own line too. The lessons are stored in a
fresh tmp REMEM_HOME the way remem stores them (`lessons.add_lesson` with the bundled model's vector),
tool calls are turned into text by the hook's own `adapters.tool_text`, and every case goes
through `prime.select(..., record=False)` with its cwd.

Per event (prompt, pre-tool), for each configuration:

- precision: shown lessons that are in should or may;
- recall: should-lessons shown (and, for pre-tool, of those its kind filter allows: errors);
- false-show: share of cases with nothing to show (no should, no may) that got something;
  "hard" is the same over the cases sharing generic words with unrelated lessons.

Configurations: the current config; `prime.min_relevance` from 0.40 to 0.70 (through select
with that config); and rules select cannot express, recomputed from the parts
`prime.candidates` returns (semantic, keyword, command, relevance), ordered and capped as
select does: "no keyword evidence needs cosine >= X", "pre-tool may show every kind" (its
recall counts every should-lesson) and "prompts without the program match" (the command
evidence taken off prompt scores: the rule before prompts had it).

With --folds K the threshold is also chosen without looking at the cases it is judged on: the
cases are split into K folds (stratified by event and by whether a lesson should be shown);
for each fold, the `prime.min_relevance` of the sweep (or the current one) with the fewest
false shows (prompt + pre-tool) whose recall (prompt R, pre-tool R*) is no lower than the
current config's is chosen on the other folds and applied to this one; the figures are
those of the held-out choices, pooled ("rotated").

    python bench/prime.py [--cases bench/prime_cases.json] [--worst 10] [--folds 5] [--json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import pct  # noqa: E402

SWEEP = [0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70]
NO_KEYWORD_COSINE = [0.55, 0.60, 0.65]
EVENTS = ("prompt", "pre-tool")


def seed(store: Any, lessons: list[dict[str, Any]]) -> None:
    """The lessons, stored as remem stores them: embedded with the bundled model from their own
    words (`programs.matchable_text`), add_lesson."""
    from remem.engine import lessons as lessons_mod
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.programs import matchable_text

    emb = get_embedder()
    vecs = emb.encode([matchable_text(l["text"], l["kind"]) for l in lessons])
    for lesson, vec in zip(lessons, vecs):
        lessons_mod.add_lesson(store, lesson["text"], lesson["kind"], cwd=lesson["cwd"],
                               space=emb.space, embedding=to_blob(vec), lesson_id=lesson["id"])


def case_command(case: dict[str, Any]) -> str | None:
    """The shell command a pre-tool case runs, as the hook adapter reads it."""
    from remem.engine.shell_words import shell_command

    return shell_command(case.get("tool"), case.get("input")) if case["event"] == "pre-tool" else None


def case_text(case: dict[str, Any]) -> str:
    """What the hook hands to select: the prompt, or the tool call as the adapter renders it."""
    from remem.hooks.adapters import tool_text

    if case["event"] == "prompt":
        return case["prompt"]
    return tool_text(case["tool"], case["input"])


def pick(scored: list[dict[str, Any]], cfg: dict[str, Any],
         keep: Callable[[dict[str, Any]], bool]) -> list[str]:
    """select's choice (prime.choose) among the candidates `keep` lets through."""
    from remem.engine import prime

    return [c["id"] for c in prime.choose([c for c in scored if keep(c)], cfg)[1]]


def without_program_match(scored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates as scored without the program match, best first as candidates orders them."""
    from remem.engine import prime

    out = [{**c, "command": 0.0, "relevance": round(c["relevance"] - prime.COMMAND_WEIGHT * c["command"], 4)}
           for c in scored]
    out.sort(key=lambda c: (-c["relevance"], -float(c["strength"] or 0)))
    return out


def tagged(cases: list[dict[str, Any]], shown: dict[str, list[str]], tag: str) -> dict[str, Any]:
    """Recall and false-show over the cases carrying `tag`, each event apart."""
    out: dict[str, Any] = {}
    for event in EVENTS:
        group = [c for c in cases if c["event"] == event and tag in c.get("tags", [])]
        should = [(c, i) for c in group for i in c["should"]]
        empty = [c for c in group if not c["should"] and not c.get("may")]
        out[event] = {"should": len(should), "hit": sum(i in shown[c["id"]] for c, i in should),
                      "no_lesson_cases": len(empty), "false_shows": sum(bool(shown[c["id"]]) for c in empty)}
    return out


def metrics(cases: list[dict[str, Any]], shown: dict[str, list[str]],
            kinds: dict[str, str], allowed: dict[str, tuple[str, ...] | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for event in EVENTS:
        group = [c for c in cases if c["event"] == event]
        n_shown = n_ok = n_should = n_hit = n_reach = n_reach_hit = 0
        empty = empty_got = hard = hard_got = para = para_hit = 0
        for c in group:
            got = shown[c["id"]]
            ok = set(c["should"]) | set(c.get("may", []))
            n_shown += len(got)
            n_ok += sum(1 for i in got if i in ok)
            n_should += len(c["should"])
            n_hit += sum(1 for i in c["should"] if i in got)
            reach = [i for i in c["should"] if allowed[event] is None or kinds[i] in allowed[event]]
            n_reach += len(reach)
            n_reach_hit += sum(1 for i in reach if i in got)
            if not ok:
                empty += 1
                empty_got += bool(got)
            if "hard" in c.get("tags", []) and not c["should"]:
                hard += 1
                hard_got += any(i not in ok for i in got)
            if "para" in c.get("tags", []):
                para += len(c["should"])
                para_hit += sum(1 for i in c["should"] if i in got)
        out[event] = {
            "cases": len(group), "shown": n_shown,
            "precision": round(n_ok / n_shown, 3) if n_shown else None,
            "recall": round(n_hit / n_should, 3) if n_should else None,
            "recall_reachable": round(n_reach_hit / n_reach, 3) if n_reach else None,
            "false_show": round(empty_got / empty, 3) if empty else None,
            "false_show_hard": round(hard_got / hard, 3) if hard else None,
            "recall_para": round(para_hit / para, 3) if para else None,
            "should": n_should, "reachable": n_reach, "no_lesson_cases": empty, "hard_cases": hard,
        }
    return out


def folds_of(cases: list[dict[str, Any]], k: int, seed: int = 7) -> dict[str, int]:
    """Each case's fold, 0..k-1: stratified by event and by whether a lesson should be shown,
    shuffled with a fixed seed (the same split every run)."""
    rng = random.Random(seed)
    strata: dict[tuple[str, bool], list[str]] = {}
    for c in cases:
        strata.setdefault((c["event"], bool(c["should"])), []).append(c["id"])
    fold: dict[str, int] = {}
    for key in sorted(strata):
        ids = sorted(strata[key])
        rng.shuffle(ids)
        fold.update({cid: n % k for n, cid in enumerate(ids)})
    return fold


def rotated(cases: list[dict[str, Any]], runs: dict[str, dict[str, list[str]]], current: str,
            kinds: dict[str, str], allowed: dict[str, tuple[str, ...] | None],
            k: int) -> tuple[dict[str, Any], list[str]]:
    """The runs' metrics with the run chosen on k-1 folds and judged on the k-th, in turn
    (module docstring); returns the pooled metrics and each fold's choice."""
    fold = folds_of(cases, k)
    pooled: dict[str, list[str]] = {}
    chosen: list[str] = []
    for f in range(k):
        train = [c for c in cases if fold[c["id"]] != f]
        base = metrics(train, runs[current], kinds, allowed)
        best: tuple[tuple[float, float], str] | None = None
        for name, shown in runs.items():
            m = metrics(train, shown, kinds, allowed)
            p, t = m["prompt"], m["pre-tool"]
            if ((p["recall"] or 0) < (base["prompt"]["recall"] or 0)
                    or (t["recall_reachable"] or 0) < (base["pre-tool"]["recall_reachable"] or 0)):
                continue
            score = ((p["false_show"] or 0) + (t["false_show"] or 0),
                     -((p["precision"] or 0) + (t["precision"] or 0)))
            if best is None or score < best[0]:
                best = (score, name)
        name = best[1] if best else current
        chosen.append(name)
        pooled.update({c["id"]: runs[name][c["id"]] for c in cases if fold[c["id"]] == f})
    return metrics(cases, pooled, kinds, allowed), chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(ROOT / "bench" / "prime_cases.json"))
    ap.add_argument("--worst", type=int, default=10, help="false positives and misses listed")
    ap.add_argument("--folds", type=int, default=0,
                    help="also choose min_relevance on all folds but one, judged on that one, in turn")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.folds == 1 or args.folds < 0:
        raise SystemExit("--folds must be 0 (off) or at least 2")

    data = json.loads(Path(args.cases).read_text())
    lessons, cases = data["lessons"], data["cases"]
    kinds = {l["id"]: l["kind"] for l in lessons}
    texts = {l["id"]: l["text"] for l in lessons}
    for c in cases:
        for i in c["should"] + c.get("may", []):
            if i not in kinds:
                raise SystemExit(f"case {c['id']}: unknown lesson {i!r}")

    home = Path(tempfile.mkdtemp(prefix="remem-bench-prime-"))
    os.environ["REMEM_HOME"] = str(home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from remem import config
    from remem.engine import prime
    from remem.engine.store import Store

    store = Store()
    seed(store, lessons)
    cfg = config.load()
    allowed = {e: prime.EVENT_KINDS[e] for e in EVENTS}
    event_of = {c["id"]: c["event"] for c in cases}
    default_cut = float(cfg["prime"]["min_relevance"])

    start = time.perf_counter()
    scored: dict[str, list[dict[str, Any]]] = {}
    any_kind: dict[str, list[dict[str, Any]]] = {}
    runs: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for c in cases:
        text = " ".join(case_text(c).split())  # as select normalises it
        command = case_command(c)
        current[c["id"]] = [l["id"] for l in prime.select(
            store, text, event=c["event"], cwd=c["cwd"], cfg=cfg, record=False, command=command)["lessons"]]
        scored[c["id"]] = prime.candidates(store, text, event=c["event"], cwd=c["cwd"], cfg=cfg,
                                           command=command)
        any_kind[c["id"]] = (prime.candidates(store, text, event="pre-tool", cwd=c["cwd"], cfg=cfg,
                                              command=command, kinds=tuple(set(kinds.values())))
                             if c["event"] == "pre-tool" else scored[c["id"]])
    runs[f"current (min_relevance {default_cut:.2f})"] = current
    for cut in SWEEP:
        sweep_cfg = copy.deepcopy(cfg)
        sweep_cfg["prime"]["min_relevance"] = cut
        runs[f"min_relevance {cut:.2f}"] = {c["id"]: [l["id"] for l in prime.select(
            store, case_text(c), event=c["event"], cwd=c["cwd"], cfg=sweep_cfg, record=False,
            command=case_command(c))["lessons"]]
            for c in cases}
    # The recomputation must agree with select before it can stand for a rule select lacks.
    same = {cid: pick(scored[cid], cfg, lambda c: True) for cid in scored}
    if same != current:
        bad = [cid for cid in same if same[cid] != current[cid]]
        raise SystemExit(f"recomputed choice differs from prime.select for {bad[:5]}")
    for cut in (default_cut, 0.45):
        rule_cfg = copy.deepcopy(cfg)
        rule_cfg["prime"]["min_relevance"] = cut
        for x in NO_KEYWORD_COSINE:
            runs[f"min {cut:.2f}, no keyword needs cos >= {x:.2f}"] = {
                cid: pick(s, rule_cfg, lambda c, x=x: c["keyword"] > 0 or c["semantic"] >= x)
                for cid, s in scored.items()}
    runs[f"min {default_cut:.2f}, prompts w/o program match"] = {
        cid: pick(without_program_match(s) if event_of[cid] == "prompt" else s, cfg, lambda c: True)
        for cid, s in scored.items()}
    for cut in sorted({default_cut, 0.65}):
        kind_cfg = copy.deepcopy(cfg)
        kind_cfg["prime"]["min_relevance"] = cut
        runs[f"min {cut:.2f}, pre-tool any kind"] = {
            cid: pick(s, kind_cfg, lambda c: True) for cid, s in any_kind.items()}
    elapsed = time.perf_counter() - start

    folds = None
    if args.folds:
        current_name = f"current (min_relevance {default_cut:.2f})"
        threshold_runs = {name: runs[name] for name in runs
                          if name == current_name or name.startswith("min_relevance ")}
        figures, chosen = rotated(cases, threshold_runs, current_name, kinds, allowed, args.folds)
        folds = {"k": args.folds, "chosen": chosen, **figures}

    table = [{"config": name, **metrics(cases, shown, kinds,
                                        {**allowed, "pre-tool": None} if "any kind" in name else allowed)}
             for name, shown in runs.items()]

    false_pos, misses = [], []
    for c in cases:
        ok = set(c["should"]) | set(c.get("may", []))
        rank = {s["id"]: (n + 1, s) for n, s in enumerate(scored[c["id"]])}
        for i in current[c["id"]]:
            if i not in ok:
                s = rank[i][1]
                false_pos.append({"case": c["id"], "text": case_text(c), "lesson": i, "lesson_text": texts[i],
                                  "semantic": s["semantic"], "keyword": s["keyword"], "command": s["command"],
                                  "relevance": s["relevance"]})
        for i in c["should"]:
            if i in current[c["id"]]:
                continue
            reachable = allowed[c["event"]] is None or kinds[i] in allowed[c["event"]]
            n, s = rank.get(i, (None, None))
            if s is None:  # a kind this event never shows: its score as any kind
                s = next(x for x in any_kind[c["id"]] if x["id"] == i)
            misses.append({"case": c["id"], "text": case_text(c), "lesson": i, "lesson_text": texts[i],
                           "reachable": reachable, "rank": n, "semantic": s["semantic"],
                           "keyword": s["keyword"], "command": s["command"], "relevance": s["relevance"]})
    # Where the scores lie: relevance of should-pairs and of unrelated pairs (neither should
    # nor may), over every candidate the event may show.
    spread: dict[str, dict[str, list[float]]] = {}
    for event in EVENTS:
        pos, neg = [], []
        for c in cases:
            if c["event"] != event:
                continue
            ok = set(c["should"]) | set(c.get("may", []))
            for s in scored[c["id"]]:
                (pos if s["id"] in c["should"] else neg if s["id"] not in ok else []).append(s["relevance"])
        spread[event] = {
            "should": [round(pct(pos, q), 3) for q in (10, 25, 50)] if pos else [],
            "unrelated": [round(pct(neg, q), 3) for q in (50, 90, 99)] if neg else []}
    false_pos.sort(key=lambda f: -f["relevance"])
    misses.sort(key=lambda m: (not m["reachable"], -m["relevance"]))
    store.close()
    shutil.rmtree(home, ignore_errors=True)

    program_rows = [name for name in runs if name.startswith("current") or "program match" in name]
    command_cases = {name: tagged(cases, runs[name], "command") for name in program_rows}
    result = {"lessons": len(lessons), "cases": {e: sum(c["event"] == e for c in cases) for e in EVENTS},
              "seconds": round(elapsed, 2), "table": table, "relevance_spread": spread,
              "command_cases": command_cases, "rotated": folds, "false_positives": false_pos,
              "misses": misses}
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return

    print(f"{len(lessons)} lessons; {result['cases']['prompt']} prompts, {result['cases']['pre-tool']} "
          f"pre-tool calls; {len(runs)} configurations in {elapsed:.1f} s")
    print("P = precision of shown lessons, R = recall of should-lessons (R* = of those the event's "
          "kinds allow),\nFS = false-show rate on no-lesson cases (hard: cases sharing generic words)")
    head = (f"{'config':40} | {'prompt P':>8} {'R':>5} {'FS':>5} {'FShard':>6} {'shown':>5} | "
            f"{'tool P':>6} {'R':>5} {'R*':>5} {'FS':>5} {'FShard':>6} {'shown':>5}")
    print(head)
    print("-" * len(head))

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for row in table:
        p, t = row["prompt"], row["pre-tool"]
        print(f"{row['config']:40} | {f(p['precision']):>8} {f(p['recall']):>5} {f(p['false_show']):>5} "
              f"{f(p['false_show_hard']):>6} {p['shown']:>5} | {f(t['precision']):>6} {f(t['recall']):>5} "
              f"{f(t['recall_reachable']):>5} {f(t['false_show']):>5} {f(t['false_show_hard']):>6} {t['shown']:>5}")
    if folds:
        p, t = folds["prompt"], folds["pre-tool"]
        name = f"rotated min_relevance ({folds['k']} folds)"
        print(f"{name:40} | {f(p['precision']):>8} {f(p['recall']):>5} {f(p['false_show']):>5} "
              f"{f(p['false_show_hard']):>6} {p['shown']:>5} | {f(t['precision']):>6} {f(t['recall']):>5} "
              f"{f(t['recall_reachable']):>5} {f(t['false_show']):>5} {f(t['false_show_hard']):>6} {t['shown']:>5}")
        print(f"  chosen on the other folds: {', '.join(folds['chosen'])}")
    p0 = table[0]
    print(f"\nno-lesson cases: {p0['prompt']['no_lesson_cases']} prompts, {p0['pre-tool']['no_lesson_cases']} "
          f"tool calls; should-lessons: {p0['prompt']['should']} (prompt), {p0['pre-tool']['should']} "
          f"(pre-tool, {p0['pre-tool']['reachable']} of them errors)")

    for event in EVENTS:
        sp = spread[event]
        print(f"{event} relevance: should-pairs p10/p25/p50 {' / '.join(f'{v:.2f}' for v in sp['should'])}; "
              f"unrelated pairs p50/p90/p99 {' / '.join(f'{v:.2f}' for v in sp['unrelated'])}")

    for name, got in command_cases.items():
        p, t = got["prompt"], got["pre-tool"]
        print(f"cases tagged command, {name}: prompts recall {p['hit']}/{p['should']}, false shows "
              f"{p['false_shows']}/{p['no_lesson_cases']}; tool calls recall {t['hit']}/{t['should']}, "
              f"false shows {t['false_shows']}/{t['no_lesson_cases']}")

    def clip(s: str, n: int) -> str:
        return s if len(s) <= n else s[: n - 1] + "…"

    print(f"\nworst false positives at the current config ({len(false_pos)} in all):")
    print(f"{'rel':>5} {'cos':>5} {'kw':>4} {'cmd':>3}  case  text -> lesson")
    for fp in false_pos[: args.worst]:
        print(f"{fp['relevance']:5.2f} {fp['semantic']:5.2f} {fp['keyword']:4.2f} {fp['command']:3.0f}  {fp['case']:5} "
              f"{clip(fp['text'], 48)!r} -> {clip(fp['lesson_text'], 60)!r}")
    reach = [m for m in misses if m["reachable"]]
    print(f"\nmissed should-lessons at the current config ({len(reach)} reachable, "
          f"{len(misses) - len(reach)} of a kind the event never shows):")
    print(f"{'rel':>5} {'cos':>5} {'kw':>4} {'cmd':>3} {'rank':>4}  case  text -> lesson")
    for m in reach[: args.worst]:
        print(f"{m['relevance']:5.2f} {m['semantic']:5.2f} {m['keyword']:4.2f} {m['command']:3.0f} {m['rank'] or '-':>4}  {m['case']:5} "
              f"{clip(m['text'], 48)!r} -> {clip(m['lesson_text'], 60)!r}")


if __name__ == "__main__":
    main()
