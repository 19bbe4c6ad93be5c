"""Secrets under a longer name (`DATABASE_PASSWORD=…`, `GITHUB_TOKEN=…`, `DB_PASS=…`, Azure's
`AccountKey=…`) and passwords said in words ("the password is …") are redacted where memories
are written and withheld from `remem share export`; prose about passwords and tokens ("set
GITHUB_TOKEN in CI", "the token is refreshed hourly") stays as it is."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import share_safety
from remem.engine.redaction import SECRET, redact_secrets

AZURE = ("DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDX"
         "J1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net")

# (text, the secret in it, what stays of the text)
SECRETS = [
    ("DATABASE_PASSWORD=Tr0ub4dor&3", "Tr0ub4dor&3", "DATABASE_PASSWORD=[secret]"),
    ("POSTGRES_PASSWORD=hunter2hunter2", "hunter2hunter2", "POSTGRES_PASSWORD=[secret]"),
    ("export GITHUB_TOKEN=abcdef0123456789abcdef", "abcdef0123456789abcdef", "export GITHUB_TOKEN=[secret]"),
    ("MYSQL_ROOT_PASSWORD: SuperSecret123", "SuperSecret123", "MYSQL_ROOT_PASSWORD: [secret]"),
    ("SECRET_KEY=django-insecure-k9x2m4q7", "django-insecure-k9x2m4q7", "SECRET_KEY=[secret]"),
    ("DJANGO_SECRET_KEY='k9x2m4q7zz'", "k9x2m4q7zz", "DJANGO_SECRET_KEY='[secret]'"),
    ("DB_PASS=letmein99", "letmein99", "DB_PASS=[secret]"),
    ("x-api-key: abcdef123456", "abcdef123456", "x-api-key: [secret]"),
    ("The password is hunter2hunter2", "hunter2hunter2", "The password is [secret]"),
    ("The staging db password is hunter2-Xq9!", "hunter2-Xq9!", "The staging db password is [secret]"),
    ("the password for root was `admin123`", "admin123", "the password for root was `[secret]`"),
    ("PGPASSWORD=s3cr3tpass psql -h db", "s3cr3tpass", "PGPASSWORD=[secret] psql -h db"),
    # values shaped like code that are secrets: an .env line, a YAML value, a literal, a key
    # split by dots, an option's letters-only key, a password said as digits
    ("POSTGRES_PASSWORD=postgres_dev", "postgres_dev", "POSTGRES_PASSWORD=[secret]"),
    ("MYSQL_ROOT_PASSWORD=root_password", "root_password", "MYSQL_ROOT_PASSWORD=[secret]"),
    ("secret: OpenSesame", "OpenSesame", "secret: [secret]"),
    ("db password: CorrectHorseBatteryStaple", "CorrectHorseBatteryStaple", "db password: [secret]"),
    ('db_password = "correctHorseBattery"', "correctHorseBattery", 'db_password = "[secret]"'),
    ("password: Winter-Is-Coming", "Winter-Is-Coming", "password: [secret]"),
    ("client_secret=Ab3dE.fgh9Ij", "Ab3dE.fgh9Ij", "client_secret=[secret]"),
    ("DISCORD_TOKEN=MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
     "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs", "DISCORD_TOKEN=[secret]"),
    ("mytool --secret abc123xyz", "abc123xyz", "mytool --secret [secret]"),
    # a one-word password, whatever code-like punctuation follows it; a base64 pad
    ("| staging | password: Winterfell | user: admin |", "Winterfell", "| staging | password: [secret] | user: admin |"),
    ("secret: Winterfell ->", "Winterfell", "secret: [secret] ->"),
    ("_auth=YWRtaW46YWRtaW4xMjM=", "YWRtaW46YWRtaW4xMjM=", "_auth=[secret]"),
    ("api_key: YWJjZGVmZ2hpams=", "YWJjZGVmZ2hpams=", "api_key: [secret]"),
    # passwords shaped like names: in YAML, a command line, an INI file, JSON, a URL, .npmrc
    ("kubectl create secret generic db --from-literal=password=S3cr3tPass", "S3cr3tPass",
     "kubectl create secret generic db --from-literal=password=[secret]"),
    ("password: MySecretPass", "MySecretPass", "password: [secret]"),
    ("POSTGRES_PASSWORD: supersecret_password", "supersecret_password", "POSTGRES_PASSWORD: [secret]"),
    ("spring.datasource.password=my_secret", "my_secret", "spring.datasource.password=[secret]"),
    ("[client] password = rootpassword", "rootpassword", "[client] password = [secret]"),
    ('{"password": "Tr0ub4dor&3"}', "Tr0ub4dor&3", '{"password": "[secret]"}'),
    ("{'api_key': 'a8f5f167f44f4964e6c9'}", "a8f5f167f44f4964e6c9", "{'api_key': '[secret]'}"),
    ("CELERY_BROKER_URL=redis://:s3cretpw@redis:6379/0", "s3cretpw", "CELERY_BROKER_URL=redis://[secret]@redis:6379/0"),
    ("//registry.npmjs.org/:_authToken=0123abcd-1234-5678", "0123abcd-1234-5678",
     "//registry.npmjs.org/:_authToken=[secret]"),
    ("gh auth login --token abcdefghijklmnop", "abcdefghijklmnop", "gh auth login --token [secret]"),
    ("psql --password SuperSecret -h db", "SuperSecret", "psql --password [secret] -h db"),
    ("the password is 12345678", "12345678", "the password is [secret]"),
    ("psql --password hunter2x -h db", "hunter2x", "psql --password [secret] -h db"),
    ("gh auth login --token ghx1234567", "ghx1234567", "gh auth login --token [secret]"),
    ("curl -u admin:hunter22 -X POST", "hunter22", "curl -u admin:[secret] -X POST"),
    (AZURE, "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
     "DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey=[secret];EndpointSuffix=core.windows.net"),
]

# Prose and code about secrets that holds none.
PROSE = [
    "set GITHUB_TOKEN in CI",
    "the token is refreshed hourly",
    "password reset flow",
    "pass the tests",
    "Second pass: rewrite the parser",
    "the password is sha256-hashed before it is stored",
    "the token is base64-encoded",
    "the password is at least 12 characters long",
    "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
    "export API_TOKEN=$API_TOKEN",
    "OLD_PWD=/home/dev/app",
    "bypass=enabled1",
    "POSTGRES_PASSWORD_FILE is read by the entrypoint",
    "PGPASSWORD=$PGPASSWORD psql",
    "set PGPASSWORD in the environment",
    "gh auth login --token $GH_TOKEN",
    "psql --password --host db",
    "npm test -- --passWithNoTests",
    "docker run -u 1000:1000 shop",
    "git push -u origin main",
    # code that names where a secret is, not the secret (each once redacted by a wider pattern)
    "Use tokenizer.pad_token = tokenizer.eos_token for llama; prev_token = current_token in the lexer",
    "auth_token=auth_token, self.webhook_secret = webhook_secret",
    "progress_token: ProgressToken | None = None",
    "secret_key=settings.SECRET_KEY",
    'mask_token="[MASK]"',
    "container_registry_password=container_registry_password,",
    "private_key: Ed25519PrivateKey | None = None",
    "api = HfApi(token=token)",
    "token: TokenOpt = None,",
    'stdin.write(f"password={token}")',
    'OPENAI_API_KEY=sk-... in your shell',
    "use the --password option instead",
    "the --token argument is deprecated",
    "psql -h localhost -U admin --password analytics_db",
    "docker build --secret id=aws,src=$HOME/.aws/credentials .",
    "the token is 12345678 characters long",
    "index_url, _, index_url_user_password = index_info",
    'f"has identity_token={identity_token_cfg!r}."',
    'ENV_AUTH_TOKEN = "ANTHROPIC_AUTH_TOKEN"',
    '$token = $request->input("token");',
    "password = auth?.password",
    'password = "********"',
    "token = Name.Function",
    "hf webhooks update abc123 --secret newsecret",
    "if not api.repo_exists(repo_id, token=token): raise",
    "def derive(password: bytes) -> bytes: use scrypt",
    "return AccessToken(token=access_token, expires_at=None)",
    "  token: newToken\n}",
    "access_token: AccessToken | None",
    'self.whoami(token=token)["name"]',
    "password: HiddenText | None = None",
    'let token = env::var("GITHUB_TOKEN").unwrap(); panics when unset',
    'fields = {"hf_token": token}',
    'ENV_API_KEY = "ANTHROPIC_API_KEY"',
]


@pytest.mark.parametrize("text, secret, kept", SECRETS)
def test_a_named_secret_is_redacted_and_its_name_kept(text, secret, kept):
    assert redact_secrets(text) == kept
    assert redact_secrets(kept) == kept  # idempotent
    assert share_safety.outgoing(text)  # withheld from export, quarantined when received
    assert not share_safety.incoming(kept)  # what redaction leaves is no secret


@pytest.mark.parametrize("text", PROSE)
def test_prose_about_secrets_stays_as_it_is(text):
    assert redact_secrets(text) == text
    assert not [why for why in share_safety.incoming(text) if why.startswith("secret")]


_WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
_NAME = st.sampled_from(["password", "passwd", "passphrase", "pwd", "secret", "secret_key", "token",
                         "api_key", "access_key", "client_secret", "pass"])
_CASE = st.sampled_from([str.upper, str.lower])


@settings(max_examples=200, deadline=None)
@given(prefix=st.lists(_WORD, min_size=1, max_size=3), name=_NAME, case=_CASE,
       sep=st.sampled_from(["=", ": ", " = ", ":"]),
       first=st.sampled_from("23456789"),
       # no "@": one ending a value is taken for the end of a URL's credentials, and stays
       rest=st.text("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789&!#%^*+/-",
                    min_size=7, max_size=40))
def test_any_prefixed_credential_name_hides_its_value(prefix, name, case, sep, first, rest):
    label, value = case("_".join(prefix + [name])), first + rest
    text = f"deploy with {label}{sep}{value} today"
    assert redact_secrets(text) == f"deploy with {label}{sep}{SECRET} today"


_PROSE_WORDS = st.sampled_from(
    ["set", "the", "a", "token", "tokens", "password", "passwords", "pass", "passes", "is", "was", "in",
     "CI", "GITHUB_TOKEN", "DATABASE_PASSWORD", "DB_PASS", "SECRET_KEY", "reset", "flow", "refreshed",
     "hourly", "rotated", "stored", "vault", "tests", "secret", "for", "key", "api", "AccountKey",
     "read", "from", "env", "never", "log", "it", "sha256-hashed", "base64-encoded", "12", "characters"])


@settings(max_examples=300, deadline=None)
@given(words=st.lists(_PROSE_WORDS, min_size=1, max_size=14), end=st.sampled_from(["", ".", "!", "?"]))
def test_sentences_about_passwords_and_tokens_are_never_redacted(words, end):
    """No ":" or "=" and no value with a digit in it: nothing to take for a secret."""
    text = " ".join(words) + end
    assert redact_secrets(text) == text


def test_remember_stores_a_named_password_redacted(remem_cli):
    res = remem_cli("remember", "DATABASE_PASSWORD=Tr0ub4dor&3 is the staging one", "--json")
    assert res.returncode == 0, res.stderr
    stored = res.json()
    assert "Tr0ub4dor" not in json.dumps(stored) and "DATABASE_PASSWORD=[secret]" in stored["gist"]


def test_share_export_withholds_a_named_password(remem_cli, home, tmp_path):
    from remem.engine import lessons
    from remem.engine.store import Store

    with Store() as store:
        named = lessons.add_lesson(store, "Use DATABASE_PASSWORD=Tr0ub4dor&3 on staging", "correction",
                                   strength=1.5)
        said = lessons.add_lesson(store, "The staging db password is hunter2-Xq9!", "correction",
                                  strength=1.5)
        plain = lessons.add_lesson(store, "Set GITHUB_TOKEN in CI, never in the repo", "correction",
                                   strength=1.5)
    folder = tmp_path / "share"
    folder.mkdir()
    res = remem_cli("share", "export", "--folder", str(folder), "--json")
    assert res.returncode == 0, res.stderr
    rep = res.json()
    assert {w["id"] for w in rep["withheld"]} == {named["id"], said["id"]}
    assert [e["id"] for e in rep["exported"]] == [plain["id"]]
    written = "".join(p.read_text() for p in folder.rglob("*.json"))
    assert "Tr0ub4dor" not in written and "hunter2" not in written
