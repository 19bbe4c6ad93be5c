"""How the person answered the agent: corrections and offers.

- corrections: the person pushes back after a hand-back ("no, …", "not what I asked", "try
  again", "I said", "don't", "instead", "stop"), interrupts and then pushes back or redirects,
  or refuses a tool call (its words: a reason typed into the prompt, or the next message when
  it is pushback or a redirect; any other message is read as after an interrupt); an
  interrupt followed by a plain instruction (a redirect or a new task, which one message
  cannot tell) is kept too, tagged `interrupt` and `unconfirmed`,
  unless the agent's last act was leaving plan mode with the person's approval (then it is
  the go for the plan's task);
- offers: an assistant reply that offered to act ("shall I", "would you like me to", …), how
  the person answered (corrected, declined, approved, other, unanswered) and how many replies
  in a row waited on the person.

The two share one module because they read a reply the same way: pushback makes an offer's
answer "corrected", and a bare "no thanks" to an offer is a declined offer, not a correction.
"""

from __future__ import annotations

import re
from typing import Any

from remem.engine.detect_common import (SENTENCE_END, Finding, action_kind, describe_call, quote, scan_text,
                                        shorten)
from remem.engine.session import Session, Turn


# --------------------------------------------------------------------------- corrections

_NOT_PUSHBACK = re.compile(
    r"^(no\s+(problem|worries|rush|doubt|idea|way[!.]|biggie|need to (apologi[sz]e|thank))|"
    r"not bad|no,? (that'?s|it'?s) (fine|great|perfect|good)|"
    r"no (more )?(issues|errors|questions|changes needed)|nope,? (that'?s )?(all )?(good|fine))",
    re.I,
)
# A leading "no" / "nope" / "nah": the person says no to what the agent did ("no, use pnpm",
# "no the other file", "no it still fails", "No still failing", "No sudo. Use --user.") or
# lays down a rule ("No emojis in commit messages", "No network calls in unit tests", "No print
# statements at all", "No page reloads, use htmx"). Not a "no" that begins a report of what the
# person sees:
# - a word that only says nothing happened or came back, first or second after it: "No luck",
#   "No response from the server", "No real difference", "No such file …", "No module named
#   …", "No one uses it", "No longer works", "No change" (not "No change to the public API",
#   "No one-letter names", "No longer than 80 columns");
# - a word of what happened or was seen in its clause: "No output at all when I run it", "No
#   tests ran", "No data shows up on the dashboard", "No page is loaded anymore";
# - a thing one sees, and nothing else in its clause but words such as "at all", "either",
#   "yet": "No output", "No build output either", "No errors at all" (not "No debug output in
#   production", "No warning suppression, fix the cause", "No images in the README");
# - a thing one sees, and where the person looked for it ("No data in the table", "No images
#   on the page", "No error on my side": _LOOKED_IN) or what it came from ("No output from the
#   tests", "No warnings from the linter"). A place a rule keeps it out of is no such place
#   ("No images in the README", "No log statements in the hot loop"); where the two read alike
#   ("No images on the landing page") it is a report: a report read as a rule would teach a
#   false lesson, a rule missed costs one more correction.
# Punctuation after the "no" ("no, …", "No. …", "no!") or a word that only goes on a reply
# ("no I meant …", "no the other one", "no use pnpm", "no still broken") makes it one whatever
# follows.
_REPLY_WORD = (r"i|i['’](m|d|ll|ve)|im|ive|you|you['’](re|ve)|youre|we|we['’](re|ve)|it|it['’]s|that|"
               r"that['’]s|thats|this|these|those|they|they['’]re|there|the|not|never|don['’]?t|do|stop|"
               r"wait|please|just|only|actually|rather|use|keep|leave|put|revert|undo|try|need|way|sorry|"
               r"but|because|why|wrong|instead|no|nope|still")
_NOTHING_CAME = (r"luck|idea|clue|dice|joy|go|such|matter|success|progress|improvement|difference|effect|"
                 r"response|responses|reply|replies|result|results|sign|signs|trace|activity|feedback|"
                 r"module\s+named|one(?![-'’\w])|longer(?!\s+than\b)|changes?(?!\s+to\b)")
_REPORT_CUE = (r"when I|whenever I|after I|if I|once I|any ?more|yet|matche[sd]|shows?\s+up|shows|showed|"
               r"shown|showing|appears?|appeared|appearing|happens|happened|happening|"
               r"comes?\s+(up|out|back|through)|came|prints|printed|printing|displays|displayed|gets|got|"
               r"was|were|ran|runs|running|loads|loaded|loading|works|worked|working|found|seems?|seemed|"
               r"visible|returned|returns|(is|are)\s+(blank|empty|there|showing|shown|printed|visible|coming|"
               r"happening)")
_SEEN = (r"output|outputs|data|log|logs|sound|audio|video|image|images|picture|text|content|page|"
         r"display|screen|signal|connection|internet|network|warning|warnings|error|errors|exception|"
         r"exceptions|crash|crashes|match|matches|hits|change|changes")
_SEEN_TAIL = r"at all|anywhere|either|whatsoever|yet|still|even|here|there|now|again|so far|this time"
# Where the person looked for a thing one sees, named with "the", "my", "this" …: "No data in
# the table", "No images on the page", "No logs in the terminal", "No text in the input field",
# "No error on my side". Not where a rule keeps it out ("No images in the README", "No debug
# output in the hot loop", "No network calls in unit tests", "No debug output in production").
_LOOKED_IN = (r"table|tables|terminal|console|shell|log|logs|logfile|page|pages|screen|browser|window|tab|"
              r"panel|pane|field|form|input|ui|dashboard|output|response|body|preview|view|list|results|"
              r"report|chart|graph|grid|inbox|sidebar|modal|dialog|popup|devtools|inspector|network\s+tab|"
              r"side|end|machine|laptop|box|run|build|database|db")
_PLACE_WORD = r"the|my|this|that|these|those|a|an|our|your|its|their"
_LEADING_NO = re.compile(
    r"^(nope|nah|nop)\b(?!-)|"
    r"^no(?=\s*([,.!;:…]|$)|\s+[-–—])|"
    rf"^no\s+({_REPLY_WORD})(?=[\s,.!?;:…]|$)|"
    rf"^no\b(?!-)(?!\s+(\S+\s+)?({_NOTHING_CAME})\b)"
    rf"(?!\s+((?![,;:!?\n]|\.(\s|$)).)*?\b({_REPORT_CUE})\b)"
    rf"(?!\s+(\S+\s+)?({_SEEN})(\s+({_SEEN_TAIL}))*\s*([,.;:!?…]|$))"
    # a thing one sees, then where it was looked for or came from: "No data in the table", "No
    # output from the tests", "No warnings from the linter", "No match for that query"
    rf"(?!\s+(\S+\s+)?({_SEEN})(\s+({_SEEN_TAIL}))*\s+("
    rf"(in|on|at)\s+({_PLACE_WORD})\s+([\w-]+\s+){{0,2}}?({_LOOKED_IN})\b|"
    rf"from\s+({_PLACE_WORD})\b|for\s+(that|this|my|the)\s+(query|search|request|call|command|input)\b))",
    re.I,
)
# What follows a sentence's "don't" / "never" when it says what the person sees, knows or
# thinks rather than forbids: "don't know why …", "don't understand", "don't remember", "never
# saw / got …"; "don't get it / why / how / what / that", "don't get any output", "don't get an
# error anymore", "don't get me wrong" (not "don't get fancy", "don't get too clever", "don't
# get the config from env", "don't get rid of …", which forbid or object); "don't get confused
# / lost / thrown by the old file", a heads-up on what the agent will meet, as "don't forget
# to …" is; "don't think so / it works / that's right", "don't think twice" (not "don't think
# about performance yet"); "don't see any / the error / why it fails" (not "don't see why you
# need a new file", which objects).
_NOT_FORBIDDING = (r"(mind|worry|forget|hesitate|thought|know|knew|understand|understood|remember|saw|seen|"
                   r"gotten|got(?!\s+rid)|get\s+(it|why|how|what|that|where|when|whether|this|any|an?|no|"
                   r"(me|us)\s+wrong|confused|lost|thrown|tripped|misled|distracted|stuck)|"
                   r"think(?!\s+(about|of|too|ahead|in\s+terms|outside|so\s+(hard|much))\b)|"
                   r"see(?!\s+(why\s+(you|we)|the\s+(point|need|reason))\b))\b")
_PUSHBACK = [
    ("no", _LEADING_NO),
    ("not what I asked", re.compile(
        r"\b(that'?s |this is |it'?s )?not what I (asked|meant|wanted|said|requested)\b|"
        r"\bthat'?s not (it|right|correct)\b|\b(that'?s|this is|it'?s) wrong\b|^wrong\b", re.I)),
    ("try again", re.compile(r"\btry (it )?again\b|\bredo (it|that|this)\b|\bstart over\b", re.I)),
    ("I said", re.compile(
        r"\bI (already )?(said|told you|asked (you )?(to|for|not))\b|\bas I said\b|\blike I said\b", re.I)),
    # "don't forget to …" adds a step; it does not say the work was wrong
    # "don't hesitate to …" and "never thought …" encourage, or wonder; "don't know why …",
    # "don't see any output", "don't get it", "don't think so", "never got it working" report
    # what the person sees or thinks, forbid nothing (_NOT_FORBIDDING)
    ("don't", re.compile(r"(^|[.!?;]\s+|,\s*(but\s+)?|\bplease\s+)(don'?t|do not|never)\b"
                         rf"(?!\s*({_NOT_FORBIDDING}))", re.I)),
    ("instead", re.compile(r"\binstead\b", re.I)),
    ("stop", re.compile(r"^(please\s+)?stop\b(?!\s+(the|a|my|your|that|this)?\s*"
                        r"(server|process|container|service|daemon|job|watcher|dev server|timer|app))", re.I)),
    # "revert is not needed" keeps the change; "why did you pick X?" asks for a reason, "why did
    # you delete X?" objects to what was done
    ("undo", re.compile(r"^(please\s+)?(undo|revert|roll ?back)\b(?!\s+(is|was)(\s+not|n'?t)\s+(needed|necessary))|"
                        r"\bwhy did you\b(?!\s+(pick|choose|chose|select|"
                        r"prefer|go (with|for)|decide|opt|settle|recommend|suggest)\b)|"
                        r"\byou (broke|deleted|removed|reverted)\b", re.I)),
]
# "No, looks good" / "Nope, that's it" / "No need, it's fine": a "no" answering "anything
# else?", followed by approval. Only the leading "no" is discounted: the rest is still read.
_NO_THEN_APPROVAL = re.compile(
    r"^(no|nope|nah|no way)(\s+need)?[\s,.!-]+("
    r"(it |that |this |everything )?(looks?|seems) (good|great|fine|right|perfect|ok|okay)|lgtm|"
    r"(it|that|this|everything) (works|worked)|works for me|"
    r"(it|that|this|everything)('s|’s| is| was) (it|all|fine|good|great|perfect|correct|right|enough|ok|okay|"
    r"brilliant|amazing|awesome|excellent)|"
    r"no (more )?(changes|edits|fixes) needed|to (revert|undo|roll ?back)( [^,.!;:?\n]{1,40})?|"
    r"all (good|set)|thanks|thank you|perfect|great|brilliant|amazing|awesome)\b"
    # the approval ends its clause: "no, that is all wrong" is pushback
    r"(\s+(to|for) (me|now|today))?(\s+then)?(?=\s*([.,!;:)]|$)|\s+(thanks|thank you|ship it)\b)",
    re.I,
)
# A message that ends in clear approval ("… Great work!", "… Ship it.") approves the work, and
# is no pushback whatever it said before ("No, nothing else. Looks good!", "Stop worrying about
# the warnings. Looks good."): detectors err towards silence. Unless it approves only the rest
# ("Otherwise LGTM", "the rest looks good", "everything else …", "then ship it"): then what came
# before is read for pushback as any reply ("No, use pnpm, not npm. Otherwise LGTM").
_ENDS_APPROVING = re.compile(
    r"\b((great|good|nice|excellent|awesome) (work|job)|well done|brilliant|ship it|commit it|"
    r"looks good( to me)?|lgtm)[\s.!…:)]*$",
    re.I,
)
_THE_REST = re.compile(
    r"(\b(otherwise|(the )?rest|everything else|all else|(apart|aside) from (that|this)|"
    r"(other|except) (than |for )?(that|this)|besides (that|this)|beyond (that|this)|"
    r"(after|once|when|with|if) (that|this|those|these|them|it))\b(\W+[\w'’]+){0,3}|"
    r"(^|[.;,!:]\s*)then|\band( then)?)\W*$", re.I)
# "… just curious": the questions before it only ask ("why did you say the tests pass? just curious")
_ONLY_ASKING = re.compile(r"\b(just|only) curious[\s.!…:)]*$", re.I)
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
# "Error:" label, a file:line: prefix, a stack frame, npm's "npm ERR!". From there to the
# line's end is the log's.
_LOG_START = re.compile(
    r"Traceback \(most recent call last\)|"
    r"\bnpm ERR!|"
    r"\b[A-Z]\w*(Error|Warning|Exception)\b:|"
    r"\b(?i:warning|warn|error|fatal|panic|exception)(\[\w+\])?:|"
    r"^\s*[\w./\\-]+\.[A-Za-z]\w*:\d+(:\d+)?:|"  # src/a.py:12: … (not example.com:8080)
    r"^\s*File \"[^\"]+\", line \d+|^\s*at [\w.$<>]+ \("
)
# A system or runtime error as programs print it, cased as they print it ("No such file or
# directory", "No module named 'yaml'", "Permission denied (publickey).", "command not found"),
# when it reads as a program's output: at the start of a line or of a sentence, after a code
# ("[Errno 13] Permission denied"), or after a program's or a path's "name: " prefix and what
# it says up to a ": " ("bash: line 1: pnpm: command not found", "curl: (7) Failed to connect to
# localhost port 3000: Connection refused"). The log runs from there to the end of its sentence
# or clause (". ", ", ", "; ", "! ", "? ") or of the line: the person's words may follow it
# ("Permission denied again. Don't use sudo", "Module not found again, don't add another
# alias"). Named inside the person's own sentence ("it says Permission denied, don't use sudo")
# it is their words. ssh's "Permission denied, please try again." is one printed line.
_SYSTEM_ERROR = (r"No such file or directory|No module named|Permission denied(, please try again\b)?|"
                 r"Operation not permitted|Is a directory|Not a directory|Directory not empty|File exists|"
                 r"No space left on device|Read-only file system|Too many open files|Connection refused|"
                 r"Connection reset by peer|Connection timed out|Network is unreachable|No route to host|"
                 r"Address already in use|Name or service not known|Temporary failure in name resolution|"
                 r"Broken pipe|Input/output error|Bad file descriptor|Exec format error|Argument list too long|"
                 r"Device or resource busy|Resource temporarily unavailable|Segmentation fault|"
                 r"cannot open shared object file|Cannot find module|Module not found|command not found|"
                 r"is not recognized as an internal or external command")
_CLAUSE_END = r"[.,;!?](?=\s)"
_PRINTED_ERROR = re.compile(
    r"\s*(\[[^\]\n]{0,40}\]\s*|\(\d+\)\s*)?"  # [Errno 13], (7)
    rf"([^\s:]+:\s+((?:(?!{_CLAUSE_END}).)*?:\s+)?)?"  # bash: / bash: line 1: pnpm: / curl: (7) … 3000:
    rf"({_SYSTEM_ERROR})\b((?:(?!{_CLAUSE_END}).)*)({_CLAUSE_END}|$)"
)


_SENTENCE_GAP = re.compile(r"(?<=[.!?;])\s+")


def _own_part(line: str) -> tuple[str, bool]:
    """A line's words that are the person's, and whether the line ends in a log: the printed
    errors (_PRINTED_ERROR) at the start of the line or of a sentence of it taken out, each to
    the end of its sentence or clause, then what a quoted log line starts (_LOG_START) to the
    line's end."""
    kept: list[str] = []
    at, printed = 0, None
    while at < len(line):
        printed = _PRINTED_ERROR.match(line, at)
        if printed is not None:
            at = printed.end()
            continue
        gap = _SENTENCE_GAP.search(line, at)
        end = gap.end() if gap else len(line)
        kept.append(line[at:end])
        at = end
    own = "".join(kept)
    log = _LOG_START.search(own)
    # the line ends in a log: a quoted log line runs to its end, or a printed error ends it
    return (own[:log.start()] if log else own), log is not None or printed is not None


def prose(text: str) -> str:
    """The person's own words: fenced code blocks and quoted log lines taken out, inline code
    replaced by a stand-in (so a leading `npm` does not make "no longer works" start with "no")."""
    text = _INLINE_CODE.sub("(code)", _FENCED.sub("\n", text or ""))
    kept: list[str] = []
    in_log = False
    for line in text.splitlines():
        if in_log and line[:1].isspace():
            continue  # an indented line under a log line: the traceback goes on
        own, in_log = _own_part(line)
        kept.append(own)
    return "\n".join(kept).strip()


def pushback(text: str) -> str | None:
    """Which pushback pattern a reply after a hand-back shows, or None. Only the person's own
    words are read, not the code or log they pasted."""
    text = prose(scan_text(text))
    if not text or _NOT_PUSHBACK.match(text):
        return None
    ending = _ENDS_APPROVING.search(text)
    if ending and not _THE_REST.search(text[:ending.start()]):
        return None  # approval of the work, not of the rest of it
    if _ONLY_ASKING.search(text):
        text = " ".join(s for s in SENTENCE_END.split(text) if not s.rstrip().endswith("?"))
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
    first = next((s for s in SENTENCE_END.split(text) if s.strip()), "")
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
    words = prose(scan_text(text))
    if not words or _RESUME.match(words) or _HOLD.match(words) or _is_question(words):
        return None
    if pushback(words) is not None or _REDIRECT.search(words) is not None:
        return REDIRECT
    return INSTRUCTION


# The call that leaves plan mode: the person answers it by approving the plan or not.
_PLAN_EXITS = frozenset(("exitplanmode", "exit_plan_mode"))


def _plan_approved_before(turns: list[Turn], index: int) -> bool:
    """Whether the agent's last act before the interrupt at `index` was leaving plan mode with
    the person's approval (the call came back, neither refused nor failed). Claude Code stops
    the turn when the person approves and starts afresh, so the words that follow give the go
    to the plan's task ("create the beads"): they correct nothing the agent did."""
    for t in reversed(turns[:index]):
        if t.role == "user":
            if t.text:
                return False  # the person spoke after the agent's last act
            continue  # another interrupt
        if not t.tool_calls:
            return False  # the agent's last act was a reply, not the plan's exit
        last = t.tool_calls[-1]
        return (last.name.lower() in _PLAN_EXITS and last.result is not None
                and not last.is_error and not last.rejected)
    return False


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
    refusal_answered: set[int] = set()  # messages that gave a refusal its words
    after_refusal: set[int] = set()  # messages after a wordless refusal: read as after an interrupt
    # Refused calls: one correction per assistant turn (parallel calls are refused together).
    for i, turn in enumerate(turns):
        refused = [c for c in turn.tool_calls if c.rejected]
        if not refused:
            continue
        first = refused[0]
        # A reason typed into the permission prompt is said about the refused call itself.
        words = next((rejection_reason(c.result or "") for c in refused if rejection_reason(c.result or "")), "")
        follow = _next_instruction(turns, i)
        if follow and not words:
            # The message after a refusal is read as after an interrupt: only pushback or a
            # redirect says why the call was refused. "continue" or a question says nothing
            # about it, and a plain instruction may only be the next task: the refusal stays
            # wordless (it waits for a second one) and the message goes the interrupt's way.
            if after_interrupt(follow[1].text) == REDIRECT:
                words = scan_text(follow[1].text)
                refusal_answered.add(follow[0])
            else:
                after_refusal.add(follow[0])
        what = describe_call(first)
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
        said = scan_text(turn.text)  # a 60 MB paste: its ends, for the patterns and the finding
        prev = turns[i - 1] if i else None
        unconfirmed = False
        interrupted = prev is not None and prev.role == "user" and prev.interrupt
        if interrupted or i in after_refusal:
            read = after_interrupt(said)
            if read is None:
                continue  # resumed, held, or asked: nothing the agent did was corrected
            if read == INSTRUCTION and interrupted and _plan_approved_before(turns, i - 1):
                continue  # the person approved the plan, then gave the go: the next task
            how = "interrupt"
            # A plain instruction: kept, tagged `unconfirmed`; the sleep learns from it only
            # when a correction like it comes again (lessons_pass.py).
            unconfirmed = read == INSTRUCTION
        else:
            handback = _handback_before(turns, i)
            if handback is None:
                continue
            how = pushback(said)
            if how is None:
                continue
            if _BARE_DECLINE.match(said.strip()) and offer_in(handback.text):
                continue  # "no thanks" to an offer is a declined offer, not a correction
        asked = _previous_ask(turns, i)
        detail = (f"Asked: {shorten(asked, 300)}\n" if asked else "") + \
                 _agent_since(turns, i) + f"The person said: {said}"
        if unconfirmed:
            detail += ("\nUnconfirmed: an interrupt, then a plain instruction (a redirect or a new "
                       "task); learned only if a correction like it comes again.")
        found.append(Finding(
            kind="correction", title=shorten(said, 120), text=said, detail=detail,
            at=turn.at, turn=i, tags=["interrupt", "unconfirmed"] if unconfirmed else [f"pushback:{how}"],
            extra={"how": how, "action": action_kind(said)} | ({"unconfirmed": True} if unconfirmed else {}),
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


def _agent_since(turns: list[Turn], index: int) -> str:
    """What the agent said (its last words) since the person's previous message, as a line of
    a correction's detail; when it only made tool calls, what it did; else nothing. Words
    from before that message answered something else: they are never quoted here."""
    said = ""
    calls: list[Any] = []  # newest first
    for t in reversed(turns[:index]):
        if t.role == "user":
            if t.text:
                break  # the person's previous message: what came before answered it
            continue  # an interrupt: the agent's turn goes on behind it
        if t.text and not said:
            said = t.text
        calls.extend(reversed(t.tool_calls))
    if said:
        return f"The agent said: {quote(said, 300)}\n"
    if calls:
        last = f" ({len(calls)}; the last 3)" if len(calls) > 3 else ""
        return f"The agent only made tool calls{last}: {'; '.join(describe_call(c) for c in reversed(calls[:3]))}\n"
    return ""


def _previous_ask(turns: list[Turn], index: int) -> str:
    for t in reversed(turns[:index]):
        if t.role == "user" and t.text:
            return t.text
    return ""


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
    offers = list(_OFFER.finditer(tail))
    if not offers:
        return None
    last_offer = offers[-1]
    breaks = list(_SENTENCE_BREAK.finditer(tail, 0, last_offer.start()))
    start = breaks[-1].end() if breaks else 0  # the offer's sentence starts after the last break
    return tail[start:last_offer.end()].strip()


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
            "turn": i, "at": turn.at, "offer": quote(sentence, 200),
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

