"""Secrets: what counts as one (API keys, tokens, passwords, private keys, credentials in
URLs, a random-looking value under a name ending in KEY, a password given to a database or
login client on its command line), and their redaction to "[secret]". Its own small module,
importing only `re`: the hooks redact the query they log (prime.stored_query), share_safety
flags what it finds, and lesson_text, ingest, `remember` and the sleep's redact pass redact
with the same rules."""

from __future__ import annotations

import re
from typing import Any

SECRETS = [
    (r"\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b", "secret: AWS access key id"),
    (r"\bsk-(proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}", "secret: API key (sk-…)"),
    (r"\b(sk|rk|pk)_(live|test)_[A-Za-z0-9]{10,}", "secret: Stripe key"),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}", "secret: GitHub token"),
    (r"\bglpat-[A-Za-z0-9_\-]{16,}", "secret: GitLab token"),
    (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", "secret: Slack token"),
    (r"\bAIza[0-9A-Za-z_\-]{30,}", "secret: Google API key"),
    (r"\bhf_[A-Za-z0-9]{30,}", "secret: Hugging Face token"),
    (r"\bnpm_[A-Za-z0-9]{30,}", "secret: npm token"),
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----", "secret: private key block"),
    (r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "secret: JWT"),
    (r"://[^/\s:@]*:[^/\s@]+@", "secret: credentials in a URL"),
    # A key as the user of a web address, with no password (Sentry's DSN, `https://<32 hex>@o1.
    # ingest…`): only one random to the eye (is_secret), never a user's name
    # (`https://deploy@host`); not over SSH, where the user is an account or a job's id
    # (`ssh://687fb701…@ssh.hf.jobs`) and keys, not the address, let one in.
    (r"\bhttps?://(?P<value>[A-Za-z0-9_\-]{20,})@", "secret: a key as a URL's user"),
    # An AWS secret access key written with no name, beside its access key id (a CSV of
    # credentials, "AKIA… / wJalr…", what `aws configure` asked): exactly 40 characters of
    # base64 with upper and lower case and a digit, "/" or "+" in them, on the id's line or
    # at the start of the next; a git commit's 40 hex digits (no upper case) are none.
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b[^\S\n]*(?:\n[^\n]{0,40}?|[^\n]{0,40}?)(?<![A-Za-z0-9/+])"
     r"(?P<value>(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z]*[0-9/+])[A-Za-z0-9/+]{40})"
     r"(?![A-Za-z0-9/+=])",
     "secret: an AWS secret access key beside its key id"),
]
# A credential's name, alone or as the last word of a longer one (`DATABASE_PASSWORD`,
# `MYSQL_ROOT_PASSWORD`, `GITHUB_TOKEN`, `DJANGO_SECRET_KEY`, Azure's `AccountKey`); `pass`
# only as such a last word (`DB_PASS`), never alone ("pass: rewrite the parser"). A password
# also as the end of one word (`PGPASSWORD`, `MYSQLPASSWORD`), and a key's or a secret's name
# as the last word of a camel-case one (`SecretAccessKey`, as `aws iam create-access-key`
# prints it, `secretAccessKey`, `stripeApiKey`, `webhookSecret`, `SessionToken`): such a name
# (the group `camel`) also names a setting or a reference (Kubernetes' `existingSecret:
# pg-credentials`, `tlsSecret`, a flag `useApiKey: enabled`), so only a value shaped as a
# secret is one under it (_camel_not_a_secret). Not the middle of a word ("bypass",
# "OLDPWD"). A name is read once, from where it starts (its words and the "_" or "-" between
# them, `--password`, `__secret__`), never again from each of its words: a long run of words
# ("a_a_a_…") takes a time in proportion to its length.
_CREDENTIAL = (r"(?<![A-Za-z0-9_\-])[_\-]*(?:[A-Za-z0-9]+[_\-]+)*"
               r"(?:_auth(?![A-Za-z0-9])|(?:[A-Za-z0-9]*(?:password|passwd|passphrase)|authtoken|pwd"
               r"|secret(?:[_\-]?key)?|token|api[_\-]?key|access[_\-]?key|account[_\-]?key"
               r"|private[_\-]?key|client[_\-]?secret"
               r"|(?P<camel>(?:[A-Za-z0-9]*(?-i:[a-z0-9]))?(?-i:(?:Secret|Access|Private|Api|API|Account)Key"
               r"|SessionToken)|[A-Za-z0-9]*(?-i:[a-z0-9]Secret)))|[A-Za-z0-9]+_pass)")
# A value runs to a space or a quote, and to a ";" that starts the next `Name=` of a
# connection string ("AccountKey=…;EndpointSuffix=…"), not to one inside a password.
_VALUE = r"(?:[^\s'\";]|;(?![\w.\-]+=))"
# Said in words: "the password is hunter2hunter2", "the staging db password was Tr0ub4dor&3",
# "the token for CI is …". Only a value with a digit in it counts ("the token is refreshed
# hourly" is prose), and not a name of an algorithm or encoding ("sha256-hashed", "base64").
_SAID = (r"\b(?:password|passwd|passphrase|token|api[ _\-]?key|access[ _\-]?key)"
         r"(?:\s+(?:for|of|on)\s+(?:the\s+)?[\w.\-]+)?\s+(?:is|was)\s*:?\s+['\"`]?"
         r"(?P<value>(?![0-9]+\s+(?:characters?|chars?|bytes?|bits?|digits?|letters?|words?|tokens?|long"
         r"|seconds?|minutes?|hours?|days?|ms)\b)(?!(?:sha|md|base|argon|utf|ipv|oauth|http|aes|rsa|ed|hs|rs|es|ps|pbkdf|crc"
         r"|x|v)\d+(?![A-Za-z0-9]))(?=[^\s'\"`]*\d)[^\s'\"`]{6,})")
# On a command line: `psql --password hunter2x`, `gh auth login --token …`, `curl -u me:pw …`
# (a value that is a reference, `--token $GH_TOKEN`, another option, a spec, `--secret id=aws`,
# or a short lowercase word stays: "use the --password option", `psql --password dbname`, whose
# flag takes none; a key of lowercase letters alone is 16 or more).
_OPTION = (r"(?<![\w-])--(?:password|passwd|passphrase|token|api-key|secret)\s+['\"]?"
           r"(?P<value>(?![-$<{%]|\[secret\])(?![^\s'\"]*=)"
           r"(?:(?=(?-i:[^\s'\"]*[0-9!@#%^&*+~A-Z]))[^\s'\"]{6,}|[^\s'\"]{16,}))")
_CURL_USER = r"\bcurl\b[^\n|;&]*?\s(?:-u|--user)\s*['\"]?[^\s:'\"]+:(?P<value>(?![$<{%]|\[secret\])[^\s'\"@]{4,})"
# A password the client's own option takes, given on its command line: mysql's (and
# mysqldump's, mariadb's …) `-pS3cretPw`, glued (`mysql -p` alone asks for it, `-p dbname`
# is that, `-P 3306` a port), `sshpass -p …`, `docker login -p …` (`--password …`),
# `redis-cli -a …` (`--pass …`). Only after these programs: elsewhere `-p` is a port
# (`ssh -p 2222`, `docker run -p 8080:80`) and `-a` anything. The option takes a value, so a
# short word is one (`-proot`, `sshpass -p letmein`), but not a word, after a space, that
# goes on a sentence, a word of grammar or a verb ("docker login -p is deprecated", "… -p prints
# a warning", "… -p should never be used"). A value in quotes runs to its closing
# quote; a quote with no closing one after the value is code's (`["mysql -p", …]`). A
# reference (`-a "$REDIS_PASSWORD"`, `-p$MYSQL_PWD`, `<password>`), another option, a mask
# (`-p****`), the shell's `;`, `|`, `&`, `<`, `>`, `(`, `)`, and what redaction put there
# (`[secret]`) stay.
_PROGRAM = r"(?<![\w.\-])"
_ARGS = r"[^\n|;&]{0,400}?"  # the program's arguments before the option: one command, read only so far
_PROSE_AFTER_OPTION = (r"(?:is|isn|was|wasn|are|were|be|been|has|had|have|does|doesn|did|do|don|can|cannot|could|should"
                       r"|shouldn|shall|will|won|would|must|may|might|need|needs|not|never|always|still|just|now|to"
                       r"|and|or|but|nor|the|a|an|in|on|at|of|for|from|with|without|by|as|then|than|that|this|which"
                       r"|who|where|why|how|if|when|while|so|also|only|here|there|instead|flag|flags|option|options"
                       r"|argument|arguments|parameter|switch|works|prompts|asks|takes|means|prints|printed|shows"
                       r"|showed|warns|warned|gives|leaks|leaked|exposes|puts|stores|stored|leaves|logs|logged|sends"
                       r"|passes|passed|sets|requires|expects|accepts|fails|failed|errors|emits|outputs|writes|reads"
                       r"|saves|returns|triggers|causes|makes|lets|allows|deprecated|insecure|unsafe)")
_CLIENT_PASSWORD = (
    r"(?:" + _PROGRAM + r"(?:mysql(?:dump|admin|import|check|show|pump|slap)?"
    r"|mariadb(?:-dump|-admin|-import|-check|-show|-slap)?)(?=[ \t])" + _ARGS + r"[ \t](?-i:-p)(?=\S)"
    r"|" + _PROGRAM + r"sshpass(?:[ \t]+(?-i:-[fdP])[ \t]*\S+|[ \t]+(?-i:-[a-ceg-oq-zA-OQ-Z])\S*)*[ \t]+(?-i:-p)[ \t]*"
    r"|" + _PROGRAM + r"(?:docker|podman)[ \t]+login(?=[ \t])" + _ARGS + r"[ \t](?:(?-i:-p)[ \t]*|--password[ \t]+)"
    r"|" + _PROGRAM + r"(?:redis|valkey)-cli(?=[ \t])" + _ARGS + r"[ \t](?:(?-i:-a)|--pass)[ \t]+)"
    r"(?P<quote>['\"])?(?P<value>(?![$<{%*•\-]|\[secret\])"
    r"(?(quote)(?!\s)[^'\"\n]+|(?!(?<=[ \t])" + _PROSE_AFTER_OPTION + r"(?![^\s'\"`;|&<>()]))[^\s'\"`;|&<>()]+))"
    r"(?(quote)(?P=quote)(?=[\s;|&)'\"`]|$))")
# A name ending in KEY (`RAILS_MASTER_KEY`, `APP_KEY`, `LICENSE_KEY`; in camel case
# `encryptionKey`, `masterKey`), or KEY_BASE (Rails' `secret_key_base:`), in an .env line, YAML,
# JSON or code (`os.environ["MASTER_KEY"] = …`, a Dockerfile's `ENV MASTER_KEY …`), given a
# value random to the eye (is_secret, _looks_random): a generated key. Any other value stays
# (`PRIMARY_KEY = "id"`, `SORT_KEY=name`, `CACHE_KEY=user_profile_v2`, `SECRET_KEY_BASE =
# ENV["SECRET_KEY_BASE"]`), as does a public key's or a GPG key's fingerprint, and a hash or a
# UUID under a name that keys a thing rather than opens it (`commit_key: <a git commit>`,
# `cache-key: v1-deps-<sha>`, `idempotency_key: <uuid>`; _keys_a_thing). The names that always
# hold a secret (`API_KEY`, `SECRET_KEY`, `ACCESS_KEY` …) are _CREDENTIAL's, with its wider rules.
_NAMED_KEY = (r"(?<![A-Za-z0-9_\-])(?:(?P<env>(?-i:ENV))[ \t]+)?(?P<name>[_\-]*(?:[A-Za-z0-9]+[_\-])*"
              r"(?:[A-Za-z0-9]+[_\-](?<!public[_\-])(?<!pub[_\-])(?<!gpg[_\-])(?<!pgp[_\-])key(?:[_\-]base)?"
              r"|[A-Za-z0-9]*(?-i:[a-z0-9])(?<!public)(?<!pub)(?<!gpg)(?<!pgp)(?-i:Key(?:Base)?)))"
              r"(?:['\"]\]?)?(?(env)(?:[ \t]*=[ \t]*|[ \t]+)|[ \t]*[:=][ \t]*)['\"]?"
              r"(?P<value>(?:base64:)?[A-Za-z0-9+/_\-]+=*)"
              r"(?=[\s'\"`,;)\]}]|\.(?:\s|$)|$)")
# An assignment: `NAME=value`, `NAME: value`, `"NAME": "value"`, `os.environ["NAME"] = "value"`,
# and a Dockerfile's ENV in its older form too, a name, a space and its value (`ENV DB_PASSWORD
# hunter2`), read as `DB_PASSWORD=hunter2` is (_not_a_secret: `ENV API_TOKEN $TOKEN` stays).
# That form only as a Dockerfile writes it, at the start of a line, and only with a word that
# reads as a value (_set_by_env): in a sentence ("use ARG instead of ENV NPM_TOKEN because it
# leaks", "ENV DB_PASSWORD inside the image is a leak") the word after the name is prose.
_DOCKERFILE_LINE = r"(?:(?<![^\n])[ \t]*(?P<env>(?-i:ENV))[ \t]+)?"
_ASSIGNED_TO = r"(?:['\"]\]?)?(?(env)(?:\s*[:=]\s*|[ \t]+)|\s*[:=]\s*)['\"]?"
# These read the same in any case.
SECRETS_ANY_CASE = [
    (r"aws_secret_access_key|aws_session_token", "secret: AWS secret key"),
    (_DOCKERFILE_LINE + _CREDENTIAL + _ASSIGNED_TO + _VALUE + "{6,}", "secret: credential assignment"),
    (_SAID, "secret: a password or token given in words"),
    (_OPTION, "secret: a password or token given as an option"),
    (_CURL_USER, "secret: a password given to curl"),
    (_CLIENT_PASSWORD, "secret: a password given to a database or login client"),
    (_NAMED_KEY, "secret: a key under a name ending in KEY"),
    (r"\b(bearer|basic)\s+[A-Za-z0-9_\-\.=+/]{20,}", "secret: authorization header"),
]
SECRETS_RE = [(re.compile(p), why) for p, why in SECRETS]  # case matters for key prefixes
SECRETS_RE_I = [(re.compile(p, re.IGNORECASE), why) for p, why in SECRETS_ANY_CASE]


SECRET = "[secret]"
# The label before a secret's value is kept ("password=[secret]", "Bearer [secret]",
# "https://[secret]@host"): the lesson still says what was there.
_LABEL = re.compile(r"^(?:://|(?:[ \t]*(?-i:ENV)[ \t]+)?[^:=\s]*\s*[:=]\s*['\"]?"
                    r"|[ \t]*(?-i:ENV)[ \t]+[^:=\s]+[ \t]+['\"]?|(?:bearer|basic)\s+)", re.IGNORECASE)
# What some patterns find is a secret's name ("aws_secret_access_key", "AWS_SESSION_TOKEN"),
# not its value: snake case in one case, which a random key practically never is. The name
# stays; its value is what follows it after ":" or "=", or after a space when that word looks
# like a key (`aws configure set aws_secret_access_key wJalr…`), not prose ("AWS_SESSION_TOKEN
# before you deploy"). A name with no value after it is left as it is.
_SECRET_NAME = re.compile(r"[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)+")
_ASSIGNED = re.compile(r"\s*[:=]\s*['\"]?([^\s'\"]+)")
_FOLLOWING = re.compile(r"\s+['\"]?([^\s'\"]+)")
_KEY_CHARS = (re.compile(r"[a-z]"), re.compile(r"[A-Z]"), re.compile(r"[0-9]"))
KEY_MIN = 16  # a key, token or password of fewer characters is not told from a word after a space


def _looks_like_key(word: str) -> bool:
    """A word long enough and mixed enough (two of lower case, upper case, digits) to be a key
    rather than prose or a path."""
    return len(word) >= KEY_MIN and sum(1 for c in _KEY_CHARS if c.search(word)) >= 2


# A value random to the eye, as a generated key is and a name, a word or a path is not: 20 or
# more letters and digits (after Laravel's "base64:"), at least two of lower case, upper case
# and digits (as _looks_like_key), and one of: hex digits (`9f8e7d…`, a UUID); short runs of
# one case or of digits, three characters or fewer on average (`wJalrXUtnFEMI/K7MDENG`), where
# a name's words run longer (`HomePageTitle2024`, `user_profile_cache_v2`), with few "-" and
# "_" (one in 8 characters: `prod-eu-west-1-cache-v2` is words); or lower case with short runs
# of digits scattered through it (base 36, `3ax6xnjp29jd6fds4gc373sgvjxteol0`). A name of many
# words of three letters or fewer (`getMaxKeyForUrlAndApi`) reads as random too. So does a
# licence or product key, groups of letters and digits of one width and one case between "-"
# (`A1B2C-D3E4F-G5H6I-J7K8L-M9N0P`, `VK7JG-NPHTM-C97JM-9MPGT-3V66T`, `AB12-CD34-EF56-GH78`):
# four or more groups, or three of five or more, half of them with a letter and a digit.
RANDOM_MIN = 20
_RANDOM_ALPHABET = re.compile(r"(?:base64:)?([A-Za-z0-9+/_\-]+=*)", re.IGNORECASE)
_HEX = re.compile(r"[0-9a-fA-F]+(?:-[0-9a-fA-F]+)*")
_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_DIGITS = re.compile(r"[0-9]+")
_GROUPS = re.compile(r"[A-Z0-9]{4,8}(?:-[A-Z0-9]{4,8}){2,}|[a-z0-9]{4,8}(?:-[a-z0-9]{4,8}){2,}")
_LETTER_AND_DIGIT = re.compile(r"(?=.*[A-Za-z])(?=.*[0-9])")


def _dashed_groups(value: str) -> bool:
    """A licence or product key's groups (see above)."""
    if not _GROUPS.fullmatch(value):
        return False
    groups = value.split("-")
    mixed = sum(1 for group in groups if _LETTER_AND_DIGIT.match(group))
    return len({len(group) for group in groups}) == 1 and (len(groups) >= 4 or len(groups[0]) >= 5) \
        and 2 * mixed >= len(groups)


def _looks_random(value: str) -> bool:
    """Whether a value is random to the eye, as a generated key is (see above)."""
    whole = _RANDOM_ALPHABET.fullmatch(value)
    if not whole:
        return False
    value = whole.group(1)
    if _dashed_groups(value):
        return True
    runs = _RUN.findall(value)
    size = sum(map(len, runs))
    if size < RANDOM_MIN or not _looks_like_key(value):
        return False
    if _HEX.fullmatch(value):
        return True
    if 8 * (value.count("-") + value.count("_")) > size:
        return False
    if size <= 3 * len(runs):
        return True
    for part in re.split(r"[^A-Za-z0-9]", value):
        digits = _DIGITS.findall(part)
        if len(part) >= RANDOM_MIN and part.islower() and 8 * len(digits) >= len(part) \
                and sum(map(len, digits)) <= 2 * len(digits):
            return True
    return False


def _key_block_end(text: str, after: int) -> int:
    """Where a private key block whose header ends at `after` ends: past its END line, else
    at the end of the text."""
    end = text.find("-----END", after)
    close = text.find("-----", end + len("-----END")) if end >= 0 else -1
    return close + len("-----") if close >= 0 else len(text)


def _secret_span(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """Where the secret a share_safety pattern found sits in `text` (its value, not its label);
    None for a secret's name with no value after it. A backtick ending the find closes the code
    span the secret was written in ("`deploy --token=…`"): no key holds one, and taking it
    would leave the span open; unless the find opens with one too (a value quoted in its own
    backticks, "password: `…`"), when both go."""
    span = _secret_span_found(text, m)
    if span is None:
        return None
    start, end = span
    if text[start] != "`":  # a value written in its own backticks goes whole, both of them
        while end > start + 1 and text[end - 1] == "`":
            end -= 1
    return start, end


def _secret_span_found(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    found = m.group(0)
    if "value" in m.re.groupindex:  # the pattern says where its value is (a secret said in words)
        return m.span("value")
    if _SECRET_NAME.fullmatch(found):  # "aws_secret_access_key=…": the name stays, its value goes
        value = _ASSIGNED.match(text, m.end())
        if not value:
            value = _FOLLOWING.match(text, m.end())
            value = value if value and _looks_like_key(value.group(1)) else None
        return value.span(1) if value else None
    if found.startswith("-----BEGIN"):  # the pattern finds a key block's header: take all of it
        return m.start(), _key_block_end(text, m.end())
    label = _LABEL.match(found)
    start = m.start() + (label.end() if label and label.end() < len(found) else 0)
    return start, m.end() - 1 if found.endswith("@") else m.end()


# What follows "password=", "token:", "pwd=" and the like without being a secret: a path
# after pwd (`PWD=/home/me/app`, the working directory), a reference to where the secret is
# kept (`$API_TOKEN`, `${TOKEN}`, `$(cat ~/.token)`, `<your-token>`, `{{ token }}`), a type
# in code (`token: string;`), code that fetches it (`os.getenv("TOKEN")`,
# `request.form["password"]`), and what redaction put there already (`[secret]`).
_PWD_PATH = re.compile(r"[_\-]*(?:[A-Za-z0-9]+[_\-]+)*pwd\s*[:=]\s*['\"]?[~.]*/", re.IGNORECASE)
_NOT_A_VALUE = re.compile(
    r"(?:\$\{?[A-Z_][A-Z0-9_]*\}?|%[A-Z_][A-Z0-9_]*%|<[^<>\s]+>|\[secret\]|"
    r"string|number|boolean|bigint|object|unknown|undefined|Optional|String)(?![\w-])"
    r"|\$\(|\{\{|[A-Za-z_][\w.:]*[(\[<]"
    # Placeholders and code that no secret looks like: a literal (`None`), a mask (`"[MASK]"`,
    # `"********"`), one cut short (`sk-...`), a variable of PHP or the shell (`$token`), an
    # f-string's field (`{token}`), an expression (`(self.user + …`), a YAML tag (`!vault`).
    r"|(?:True|False|None|null|true|false|nil|\[[A-Z_]+\]|\$[a-z_]\w*)"
    r"(?![\w.-])|\{[a-z_][\w.]*(?:![rsa])?\}|\$[a-z_]\w*->|([*•#xX])\1{5,}(?![^\s'\",;)])|[^\s'\"]*?(?:\.\.\.|…)|\(|![a-z]\w*(?![\w-])"
)
# A value that is the name of another variable, an attribute or a type, in code. Only where
# code shows it is code, since a password can look like a name too (`password: MySecretPass`,
# `POSTGRES_PASSWORD: supersecret_password`, INI's `password = rootpassword`):
# - a chain of names without a digit (`tokenizer.eos_token`, `settings.SECRET_KEY`; a key
#   split by dots has digits: SendGrid's `SG.x…`, Discord's);
# - the credential's own name passed on (`token=token`, `self.password = password`), or a bare
#   credential word (`{"hf_token": token}`);
# - a built-in type (`password: bytes`, `api_key: str`);
# - a variable's name in a string (`ENV_KEY = "ANTHROPIC_API_KEY"`);
# - a name spelt as code (snake or camel case) that code follows, `, ) } ] [ | -> =`:
#   `password: HiddenText | None = None`, `token: TokenOpt = None,`, `token=access_token,`
#   (a plain word, `token=value,`, stays redacted: a one-word password looks the same);
# - `x = y` in code, y a name with `_` in it (`prev_token = current_token`).
# A name of this shape at the end of a line (`progress_token: ProgressToken`) stays redacted:
# YAML's `password: MySecretPass` looks the same.
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\??\.[A-Za-z_]\w*)*")
_DOTTED_NAMES = re.compile(r"[A-Za-z_]+(?:\??\.[A-Za-z_]+)+")
_TYPES = {"str", "bytes", "bytearray", "int", "float", "bool", "dict", "list", "tuple", "set", "Any",
          "SecretStr", "SecretBytes", "Optional", "Callable"}
_CODE_AFTER = re.compile(r"(?:[,)}\]\[`]|\s*(?:\||->|[)}\],])|\s+=\s)")
# A name as code spells one: snake case, camel case (`newToken`, `AccessToken`, `TokenOpt`); a
# password of one capitalised word (`Winterfell`) is not one, whatever follows it.
_CODE_NAME = re.compile(r"_*[A-Za-z][a-z0-9]*(?:_+[A-Za-z0-9]+)+_*|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+"
                        r"|(?:[A-Z][a-z0-9]+){2,}[A-Z]?")
# An .env or shell line (`MYSQL_ROOT_PASSWORD=root_password`): whatever follows is the value.
_ENV_LINE = re.compile(r"[A-Z][A-Z0-9_]*=[^\s'\"]")
_BARE_NAMES = {"token", "password", "passwd", "secret", "key", "pwd", "auth", "credentials", "creds"}
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:TOKEN|KEY|SECRET|PASSWORD|PASS|PWD)")
_SPACED_ASSIGNMENT = re.compile(r"[^=:\s]+\s+=\s+")


def _names_code(found: str, value: str, after: str) -> bool:
    """Whether an assignment's value names code rather than being a secret (see above)."""
    if _ENV_LINE.match(found):
        return False  # an .env line: a value
    if found[len(found) - len(value) - 1:][:1] in ("'", '"'):  # a string: a value, unless it
        return bool(_ENV_NAME.fullmatch(value))  # names a variable (`ENV_KEY = "API_TOKEN"`)
    name = _IDENTIFIER.match(value)
    if not name or name.group()[-1].isdigit():  # a password often ends in digits, a name not
        return False
    word, rest = name.group(), value[name.end():] + after
    if _DOTTED_NAMES.fullmatch(word) or word.split(".")[-1] in _TYPES:
        return True
    own = re.match(r"[^:=\s'\"]+", found)
    if (own and word.lower() == own.group().strip("_").lower()) or word.lower() in _BARE_NAMES:
        return True  # `token=token`, `{"hf_token": token}`: the variable holding it
    if _CODE_AFTER.match(rest) and _CODE_NAME.fullmatch(word):
        return True
    return bool(_SPACED_ASSIGNMENT.match(found) and "_" in word.strip("_") and not rest[:1].isalnum())


_ASSIGNMENT = next(p for p, why in SECRETS_RE_I if why == "secret: credential assignment")
_NAMED_KEY_RE = next(p for p, why in SECRETS_RE_I if why == "secret: a key under a name ending in KEY")
# A credential's name is found from the "-" and "_" it starts with; what is read as its name
# keeps one "_" of them (`__secret_key__`), as a name in code begins.
_LEADING_DASHES = re.compile(r"^[_\-]*?(?=_?[A-Za-z0-9])")
_DOCKERFILE_ENV = re.compile(r"^[ \t]*ENV[ \t]+([^:=\s'\"]+)(?:[ \t]*=[ \t]*|[ \t]+(?P<spaced>['\"]?))")
_LINE_END = re.compile(r"[ \t]*(?:\r?\n|$)")
_LETTERS = re.compile(r"[A-Za-z]+")


def _set_by_env(value: str, after: str) -> bool:
    """Whether the word after `ENV NAME ` (its older form) is the name's value rather than the
    next word of a sentence: a word with a digit or a symbol in it (a sentence's closing
    punctuation aside), one shaped as a key, or the last word of its line."""
    word = value.rstrip(".,:!?")
    if not _LETTERS.fullmatch(word) or _looks_like_key(word):
        return True
    return word == value and bool(_LINE_END.match(after))


def _not_a_secret(found: str, after: str = "") -> bool:
    """A credential assignment whose value is no secret (see above); `after`: the text that
    follows it."""
    env = _DOCKERFILE_ENV.match(found)
    if env and env.group("spaced") == "" and not _set_by_env(found[env.end():], after):
        return True  # `ENV NPM_TOKEN because …`: prose (a quoted word is a value)
    found = _LEADING_DASHES.sub("", _DOCKERFILE_ENV.sub(r"\1=", found))  # `--password=…` as `password=…`
    label = _LABEL.match(found)
    value = found[label.end():] if label else found
    return bool(_PWD_PATH.match(found) or _NOT_A_VALUE.match(value) or _names_code(found, value, after))


# A camel-case name's first word that makes it a setting or a reference rather than a secret's
# name: Kubernetes' and Helm's `existingSecret`, `externalSecret`, `sealedSecret`, `tlsSecret`
# (a Secret object's name), a flag's `useApiKey`, `hasAccessKey`, `requireApiKey`.
_SETTING_WORDS = frozenset(
    "existing sealed external tls ssl use uses has have is show hide require requires required enable enabled "
    "disable disabled allow skip no with without should create generate rotate".split())
# A value of plain words, lower case joined by "-", "_" or "." or one capitalised word
# (`pg-credentials`, `my-tls-cert`, `enabled`, `yes-please`, `Always`): no generated secret.
_PLAIN_WORDS = re.compile(r"[A-Z]?[a-z]+(?:[-_.][a-z]+)*")


def _camel_not_a_secret(found: str) -> bool:
    """A credential assignment under a camel-case name (`webhookSecret`, `stripeApiKey`,
    `SecretAccessKey`) that holds no secret: the name says a setting or a reference, or the value
    is plain words (see above). Other names keep their wider rules."""
    whole = _ASSIGNMENT.fullmatch(found)
    if not whole or whole.group("camel") is None:
        return False
    words = _NAME_WORDS.findall(found[whole.end("env") if whole.group("env") else 0:whole.end("camel")])
    if words and words[0].lower() in _SETTING_WORDS:
        return True
    label = _LABEL.match(found)
    return bool(label and _PLAIN_WORDS.fullmatch(found[label.end():]))


_RANDOM_ONLY = {p for p, why in (*SECRETS_RE, *SECRETS_RE_I)
                if why in ("secret: a key as a URL's user", "secret: a key under a name ending in KEY")}

# A name ending in KEY that keys a thing rather than opens one: a cache's, an object's in a
# bucket, a row's, a commit's, an idempotent request's. Its last word before KEY says so
# (`commit_key`, `OBJECT_KEY`, `cacheKey`, `Idempotency-Key`), unless a word of the name says
# it opens something (`SESSION_CACHE_KEY`, `api_object_key`, `node_cache_key`). Under such a
# name a hash (hex digits as many as a git commit's, short or whole, or an MD5's, a SHA-1's: 7
# to 40; a SHA-256's, 64; a SHA-512's, 128) or a UUID, alone or among words (`v1-deps-<sha>`,
# `linux-node18-<sha>`), is the thing's name and stays. Alone, hex of a key's size (32, 64 or
# 128 digits: 16, 32 or 64 bytes) stays only under a name of a digest or an identifier
# (_IDENTIFIER_WORDS: `CACHE_KEY`, `etag_key`, `ROW_KEY`, an Azure table's row, a GUID written
# without its dashes): a file's, a message's or a request's key is as often one that opens it
# (age's file key, a message key, a request's signing key). Any other name keeps its hex as a
# secret (`RAILS_MASTER_KEY`, `ENCRYPTION_KEY`, `LICENSE_KEY`, `webhookKey`, `NODE_KEY`, the
# private key of a libp2p or geth node, `PEER_KEY`, `VALIDATOR_KEY`): a generated key is
# written in hex as often as not.
_IDENTIFIER_WORDS = frozenset(
    "id cache object obj commit sha hash idempotency idempotent dedup dedupe deduplication sort range partition "
    "primary foreign row record item entity lookup index etag checksum digest revision rev version build artifact "
    "layer image blob bucket trace correlation snapshot manifest tree unique composite".split())
_THING_WORDS = _IDENTIFIER_WORDS | frozenset(
    "file path request event message job task run lock cursor page translation i18n".split())
_OPENING_WORDS = frozenset(
    "api secret private access master encryption encrypt decryption signing sign license licence product "
    "activation registration serial auth session webhook hmac jwt cipher crypto aes rsa client app account "
    "deploy ssh service admin token password pass credential credentials integration routing storage "
    "node peer validator wallet signer keypair keystore identity device host".split())
_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])")
_UUID = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-fA-F])",
                   re.IGNORECASE)
_HASH = re.compile(r"[0-9a-f]{7,40}|[0-9a-f]{64}|[0-9a-f]{128}|[0-9A-F]{7,40}|[0-9A-F]{64}|[0-9A-F]{128}")
_THING_WORD = re.compile(r"(?:[a-z]{1,20}|[A-Z]{1,20}|[A-Z][a-z]{1,19})[0-9]{0,4}|[0-9]{1,8}")
_KEY_SIZED_HEX = re.compile(r"[0-9a-fA-F]{32}|[0-9a-fA-F]{64}|[0-9a-fA-F]{128}")


def _keys_a_thing(name: str, value: str) -> bool:
    """Whether a name ending in KEY keys a thing and its value is that thing's hash or UUID
    (see above)."""
    words = [w.lower() for part in re.split(r"[_\-]+", name) if part
             for w in ([part] if part.islower() or part.isupper() else _NAME_WORDS.findall(part))]
    while words and words[-1] in ("key", "base"):
        words.pop()
    if not words or words[-1] not in _THING_WORDS or _OPENING_WORDS.intersection(words):
        return False
    return _a_hash_among_words(value) and (words[-1] in _IDENTIFIER_WORDS or not _KEY_SIZED_HEX.fullmatch(value))


def _a_hash_among_words(value: str) -> bool:
    """A hash or a UUID, alone or among words joined by "-", "_" or "/" (see above)."""
    parts = re.split(r"[-_/]", _UUID.sub("0" * 40, value))
    return any(_HASH.fullmatch(part) for part in parts) and \
        all(_HASH.fullmatch(part) or _THING_WORD.fullmatch(part) for part in parts)


def is_secret(pattern: re.Pattern[str], found: str, after: str = "") -> bool:
    """Whether what one of SECRETS_RE / SECRETS_RE_I found is a secret: not an assignment of
    a reference, a type or a path (`API_TOKEN=$API_TOKEN`, `token: string;`, `PWD=/home/me`);
    for a name ending in KEY and a URL's user, only a value random to the eye (_looks_random).
    `after` is the text that follows the find (code around a name says it is one).
    share_safety flags what redaction redacts, no more."""
    if pattern in _RANDOM_ONLY:
        whole = pattern.fullmatch(found)
        if not whole or not _looks_random(whole.group("value")):
            return False
        return not (pattern is _NAMED_KEY_RE and _keys_a_thing(whole.group("name"), whole.group("value")))
    return not (pattern is _ASSIGNMENT and (_not_a_secret(found, after) or _camel_not_a_secret(found)))


def redact_secrets(text: str) -> str:
    """The text with every secret share_safety recognises (API keys, tokens, passwords,
    private keys, credentials in URLs) replaced by "[secret]": lessons are written to agent
    memory, reports and prompts, and episodes are recalled by agents, where a secret must
    never go. Deterministic and idempotent: redacting twice is redacting once.

    An ellipsis marks where a text was cut and is never part of a secret: "password=abc…"
    is not read as a six-character password."""
    # Redacting one secret can bring the text around it together into another (a key
    # inside an assignment whose value then ends elsewhere): go on until nothing changes.
    for _ in range(4):
        once = _redact_once(text)
        if once == text:
            break
        text = once
    return text


def _redact_once(text: str) -> str:
    scan = text.replace("…", " ")  # same length: spans found in `scan` are spans of `text`
    spans = sorted(span for pattern, _why in (*SECRETS_RE, *SECRETS_RE_I)
                   for m in pattern.finditer(scan)
                   if is_secret(pattern, m.group(0), scan[m.end():m.end() + 8])
                   and (span := _secret_span(scan, m)))
    out, at = [], 0
    for start, end in spans:  # overlapping finds (a key inside "token=…") redact once
        if end <= at:
            continue
        out.append(text[at:max(start, at)] + (SECRET if start >= at else ""))
        at = end
    return "".join(out) + text[at:]


def _redacted(episode: dict[str, Any]) -> dict[str, Any]:
    """An episode whose words (gist, title, detail) carry no secrets."""
    return {k: redact_secrets(v) if k in ("gist", "title", "detail") and isinstance(v, str) else v
            for k, v in episode.items()}
