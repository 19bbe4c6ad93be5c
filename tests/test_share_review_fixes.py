"""Sharing as docs/SHARING.md describes it, where it did not hold: accept and reject with a share
folder that cannot be written (a read-only mount) succeed with a warning; `share block` waits for
a sync running and rejects what it took in; share.folder is kept as a whole path and never
remem's home; `share trust` says why lessons still wait; edits of a config.toml that two homes
link lose nothing, and a link into no folder is named; `*.partial` and `~syncthing~*.tmp` are
writes in progress, a file dated ahead is said to be dated ahead; `share receive` counts what it
held back; `block --undo --json` has the keys `block --json` has."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem import config
from remem.engine import lessons, share
from remem.engine.share_files import (
    LEFT_OVER,
    LEFT_OVER_AHEAD,
    STALE_NOT_JSON,
    STALE_NOT_JSON_AHEAD,
    UNEXPECTED_LEFT_OVER_AHEAD,
    _is_temp,
    parse_name,
    unexpected,
)
from remem.engine.share_folder import share_lock
from remem.engine.store import Store

ROOT = Path(__file__).resolve().parent.parent
GOOD = "Run the full test suite before handing back work"
OTHER = "Prefer rg over grep when searching the code"
MORE = ["Keep commits small and focused", "Write the test before the fix",
        "Name the fix in every error message"]


@dataclass
class Peer:
    """Another memory, its own store and identity, writing into the share folder."""
    store: Store
    idir: Path

    @property
    def origin(self) -> str:
        return share.identity(self.idir).origin

    def publish(self, folder: Path, *texts: str, cwd: str | None = None) -> None:
        for text in texts:
            lessons.add_lesson(self.store, text, "correction", strength=1.5, cwd=cwd)
        share.export_lessons(self.store, folder, identity_dir=self.idir)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "share"
    path.mkdir()
    return path


@pytest.fixture
def peers(tmp_path: Path):
    made = [Peer(Store(tmp_path / name / "memory.db"), tmp_path / name / "identity") for name in ("p", "q")]
    yield made
    for peer in made:
        peer.store.close()


def _candidates(store: Store) -> dict[str, str]:
    """Text -> id of the received lessons waiting here."""
    return {r["text"]: r["id"] for r in share.candidates(store)}


def _remem(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "remem", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=str(cwd or ROOT), timeout=300)


def _flock_waiters(path: Path) -> bool:
    """Whether a process waits for an flock on `path` now (/proc/locks lists a waiter with
    "->"): how a test tells that a command is waiting for a lock, with no clock."""
    inode = os.stat(path).st_ino
    with open("/proc/locks", encoding="ascii") as locks:
        for line in locks:
            fields = line.split()
            if "->" in fields and "FLOCK" in fields and any(
                    f.count(":") == 2 and f.rsplit(":", 1)[1] == str(inode) for f in fields):
                return True
    return False


def _until_waiting_or_done(proc: subprocess.Popen, lock: Path) -> bool:
    """Wait until `proc` waits for the flock on `lock` (True) or has ended (False)."""
    deadline = time.monotonic() + 300  # a bound on a hung run, not a measure of anything
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if lock.exists() and _flock_waiters(lock):
            return True
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"{proc.args} neither ended nor waited for {lock}")


needs_proc_locks = pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs Linux's /proc/locks")


# --------------------------------------------------------------------------- 1: a read-only folder

def _read_only_mount_works(tmp_path: Path) -> bool:
    if not shutil.which("unshare") or not sys.platform.startswith("linux"):
        return False
    probe_src, probe_ro = tmp_path / "probe-src", tmp_path / "probe-ro"
    probe_src.mkdir()
    probe_ro.mkdir()
    script = (f"mount --bind {probe_src} {probe_ro} && mount -o remount,bind,ro {probe_ro} && "
              f"! touch {probe_ro}/x 2>/dev/null")
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True).returncode == 0


def _in_read_only_mount(src: Path, ro: Path, *commands: list[str]) -> list[tuple[int, str, str]]:
    """Run remem commands where `ro` is `src` mounted read-only (a bind mount in a mount
    namespace of our own, as `unshare -rm` makes one): each one's status, stdout and stderr."""
    out_dir = ro.parent / "outs"
    out_dir.mkdir(exist_ok=True)
    lines = [f"mount --bind {shlex.quote(str(src))} {shlex.quote(str(ro))}",
             f"mount -o remount,bind,ro {shlex.quote(str(ro))}"]
    for i, args in enumerate(commands):
        cmd = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "remem", *args])
        lines.append(f"{cmd} > {out_dir}/{i}.out 2> {out_dir}/{i}.err; echo $? > {out_dir}/{i}.rc")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", " && ".join(lines[:2]) + "; " + "; ".join(lines[2:])],
                          capture_output=True, text=True, env=dict(os.environ), cwd=str(ROOT), timeout=600)
    assert proc.returncode == 0, proc.stderr
    return [(int((out_dir / f"{i}.rc").read_text()), (out_dir / f"{i}.out").read_text(),
             (out_dir / f"{i}.err").read_text()) for i in range(len(commands))]


@pytest.mark.parametrize("synced_there_before", [False, True])
def test_accept_and_reject_with_a_read_only_share_folder_succeed_and_warn(
        store, peers, tmp_path, synced_there_before):
    if not _read_only_mount_works(tmp_path):
        pytest.skip("no read-only bind mount here (unshare -rm)")
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    peers[0].publish(src, GOOD, OTHER, MORE[0], MORE[1])
    if synced_there_before:  # this memory's own folder is there, read-only now
        assert _remem("share", "sync", "--folder", str(src)).returncode == 0
    else:
        share.receive(store, src)
    ids = _candidates(store)
    assert _remem("config", "set", "share.folder", str(ro)).returncode == 0
    accepted, rejected, accepted_json, rejected_json = _in_read_only_mount(
        src, ro, ["share", "accept", ids[GOOD]], ["share", "reject", ids[OTHER]],
        ["share", "accept", ids[MORE[0]], "--json"], ["share", "reject", ids[MORE[1]], "--json"])
    for rc, out, err in (accepted, rejected):
        assert rc == 0, err
        assert err.startswith("warning: ") and err.count("\n") == 1, err
        assert "Read-only file system" in err
    assert accepted[1].startswith(f"accepted {ids[GOOD]}")
    assert accepted[2].startswith("warning: accepted here, but your confirmation of it could not be written")
    assert rejected[1].startswith(f"rejected {ids[OTHER]}")
    for rc, out, err in (accepted_json, rejected_json):  # the choice stands, the warning with it
        assert rc == 0, err
        assert "Read-only file system" in json.loads(out)["warning"]
    for text, status in ((GOOD, "active"), (OTHER, "vetoed"), (MORE[0], "active"), (MORE[1], "vetoed")):
        assert lessons.get_lesson(store, ids[text])["status"] == status


def test_accept_and_reject_warn_when_the_share_folder_refuses_our_folder(store, peers, folder, tmp_path):
    """Where this memory's folder would go, a file sits (made by hand, or by a sync tool): the
    confirmation cannot be written, and the choice is made all the same, with a warning."""
    peers[0].publish(folder, GOOD, OTHER)
    share.receive(store, folder)
    ids = _candidates(store)
    (folder / share.keys()["origin"]).write_text("not a folder\n")
    assert _remem("config", "set", "share.folder", str(folder)).returncode == 0
    res = _remem("share", "accept", ids[GOOD], "--json")
    assert res.returncode == 0, res.stderr
    assert "remove what is in its place" in json.loads(res.stdout)["warning"]
    res = _remem("share", "reject", ids[OTHER])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"rejected {ids[OTHER]}")
    assert res.stderr.startswith("warning: rejected here; the share folder could not be written")
    assert lessons.get_lesson(store, ids[GOOD])["status"] == "active"
    assert lessons.get_lesson(store, ids[OTHER])["status"] == "vetoed"


# --------------------------------------------------------------------------- 2: block while a sync runs

@needs_proc_locks
def test_block_waits_for_a_sync_running_and_rejects_what_it_took_in(store, peers, folder):
    p = peers[0]
    p.publish(folder, GOOD)
    share.receive(store, folder)  # p is a known origin, one lesson of it waits
    p.publish(folder, *MORE)
    read_before = config.load()  # what a sync running now read: p not blocked
    lock = Path(store.path).parent / "share.lock"
    with share_lock(store):  # a sync is running
        proc = subprocess.Popen([sys.executable, "-m", "remem", "share", "block", p.origin, "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
        _until_waiting_or_done(proc, lock)
        # The running sync goes on taking in what p sent, as it read the list before the block.
        took = share.receive(store, folder, cfg=read_before)["received"]
        assert len(took) == len(MORE)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    rep = json.loads(out)
    assert rep["blocked"] is True and rep["seen"] is True and len(rep["rejected"]) == 1 + len(MORE)
    assert _candidates(store) == {}
    assert {lessons.get_lesson(store, t["id"])["status"] for t in took} == {"vetoed"}
    assert config.load()["share"]["blocked_origins"] == [p.origin]


# --------------------------------------------------------------------------- 3: share.folder

def test_a_relative_share_folder_is_set_as_its_whole_path(cli, store, tmp_path, monkeypatch, home):
    w1, w2 = tmp_path / "w1", tmp_path / "w2"
    (w1 / "relsync").mkdir(parents=True)
    w2.mkdir()
    monkeypatch.chdir(w1)
    res = cli("config", "set", "share.folder", "relsync")
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == f'share.folder = "{w1 / "relsync"}"'
    monkeypatch.chdir(w2)
    config._cache.clear()
    res = cli("share", "sync")
    assert res.exit_code == 0, res.output
    assert os.listdir(w2) == [] and any(len(n) == 16 for n in os.listdir(w1 / "relsync"))
    # "~" is the home folder, as a shell would have made it.
    res = cli("config", "set", "share.folder", "~/Sync/remem")
    assert res.exit_code == 0 and config.load()["share"]["folder"] == str(Path.home() / "Sync" / "remem")
    assert cli("config", "set", "share.folder", "").exit_code == 0  # "" still unsets it
    assert config.load()["share"]["folder"] == ""


def test_a_relative_share_folder_written_by_hand_is_refused_at_use(cli, store, tmp_path, monkeypatch, home):
    (home / "config.toml").write_text('[share]\nfolder = "relsync"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config._cache.clear()
    res = cli("share", "sync")
    assert res.exit_code == 1
    line = res.output.strip()
    assert line.count("\n") == 0 and "'relsync' is a relative path" in line, line
    assert "`remem config set share.folder " in line
    assert not (tmp_path / "relsync").exists()


@pytest.mark.parametrize("where", ["", "identity", "identity/inside", ".."])
def test_config_set_refuses_remems_home_as_the_share_folder(where, home, tmp_path):
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("# mine\n", encoding="utf-8")
    chosen = os.path.normpath(home / where)
    res = _remem("config", "set", "share.folder", chosen)
    assert res.returncode == 1
    line = res.stderr.strip()
    assert line.count("\n") == 0 and "private key" in line and "config.toml was left unchanged" in line, line
    assert (home / "config.toml").read_text(encoding="utf-8") == "# mine\n"


# --------------------------------------------------------------------------- 4: why lessons still wait

def test_trust_points_lessons_waiting_for_their_project_at_accept_project(cli, store, peers, folder):
    p, q = peers
    for peer in peers:  # both send it, for a project this memory has never seen
        peer.publish(folder, GOOD, cwd="/home/someone/code/shop-api")
    assert cli("share", "trust", p.origin, "--force").exit_code == 0
    share.receive(store, folder)
    res = cli("share", "trust", q.origin)
    assert res.exit_code == 0, res.output
    assert "second origin" not in res.output  # two trusted origins agree already
    assert "1 of its lessons wait for their project's folder here" in res.output
    assert "`remem share accept ID --project DIR`" in res.output
    rep = json.loads(cli("share", "trust", q.origin, "--json").stdout)
    assert rep["waiting"] == 1 and rep["waiting_for_project"] == 1


def test_trust_still_says_a_second_origin_is_wanted_when_it_is(cli, store, peers, folder):
    peers[0].publish(folder, GOOD)
    share.receive(store, folder)
    res = cli("share", "trust", peers[0].origin)
    assert "1 of its lessons still wait: trust activates one when a second origin" in res.output
    assert "project" not in res.output


# --------------------------------------------------------------------------- 5, 6: config.toml links

@needs_proc_locks
def test_edits_from_two_homes_linking_one_config_keep_each_other(home, tmp_path):
    """Home 1 is editing config.toml (an edit holds its lock from the read to the rename) when
    `remem share block` runs in home 2, whose config.toml links to the same file: it waits, and
    neither edit loses the other."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "remem.toml"
    target.write_text("# shared\n", encoding="utf-8")
    homes = [tmp_path / "h1", tmp_path / "h2"]
    for h in homes:
        h.mkdir()
        (h / "config.toml").symlink_to(target)
    first, second = "0123456789abcdef", "fedcba9876543210"
    entered, go = threading.Event(), threading.Event()

    def change(now: list[str]) -> list[str]:
        entered.set()
        go.wait(300)
        return now + [first]

    edit = threading.Thread(target=config.update_value,
                            args=("share.blocked_origins", change, homes[0] / "config.toml"))
    edit.start()
    try:
        assert entered.wait(300)
        proc = subprocess.Popen([sys.executable, "-m", "remem", "share", "block", second],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                                env={**os.environ, "REMEM_HOME": str(homes[1])})
        _until_waiting_or_done(proc, dotfiles)
    finally:
        go.set()
        edit.join(300)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    held = tomllib.loads(target.read_text(encoding="utf-8"))["share"]["blocked_origins"]
    assert sorted(held) == sorted([first, second])
    assert os.listdir(dotfiles) == ["remem.toml"]  # nothing left beside the file itself


def test_a_config_link_into_a_missing_folder_is_named(home, tmp_path):
    home.mkdir(exist_ok=True)
    gone = tmp_path / "nonexistent" / ".remem.toml"
    (home / "config.toml").symlink_to(gone)
    for args in (["config", "set", "recall.k", "7"], ["share", "block", "0123456789abcdef"]):
        res = _remem(*args)
        assert res.returncode == 1
        line = res.stderr.strip()
        assert line.count("\n") == 0, line
        assert f"links to {gone}, whose folder does not exist; fix or remove the link" in line, line
        assert ".tmp" not in line
    assert not gone.parent.exists()


# --------------------------------------------------------------------------- 7: temp files and reports

@pytest.mark.parametrize("name", ["x.partial", f"{'ab' * 16}.json.3f9a.partial", "~syncthing~x.json.tmp"])
def test_temp_files_without_a_leading_dot_are_writes_in_progress(store, peers, folder, name):
    p = peers[0]
    p.publish(folder, GOOD)
    temp = folder / p.origin / "lessons" / name
    temp.write_text("{")
    rep = share.receive(store, folder)
    assert not any(r["path"].endswith(name) for r in rep["rejected"]), rep["rejected"]
    assert [h["path"] for h in rep["held_back"]] == [f"{p.origin}/lessons/{name}"]
    # Left over (unchanged for over 15 minutes), it is said to be, and its owner removes it.
    old = time.time() - 3600
    os.utime(temp, (old, old))
    rep = share.receive(store, folder)
    assert {"path": f"{p.origin}/lessons/{name}", "reason": LEFT_OVER} in rep["rejected"]
    share.export_lessons(p.store, folder, identity_dir=p.idir)
    assert not temp.exists()


def test_a_file_dated_ahead_of_the_clock_is_said_to_be(store, peers, folder):
    p = peers[0]
    p.publish(folder, GOOD)
    lessons_dir = folder / p.origin / "lessons"
    ahead = time.time() + 10 * 365 * 86400
    planted = {".syncthing.foo.tmp": LEFT_OVER_AHEAD, f"{'cd' * 16}.json": STALE_NOT_JSON_AHEAD,
               f"{'ef' * 16} 2.json": UNEXPECTED_LEFT_OVER_AHEAD}
    for name in planted:
        (lessons_dir / name).write_text("{")
        os.utime(lessons_dir / name, (ahead, ahead))
    rep = share.receive(store, folder)
    for name, reason in planted.items():
        assert {"path": f"{p.origin}/lessons/{name}", "reason": reason} in rep["rejected"]
        assert "unchanged for over 15 minutes" not in reason and "ahead of this machine's clock" in reason
    old = time.time() - 3600
    os.utime(lessons_dir / f"{'cd' * 16}.json", (old, old))
    rep = share.receive(store, folder)
    assert {"path": f"{p.origin}/lessons/{'cd' * 16}.json", "reason": STALE_NOT_JSON} in rep["rejected"]


def test_share_receive_says_how_many_files_it_held_back(cli, store, peers, folder):
    p = peers[0]
    p.publish(folder, GOOD)
    (folder / p.origin / "confirm" / ".syncthing.x.tmp").write_text("{")
    res = cli("share", "receive", "--folder", str(folder))
    assert res.exit_code == 0, res.output
    assert ", 1 held back (still being written)" in res.stdout.splitlines()[-1]


def test_block_undo_json_has_the_keys_block_json_has(cli, store, peers, folder):
    p = peers[0]
    p.publish(folder, GOOD)
    share.receive(store, folder)
    blocked = json.loads(cli("share", "block", p.origin, "--json").stdout)
    undone = json.loads(cli("share", "block", p.origin, "--undo", "--json").stdout)
    assert set(undone) == set(blocked)
    assert undone["seen"] is True and undone["blocked"] is False


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
               min_size=1, max_size=40))
def test_every_partial_name_is_a_temp_file_never_an_unexpected_one(stem):
    name = f"{stem}.partial"
    if name.startswith(".."):
        return
    assert _is_temp(name) and not unexpected(name)
    assert parse_name(name) is None
    syncthing = f"~syncthing~{stem}.tmp"
    assert _is_temp(syncthing) and not unexpected(syncthing)


def test_a_document_name_is_never_a_temp_file():
    for name in (f"{'ab' * 16}.json", f"{'ab' * 16} (1).json", "x.json", "partial", "x.partialy"):
        assert not _is_temp(name)
    assert unexpected("x.partialy")
