"""`remem demo` empties a folder only when it is a demo it built: never the home folder (which
holds the default demo folder ~/.remem-demo, the old marker's very name), never a folder
holding the home folder, remem's home or the current folder, never a folder holding a file
the demo does not write, and never on a marker that is a folder or a link."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, CliResult, run_remem


def remem_in(folder: Path, *args: str) -> CliResult:
    """The real `remem`, run from `folder` (as `cd folder && remem …`)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "remem", *args], capture_output=True, text=True,
                          env=env, cwd=str(folder), timeout=120)
    return CliResult(proc)


def refused(result: CliResult, *words: str) -> str:
    """Exit 1 and one line on stderr naming each of `words`."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remem: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _papers(home: Path) -> Path:
    thesis = home / "Documents" / "thesis.txt"
    thesis.parent.mkdir(parents=True)
    thesis.write_text("four years of work")
    return thesis


def test_demo_dir_dot_from_home_after_a_first_demo_keeps_the_home_folder(home: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"  # the fake HOME the `home` fixture sets
    thesis = _papers(user)
    assert run_remem("demo").returncode == 0  # the default folder: ~/.remem-demo, a folder
    assert (user / ".remem-demo" / "memory.db").is_file()
    refused(remem_in(user, "demo", "--dir", "."), "your home folder", "--dir an empty or new folder")
    refused(run_remem("demo", "--dir", str(user)), "your home folder")
    assert thesis.read_text() == "four years of work"
    assert not (user / ".remem-demo.marker").exists() and not (user / "memory.db").exists()
    assert (user / ".remem-demo" / "memory.db").is_file()  # the demo itself stays
    assert run_remem("demo").returncode == 0  # and is rebuilt where it is
    assert (user / ".remem-demo" / ".remem-demo.marker").is_file()


def test_a_folder_holding_the_home_folder_or_the_current_folder_is_refused(home: Path, tmp_path: Path) -> None:
    thesis = _papers(tmp_path / "user")
    refused(run_remem("demo", "--dir", str(tmp_path)), "holds your home folder", "--dir")
    demo = tmp_path / "elsewhere" / "demo"
    assert run_remem("demo", "--dir", str(demo)).returncode == 0
    inside = demo / "claude" / "projects"
    refused(remem_in(inside, "demo", "--dir", str(demo)), "holds the current folder")
    assert inside.is_dir() and (demo / "memory.db").is_file()
    assert thesis.read_text() == "four years of work"


def test_a_demo_holding_a_file_the_demo_does_not_write_is_not_emptied(home: Path, tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    assert run_remem("demo", "--dir", str(demo)).returncode == 0
    (demo / "notes.txt").write_text("mine")
    refused(run_remem("demo", "--dir", str(demo)), "'notes.txt'", "nothing removed", "--dir an empty or new folder")
    assert (demo / "notes.txt").read_text() == "mine" and (demo / "memory.db").is_file()


def test_a_marker_that_is_a_folder_or_a_link_marks_no_demo(home: Path, tmp_path: Path) -> None:
    real_marker = tmp_path / "a-demo" / ".remem-demo"  # a demo's marker, elsewhere
    real_marker.parent.mkdir()
    real_marker.write_text("built by `remem demo`; safe to delete\n")
    for name, make in ((".remem-demo", lambda p: p.mkdir()), (".remem-demo.marker", lambda p: p.mkdir()),
                       (".remem-demo", lambda p: p.symlink_to(real_marker)),
                       (".remem-demo.marker", lambda p: p.symlink_to(real_marker))):
        folder = tmp_path / f"mine-{name}-{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        make(folder / name)
        (folder / "memory.db").write_text("not the demo's")  # a name the demo writes, yet not a demo
        refused(run_remem("demo", "--dir", str(folder)), "is not a remem demo", "nothing removed")
        assert (folder / "memory.db").read_text() == "not the demo's"


def test_a_demo_built_by_an_earlier_release_is_rebuilt_with_the_new_marker(home: Path, tmp_path: Path) -> None:
    demo = tmp_path / "old-demo"
    assert run_remem("demo", "--dir", str(demo)).returncode == 0
    (demo / ".remem-demo.marker").unlink()  # as an earlier release left it: the old marker alone
    assert (demo / ".remem-demo").is_file()
    assert run_remem("demo", "--dir", str(demo)).returncode == 0
    assert (demo / ".remem-demo.marker").is_file() and (demo / "memory.db").is_file()
