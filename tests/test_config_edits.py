"""Edits of config.toml (`remem config set`, `remem share block`): none lost when made at once
(a lock beside the file from the read to the rename), a symlinked file kept a link, values
checked as docs/CONFIG.md says, and a file with a byte order mark or not in UTF-8 handled in
one line."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remem import config
from remem.errors import ConfigError
from tests.conftest import ROOT, run_remem

SETTINGS = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _config(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    config._cache.clear()
    return home / "config.toml"


def _lock_is_free(home: Path) -> bool:
    """Whether another holder could take the lock on config.toml.lock now (a new open file:
    flock conflicts between open files within one process too)."""
    with open(home / "config.toml.lock", "a+b") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return True


# ------------------------------------------------------------------------------ the lock

def test_an_edit_holds_the_lock_from_the_read_to_the_rename(home, monkeypatch):
    from remem.engine import files

    path = _config(home)
    path.write_text("# mine\n[recall]\nk = 5\n", encoding="utf-8")
    seen: list[tuple[str, bool]] = []
    real_bytes, real_text, real_write = Path.read_bytes, Path.read_text, files.write_atomic

    def read_bytes(self: Path) -> bytes:
        if self.name == "config.toml":
            seen.append(("read", _lock_is_free(home)))
        return real_bytes(self)

    def read_text(self: Path, *args, **kwargs) -> str:
        if self.name == "config.toml":
            seen.append(("read", _lock_is_free(home)))
        return real_text(self, *args, **kwargs)

    def write_atomic(target: Path, *args, **kwargs):
        if Path(target).name == "config.toml":
            seen.append(("write", _lock_is_free(home)))
        return real_write(target, *args, **kwargs)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(files, "write_atomic", write_atomic)
    config.set_value("recall.k", 8)
    monkeypatch.undo()
    assert ("read", False) in seen and ("write", False) in seen, seen
    assert _lock_is_free(home)  # and let go after
    assert "k = 8" in path.read_text(encoding="utf-8")


def test_config_set_run_at_once_keeps_every_key(home):
    _config(home)
    sets = {"recall.k": "9", "prime.max_lessons": "4", "graph.auto_top_k": "7", "sleep.prediction_days": "20",
            "backup.keep": "3", "render.index_lines": "40", "share.min_strength": "2.5", "proxy.port": "4600"}
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-m", "remem", "config", "set", key, value], env=env,
                              cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for key, value in sets.items()]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    cfg = config.load()
    got = {key: str(cfg[key.split(".")[0]][key.split(".")[1]]) for key in sets}
    assert got == sets


def test_share_block_keeps_a_list_written_meanwhile(home, cli, monkeypatch):
    """Another block (or `config set`) lands between this block's read of the list and its
    write: both origins are kept (the real command, its save slowed by another edit first)."""
    from remem.engine import share

    _config(home)
    other, mine = "1111111111111111", "2222222222222222"
    real_block = share.block

    def block(store, given, *, save, **kwargs):
        def racing_save(listed):
            config.set_value("share.blocked_origins", [other])  # another process's block, done first
            return save(listed)
        return real_block(store, given, save=racing_save, **kwargs)

    monkeypatch.setattr(share, "block", block)
    res = cli("share", "block", mine.upper(), "--json")
    assert res.exit_code == 0, res.output
    config._cache.clear()
    assert config.load()["share"]["blocked_origins"] == [other, mine]
    monkeypatch.setattr(share, "block", real_block)
    assert cli("share", "block", other, "--undo").exit_code == 0
    config._cache.clear()
    assert config.load()["share"]["blocked_origins"] == [mine]


# ------------------------------------------------------------------------------ a symlink

def test_config_set_writes_through_a_symlinked_config_and_keeps_its_mode(home, tmp_path):
    _config(home)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "remem.toml"
    target.write_text("# kept in git\n[recall]\nk = 5\n", encoding="utf-8")
    target.chmod(0o640)
    link = home / "config.toml"
    link.symlink_to(target)

    res = run_remem("config", "set", "recall.k", "8")
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "# kept in git" in target.read_text(encoding="utf-8") and "k = 8" in target.read_text(encoding="utf-8")
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in dotfiles.iterdir()] == ["remem.toml"]  # no temp file left beside it
    config._cache.clear()
    assert config.load()["recall"]["k"] == 8

    # A plain file (the link replaced by one) is still written for its owner alone.
    link.unlink()
    link.write_text("[recall]\nk = 5\n", encoding="utf-8")
    link.chmod(0o644)
    config.set_value("llm.api_key", "sk-secret")
    assert not link.is_symlink() and link.stat().st_mode & 0o777 == 0o600


# ------------------------------------------------------------------------------ llm.url

@pytest.mark.parametrize("url", ["http://", "https://", "http:///v1", "http://:8080", "http://host:99999",
                                 "http://host:port", "http://my host", "ftp://host", "localhost:11434"])
def test_a_url_without_a_host_is_refused_in_one_line_and_one_with_a_host_taken(home, url):
    path = _config(home)
    path.write_text('[llm]\nurl = "http://127.0.0.1:11434/v1"\n', encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(ConfigError) as err:
        config.set_value("llm.url", url)
    assert "\n" not in str(err.value) and "with a host" in str(err.value) and "left unchanged" in str(err.value)
    assert path.read_bytes() == before
    path.write_text(f'[llm]\nurl = "{url}"\n', encoding="utf-8")  # by hand: every command says so
    config._cache.clear()
    with pytest.raises(ConfigError, match="llm.url must be an http:// or https:// URL with a host"):
        config.load()
    for taken in ("", "http://127.0.0.1:11434/v1", "https://models.example.com", "http://[::1]:8080/v1"):
        assert config.set_value("llm.url", taken) == taken


@SETTINGS
@given(st.text(max_size=40))
@example("http://")
@example("https://?q")
def test_any_url_is_refused_in_one_line_or_has_a_host(home, text):
    from urllib.parse import urlsplit

    _config(home)
    if "\x00" in text:
        return
    try:
        written = config.set_value("llm.url", text)
    except ConfigError as exc:
        assert "\n" not in str(exc).strip()
        return
    assert written == "" or (written.startswith(("http://", "https://")) and urlsplit(written).hostname)


# ------------------------------------------------------------------------------ share.blocked_origins

def test_blocked_origins_take_uppercase_as_lowercase_and_empty_clears(home, cli):
    path = _config(home)
    res = cli("config", "set", "share.blocked_origins", "0123456789ABCDEF,fedcba9876543210")
    assert res.exit_code == 0, res.output
    config._cache.clear()
    assert config.load()["share"]["blocked_origins"] == ["0123456789abcdef", "fedcba9876543210"]
    assert "0123456789abcdef" in path.read_text(encoding="utf-8")
    assert cli("config", "set", "share.blocked_origins", "").exit_code == 0
    config._cache.clear()
    assert config.load()["share"]["blocked_origins"] == []
    path.write_text('[share]\nblocked_origins = ["0123456789ABCDEF"]\n', encoding="utf-8")  # by hand
    config._cache.clear()
    assert config.load()["share"]["blocked_origins"] == ["0123456789abcdef"]


@SETTINGS
@given(st.lists(st.text("0123456789abcdefABCDEF", min_size=16, max_size=16), max_size=4))
def test_any_sixteen_hex_digits_in_any_case_are_taken(home, origins):
    _config(home)
    written = config.set_value("share.blocked_origins", ",".join(origins))
    assert written == list(dict.fromkeys(o.lower() for o in origins))
    config._cache.clear()
    assert config.load()["share"]["blocked_origins"] == written


# ------------------------------------------------------------------------------ encodings

def test_a_byte_order_mark_is_read_past_and_kept_out_of_an_edit(home):
    path = _config(home)
    path.write_bytes(b"\xef\xbb\xbf# mine\n[recall]\nk = 3\n")
    shown = run_remem("config", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    assert shown.json()["recall"]["k"] == 3
    assert run_remem("config", "set", "recall.k", "4").returncode == 0
    assert path.read_text(encoding="utf-8") == "# mine\n[recall]\nk = 4\n"


def test_a_config_not_in_utf8_is_named_so_with_the_fix(home):
    path = _config(home)
    raw = "[llm]\n# café\nmodel = \"qwen\"\n".encode("latin-1")
    path.write_bytes(raw)
    for args in (("config", "show"), ("config", "set", "recall.k", "4")):
        res = run_remem(*args)
        assert res.returncode == 1
        [line] = res.stderr.strip().splitlines()
        assert "is not UTF-8 text (byte 0xe9 on line 2)" in line and "save it as UTF-8" in line
        assert "permissions" not in line
    assert path.read_bytes() == raw
    assert json.loads(run_remem("config", "show", "--json").stdout)["error"].count("UTF-8") >= 1
