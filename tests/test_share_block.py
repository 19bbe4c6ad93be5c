"""`remem share block ORIGIN`: an origin whose folder receive never reads (config
share.blocked_origins), so someone who floods the share folder stops reaching the memory; its
lessons still waiting are rejected, and `--undo` reads it again. Rules in docs/SHARING.md."""

from __future__ import annotations

import json

import pytest

from remem import config
from remem.engine import lessons, share
from remem.engine.share_sign import ShareError
from remem.errors import ConfigError
from tests.test_share import Mem, add, folder, mems  # noqa: F401  (fixtures)

FLOOD = [f"Check the cache step {i} before the deploy run" for i in range(5)]
LATER = "Rebuild the search index after every schema change"


def _cfg(blocked: list[str]) -> dict:
    cfg = config.load()
    cfg["share"]["blocked_origins"] = list(blocked)
    return cfg


class Saved:
    """What block() asks to write to share.blocked_origins (the CLI writes config.toml)."""

    def __init__(self) -> None:
        self.lists: list[list[str]] = []

    def __call__(self, listed: list[str]) -> None:
        self.lists.append(list(listed))


def _flooded(mems, folder) -> tuple[Mem, Mem]:
    """A has taken in the flood M sent: five candidates waiting."""
    a, m = mems["A"], mems["M"]
    for text in FLOOD:
        add(m, text)
    m.sync(folder)
    first = share.sync(a.store, folder, identity_dir=a.idir, cfg=_cfg([]))
    assert first["summary"]["received"] == len(FLOOD)
    return a, m


def _waiting(mem: Mem) -> list[str]:
    return [r["origin"] for r in lessons.list_lessons(mem.store, statuses=("candidate", "quarantined"))]


def test_a_blocked_origin_is_not_read_and_its_waiting_lessons_are_rejected(mems, folder):
    a, m = _flooded(mems, folder)
    saved = Saved()
    rep = share.block(a.store, m.origin, save=saved, identity_dir=a.idir, cfg=_cfg([]))
    assert saved.lists == [[m.origin]]
    assert rep["blocked"] and len(rep["rejected"]) == len(FLOOD)
    assert _waiting(a) == []
    # What it sends later, and anything it plants in its folder, is never even read.
    add(m, LATER)
    m.sync(folder)
    (folder / m.origin / "lessons" / "junk.json").write_text("{not json", encoding="utf-8")
    out = share.sync(a.store, folder, identity_dir=a.idir, cfg=_cfg(saved.lists[-1]))
    assert out["receive"]["blocked"] == [m.origin]
    assert out["summary"]["blocked"] == 1 and out["summary"]["received"] == 0
    assert out["receive"]["rejected"] == [] and m.origin not in out["receive"]["origins_seen"]
    assert a.by_hash(LATER) is None and _waiting(a) == []


def test_a_blocked_origin_never_seen_before_has_no_key_pinned(mems, folder):
    a, b, m = mems["A"], mems["B"], mems["M"]
    add(m, LATER)
    m.sync(folder)
    share.sync(b.store, folder, identity_dir=b.idir, cfg=_cfg([]))
    # B blocks M; A, whose config blocks it too, has never synced: M's key is not pinned there.
    share.block(b.store, m.origin, save=Saved(), identity_dir=b.idir, cfg=_cfg([]))
    out = share.receive(a.store, folder, identity_dir=a.idir, cfg=_cfg([m.origin]))
    assert out["blocked"] == [m.origin]
    assert a.store.one("SELECT origin FROM peers WHERE origin = ?", (m.origin,)) is None


def test_unblocking_lets_its_lessons_arrive_again_at_the_next_sync(mems, folder):
    a, m = _flooded(mems, folder)
    saved = Saved()
    share.block(a.store, m.origin, save=saved, identity_dir=a.idir, cfg=_cfg([]))
    add(m, LATER)
    m.sync(folder)
    assert share.sync(a.store, folder, identity_dir=a.idir, cfg=_cfg([m.origin]))["summary"]["received"] == 0
    rep = share.block(a.store, m.origin, save=saved, undo=True, identity_dir=a.idir, cfg=_cfg([m.origin]))
    assert rep == {"origin": m.origin, "blocked": False, "changed": True, "rejected": [], "seen": True}
    assert saved.lists[-1] == []
    out = share.sync(a.store, folder, identity_dir=a.idir, cfg=_cfg(saved.lists[-1]))
    assert out["summary"]["blocked"] == 0 and out["summary"]["received"] == 1
    assert a.by_hash(LATER)["status"] == "candidate"
    # What the block rejected stays rejected.
    assert {a.by_hash(t)["status"] for t in FLOOD} == {"vetoed"}


def test_blocking_own_origin_or_a_prefix_is_refused_and_nothing_is_written(mems, folder):
    a, m = _flooded(mems, folder)
    saved = Saved()
    with pytest.raises(ShareError, match="own origin"):
        share.block(a.store, a.origin, save=saved, identity_dir=a.idir, cfg=_cfg([]))
    with pytest.raises(ShareError, match="full 16-digit origin id"):
        share.block(a.store, m.origin[:8], save=saved, identity_dir=a.idir, cfg=_cfg([]))
    with pytest.raises(ShareError, match="is not blocked"):
        share.block(a.store, m.origin, save=saved, undo=True, identity_dir=a.idir, cfg=_cfg([]))
    assert saved.lists == [] and len(_waiting(a)) == len(FLOOD)


def test_the_config_key_takes_full_origin_ids_only():
    config.set_value("share.blocked_origins", "9fdc95440e981985, 3f9a0c1d2e4b5a69")
    assert config.get("share.blocked_origins", config.load()) == ["9fdc95440e981985", "3f9a0c1d2e4b5a69"]
    for bad in (["3f9a"], ["9FDC95440E98198"], [7]):
        with pytest.raises(ConfigError, match="share.blocked_origins must be a list of origin ids"):
            config.set_value("share.blocked_origins", bad)
    config.set_value("share.blocked_origins", ["9FDC95440E981985"])  # either case, kept in lower
    assert config.load()["share"]["blocked_origins"] == ["9fdc95440e981985"]
    config.set_value("share.blocked_origins", "")
    assert config.load()["share"]["blocked_origins"] == []


def test_block_from_the_cli_writes_the_config_and_sync_skips_the_origin(cli, mems, folder):
    flood = mems["M"]
    for text in FLOOD:
        add(flood, text)
    flood.sync(folder)
    assert json.loads(cli("share", "sync", "--folder", str(folder), "--json").stdout)["summary"]["received"] == 5

    res = cli("share", "block", flood.origin, "--json")
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["rejected"]) == len(FLOOD)
    assert config.load()["share"]["blocked_origins"] == [flood.origin]
    add(flood, LATER)
    share.sync(flood.store, folder, identity_dir=flood.idir, cfg=_cfg([]))
    out = cli("share", "sync", "--folder", str(folder))
    assert out.exit_code == 0 and "blocked origins skipped 1" in out.output
    assert json.loads(cli("share", "candidates", "--json").stdout) == []

    again = cli("share", "block", flood.origin)
    assert again.exit_code == 0 and "already blocked" in again.output
    undo = cli("share", "block", flood.origin, "--undo")
    assert undo.exit_code == 0 and "no longer blocked" in undo.output
    assert config.load()["share"]["blocked_origins"] == []
    back = json.loads(cli("share", "sync", "--folder", str(folder), "--json").stdout)
    assert back["summary"]["received"] == 1 and back["summary"]["blocked"] == 0


def test_block_from_the_cli_refuses_own_origin_and_a_prefix_in_one_line(cli, mems, folder):
    flood = mems["M"]
    add(flood, LATER)
    flood.sync(folder)
    cli("share", "sync", "--folder", str(folder))
    ours = json.loads(cli("share", "keys", "--json").stdout)["origin"]
    for given, said in ((ours, "own origin"), (flood.origin[:6], "full 16-digit origin id")):
        res = cli("share", "block", given)
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert res.exit_code == 1 and len(lines) == 1 and said in lines[0], res.output
    assert config.load()["share"]["blocked_origins"] == []
