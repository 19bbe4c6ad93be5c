"""What a hook loads on every prompt and tool call: the config's parse and the tokenizer's
vocabulary come from the cache folder, and neither cache is trusted past what it was made of."""

from __future__ import annotations

import json
import os

import pytest

from tests.test_hooks import run_hook, seed, session_in_arm


def _prompt(session: str) -> dict:
    return {"prompt": "build the docker image for the api", "cwd": "/home/dev/shop",
            "session_id": session_in_arm(False, session)}


def test_a_hook_reads_an_unchanged_config_without_importing_tomllib(store, tmp_path, monkeypatch):
    from remem import config

    seed(store)
    config.set_value("prime.timeout_ms", 30000)  # a config.toml, as `remem config set` leaves it
    monkeypatch.setenv("REMEM_HOOK_CAP_MS", "60000")  # a loaded machine: not the cap either (config.HOOK_CAP_ENV)
    first = run_hook("prompt", _prompt("first"))
    assert "docker build needs --platform" in first.stdout, first.stderr

    dump = tmp_path / "modules.txt"
    again = run_hook("prompt", _prompt("again"), env={"REMEM_HOOK_MODULES_OUT": str(dump)})
    assert "docker build needs --platform" in again.stdout, again.stderr
    assert "tomllib" not in dump.read_text().split()


def test_an_edited_config_is_read_again_whatever_its_size_and_time(home):
    from remem import config, paths
    from remem.errors import ConfigError

    config.set_value("prime.max_lessons", 3)
    path = paths.config_path()
    assert config.load()["prime"]["max_lessons"] == 3  # parsed, and the parse kept
    stamp = path.stat()

    def rewrite(text: str) -> None:
        # The same length and the same modification time: only the words differ.
        assert len(text) == stamp.st_size
        path.write_text(text, encoding="utf-8")
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        config._cache.clear()  # this process's cache: the one on disk is what is tested

    before = path.read_text(encoding="utf-8")
    rewrite(before.replace("max_lessons = 3", "max_lessons = 4"))
    assert config.load()["prime"]["max_lessons"] == 4
    rewrite(before.replace("max_lessons = 3", "max_lessons = 0"))
    with pytest.raises(ConfigError, match="prime.max_lessons"):
        config.load()


def test_the_kept_parse_of_a_config_is_no_more_readable_than_the_config(home):
    """It holds what the config does (an API key): readable by its owner alone."""
    from remem import config, paths

    path = paths.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[llm]\napi_key = "sk-kept-secret"\n', encoding="utf-8")
    path.chmod(0o600)
    config.load()
    kept = paths.vectors_dir() / config.PARSED_CACHE
    assert "sk-kept-secret" in kept.read_text(encoding="utf-8")
    assert kept.stat().st_mode & 0o077 == 0


def test_a_parse_that_cannot_be_kept_leaves_no_file_behind(home):
    from remem import config, paths

    config.set_value("prime.max_lessons", 3)
    kept = paths.vectors_dir() / config.PARSED_CACHE
    kept.unlink(missing_ok=True)
    kept.mkdir(parents=True)  # in its place: every write fails
    for _ in range(3):
        config._cache.clear()
        assert config.load()["prime"]["max_lessons"] == 3
    assert [p.name for p in kept.parent.iterdir() if config.PARSED_CACHE in p.name] == [kept.name]


def test_a_config_json_cannot_hold_is_parsed_every_time(home):
    from remem import config, paths

    path = paths.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("when = 2026-05-01T10:00:00Z\n[prime]\nmax_lessons = 2\n", encoding="utf-8")
    assert config.load()["prime"]["max_lessons"] == 2
    config._cache.clear()
    loaded = config.load()
    assert loaded["when"].year == 2026 and loaded["prime"]["max_lessons"] == 2


def test_a_damaged_tokenizer_cache_of_the_right_size_is_rebuilt(home):
    from tokenizers import Tokenizer

    from remem import paths
    from remem.engine.embed import MODEL_DIR
    from remem.engine.wordpiece import WordPiece

    tokenizer = MODEL_DIR / "tokenizer.json"
    WordPiece.load(tokenizer, paths.vectors_dir())
    cached = next(paths.vectors_dir().glob("wordpiece-*"))
    whole = cached.read_bytes()
    # One letter of one token changed: the file keeps its length and its line count.
    at = whole.index(b"\nimage\t" if b"\nimage\t" in whole else b"\nimage\n") + len(b"\nimag")
    cached.write_bytes(whole[:at] + b"x" + whole[at + 1:])  # "imagx"

    again = WordPiece.load(tokenizer, paths.vectors_dir())
    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.no_truncation()
    text = "build the docker image"
    assert again.encode(text) == tok.encode(text, add_special_tokens=False).ids
    assert cached.read_bytes() == whole  # written again, whole


def test_the_tokenizer_cache_looks_up_every_token_as_the_vocabulary_has_it(home):
    from remem import paths
    from remem.engine.embed import MODEL_DIR
    from remem.engine.wordpiece import WordPiece

    tokenizer = MODEL_DIR / "tokenizer.json"
    vocab = json.loads(tokenizer.read_text(encoding="utf-8"))["model"]["vocab"]
    WordPiece.load(tokenizer, paths.vectors_dir())
    cached = WordPiece.load(tokenizer, paths.vectors_dir())
    assert cached is not None
    assert all(cached.lookup(token) == i for token, i in vocab.items())
    assert cached.lookup("no such token here") is None and cached.lookup("dock\ter") is None
    assert cached.vocab == vocab
