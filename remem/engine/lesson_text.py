"""A lesson's words: deterministic, from the person's own words, short and imperative.

- correction: the person's words in the most typical correction of the group, with the
  filler of pushback ("no,", "I said", "you should") taken off.
- error: the error class and, when one followed, the fix ("On ModuleNotFoundError: …"),
  else the command that failed, how, and what to check first.
- surprise: what the person said surprised them, as something to keep in mind.

A configured local model may reword the text (`reword`); the deterministic text is kept
beside it (lessons.draft), and every model failure falls back to it.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

MAX_CHARS = 200
ERROR_CHARS = 160  # an error line carries paths and output: keep the lesson to its gist
_FILLER = re.compile(
    r"^(?:no+|nope|nah|wait|stop|hmm+|um+|uh+|ugh|actually|sorry|again|ok(?:ay)?|so|well|"
    r"hey|hold on|i said|i told you|as i said|like i said|i already said|please|pls|"
    r"that's wrong|that is wrong|wrong|not like that|don't do that)\b[\s,.!:;—-]*",
    re.IGNORECASE,
)
_YOU_SHOULD = re.compile(
    r"^(?:you should|you need to|you have to|you must|you want to|we need to|we should|"
    r"can you|could you|would you|will you|just)\s+", re.IGNORECASE
)
_YOU_SHOULDNT = re.compile(r"^(?:you should not|you shouldn't|you must not|you mustn't)\s+", re.IGNORECASE)
_FIX = re.compile(r"^\s*(?:fix|fixed by|fixed with|resolved by|solution)\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _clip(text: str, limit: int = MAX_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def _finish(text: str) -> str:
    text = text.strip().strip("\"'`“”")
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
    return _finish(_clip(out or text))


def find_fix(episode: dict[str, Any]) -> str:
    """The fix recorded with an error episode ('fix: …' in its gist or detail), or ''."""
    for field in ("gist", "detail"):
        m = _FIX.search(episode.get(field) or "")
        if m:
            return m.group(1).strip()
    return ""


# What to do about each class of failure detect.py names in an error episode's title
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
    """'`<command>` failed here (<label>: <detail>); <advice>.' for a detected tool failure, or ''."""
    title = " ".join((episode.get("title") or "").split())
    call = ((episode.get("gist") or "").splitlines() or [""])[0].strip()
    label = next((lab for lab in _ADVICE if f" {lab}:" in title or title.endswith(f" {lab}")), "")
    if not label or not call:
        return ""
    command = call.split(": ", 1)[1] if ": " in call else call
    detail = title.split(": ", 1)[1] if ": " in title else ""
    detail = _SHELL_PREFIX.sub("", detail.rsplit(" - ", 1)[-1]).strip()
    what = f"{label}: {detail}" if detail and label not in detail.lower() else label
    # Not _finish: the lesson starts with the command in backticks, which must stay as typed.
    return _clip(f"`{_clip(command, 70)}` failed here ({_clip(what, 90)}); {_ADVICE[label]}.")


def person_words(episode: dict[str, Any]) -> str:
    """A correction's or surprise's own words: the gist (ingest keeps the person's words there)."""
    return (episode.get("gist") or episode.get("title") or "").strip()


def draft(kind: str, episodes: Sequence[dict[str, Any]], representative: int = 0) -> str:
    """The deterministic lesson text for a group of source episodes (time order)."""
    rep = episodes[representative] if episodes else {}
    if kind == "correction":
        words = person_words(rep)
        if words.lower().startswith("refused "):  # a refused call the person gave no words for
            return _finish(_clip(f"Ask before running {words[len('refused '):]}"))
        return imperative(words) or _finish(_clip(rep.get("title") or "a correction"))
    if kind == "error":
        from remem.engine.consolidate import error_class

        title = " ".join((rep.get("title") or rep.get("gist") or "an error").split())
        klass = error_class(f"{title}\n{rep.get('gist') or ''}")
        fix = next((f for f in (find_fix(e) for e in reversed(episodes)) if f), "")
        if fix:
            return _finish(_clip(f"On {klass or title}: {fix}"))
        return _error_from_call(rep) or _finish(_clip(f"Avoid repeating this error: {title}", ERROR_CHARS))
    if kind == "surprise":
        return _finish(_clip(f"Keep in mind: {person_words(rep)}"))
    return _finish(_clip(person_words(rep)))


def reword(text: str, kind: str, episodes: Sequence[dict[str, Any]]) -> str | None:
    """A local model's rewording of a lesson, or None (no model, a failure, or a bad answer)."""
    from remem.engine.llm import complete

    quotes = "\n".join(f"- {_clip(person_words(e), 300)}" for e in episodes[:5])
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
