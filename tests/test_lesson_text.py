"""Lesson text: deterministic, short, imperative, from the person's own words."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import lesson_text, redaction, share_safety


def test_pushback_filler_is_taken_off_and_the_words_kept():
    assert lesson_text.imperative("no, use uv not pip") == "Use uv not pip."
    assert lesson_text.imperative("I said: run the tests first!") == "Run the tests first!"
    assert lesson_text.imperative("you should use ruff format") == "Use ruff format."
    assert lesson_text.imperative("you shouldn't push to main") == "Don't push to main."


@pytest.mark.parametrize("words, lesson", [
    ("Stop adding comments to every line", "Stop adding comments to every line."),
    ("no, no emojis in commit messages", "No emojis in commit messages."),
    ("Nope, no mocks in the integration tests", "No mocks in the integration tests."),
    ("No sudo. Use --user.", "No sudo. Use --user."),
    ("stop using sudo for pip installs", "Stop using sudo for pip installs."),
    ("No more console.log calls in production code", "No more console.log calls in production code."),
    ("wait for CI before merging", "Wait for CI before merging."),
    ("wrong branch, use main", "Wrong branch, use main."),
])
def test_a_negation_that_carries_the_meaning_is_kept(words, lesson):
    """"Stop adding comments" became "Adding comments.": the opposite of what was asked."""
    assert lesson_text.imperative(words) == lesson


@pytest.mark.parametrize("words, lesson", [
    ("no, use pnpm not npm", "Use pnpm not npm."),
    ("No. Use pnpm.", "Use pnpm."),
    ("nope - use uv", "Use uv."),
    ("no — use uv", "Use uv."),
    ("Stop! Run the linter first", "Run the linter first."),
    ("no no no, use pnpm", "Use pnpm."),
    ("wait, use main", "Use main."),
    ("please use ruff", "Use ruff."),
])
def test_an_interjection_is_taken_off(words, lesson):
    assert lesson_text.imperative(words) == lesson


_INTERJECTIONS = ["", "no, ", "No. ", "nope, ", "Nope - ", "stop! ", "no — ", "no no, ", "wait, ",
                  "hmm ", "ok so ", "well, ", "actually ", "I said: ", "please ", "sorry, "]
_NEGATIONS = ["no", "never", "don't", "stop", "not"]
_REST = ["emojis", "mocks", "sudo", "using", "adding", "comments", "in", "the", "tests", "pip",
         "console.log", "calls", "to", "main", "production", "code", "more", "ever", "push"]


@given(st.sampled_from(_INTERJECTIONS), st.sampled_from(_NEGATIONS),
       st.lists(st.sampled_from(_REST), min_size=1, max_size=8), st.sampled_from(["", ".", "!"]))
def test_a_lesson_never_loses_the_negation_it_was_said_with(interjection, negation, rest, end):
    words = f"{interjection}{negation} {' '.join(rest)}{end}"
    lesson = lesson_text.imperative(words)
    assert lesson.lower().split()[0] == negation, (words, lesson)


def test_a_refused_call_without_words_asks_first_naming_the_command_not_the_pipeline():
    ep = {"gist": "refused Bash: rm -rf build", "title": "refused Bash: rm -rf build"}
    assert lesson_text.draft("correction", [ep]) == "Ask before running `rm -rf build` (the person refused it)."
    ep = {"gist": "refused Bash: mix phx.server 2>&1 | head -80"}
    assert lesson_text.draft("correction", [ep]) == "Ask before running `mix phx.server` (the person refused it)."
    ep = {"gist": "refused Bash: cd /srv/app && FOO=1 uv run pytest -q tests/t.py > out.log; echo done"}
    assert lesson_text.draft("correction", [ep]) == "Ask before running `uv run pytest -q` (the person refused it)."
    ep = {"gist": "refused exec_command: git commit -m \"wip\" && git push"}
    assert lesson_text.draft("correction", [ep]) == "Ask before running `git commit -m` (the person refused it)."
    ep = {"gist": "refused Edit: src/app.py"}
    assert lesson_text.draft("correction", [ep]) == "Ask before using Edit on `src/app.py` (the person refused it)."
    ep = {"gist": "refused WebSearch"}
    assert lesson_text.draft("correction", [ep]) == "Ask before using WebSearch (the person refused it)."


@given(st.text(alphabet="abc -|&;>2<1'\"$`", max_size=80))
def test_a_refused_shell_call_never_puts_a_pipe_or_redirection_in_its_lesson(command):
    lesson = lesson_text.draft("correction", [{"gist": f"refused Bash: {command}"}])
    assert lesson.startswith("Ask before running ")
    assert not any(ch in lesson for ch in "|&;<>$'\"") and lesson.count("`") in (0, 2)


_SECRETS = [
    "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e",
    "sk-proj-Ab3dEf6hIj9kLm2nOp5q",
    "ghp_abcdefghijklmnopqrstuvwxyz0123",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-1234567890-abcdefghij",
]


@pytest.mark.parametrize("secret", _SECRETS)
def test_a_secret_the_person_typed_never_reaches_the_lesson(secret):
    words = f"no, the secret is {secret}, not the test one"
    assert share_safety.incoming(words)  # share_safety recognises it: the patterns are shared
    lesson = lesson_text.draft("correction", [{"gist": words, "title": words}])
    assert lesson == "The secret is [secret], not the test one."
    assert not share_safety.incoming(lesson)


def test_a_secrets_label_is_kept_and_its_value_redacted():
    redact = lesson_text.redact_secrets
    assert redact("send Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345 please") == \
        "send Authorization: Bearer [secret] please"
    assert redact("set aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY first") == \
        "set aws_secret_access_key=[secret] first"
    assert redact("password = hunter2222 works") == "password = [secret] works"
    assert redact("clone https://bob:s3cretpw@git.example.com/x") == "clone https://[secret]@git.example.com/x"
    assert redact("token=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e ok") == "token=[secret] ok"
    assert redact("key: -----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY----- done") == \
        "key: [secret] done"
    assert redact("key: -----BEGIN PRIVATE KEY-----\nMIIEabc (cut off") == "key: [secret]"
    assert redact("AWS_SESSION_TOKEN: FwoGZXIvYXdzEJr//////////wEaDM done") == "AWS_SESSION_TOKEN: [secret] done"
    assert redact("use uv, not pip") == "use uv, not pip"


_AWS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
_AWS_TOKEN = "FwoGZXIvYXdzEJr//////////wEaDM3x"


@pytest.mark.parametrize("words, lesson", [
    (f"no, run aws configure set aws_secret_access_key {_AWS_KEY} first",
     "Run aws configure set aws_secret_access_key [secret] first."),
    (f"no, export AWS_SESSION_TOKEN {_AWS_TOKEN} before you deploy",
     "Export AWS_SESSION_TOKEN [secret] before you deploy."),
    (f"no, set AWS_SESSION_TOKEN '{_AWS_TOKEN}' first", "Set AWS_SESSION_TOKEN '[secret]' first."),
    (f"no, put AWS_SESSION_TOKEN\n{_AWS_TOKEN} in the file", "Put AWS_SESSION_TOKEN [secret] in the file."),
    (f"no, set aws_secret_access_key = {_AWS_KEY} first", "Set aws_secret_access_key = [secret] first."),
    (f"no, use AWS_SESSION_TOKEN:{_AWS_TOKEN} here", "Use AWS_SESSION_TOKEN:[secret] here."),
])
def test_a_secret_after_its_name_is_redacted_and_the_name_kept(words, lesson):
    """The value follows its name after ":", "=" or a space (`aws configure set <name> <key>`):
    the key went, not the name before it."""
    assert share_safety.incoming(words)  # the raw words are flagged
    drafted = lesson_text.draft("correction", [{"gist": words, "title": words}])
    assert drafted == lesson
    assert _AWS_KEY not in drafted and _AWS_TOKEN not in drafted


@pytest.mark.parametrize("words, lesson", [
    ("no, export AWS_SESSION_TOKEN before you deploy", "Export AWS_SESSION_TOKEN before you deploy."),
    ("no, unset aws_secret_access_key", "Unset aws_secret_access_key."),
    ("AWS_SESSION_TOKEN", "AWS_SESSION_TOKEN."),
    ("no, keep aws_secret_access_key in ~/.aws/credentials_file", "Keep aws_secret_access_key in ~/.aws/credentials_file."),
    ("no, read AWS_SESSION_TOKEN AWS_SECRET_ACCESS_KEY and more", "Read AWS_SESSION_TOKEN AWS_SECRET_ACCESS_KEY and more."),
])
def test_a_secrets_name_with_no_value_after_it_is_kept(words, lesson):
    """Only a word that looks like a key (long, mixed characters) is a value after a space:
    prose after a name stays, and a bare name is never replaced."""
    assert share_safety.incoming(words)  # share_safety still flags the raw words (the name)
    assert lesson_text.draft("correction", [{"gist": words, "title": words}]) == lesson
    assert lesson_text.redact_secrets(words) == words


@given(st.sampled_from(["aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "aws_session_token", "AWS_SESSION_TOKEN"]),
       st.sampled_from([" ", "  ", "\t", "=", ": ", " = ", " '", "=\""]),
       st.text(alphabet="abcXYZ019/+", min_size=16, max_size=60).filter(redaction._looks_like_key))
def test_a_key_after_a_secrets_name_never_survives(name, sep, value):
    redacted = lesson_text.redact_secrets(f"set {name}{sep}{value} now")
    assert value not in redacted and name in redacted


@given(st.sampled_from(_SECRETS), st.text(alphabet="ab =:,.", max_size=30), st.text(alphabet="ab =:,.", max_size=30))
def test_a_secret_is_redacted_whatever_surrounds_it(secret, before, after):
    assert secret not in lesson_text.redact_secrets(f"{before} {secret} {after}")


@given(st.sampled_from(_SECRETS), st.sampled_from(["deploy --token=", "export API_KEY=", "curl -u me:", ""]))
def test_a_secret_at_the_end_of_a_code_span_leaves_the_span_closed(secret, lead):
    """The closing backtick is the code span's, not the secret's: taking it left "`deploy
    --token=[secret] failed here" with a span that never ends."""
    redacted = lesson_text.redact_secrets(f"`{lead}{secret}` failed here (denied)")
    assert secret not in redacted
    assert redacted.count("`") == 2 and redacted.endswith("` failed here (denied)")


@pytest.mark.parametrize("text", ["token=`ghp_abcdefghijklmnopqrstuvwxyz0123456789`",
                                  "Set password: `hunter2hunter2xyz` then run it",
                                  "api_key=`sk-abcdefghijklmnopqrstuvwxyz012345` in .env"])
def test_a_secret_quoted_in_its_own_backticks_goes_with_both(text):
    redacted = lesson_text.redact_secrets(text)
    assert "[secret]" in redacted and redacted.count("`") % 2 == 0, redacted


def test_every_kind_of_lesson_is_drafted_without_secrets():
    key = "ghp_abcdefghijklmnopqrstuvwxyz0123"
    error = {"title": "Bash failed: auth", "gist": f"git clone x\nfix: export GH_TOKEN={key}"}
    refused = {"gist": f"refused Bash: GH_TOKEN={key} gh pr create"}
    surprise = {"gist": f"the CI token is {key}"}
    for kind, ep in (("error", error), ("correction", refused), ("surprise", surprise)):
        lesson = lesson_text.draft(kind, [ep])
        assert key not in lesson and not share_safety.incoming(lesson), lesson


def test_clip_cuts_at_a_word_boundary():
    assert lesson_text.clip("use the staging database for these", 20) == "use the staging…"
    assert lesson_text.clip("use the staging database", 15) == "use the staging…"  # a whole word at the limit
    assert lesson_text.clip("x" * 30, 10) == "x" * 10 + "…"  # no boundary: cut the word
    assert lesson_text.clip("short", 10) == "short"


def test_error_text_names_the_error_and_the_fix_when_one_was_recorded():
    ep = {"title": "Bash module not found: No module named 'yaml'", "gist": "python x.py\nfix: uv add pyyaml"}
    assert lesson_text.draft("error", [ep]) == "On Bash module not found: No module named 'yaml': uv add pyyaml."
    ep = {"title": "Bash module not found: No module named 'yaml'", "gist": "Bash: python x.py\nNo module named 'yaml'"}
    assert lesson_text.draft("error", [ep]) == \
        "`python x.py` failed here (module not found: No module named 'yaml'); install the module first."
    ep = {"title": "Bash command not found: /bin/bash: line …: rg: command not found", "gist": "Bash: rg -n TODO"}
    assert lesson_text.draft("error", [ep]) == \
        "`rg -n TODO` failed here (command not found); check the tool is installed, or use another."
    ep = {"title": "Bash network error: ERROR tests/t.py::test_ttl - redis.ConnectionError: Error 111",
          "gist": "Bash: uv run pytest -q tests/t.py"}
    assert lesson_text.draft("error", [ep]) == ("`uv run pytest -q tests/t.py` failed here (network error: "
                                                "redis.ConnectionError: Error 111); check that the service it needs is running.")
    ep = {"title": "the deploy broke", "gist": "no structure here"}
    assert lesson_text.draft("error", [ep]).startswith("Avoid repeating this error: the deploy broke")


@pytest.mark.parametrize("title, call, lesson", [
    (("Task failed: InputValidationError: Task failed due to the following issue: "
      "The required parameter `prompt` is missing"), "Task",
     ("`Task` failed here (InputValidationError: … The required parameter `prompt` is missing); "
      "find out why before running it again.")),
    ("Bash failed: error: failed to push some refs to 'origin'", "Bash: git push origin main",
     ("`git push origin main` failed here (error: failed to push some refs to 'origin'); "
      "find out why before running it again.")),
    ("Bash failed", "Bash: make", "`make` failed here; find out why before running it again."),
])
def test_a_failure_whose_line_says_failed_keeps_the_line(title, call, lesson):
    """The catch-all class is "failed": a line saying "failed" was taken for a repeat of the
    class and dropped, leaving "`Task` failed here (failed)"."""
    tool = call.partition(":")[0].lower()  # the tag `tool:<name>` of the failed call
    assert lesson_text.draft("error", [{"title": title, "gist": f"{call}\nwhat it said", "tool": tool}]) == lesson


def test_a_failed_edit_is_named_by_its_tool_not_by_one_projects_path():
    """The same error in two projects is one lesson shown in both: it named the file's absolute
    path in the first project ("`/home/dev/shop/CLAUDE.md` failed here")."""
    sources = [{"title": "Edit failed: File has not been read yet. Read it first before writing to it.",
                "gist": f"Edit: {root}/CLAUDE.md\nFile has not been read yet.", "cwd": root, "tool": "edit"}
               for root in ("/home/dev/shop", "/home/dev/blog")]
    lesson = lesson_text.draft("error", sources)
    assert lesson == ("`Edit` failed here (File has not been read yet. Read it first before writing "
                      "to it.); find out why before running it again.")
    assert lesson_text.draft("error", sources[::-1], 1) == lesson


@pytest.mark.parametrize("title, gist, told, called", [
    ("Build failed: missing env var STRIPE_KEY", "Note: set STRIPE_KEY before npm run build",
     # told: a note is no command ("set STRIPE_KEY before npm run build" does not read as one)
     "Avoid repeating this error: Build failed: missing env var STRIPE_KEY.",
     "`set STRIPE_KEY before npm run build` failed here (missing env var STRIPE_KEY); find out why before "
     "running it again."),
    ("Deploy timed out: helm upgrade hung", "Context: helm upgrade --install api ./chart",
     "`helm upgrade --install api ./chart` failed here (timed out: helm upgrade hung); give it more time "
     "or a smaller scope.", None),
])
def test_an_error_no_tool_call_made_is_named_by_its_command_not_by_its_label(title, gist, told, called):
    """Only a failed tool call's gist starts with its tool ("Edit: …", tagged `tool:edit`): the
    label of an error a person told was taken for a tool ("`Note` failed here")."""
    assert lesson_text.draft("error", [{"title": title, "gist": gist}]) == told
    assert lesson_text.draft("error", [{"title": title, "gist": gist, "tool": "bash"}]) == (called or told)


def test_a_lesson_about_a_fix_keeps_its_code_span_closed_and_what_is_missing():
    """The fix's closing backtick was taken off as a quote around the words ("run `uv add
    requests."), and the lesson did not say which module was missing."""
    ep = {"title": "ModuleNotFoundError: No module named 'requests'", "gist": "running the app\nfix: run `uv add requests`"}
    assert lesson_text.draft("error", [ep]) == "On ModuleNotFoundError (`requests`): run `uv add requests`."
    ep = {"title": "zsh: command not found: fd", "gist": "fix: `brew install fd`"}
    assert lesson_text.draft("error", [ep]) == "On command not found (`fd`): `brew install fd`."
    assert lesson_text.imperative("'use `uv sync`'") == "Use `uv sync`."
    assert lesson_text.imperative("`uv sync` before the tests") == "`uv sync` before the tests."
    assert lesson_text.imperative('"`uv sync`"') == "Uv sync."  # one span around it all is a quote


@pytest.mark.parametrize("lesson, parts", [
    ("`npm run build` failed here (npm ERR! code ELIFECYCLE); find out why before running it again.",
     ("failed", "npm ERR! code ELIFECYCLE", "npm run build")),
    ("`fd . src` failed here (command not found); check the tool is installed, or use another.",
     ("command not found", "command not found", "fd . src")),
    ("`make` failed here; find out why before running it again.", ("failed", "", "make")),
    ("On ModuleNotFoundError (`requests`): run `uv add requests`.",
     ("", "On ModuleNotFoundError (`requests`): run `uv add requests`.", "requests")),
    ("On ModuleNotFoundError: run `uv add requests`.", ("", "On ModuleNotFoundError: run `uv add requests`.", "")),
    ("On `make deploy` broke prod: use `make deploy-staging`.",
     ("", "On `make deploy` broke prod: use `make deploy-staging`.", "make deploy")),
    ("Avoid repeating this error: `make deploy` broke prod.", ("", "`make deploy` broke prod.", "make deploy")),
])
def test_an_error_lessons_words_say_what_failed_never_its_remedy(lesson, parts):
    assert lesson_text.error_lesson_parts(lesson) == parts


def test_paths_inside_the_project_are_written_relative_to_it():
    ep = {"title": "Bash failed: cat: /home/dev/shop/conf/app.toml: Is a directory",
          "gist": "Bash: cat /home/dev/shop/conf/app.toml /etc/hosts", "cwd": "/home/dev/shop"}
    assert lesson_text.draft("error", [ep]) == \
        "`cat conf/app.toml /etc/hosts` failed here (cat: conf/app.toml: Is a directory); find out why before running it again."
    assert lesson_text.draft("error", [{**ep, "cwd": "/"}]).startswith("`cat /home/dev/shop/conf/app.toml /etc/hosts`")


def test_a_long_error_line_keeps_its_class_and_its_end():
    ep = {"title": "Bash network error: ConnectionError: while fetching the package index from the "
                   "mirror configured for this machine: connection refused by 10.0.0.7",
          "gist": "Bash: pip install -r requirements.txt"}
    assert lesson_text.draft("error", [ep]) == (
        "`pip install -r requirements.txt` failed here (network error: ConnectionError: … connection "
        "refused by 10.0.0.7); check that the service it needs is running.")


# Words of the letters a to j (no label's words are among them) and "failed", which a line
# says as often as the catch-all label does.
_WORDS = st.lists(st.one_of(st.text(alphabet="abcdefghij", min_size=1, max_size=8), st.just("failed")),
                  min_size=1, max_size=16)
_SEPARATORS = st.lists(st.sampled_from([" ", " ", ": ", "; ", ", "]), min_size=16, max_size=16)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["Bash", "Task", "Edit", "exec_command"]), st.sampled_from(list(lesson_text._ADVICE)),
       _WORDS, _SEPARATORS)
def test_a_lesson_from_a_failed_call_keeps_a_short_line_whole(tool, label, words, separators):
    line = "".join(w + s for w, s in zip(words, separators)).strip(" :;,")
    lesson = lesson_text.draft("error", [{"title": f"{tool} {label}: {line}", "gist": f"{tool}: do it",
                                          "tool": tool.lower()}])
    assert "\n" not in lesson and len(lesson) <= lesson_text.MAX_CHARS + 1
    if len(line) <= 60:
        assert f" failed here ({line}); " in lesson or f" failed here ({label}: {line}); " in lesson, lesson


def test_surprise_text_keeps_the_persons_words():
    assert lesson_text.draft("surprise", [{"gist": "the tests need REDIS_URL"}]) == \
        "Keep in mind: the tests need REDIS_URL."


@given(st.text(max_size=2000))
def test_any_words_give_a_short_single_line_or_nothing(words):
    out = lesson_text.imperative(words)
    assert len(out) <= lesson_text.MAX_CHARS + 2 and "\n" not in out
    assert out == lesson_text.imperative(words)  # deterministic
