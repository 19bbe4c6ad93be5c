"""`embed.model`: a model that cannot be loaded is one line naming the fix (never a traceback,
never the network), `remem doctor` names it, and hooks still fail open."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_remem

BUNDLED = ROOT / "remem" / "engine" / "model"
FIX = 'remem config set embed.model ""'
# Hugging Face online, but pointing nowhere: any attempt to reach the hub fails fast.
ONLINE_NOWHERE = {"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:9"}


def _one_line_naming_the_fix(stderr: str, ref: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("remem: embed.model "), stderr
    assert repr(ref) in lines[0] and FIX in lines[0], stderr


def _set_model(ref: str) -> None:
    from remem import config

    config.set_value("embed.model", ref)


def _hub_cache(tmp_path: Path, repo: str = "acme/tiny") -> Path:
    """A Hugging Face cache holding `repo` (the bundled model's files), as a download leaves it."""
    cache = tmp_path / "hf-cache"
    folder = cache / f"models--{repo.replace('/', '--')}"
    snapshot = folder / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        shutil.copy(BUNDLED / name, snapshot / name)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(snapshot.name)
    return cache


# ------------------------------------------------------------------------------ one line, the fix

@pytest.mark.parametrize("args", [("status",), ("remember", "hi"), ("recall", "docker")])
def test_a_missing_model_folder_is_one_line_naming_embed_model_and_the_fix(home, tmp_path, args):
    ref = str(tmp_path / "models" / "typo")
    _set_model(ref)
    res = run_remem(*args)
    assert res.returncode == 1
    _one_line_naming_the_fix(res.stderr, ref)
    assert "no such folder" in res.stderr


def test_a_folder_without_a_model_and_a_file_are_named_as_such(home, tmp_path):
    empty = tmp_path / "empty-model"
    empty.mkdir()
    _set_model(str(empty))
    res = run_remem("remember", "hi")
    assert res.returncode == 1
    _one_line_naming_the_fix(res.stderr, str(empty))
    assert "no model2vec model" in res.stderr
    _set_model(str(BUNDLED / "config.json"))
    res = run_remem("remember", "hi")
    assert res.returncode == 1 and "not a model2vec folder" in res.stderr


def test_a_hub_id_never_downloaded_fails_in_one_line_without_going_online(home, tmp_path):
    ref = "minishlab/potion-base-8M"
    _set_model(ref)
    env = {**ONLINE_NOWHERE, "HF_HUB_CACHE": str(tmp_path / "empty-hf-cache")}
    res = run_remem("remember", "hi", env=env)
    assert res.returncode == 1
    _one_line_naming_the_fix(res.stderr, ref)
    assert f"hf download {ref}" in res.stderr


def test_a_hub_id_that_is_not_one_is_named(home):
    _set_model("a/b/c")
    res = run_remem("status")
    assert res.returncode == 1
    _one_line_naming_the_fix(res.stderr, "a/b/c")


GUARDED = """
import json, socket, sys
tried = []
def connect(self, address):
    tried.append(repr(address))
    raise OSError("no network in this test")
socket.socket.connect = connect
socket.socket.connect_ex = connect
from remem.engine import embed
emb = embed.get_embedder(sys.argv[1])
vec = emb.encode_py("build the docker image")
print(json.dumps({"tried": tried, "space": emb.space, "dim": emb.dim, "len": len(vec)}))
"""


def test_a_downloaded_hub_model_loads_from_the_cache_and_never_touches_the_network(home, tmp_path):
    env = dict(os.environ, **ONLINE_NOWHERE, HF_HUB_CACHE=str(_hub_cache(tmp_path)))
    proc = subprocess.run([sys.executable, "-c", GUARDED, "acme/tiny"], capture_output=True, text=True,
                          env=env, cwd=str(ROOT), timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["tried"] == []  # no connection was even attempted
    assert out["space"] == "m2v:acme/tiny-256" and out["dim"] == out["len"] == 256
    assert proc.stderr == ""


def test_a_model2vec_folder_still_loads(home, tmp_path):
    from remem.engine import embed

    folder = tmp_path / "my-model"
    shutil.copytree(BUNDLED, folder)
    _set_model(str(folder))
    emb = embed.get_embedder()
    assert emb.dim == 256 and emb.space.startswith("m2v:my-model-256")
    res = run_remem("remember", "a note about docker", "--json")
    assert res.returncode == 0, res.stderr


def test_the_error_is_a_remem_error_and_leaves_logging_as_it_was(home, tmp_path):
    import logging

    from remem.engine import embed
    from remem.errors import RememError

    hub = logging.getLogger("huggingface_hub")
    level = hub.level
    with pytest.raises(RememError) as info:
        embed.get_embedder(str(tmp_path / "nothing-here"))
    assert "\n" not in str(info.value) and info.value.__cause__ is None
    assert isinstance(info.value, embed.EmbedModelError) and info.value.fix in str(info.value)
    assert hub.level == level


# ------------------------------------------------------------------------------ doctor

def test_doctor_names_a_model_that_cannot_be_loaded_and_its_fix(cli, home, tmp_path):
    def embed_problems():
        res = cli("doctor", "--json", "--no-run")
        return [p for p in json.loads(res.stdout)["problems"] if "embed.model" in p["problem"]]

    assert embed_problems() == []  # the bundled model
    ref = str(tmp_path / "models" / "typo")
    _set_model(ref)
    found = embed_problems()
    assert len(found) == 1
    assert repr(ref) in found[0]["problem"] and "cannot be loaded" in found[0]["problem"]
    assert found[0]["fix"].startswith(FIX)
    _set_model("")
    assert embed_problems() == []


# ------------------------------------------------------------------------------ hooks fail open

@pytest.mark.parametrize("ref", ["missing-folder", "minishlab/potion-base-8M"])
def test_a_hook_with_a_bad_model_exits_zero_prints_nothing_and_notes_one_line(store, home, tmp_path, ref):
    from remem.engine import lessons as lessons_mod
    from remem.engine.embed import get_embedder, to_blob
    from remem.engine.prime import is_held_out

    emb = get_embedder("")
    text = "The docker build needs --platform linux/amd64 on this Mac"
    lessons_mod.add_lesson(store, text, "error", space=emb.space, embedding=to_blob(emb.encode([text])[0]))
    if ref == "missing-folder":
        ref = str(tmp_path / "models" / "typo")
    _set_model(ref)
    session = next(f"s-{i}" for i in range(1000) if not is_held_out(f"s-{i}"))
    payload = {"prompt": "build the docker image for the api service", "session_id": session,
               "hook_event_name": "UserPromptSubmit"}
    env = {**ONLINE_NOWHERE, "HF_HUB_CACHE": str(tmp_path / "empty-hf-cache")}
    res = run_remem("hook", "prompt", input=json.dumps(payload), env=env)
    assert res.returncode == 0
    assert res.stdout == ""
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().count("\n") == 0 and "embed.model" in res.stderr, res.stderr
