"""Deterministic detectors over a Session: what went wrong, what was learned, who waited.

- corrections: the person pushes back after a hand-back ("no, …", "not what I asked", "try
  again", "I said", "don't", "instead", "stop"), interrupts and then pushes back or redirects,
  or refuses a tool call; an interrupt followed by a plain instruction (a redirect or a new
  task, which one message cannot tell) is kept too, tagged `interrupt` and `unconfirmed`;
- offers: an assistant reply that offered to act ("shall I", "would you like me to", …), how
  the person answered (corrected, declined, approved, other, unanswered) and how many replies
  in a row waited on the person;
- errors: failed tool results, classified;
- surprises: stated surprises ("unexpectedly", "turns out", "that's odd", "I assumed … but");
- environment: facts about the machine (a tool or module missing, a version, the OS, a path).

Every pattern errs towards silence: a missed finding costs little, a false one teaches a
wrong lesson. Each detector returns plain dataclasses; ingest turns them into episodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from remem.engine.session import Session, ToolCall, Turn

ERROR_CLASSES = (
    "command_not_found", "module_not_found", "permission_denied", "test_failure",
    "syntax_type_error", "timeout", "network", "git_conflict", "file_not_found", "other",
)
ACTION_KINDS = ("edit", "run_tests", "commit", "install", "push", "other")
OFFER_ANSWERS = ("corrected", "declined", "approved", "refused", "other", "unanswered")


@dataclass
class Finding:
    kind: str  # correction, error, surprise, environment
    title: str  # stable for the same finding across re-reads of the session
    text: str  # what it says: for a correction, the person's words alone
    detail: str = ""
    at: str | None = None
    turn: int = -1
    tags: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def shorten(text: str | None, width: int = 100) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


# --------------------------------------------------------------------------- action kinds

_TEST_CMD = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?test|cargo\s+test|go\s+test|mix\s+test|make\s+(test|check)|"
    r"gradle\w*\s+test|mvn\s+test|dotnet\s+test)\b"
)
_INSTALL_CMD = re.compile(
    r"\b(pip3?\s+install|uv\s+(add|pip\s+install|sync)|poetry\s+add|pipx\s+install|conda\s+install|"
    r"(npm|pnpm|bun)\s+(install|i|add)\b|yarn\s+add|cargo\s+(add|install)|go\s+(get|install)|"
    r"gem\s+install|bundle\s+install|brew\s+install|(apt|apt-get|dnf|yum|pacman|apk)\s+(install|add|-S)|"
    r"mix\s+deps\.get)"
)
_EDIT_TOOLS = {"edit", "write", "multiedit", "notebookedit", "str_replace_based_edit_tool",
               "apply_patch", "create_file", "edit_file", "write_file", "str_replace"}
_TEXT_KINDS = (
    ("push", re.compile(r"\bpush(ing)?\b|\bopen (a |the )?(pull request|pr)\b|\bdeploy\b", re.I)),
    ("commit", re.compile(r"\bcommit(ting)?\b", re.I)),
    ("install", re.compile(r"\binstall(ing)?\b|\badd (it |them |this )?(as )?(a )?(dependency|dependencies|package)\b", re.I)),
    ("run_tests", re.compile(r"\b(run|rerun|re-run)(ning)? (the |all |your )?(unit |integration )?(tests?|test suite|specs?)\b|\btest suite\b", re.I)),
    ("edit", re.compile(
        r"\b(edit|change|update|fix|modify|refactor|rename|rewrite|write|create|implement|apply|"
        r"add|remove|delete|replace|patch|move|clean up|convert|migrate|make the change)\b", re.I)),
)


def command_of(tool_input: Any) -> str:
    """The shell command a tool call ran, as one string ('' if it ran none).

    Claude Code gives a string; Codex a list, usually ["bash", "-lc", "<script>"].
    """
    if not isinstance(tool_input, dict):
        return ""
    cmd = tool_input.get("command") or tool_input.get("cmd") or ""
    if isinstance(cmd, list):
        parts = [str(p) for p in cmd]
        if len(parts) >= 3 and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and parts[1] in ("-lc", "-c"):
            return parts[-1]
        return " ".join(parts)
    return str(cmd)


def action_kind(item: Any) -> str:
    """The kind of action an offer (text) or a tool call proposes: edit, run_tests, commit,
    install, push or other. Accepts a ToolCall, a {"name", "input"} dict, or text."""
    name = None
    tool_input: Any = None
    if isinstance(item, ToolCall):
        name, tool_input = item.name, item.input
    elif isinstance(item, dict):
        name, tool_input = item.get("name"), item.get("input")
    if name is not None:
        lname = str(name).lower()
        if lname in _EDIT_TOOLS:
            return "edit"
        command = ""
        if isinstance(tool_input, dict):
            command = command_of(tool_input)
        elif isinstance(tool_input, (str, list)):
            command = " ".join(tool_input) if isinstance(tool_input, list) else tool_input
        if command:
            return _command_kind(command)
        return "other"
    return _text_kind(str(item or ""))


def _command_kind(command: str) -> str:
    if re.search(r"\bgit\s+push\b", command):
        return "push"
    if re.search(r"\bgit\s+commit\b", command):
        return "commit"
    if _INSTALL_CMD.search(command):
        return "install"
    if _TEST_CMD.search(command):
        return "run_tests"
    if re.search(r"\bsed\s+-i\b|>\s*\S+\.\w+\s*$|\btee\s+\S", command):
        return "edit"
    return "other"


def _text_kind(text: str) -> str:
    for kind, pattern in _TEXT_KINDS:
        if pattern.search(text):
            return kind
    return "other"


# --------------------------------------------------------------------------- corrections

_NOT_PUSHBACK = re.compile(
    r"^(no\s+(problem|worries|rush|doubt|idea|way[!.]|biggie|need to (apologi[sz]e|thank))|"
    r"not bad|no,? (that'?s|it'?s) (fine|great|perfect|good)|"
    r"no (more )?(issues|errors|questions|changes needed)|nope,? (that'?s )?(all )?(good|fine))",
    re.I,
)
_PUSHBACK = [
    ("no", re.compile(r"^(no|nope|nah|nop)\b(?!-)", re.I)),
    ("not what I asked", re.compile(
        r"\b(that'?s |this is |it'?s )?not what I (asked|meant|wanted|said|requested)\b|"
        r"\bthat'?s not (it|right|correct)\b|\b(that'?s|this is|it'?s) wrong\b|^wrong\b", re.I)),
    ("try again", re.compile(r"\btry (it )?again\b|\bredo (it|that|this)\b|\bstart over\b", re.I)),
    ("I said", re.compile(
        r"\bI (already )?(said|told you|asked (you )?(to|for|not))\b|\bas I said\b|\blike I said\b", re.I)),
    # "don't forget to …" adds a step; it does not say the work was wrong
    ("don't", re.compile(r"(^|[.!?;]\s+|,\s*|\bplease\s+)(don'?t|do not|never)\b(?!\s*(mind|worry|forget))", re.I)),
    ("instead", re.compile(r"\binstead\b", re.I)),
    ("stop", re.compile(r"^(please\s+)?stop\b(?!\s+(the|a|my|your|that|this)?\s*"
                        r"(server|process|container|service|daemon|job|watcher|dev server|timer|app))", re.I)),
    # "why did you pick X?" asks for a reason; "why did you delete X?" objects to what was done
    ("undo", re.compile(r"^(please\s+)?(undo|revert|roll ?back)\b|\bwhy did you\b(?!\s+(pick|choose|chose|select|"
                        r"prefer|go (with|for)|decide|opt|settle|recommend|suggest)\b)|"
                        r"\byou (broke|deleted|removed|reverted)\b", re.I)),
]
# "No, looks good" / "Nope, that's it" / "No need, it's fine": a "no" answering "anything
# else?", followed by approval. Only the leading "no" is discounted: the rest is still read.
_NO_THEN_APPROVAL = re.compile(
    r"^(no|nope|nah)(\s+need)?[\s,.!-]+("
    r"(it |that |this |everything )?(looks?|seems) (good|great|fine|right|perfect|ok|okay)|lgtm|"
    r"(it|that|this|everything) (works|worked)|works for me|"
    r"(it|that|this|everything)('s|’s| is| was) (it|all|fine|good|great|perfect|correct|right|enough|ok|okay)|"
    r"all (good|set)|thanks|thank you|perfect|great)\b"
    # the approval ends its clause: "no, that is all wrong" is pushback
    r"(\s+(to|for) (me|now|today))?(?=\s*([.,!;:)]|$)|\s+(thanks|thank you|ship it)\b)",
    re.I,
)
_APPROVAL = re.compile(
    r"^(yes|yeah|yep|yup|sure|ok|okay|k|go ahead|go for it|do it|please do|sounds good|"
    r"lgtm|looks good|perfect|great|y|absolutely|please|proceed|continue|ship it|approved?)\b",
    re.I,
)
# After an interrupt: "continue", "go on", "sorry, go ahead" let the agent resume; they give no
# new instruction, so the interrupt was no correction. The whole message must be made of these.
_RESUME = re.compile(
    r"^((please|ok|okay|sorry|oops|yes|yeah|yep|sure|thanks|thank you|continue|go on|carry on|"
    r"keep going|resume|proceed|go ahead|go for it|please do|do it|sounds good|lgtm|looks good|"
    r"never ?mind|nvm|as you were|my bad|(from )?where you (left off|stopped|were))\b[\s,.!…]*)+$",
    re.I,
)
_BARE_DECLINE = re.compile(
    r"^(no|nope|nah|not now|not yet|no thanks?|no thank you|skip( it| that)?|leave it( as is)?|"
    r"not needed|that'?s (fine|ok|okay|enough)|don'?t bother|no need)"
    r"([\s,.!]*(thanks|thank you|for now|it'?s fine|that'?s fine|all good|"
    r"i'?ll (do|handle|push|commit|run|fix|take care of|deal with) (it|that|this|them)( myself| later)?))*"
    r"[\s,.!]*$",
    re.I,
)


# What the person pasted rather than said: code and the lines of a log. A "Don't retry" inside
# a code block or "use X instead" inside a deprecation warning is not the person's pushback.
_FENCED = re.compile(r"```.*?(```|\Z)|~~~.*?(~~~|\Z)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
# Where a quoted log line starts: a traceback, an exception or warning class, a "Warning:" /
# "Error:" label, a file:line: prefix, a stack frame. From there to the line's end is the log's.
_LOG_START = re.compile(
    r"Traceback \(most recent call last\)|"
    r"\b[A-Z]\w*(Error|Warning|Exception)\b:|"
    r"\b(?i:warning|warn|error|fatal|panic|exception)(\[\w+\])?:|"
    r"^\s*[\w./\\-]+\.[A-Za-z]\w*:\d+(:\d+)?:|"  # src/a.py:12: … (not example.com:8080)
    r"^\s*File \"[^\"]+\", line \d+|^\s*at [\w.$<>]+ \("
)


def prose(text: str) -> str:
    """The person's own words: fenced code blocks and quoted log lines taken out, inline code
    replaced by a stand-in (so a leading `npm` does not make "no longer works" start with "no")."""
    text = _INLINE_CODE.sub("(code)", _FENCED.sub("\n", text or ""))
    kept: list[str] = []
    in_log = False
    for line in text.splitlines():
        if in_log and line[:1].isspace():
            continue  # an indented line under a log line: the traceback goes on
        m = _LOG_START.search(line)
        in_log = m is not None
        kept.append(line[:m.start()] if m else line)
    return "\n".join(kept).strip()


def pushback(text: str) -> str | None:
    """Which pushback pattern a reply after a hand-back shows, or None. Only the person's own
    words are read, not the code or log they pasted."""
    text = prose(text)
    if not text or _NOT_PUSHBACK.match(text):
        return None
    approving = _NO_THEN_APPROVAL.match(text) is not None
    for name, pattern in _PUSHBACK:
        if name == "no" and approving:
            continue
        if pattern.search(text):
            return name
    return None


# After an interrupt, words that turn the agent away from what it was doing ("wait, …",
# "use X not Y", "only …", "continue, but …"): a correction, confirmed by its words. A bare
# imperative ("create the beads", "use pnpm") may be a redirect or a go-ahead to a new task:
# it is kept as an unconfirmed correction (see after_interrupt).
_REDIRECT = re.compile(
    r"^(wait|hold on|hang on|hold up|actually|scratch that|rather)\b[\s,.!:;—-]+(\S+\s+\w|(no|not|nope|stop)\b)|"
    r"^only\b|^(just\s+)?(skip|leave out|drop)\b|\bleave\s+(\S+\s+){1,3}?alone\b|\blet'?s not\b|"
    r"^(ok|okay|yes|yeah|sure|continue|go on|go ahead|proceed|carry on|keep going)\b[\s,.!]*but\b|"
    r"\buse\s+\S+(\s+\S+){0,3}?,?\s+(not|rather than|instead of)\s+\S|"
    r"\bwrong (file|branch|directory|folder|repo|approach|command|place|one|way|version|module|function)\b",
    re.I,
)
# After an interrupt, a message made only of these holds the agent ("wait", "hmm, one sec")
# and says nothing about what to do: no instruction at all.
_HOLD = re.compile(
    r"^((wait|hold on|hang on|hold up|one (sec|second|moment|min|minute)|just a (sec|second|moment|"
    r"minute)|sec|hmm+|um+|uh+|ah+|oh+|ok|okay)\b[\s,.!…]*)+$",
    re.I,
)


def _is_question(text: str) -> bool:
    """The message opens with a question: its first sentence asks. A question is never a
    lesson ("Scrolling still does not work? search the web" asks and starts a new topic)."""
    first = next((s for s in _SENTENCE_END.split(text) if s.strip()), "")
    return first.rstrip().endswith("?")


REDIRECT, INSTRUCTION = "redirect", "instruction"


def after_interrupt(text: str) -> str | None:
    """How the person's words after an interrupt read:

    - "redirect": pushback or a redirect ("no, use pnpm", "use uv not pip", "wait, run the unit
      tests first"): it corrects what the agent was doing, a correction at once;
    - "instruction": a plain instruction ("use pnpm", "create the beads"): a redirect or a new
      task, which one cannot be told from one message; an unconfirmed correction;
    - None: resuming ("continue", "go ahead"), holding ("wait"), a question, or no words of
      their own (only pasted code or a log): no correction.
    """
    words = prose(text)
    if not words or _RESUME.match(words) or _HOLD.match(words) or _is_question(words):
        return None
    if pushback(words) is not None or _REDIRECT.search(words) is not None:
        return REDIRECT
    return INSTRUCTION


def _handback_before(turns: list[Turn], index: int) -> Turn | None:
    """The assistant turn the user turn at `index` answers, if the assistant had handed back.

    A hand-back is an assistant reply with no tool calls of its own: a message typed while a
    call was still running is a mid-turn message, not an answer to the agent.
    """
    if index == 0:
        return None
    prev = turns[index - 1]
    if prev.role != "assistant" or prev.tool_calls:
        return None
    return prev


def corrections(session: Session) -> list[Finding]:
    from remem.engine.transcripts import rejection_reason

    turns = session.turns
    found: list[Finding] = []
    refusal_answered: set[int] = set()
    # Refused calls: one correction per assistant turn (parallel calls are refused together).
    for i, turn in enumerate(turns):
        refused = [c for c in turn.tool_calls if c.rejected]
        if not refused:
            continue
        first = refused[0]
        reason = next((rejection_reason(c.result or "") for c in refused if rejection_reason(c.result or "")), "")
        follow = _next_instruction(turns, i)
        words = reason or (follow[1].text if follow else "")
        if follow and not reason:
            refusal_answered.add(follow[0])
        what = _describe_call(first)
        text = words or f"refused {what}"
        found.append(Finding(
            kind="correction", title=f"refused {what}", text=text,
            detail=f"The person refused the call {what}." + (f" They said: {words}" if words else ""),
            at=turn.at, turn=i, tags=["refused", f"action:{action_kind(first)}"],
            extra={"how": "refused", "action": action_kind(first), "tool": first.name},
        ))
    for i, turn in enumerate(turns):
        if turn.role != "user" or not turn.text or i in refusal_answered:
            continue
        prev = turns[i - 1] if i else None
        unconfirmed = False
        if prev is not None and prev.role == "user" and prev.interrupt:
            read = after_interrupt(turn.text)
            if read is None:
                continue  # resumed, held, or asked: nothing the agent did was corrected
            how = "interrupt"
            # A plain instruction: kept, tagged `unconfirmed`; the sleep learns from it only
            # when a correction like it comes again (lessons_pass.py).
            unconfirmed = read == INSTRUCTION
        else:
            handback = _handback_before(turns, i)
            if handback is None:
                continue
            how = pushback(turn.text)
            if how is None:
                continue
            if _BARE_DECLINE.match(turn.text.strip()) and offer_in(handback.text):
                continue  # "no thanks" to an offer is a declined offer, not a correction
        asked = _previous_ask(turns, i)
        handback_text = next((t.text for t in reversed(turns[:i]) if t.role == "assistant" and t.text), "")
        detail = (f"Asked: {shorten(asked, 300)}\n" if asked else "") + \
                 (f"The agent said: {shorten(handback_text, 300)}\n" if handback_text else "") + \
                 f"The person said: {turn.text}"
        if unconfirmed:
            detail += ("\nUnconfirmed: an interrupt, then a plain instruction (a redirect or a new "
                       "task); learned only if a correction like it comes again.")
        found.append(Finding(
            kind="correction", title=shorten(turn.text, 120), text=turn.text, detail=detail,
            at=turn.at, turn=i, tags=["interrupt", "unconfirmed"] if unconfirmed else [f"pushback:{how}"],
            extra={"how": how, "action": action_kind(turn.text)} | ({"unconfirmed": True} if unconfirmed else {}),
        ))
    found.sort(key=lambda f: f.turn)
    return _unique_titles(found)


def _next_instruction(turns: list[Turn], index: int) -> tuple[int, Turn] | None:
    """The person's next words after turn `index`, if they come before the agent speaks again."""
    for j in range(index + 1, len(turns)):
        t = turns[j]
        if t.role == "assistant":
            return None
        if t.text:
            return j, t
    return None


def _previous_ask(turns: list[Turn], index: int) -> str:
    for t in reversed(turns[:index]):
        if t.role == "user" and t.text:
            return t.text
    return ""


def _describe_call(call: ToolCall) -> str:
    inp = call.input if isinstance(call.input, dict) else {}
    arg = command_of(inp) or inp.get("file_path") or inp.get("path") or inp.get("pattern") \
        or inp.get("url") or inp.get("query") or ""
    return f"{call.name}: {shorten(str(arg), 80)}" if arg else call.name


_TITLE_COUNT = re.compile(r"\s\(\d+\)$")  # " (2)" from _unique_titles
_COMMAND_PREFIX = re.compile(r"^((cd\s+\S+\s*(&&|;)\s*)|(\w+=\S*\s+)|((sudo|env|time|nohup)\s+))+")
_SUBCOMMAND = re.compile(r"^[a-z][\w.:-]*$")


def refused_call_kind(title: str) -> str:
    """The kind of call a wordless refusal's title ("refused Bash: git push origin main",
    made by corrections()) names: the tool, and for a command its program and subcommand
    ("bash git push"). Two refusals of one kind of call are a habit; one is not yet."""
    described = _TITLE_COUNT.sub("", title or "").removeprefix("refused ").strip()
    tool, _, arg = described.partition(": ")
    words = _COMMAND_PREFIX.sub("", arg.strip()).split()
    head: list[str] = []
    for word in words[:2]:
        if not _SUBCOMMAND.match(word.lower()):
            break  # a path, a flag, a URL or a shell operator ends the program's name
        head.append(word.lower())
    return " ".join([tool.strip().lower()] + head)


def _unique_titles(findings: list[Finding]) -> list[Finding]:
    """The same title twice in one session gets ' (2)', ' (3)' … in order of appearance."""
    seen: dict[tuple[str, str], int] = {}
    for f in findings:
        key = (f.kind, f.title)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            f.title = f"{f.title} ({seen[key]})"
    return findings


# --------------------------------------------------------------------------- offers

_OFFER = re.compile(
    r"\b(shall I|should I|would you like (me to|me to go ahead|to)|do you want me to|want me to|"
    r"if you(?:'d| would) like,? I can|let me know if you(?:'d| would)? (like|want) me to|"
    r"I can (also )?\w+ (it|this|that|them)? ?(if you|for you)|may I|can I go ahead)\b[^?.!\n]*[?.!]?",
    re.I,
)


_SENTENCE_BREAK = re.compile(r"[.!?]\s+|\n")


def offer_in(text: str) -> str | None:
    """The sentence of a reply that offers to act, or None."""
    if not text:
        return None
    tail = text[-1500:]  # offers close a reply; an early "should I" is usually the agent musing
    match = None
    for match in _OFFER.finditer(tail):
        pass
    if match is None:
        return None
    start = 0
    for end in _SENTENCE_BREAK.finditer(tail, 0, match.start()):
        start = end.end()
    return tail[start:match.end()].strip()


def answer_of(reply: Turn | None, refused: bool = False) -> str:
    """How the person answered an offer."""
    if reply is None:
        return "unanswered"
    if refused:
        # The reply offered and acted at once, and the person refused the call: that is
        # "acted, then stopped" (counted from the refusal), not "asked, then told to act".
        return "refused"
    text = (reply.text or "").strip()
    if not text:
        return "corrected" if reply.interrupt else "other"
    if _BARE_DECLINE.match(text):
        return "declined"
    if pushback(text):
        return "corrected"
    if _APPROVAL.match(text):
        return "approved"
    return "other"


def offers(session: Session) -> list[dict[str, Any]]:
    """Each reply that offered to act: the offer, its kind, the answer, and how many replies
    in a row (this one included) had waited on the person since they last gave an instruction."""
    turns = session.turns
    out: list[dict[str, Any]] = []
    waited = 0
    for i, turn in enumerate(turns):
        if turn.role == "user":
            if turn.text and not (out and out[-1]["turn"] == i - 1):
                waited = 0
            continue
        nxt = turns[i + 1] if i + 1 < len(turns) else None
        if nxt is not None and nxt.role == "assistant":
            continue  # not a hand-back: the agent kept going
        if turn.tool_calls and not any(c.rejected for c in turn.tool_calls):
            continue  # still working
        sentence = offer_in(turn.text)
        if not sentence:
            continue
        waited += 1
        refused = any(c.rejected for c in turn.tool_calls)
        reply = nxt
        answer = answer_of(reply, refused)
        out.append({
            "turn": i, "at": turn.at, "offer": shorten(sentence, 200),
            "kind": action_kind(sentence), "answer": answer,
            "reply": shorten(reply.text, 200) if reply is not None else "",
            "waited": waited,
        })
        if answer != "approved" and answer != "other":
            waited = 0
    return out


def offer_summary(found: list[dict[str, Any]]) -> dict[str, Any]:
    by_answer: dict[str, int] = {}
    for o in found:
        by_answer[o["answer"]] = by_answer.get(o["answer"], 0) + 1
    return {"offers": len(found), "by_answer": by_answer,
            "waited": max((o["waited"] for o in found), default=0)}


# --------------------------------------------------------------------------- errors

_ERROR_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("command_not_found", re.compile(
        r"command not found|: not found\s*$|is not recognized as an internal or external command|"
        r"executable file not found|no such command|Unknown command|not installed", re.I | re.M)),
    ("module_not_found", re.compile(
        r"ModuleNotFoundError|No module named|Cannot find module|ImportError|Could not resolve dependency|"
        r"unresolved import|package [\w./-]+ is not in (GOROOT|std)|cannot find package|"
        r"can't resolve '[^']+'|Module not found|LoadError|could not find (gem|crate)", re.I)),
    ("permission_denied", re.compile(
        r"permission denied|EACCES|EPERM|Operation not permitted|requested permissions? to|"
        r"haven't granted it|access is denied|not permitted|read-only file system", re.I)),
    ("git_conflict", re.compile(
        r"CONFLICT \(|merge conflict|Automatic merge failed|needs merge|unmerged (files|paths)|"
        r"non-fast-forward|\[rejected\]|cannot (rebase|pull) with rebase|would be overwritten by (merge|checkout)",
        re.I)),
    ("test_failure", re.compile(
        r"\b\d+ (failed|failing)\b|^FAILED\b|^FAIL\b|AssertionError|tests? failed|test result: FAILED|"
        r"\bfailures?: [1-9]|assert(ion)? failed|Expected: .*\n\s*Received:", re.I | re.M)),
    ("syntax_type_error", re.compile(
        r"SyntaxError|IndentationError|TabError|TypeError|type error|error TS\d+|"
        r"invalid syntax|Unexpected token|ParseError|parse error|mismatched types|"
        r"is not assignable to|cannot find name|expected .{1,40}, found|"
        r"has no attribute|NameError|undefined (method|variable|function)|error\[E\d+\]", re.I)),
    ("timeout", re.compile(r"timed? ?out|timeout|deadline exceeded|ETIMEDOUT", re.I)),
    ("network", re.compile(
        r"Connection refused|ECONNREFUSED|ECONNRESET|Could not resolve host|Name or service not known|"
        r"Temporary failure in name resolution|Network is unreachable|getaddrinfo|ENOTFOUND|"
        r"SSL(Error|: )|certificate verify failed|Failed to connect|HTTP(Error| error)? 5\d\d|"
        r"\b50[234] (Bad Gateway|Service Unavailable|Gateway Timeout)|connection reset", re.I)),
    ("file_not_found", re.compile(
        r"No such file or directory|ENOENT|FileNotFoundError|File does not exist|"
        r"does not exist|cannot find the (file|path)|not found", re.I)),
]
_CMD_MISSING = [
    re.compile(r"^(?:[\w./-]+: )?(?:line \d+: )?([\w.+-]+): command not found\s*$", re.M),
    re.compile(r"command not found: ([\w.+-]+)"),
    re.compile(r"'([\w.+-]+)' is not recognized as an internal or external command"),
    re.compile(r"exec: \"([\w.+-]+)\": executable file not found"),
    re.compile(r"(?:^|\n)(?:/bin/)?sh: \d+: ([\w.+-]+): not found"),
]
_MODULE_MISSING = [
    re.compile(r"No module named '?([\w.]+)'?"),
    re.compile(r"Cannot find module '([^']+)'"),
]


# Literal pieces (lowercase) that every match of a class's pattern contains. A substring test
# is a hundred times cheaper than a case-insensitive alternation, and most outputs hit none.
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "command_not_found": ("not found", "not recognized", "no such command", "unknown command", "not installed"),
    "module_not_found": ("module", "importerror", "could not resolve", "unresolved import", "cannot find package",
                         "can't resolve", "loaderror", "could not find", "is not in"),
    "permission_denied": ("permission", "eacces", "eperm", "not permitted", "haven't granted", "access is denied",
                          "read-only file system"),
    "git_conflict": ("conflict", "needs merge", "unmerged", "non-fast-forward", "[rejected]", "cannot rebase",
                     "cannot pull", "would be overwritten"),
    "test_failure": ("fail", "assert", "received:"),
    "syntax_type_error": ("error", "invalid syntax", "unexpected token", "mismatched types", "not assignable",
                          "cannot find name", "expected", "has no attribute", "undefined"),
    "timeout": ("timed out", "time out", "timeout", "timedout", "deadline exceeded"),
    "network": ("connect", "reset", "resolve host", "name or service", "name resolution", "unreachable",
                "getaddrinfo", "enotfound", "ssl", "certificate", "http", "bad gateway", "service unavailable",
                "gateway timeout"),
    "file_not_found": ("no such file", "enoent", "filenotfounderror", "does not exist", "cannot find the", "not found"),
}


def error_class(text: str) -> str:
    """The class of a failed tool result's text (see ERROR_CLASSES)."""
    text = text or ""
    head = text[:4000] + ("\n" + text[-2000:] if len(text) > 6000 else "")
    low = head.lower()
    for name, pattern in _ERROR_PATTERNS:
        if any(t in low for t in _TRIGGERS[name]) and pattern.search(head):
            return name
    return "other"


_LABEL = {
    "command_not_found": "command not found", "module_not_found": "module not found",
    "permission_denied": "permission denied", "test_failure": "tests failed",
    "syntax_type_error": "syntax/type error", "timeout": "timed out", "network": "network error",
    "git_conflict": "git conflict", "file_not_found": "file not found", "other": "failed",
}
_NOISE = re.compile(r"^(Exit code \d+|Error:?|Traceback \(most recent call last\):|error:?)\s*$", re.I)


def _error_line(text: str, cls: str) -> str:
    """The most telling line of an error output: the one its class matched, else the first."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip() and not _NOISE.match(ln.strip())]
    pattern = dict(_ERROR_PATTERNS).get(cls)
    if pattern is not None:
        hits = [ln for ln in lines if pattern.search(ln)]
        if hits:
            # A traceback ends with the exception that matters; test runners name the test first.
            return hits[-1] if cls in ("module_not_found", "syntax_type_error") else hits[0]
    return lines[0] if lines else ""


def _normalise(line: str) -> str:
    """Drop what differs between two occurrences of the same error (numbers, hex, tmp paths)."""
    line = re.sub(r"0x[0-9a-f]+|\b[0-9a-f]{8,}\b", "…", line, flags=re.I)
    line = re.sub(r"/tmp/[^\s'\"]+", "/tmp/…", line)
    line = re.sub(r"\b\d+(\.\d+)?(ms|s)\b", "…", line)
    line = re.sub(r"line \d+", "line …", line)
    return shorten(line, 120)


def errors(session: Session) -> list[Finding]:
    found: list[Finding] = []
    for i, turn in enumerate(session.turns):
        for call in turn.tool_calls:
            if not call.is_error or call.rejected or call.result is None:
                continue
            cls = error_class(call.result)
            line = _normalise(_error_line(call.result, cls))
            what = _describe_call(call)
            title = f"{call.name} {_LABEL[cls]}: {line}" if line else f"{call.name} {_LABEL[cls]}"
            found.append(Finding(
                kind="error", title=shorten(title, 160), text=f"{what}\n{line}",
                detail=f"{what}\n\n{(call.result or '')[:4000]}", at=turn.at, turn=i,
                tags=[f"error:{cls}", f"tool:{call.name.lower()}"],
                extra={"class": cls, "tool": call.name, "action": action_kind(call)},
            ))
    return _dedupe(found)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per title within a session: the same error repeated is one episode."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        key = (f.kind, f.title)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


# --------------------------------------------------------------------------- surprises

_SURPRISE = re.compile(
    r"\b(unexpectedly|surprisingly|to my surprise|(it )?turns out|that'?s (odd|strange|weird|surprising|unexpected)|"
    r"this is (odd|strange|weird|surprising|unexpected)|interestingly|oddly|strangely|"
    r"I (had )?(assumed|expected) [^.!?\n]{3,160}\bbut\b|"
    # "I thought X was … but": a stated expectation. Not "I thought about/of …" or "I thought we
    # could …": that is deliberation, and its "but" is a change of plan, not a surprise.
    r"I (had )?thought (?!about\b|of\b|(we|I|you) (could|should|might|can|may|would)\b|maybe\b|perhaps\b)"
    r"(that )?[^.!?\n]{1,80}?\b(was|were|is|are|would|had|did|does|will|wasn'?t|weren'?t|isn'?t|"
    r"aren'?t|wouldn'?t|hadn'?t|didn'?t|doesn'?t|won'?t)\b[^.!?\n]{0,160}\bbut\b|"
    r"wasn'?t expecting|didn'?t expect|"
    r"contrary to (what I|my)|not what I expected)",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def surprises(session: Session) -> list[Finding]:
    found: list[Finding] = []
    for i, turn in enumerate(session.turns):
        if not turn.text or not _SURPRISE.search(turn.text):
            continue
        for sentence in _SENTENCE_END.split(turn.text):
            sentence = sentence.strip(" -*#>`")
            if len(sentence) < 12 or not _SURPRISE.search(sentence):
                continue
            if sentence.rstrip().endswith("?"):
                continue  # a question about a surprise is not a finding
            found.append(Finding(
                kind="surprise", title=shorten(sentence, 160), text=sentence,
                detail=f"{'The agent' if turn.role == 'assistant' else 'The person'} said: {shorten(turn.text, 1500)}",
                at=turn.at, turn=i, tags=[f"said-by:{turn.role}"],
            ))
    return _dedupe(found)


# --------------------------------------------------------------------------- environment

_VERSION = re.compile(r"\bv?(\d+\.\d+(?:\.\d+)?(?:[-+.][\w.]+)?)\b")
# The whole command asks a tool its version and nothing else ("grep -v x", "curl -v URL" and
# "npm version patch" do other things). `-v` means version only for the tools listed.
_VERSION_CMD = re.compile(r"^\s*(?:[\w.~/-]*/)?([\w.+-]+)\s+(--version|-V|-version|-v|version)\s*(?:2>&1)?\s*$")
_DASH_V_TOOLS = frozenset((
    "node", "npm", "npx", "pnpm", "yarn", "bun", "deno", "tsc", "ruby", "gem", "php", "perl",
    "docker", "gradle", "mvn", "terraform", "git", "nvm",
))
_DASH_VERSION_TOOLS = frozenset(("java", "javac", "scala", "kotlin"))  # java -version
_IPV4 = re.compile(r"^\d+\.\d+\.\d+\.\d+$")
_WHICH = re.compile(r"^\s*(which|command -v|type -p|where)\s+([\w.+-]+)\s*$")
_OS_CMD = re.compile(r"\b(uname( -\w+)*|sw_vers|lsb_release -\w+|cat /etc/os-release|ver)\b")
_OS_TEXT = re.compile(
    r"\b(Darwin \S+|Linux \S+|Ubuntu \d+\.\d+|Debian GNU/Linux \d+|Fedora( Linux)? \d+|"
    r"macOS \d+(\.\d+)*|ProductVersion:\s*\d+(\.\d+)*|Microsoft Windows \[Version [\d.]+\]|"
    r"Arch Linux|Alpine Linux v?\d+\.\d+|PRETTY_NAME=\"[^\"]+\")")


def environment(session: Session) -> list[Finding]:
    found: list[Finding] = []
    for i, turn in enumerate(session.turns):
        for call in turn.tool_calls:
            if call.rejected or call.result is None:
                continue
            command = command_of(call.input)
            result = call.result or ""
            for title, text in _environment_of(command, result, call.is_error):
                found.append(Finding(
                    kind="environment", title=title, text=text,
                    detail=f"{_describe_call(call)}\n\n{result[:1500]}", at=turn.at, turn=i,
                    tags=["environment"],
                ))
    return _dedupe(found)


def _asks_version(tool: str, flag: str) -> bool:
    if flag == "-v":
        return tool in _DASH_V_TOOLS
    if flag == "-version":
        return tool in _DASH_VERSION_TOOLS
    return True


def _version_in(line: str) -> str | None:
    """The version a version command printed: a short line, a number standing on its own (not
    inside a file name, a path, `pkg==1.2` or an address)."""
    if len(line) > 200:
        return None
    for m in _VERSION.finditer(line):
        before = line[m.start() - 1] if m.start() else " "
        if before not in " \t(\"'" or _IPV4.match(m.group(1)):
            continue
        return m.group(1)
    return None


def _environment_of(command: str, result: str, is_error: bool) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    head = result[:3000]
    # cheap substring checks first: this runs over every tool result of every session
    if "not found" in head or "not recognized" in head:
        for pattern in _CMD_MISSING:
            for m in pattern.finditer(head):
                tool = m.group(1)
                facts.append((f"tool missing: {tool}", f"`{tool}` is not installed on this machine (command not found)."))
    for pattern in _MODULE_MISSING if "odule" in head else ():
        for m in pattern.finditer(head):
            mod = m.group(1)
            facts.append((f"module missing: {mod}", f"The module `{mod}` is not installed here."))
    if is_error or not command:
        return facts
    first = _first_line(result)
    vm = _VERSION_CMD.match(command)
    if vm and len(command) < 120 and _asks_version(vm.group(1), vm.group(2)):
        version = _version_in(first)
        if version:
            tool = vm.group(1)
            facts.append((f"version: {tool} {version}", f"{tool} here is version {version} ({shorten(first, 120)})."))
    wm = _WHICH.match(command)
    if wm and first.startswith(("/", "~")) and " " not in first:
        facts.append((f"path: {wm.group(2)} -> {first}", f"`{wm.group(2)}` resolves to {first}."))
    if _OS_CMD.search(command):
        parts = first.split()
        om = _OS_TEXT.search(head)
        if "uname" in command and len(parts) >= 3 and parts[0] in ("Linux", "Darwin", "FreeBSD", "OpenBSD"):
            # uname -a: kernel name, host name, kernel release
            facts.append((f"os: {parts[0]} {parts[2]}", f"The machine runs {parts[0]} {parts[2]}."))
        elif om:
            facts.append((f"os: {shorten(om.group(0), 80)}", f"The machine runs {shorten(om.group(0), 120)}."))
    return facts


# --------------------------------------------------------------------------- everything

def detect_all(session: Session) -> dict[str, Any]:
    """Every finding of a session, by kind, plus its offers."""
    return {
        "correction": corrections(session),
        "error": errors(session),
        "surprise": surprises(session),
        "environment": environment(session),
        "offers": offers(session),
    }
