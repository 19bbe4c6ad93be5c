"""NUL characters that a pipe or a transcript delivers never reach what remem stores: SQLite
keeps them, and every tool that later reads the title or the query stops at the first one."""

from __future__ import annotations

import json

from remem.engine import ingest
from remem.engine.text import clean_text
from tests.test_hooks import primes, run_hook, seed, session_in_arm


def test_clean_text_drops_nul_and_keeps_the_rest():
    assert clean_text("pip install\x00\x00 requests") == "pip install requests"
    assert clean_text("caf\udce9\x00") == "caf\ufffd"
    text = "nothing to drop"
    assert clean_text(text) is text


def test_a_prompt_with_nul_bytes_is_logged_without_them(store):
    seed(store)
    payload = {"prompt": "build the docker image\x00\x00.   [ 68%]", "session_id": session_in_arm(False),
               "cwd": "/tmp"}
    res = run_hook("prompt", payload)
    assert res.returncode == 0, res.stderr
    rows = primes(store)
    assert rows and all("\x00" not in r["query"] for r in rows)
    assert rows[-1]["query"].startswith("build the docker image")


def test_a_transcript_prompt_with_nul_bytes_is_stored_without_them(store, tmp_path):
    records = [
        {"type": "user", "sessionId": "nul-1", "uuid": "u1", "timestamp": "2026-11-01T10:00:00Z",
         "cwd": "/tmp/proj", "message": {"role": "user", "content": "fix the flaky\x00 login test"}},
        {"type": "assistant", "sessionId": "nul-1", "uuid": "a1", "parentUuid": "u1",
         "timestamp": "2026-11-01T10:00:05Z", "cwd": "/tmp/proj",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Fixed\x00 it."}]}},
    ]
    path = tmp_path / "nul-1.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    ingest.ingest_paths(store, [path])
    rows = store.rows("SELECT title, gist, detail FROM episodes")
    assert rows, "the session was stored"
    for row in rows:
        for field in ("title", "gist", "detail"):
            assert "\x00" not in (row[field] or ""), (field, row[field])
    assert any("fix the flaky login test" in (r["gist"] or "") + (r["title"] or "") for r in rows)
