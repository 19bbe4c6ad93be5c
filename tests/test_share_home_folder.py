"""The share folder is never remem's own home or identity folder, nor one holding or inside
them: a sync tool carrying it would carry the private key and the memory to every machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.engine import share
from remem.engine.share_files import is_origin


@pytest.mark.parametrize("where", ["identity", "", "inbox-share", ".."])
def test_sync_refuses_a_folder_at_in_or_around_remems_home(remem_cli, home: Path, where):
    assert remem_cli("share", "keys").returncode == 0  # the identity is there
    chosen = os.path.normpath(home / where) if where else str(home)
    res = remem_cli("share", "sync", "--folder", chosen)
    assert res.returncode == 1
    line = res.stderr.strip()
    assert line.count("\n") == 0 and "--folder" in line and "private key" in line, line
    for place in (home, home / "identity"):  # no origin folder written there
        assert not any(is_origin(name) for name in os.listdir(place)), os.listdir(place)


def test_a_folder_holding_the_home_is_told_what_to_pick_not_to_pick_one_outside_it(remem_cli, tmp_path):
    """~/Dropbox holding remem's home ~/Dropbox/.remem already is outside the home: the advice
    names what the folder must not be."""
    dropbox = tmp_path / "Dropbox"
    dropbox.mkdir()
    env = {"REMEM_HOME": str(dropbox / ".remem")}
    assert remem_cli("share", "keys", env=env).returncode == 0
    res = remem_cli("share", "sync", "--folder", str(dropbox), env=env)
    assert res.returncode == 1
    line = res.stderr.strip()
    assert line.count("\n") == 0 and "holds remem's home" in line and "one outside" not in line, line
    assert line.endswith("; pass another --folder, a folder that neither is, lies inside, nor holds "
                         "remem's home (or its identity folder)"), line


def test_a_link_to_the_identity_folder_is_refused_too(remem_cli, home: Path, tmp_path):
    assert remem_cli("share", "keys").returncode == 0
    link = tmp_path / "looks-harmless"
    link.symlink_to(home / "identity")
    res = remem_cli("share", "export", "--folder", str(link))
    assert res.returncode == 1 and "is remem's identity folder" in res.stderr
    assert sorted(os.listdir(home / "identity")) == ["ed25519.key", "ed25519.pub"]


def test_the_configured_folder_names_the_setting(remem_cli, home: Path):
    refused = remem_cli("config", "set", "share.folder", str(home))  # refused where it is set
    assert refused.returncode == 1 and "private key" in refused.stderr
    home.mkdir(exist_ok=True)  # and named at use when config.toml was written by hand
    (home / "config.toml").write_text(f'[share]\nfolder = "{home}"\n', encoding="utf-8")
    res = remem_cli("share", "sync")
    assert res.returncode == 1
    assert "is remem's home" in res.stderr and "share.folder" in res.stderr


def test_a_folder_beside_the_home_is_fine(home: Path, tmp_path):
    beside = tmp_path / "share"
    assert share.resolve_folder(beside, create=True) == beside.resolve()
