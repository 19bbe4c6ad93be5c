"""Helpers shared by the crash, stress and limit tests and by bench/stress.py and bench/kill.py.

Generates Claude Code transcripts rich in findings (corrections, errors, surprises, so
ingest has episodes to write and sleep has lessons to make), runs the real `remem`
executable as subprocesses, and checks a database the way `remem doctor` does.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

ASKS = [
    "add a retry to the http client", "fix the failing cart tests", "rename the settings module",
    "upgrade the database driver", "write docs for the cache layer", "profile the search endpoint",
    "add logging to the worker", "make the deploy script idempotent", "split the api router",
]
PUSHBACK = [
    "no, use uv instead of pip to install packages", "don't touch the migrations folder",
    "stop, never push to main without asking", "no, run the tests with -n 2, not serially",
    "that's wrong, the config lives in settings.toml not in env vars",
    "no, use the staging database for experiments", "don't reformat files you did not change",
]
ERRORS = [
    "Exit code 1\nFAILED tests/test_cart.py::test_total - assert 9.99 == 10.0\n1 failed, 41 passed",
    "Exit code 127\n/bin/bash: line 1: rg: command not found",
    "Exit code 1\nModuleNotFoundError: No module named 'fakeredis'",
    "Exit code 1\nCONFLICT (content): Merge conflict in app/cart.py",
    "Exit code 1\npsycopg.OperationalError: connection refused on port 5432",
]
COMMANDS = ["uv run pytest -q", "git status", "rg TODO app", "python -m app.migrate", "make lint"]
PROMPTS = [
    "install the packages for the api with pip", "run the cart tests", "push the fix to main",
    "run the migration against the database", "reformat the settings module",
    "why does the worker fail to start", "deploy the search service",
]
TOOL_CALLS = [
    {"tool_name": "Bash", "tool_input": {"command": "pip install fakeredis"}},
    {"tool_name": "Bash", "tool_input": {"command": "rg TODO app"}},
    {"tool_name": "Bash", "tool_input": {"command": "pytest tests/test_cart.py"}},
    {"tool_name": "Bash", "tool_input": {"command": "git push origin main"}},
    {"tool_name": "Read", "tool_input": {"file_path": "/home/dev/code/app/settings.toml"}},
]


def make_session(rng: random.Random, cwd: str, turns: int = 8) -> tuple[str, str]:
    """One Claude Code transcript (JSONL text) with a correction, errors and maybe a surprise."""
    sid = str(uuid.UUID(int=rng.getrandbits(128)))
    lines: list[str] = []
    tick = [rng.randint(0, 5000)]

    def base() -> dict[str, Any]:
        tick[0] += rng.randint(1, 30)
        s = tick[0]
        return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
                "sessionId": sid, "version": "2.1.38", "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                "timestamp": f"2026-11-{20 + (s // 86400) % 5:02d}T{(s // 3600) % 24:02d}:"
                             f"{(s // 60) % 60:02d}:{s % 60:02d}.000Z"}

    def emit(rec: dict[str, Any]) -> None:
        lines.append(json.dumps(rec, ensure_ascii=False))

    def user(content: Any) -> None:
        emit({**base(), "type": "user", "message": {"role": "user", "content": content}})

    def assistant(block: dict[str, Any]) -> None:
        mid = f"msg_{rng.getrandbits(64):016x}"
        emit({**base(), "type": "assistant", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [block], "stop_reason": None}})

    user(rng.choice(ASKS) + f" (ticket {rng.randint(1, 9999)})")
    for _ in range(turns):
        cid = f"toolu_{rng.getrandbits(64):016x}"
        command = rng.choice(COMMANDS)
        assistant({"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": command}})
        failed = rng.random() < 0.3
        content = rng.choice(ERRORS) if failed else f"ok: {command} finished ({rng.randint(1, 99)} items)"
        user([{"tool_use_id": cid, "type": "tool_result", "content": content, "is_error": failed}])
        if rng.random() < 0.35:
            text = f"I changed {rng.randint(2, 9)} files in app/ and the build passes."
            if rng.random() < 0.3:
                text += " Turns out the fixture was shared between tests."
            assistant({"type": "text", "text": text + " Shall I commit this?"})
            user(rng.choice(PUSHBACK) if rng.random() < 0.6 else "yes, go ahead")
    return sid, "\n".join(lines) + "\n"


def make_transcripts(folder: Path, sessions: int, seed: int = 7, turns: int = 8) -> list[Path]:
    """Write `sessions` transcripts under folder/projects/<project>/; returns their paths."""
    rng = random.Random(seed)
    out = []
    for i in range(sessions):
        project = folder / "projects" / f"-home-dev-code-app{i % 4}"
        project.mkdir(parents=True, exist_ok=True)
        sid, text = make_session(rng, f"/home/dev/code/app{i % 4}", turns)
        path = project / f"{sid}.jsonl"
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out


# --------------------------------------------------------------------------- processes

def env_for(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a remem subprocess whose every location is under `home`'s parent."""
    env = dict(os.environ)
    user = home.parent / "user"
    user.mkdir(parents=True, exist_ok=True)
    env.update({
        "REMEM_HOME": str(home), "HOME": str(user), "CLAUDE_CONFIG_DIR": str(user / ".claude"),
        "CODEX_HOME": str(user / ".codex"), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
    })
    env.pop("REMEM_NOW", None)
    env.update(extra)
    return env


def remem_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "remem", *args]


def spawn(args: list[str], env: dict[str, str], **kw: Any) -> subprocess.Popen:
    return subprocess.Popen(remem_argv(*args), env=env, cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def run(args: list[str], env: dict[str, str], *, input: str | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(remem_argv(*args), env=env, cwd=str(ROOT), input=input,
                          capture_output=True, text=True, timeout=timeout)


def kill_after(proc: subprocess.Popen, seconds: float) -> bool:
    """SIGKILL proc after `seconds` (True) unless it finished first (False)."""
    try:
        proc.wait(timeout=max(seconds, 0.0))
        return False
    except subprocess.TimeoutExpired:
        pass
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return True


def timed(fn: Any, *args: Any, **kw: Any) -> tuple[Any, float]:
    start = time.monotonic()
    result = fn(*args, **kw)
    return result, time.monotonic() - start


# --------------------------------------------------------------------------- checks

def check_db(db: Path) -> dict[str, Any]:
    """integrity_check, both FTS indexes against their tables, duplicate ids (writes nothing;
    FTS5's integrity-check needs a writable connection all the same)."""
    conn = sqlite3.connect(str(db), timeout=30)
    try:
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        fts: dict[str, str] = {}
        for table in ("episodes_fts", "lessons_fts"):
            try:
                # rank = 1 also compares the index with its external content table.
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 1)")
                fts[table] = "ok"
            except sqlite3.DatabaseError as exc:
                fts[table] = str(exc)
        dupes = conn.execute(
            "SELECT count(*) FROM (SELECT id FROM episodes GROUP BY id HAVING count(*) > 1)"
        ).fetchone()[0]
        return {"integrity": "; ".join(integrity[:3]), "fts": fts, "duplicates": int(dupes),
                "ok": integrity == ["ok"] and all(v == "ok" for v in fts.values()) and not dupes}
    finally:
        conn.close()


def episode_ids(db: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM episodes")}
    finally:
        conn.close()


def lesson_keys(db: Path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return {(r[0], r[1]) for r in conn.execute(
            "SELECT kind, text FROM lessons WHERE status = 'active'")}
    finally:
        conn.close()


def copy_db(src_home: Path, dst_home: Path) -> None:
    """A consistent copy of src_home's memory.db into dst_home (SQLite's backup API)."""
    dst_home.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(str(src_home / "memory.db"))
    dst = sqlite3.connect(str(dst_home / "memory.db"))
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100 * (len(ordered) - 1)))))
    return ordered[index]


# --------------------------------------------------------------------------- kill cycles

NOW = "2026-11-29T12:00:00+00:00"  # one clock for every run, so decay is the same in each


def prepare_kill(root: Path, sessions: int = 120) -> dict[str, Any]:
    """Transcripts, the uninterrupted ingest, a base store for sleep and its uninterrupted sleep."""
    transcripts = root / "transcripts"
    make_transcripts(transcripts, sessions, seed=11)
    ref_ingest = root / "ref-ingest" / "home"
    res, ingest_s = timed(run, ["ingest", str(transcripts), "--quiet"], env_for(ref_ingest, REMEM_NOW=NOW))
    assert res.returncode == 0, res.stderr
    # The sleep's input: the ingested store with its vectors dropped, so the embed pass works too.
    base = root / "base" / "home"
    copy_db(ref_ingest, base)
    with sqlite3.connect(str(base / "memory.db")) as conn:
        conn.execute("UPDATE episodes SET embedding = NULL, space = NULL")
    ref_sleep = root / "ref-sleep" / "home"
    copy_db(base, ref_sleep)
    res, sleep_s = timed(run, ["sleep", "--quiet"], env_for(ref_sleep, REMEM_NOW=NOW))
    assert res.returncode == 0, res.stderr
    return {"transcripts": transcripts, "ref_ingest": ref_ingest, "base": base, "ref_sleep": ref_sleep,
            "ingest_s": ingest_s, "sleep_s": sleep_s}


def kill_cycle(command: str, prep: dict[str, Any], work: Path, rng: random.Random,
               *, fresh: bool) -> dict[str, Any]:
    """One kill at a random point, then a run to completion; returns what was checked."""
    env = env_for(work, REMEM_NOW=NOW)
    if command == "ingest":
        if fresh:
            shutil.rmtree(work, ignore_errors=True)
        args = ["ingest", str(prep["transcripts"]), "--quiet"]
        full, ref = prep["ingest_s"], prep["ref_ingest"]
    else:
        shutil.rmtree(work, ignore_errors=True)
        copy_db(prep["base"], work)
        args = ["sleep", "--quiet"]
        full, ref = prep["sleep_s"], prep["ref_sleep"]
    at = rng.uniform(0.15, 1.05) * full
    killed = kill_after(spawn(args, env), at)
    done = run(args, env)
    assert done.returncode == 0, f"the run after a kill at {at:.2f}s failed: {done.stderr}"
    db = work / "memory.db"
    health = check_db(db)
    got, want = episode_ids(db), episode_ids(ref / "memory.db")
    out = {"killed": killed, "at": round(at, 3), **health, "lost": len(want - got),
           "extra": len(got - want), "lessons_same": lesson_keys(db) == lesson_keys(ref / "memory.db")}
    out["clean"] = bool(out["ok"] and not out["lost"] and not out["extra"] and out["lessons_same"])
    return out
