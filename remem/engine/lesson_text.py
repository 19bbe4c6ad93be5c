"""A lesson's words: deterministic, from the person's own words, short and imperative.

- correction: the person's words in the most typical correction of the group, with the
  filler of pushback ("no,", "I said", "you should") taken off.
- error: the error class and, when one followed, the fix ("On ModuleNotFoundError: …"),
  else the command (or the tool) that failed, how, and what to check first.
- surprise: what the person said surprised them, as something to keep in mind.

A configured local model may reword the text (`reword`); the deterministic text is kept
beside it (lessons.draft), and every model failure falls back to it.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from remem.engine.programs import (
    AVOID, FAILED_HERE, FIX_LEAD, REFUSAL_LEAD, REFUSED, SENTENCE_WORDS, read_error_lesson, reads_as_command,
)
from remem.engine.redaction import _redacted, redact_secrets
from remem.engine.shell_words import SHELL_TOOLS, command_words

MAX_CHARS = 200
ERROR_CHARS = 160  # an error line carries paths and output: keep the lesson to its gist
# Words that only soften or introduce what follows: always taken off.
_SOFT = (r"hmm+|um+|uh+|ugh|actually|sorry|again|ok(?:ay)?|so|well|hey|"
         r"(?:as |like )?i(?:'ve| have)? (?:already )?(?:said|told you)(?: (?:already|before|twice))?|"
         r"please|pls")
# Words that carry the meaning when a sentence goes on from them ("no emojis", "stop adding
# comments", "wait for CI"): taken off only as an interjection, i.e. followed by a comma, a
# period, a dash, "!", "?" or nothing ("no, use pnpm", "Stop!").
_BLUNT = (r"no+|nope|nah|stop|wait|hold on|wrong|that's wrong|that is wrong|not like that|"
          r"don't do that|(?:that's |that is )?not (?:it|right|that)|that's incorrect|that is incorrect|"
          r"(?:that's |that is )?not what i (?:asked|meant|wanted)(?: for)?")
_INTERJECTION_END = r"(?=\s*(?:[,.!?:;…—–]|-(?!\w)|$))"
_FILLER = re.compile(
    rf"^(?:(?:{_SOFT})(?![\w'’]|-\w)|(?:{_BLUNT})(?:\s+(?:{_BLUNT}))*\b{_INTERJECTION_END})"
    r"[\s,.!?:;…—–-]*",
    re.IGNORECASE,
)
_YOU_SHOULD = re.compile(
    r"^(?:you should|you need to|you have to|you must|you want to|we need to|we should|"
    r"can you|could you|would you|will you|just)\s+", re.IGNORECASE
)
_YOU_SHOULDNT = re.compile(r"^(?:you should not|you shouldn't|you must not|you mustn't)\s+", re.IGNORECASE)
# ASCII case only: the sleep tells which stored episodes may hold a fix with SQLite's lower(),
# which knows no other (FIX_WORDS).
_FIX = re.compile(r"^\s*(?:fix|fixed by|fixed with|resolved by|solution)\s*:\s*(.+)$",
                  re.IGNORECASE | re.MULTILINE | re.ASCII)
FIX_WORDS = ("fix", "resolved by", "solution")  # one of them is in every fix _FIX finds
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def clip(text: str, limit: int = MAX_CHARS) -> str:
    """The text on one line, cut at a word boundary to at most `limit` characters and "…"."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit + 1].rsplit(" ", 1)[0]  # a word ending right at the limit is kept whole
    if len(cut) > limit:
        cut = text[:limit]  # one long word (a path, a URL): there is no boundary to cut at
    return cut.rstrip(",;:") + "…"


# Quotes around a whole text, each with the quotes inside it that would end it early (an
# apostrophe between letters, "don't", does not end a single-quoted text).
_ENCLOSED = {('"', '"'): re.compile('"'), ("“", "”"): re.compile("[“”]"),
             ("'", "'"): re.compile(r"(?<![A-Za-z])'|'(?![A-Za-z])")}


def _unquoted(text: str) -> str:
    """The text without the quotes that enclose all of it ("'use pnpm'"), or a double quote
    at one end that nothing else in it closes or opens; a quote that ends what another in it
    opened ("No module named 'requests'") stays."""
    while len(text) > 1:
        inside = _ENCLOSED.get((text[0], text[-1]))
        if inside is None or inside.search(text, 1, len(text) - 1):
            break
        text = text[1:-1].strip()
    double = re.compile('["“”]')
    if text[:1] in '"“' and not double.search(text, 1):
        text = text[1:].strip()
    if text[-1:] in '"”' and not double.search(text, 0, len(text) - 1):
        text = text[:-1].strip()
    return text


def _finish(text: str) -> str:
    text = _unquoted(text.strip())
    if len(text) > 1 and text[0] == text[-1] == "`" and text.count("`") == 2:
        text = text[1:-1]  # one code span around it all; a backtick that closes a span stays
    if not text:
        return text
    text = text[0].upper() + text[1:]
    if text[-1] not in ".!?…":
        text += "."
    return text


def imperative(words: str) -> str:
    """The person's words as an instruction: filler off, first sentences, capitalised."""
    text = " ".join((words or "").split())
    for _ in range(4):
        stripped = _FILLER.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    neg = _YOU_SHOULDNT.match(text)
    if neg:
        text = "don't " + text[neg.end():]
    else:
        text = _YOU_SHOULD.sub("", text, count=1)
        text = text.rstrip("?") if text.endswith("?") else text
    sentences = _SENTENCE.split(text)
    out = ""
    for sentence in sentences:
        if out and len(out) + len(sentence) + 1 > MAX_CHARS:
            break
        out = f"{out} {sentence}".strip()
    return _finish(clip(out or text))


def says_nothing(words: str) -> bool:
    """Whether a correction's words leave nothing to learn once its filler is off: pushback
    that says only that something was wrong ("No, that's wrong.", "no, that's not it"). It
    makes no lesson: primed to an agent, it would tell it nothing."""
    return not imperative(words)


def find_fix(episode: dict[str, Any]) -> str:
    """The fix recorded with an error episode ('fix: …' in its gist or detail), or ''."""
    for field in ("gist", "detail"):
        m = _FIX.search(episode.get(field) or "")
        if m:
            return m.group(1).strip()
    return ""


# What to do about each class of failure detect_errors.py names in an error episode's title
# ("<tool> <label>: <line>").
_ADVICE = {
    "command not found": "check the tool is installed, or use another",
    "module not found": "install the module first",
    "permission denied": "check the permissions first",
    "tests failed": "expect these tests to fail until the cause is fixed",
    "syntax/type error": "check the code before running it",
    "timed out": "give it more time or a smaller scope",
    "network error": "check that the service it needs is running",
    "git conflict": "resolve the conflict first",
    "file not found": "check the path first",
    "failed": "find out why before running it again",
}
_SHELL_PREFIX = re.compile(r"^(?:/bin/)?(?:ba|z)?sh: (?:line …: )?")


def _error_from_call(episode: dict[str, Any]) -> str:
    """'`<command>` failed here (<label>: <detail>); <advice>.' for a detected tool failure, or ''.

    For an episode of a failed tool call (`episode["tool"]`, from its tag `tool:<name>`) the
    command is what the gist's first line names: that line is "<Tool>: <input>". A shell call
    is named by its command; any other tool by its own name ("`Edit` failed here"): what it
    touched (a file's absolute path, a URL, a pattern) says where it failed, not what to avoid,
    and a path names one project's folder while the lesson may hold in several. Paths inside
    the episode's project are written relative to it for the same reason. Any other error (one
    a person or another program told) is named by the command its title starts with ("make
    deploy failed: …"), else by its gist's first line, after a label if it has one ("Context:
    helm upgrade …"), when that reads as a command; else it has no command (''): its output
    ("deploy.sh: line 12: AWS_PROFILE: unbound variable") is no command to avoid."""
    title = " ".join((episode.get("title") or "").split())
    first = ((episode.get("gist") or "").splitlines() or [""])[0].strip()
    label = next((lab for lab in _ADVICE if f" {lab}:" in title or title.endswith(f" {lab}")), "")
    detail = title.split(": ", 1)[1] if ": " in title else ""
    if not label:
        return ""
    if episode.get("tool"):
        tool, named, arg = first.partition(": ")
        if named and tool.lower() == str(episode["tool"]).lower() and tool.lower() not in SHELL_TOOLS:
            command = tool
        else:
            command = arg if named else first
    else:
        command = _told_command(title[:title.find(f" {label}")], first)
        if not detail and first.startswith(f"{title}: "):  # "npm run build failed: Cannot find …"
            detail = first[len(title) + 2:]
    if not command:
        return ""
    # A test runner's line ("ERROR tests/t.py::test_x - redis.ConnectionError: …"): its end
    # says what went wrong; a dash with no words after it says nothing.
    detail = next((part for part in reversed(detail.split(" - ")) if re.search(r"\w", part)), detail)
    detail = _SHELL_PREFIX.sub("", detail).strip()
    command, detail = (_in_project(text, episode.get("cwd")) for text in (command, detail))
    if label == "failed":  # the catch-all: "failed here" says it already, the line says how
        what = _telling_clip(detail, _HOW_CHARS)
    elif detail and label not in detail.lower():
        what = f"{label}: {_telling_clip(detail, _HOW_CHARS - len(label) - 2)}"
    else:  # the line only repeats the class ("rg: command not found")
        what = label
    how = f" ({what})" if what else ""
    # Not _finish: the lesson starts with the command in backticks, which must stay as typed.
    return clip(f"`{clip(command, 70)}` {FAILED_HERE}{how}; {_ADVICE[label]}.")


_HOW_CHARS = 90  # what went wrong, in a lesson about a failed call
_TYPED = re.compile(r"[a-z][a-z0-9._+/-]*(?: [a-z0-9][a-z0-9._:@+/=-]*){1,3}")


def _told_command(head: str, first: str) -> str:
    """The command an error no tool call made names: the head of its title, before how it
    failed, when it is written as a command ("make deploy", "npm run build": as typed, in
    lower case, two to four words, none of a sentence's); else its gist's first line (after a
    label: "Context: helm upgrade …") when that reads as one; else ''."""
    words = head.split()
    if reads_as_command(head) or (_TYPED.fullmatch(head) and not SENTENCE_WORDS.intersection(words)):
        return head
    _, named, said = first.partition(": ")
    said = (said if named else first).strip()
    return said if said and reads_as_command(said) else ""


def _in_project(text: str, cwd: Any) -> str:
    """`text` with the paths inside the project `cwd` written relative to it."""
    root = str(cwd or "").rstrip("/")
    return text.replace(f"{root}/", "") if root else text


def _telling_clip(text: str, limit: int) -> str:
    """An error line cut to `limit` characters keeping what tells: its head (the error's
    class) and its end (what went wrong), the lead-in between them left out at a ": "
    ("InputValidationError: … The required parameter `prompt` is missing"); else cut at the
    end (clip)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head, *rest = text.split(": ")
    lead = f"{head}: … " if len(head) <= limit // 2 else "… "
    for n in range(1, len(rest)):
        shorter = lead + ": ".join(rest[n:])
        if len(shorter) <= limit:
            return shorter
    return clip(text, limit)


def person_words(episode: dict[str, Any]) -> str:
    """A correction's or surprise's own words: the gist (ingest keeps the person's words there)."""
    return (episode.get("gist") or episode.get("title") or "").strip()


# ----------------------------------------------------------------- refused calls

def _refused(call: str, cwd: Any = None) -> str:
    """The lesson of a refused tool call ("Bash: git push …") the person gave no words for.
    What another tool was refused on (a file's path) is written relative to the episode's
    project `cwd` when it is inside it, as an error lesson writes its paths: the lesson holds
    wherever the project is, and the absolute path names one person's folders."""
    tool, _, arg = call.partition(":")
    tool, arg = tool.strip(), arg.strip()
    if tool.lower() in SHELL_TOOLS:
        words = command_words(arg)
        if words:
            return f"{REFUSAL_LEAD}running `{words}` {REFUSED} it)."
        return f"{REFUSAL_LEAD}running {tool} commands like this {REFUSED} one)."
    arg = _in_project(arg, cwd)
    if arg:
        return f"{REFUSAL_LEAD}using {tool} on `{clip(arg.replace('`', ''), 80)}` {REFUSED} it)."
    return f"{REFUSAL_LEAD}using {tool} {REFUSED} it)."


# ----------------------------------------------------------------- drafts

def draft(kind: str, episodes: Sequence[dict[str, Any]], representative: int = 0) -> str:
    """The deterministic lesson text for a group of source episodes (time order), with no
    secret in it: the source words are redacted first, before a clip could cut a key short
    of what the patterns recognise."""
    return _draft(kind, [_redacted(e) for e in episodes], representative)


def _draft(kind: str, episodes: Sequence[dict[str, Any]], representative: int) -> str:
    rep = episodes[representative] if episodes else {}
    if kind == "correction":
        words = person_words(rep)
        if words.lower().startswith("refused "):  # a refused call the person gave no words for
            return _refused(words[len("refused "):], rep.get("cwd"))
        # The lessons pass keeps a correction that says nothing out of every lesson; were one
        # the most typical of a group, another member's words are the lesson.
        said = (imperative(person_words(e)) for e in (rep, *episodes))
        return next((text for text in said if text), "") or _finish(clip(rep.get("title") or "a correction"))
    if kind == "error":
        from remem.engine.consolidate import error_class

        title = " ".join((rep.get("title") or rep.get("gist") or "an error").split())
        klass = error_class(f"{title}\n{rep.get('gist') or ''}")
        fix = next((f for f in (find_fix(e) for e in reversed(episodes)) if f), "")
        if fix:
            return _finish(clip(f"{FIX_LEAD}{_fixed(klass, title, rep.get('gist') or '')}: {fix}"))
        return _error_from_call(rep) or _finish(clip(f"{AVOID}{title}", ERROR_CHARS))
    if kind == "surprise":
        return _finish(clip(f"Keep in mind: {person_words(rep)}"))
    return _finish(clip(person_words(rep)))


def _fixed(klass: str, title: str, gist: str) -> str:
    """What a fix is for: the error's class (`ModuleNotFoundError`), with the module or command
    it names as missing ("command not found (`fd`)"), else the title: a fix for one missing
    module is no lesson about another. A title whose words name no error, or that the reader
    would cut before a command it quotes (at a ": " of its own: "Deploy error: `make deploy`
    broke prod"), is quoted as one ("On the error “Deploy broke prod”: …"): "On macOS: `sed -i`
    …" is read as a lesson about the command it quotes (programs.read_error_lesson), and a fix
    is never what failed."""
    if not klass:
        said = read_error_lesson(f"{FIX_LEAD}{title}: fix")
        if said.form == "fix" and "`" not in title[len(said.failed) - len(FIX_LEAD):]:
            return title
        # Its own curly quotes would end the quoting early: the reader looks for the closing ”.
        return "the error “{}”".format(title.replace("“", '"').replace("”", '"'))
    from remem.engine.detect_errors import error_class as detect_class
    from remem.engine.detect_errors import missing_name

    words = f"{title}\n{gist}"
    missing = missing_name(detect_class(words), words)
    return f"{klass} (`{missing}`)" if missing else klass


def error_lesson_parts(text: str) -> tuple[str, str, str]:
    """What an error lesson in the words `draft` gives it says failed, as
    programs.read_error_lesson reads it: (the label of how, as _ADVICE names it: "failed" for
    the catch-all, '' when the lesson names none; the words that say how it failed; the command
    or tool that failed, or the module or command a fix lesson names as missing, '' when it
    quotes none). Never the remedy's command ("On ModuleNotFoundError (`requests`): run `uv add
    requests`": requests; "aws commands fail …; run `aws sso login` first": none)."""
    said = read_error_lesson(text)
    if said.form != "call":
        return "", said.how, said.command
    label = next((lab for lab in _ADVICE if said.how == lab or said.how.startswith(f"{lab}: ")), "failed")
    return label, said.how, said.command


def reword(text: str, kind: str, episodes: Sequence[dict[str, Any]]) -> str | None:
    """A local model's rewording of a lesson, or None (no model, a failure, or a bad answer)."""
    from remem.engine.llm import complete

    # The model may be a remote service: it never sees a secret either.
    quotes = "\n".join(f"- {clip(redact_secrets(person_words(e)), 300)}" for e in episodes[:5])
    prompt = (
        "Rewrite this lesson for a coding agent as one short imperative sentence "
        "(at most 25 words). Keep the person's meaning; add nothing.\n"
        f"Kind: {kind}\nLesson: {text}\nWhat the person said or what happened:\n{quotes}\n"
        "Answer with the sentence only."
    )
    try:
        answer = complete(prompt)
    except Exception:  # a model must never break sleep
        return None
    if not answer or "\n" in str(answer).strip():
        return None  # one sentence was asked for
    answer = " ".join(str(answer).split()).strip("\"'` ")
    if not answer or len(answer) > 2 * MAX_CHARS or len(_SENTENCE_END.findall(answer)) > 1:
        return None
    from remem.engine.share_safety import incoming

    # The model's words go to agents as a lesson: they pass the checks a received lesson
    # passes (instruction-like phrasing, secrets, URLs, shell pipelines, hidden characters).
    if incoming(answer):
        return None
    return _finish(answer)


_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
