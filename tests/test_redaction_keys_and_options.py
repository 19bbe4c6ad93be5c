"""Keys under a name ending in KEY (`RAILS_MASTER_KEY=…`, Rails' `secret_key_base:`), passwords
given to a database or login client on its command line (`mysql -pS3cretPw`, `sshpass -p …`,
`docker login -p …`, `redis-cli -a …`), a key as a URL's user (Sentry's DSN) and an AWS secret
access key written beside its key id are redacted where memories are written and withheld from
`remem share export`; the values around them that are no secret (`PRIMARY_KEY = "id"`,
`SECRET_KEY_BASE = ENV["SECRET_KEY_BASE"]`, `ssh -p 2222`, `docker run -p 8080:80`, `mysql -p`
alone, `redis-cli -a "$REDIS_PASSWORD"`) stay as they are."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import share_safety
from remem.engine.redaction import SECRET, redact_secrets

HEX32 = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
HEX128 = "5c2a9d1e8f3b7a604e1d2c9b8a7f6e5d" * 4
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
DOCKER_PAT = "dckr_pat_AbCdEf0123456789xyzWvU"
LARAVEL = "base64:Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo="
UUID = "550e8400-e29b-41d4-a716-446655440000"

# (text, the secret in it, what stays of the text)
SECRETS = [
    (f"RAILS_MASTER_KEY={HEX32}", HEX32, "RAILS_MASTER_KEY=[secret]"),
    (f"export RAILS_MASTER_KEY='{HEX32}' && bin/rails s", HEX32, "export RAILS_MASTER_KEY='[secret]' && bin/rails s"),
    (f"secret_key_base: {HEX128}", HEX128, "secret_key_base: [secret]"),
    (f'  "secret_key_base": "{HEX128}",', HEX128, '  "secret_key_base": "[secret]",'),
    (f"SECRET_KEY_BASE={HEX128}", HEX128, "SECRET_KEY_BASE=[secret]"),
    (f"APP_KEY={LARAVEL}", LARAVEL, "APP_KEY=[secret]"),
    (f"ENCRYPTION_KEY: {UUID}", UUID, "ENCRYPTION_KEY: [secret]"),
    ('master_key = "K7MDENGbPxRfiCYq2w9ZtL4vXu"', "K7MDENGbPxRfiCYq2w9ZtL4vXu", 'master_key = "[secret]"'),
    ("MAILGUN_KEY=key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "3ax6xnjp29jd6fds4gc373sgvjxteol0", "MAILGUN_KEY=[secret]"),
    (f"set RAILS_MASTER_KEY={HEX32}.", HEX32, "set RAILS_MASTER_KEY=[secret]."),
    (f"docker login -u me -p {DOCKER_PAT}", DOCKER_PAT, "docker login -u me -p [secret]"),
    ("docker login ghcr.io --username me --password letmein", "letmein",
     "docker login ghcr.io --username me --password [secret]"),
    ("podman login -u me -pS3cretPw quay.io", "S3cretPw", "podman login -u me -p[secret] quay.io"),
    ("sshpass -p 'Tr0ub4dor3' ssh host", "Tr0ub4dor3", "sshpass -p '[secret]' ssh host"),
    ("sshpass -p letmein ssh -p 2222 host", "letmein", "sshpass -p [secret] ssh -p 2222 host"),
    ("sshpass -P assword -p 'my pass' ssh host", "my pass", "sshpass -P assword -p '[secret]' ssh host"),
    ("mysql -u root -pS3cretPw", "S3cretPw", "mysql -u root -p[secret]"),
    ("mysqldump -uroot -pR00tpw shop > shop.sql", "R00tpw", "mysqldump -uroot -p[secret] shop > shop.sql"),
    ("mariadb -h db -P 3306 -u app -p'Tr0ub 4dor' shop", "Tr0ub 4dor",
     "mariadb -h db -P 3306 -u app -p'[secret]' shop"),
    ("echo $(mysql -pS3cret -e 'select 1')", "S3cret", "echo $(mysql -p[secret] -e 'select 1')"),
    ("redis-cli -a s3cr3tPw get x", "s3cr3tPw", "redis-cli -a [secret] get x"),
    ("redis-cli -h cache -p 6379 -a 'Zq8vLm2Rx' ping", "Zq8vLm2Rx", "redis-cli -h cache -p 6379 -a '[secret]' ping"),
    ("redis-cli --pass hunter2 ping", "hunter2", "redis-cli --pass [secret] ping"),
    (f"SENTRY_DSN=https://{HEX32}@o123.ingest.sentry.io/456", HEX32,
     "SENTRY_DSN=https://[secret]@o123.ingest.sentry.io/456"),
    (f"AKIAIOSFODNN7EXAMPLE {AWS_SECRET}", AWS_SECRET, "[secret] [secret]"),
    (f"AKIAIOSFODNN7EXAMPLE,{AWS_SECRET}", AWS_SECRET, "[secret],[secret]"),
    (f"AWS Access Key ID [None]: AKIAIOSFODNN7EXAMPLE\nAWS Secret Access Key [None]: {AWS_SECRET}", AWS_SECRET,
     "AWS Access Key ID [None]: [secret]\nAWS Secret Access Key [None]: [secret]"),
]

# What sits next to such secrets and is none: names ending in KEY given names, references, a
# public key; `-p` and `-a` of other programs, or with no value; a user in a URL.
NOT_SECRETS = [
    'SECRET_KEY_BASE = ENV["SECRET_KEY_BASE"]',
    'secret_key_base: <%= ENV["SECRET_KEY_BASE"] %>',
    "api_key: str",
    'PRIMARY_KEY = "id"',
    "FOREIGN_KEY_CHECKS=0",
    "SORT_KEY=name",
    "CACHE_KEY=user_profile",
    "CACHE_KEY=user_profile_cache_v2_2024",
    'STORAGE_KEY = "myAppStorageKeyV2"',
    'I18N_KEY: "homePageHeaderTitleLabel"',
    'ENV_KEY = "ANTHROPIC_API_KEY"',
    "MODEL_KEY=gpt-4o-mini-2024-07-18",
    "FOO_KEY=$(openssl rand -hex 32)",
    "SIGNING_KEY=${SIGNING_KEY}",
    "export RAILS_MASTER_KEY=<your master key>",
    "hash_key = hashlib.sha256(x).hexdigest()",
    "ENV GPG_KEY=A035C8C19219BA821ECEA86B64E628F8D684696D",
    "VAPID_PUBLIC_KEY=BEl62iUYgUivxIkv69yViEuiBIa40HI80xxk8EQ1oVGzAAWOI42ZT4u34",
    "SSH_KEY=~/.ssh/id_ed25519",
    "docker run -p 8080:80 nginx",
    "mysql -p",
    "mysql -u root -p shop",
    "mysql -h db -P 3306 -u root -p",
    "mysql -u root -p$MYSQL_PWD",
    'mysql -u root -p"$MYSQL_PWD" shop',
    "mysql -u root -p; echo done",
    "`mysql -p` asks for the password",
    "ssh -p 2222 host",
    "psql -p 5432 -U app",
    'redis-cli -a "$REDIS_PASSWORD"',
    "redis-cli -p 6379 ping",
    "docker login -u me --password-stdin < token.txt",
    "docker login -p is deprecated",
    "sshpass -f ~/.pw ssh -p 2222 host",
    "pymysql -pX",
    "git clone https://deploy@git.example.com/repo.git",
    '"ssh://687fb701029421ae5549d998@ssh.hf.jobs"',
    "AKIA… was rotated at commit 9b865efde13a30c13e0a33e536cf3e4a5a9d71d8",
]


@pytest.mark.parametrize("text, secret, kept", SECRETS)
def test_a_key_or_a_client_password_is_redacted_and_what_names_it_kept(text, secret, kept):
    assert redact_secrets(text) == kept
    assert secret not in kept
    assert redact_secrets(kept) == kept  # idempotent
    assert share_safety.outgoing(text)  # withheld from export, quarantined when received
    assert not [why for why in share_safety.incoming(kept) if why.startswith("secret")]


@pytest.mark.parametrize("neighbour", NOT_SECRETS)
def test_what_sits_beside_a_key_and_is_none_stays(neighbour):
    """The same text holds a master key, which goes, and this, which stays."""
    text = f"{neighbour}\nRAILS_MASTER_KEY={HEX32}"
    assert redact_secrets(text) == f"{neighbour}\nRAILS_MASTER_KEY=[secret]"
    assert not [why for why in share_safety.incoming(neighbour) if why.startswith("secret")]


_HEX = st.text("0123456789abcdef", min_size=30, max_size=126)
_KEY_NAME = st.sampled_from(["RAILS_MASTER_KEY", "MASTER_KEY", "SECRET_KEY_BASE", "secret_key_base", "APP_KEY",
                             "LICENSE_KEY", "stripe-webhook-key", "Encryption_Key"])


@settings(max_examples=200, deadline=None)
@given(name=_KEY_NAME, letter=st.sampled_from("abcdef"), digit=st.sampled_from("0123456789"), rest=_HEX,
       upper=st.booleans(), sep=st.sampled_from(["=", ": ", " = ", '="', "='"]))
def test_any_long_hex_value_of_a_key_name_is_redacted_and_the_name_kept(name, letter, digit, rest, upper, sep):
    value = letter + digit + rest
    value = value.upper() if upper else value
    close = sep[-1] if sep[-1] in "'\"" else ""
    text = f"deploy with {name}{sep}{value}{close} today"
    assert redact_secrets(text) == f"deploy with {name}{sep}{SECRET}{close} today"


_WORDS = st.lists(st.sampled_from(["user", "profile", "cache", "session", "name", "tenant", "orders", "email",
                                   "created", "home", "page", "title", "config", "value", "index", "table", "state"]),
                  min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(words=_WORDS, name=st.sampled_from(["CACHE_KEY", "SORT_KEY", "PARTITION_KEY", "cache_key", "PRIMARY_KEY"]),
       joiner=st.sampled_from(["_", "-", "", ":", "."]), sep=st.sampled_from(["=", ": ", " = "]),
       version=st.sampled_from(["", "v2", "2024", "V3"]), hexes=_HEX)
def test_a_key_name_given_words_keeps_them_beside_a_redacted_one(words, name, joiner, sep, version, hexes):
    """`CACHE_KEY=user_profile_v2`, `CACHE_KEY=userProfileCacheV2` name things; the master key
    on the next line is a key. A name's words here are of four letters or more, with a version
    at most once, at its end."""
    words = [w.capitalize() if joiner == "" and i else w for i, w in enumerate(words + [version] if version else words)]
    kept = f"{name}{sep}{joiner.join(words)}"
    text = f"{kept}\nRAILS_MASTER_KEY=a1{hexes}"
    assert redact_secrets(text) == f"{kept}\nRAILS_MASTER_KEY=[secret]"


_PASSWORD = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!@#^+=_.,:~/", min_size=1,
                    max_size=24).filter(lambda v: v[0].isalnum())


@settings(max_examples=200, deadline=None)
@given(password=_PASSWORD | st.sampled_from(["root", "is", "to", "and", "flag"]), port=st.integers(1, 65535))
def test_a_password_given_to_mysql_goes_and_a_port_stays(password, port):
    """Glued to mysql's `-p` a value is its password, whatever it looks like; `-P`, ssh's and
    docker's `-p` give a port."""
    text = f"ssh -p {port} db && mysql -h 127.0.0.1 -P {port} -u root -p{password} -e 'select 1'"
    assert redact_secrets(text) == f"ssh -p {port} db && mysql -h 127.0.0.1 -P {port} -u root -p[secret] -e 'select 1'"
    text = f"docker run -p {port}:{port} db; sshpass -p '{password}' ssh -p {port} db"
    assert redact_secrets(text) == f"docker run -p {port}:{port} db; sshpass -p '[secret]' ssh -p {port} db"


def _session(folder, sid: str, commands: list[str], said: str):
    """A Claude Code session (hand-written, as Claude Code writes it) whose commands fail, and
    the person's reply."""
    def rec(uuid: str, kind: str, at: int, message: dict) -> dict:
        return {"type": kind, "uuid": uuid, "sessionId": sid, "cwd": "/w/shop",
                "timestamp": f"2026-06-01T10:00:{at:02d}.000Z", "message": message}

    recs = [rec("u0", "user", 0, {"role": "user", "content": "Deploy the shop"})]
    for i, command in enumerate(commands):
        recs.append(rec(f"a{i}", "assistant", 2 * i + 1, {"id": f"m{i}", "role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": command}}]}))
        recs.append(rec(f"r{i}", "user", 2 * i + 2, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "is_error": True,
             "content": f"Exit code 1\nERROR 1045 (28000): Access denied running {command}"}]}))
    recs.append(rec("a9", "assistant", 40, {"id": "m9", "role": "assistant", "content": [
        {"type": "text", "text": "The commands failed."}]}))
    recs.append(rec("u9", "user", 41, {"role": "user", "content": said}))
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_ingest_stores_no_key_or_client_password_of_a_transcript(store, tmp_path):
    from remem.engine import ingest

    commands = [f"RAILS_MASTER_KEY={HEX32} bin/rails credentials:show",
                f"docker login -u me -p {DOCKER_PAT} registry.example.com",
                "sshpass -p 'Tr0ub4dor3' ssh deploy@host uptime",
                "mysql -u root -pS3cretPw shop -e 'select 1'"]
    said = (f"No, that's wrong: use redis-cli -a Zq8vLm2Rx ping, secret_key_base: {HEX128}, "
            f"SENTRY_DSN=https://{HEX32}@o123.ingest.sentry.io/456 and AKIAIOSFODNN7EXAMPLE {AWS_SECRET}")
    path = _session(tmp_path, "88888888-0000-4000-8000-000000000001", commands, said)
    summary = ingest.ingest_paths(store, [path])
    assert summary["by_kind"]["error"] == 4 and summary["by_kind"]["correction"] == 1
    stored = json.dumps(store.rows("SELECT title, gist, detail FROM episodes"))
    for secret in (HEX32, DOCKER_PAT, "Tr0ub4dor3", "S3cretPw", "Zq8vLm2Rx", HEX128, AWS_SECRET):
        assert secret not in stored, secret
    # what each command did is still there
    for kept in ("RAILS_MASTER_KEY=[secret] bin/rails credentials:show", "docker login -u me -p [secret]",
                 "sshpass -p '[secret]' ssh deploy@host", "mysql -u root -p[secret] shop",
                 "redis-cli -a [secret] ping", "https://[secret]@o123.ingest.sentry.io/456"):
        assert kept in stored, kept


def test_remember_stores_a_master_key_redacted(remem_cli):
    res = remem_cli("remember", f"staging needs RAILS_MASTER_KEY={HEX32} and mysql -u app -pS3cretPw", "--json")
    assert res.returncode == 0, res.stderr
    stored = json.dumps(res.json())
    assert HEX32 not in stored and "S3cretPw" not in stored
    assert "RAILS_MASTER_KEY=[secret] and mysql -u app -p[secret]" in res.json()["gist"]
