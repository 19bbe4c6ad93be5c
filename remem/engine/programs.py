"""The programs a text names, for prime's program match: what a shell call or a prompt runs
or names ("pip install requests", "why does `pytest` fail?") and what a lesson is about ("We
use uv here, not pip"; "`kubectl apply` went to the production cluster …").

A lesson is a sentence about a program; a command, or a prompt that runs or names that
program, is often far from it in the model's vector space ("pip install requests" scored 0.43
against "We use uv here, never pip (uv add / uv sync)"). Naming the same program is the
evidence the vector misses. A program is named by a command (a shell call, a prompt read as
one, a `code span`: its leading words as `shell_words.program_words` reads them, and the
command it runs through a runner such as `uv run` or `python -m`) or by a well-known tool's
name used as a word (KNOWN_PROGRAMS). On the hook path: only `re` and shell_words are imported.
"""

from __future__ import annotations

import re
from typing import Callable

from remem.engine.shell_words import command_words, program_words, runs_command

# Command-line tools whose name, written as a plain word in a developer's prompt or lesson,
# means the tool. Left out: names that are also everyday words or the name of a language or a
# service (make, find, test, black, mix, rake, rails, gem, apt, next, go, node, python, ruby,
# java, stripe, vault), which name a program only in a code span or at the head of a command.
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
# Words that run the command after them: "uv run pytest -q" runs pytest too.
RUNNERS = (("uv", "run"), ("uvx",), ("poetry", "run"), ("pipenv", "run"), ("pipx", "run"),
           ("pdm", "run"), ("hatch", "run"), ("python", "-m"), ("python3", "-m"), ("npx",),
           ("bunx",), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("bundle", "exec"),
           ("sudo",))
_CODE = re.compile(r"`([^`\n]+)`")
_EDGE = "\"'()[]{}<>,.;:!?*"  # what a word in prose may carry around it
_CLAUSE_END = re.compile(r"[,.;:!?)]$")
_REMEDY = re.compile(r";|\.\s")  # an error lesson's remedy follows its first ";" or sentence
_CLAUSE = re.compile(r"[,;(]|\.(?:\s|$)")
_REJECTS = re.compile(r"\b(?:not|never|instead of|rather than|avoid|don't|do not)\b", re.IGNORECASE)
TAIL_WORDS = 3
Commands = tuple[tuple[str, ...], ...]


def commands_run(command: str) -> Commands:
    """The commands a shell command runs, each as its leading words: its own, and the one it
    runs through a runner ("uv run pytest -q" -> ("uv", "run", "pytest"), ("pytest",))."""
    found = [program_words(command)]
    words = command_words(command, limit=8).split()
    for _ in range(2):  # "sudo uv run …" at most
        runner = next((r for r in RUNNERS if tuple(w.lower() for w in words[: len(r)]) == r), None)
        if runner is None or len(words) == len(runner):
            break
        words = words[len(runner):]
        found.append(program_words(" ".join(words)))
    return tuple(dict.fromkeys(c for c in found if c))


def _named_in_prose(prose: str, with_tail: bool) -> list[tuple[str, ...]]:
    """Known tools named as words (stripped of quotes and punctuation): with the plain words
    after each (to the end of its clause, a flag or a path; at most TAIL_WORDS in all), or
    alone."""
    raw = prose.split()
    words = [w.strip(_EDGE).lower() for w in raw]
    found: list[tuple[str, ...]] = []
    for i, word in enumerate(words):
        if word not in KNOWN_PROGRAMS:
            continue
        command = [word]
        if with_tail and not _CLAUSE_END.search(raw[i]):  # "pip," names pip alone
            for nxt, nxt_raw in zip(words[i + 1:], raw[i + 1:]):
                if not nxt or len(command) == TAIL_WORDS or nxt[0] == "-" or "/" in nxt or "=" in nxt:
                    break
                command.append(nxt)
                if _CLAUSE_END.search(nxt_raw):
                    break
        found.append(tuple(command))
    return found


def query_commands(text: str) -> Commands:
    """The commands a prompt runs or names: the prompt itself read as a command, each code
    span's command, and each known tool named as a word with the words after it ("use pip
    install for it" -> ("pip", "install", "for"))."""
    if not text:
        return ()
    found = [*commands_run(text)]
    for span in _CODE.findall(text):
        found += commands_run(span)
    found += _named_in_prose(_CODE.sub(" ", text), with_tail=True)
    return tuple(dict.fromkeys(found))


def lesson_commands(text: str, kind: str | None = None) -> Commands:
    """The commands a lesson is about: each code span's command and each known tool it names
    as a word (that tool alone: prose goes on past the command). An error lesson is about the
    command that failed: the first one quoted before its remedy (its first ";" or full stop),
    else the known tools named there ("`pytest` fails outside the venv; run it as `uv run
    pytest`" is about pytest; "`git commit` failed because the pre-commit hook ran ruff" about
    git commit; "aws commands fail with ExpiredToken" about aws). Any other lesson that
    rejects a program is about that one, not the one it recommends ("Use pnpm, not npm" is
    about npm: a person already running pnpm has nothing to learn from it)."""
    if not text:
        return ()
    # A span's ";" or "not" is no prose: masked, so the cuts fall where the text's own are.
    masked = _CODE.sub(lambda m: "x" * len(m.group(0)), text) if "`" in text else text
    if kind == "error":
        cut = _REMEDY.search(masked)
        failed = text[: cut.start()] if cut else text
        quoted = _CODE.search(failed)
        return commands_run(quoted.group(1)) if quoted else _named_in_lesson(failed)
    rejects = _REJECTS.search(masked)
    if rejects:  # what it rejects runs to the end of that clause ("never pip (uv add …)")
        end = _CLAUSE.search(masked, rejects.end())
        rejected = _named_in_lesson(text[rejects.end(): end.start() if end else len(text)])
        if rejected:
            return rejected
    return _named_in_lesson(text)


def _named_in_lesson(text: str) -> Commands:
    """Each code span's command (and what it runs through a runner) and each known tool named
    as a word, alone."""
    if "`" not in text:
        return tuple(dict.fromkeys(_named_in_prose(text, with_tail=False)))
    found: list[tuple[str, ...]] = []
    for span in _CODE.findall(text):
        found += commands_run(span)
    found += _named_in_prose(_CODE.sub(" ", text), with_tail=False)
    return tuple(dict.fromkeys(found))


def names_same_program(named: Commands, lesson: Commands) -> bool:
    """Whether a command named on one side runs one the lesson is about (`runs_command`: the
    lesson's words start the other's; "git push -u" for "`git push` fails", not "git add")."""
    return any(runs_command(n, l) for n in named for l in lesson)


def lesson_matcher(named: Commands) -> Callable[[str, str | None], bool]:
    """`names_same_program(named, lesson_commands(text, kind))` for many lessons, cheaply: a
    lesson that does not contain the name of a program named here is passed over unread (one
    without a code span can only name a known tool)."""
    heads = {c[0] for c in named}
    known = heads & KNOWN_PROGRAMS

    def about(text: str, kind: str | None = None) -> bool:
        names = heads if "`" in text else known
        if not names:
            return False
        low = text.lower()
        if not any(h in low for h in names):
            return False
        return names_same_program(named, lesson_commands(text, kind))

    return about
