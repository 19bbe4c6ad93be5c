"""The programs a text names, for prime's program match: what a shell call or a prompt runs
or names ("pip install requests", "why does `pytest` fail?") and what a lesson is about ("We
use uv here, not pip"; "`kubectl apply` went to the production cluster …").

A lesson is a sentence about a program; a command, or a prompt that runs or names that
program, is often far from it in the model's vector space ("pip install requests" scored 0.43
against "We use uv here, never pip (uv add / uv sync)"). Naming the same program is the
evidence the vector misses. A program is named by a command (a shell call, a prompt written
as one, a `code span`: its leading words as `shell_words.program_words` reads them, and the
command it runs through a runner such as `uv run` or `python -m`) or by a well-known tool's
name used as a word (KNOWN_PROGRAMS). An error lesson is about the command that failed; a call
that runs its remedy already follows it and is not matched. What an error lesson says failed
and what its remedy is are read here only (`read_error_lesson`, in the wordings lesson_text
drafts); the lessons pass reads its class from the same reading. On the hook path: only `re`
and shell_words are imported.
"""

from __future__ import annotations

import re
from typing import Callable, Literal

from remem.engine.shell_words import (DIRECTORY_CHANGES, ENV_ASSIGN, command_words, program_words, runs_command,
                                      split_commands, unwrap)

# Command-line tools whose name, written as a plain word in a developer's prompt or lesson,
# means the tool. Left out: names that are also everyday words or the name of a language or a
# service (make, find, open, test, black, mix, rake, rails, gem, apt, next, go, node, python,
# ruby, java, stripe, vault), which name a program only in a code span or at the head of a
# prompt written as a command (`reads_as_command`).
KNOWN_PROGRAMS = frozenset("""
    pip pip3 pipx uv uvx poetry pipenv conda mamba micromamba tox nox pytest ruff flake8 pylint
    mypy pyright isort pre-commit alembic uvicorn gunicorn django-admin python3
    npm npx pnpm yarn deno nodejs tsc eslint prettier vitest playwright cypress webpack vite
    esbuild cargo rustup rustc gradle gradlew mvn sbt bundler rubocop rspec phpunit dotnet nuget
    cmake bazel gcc iex
    brew apt-get dnf yum pacman sudo
    git gh glab hg svn
    docker docker-compose podman kubectl helm minikube k9s kustomize skaffold terraform
    terragrunt pulumi ansible ansible-playbook aws gcloud gsutil az eksctl doctl flyctl heroku
    vercel netlify wrangler
    psql pg_dump pg_restore mysql mysqldump sqlite3 redis-cli mongosh
    sed awk gawk grep egrep rg ripgrep fzf jq yq curl wget ssh scp rsync ssh-add ssh-keygen gpg
    openssl tmux chmod chown rm xargs systemctl journalctl crontab ngrok ffmpeg
""".split())
# Programs installed under versioned names as well as their own (pip3, pip3.12, python3.12,
# gcc-13): a lesson naming one of a family and no other is about the program, whichever name a
# call gives it ("We use uv here, not pip" for `pip3 install`); one naming two tells them apart
# ("`python` is not found on this Mac …; call python3" is not about `python3 -m venv`). Only
# these families: a name ending in digits is often another program (sqlite3, base64, k9s).
VERSIONED_FAMILIES = frozenset("pip python pypy pydoc idle ruby gem irb perl php lua gcc g++ clang clang++".split())
# A family's name in a lesson, versioned or not; a pattern, compiled on first use only (few
# calls name a versioned program).
_FAMILY_MEMBER = (r"(?<![\w.+-])(clang\+\+|g\+\+|" + "|".join(sorted(VERSIONED_FAMILIES - {"g++", "clang++"}))
                  + r")(?:-?\d+(?:\.\d+)*)?(?![\w+-]|\.\d)")
# Words of prose that name a command with its flag ("Never force-push to main"), and the flags
# that make a call run it: `git push -f origin main` runs ("git", "push", "--force").
PROSE_COMMANDS = {word: ("git", "push", "--force")
                  for word in ("force-push", "force-pushes", "force-pushed", "force-pushing")}
_FLAGGED = {("git", "push"): (("--force", "-f"), ("git", "push", "--force"))}
# The words lesson_text drafts a refusal in ("Ask before running `mix phx.server` (the person
# refused it)."): about the call before it is made.
REFUSAL_LEAD = "Ask before "
REFUSED = "(the person refused"
# Words that run the command after them: "uv run pytest -q" runs pytest too.
RUNNERS = (("uv", "run"), ("uvx",), ("poetry", "run"), ("pipenv", "run"), ("pipx", "run"),
           ("pdm", "run"), ("hatch", "run"), ("python", "-m"), ("python3", "-m"), ("npx",),
           ("bunx",), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("bundle", "exec"),
           ("sudo",))
# A `code span` in a prompt or lesson, its text in group 1 (the lessons pass reads spans so too).
CODE_SPAN = re.compile(r"`([^`\n]+)`")
EDGE = "\"'()[]{}<>,.;:!?*"  # what a word in prose may carry around it
_CLAUSE_END = re.compile(r"[,.;:!?)]$")
CLAUSE = re.compile(r"[,;(]|\.(?:\s|$)")
REJECTS = re.compile(r"\b(?:not|never|instead of|rather than|avoid|don't|do not)\b", re.IGNORECASE)
TAIL_WORDS = 3
# A tool named after one of these and before a noun names a thing of that tool, not a call of
# it: "Never edit an Alembic migration" is about editing a file, not `alembic upgrade`. Unless
# the noun is the tool itself ("Use the gh CLI").
_DETERMINERS = frozenset("a an the this that these those any every each your our its".split())
_THE_TOOL_ITSELF = frozenset("cli command commands binary tool client executable suite run runs".split())
# A program run many times a session whose subcommands do unrelated things: a lesson naming
# one of them in prose ("Do not use git push --force on main") is about that subcommand, not
# every call of the program (`git status`). Only these words, so prose goes on being prose.
PROSE_SUBCOMMANDS = {"git": frozenset("""
    add bisect branch checkout cherry-pick clean clone commit diff fetch init log merge mv pull
    push rebase reset restore revert rm stash status switch tag worktree submodule
""".split())}
# A prompt written as a command: a program's name as a shell takes it (lowercase: "Make the
# header sticky" is a sentence), then within COMMAND_LEAD words an argument a sentence does not
# have (a flag, a path or file name, an assignment, a variable or a shell operator; not a
# quote: "show '3 days ago' style times" is a sentence), after plain words that are no
# sentence's ("open the file src/cart.tsx" is one).
COMMAND_LEAD = 3
_PROGRAM_NAME = re.compile(r"[a-z][a-z0-9._+-]*$")
_PLAIN_WORD = re.compile(r"[a-z0-9][a-z0-9._:@+-]*$")
_ARGUMENT = re.compile(r"-{1,2}[A-Za-z0-9]|\S*/|\.\.?$|~|[A-Za-z_]\w*=|[|&;<>$]|\d>"
                       r"|[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,4}$")
SENTENCE_WORDS = frozenset("""
    a an the this that these those it its my our your their all any some every each sure out up
    down where what how why when which who whether if to in on at of for with from by into
    about and or but please me us them
""".split())
Commands = tuple[tuple[str, ...], ...]
Calls = tuple[Commands, ...]  # each: the commands one command runs, its own words first

# ----------------------------------------------------------------- error lessons' wordings
# The wordings lesson_text drafts an error lesson in, read back by `read_error_lesson`:
# - a failed call: "`<command>` failed here (<how>); <advice>." (no how when the line only
#   repeated the label; a lesson cut to its length is cut in its advice, never before);
# - a fix: "On <error>: <fix>." (the error's class, with the module or command missing in a
#   code span, or the error's title, which lesson_text says is one when its words do not);
# - an error without either: "Avoid repeating this error: <title>."
FAILED_HERE = "failed here"
AVOID = "Avoid repeating this error: "
FIX_LEAD = "On "
# After the command, which runs to the first "` failed here" (a drafted one cannot hold it):
# the how, to the last "); " (the advice holds none), and the advice.
_CALL_END = f"` {FAILED_HERE}"
_AFTER_CALL = re.compile(r"(?: \((.*)\))?; (.*)")
# The words naming an error: those of every class consolidate.error_class gives (KeyError,
# ReadTimeout, KeyboardInterrupt, SystemExit, "no such file", "merge conflict" …) and of every
# label of a detected failure ("command not found", "permission denied" …). Only an error's
# name makes "On …:" a fix lesson: "On macOS: `sed -i` needs an empty suffix" is about sed.
_ERROR_WORDS = re.compile(r"error|exception|fail|denied|not found|no such file|timed out|timeout|"
                          r"exit|conflict|refused|interrupt", re.IGNORECASE)
_REMEDY = re.compile(r";|\.\s")  # any other error lesson's remedy follows its first ";" or sentence
# An error lesson_text quotes as its title ("On the error “Staging: `make deploy` broke prod”:
# …"): a ": " inside it is the title's, not the one that ends the error.
_QUOTED_TITLE = re.compile(r"“[^“”\n]*”")
# The words of an error that a module is missing (ModuleNotFoundError, ImportError, "No module
# named …", Node's "Cannot find module"): the name a fix lesson quotes there is a module's.
_MODULE_MISSING = re.compile(r"module|import", re.IGNORECASE)


def masked_spans(text: str) -> str:
    """The text with its code spans blanked out, the same length: a span's ";", ":" or "not"
    is a command's, not the sentence's."""
    return CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), text) if "`" in text else text


class ErrorLesson:
    """What an error lesson says failed and what it says to do (`read_error_lesson`). A plain
    class, not a NamedTuple: building one of those compiles code, which every hook paid for.

    form: which wording it is in ("call", "fix", "unfixed", "prose"; see above). command: the
    command, tool or missing name quoted as what failed ('' when none is). failed: the words
    that say what failed, the remedy left out. how: how it failed (a failed call's line; an
    unfixed error's title; else all the words). remedy: the words of the remedy ('' when none:
    a fix, advice, what follows the ";"). module: whether `command` is a module a fix lesson
    names as missing ("On ModuleNotFoundError (`requests`): …"), a module's name, not a
    program's."""

    __slots__ = ("form", "command", "failed", "how", "remedy", "module")

    def __init__(self, form: Literal["call", "fix", "unfixed", "prose"], command: str, failed: str,
                 how: str, remedy: str, module: bool = False) -> None:
        self.form, self.command, self.failed = form, command, failed
        self.how, self.remedy, self.module = how, remedy, module

    def __repr__(self) -> str:
        return (f"ErrorLesson({self.form!r}, {self.command!r}, {self.failed!r}, {self.how!r}, "
                f"{self.remedy!r}, module={self.module!r})")


def read_error_lesson(text: str) -> ErrorLesson:
    """What an error lesson (drafted by lesson_text, reworded or written by a person) says
    failed and what it says to do about it: the one reading of both, for prime's program match
    (`lesson_commands`) and for the class the lessons pass gives an error
    (lesson_text.error_lesson_parts).

    - "`<command>` failed here (<how>); <advice>.": that command (or tool), whatever it holds
      (a backtick, a ";");
    - "On <error>: <fix>." when <error>, its code spans aside, names an error (_ERROR_WORDS:
      "ModuleNotFoundError (`requests`)", "Bash failed", not "macOS" nor "`make deploy` broke
      prod"; it ends at the first ": " outside a code span and a title in “…”, "On the error
      “Staging: `make deploy` broke prod”: …"): the module or command quoted there as missing
      ("On ModuleNotFoundError (`requests`): run `uv add requests`": requests, a module), else
      the first command quoted there, else none: the fix's own command is the remedy, never
      what failed;
    - "Avoid repeating this error: <title>.": the first command quoted in the title;
    - any other words: the first command quoted before the remedy, which follows the first
      ";" or full stop ("aws commands fail with ExpiredToken; run `aws sso login` first": none
      is quoted; "On macOS: `sed -i` needs an empty suffix": sed -i)."""
    text = text or ""
    if "  " in text or "\n" in text or "\t" in text or text[:1].isspace() or text[-1:].isspace():
        text = " ".join(text.split())  # one line, as drafted (a person's edit may break it)
    end = text.find(_CALL_END, 1) if text.startswith("`") else -1
    call = _AFTER_CALL.match(text, end + len(_CALL_END)) if end > 0 else None
    if call:
        how, advice = call.group(1) or "", call.group(2)
        return ErrorLesson("call", text[1:end], text[:call.start(2)].rstrip("; "), how, advice)
    if text.startswith(AVOID):
        title = text[len(AVOID):]
        return ErrorLesson("unfixed", _first_quoted(title), title, title, "")
    masked = masked_spans(text)
    if text.startswith(FIX_LEAD):  # the error ends at the first ": " outside a code span or title
        end = _QUOTED_TITLE.sub(lambda m: "x" * len(m.group(0)), masked).find(": ")
        if end >= 0 and _ERROR_WORDS.search(masked, len(FIX_LEAD), end):
            failed, command = text[:end], _first_quoted(text[:end])
            module = bool(command) and bool(_MODULE_MISSING.search(masked, len(FIX_LEAD), end))
            return ErrorLesson("fix", command, failed, text, text[end + 2:], module)
    cut = _REMEDY.search(masked)
    failed, remedy = (text[:cut.start()], text[cut.end():].strip()) if cut else (text, "")
    return ErrorLesson("prose", _first_quoted(failed), failed, text, remedy)


def matchable_text(text: str, kind: str | None = None) -> str:
    """The words of a lesson that count as evidence that it bears on a prompt or a tool call
    (prime's and recall's keyword scores, and the text its vector is computed from): the
    person's and the error's words, never remem's own template around them. A drafted failed
    call, "`rg` failed here (command not found); check the tool is installed, or use
    another.", counts as "`rg` (command not found)": "failed here" and the advice are said of
    every such lesson ("find out why the build is failing" is about none of them); an unfixed
    error, "Avoid repeating this error: <title>.", as its title. The agent still reads the
    whole lesson. Any other lesson counts whole."""
    text = text or ""
    if kind != "error" or not text:
        return text
    said = read_error_lesson(text)
    if said.form == "call":
        return f"`{said.command}` ({said.how})" if said.how else f"`{said.command}`"
    if said.form == "unfixed":
        return said.how
    return text


def _first_quoted(words: str) -> str:
    span = CODE_SPAN.search(words)
    return span.group(1) if span else ""


# At most this many commands of one line are read, the first and the last half of them: a call
# or a lesson names a few, a script's last command is often what it is for (a push after the
# build), and reading thousands (a generated script) would cost the hook what it has. Past
# _TAIL_CHARS the last ones are read from the last lines only, so a long script costs no more
# than its start and its end.
MAX_CHAIN = 24
_TAIL_CHARS = 4000
SHELL_DEPTH = 2  # `bash -c "…"` strings read within one another at most
# A here-document's opening (`<<EOF`, `<<-'EOF'`, not `<<<`): its body is text, not commands.
_HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")
# Commands that only look (they change nothing and are rarely what failed): a lesson's chain
# "`pwd && ls && pytest -q` failed" is about pytest, not every `ls`.
_LOOKS_ONLY = frozenset("pwd ls cat echo printf true which type head tail wc env date whoami".split())
_GIT_LOOKS_ONLY = frozenset("status log diff show".split())


def commands_run(command: str, *, failed_only: bool = False) -> Commands:
    """The commands a shell command runs, each as its leading words: those of every simple
    command of a chain ("git add -A && git push -f" runs git add and git push, a forced one;
    of a longer chain than MAX_CHAIN, its first and last commands), by its program's file name
    (".venv/bin/pip install" -> ("pip", "install")), and the one each runs through a runner
    ("uv run pytest -q" -> ("uv", "run", "pytest"), ("pytest",)), a wrapper ("timeout 60 git
    -C app push" -> ("timeout", "git", "push"), ("git", "push")) or a shell's -c string
    ("bash -lc 'make'" -> ("bash",), ("make",)). A here-document's body is text, not
    commands; a `cd` before other commands is where they run, not a command a lesson is about.

    failed_only: the commands of a failed line that may have failed (a lesson's "`pwd && ls &&
    pytest -q` failed here …"): those that can have set its exit status (after the last `;`,
    not the left side of a pipe), less the ones that only look (`ls`, `git status`) while
    another is left."""
    return _commands(command, failed_only, 0)


def _commands(command: str, failed_only: bool, depth: int) -> Commands:
    pieces = _chain(_without_heredoc_bodies(command))
    if failed_only and pieces:
        last = max((i for i, (op, _) in enumerate(pieces) if op in (";", "&")), default=0)
        pieces = [(op, text) for i, (op, text) in enumerate(pieces[last:], last)
                  if not (i + 1 < len(pieces) and pieces[i + 1][0] == "|")]
    found: list[tuple[str, ...]] = []
    for _, piece in pieces or [("", command)]:
        found += _one_command_runs(piece, depth)
    found = [c for c in found if c]
    moves = [c for c in found if c[0] not in DIRECTORY_CHANGES]
    found = moves or found  # `cd frontend` alone is about cd
    if failed_only:
        acts = [c for c in found if not _only_looks(c)]
        found = acts or found
    return tuple(dict.fromkeys(found))


def _chain(text: str) -> list[tuple[str, str]]:
    """The simple commands of a line with words (`split_commands`), at most MAX_CHAIN: the
    first and the last half of a longer chain."""
    half = MAX_CHAIN // 2
    if len(text) <= _TAIL_CHARS:
        pieces = [(op, words) for op, words in split_commands(text, strict=False) or () if words.strip()]
        return pieces if len(pieces) <= MAX_CHAIN else pieces[:half] + pieces[-half:]
    head = [(op, words) for op, words in split_commands(text, strict=False, most=MAX_CHAIN + 1) or ()
            if words.strip()]
    if len(head) <= MAX_CHAIN:
        return head
    start = text.find("\n", len(text) - _TAIL_CHARS)  # from a line's start, not within a word
    tail = [(op, words) for op, words in split_commands(text[start:], strict=False) or ()
            if words.strip()] if start >= 0 else []
    if not tail:
        return head[:MAX_CHAIN]
    tail[0] = (";", tail[0][1])  # after a new line, as after ";"
    return head[:half] + tail[-half:]


def _only_looks(command: tuple[str, ...]) -> bool:
    if command[0] == "git":
        return len(command) > 1 and command[1] in _GIT_LOOKS_ONLY
    return command[0] in _LOOKS_ONLY


def _without_heredoc_bodies(command: str) -> str:
    """The command line without the bodies of its here-documents (up to their closing word)."""
    if "<<" not in command:
        return command
    lines, out, i = command.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        for opened in _HEREDOC.finditer(line):
            word = opened.group(2)
            while i < len(lines) and lines[i].strip() != word:
                i += 1
            i += 1  # the closing word
    return "\n".join(out)


def _one_command_runs(command: str, depth: int) -> list[tuple[str, ...]]:
    """What one simple command runs: past the shell's keywords and the programs that run
    another (`shell_words.unwrap`), each wrapper with the words of what it runs ("sudo -H pip
    install x": ("sudo", "pip", "install"), then ("pip", "install")), and what a shell's -c
    string runs."""
    wrappers, command, string = unwrap(command)
    found: list[tuple[str, ...]] = []
    if string is not None:  # "bash -lc 'git push -f'": bash, then what its string runs
        found.append((wrappers[-1],))
        if depth < SHELL_DEPTH:
            found += _commands(string, False, depth + 1)
        wrappers = wrappers[:-1]
    elif command:
        found += _program_runs(command)
    for name in reversed(wrappers):
        found.insert(0, (name, *(found[0] if found else ()))[:3])
    return found


def program_base(name: str) -> str:
    """A program's name without the version some installs add to it (pip3 -> pip, python3.12 ->
    python, gcc-13 -> gcc); any other name as it is (sqlite3, k9s)."""
    if not name[-1:].isdigit():
        return name
    base = name.rstrip("0123456789.").removesuffix("-")
    return base if base in VERSIONED_FAMILIES else name


def _program_runs(command: str) -> list[tuple[str, ...]]:
    """A command's own words, by its program's file name (`.venv/bin/pip install`: pip
    install), and what it runs through a runner."""
    found = [program_words(command, by_name=True)]
    words = command_words(command, limit=8, by_name=True).split()
    for _ in range(2):  # "poetry run python -m pytest" at most
        lead = [w.lower() for w in words[:2]]
        if lead:
            lead[0] = program_base(lead[0])  # python3.12 -m pytest runs pytest too
        runner = next((r for r in RUNNERS if tuple(lead[: len(r)]) == r), None)
        if runner is None or len(words) == len(runner):
            break
        words = words[len(runner):]
        found.append(program_words(" ".join(words)))
    flagged = _FLAGGED.get(found[0][:2]) if found and found[0] else None
    if flagged and any(_is_flag(w, flagged[0]) for w in command.split()):
        found.append(flagged[1])
    return found


def _is_flag(word: str, flags: tuple[str, ...]) -> bool:
    """Whether a word gives one of `flags` ("--force", "-f"), alone or among combined short
    flags ("-fu")."""
    if word in flags:
        return True
    shorts = {f[1] for f in flags if len(f) == 2 and f[0] == "-"}
    return word.startswith("-") and not word.startswith("--") and any(ch in shorts for ch in word[1:])


def is_refusal(text: str) -> bool:
    """Whether a lesson is a refused call's, as lesson_text drafts it: about a call before it
    is made, so for the hook before a tool call, never for the one after the hand-back."""
    return (text or "").startswith(REFUSAL_LEAD) and REFUSED in text


def reads_as_command(prompt: str) -> bool:
    """Whether a prompt is written as a shell command, not as a sentence: it starts with a
    well-known tool ("pip install requests"), or with a program's name as typed in a shell and
    an argument among its next words ("python manage.py runserver", "make -j8", "find . -name
    x", "go test ./...", "CI=1 make test"). Not "Make the header sticky", "find where the
    config is loaded" nor "open the file src/cart.tsx", and not a bare "make test" either: an
    everyday word with only plain words after it is read as a sentence."""
    words = prompt.split()
    assigned = False
    while words and ENV_ASSIGN.match(words[0]):  # "CI=1 make test": the shell's own syntax
        words, assigned = words[1:], True
    if not words:
        return False
    if _is_known(_prose_name(words[0].lower())):
        return True
    if not _PROGRAM_NAME.match(words[0]):
        return False
    if assigned:
        return True
    for word in words[1: 1 + COMMAND_LEAD]:
        if _ARGUMENT.match(word):
            return True
        if word in SENTENCE_WORDS or not _PLAIN_WORD.match(word):
            return False
    return False


def _named_in_prose(prose: str, with_tail: bool) -> list[tuple[str, ...]]:
    """Known tools named as words (stripped of quotes and punctuation): with the plain words
    after each (to the end of its clause, a flag, a path or a sentence's word such as "and" or
    "to"; at most TAIL_WORDS in all; a known tool among them is part of that command: "sudo
    pip install", "pip install pytest" runs no pytest), or alone."""
    raw = prose.split()
    words = [_prose_name(w.strip(EDGE).lower()) for w in raw]
    found: list[tuple[str, ...]] = []
    i = 0
    while i < len(words):
        if words[i] in PROSE_COMMANDS:
            found.append(PROSE_COMMANDS[words[i]])
            i += 1
            continue
        if not _is_known(words[i]):
            i += 1
            continue
        command = [words[i]]
        j = i + 1
        if not with_tail and _names_a_thing(words, raw, i):
            i = j
            continue
        if not with_tail and j < len(words) and not _CLAUSE_END.search(raw[i]) \
                and words[j] in PROSE_SUBCOMMANDS.get(words[i], ()):
            command.append(words[j])
            j += 1
        elif with_tail and not _CLAUSE_END.search(raw[i]):  # "pip," names pip alone
            while j < len(words) and len(command) < TAIL_WORDS:
                nxt = words[j]
                if not nxt or nxt[0] == "-" or "/" in nxt or "=" in nxt or nxt in SENTENCE_WORDS:
                    break
                command.append(nxt)
                j += 1
                if _CLAUSE_END.search(raw[j - 1]):
                    break
        found.append(tuple(command))
        i = j
    return found


def _prose_name(word: str) -> str:
    """A word of prose as a program's name: a program's path by its file name
    ("/usr/bin/pip", ".venv/bin/pip", "./gradlew"); any other word as it is."""
    if "/" in word and ("bin/" in word or word.startswith("./")):
        return word.rsplit("/", 1)[-1]
    return word


def _is_known(name: str) -> bool:
    """Whether a name is a well-known tool's, under a versioned name too (pip3.12, python3.11)."""
    return name in KNOWN_PROGRAMS or program_base(name) != name


def _names_a_thing(words: list[str], raw: list[str], i: int) -> bool:
    """Whether the tool at words[i] is a lesson's noun modifier ("an Alembic migration", "the
    pytest fixtures"): after a determiner, before a noun in the same clause that is neither the
    tool itself nor one of its subcommands."""
    if i == 0 or i + 1 >= len(words) or words[i - 1] not in _DETERMINERS or _CLAUSE_END.search(raw[i]):
        return False
    noun = words[i + 1]
    return bool(_PLAIN_WORD.match(noun)) and noun not in _THE_TOOL_ITSELF \
        and noun not in PROSE_SUBCOMMANDS.get(words[i], ()) and noun not in SENTENCE_WORDS


def query_commands(text: str) -> Calls:
    """The commands a prompt runs or names, one group per command it holds (each with what that
    one runs through a runner): the prompt itself when it is written as a command
    (`reads_as_command`), each code span, and each known tool named as a word with the words
    after it ("use pip install for it" -> (("pip", "install"),); "sudo pip install" ->
    (("sudo", "pip", "install"), ("pip", "install")))."""
    if not text:
        return ()
    calls: list[Commands] = []
    if reads_as_command(text):
        calls.append(commands_run(text))
    for span in CODE_SPAN.findall(text):
        calls.append(commands_run(span))
    for named in _named_in_prose(CODE_SPAN.sub(" ", text), with_tail=True):
        calls.append(commands_run(" ".join(named)))
    return tuple(dict.fromkeys(c for c in calls if c))


def lesson_commands(text: str, kind: str | None = None) -> Commands:
    """The commands a lesson is about: each code span's command and each known tool it names
    as a word (that tool alone: prose goes on past the command). An error lesson is about the
    command that failed, not its remedy: the first one quoted before the remedy (its first ";"
    or full stop; in a drafted fix lesson, "On ModuleNotFoundError: run `uv add requests` and
    retry.", what follows the error's name), else the known tools named there ("`pytest`
    fails outside the venv; run it as `uv run pytest`" is about pytest; "`git commit` failed
    because the pre-commit hook ran ruff" about git commit; "aws commands fail with
    ExpiredToken" about aws; that fix lesson about no command). Any other lesson that rejects
    a program is about that one, not the one it recommends ("Use pnpm, not npm" is about npm:
    a person already running pnpm has nothing to learn from it)."""
    return _lesson_parts(text, kind)[0]


def _lesson_parts(text: str, kind: str | None) -> tuple[Commands, Calls]:
    """What a lesson is about (`lesson_commands`) and, for an error lesson, the commands its
    remedy quotes, each with what it runs through a runner (`commands_run`)."""
    if not text:
        return (), ()
    if kind == "error":
        said = read_error_lesson(text)
        # Nothing quoted as what failed: the known tools its words name ("aws commands fail").
        about = commands_run(said.command, failed_only=True) if said.command else named_in_lesson(said.failed)
        remedies = (tuple(_up_to_here(c) for c in commands_run(span))
                    for span in CODE_SPAN.findall(said.remedy))
        return about, tuple(r for r in remedies if r)
    masked = masked_spans(text)  # a span's "not" is no prose: the cuts fall where the text's own are
    rejects = REJECTS.search(masked)
    if rejects:  # what it rejects runs to the end of that clause ("never pip (uv add …)")
        end = CLAUSE.search(masked, rejects.end())
        rejected = named_in_lesson(text[rejects.end(): end.start() if end else len(text)])
        if rejected:
            return _through_runners(rejected), ()
    return _through_runners(named_in_lesson(text)), ()


def _through_runners(named: Commands) -> Commands:
    """A runner a lesson names as a word before another program is the way it runs that one:
    "Stop using sudo for pip installs" is about `sudo pip`, not every `sudo apt-get` nor
    every `pip list`."""
    out: list[tuple[str, ...]] = []
    for command in named:
        if out and len(out[-1]) == 1 and (out[-1][0],) in RUNNERS and out[-1][0] != command[0]:
            out[-1] = (*out[-1], *command)
        else:
            out.append(command)
    return tuple(out)


def _up_to_here(command: tuple[str, ...]) -> tuple[str, ...]:
    """A remedy's words up to a "." or "..", a path like any other: "`uv run ruff check .`" is
    followed by "uv run ruff check src" too."""
    for n, word in enumerate(command):
        if word in (".", ".."):
            return command[:n]
    return command


def named_in_lesson(text: str) -> Commands:
    """Each code span's command (and what it runs through a runner) and each known tool named
    as a word, alone."""
    if "`" not in text:
        return tuple(dict.fromkeys(_named_in_prose(text, with_tail=False)))
    found: list[tuple[str, ...]] = []
    for span in CODE_SPAN.findall(text):
        found += commands_run(span, failed_only=True)
    found += _named_in_prose(CODE_SPAN.sub(" ", text), with_tail=False)
    return tuple(dict.fromkeys(found))


def program_names(text: str) -> frozenset[str]:
    """The programs a lesson names, by name: each code span's program (and the one it runs
    through a runner) and each known tool named as a word ("`python` is not found on this Mac
    …; call python3" -> python, python3; "Use pnpm, not npm" -> pnpm, npm); not a module a fix
    lesson names as missing ("On ModuleNotFoundError (`requests`): run `uv add requests`" ->
    uv: `read_error_lesson`). Prime counts a word shared with the text as keyword evidence only
    if it is more than one of these, or the text runs or names that program too (`call_heads`)."""
    text = text or ""
    if text.startswith(FIX_LEAD):
        said = read_error_lesson(text)
        if said.module:  # "why can't I import requests" shares the module's name, no program's
            text = f"{CODE_SPAN.sub(' ', said.failed)}: {said.remedy}"
    return frozenset(command[0] for command in named_in_lesson(text) if command)


def call_heads(calls: Calls) -> frozenset[str]:
    """The programs these calls run or name (`commands_run`, `query_commands`), by name."""
    return frozenset(command[0] for call in calls for command in call if command)


def call_is_about(call: Commands, about: Commands, remedies: Calls = ()) -> bool:
    """Whether one call (the commands it runs, its own words first: `commands_run`) runs a
    command the lesson is about (`runs_command`: the lesson's words start the call's; "git push
    -u" for "`git push` fails", not "git add") and does not already follow the lesson's remedy:
    run it, through the same runners, from a command no further in than the failed one ("uv
    run pytest -q" follows "`pytest` fails …; run it as `uv run pytest`", "python -m pytest -x"
    does not, nor "pnpm exec playwright test" a remedy `pnpm exec playwright install`). At the
    same command the longer words win ("aws sso login" follows "aws commands fail …; run `aws
    sso login` first"); a tie goes to what failed (a remedy that is the failed command with
    other flags, "then `terraform apply -lock-timeout=5m`", leaves "terraform apply" matched)."""
    failed_at = next((n for n, command in enumerate(call)
                      if any(runs_command(command, a) for a in about)), None)
    if failed_at is None:
        return False
    failed_len = max(len(a) for a in about if runs_command(call[failed_at], a))
    for remedy in remedies:
        for start in range(min(failed_at + 1, len(call) - len(remedy) + 1)):
            follows = all(runs_command(call[start + i], r) for i, r in enumerate(remedy))
            if follows and (start < failed_at or len(remedy[0]) > failed_len):
                return False
    return True


def lesson_matcher(calls: Calls) -> Callable[[str, str | None], bool]:
    """Whether a lesson (text, kind) is about what one of these calls runs (`call_is_about`),
    for many lessons, cheaply: a lesson that does not contain the name of a program named here
    is passed over unread (one without a code span can only name a known tool)."""
    by_base = tuple(tuple(_by_base(c) for c in call) for call in calls)
    versioned = by_base != calls
    # A lesson is passed over unless it holds a name read here; a family's base is part of each
    # of its names ("pip" of "pip3"), so with it a lesson naming pip3 is read for `pip install`
    # and one naming pip for `pip3 install`.
    heads = {c[0] for call in calls + by_base for c in call}
    known = {h for h in heads if _is_known(h) or h in VERSIONED_FAMILIES}

    def about(text: str, kind: str | None = None) -> bool:
        names = heads if "`" in text else known
        if not names:
            return False
        low = text.lower()
        if not any(h in low for h in names) and not any(
                word in low for word, named in PROSE_COMMANDS.items() if named[0] in names):
            return False
        subject, remedies = _lesson_parts(text, kind)
        if (versioned or any(_by_base(c) != c for c in subject)
                or any(_by_base(c) != c for r in remedies for c in r)) and not _tells_apart(text):
            subject = tuple(_by_base(c) for c in subject)
            remedies = tuple(tuple(_by_base(c) for c in r) for r in remedies)
            return any(call_is_about(call, subject, remedies) for call in by_base)
        return any(call_is_about(call, subject, remedies) for call in calls)

    return about


def _by_base(command: tuple[str, ...]) -> tuple[str, ...]:
    """A command with its programs named by their family's base (`program_base`): the one it
    runs and the one a wrapper runs ("sudo pip3 install": sudo pip install)."""
    return tuple(program_base(word) for word in command)


def _tells_apart(text: str) -> bool:
    """Whether a lesson names two programs of one versioned family ("`python` is not found …;
    call python3"): it is about the one it names, not the family."""
    seen: dict[str, str] = {}
    for member in re.finditer(_FAMILY_MEMBER, text, re.IGNORECASE):
        if seen.setdefault(member.group(1).lower(), member.group().lower()) != member.group().lower():
            return True
    return False
