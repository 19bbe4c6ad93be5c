"""Redaction, read again: an AWS secret key as `aws iam create-access-key` prints it (its name
`SecretAccessKey` on a line of its own), keys under camel-case names (`encryptionKey`,
`masterKey`), a licence key's dashed groups, `os.environ["…_KEY"] = …` and a Dockerfile's `ENV`
go; a hash or a UUID under a name that keys a thing (`commit_key`, `cache-key`,
`idempotency_key`, `OBJECT_KEY`) stays, as do the words after `docker login -p` in a sentence;
and a long run of words joined by "_" is read once, not once for each of its words."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import redaction, share_safety
from remem.engine.redaction import SECRET, redact_secrets

AWS_ID = "AKIA4EXAMPLE7ABCDEFG"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
SESSION_TOKEN = "AQoXdzELDDY//////////wEaoAK1wvxJY12r2IrDFT2IvAzTCn3zHoZ7YNtpiQLF0MqZye/qwjzP2iEXAMPLEbw="
KEY32 = "kX9vB2mQ7pL4zR8tW1yN6cF3hJ5dG0sA"
GIT_SHA = "9fceb02d0ae598e95dc970b74767f19372d61af8"
UUID = "550e8400-e29b-41d4-a716-446655440000"

CREATE_ACCESS_KEY = json.dumps({"AccessKey": {"UserName": "Bob", "AccessKeyId": AWS_ID, "Status": "Active",
                                              "SecretAccessKey": AWS_SECRET,
                                              "CreateDate": "2015-03-09T18:39:23.411Z"}}, indent=4)
ASSUME_ROLE = json.dumps({"Credentials": {"AccessKeyId": "ASIA4EXAMPLE7ABCDEFG", "SecretAccessKey": AWS_SECRET,
                                          "SessionToken": SESSION_TOKEN,
                                          "Expiration": "2016-03-15T00:05:07Z"}}, indent=4)


def _secret_reasons(text: str) -> list[str]:
    return [why for why in share_safety.incoming(text) if why.startswith("secret")]


# --------------------------------------------------------------------------- AWS keys in JSON

@pytest.mark.parametrize("printed", [CREATE_ACCESS_KEY, ASSUME_ROLE])
def test_an_aws_secret_key_as_the_cli_prints_it_is_redacted(printed):
    """The secret sits three lines below its id, under `SecretAccessKey`: its name says it is one."""
    kept = redact_secrets(printed)
    assert AWS_SECRET not in kept and SESSION_TOKEN not in kept
    assert '"SecretAccessKey": "[secret]"' in kept
    assert '"Status": "Active"' in kept or '"Expiration": "2016-03-15T00:05:07Z"' in kept
    assert redact_secrets(kept) == kept
    assert share_safety.outgoing(printed) and not _secret_reasons(kept)


@pytest.mark.parametrize("text, kept", [
    (f'new S3Client({{credentials: {{accessKeyId: "{AWS_ID}", secretAccessKey: "{AWS_SECRET}"}}}})',
     'new S3Client({credentials: {accessKeyId: "[secret]", secretAccessKey: "[secret]"}})'),
    (f"secret_access_key: {AWS_SECRET}", "secret_access_key: [secret]"),
    (f'"awsSecretAccessKey": "{AWS_SECRET}"', '"awsSecretAccessKey": "[secret]"'),
    ('"SessionToken": "FwoGZXIvYXdzEBYaDHqa0AP1"', '"SessionToken": "[secret]"'),
    ('webhookSecret: "whsec_Zq8vLm2Rx"', 'webhookSecret: "[secret]"'),
])
def test_a_secret_under_a_camel_case_name_is_redacted(text, kept):
    assert redact_secrets(text) == kept


# --------------------------------------------------------------------------- names ending in Key

SECRETS = [
    (f'const encryptionKey = "{KEY32}";', f'const encryptionKey = "{SECRET}";'),
    (f'masterKey: "{KEY32}"', f'masterKey: "{SECRET}"'),
    (f'config.signingKey = "{KEY32}"', f'config.signingKey = "{SECRET}"'),
    ("LICENSE_KEY=A1B2C-D3E4F-G5H6I-J7K8L-M9N0P", "LICENSE_KEY=[secret]"),
    ("PRODUCT_KEY=VK7JG-NPHTM-C97JM-9MPGT-3V66T", "PRODUCT_KEY=[secret]"),
    ("license_key: ab12-cd34-ef56-gh78", "license_key: [secret]"),
    (f'os.environ["MASTER_KEY"] = "{KEY32}"', 'os.environ["MASTER_KEY"] = "[secret]"'),
    (f"os.environ['OPENAI_API_KEY'] = 'Zq8vLm2Rx'", "os.environ['OPENAI_API_KEY'] = '[secret]'"),
    ('os.environ["DB_PASSWORD"] = "hunter2hunter2"', 'os.environ["DB_PASSWORD"] = "[secret]"'),
    (f"ENV MASTER_KEY={KEY32}", "ENV MASTER_KEY=[secret]"),
    (f"ENV MASTER_KEY {KEY32}", "ENV MASTER_KEY [secret]"),
    ("ENV DB_PASSWORD hunter2hunter2", "ENV DB_PASSWORD [secret]"),
    ('ENV API_TOKEN "Zq8vLm2Rx"', 'ENV API_TOKEN "[secret]"'),
]
NOT_SECRETS = [
    'sortKey: "createdAt"',
    "primaryKey: true",
    'const storageKey = "myAppStorageKeyV2";',
    f'publicKey: "{KEY32}"',
    f'vapidPublicKey = "{KEY32}"',
    "MODEL_KEY=gpt-4o-mini-2024-07-18",
    "VERSION_KEY=2024-07-18-1200",
    "CACHE_KEY=prod-eu-west-1-cache-v2",
    'os.environ["MASTER_KEY"] = os.urandom(32).hex()',
    "self._cache[token] = output",
    "self.tokens: list[Token] = tokens or []",
    'notes.append("a secret became [secret]: lessons are written")',
    "ENV API_TOKEN $TOKEN",
    "ENV DB_PASSWORD=${DB_PASSWORD}",
    "ENV PATH /usr/local/bin:$PATH",
]


@pytest.mark.parametrize("text, kept", SECRETS)
def test_a_key_under_a_camel_case_licence_environ_or_dockerfile_name_is_redacted(text, kept):
    assert redact_secrets(text) == kept
    assert redact_secrets(kept) == kept
    assert share_safety.outgoing(text) and not _secret_reasons(kept)


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_names_and_code_beside_such_keys_stay(text):
    assert redact_secrets(text) == text
    assert not _secret_reasons(text)


_LETTER = st.sampled_from("abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ")
_DIGIT = st.sampled_from("0123456789")
# A generated key of 32 characters: letters and digits in turn (base 62), or hex digits
_RANDOM32 = st.lists(st.tuples(_LETTER, _DIGIT).map("".join), min_size=16, max_size=16).map("".join) | \
    st.text("0123456789abcdef", min_size=30, max_size=30).map(lambda h: "a1" + h)
_CAMEL_SECRET = st.sampled_from(["encryptionKey", "masterKey", "signingKey", "webhookKey", "appKey",
                                 "licenseKey", "stripeWebhookKey", "cookieKey", "hmacKey"])


@settings(max_examples=200, deadline=None)
@given(name=_CAMEL_SECRET, value=_RANDOM32, form=st.sampled_from(['const {n} = "{v}";', "{n}: {v}", '"{n}": "{v}",',
                                                                   "this.{n} = '{v}'", "{n}={v}"]))
def test_any_generated_value_under_a_camel_case_key_name_is_redacted(name, value, form):
    text = form.format(n=name, v=value)
    assert redact_secrets(text) == form.format(n=name, v=SECRET)


# --------------------------------------------------------------------------- hashes that name a thing

THINGS = [
    f"commit_key: {GIT_SHA}",
    f"OBJECT_KEY={GIT_SHA}",
    f"idempotency_key: {UUID}",
    f"Idempotency-Key: {UUID}",
    f"cache-key: v1-deps-{GIT_SHA}",
    f"key: linux-node18-{GIT_SHA[:12]}-{GIT_SHA}",
    f'const cacheKey = "{GIT_SHA}";',
    f"S3_OBJECT_KEY=uploads/{UUID}",
    f"CACHE_KEY={GIT_SHA.upper()}",
    "etag_key: " + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
]


@pytest.mark.parametrize("text", THINGS)
def test_a_hash_or_uuid_under_a_name_keying_a_thing_stays(text):
    assert redact_secrets(text) == text
    assert not _secret_reasons(text)  # a shared lesson saying it is not quarantined


@pytest.mark.parametrize("text, kept", [
    (f"API_KEY={GIT_SHA}", "API_KEY=[secret]"),
    (f"ENCRYPTION_KEY: {UUID}", "ENCRYPTION_KEY: [secret]"),
    (f"RAILS_MASTER_KEY={GIT_SHA[:32]}", "RAILS_MASTER_KEY=[secret]"),
    (f"SESSION_CACHE_KEY={GIT_SHA}", "SESSION_CACHE_KEY=[secret]"),  # a word of it opens something
    (f"CACHE_KEY=Zq8vLm2RxPelican7Tw3Ke9", "CACHE_KEY=[secret]"),  # not a hash: random to the eye
])
def test_the_same_hex_under_a_name_that_opens_something_goes(text, kept):
    assert redact_secrets(text) == kept


_THING_NAME = st.sampled_from(["commit_key", "cache_key", "CACHE_KEY", "OBJECT_KEY", "objectKey", "cacheKey",
                               "Idempotency-Key", "idempotency_key", "s3_object_key", "commitKey", "row-key",
                               "DEDUP_KEY", "partition_key", "lookupKey"])
_OPENING_NAME = st.sampled_from(["API_KEY", "SECRET_KEY", "ENCRYPTION_KEY", "masterKey", "RAILS_MASTER_KEY",
                                 "signing_key", "PRIVATE_KEY", "encryptionKey", "LICENSE_KEY"])
_SEP = st.sampled_from(["=", ": ", " = ", '="', "='"])
_SHA_LENGTH = st.sampled_from([7, 8, 12, 20, 32, 40, 64])


@settings(max_examples=300, deadline=None)
@given(name=_THING_NAME, sep=_SEP, length=_SHA_LENGTH, data=st.data(), upper=st.booleans(),
       prefix=st.sampled_from(["", "v1-deps-", "linux-node18-", "build_2024_"]))
def test_any_git_or_sha_hash_under_a_thing_name_is_kept(name, sep, length, data, upper, prefix):
    digest = data.draw(st.text("0123456789abcdef", min_size=length, max_size=length))
    digest = digest.upper() if upper else digest
    close = sep[-1] if sep[-1] in "'\"" else ""
    text = f"deploy with {name}{sep}{prefix}{digest}{close} today"
    assert redact_secrets(text) == text


@settings(max_examples=200, deadline=None)
@given(name=_THING_NAME, value=st.uuids().map(str), sep=_SEP)
def test_any_uuid_under_a_thing_name_is_kept(name, value, sep):
    close = sep[-1] if sep[-1] in "'\"" else ""
    text = f"{name}{sep}{value}{close}"
    assert redact_secrets(text) == text


@settings(max_examples=200, deadline=None)
@given(name=_OPENING_NAME, sep=_SEP, letter=st.sampled_from("abcdef"), digit=_DIGIT,
       rest=st.text("0123456789abcdef", min_size=38, max_size=38))
def test_any_40_hex_value_under_a_name_that_opens_something_is_redacted(name, sep, letter, digit, rest):
    close = sep[-1] if sep[-1] in "'\"" else ""
    text = f"deploy with {name}{sep}{letter}{digit}{rest}{close} today"
    assert redact_secrets(text) == f"deploy with {name}{sep}{SECRET}{close} today"


# --------------------------------------------------------------------------- docker login -p in prose

@pytest.mark.parametrize("text", [
    "docker login -p prints a warning",
    "docker login -p should never be used",
    "docker login -p shows the password in the history",
    "`docker login -p` will leave the password in the shell history",
    "docker login -p can leak it; use --password-stdin",
    "docker login -p doesn't hide it",
    "redis-cli -a must not be used in scripts",
    "sshpass -p leaks the password to ps",
])
def test_words_after_a_client_password_option_in_a_sentence_stay(text):
    assert redact_secrets(text) == text


@pytest.mark.parametrize("text, kept", [
    ("docker login -u me -p s3cr3tPw registry", "docker login -u me -p [secret] registry"),
    ("docker login -p letmein registry.example.com", "docker login -p [secret] registry.example.com"),
    ("sshpass -p hunter ssh host", "sshpass -p [secret] ssh host"),
])
def test_a_password_after_the_option_still_goes(text, kept):
    assert redact_secrets(text) == kept


# --------------------------------------------------------------------------- a long run of words

_ASSIGNMENT = next(p for p, why in redaction.SECRETS_RE_I if why == "secret: credential assignment")


@pytest.mark.parametrize("run", ["a_", "a-", "A_", "a1_", "ab_"])
def test_a_long_run_of_joined_words_is_read_once_and_redacted_right(run):
    """A name is read from where it starts, never again from each of its words (which made a run
    of 8,000 words take seconds, in proportion to the square of its length): the credential
    assignment finds nothing that starts inside a name, and a name of many words still works."""
    name = run * 50 + "password"
    text = f"set {name}=Zq8vLm2Rx now"
    assert _ASSIGNMENT.search(text).start() == len("set ")
    for inside in range(len("set ") + 1, len("set ") + len(run) * 50):
        assert _ASSIGNMENT.match(text, inside) is None, inside
    long = run * 8000
    assert redact_secrets(long) == long
    assert redact_secrets(f"{long}password=Zq8vLm2Rx now") == f"{long}password=[secret] now"
    assert redact_secrets(f"{long} --password=Zq8vLm2Rx") == f"{long} --password=[secret]"


def test_remember_stores_aws_keys_redacted_and_a_commit_key_kept(remem_cli):
    said = f"rotate the key: {CREATE_ACCESS_KEY} then set commit_key: {GIT_SHA}"
    res = remem_cli("remember", said, "--json")
    assert res.returncode == 0, res.stderr
    stored = json.dumps(res.json())
    assert AWS_SECRET not in stored and AWS_ID not in stored
    assert f"commit_key: {GIT_SHA}" in stored


def test_a_uuid_from_the_library_is_kept_under_an_idempotency_key():
    value = str(uuid.uuid4())
    assert redact_secrets(f"Idempotency-Key: {value}") == f"Idempotency-Key: {value}"
