"""The query a lesson choice is logged with (`primes.query`: a hook's prompt, a proxied
question) keeps no secret, and a prompt with nothing like one costs the hook no redaction."""

from __future__ import annotations

import pytest

from tests.test_hooks import run_hook, seed, session_in_arm

API_KEY = "sk-proj-Qw3rTy7UiOp9AsDfGh2JkL5zXc"
API_KEY_WORD = "Qw3rTy7UiOp9AsDfGh2JkL5zXc"

# One secret of each kind redaction knows (redaction.SECRETS_RE and SECRETS_RE_I), in the order they are listed.
SAMPLES = [
    "AKIAIOSFODNN7EXAMPLE",
    API_KEY,
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "glpat-xxxxXXXXyyyyYYYYzzzz",
    "xoxb-123456789012-abcdefghij",
    "AIzaSyA1234567890abcdefghijklmnopqrstu",
    "hf_abcdefghijklmnopqrstuvwxyzABCDEF1234",
    "npm_abcdefghijklmnopqrstuvwxyzABCDEF1234",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "https://deploy:hunter2hunter2@git.example.com/repo.git",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "PASSWORD=Zq8vLm2RxPelican",
    "the staging db password is hunter2-Xq9!",
    "psql --password Zq8vLm2RxPelican",
    "curl -u deploy:Zq8vLm2Rx https://api.example.com",
    "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
    "https://9f8e7d6c5b4a39281706f5e4d3c2b1a0@o123.ingest.sentry.io/456",
    "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "mysql -u root -pZq8vLm2Rx",
    "docker login -u me -p Zq8vLm2RxPelican",
    "redis-cli -a Zq8vLm2RxPelican ping",
    "RAILS_MASTER_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
]


def test_every_kind_of_secret_redaction_knows_passes_the_quick_test_before_it():
    """prime keeps a query as it is when the quick test finds nothing: a kind of secret added
    to the patterns without a sample here fails this test, which asks to check the quick test."""
    from remem.engine import prime
    from remem.engine.redaction import redact_secrets
    from remem.engine.redaction import SECRETS_RE, SECRETS_RE_I

    patterns = [pattern for pattern, _ in (*SECRETS_RE, *SECRETS_RE_I)]
    for pattern in patterns:
        assert any(pattern.search(sample) for sample in SAMPLES), f"no sample of {pattern.pattern!r}"
    for sample in SAMPLES:
        assert redact_secrets(sample) != sample, sample
        assert prime._MAY_HOLD_SECRET.search(sample), sample
        assert prime.stored_query(f"deploy it with {sample} please") != f"deploy it with {sample} please"


def test_a_query_with_a_key_is_logged_redacted(store):
    from remem import config
    from remem.engine import prime

    seed(store)
    got = prime.select(store, f"the docker build fails on this Mac, my key is {API_KEY}", event="prompt",
                       session_id=session_in_arm(False), cfg=config.load())
    assert got["lessons"]
    (query,) = [r["query"] for r in store.rows("SELECT query FROM primes")]
    assert query == "the docker build fails on this Mac, my key is [secret]"


def test_a_key_the_cap_cuts_leaves_none_of_it():
    from remem.engine import prime

    for at in range(prime.QUERY_CAP - 40, prime.QUERY_CAP + 5):
        text = "x " * (at // 2) + " " * (at % 2) + API_KEY + " and more words after it"
        kept = prime.stored_query(text)
        assert len(kept) <= prime.QUERY_CAP
        assert not any(API_KEY_WORD[i:i + 8] in kept for i in range(len(API_KEY_WORD) - 7)), (at, kept[-40:])


def test_a_query_without_anything_like_a_secret_is_kept_as_it_came():
    from remem.engine import prime

    text = "why does the docker build fail on this Mac? " * 20
    assert prime.stored_query(text) == text[:prime.QUERY_CAP]


@pytest.mark.parametrize("prompt, loads", [
    ("build the docker image on this Mac", False),
    (f"build the docker image on this Mac with {API_KEY}", True),
])
def test_a_hook_loads_redaction_only_for_a_prompt_that_may_hold_a_secret(store, tmp_path, prompt, loads):
    from remem import config

    seed(store)
    config.set_value("prime.timeout_ms", 30000)
    dump = tmp_path / "modules.txt"
    res = run_hook("prompt", {"prompt": prompt, "cwd": "/tmp", "session_id": session_in_arm(False, "q")},
                   env={"REMEM_HOOK_MODULES_OUT": str(dump)})
    assert "docker build needs --platform" in res.stdout, res.stderr
    modules = dump.read_text().split()
    assert ("remem.engine.redaction" in modules) == loads and "remem.engine.lesson_text" not in modules
    (query,) = [r["query"] for r in store.rows("SELECT query FROM primes")]
    assert API_KEY_WORD not in query
