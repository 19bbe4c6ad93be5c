"""Stress, short version of bench/stress.py: 8 workers firing real `remem hook prompt` and
`remem hook pre-tool` processes, an ingest, a sleep and `remem serve --http` answering
recalls and remembers, all at once over one memory (a few hundred operations).

Zero errors, zero "database is locked" in any process's stderr or the logs, every episode
written (by the ingest and by the server) there at the end, integrity_check and FTS ok.
"""

from __future__ import annotations

from tests import reliability_kit as kit


def test_hooks_ingest_sleep_and_server_together(tmp_path):
    out = kit.run_stress(tmp_path, workers=8, hooks_per_worker=20, recalls=60, remembers=20,
                         base_sessions=40, new_sessions=40)
    assert out["ops"] >= 240
    assert out["errors"] == 0, out["problems"]
    assert out["locked"] == 0
    assert out["missing"] == 0
    assert out["db_ok"], out
    assert out["server_stderr_lines"] == []
