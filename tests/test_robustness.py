"""Robustness: what a damaged install, an odd home or an impatient agent does to remem.

Real SQLite files in a tmp REMEM_HOME, the real bundled model, real subprocesses for hooks.
Read-only files are read-only for real: as root, the command runs without the capability
that lets root write anywhere (CAP_DAC_OVERRIDE), as `setpriv` can arrange.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

LESSON = ("The docker build needs --platform linux/amd64 on this Mac", "error")
PROMPT = "build the docker image for the api service"


# ------------------------------------------------------------------------------ helpers

def remem(*args: str, prefix: list[str] | None = None, input: str | None = None,
          env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: float = 120):
    """The real `remem` (python -m remem) in a subprocess; returns (process, seconds)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    start = time.monotonic()
    proc = subprocess.run([*(prefix or []), sys.executable, "-m", "remem", *args], input=input,
                          capture_output=True, text=True, env=full_env, timeout=timeout, cwd=str(cwd))
    return proc, time.monotonic() - start


def unprivileged(tmp_path: Path) -> list[str]:
    """A command prefix under which chmod 444 means read-only (root writes anywhere)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv: read-only files cannot be made read-only for the test")
    prefix = [setpriv, "--inh-caps=-dac_override,-dac_read_search",
              "--bounding-set=-dac_override,-dac_read_search"]
    probe = tmp_path / "probe.txt"
    probe.write_text("x")
    probe.chmod(0o444)
    res = subprocess.run([*prefix, sys.executable, "-c", f"open({str(probe)!r}, 'a')"],
                         capture_output=True)
    if res.returncode == 0:
        pytest.skip("cannot drop the right to write read-only files here")
    return prefix


def seed_lesson(store, text: str = LESSON[0], kind: str = LESSON[1]) -> dict:
    from remem.engine import lessons
    from remem.engine.embed import get_embedder, to_blob

    emb = get_embedder()
    return lessons.add_lesson(store, text, kind, space=emb.space, embedding=to_blob(emb.encode([text])[0]))


def shown_session(prefix: str = "rb") -> str:
    from remem.engine.prime import is_held_out

    for i in range(1000):
        if not is_held_out(f"{prefix}-{i}"):
            return f"{prefix}-{i}"
    raise AssertionError("no session in the shown arm")


def payload(session: str) -> str:
    return json.dumps({"prompt": PROMPT, "session_id": session, "cwd": "/tmp",
                       "hook_event_name": "UserPromptSubmit"})


def log_text(home: Path) -> str:
    log = home / "logs" / "remem.log"
    return log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""


def make_old_schema(db: Path) -> None:
    """The memory as the previous release left it: the newest migration not yet applied."""
    from remem.engine.store import MIGRATIONS

    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TABLE redaction_sweep")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = '007_redaction_sweep'")
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


@pytest.fixture
def primed(home: Path):
    """A memory with one lesson the prompt bears on, and a budget a loaded machine keeps."""
    from remem import config
    from remem.engine.store import Store

    with Store() as store:
        seed_lesson(store)
    config.set_value("prime.timeout_ms", 30000)
    return home


def primes(home: Path, session: str) -> list:
    conn = sqlite3.connect(home / "memory.db")
    try:
        return conn.execute("SELECT lesson_ids FROM primes WHERE session_id = ?", (session,)).fetchall()
    finally:
        conn.close()


# ------------------------------------------------------------------------------ 1. failed migration

def test_a_failed_upgrade_costs_a_hook_its_budget_not_ten_seconds(home, tmp_path):
    """An older schema in a read-only memory.db: the upgrade cannot be written. The hook used
    to wait 10 s (for another process to finish the upgrade) whatever its budget."""
    from remem.engine.store import Store

    prefix = unprivileged(tmp_path)
    with Store() as store:
        seed_lesson(store)
    db = home / "memory.db"
    make_old_schema(db)
    db.chmod(0o444)
    before = db.read_bytes()

    hook, took = remem("hook", "prompt", prefix=prefix, input=payload(shown_session()))
    assert hook.returncode == 0 and hook.stdout == ""
    assert took < 6, f"the hook took {took:.1f} s (budget 1 s; it used to take 10 s)"
    assert "needs an upgrade" in hook.stderr  # hooks never upgrade (RELIABILITY.md); a command says why it can't

    status, took = remem("status", prefix=prefix)
    assert status.returncode == 1 and took < 6, (took, status.stderr)
    line = status.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert "read-only" in line and f"chmod u+w {db}" in line and "upgrade" in line
    assert "remem restore" not in line  # not damage
    assert db.read_bytes() == before


def test_a_memory_db_that_is_a_device_is_refused_at_once(home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "memory.db").symlink_to("/dev/zero")
    status, took = remem("status")
    assert status.returncode == 1 and took < 6, (took, status.stderr)
    assert "not a regular file" in status.stderr and len(status.stderr.strip().splitlines()) == 1
    hook, took = remem("hook", "prompt", input=payload("s1"))
    assert hook.returncode == 0 and hook.stdout == "" and took < 6
    assert "not a regular file" in hook.stderr


# ------------------------------------------------------------------------------ 2. busy

def test_a_held_write_lock_costs_one_busy_timeout_not_eight(home):
    """Each retry used to wait the whole busy timeout again: 8 × it, plus backoff."""
    from remem.engine.store import Store, StoreBusy
    from remem.errors import StoreError

    with Store():
        pass
    locker = sqlite3.connect(home / "memory.db", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        with Store(busy_timeout_ms=1000) as store:
            start = time.monotonic()
            with pytest.raises(StoreBusy) as caught:
                with store.write() as conn:
                    conn.execute("INSERT INTO tags (memory_id, tag) VALUES ('a', 'b')")
            took = time.monotonic() - start
            assert not store.conn.in_transaction
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert took < 6, f"waited {took:.1f} s for a 1 s busy timeout (it used to be 8 s and more)"
    error = caught.value
    # Distinguishable (recall can keep its results when its touch cannot be written), and
    # still what callers that catch SQLite's own error expect.
    assert isinstance(error, sqlite3.OperationalError) and isinstance(error, StoreError)
    assert "busy" in str(error)
    with Store() as store, store.write() as conn:  # the lock gone, writes go through
        conn.execute("INSERT INTO tags (memory_id, tag) VALUES ('a', 'b')")


def test_a_command_waits_the_documented_five_seconds_then_says_busy(home):
    from remem.engine.store import Store

    with Store():
        pass
    locker = sqlite3.connect(home / "memory.db", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        res, took = remem("remember", "the staging database listens on port 5433")
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert res.returncode == 1
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1 and "busy" in line and "Traceback" not in line
    assert took < 30, f"took {took:.0f} s (5 s promised; it used to be 40 s and more)"


# ------------------------------------------------------------------------------ 3. read-only, disk

def test_a_read_only_memory_reads_and_names_chmod_never_restore(home, tmp_path):
    from remem.engine.store import Store

    prefix = unprivileged(tmp_path)
    with Store() as store:
        seed_lesson(store)
    db = home / "memory.db"
    db.chmod(0o444)

    status, _ = remem("status", prefix=prefix)
    assert status.returncode == 0, status.stderr  # reading a read-only memory works

    wrote, _ = remem("remember", "cannot be stored", prefix=prefix)
    assert wrote.returncode == 1 and "read-only" in wrote.stderr and "chmod u+w" in wrote.stderr
    assert "restore" not in wrote.stderr

    doctor, _ = remem("doctor", "--json", "--no-run", prefix=prefix)
    report = json.loads(doctor.stdout)
    fixes = [p["fix"] for p in report["store"]["problems"]]
    assert any(f.startswith(f"chmod u+w {db}") for f in fixes), fixes
    assert not any("repair-fts" in f or "restore" in f for f in fixes), fixes


def test_a_read_only_home_names_the_folder_to_make_writable(home, tmp_path):
    """SQLite cannot make its -wal and -shm beside the memory, nor remem its in-use mark: it
    used to stop at the mark ("cannot use memory.db.in-use")."""
    from remem.engine.store import Store

    prefix = unprivileged(tmp_path)
    with Store() as store:
        seed_lesson(store)
    (home / "logs").mkdir(exist_ok=True)
    home.chmod(0o555)
    try:
        status, took = remem("status", prefix=prefix)
        hook, _ = remem("hook", "prompt", prefix=prefix, input=payload(shown_session()))
    finally:
        home.chmod(0o755)
    assert status.returncode == 1 and took < 6
    line = status.stderr.strip()
    assert len(line.splitlines()) == 1 and "read-only" in line and f"chmod u+w {home / 'memory.db'}" in line
    assert line.rstrip().endswith(str(home)), line  # the folder too
    assert "restore" not in line
    assert hook.returncode == 0 and hook.stdout == "" and "read-only" in hook.stderr


def test_a_write_refused_by_a_read_only_memory_is_store_read_only(home):
    from remem.engine.store import Store, StoreReadOnly

    with Store() as store:
        store.conn.execute("PRAGMA query_only = ON")  # what a read-only file does to writes
        with pytest.raises(StoreReadOnly) as caught:
            with store.write() as conn:
                conn.execute("INSERT INTO tags (memory_id, tag) VALUES ('a', 'b')")
        assert not store.conn.in_transaction
    assert isinstance(caught.value, sqlite3.OperationalError)
    assert "readonly" in str(caught.value) and "chmod u+w" in str(caught.value)


def test_an_io_error_opening_the_memory_names_the_disk_not_a_restore(home):
    """A disk that refuses writes (here: a file size limit, so SQLite cannot make its -shm
    and -wal) is said to be that, at once; it used to be "run doctor, or restore a backup"."""
    import resource

    from remem.engine.store import Store

    with Store() as store:
        seed_lesson(store)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    env = dict(os.environ)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "remem", "status"], capture_output=True, text=True,
                          env=env, cwd=str(ROOT), timeout=120, preexec_fn=limit)
    took = time.monotonic() - start
    assert proc.returncode == 1 and took < 6, (took, proc.stderr)
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line, line
    assert "disk I/O error" in line and "free space" in line and "restore" not in line, line


def test_a_full_disk_is_named_as_such(home):
    from remem.engine.store import Store
    from remem.errors import store_problem

    with Store() as store:
        pages = store.scalar("PRAGMA page_count")
        store.conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full"
        with pytest.raises(sqlite3.OperationalError) as caught:
            store.put_episodes([{"kind": "note", "title": "big", "detail": "x " * 30_000}])
    kind, line, fix = store_problem(caught.value)
    assert kind == "full" and "disk space" in line and "restore" not in fix


# ------------------------------------------------------------------------------ 4. empty file

def test_an_empty_memory_db_is_refused_not_started_anew(home):
    from remem import config
    from remem.engine.store import Store

    config.set_value("prime.timeout_ms", 30000)  # a loaded machine still shows the lesson
    with Store() as store:
        seed_lesson(store)
    saved = home / "saved.db"
    made, _ = remem("backup", str(saved))
    assert made.returncode == 0, made.stderr
    db = home / "memory.db"
    db.write_bytes(b"")

    hook, _ = remem("hook", "prompt", input=payload(shown_session()))
    assert hook.returncode == 0 and hook.stdout == ""
    assert db.stat().st_size == 0, "the hook wrote a schema into the empty memory"

    status, _ = remem("status")
    assert status.returncode == 1
    line = status.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "memory.db is empty (0 bytes)" in line and "remem restore" in line and "delete it" in line
    assert db.stat().st_size == 0

    doctor, _ = remem("doctor", "--json", "--no-run")
    problems = json.loads(doctor.stdout)["store"]["problems"]
    assert any("empty (0 bytes)" in p["problem"] for p in problems), problems

    restored, _ = remem("restore", "--yes", str(saved))  # the fix the line names works
    assert restored.returncode == 0, restored.stderr
    hook, _ = remem("hook", "prompt", input=payload(shown_session("after")))
    assert "docker build needs --platform" in hook.stdout, hook.stderr


def test_a_hook_never_initialises_a_memory_without_a_schema(home):
    home.mkdir(parents=True, exist_ok=True)
    db = home / "memory.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")  # a header, no tables: not a memory yet
    conn.close()
    before = db.read_bytes()
    hook, _ = remem("hook", "prompt", input=payload("s1"))
    assert hook.returncode == 0 and hook.stdout == "" and "no memory yet" in hook.stderr
    assert db.read_bytes() == before
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    conn.close()


def test_a_memory_this_process_made_may_be_opened_again(home, tmp_path):
    from remem.engine.store import Store

    fresh = tmp_path / "fresh.db"
    with Store(fresh):
        pass
    fresh.write_bytes(b"")  # (as if its first write had not reached the file yet)
    with Store(fresh) as store:
        assert store.scalar("PRAGMA user_version") >= 1


# ------------------------------------------------------------------------------ 5. the model

def package_copy(tmp_path: Path) -> Path:
    """A copy of the installed package, to damage its bundled model; run from its folder."""
    where = tmp_path / "pkg"
    shutil.copytree(ROOT / "remem", where / "remem",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return where


@pytest.mark.parametrize("how", ["missing", "truncated"])
def test_a_damaged_bundled_model_is_one_line_and_never_re_embeds_the_memory(home, tmp_path, how):
    """A missing model used to turn into the hashed space without a word, and the next sleep
    re-embedded the whole memory into it; a truncated one failed mid-command."""
    from remem.engine.store import Store

    with Store() as store:
        seed_lesson(store)
    made, _ = remem("remember", "the staging database listens on port 5433")
    assert made.returncode == 0, made.stderr
    pkg = package_copy(tmp_path)
    tensors = pkg / "remem" / "engine" / "model" / "model.safetensors"
    if how == "missing":
        tensors.unlink()
    else:
        data = tensors.read_bytes()
        tensors.write_bytes(data[: len(data) // 2])
    probe = subprocess.run([sys.executable, "-c", "import remem; print(remem.__file__)"],
                           capture_output=True, text=True, cwd=str(pkg))
    assert probe.stdout.strip().startswith(str(pkg)), probe  # the copy is what runs there

    slept, _ = remem("sleep", "--quiet", cwd=pkg)
    assert slept.returncode == 1, slept.stdout
    line = slept.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line, line
    assert "bundled embedding model" in line and "reinstall remem" in line and how in line
    conn = sqlite3.connect(home / "memory.db")
    spaces = {r[0] for r in conn.execute("SELECT space FROM episodes UNION SELECT space FROM lessons")}
    conn.close()
    assert spaces and all(s.startswith("m2v:bundled") for s in spaces), spaces  # nothing re-embedded

    hook, _ = remem("hook", "prompt", input=payload(shown_session()), cwd=pkg)
    assert hook.returncode == 0 and hook.stdout == ""
    assert "bundled embedding model" in log_text(home)

    doctor, _ = remem("doctor", "--json", "--no-run", cwd=pkg)
    problems = json.loads(doctor.stdout)["problems"]
    assert any("bundled embedding model" in p["problem"] and "reinstall" in p["fix"] for p in problems), problems


def test_a_damaged_tokenizer_is_one_clear_line(home, tmp_path):
    made, _ = remem("remember", "the staging database listens on port 5433")
    assert made.returncode == 0, made.stderr
    pkg = package_copy(tmp_path)
    (pkg / "remem" / "engine" / "model" / "tokenizer.json").write_text('{"model": "\x01"}')
    res, _ = remem("recall", "staging port", cwd=pkg)
    assert res.returncode == 1
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1 and "unexpected error" not in line, line
    assert "tokenizer.json" in line and "reinstall remem" in line


# ------------------------------------------------------------------------------ 6. wordpiece cache

def test_a_truncated_wordpiece_cache_is_rebuilt(home):
    from remem import paths
    from remem.engine.embed import MODEL_DIR
    from remem.engine.wordpiece import WordPiece

    tokenizer = MODEL_DIR / "tokenizer.json"
    full = WordPiece.load(tokenizer, paths.vectors_dir())
    cached = next(paths.vectors_dir().glob("wordpiece-*"))
    whole = cached.read_text(encoding="utf-8")
    cached.write_text(whole[: len(whole) // 2], encoding="utf-8")

    again = WordPiece.load(tokenizer, paths.vectors_dir())
    assert len(again.vocab) == len(full.vocab)
    text = "the zebra crossing needs yellow paint near the xylophone museum"
    assert again.encode(text) == full.encode(text)
    assert cached.read_text(encoding="utf-8") == whole  # written again, whole


def test_a_truncated_wordpiece_cache_does_not_stop_the_hook(primed):
    first, _ = remem("hook", "prompt", input=payload(shown_session("first")))
    assert "docker build needs --platform" in first.stdout, first.stderr
    cached = next((primed / "cache").glob("wordpiece-*"))
    text = cached.read_text(encoding="utf-8")
    cached.write_text(text[: len(text) // 20], encoding="utf-8")  # the vocabulary's first 5 %
    again, _ = remem("hook", "prompt", input=payload(shown_session("again")))
    assert "docker build needs --platform" in again.stdout, again.stderr
    assert len(cached.read_text(encoding="utf-8")) == len(text)


# ------------------------------------------------------------------------------ 7. vector cache

def test_recall_carries_on_when_the_vector_cache_cannot_be_written(home):
    from remem import paths
    from remem.engine import memories, vectors
    from remem.engine.embed import get_embedder
    from remem.engine.recall import recall
    from remem.engine.store import Store

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    emb = get_embedder()
    with Store() as store:
        wanted = memories.remember(store, "the staging database listens on port 5433")
        memories.remember(store, "the docker build needs the platform flag")
        key = vectors._key(store, emb.space)
        folder = paths.vectors_dir()
        folder.mkdir(parents=True, exist_ok=True)

        def full_disk() -> None:
            # A manifest the store has moved past (as after a restore): the next sync rebuilds
            # into generation 6, whose vector file is on a full disk.
            for suffix in ("5.f32", "5.seq"):
                (folder / f"{key}.{suffix}").write_bytes(b"")
            (folder / f"{key}.json").write_text(json.dumps({
                "version": vectors.VERSION, "space": emb.space, "dim": emb.dim, "gen": 5,
                "rows": 0, "dead": 0, "log_id": 10**9}))
            target = folder / f"{key}.6.f32"
            target.unlink(missing_ok=True)
            target.symlink_to("/dev/full")  # every write: ENOSPC
            vectors.drop_caches()

        full_disk()
        hits = recall(store, "which port does staging listen on", 2, touch=False)
        assert hits and hits[0]["id"] == wanted["id"]
        full_disk()
        hits = recall(store, "which port does staging listen on", 2, touch=False)
        assert hits and hits[0]["id"] == wanted["id"]
    assert log_text(home).count("vector cache") == 1  # logged once, not per call
    assert not (folder / f"{key}.6.seq").exists()  # nothing half-written left behind


# ------------------------------------------------------------------------------ 8-10. the hook's process

def _finish(proc: subprocess.Popen) -> tuple[bytes, bytes]:
    """Close the hook's stdin, make sure it is gone, return (stdout, stderr)."""
    try:
        proc.stdin.close()
    except OSError:
        pass
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    return proc.stdout.read(), proc.stderr.read()


def test_a_hook_answers_once_the_json_is_in_even_if_stdin_stays_open(primed):
    session = shown_session()
    proc = subprocess.Popen([sys.executable, "-m", "remem", "hook", "prompt"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))
    try:
        proc.stdin.write((payload(session) + "\n").encode())
        proc.stdin.flush()  # and never closed: the agent keeps the pipe open
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("the hook waited for stdin to close")
    finally:
        out, err = _finish(proc)
    assert code == 0 and b"docker build needs --platform" in out, err


def test_a_hook_with_no_input_and_stdin_open_gives_up_at_its_budget(primed):
    from remem import config

    config.set_value("prime.timeout_ms", 1500)
    proc = subprocess.Popen([sys.executable, "-m", "remem", "hook", "prompt"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))
    try:
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("the hook waited for stdin to close")
    finally:
        out, _ = _finish(proc)
    assert code == 0 and out == b""
    assert "did not end within prime.timeout_ms" in log_text(primed)


def test_a_hook_with_stdout_closed_records_nothing(primed):
    session = shown_session()
    proc = subprocess.run(["sh", "-c", 'exec "$0" -m remem hook prompt >&-', sys.executable],
                          input=payload(session), capture_output=True, text=True, cwd=str(ROOT),
                          timeout=120)
    assert proc.returncode == 0
    assert primes(primed, session) == [], "recorded as shown, but nobody could see it"
    assert "stdout is closed" in log_text(primed)
    # The same call with stdout open shows and records the lesson.
    shown = subprocess.run([sys.executable, "-m", "remem", "hook", "prompt"], input=payload(session),
                           capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert "docker build needs --platform" in shown.stdout and len(primes(primed, session)) == 1


def _waiting_in_poll(pid: int) -> bool:
    try:
        return "poll" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def test_sigterm_mid_hook_exits_zero_and_is_logged(primed):
    from remem import config

    config.set_value("prime.timeout_ms", 60000)
    proc = subprocess.Popen([sys.executable, "-m", "remem", "hook", "prompt"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))
    try:
        # Mid-hook: waiting for its input. (Where the kernel says where a process waits, wait
        # for that; elsewhere, for a while.)
        deadline = time.monotonic() + 30
        while not _waiting_in_poll(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _waiting_in_poll(proc.pid):
            time.sleep(5)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        out, _ = _finish(proc)
    assert code == 0 and out == b""
    assert "SIGTERM" in log_text(primed)


def test_hook_main_in_process_puts_the_sigterm_handler_back(monkeypatch, home):
    import io

    from remem import hooks

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"prompt": "x"}')))
    assert hooks.main(["prompt"]) == 0
    assert signal.getsignal(signal.SIGTERM) == before


# ------------------------------------------------------------------------------ 11. non-UTF-8 home

def test_a_home_whose_name_is_not_utf8_recalls_and_sleeps(tmp_path):
    """The vector cache's name and a sleep's record in `runs` (which names the home) used to
    fail to encode the path's byte that is not UTF-8."""
    home = tmp_path / os.fsdecode(b"home-\xff")
    env = {"REMEM_HOME": str(home)}
    made, _ = remem("remember", "the staging database listens on port 5433", env=env)
    assert made.returncode == 0, made.stderr
    found, _ = remem("recall", "which port does staging listen on", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert "5433" in found.stdout
    # The passes over the vector cache and the store (render's files are another matter).
    slept, _ = remem("sleep", "--pass", "connect", "--json", env=env)
    assert slept.returncode == 0, slept.stderr


def test_a_record_naming_such_a_path_can_be_stored(home):
    from remem.engine.store import Store, dumps, loads_list

    odd = os.fsdecode(b"/home/caf\xe9/.remem/backups/memory.db")
    with Store() as store, store.write() as conn:
        conn.execute("INSERT INTO runs (kind, started, summary) VALUES ('sleep', 'now', ?)",
                     (dumps([{"path": odd}]),))
    with Store() as store:
        assert loads_list(store.scalar("SELECT summary FROM runs"))[0]["path"] == odd


def test_the_log_never_raises_on_text_that_is_not_utf8(home: Path, capsys) -> None:
    from remem import paths
    from remem.log import log

    name = os.fsdecode(b"caf\xe9.jsonl")  # a surrogate-escaped file name, as os.listdir gives
    log("ingest", f"cannot read {name}", stderr=True)
    assert "caf\\udce9.jsonl" in paths.log_file().read_text(encoding="utf-8")
