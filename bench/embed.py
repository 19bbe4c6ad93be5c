"""Benchmark the bundled static embedding model: load time, sentences/second, dimension.

Each backend is measured in a fresh interpreter, so import and load costs are not shared:

- `model2vec`: `model2vec.StaticModel.from_pretrained(remem/engine/model)`, the reference.
- `remem`: `remem.engine.embed.get_embedder("")`, which reads the same files directly
  (tokenizer + memory-mapped matrix) without importing model2vec.

Usage: python bench/embed.py [--n 10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / "remem" / "engine" / "model"
Encode = Callable[[Sequence[str]], Any]

_WORDS = (
    "use uv not pip to install packages run the tests before committing the build failed "
    "because numpy was missing prefer ripgrep over grep keep commits small the migration "
    "broke on sqlite never push to main without review the hook timed out retry with "
    "backoff format with ruff the import is slow cache the model load lazily"
).split()


def synthetic_sentences(n: int, seed: int = 0) -> list[str]:
    """`n` short sentences (5-14 words) drawn deterministically from a small vocabulary."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(_WORDS, k=rng.randint(5, 14))) for _ in range(n)]


def load_model2vec() -> tuple[Encode, int]:
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(MODEL_DIR))
    return model.encode, int(model.dim)


def load_remem() -> tuple[Encode, int]:
    sys.path.insert(0, str(ROOT))
    from remem.engine import embed

    embedder = embed.get_embedder("")  # "" = the bundled model, not config's choice
    return embedder.encode, int(embedder.dim)


BACKENDS: dict[str, Callable[[], tuple[Encode, int]]] = {"model2vec": load_model2vec, "remem": load_remem}


def measure(backend: str, n: int) -> dict[str, Any]:
    """Load `backend` (timed, imports included), then encode `n` sentences (timed)."""
    start = time.perf_counter()
    encode, dim = BACKENDS[backend]()
    load_ms = (time.perf_counter() - start) * 1000
    sentences = synthetic_sentences(n)
    encode(sentences[:100])  # warm-up: first-call allocations, lazy maps
    start = time.perf_counter()
    vectors = encode(sentences)
    seconds = time.perf_counter() - start
    assert len(vectors) == n
    return {"backend": backend, "load_ms": round(load_ms, 1), "sentences_per_s": round(n / seconds), "dim": dim, "n": n}


def measure_in_subprocess(backend: str, n: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--only", backend, "--n", str(n)],
        check=True, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[dict[str, Any]]) -> str:
    head = ("backend", "load (ms)", "sentences/s", "dim")
    body = [(r["backend"], f"{r['load_ms']:.1f}", f"{r['sentences_per_s']:,}", str(r["dim"])) for r in rows]
    widths = [max(len(row[i]) for row in (head, *body)) for i in range(len(head))]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(tuple("-" * w for w in widths)), *map(line, body)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="sentences to encode (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--only", choices=sorted(BACKENDS), help=argparse.SUPPRESS)  # one backend, in-process
    args = parser.parse_args(argv)

    if args.only:
        print(json.dumps(measure(args.only, args.n)))
        return 0
    rows = [measure_in_subprocess(name, args.n) for name in BACKENDS]
    print(json.dumps(rows, indent=2) if args.json else f"{args.n:,} short synthetic sentences\n" + table(rows))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
