"""A realistic synthetic memory for the benchmarks that read a whole history (compare, measure,
the TUI): episodes spread over a year up to a fixed clock, lessons learned along the way with
their sources, merged lessons (aliases), and the `primes` log the hooks write.

Imported as `bench.synth` (the repository root is on sys.path). Nothing here is timed.

- episodes: `episodes` of them, evenly spread over `span_days` up to `now` (so a 30-day window
  holds about 30/365 of them), in sessions of 20 in 10 projects; a quarter are corrections and a
  quarter errors (the shape of bench/hooks.py's store), the rest sessions and notes. Each
  correction says one of the topics again, in one of a few ways, so many repeat an
  already-learned lesson. Vectors from the bundled model (`embed="model"`) or random unit
  vectors (`embed="random"`, faster, similarities near zero).
- lessons: `lessons` of them (correction, error, surprise in turn; a quarter tied to a
  project), each learned an hour after the first episode of its topic; every later correction
  or error of that topic is one of its sources (what sleep's consolidation leaves). 2 % have an
  older merged part (an `aliases` row).
- primes: `primes` decisions, each in the session of a random episode (of the last
  `primes_days`, the whole span by default), a little before it, naming 1-3 lessons, held
  out by the same crc parity as the hooks; one in 20 has the words of the session's
  correction as its query.

    from bench.synth import build
    build(home, episodes=100_000, lessons=2_000, primes=20_000)
"""

from __future__ import annotations

import os
import random
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

NOW = "2026-11-30T12:00:00+00:00"  # the clock the benches set (REMEM_NOW)
SESSION_LEN = 20
PROJECTS = 10

TOOLS = ["pytest", "npm", "docker", "git", "cargo", "pip", "uv", "make", "terraform", "kubectl",
         "psql", "redis-cli", "webpack", "eslint", "mypy", "ruff", "go test", "gradle", "poetry", "bazel"]
ACTIONS = ["run", "install", "build", "deploy", "migrate", "format", "lint", "release", "debug", "profile"]
OBJECTS = ["the api service", "the web app", "the worker", "the database", "the tests", "the docs",
           "the cli", "the payments module", "the auth flow", "the search index"]
ADVICE = ["always pass --no-cache", "never on main", "use the staging profile first",
          "set the registry to the internal mirror", "run it with -n 2", "pin the version",
          "export the env file first", "do it inside the container", "ask before pushing",
          "check the lock file is committed"]
SAY = ["no, {adv} when you {act} {obj} with {tool}", "I said {adv}: {tool} for {obj}",
       "again: {act} {obj} with {tool}, but {adv}", "stop, {adv} ({tool}, {obj})"]
PROMPTS = ["build the docker image for the api service and push it", "run the tests for the payments module",
           "why does npm install fail here", "migrate the database to the new schema",
           "explain what this function does", "release the cli", "profile the worker, it is slow"]


def _topic(rng: random.Random) -> dict[str, str]:
    return {"tool": rng.choice(TOOLS), "act": rng.choice(ACTIONS), "obj": rng.choice(OBJECTS),
            "adv": rng.choice(ADVICE)}


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="microseconds")


def build(home: Path, *, episodes: int = 100_000, lessons: int = 2_000, primes: int = 20_000,
          span_days: float = 365.0, primes_days: float | None = None, now: str = NOW, embed: str = "model",
          seed: int = 7) -> dict[str, Any]:
    """Write the memory into `home` (REMEM_HOME is set to it). Returns what was made."""
    os.environ["REMEM_HOME"] = str(home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np

    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.lessons import lesson_hash
    from remem.engine.store import EPISODE_COLUMNS, Store, dumps, prepare_episode

    rng = random.Random(seed)
    end = datetime.fromisoformat(now).astimezone(timezone.utc)
    start = end - timedelta(days=span_days)
    step = (end - start) / max(1, episodes)
    emb = get_embedder()

    # Topics: one per lesson; corrections and errors say one of them again.
    kinds = ("correction", "error", "surprise")
    topics = [_topic(rng) for _ in range(lessons)]
    by_kind: dict[str, list[int]] = {k: [j for j in range(lessons) if kinds[j % 3] == k] for k in kinds}
    first_seen: dict[int, str] = {}
    sources: dict[int, list[str]] = {j: [] for j in range(lessons)}
    said: dict[str, str] = {}  # session -> the words of a correction in it

    def text_of(n: int, kind: str) -> tuple[str, int | None]:
        if kind in ("correction", "error") and by_kind[kind] and rng.random() < 0.9:
            j = rng.choice(by_kind[kind])
            t = topics[j]
            if kind == "correction":
                return rng.choice(SAY).format(**t), j
            return f"`{t['tool']} {t['act']}` failed on {t['obj']}: exit code 1 (case {n % 97})", j
        t = _topic(rng)
        return f"Session {n}: {t['act']} {t['obj']} using {t['tool']}; it went fine.", None

    store = Store(home / "memory.db")
    made = {"episodes": 0, "corrections": 0, "lessons": 0, "aliases": 0, "primes": 0}
    batch = 5000
    for lo in range(0, episodes, batch):
        rows, texts = [], []
        for n in range(lo, min(episodes, lo + batch)):
            kind = ("session", "error", "correction", "note")[n % 4]
            text, j = text_of(n, kind)
            at = _iso(start + step * n)
            session = f"s{n // SESSION_LEN:06d}"
            eid = f"ep{n:07d}"
            if j is not None:
                if j not in first_seen:
                    first_seen[j] = at
                else:
                    sources[j].append(eid)
            if kind == "correction":
                said.setdefault(session, text)
                made["corrections"] += 1
            texts.append(text)
            rows.append({"id": eid, "session_id": session, "source": "claude-code",
                         "cwd": f"/home/dev/proj{(n // SESSION_LEN) % PROJECTS}", "kind": kind,
                         "title": text[:60], "gist": text, "at": at, "created": at})
        if embed == "model":
            vecs = emb.encode(texts)
        else:
            vecs = np.random.default_rng(seed + lo).standard_normal((len(rows), emb.dim)).astype("<f4")
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        prepared = []
        for row, vec in zip(rows, vecs):
            ep = prepare_episode({**row, "space": emb.space, "embedding": to_blob(vec)}, row["at"])
            prepared.append([ep[c] for c in EPISODE_COLUMNS])
        with store.write() as conn:
            conn.executemany(f"INSERT INTO episodes ({', '.join(EPISODE_COLUMNS)}) "
                             f"VALUES ({', '.join('?' for _ in EPISODE_COLUMNS)})", prepared)
        made["episodes"] += len(prepared)

    texts = [f"When you {t['act']} {t['obj']} with {t['tool']}, {t['adv']} (case {j})" for j, t in enumerate(topics)]
    vecs = emb.encode(texts) if texts else []
    ids = [f"L{j:05d}" for j in range(lessons)]
    with store.write() as conn:
        for j, (text, vec) in enumerate(zip(texts, vecs)):
            kind = kinds[j % 3]
            born = first_seen.get(j) or _iso(start + (end - start) * rng.random())
            born = _iso(datetime.fromisoformat(born) + timedelta(hours=1))
            conn.execute(
                "INSERT INTO lessons (id, text, kind, cwd, strength, seen, sources, status, created, updated, "
                "hash, space, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?)",
                (ids[j], text, kind, None if j % 4 else f"/home/dev/proj{j % PROJECTS}", 1.0 + (j % 5) / 5,
                 1 + len(sources[j]), dumps(sources[j]), born, born, lesson_hash(text, kind), emb.space,
                 to_blob(vec)))
            made["lessons"] += 1
            if j % 50 == 7:  # an older part merged into it
                conn.execute("INSERT INTO aliases (old, new, at, created) VALUES (?, ?, ?, ?)",
                             (f"old-{ids[j]}", ids[j], born, _iso(datetime.fromisoformat(born) - timedelta(days=3))))
                made["aliases"] += 1

    corrections = by_kind["correction"] or list(range(lessons))
    # the decisions fall in the sessions of the last `primes_days` (all of the span by default)
    recent = episodes - int(episodes * min(1.0, (primes_days or span_days) / span_days))
    for lo in range(0, primes, 10_000):
        rows = []
        for _ in range(lo, min(primes, lo + 10_000)):
            n = rng.randrange(min(recent, max(0, episodes - 1)), max(1, episodes))
            session = f"s{n // SESSION_LEN:06d}"
            at = _iso(start + step * n - timedelta(seconds=rng.randint(1, 600)))
            chosen = {ids[rng.choice(corrections)] if rng.random() < 0.7 else rng.choice(ids)
                      for _ in range(rng.randint(1, 3))} if ids else set()
            if rng.random() < 0.02:
                chosen.add(f"old-{ids[7]}" if lessons > 7 else "gone")
            query = said[session] if session in said and rng.random() < 0.05 else rng.choice(PROMPTS)
            held = zlib.crc32(session.encode("utf-8")) % 2
            rows.append((at, session, "claude-code", "prompt", dumps(sorted(chosen)), held, query, 300))
        with store.write() as conn:
            conn.executemany("INSERT INTO primes (at, session_id, agent, event, lesson_ids, held_out, query, chars) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        made["primes"] += len(rows)
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return made
