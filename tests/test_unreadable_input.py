"""A file remem is given but cannot read is one line: the path once, the reason in words, the
fix ("cannot read X (Permission denied); check the path and its permissions"), as `import` and
`restore` say it, never Python's "X: [Errno 13] Permission denied: 'X'".

A Unix socket named as a transcript is no file to read, for every user (root included), so its
line is checked end to end without dropping privileges ("not a regular file", the path once and
the fix); an unreadable file is checked where the test can make one (not root, or root able to
drop its read-anything capability)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import ROOT

TRANSCRIPT = {"type": "user", "message": {"role": "user", "content": "use uv, not pip"},
              "sessionId": "s1", "cwd": "/x/y", "timestamp": "2026-01-01T00:00:00Z"}
# Root reads any file: drop that capability so chmod 000 means what it says.
DROP_READ_ANYTHING = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                      "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def socket_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A Unix socket named like a transcript (bound by a relative name: a socket's path is short)."""
    monkeypatch.chdir(tmp_path)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind("s2.jsonl")
    try:
        yield tmp_path / "s2.jsonl"
    finally:
        listener.close()


def test_cannot_read_names_the_path_once_the_reason_and_the_fix(tmp_path: Path) -> None:
    from remem.engine.backup import cannot_read

    with pytest.raises(OSError) as caught:
        open(tmp_path)  # a folder where a file is expected: a real OSError for any user
    line = cannot_read(tmp_path, caught.value)
    assert line == f"cannot read {tmp_path} (Is a directory); check the path and its permissions"


def test_ingest_of_a_file_that_cannot_be_opened_says_so_in_one_line(store: Any, socket_transcript: Path) -> None:
    from remem.engine.ingest import ingest_paths

    summary = ingest_paths(store, [str(socket_transcript)])
    assert summary["errors"] == [f"{socket_transcript}: not a regular file (a pipe, a socket, a device "
                                 "or a folder); name a file"], summary["errors"]


def test_cli_ingest_prints_the_one_line(cli: Any, socket_transcript: Path) -> None:
    result = cli("ingest", str(socket_transcript))
    assert result.exit_code == 1, result.output
    assert (f"remem: {socket_transcript}: not a regular file (a pipe, a socket, a device or a folder); "
            "name a file") in result.output, result.output
    assert "Errno" not in result.output and result.output.count(str(socket_transcript)) == 1, result.output


def _unreadable_runner() -> list[str]:
    """The command prefix under which chmod 000 denies reading (skips where none can)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a chmod 000 file stays readable")
    probe = subprocess.run([*DROP_READ_ANYTHING, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot drop the read-anything capability here: {probe.stderr.decode().strip()}")
    return DROP_READ_ANYTHING


def test_ingest_and_restore_of_an_unreadable_file_say_permission_denied(tmp_path: Path) -> None:
    prefix = _unreadable_runner()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the private home the `home` fixture set
    folder = tmp_path / "proj" / "-x-y"
    folder.mkdir(parents=True)
    transcript = folder / "s1.jsonl"
    transcript.write_text(json.dumps(TRANSCRIPT) + "\n")
    backup = tmp_path / "b.db"
    backup.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)  # refused unread, whatever it holds
    transcript.chmod(0)
    backup.chmod(0)

    def remem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, sys.executable, "-m", "remem", *args], capture_output=True, text=True,
                              env=env, cwd=str(tmp_path), timeout=120)

    ingested = remem("ingest", str(tmp_path / "proj"))
    assert ingested.returncode == 1 and (f"remem: cannot read {transcript} (Permission denied); check the path "
                                         "and its permissions") in ingested.stderr, ingested.stderr
    assert "Errno" not in ingested.stderr, ingested.stderr
    restored = remem("restore", str(backup), "--yes")
    assert restored.returncode == 1 and (f"cannot read {backup} (Permission denied); check the path and its "
                                         "permissions") in restored.stderr, restored.stderr


def test_cli_import_of_a_file_that_cannot_be_opened_says_it_as_ingest_does(cli: Any, socket_transcript: Path) -> None:
    result = cli("import", str(socket_transcript))
    assert result.exit_code == 1
    assert (f"cannot read {socket_transcript} (No such device or address); check the path and its "
            "permissions") in result.output
