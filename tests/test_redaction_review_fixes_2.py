"""Redaction, read a third time: a Dockerfile's `ENV NAME value` only as a Dockerfile writes it
(a sentence saying "ENV NPM_TOKEN because …" keeps its words); a camel-case secret's name
(`webhookSecret`, `stripeApiKey`) not a Kubernetes Secret's name or a flag (`existingSecret:
pg-credentials`, `useApiKey: enabled`); and a node's private key in hex (`NODE_KEY=<64 hex>`)
redacted, as hex of a key's size is under any name but a digest's or an identifier's."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import share_safety
from remem.engine.redaction import SECRET, redact_secrets

NODE_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"


def _secret_reasons(text: str) -> list[str]:
    return [why for why in share_safety.incoming(text) if why.startswith("secret")]


# --------------------------------------------------------------------------- ENV in a sentence

PROSE = [
    "Use ARG instead of ENV NPM_TOKEN because it leaks into the image layers",
    "never put ENV DB_PASSWORD inside the Dockerfile",
    "ENV DB_PASSWORD inside the Dockerfile is a leak",
    "ENV NPM_TOKEN leaks.",
    "the lesson: ENV API_TOKEN belongs in a secret mount instead",
]
DOCKERFILE = [
    ("FROM node:20\nENV DB_PASSWORD supersecret\nRUN make", "FROM node:20\nENV DB_PASSWORD [secret]\nRUN make"),
    ("  ENV DB_PASSWORD hunter2hunter2", f"  ENV DB_PASSWORD {SECRET}"),
    ("ENV API_TOKEN Zq8vLm2Rx-build", f"ENV API_TOKEN {SECRET}"),
    ('ENV API_TOKEN "supersecret" here', f'ENV API_TOKEN "{SECRET}" here'),
    ("ENV NPM_TOKEN SuperSecretTokenValue", f"ENV NPM_TOKEN {SECRET}"),
    ("Use ENV NPM_TOKEN=abc123def in CI", f"Use ENV NPM_TOKEN={SECRET} in CI"),  # `=`: as before
]


@pytest.mark.parametrize("text", PROSE)
def test_words_after_env_and_a_name_in_a_sentence_stay_and_a_dockerfile_line_still_goes(text):
    assert redact_secrets(text) == text
    assert not _secret_reasons(text)
    for line, kept in DOCKERFILE:  # written as a Dockerfile writes it: a value
        assert redact_secrets(line) == kept
        assert redact_secrets(kept) == kept


_WORD = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)
_ENV_NAME = st.sampled_from(["NPM_TOKEN", "DB_PASSWORD", "API_TOKEN", "GITHUB_TOKEN", "PGPASSWORD", "APP_SECRET"])


@settings(max_examples=300, deadline=None)
@given(before=st.lists(_WORD, min_size=1, max_size=6), name=_ENV_NAME, after=st.lists(_WORD, min_size=1, max_size=8),
       end=st.sampled_from(["", ".", "!"]), indent=st.sampled_from(["", "  ", "\t"]),
       value=st.from_regex(r"[a-z]{3,8}[0-9][A-Za-z0-9]{2,10}", fullmatch=True),
       rest=st.sampled_from(["", "\nRUN make", " && echo ok"]))
def test_any_sentence_naming_an_env_line_keeps_its_words_and_any_env_line_with_a_digit_goes(
        before, name, after, end, indent, value, rest):
    """Words of a sentence before `ENV NAME` and after it: nothing there is a value. A line of
    a Dockerfile, `ENV NAME` and a value with a digit in it: that value goes."""
    text = " ".join([*before, "ENV", name, *after]) + end
    assert redact_secrets(text) == text
    line = f"FROM python:3.12\n{indent}ENV {name} {value}{rest}"
    assert redact_secrets(line) == f"FROM python:3.12\n{indent}ENV {name} {SECRET}{rest}"


def test_remember_keeps_the_sentence_about_env(remem_cli):
    said = "Use ARG instead of ENV NPM_TOKEN because it leaks into the image layers"
    res = remem_cli("remember", said, "--json")
    assert res.returncode == 0, res.stderr
    assert said in json.dumps(res.json())


# --------------------------------------------------------------------------- camel-case names

REFERENCES = [
    "helm values: existingSecret: pg-credentials",
    "tlsSecret: my-tls-cert",
    "sealedSecret: sealed-secret-name",
    "useApiKey: enabled",
    "hasAccessKey: yes-please",
    "existingSecret: pg-credentials-v2",
    'externalSecret: "vault-db-creds"',
    "dbSecret: postgres-credentials",
    "requireApiKey: Always",
]
CAMEL_SECRETS = [
    (f'"SecretAccessKey": "{AWS_SECRET}"', '"SecretAccessKey": "[secret]"'),
    ('"SessionToken": "FwoGZXIvYXdzEBYaDHqa0AP1"', '"SessionToken": "[secret]"'),
    ('webhookSecret: "whsec_Zq8vLm2Rx"', 'webhookSecret: "[secret]"'),
    ("stripeApiKey: Xk29fLmQ7vPz3RwT", "stripeApiKey: [secret]"),
    ("appSecret: OpenSesame", "appSecret: [secret]"),
    ("jwtSecret: my-jwt-s3cret", "jwtSecret: [secret]"),
]


@pytest.mark.parametrize("text", REFERENCES)
def test_a_secret_objects_name_or_a_flag_under_a_camel_case_name_stays_and_a_secret_still_goes(text):
    assert redact_secrets(text) == text
    assert not _secret_reasons(text)
    for said, kept in CAMEL_SECRETS:
        assert redact_secrets(said) == kept


_SETTING_NAME = st.sampled_from(["existingSecret", "tlsSecret", "sealedSecret", "externalSecret", "useApiKey",
                                 "hasAccessKey", "enableApiKey", "requireApiKey", "showSecret"])
_K8S_NAME = st.lists(st.sampled_from(["pg", "postgres", "credentials", "creds", "tls", "cert", "db", "vault", "app",
                                       "secret", "prod", "staging", "v2", "eu1", "redis", "auth"]),
                     min_size=1, max_size=4).map("-".join)
_CAMEL_SECRET = st.sampled_from(["webhookSecret", "appSecret", "stripeApiKey", "SecretAccessKey", "SessionToken",
                                 "openaiApiKey", "cookieSecret"])
_GENERATED = st.lists(st.sampled_from("abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"),
                      min_size=20, max_size=40).map("".join).filter(lambda v: any(c.isdigit() for c in v))
_FORM = st.sampled_from(["{n}: {v}", '"{n}": "{v}"', "{n}={v}"])


@settings(max_examples=300, deadline=None)
@given(setting=_SETTING_NAME, name=_K8S_NAME, form=_FORM, secret_name=_CAMEL_SECRET, value=_GENERATED)
def test_any_kubernetes_name_under_a_reference_stays_and_any_generated_value_under_a_secret_name_goes(
        setting, name, form, secret_name, value):
    text = form.format(n=setting, v=name)
    assert redact_secrets(text) == text
    assert redact_secrets(form.format(n=secret_name, v=value)) == form.format(n=secret_name, v=SECRET)


# --------------------------------------------------------------------------- a node's key in hex

KEPT_HEX = [
    f"ROW_KEY={NODE_KEY[:32]}",            # an Azure table's row key: a GUID without its dashes
    f"CACHE_KEY={NODE_KEY}",
    f"etag_key: {NODE_KEY}",
    f"file_key: v1-{NODE_KEY}",            # among words: a name built from a hash
    f"FILE_KEY={NODE_KEY[:40]}",           # a git commit's length
]


@pytest.mark.parametrize("text, kept", [
    (f"NODE_KEY={NODE_KEY}", "NODE_KEY=[secret]"),
    (f"node_key: {NODE_KEY}", "node_key: [secret]"),
    (f"--node-key={NODE_KEY}", "--node-key=[secret]"),
    (f"FILE_KEY={NODE_KEY}", "FILE_KEY=[secret]"),
    (f"message_key: {NODE_KEY[:32]}", "message_key: [secret]"),
    (f"NODE_CACHE_KEY={NODE_KEY}", "NODE_CACHE_KEY=[secret]"),
])
def test_a_private_key_in_hex_under_a_node_or_file_name_goes_and_a_digest_stays(text, kept):
    assert redact_secrets(text) == kept
    assert _secret_reasons(text)
    for digest in KEPT_HEX:
        assert redact_secrets(digest) == digest


_KEY_HOLDER = st.sampled_from(["NODE_KEY", "node_key", "nodeKey", "PEER_KEY", "VALIDATOR_KEY", "wallet_key",
                               "FILE_KEY", "messageKey", "REQUEST_KEY", "EVENT_KEY", "JOB_KEY", "HOST_KEY"])


@settings(max_examples=300, deadline=None)
@given(name=_KEY_HOLDER, size=st.sampled_from([32, 64, 128]), data=st.data(), upper=st.booleans(),
       sep=st.sampled_from(["=", ": ", " = ", '="']))
def test_any_key_sized_hex_under_a_name_that_is_no_digest_goes(name, size, data, upper, sep):
    digits = data.draw(st.text("0123456789abcdef", min_size=size, max_size=size)
                       .filter(lambda h: any(c.isalpha() for c in h) and any(c.isdigit() for c in h)))
    digits = digits.upper() if upper else digits
    close = '"' if sep.endswith('"') else ""
    assert redact_secrets(f"{name}{sep}{digits}{close}") == f"{name}{sep}{SECRET}{close}"
