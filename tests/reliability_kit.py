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
    # Time to import and open the store: kills before it test nothing, so kill points start there.
    _, startup_s = timed(run, ["status", "--json"], env_for(ref_sleep, REMEM_NOW=NOW))
    return {"transcripts": transcripts, "ref_ingest": ref_ingest, "base": base, "ref_sleep": ref_sleep,
            "ingest_s": ingest_s, "sleep_s": sleep_s, "startup_s": startup_s}


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
    start = min(prep["startup_s"], 0.5 * full)
    at = start + rng.uniform(0.0, 0.9) * (full - start)
    killed = kill_after(spawn(args, env), at)
    if not killed:  # it finished first: the machine is faster now than when it was timed
        prep[f"{command}_s"] = full * 0.8
    done = run(args, env)
    assert done.returncode == 0, f"the run after a kill at {at:.2f}s failed: {done.stderr}"
    db = work / "memory.db"
    health = check_db(db)
    got, want = episode_ids(db), episode_ids(ref / "memory.db")
    out = {"killed": killed, "at": round(at, 3), **health, "lost": len(want - got),
           "extra": len(got - want), "lessons_same": lesson_keys(db) == lesson_keys(ref / "memory.db")}
    out["clean"] = bool(out["ok"] and not out["lost"] and not out["extra"] and out["lessons_same"])
    return out


# --------------------------------------------------------------------------- stress

def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_json(method: str, url: str, body: dict[str, Any] | None = None,
              timeout: float = 60) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"null")
        except ValueError:
            return exc.code, None


def _locked(text: str) -> int:
    low = (text or "").lower()
    return sum(low.count(w) for w in ("database is locked", "database table is locked", "sqlite_busy",
                                      "memory stayed busy", "memory is busy"))


def run_stress(root: Path, *, workers: int = 8, hooks_per_worker: int = 24, recalls: int = 60,
               remembers: int = 20, base_sessions: int = 60, new_sessions: int = 60,
               log: Any = None) -> dict[str, Any]:
    """8 hook workers (real `remem hook prompt|pre-tool` processes) + an ingest + a sleep +
    `remem serve --http` (with its background lifecycle tasks) answering recalls and
    remembers, all at once over one memory. Returns per-op latencies, errors, lock reports
    and the end-state checks."""
    import threading

    say = log or (lambda *_: None)
    home = root / "home"
    env = env_for(home)
    # A memory with lessons for the hooks to find: ingest, then sleep.
    make_transcripts(root / "base", base_sessions, seed=31)
    for args in (["ingest", str(root / "base"), "--quiet"], ["sleep", "--quiet"]):
        res = run(args, env)
        if res.returncode != 0:
            raise RuntimeError(f"setup {args[0]} failed: {res.stderr}")
    # What the concurrent ingest must add: its episode ids, from a private run of the same input.
    make_transcripts(root / "new", new_sessions, seed=32)
    ref_home = root / "ref" / "home"
    res = run(["ingest", str(root / "new"), "--quiet"], env_for(ref_home))
    if res.returncode != 0:
        raise RuntimeError(f"reference ingest failed: {res.stderr}")
    expected = episode_ids(ref_home / "memory.db")
    say(f"setup done: {len(episode_ids(home / 'memory.db'))} episodes; the ingest adds {len(expected)}")

    lat: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    problems: list[str] = []
    stderr_text: list[str] = []
    remembered: list[str] = []
    mutex = threading.Lock()

    def note(op: str, seconds: float, ok: bool, detail: str = "") -> None:
        with mutex:
            lat.setdefault(op, []).append(seconds)
            if not ok:
                errors[op] = errors.get(op, 0) + 1
                if len(problems) < 20:
                    problems.append(f"{op}: {detail[:300]}")

    port = free_port()
    server_err = open(root / "server.stderr", "w")
    server = subprocess.Popen(remem_argv("serve", "--http", "--port", str(port)), env=env,
                              cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=server_err)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if http_json("GET", f"{base}/memory/health", timeout=5)[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise RuntimeError("remem serve --http did not come up")
        time.sleep(0.2)

    def hook_worker(w: int) -> None:
        rng = random.Random(w)
        for i in range(hooks_per_worker):
            sid = f"stress-{w}-{i // 4}"
            if i % 2 == 0:
                op, payload = "hook prompt", {
                    "prompt": rng.choice(PROMPTS), "session_id": sid, "cwd": "/home/dev/code/app1",
                    "hook_event_name": "UserPromptSubmit"}
            else:
                op, payload = "hook pre-tool", {**rng.choice(TOOL_CALLS), "session_id": sid,
                                                "cwd": "/home/dev/code/app2", "hook_event_name": "PreToolUse"}
            start = time.monotonic()
            res = run(["hook", op.split()[1]], env, input=json.dumps(payload), timeout=120)
            took = time.monotonic() - start
            ok = res.returncode == 0 and not res.stderr.strip()
            if ok and res.stdout.strip():
                try:
                    json.loads(res.stdout)
                except ValueError:
                    ok = False
            with mutex:
                stderr_text.append(res.stderr)
            note(op, took, ok, res.stderr or res.stdout)

    def server_worker() -> None:
        rng = random.Random(99)
        calls = ["recall"] * recalls + ["remember"] * remembers
        rng.shuffle(calls)
        for n, op in enumerate(calls):
            start = time.monotonic()
            try:
                if op == "recall":
                    status, body = http_json("POST", f"{base}/memory/recall",
                                             {"query": rng.choice(PROMPTS), "k": 5})
                else:
                    status, body = http_json("POST", f"{base}/memory/remember", {
                        "text": f"stress note {n}: the staging database moved to port {5400 + n}",
                        "kind": "environment"})
                    if status == 200:
                        with mutex:
                            remembered.append(body["id"])
            except OSError as exc:
                status, body = 0, str(exc)
            note(f"http {op}", time.monotonic() - start, status == 200, json.dumps(body, default=str))

    def command(op: str, args: list[str], delay: float) -> None:
        time.sleep(delay)
        start = time.monotonic()
        res = run(args, env, timeout=600)
        with mutex:
            stderr_text.append(res.stderr)
        note(op, time.monotonic() - start, res.returncode == 0 and not res.stderr.strip(), res.stderr)

    threads = [threading.Thread(target=hook_worker, args=(w,)) for w in range(workers)]
    threads.append(threading.Thread(target=server_worker))
    threads.append(threading.Thread(target=command, args=("ingest", ["ingest", str(root / "new"), "--quiet"], 0.5)))
    threads.append(threading.Thread(target=command, args=("sleep", ["sleep", "--quiet"], 1.5)))
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    server_err.close()
    server_text = (root / "server.stderr").read_text(errors="replace")
    logs = "".join(p.read_text(errors="replace") for p in (home / "logs").glob("*.log*")) \
        if (home / "logs").exists() else ""

    db = home / "memory.db"
    have = episode_ids(db)
    health = check_db(db)
    missing_ingest = len(expected - have)
    missing_remember = len(set(remembered) - have)
    primes = sqlite3.connect(str(db)).execute("SELECT count(*) FROM primes WHERE session_id LIKE 'stress-%'").fetchone()[0]
    rows = []
    for op in sorted(lat):
        values = lat[op]
        rows.append({"op": op, "count": len(values), "errors": errors.get(op, 0),
                     "p50_ms": round(percentile(values, 50) * 1000, 1),
                     "p95_ms": round(percentile(values, 95) * 1000, 1)})
    locked = sum(_locked(t) for t in stderr_text) + _locked(server_text) + _locked(logs)
    return {
        "rows": rows, "ops": sum(r["count"] for r in rows), "errors": sum(errors.values()),
        "locked": locked, "wall_s": round(wall, 1), "problems": problems,
        "episodes_expected": len(expected) + len(remembered), "missing": missing_ingest + missing_remember,
        "primes_recorded": int(primes), **{f"db_{k}": v for k, v in health.items()},
        "server_stderr_lines": [l for l in server_text.splitlines() if l.strip() and "serving http" not in l
                                and not l.startswith("remem: stopping")][:10],
    }


# --------------------------------------------------------------------------- share sync kills

SYNC_TOOLS = ["uv", "ruff", "pytest", "docker", "make", "cargo", "npm", "poetry", "tox", "nox"]


def _copy_home(src: Path, dst: Path) -> None:
    """A whole home (database, identity keys) for a fresh run; nothing is running in src."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)


def lesson_rows(db: Path) -> set[tuple[str, str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return {(r[0], r[1], r[2]) for r in conn.execute("SELECT hash, status, text FROM lessons")}
    finally:
        conn.close()


def prepare_sync_kill(root: Path, lessons: int = 3000) -> dict[str, Any]:
    """Memory A with `lessons` shareable lessons, memory B trusting A, and the uninterrupted
    result: A's sync into a folder, then B's sync from it."""
    base_a, base_b = root / "A" / "home", root / "B" / "home"
    base_a.mkdir(parents=True)
    code = (
        "import sys\n"
        "from remem.engine.store import Store\n"
        "from remem.engine import lessons\n"
        "tools = sys.argv[2].split(',')\n"
        "with Store(sys.argv[1]) as s:\n"
        "    for i in range(int(sys.argv[3])):\n"
        "        lessons.add_lesson(s, f'Run {tools[i % len(tools)]} with the profile number {i} '\n"
        "                           f'before building the service {i // 10}', 'correction', strength=2.0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(base_a / "memory.db"), ",".join(SYNC_TOOLS),
                    str(lessons)], check=True, cwd=str(ROOT), env=env_for(base_a))
    keys, startup_s = timed(run, ["share", "keys", "--json"], env_for(base_a))
    origin = json.loads(keys.stdout)["origin"]
    trust = run(["share", "trust", origin, "--force"], env_for(base_b))
    if trust.returncode != 0:
        raise RuntimeError(trust.stderr)
    ref_folder, ref_a, ref_b = root / "ref-folder", root / "ref-A" / "home", root / "ref-B" / "home"
    _copy_home(base_a, ref_a)
    _copy_home(base_b, ref_b)
    ref_folder.mkdir()
    res, export_s = timed(run, ["share", "sync", "--folder", str(ref_folder), "--json"], env_for(ref_a))
    if res.returncode != 0:
        raise RuntimeError(res.stderr)
    res, receive_s = timed(run, ["share", "sync", "--folder", str(ref_folder), "--json"], env_for(ref_b))
    if res.returncode != 0:
        raise RuntimeError(res.stderr)
    return {"base_a": base_a, "base_b": base_b, "ref_folder": ref_folder, "origin": origin,
            "want": lesson_rows(ref_b / "memory.db"), "export_s": export_s, "receive_s": receive_s,
            "startup_s": startup_s}


def sync_kill_cycle(side: str, prep: dict[str, Any], work: Path, rng: random.Random) -> dict[str, Any]:
    """Kill A's sync (export) or B's sync (receive) at a random point, run it again, then
    check the folder and what B ends up with against the uninterrupted result."""
    shutil.rmtree(work, ignore_errors=True)
    home_a, home_b, folder = work / "A" / "home", work / "B" / "home", work / "folder"
    _copy_home(prep["base_a"], home_a)
    _copy_home(prep["base_b"], home_b)
    if side == "export":
        folder.mkdir()
        victim, full = home_a, prep["export_s"]
    else:
        shutil.copytree(prep["ref_folder"], folder)
        victim, full = home_b, prep["receive_s"]
    args = ["share", "sync", "--folder", str(folder), "--json"]
    start = min(prep["startup_s"], 0.5 * full)
    at = start + rng.uniform(0.0, 0.9) * (full - start)
    killed = kill_after(spawn(args, env_for(victim)), at)
    if not killed:
        prep[f"{side}_s"] = full * 0.8
    for home in ([home_a, home_b] if side == "export" else [home_b]):
        done = run(args, env_for(home))
        if done.returncode != 0:
            raise AssertionError(f"the sync after a kill at {at:.2f}s failed: {done.stderr}")
    unreadable = 0
    for path in (folder / prep["origin"] / "lessons").glob("*.json"):
        try:
            json.loads(path.read_bytes())
        except ValueError:
            unreadable += 1
    health = check_db(victim / "memory.db")
    got = lesson_rows(home_b / "memory.db")
    out = {"killed": killed, "at": round(at, 3), **health, "unreadable_files": unreadable,
           "lessons_same": got == prep["want"], "missing": len(prep["want"] - got)}
    out["clean"] = bool(out["ok"] and not unreadable and out["lessons_same"])
    return out
