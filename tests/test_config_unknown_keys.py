"""A key or section config.toml holds that remem does not know (a misspelling): nothing uses it,
so `remem config show` leaves it out, commands name it in one warning line on stderr (with the
key it most likely meant), a hook says nothing of it (its stdout stays as it was), and `remem doctor` lists it with
the fix (docs/CONFIG.md)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import config, config_unknown
from tests.conftest import run_remem
from tests.test_hooks import run_hook, seed, session_in_arm

MISSPELT = "[prime]\nmin_relevence = 0.9\n[recal]\nk = 9\n"
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _write(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    config._cache.clear()
    return path


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("remem: warning: ")]


def test_config_show_lists_only_known_keys_and_warns_once_with_the_key_meant(home):
    _write(home, MISSPELT)
    shown = run_remem("config", "show")
    assert shown.returncode == 0, shown.stderr
    assert "min_relevence" not in shown.stdout and "[recal]" not in shown.stdout
    assert "min_relevance = 0.65" in shown.stdout  # the misspelt value is not taken for it
    [warning] = _warnings(shown.stderr)
    assert shown.stderr.strip() == warning
    assert "prime.min_relevence (did you mean prime.min_relevance?)" in warning
    assert "[recal] (did you mean [recall]?)" in warning and "remem doctor" in warning

    as_json = run_remem("config", "show", "--json")
    cfg = as_json.json()
    assert set(cfg) == set(config.DEFAULTS)
    assert "min_relevence" not in cfg["prime"] and cfg["recall"]["k"] == 5
    assert len(_warnings(as_json.stderr)) == 1


def test_a_command_that_reads_the_config_many_times_warns_once(home, capsys):
    _write(home, MISSPELT)
    config._warned.clear()
    for _ in range(3):
        config._cache.clear()
        config.load()
    config.set_value("recall.k", 7)  # an edit: the misspelt lines stay as they were
    assert config.load()["recall"]["k"] == 7
    assert len(_warnings(capsys.readouterr().err)) == 1
    assert "min_relevence = 0.9" in (home / "config.toml").read_text(encoding="utf-8")


def test_doctor_lists_them_with_a_fix_that_works(home):
    from remem.engine import doctor

    path = _write(home, "k = 3\n" + MISSPELT + "[nothing_like_it]\nx = 1\n")
    found = [p for p in doctor.diagnose(run_hooks=False)["problems"] if "does not know" in p["problem"]]
    assert len(found) == 1, found
    problem, fix = found[0]["problem"], found[0]["fix"]
    for name in ("k (did you mean recall.k?)", "prime.min_relevence (did you mean prime.min_relevance?)",
                 "[recal] (did you mean [recall]?)", "[nothing_like_it]"):
        assert name in problem
    assert "`remem config set prime.min_relevance 0.9`, then delete `min_relevence` under [prime]" in fix
    assert "`remem config set recall.k 9`, then delete the [recal] section" in fix
    assert "delete the [nothing_like_it] section" in fix and str(path) in fix

    # Following the fix: the key meant is set, the lines are gone, and doctor says nothing more.
    for command in ("prime.min_relevance 0.9", "recall.k 9"):
        assert run_remem("config", "set", *shlex.split(command)).returncode == 0
    text = path.read_text(encoding="utf-8").replace("k = 3\n", "", 1).replace("min_relevence = 0.9\n", "")
    text = text.replace("[recal]\nk = 9\n", "").replace("[nothing_like_it]\nx = 1\n", "")
    path.write_text(text, encoding="utf-8")
    config._cache.clear()
    assert config_unknown.unknown_problem() is None
    assert config.load()["prime"]["min_relevance"] == 0.9 and config.load()["recall"]["k"] == 9
    assert not _warnings(run_remem("config", "show").stderr)


def test_a_hook_still_works_and_leaves_the_misspelt_key_to_doctor(store, monkeypatch):
    from remem.engine import doctor
    from remem.engine.doctor import failed_open

    seed(store)
    config.set_value("prime.timeout_ms", 30000)
    monkeypatch.setenv("REMEM_HOOK_CAP_MS", "60000")
    prompt = {"prompt": "build the docker image for the api", "cwd": "/home/dev/shop"}
    clean = run_hook("prompt", {**prompt, "session_id": session_in_arm(False, "clean")})
    assert "docker build needs --platform" in clean.stdout, clean.stderr
    path = config.paths.config_path()
    path.write_text(path.read_text(encoding="utf-8") + "min_relevence = 0.9\n", encoding="utf-8")

    res = run_hook("prompt", {**prompt, "session_id": session_in_arm(False, "misspelt")})
    assert res.returncode == 0
    assert "docker build needs --platform" in res.stdout and "min_relevence" not in res.stdout
    json.loads(res.stdout)  # the agent's JSON, untouched
    # A hook runs on every prompt and tool call: it says nothing of the key, doctor does.
    assert _warnings(res.stderr) == [] and "min_relevence" not in res.stderr
    assert failed_open(res.stderr) is None
    assert any("min_relevence" in p["problem"] for p in doctor.diagnose(run_hooks=False)["problems"])


def test_the_key_meant_is_guessed_within_and_across_sections():
    unknown = config_unknown.unknown_settings({"k": 9, "recal": {"k": 9}, "prime": {"min_relevence": 0.9, "k": 2},
                                       "share": {"blocked_origin": []}, "zzzzzz": {"q": 1}})
    guesses = {item["name"]: item["guess"] for item in unknown}
    assert guesses == {"k": "recall.k", "recal": "recall", "prime.min_relevence": "prime.min_relevance",
                       "prime.k": "recall.k", "share.blocked_origin": "share.blocked_origins",
                       "zzzzzz": None}


identifier = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)


@SETTINGS
@given(section=st.sampled_from([s for s, keys in config.DEFAULTS.items() if isinstance(keys, dict)]),
       key=identifier, value=st.one_of(st.integers(-10, 10), st.booleans(), st.text(max_size=10)))
def test_any_unknown_key_loads_with_the_defaults_shown_and_is_named_once(home, capsys, section, key, value):
    import tomlkit

    if key in config.DEFAULTS[section]:
        return
    _write(home, tomlkit.dumps({section: {key: value}}))
    config._warned.clear()
    cfg = config.load()
    assert cfg == config.load() and config_unknown.known(cfg) == config.DEFAULTS  # nothing else taken for a setting
    [warning] = _warnings(capsys.readouterr().err)
    assert f"{section}.{key}" in warning
    assert [item["name"] for item in config_unknown.unknown_settings()] == [f"{section}.{key}"]
