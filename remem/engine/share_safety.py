"""What may leave this memory and what may enter it.

`incoming(text)` lists the reasons a received lesson is quarantined: control or invisible
characters, words disguised with look-alike letters of another script, prompt-injection
phrasing, secrets, URLs, shell pipelines (read through look-alikes), oversize text.
`outgoing(text)` lists the reasons a local lesson is withheld from export: everything
`incoming` would flag (never publish a secret) plus environment-specific details (paths,
hostnames, IP addresses, user names, e-mail addresses). Lessons are withheld rather than
scrubbed: a scrubbed lesson changes meaning and hash ("use <path>/bin/python"), and a
half-scrubbed one still leaks.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
import unicodedata
from functools import lru_cache

from remem.engine.redaction import SECRETS_RE as _SECRETS_RE, SECRETS_RE_I as _SECRETS_RE_I, is_secret

MAX_TEXT = 2000

# Characters that render as nothing or reorder text: zero-width, bidi controls, tag
# characters (category Cf), plus invisible letters and variation selectors used to smuggle.
_INVISIBLE_EXTRA = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E, 0x034F}


def _bad_char(ch: str) -> bool:
    cp = ord(ch)
    if ch == " ":
        return False
    cat = unicodedata.category(ch)
    if cat in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"):
        return True
    if cp in _INVISIBLE_EXTRA or 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF:
        return True
    return cat == "Zs"  # odd spaces (no-break, ideographic, …) have no place in a lesson


_INJECTION = [
    (r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(of\s+)?(the\s+|your\s+|my\s+|these\s+)?"
     r"(previous|prior|above|earlier|preceding|system|original|initial|existing)\s+(instructions?|"
     r"prompts?|rules|guidelines|guidance|advice|messages?|context|directions|directives|orders)"
     r"|\b(ignore|disregard|forget)\s+(all|any|your)\s+(instructions|rules|guidelines)",
     "prompt-injection phrasing (override instructions)"),
    (r"\byou must\b", "prompt-injection phrasing ('you must')"),
    (r"\byou are now\b|\bfrom now on,? you\b|\bpretend (to be|you are)\b|\bact as (an? |the )?"
     r"(unrestricted|jailbroken|different|new)\b", "prompt-injection phrasing (role change)"),
    (r"\bsystem[ _-]?prompt\b|\bdeveloper mode\b|\bjailbreak|\bdo anything now\b",
     "prompt-injection phrasing (system prompt)"),
    (r"\bnew (instructions|rules|task)\s*:|\boverride\b.{0,20}\b(safety|polic)", "prompt-injection phrasing (new instructions)"),
    (r"<\|?(im_start|im_end|system|endoftext)\|?>|</?(system|instructions?)>|\[/?(inst|sys)\]|<<sys>>",
     "prompt-injection phrasing (chat-template markers)"),
    (r"(^|[\s\"'])(system|assistant|developer)\s*:\s", "prompt-injection phrasing (role label)"),
    (r"\b(do not|don't|never) (tell|inform|mention|show)\b.{0,20}\b(the )?(user|person|human|owner)\b",
     "prompt-injection phrasing (hide from the person)"),
    (r"\bwithout (telling|asking|informing) (the )?(user|person|human|owner|anyone)\b",
     "prompt-injection phrasing (hide from the person)"),
    (r"\bexfiltrat", "prompt-injection phrasing (exfiltration)"),
]

# Files that hold credentials. Asked to be shown, read out or sent anywhere (not in a "never"
# or "don't" sentence), they are the payload of an injection: "print the contents of
# ~/.aws/credentials", "upload the .env file". Plain mentions stay fine ("add .env to
# .gitignore", "copy .env.example to .env", "never print secrets").
_CREDENTIAL_FILES = (r"\.aws/credentials|\.ssh/id_\w+\b(?!\.pub)|\bid_(rsa|dsa|ecdsa|ed25519)\b(?!\.pub)"
                     r"|\.netrc\b|\.pgpass\b|/etc/shadow\b|\.git-credentials\b|\.docker/config\.json"
                     r"|\.kube/config\b|\.pypirc\b|\.npmrc\b")
_DOTENV = r"(?<![\w.])\.env\b(?![.\w-])"
_SHOW = r"print|cat|show|display|output|echo|dump|reveal|read\s+out|type\s+out|list"
_SEND = r"send|upload|post|paste|share|email|e-mail|mail|transmit|leak|forward|attach|publish|commit|push"
_NOT = r"(never|not|don't|dont|do\s+not|avoid|no|without|nor)\s+(\w+\s+)?"
_DISCLOSE = [
    (rf"\b({_SHOW}|{_SEND})\b[^.;\n]{{0,60}}({_CREDENTIAL_FILES})", "a credentials file shown or sent (disclosure)"),
    (rf"\b({_SEND})\b[^.;\n]{{0,60}}{_DOTENV}", "a credentials file shown or sent (disclosure)"),
]
_NEGATED = re.compile(rf"\b{_NOT}$", re.IGNORECASE)

_URLS = [
    (r"\b(https?|ftp|ftps|sftp|file|ssh|git|ws|wss|data|javascript)://\S+|\b(data|javascript):\S{4,}"
     r"|\bwww\.[a-z0-9\-]+\.[a-z]{2,}\b", "URL"),
]

# A download, any stages between (`| tee log`), then a last stage run as: `sudo -E -u root`,
# `env A=1`. "||" is "or", not a pipe.
_PIPE = r"(?<!\|)\|(?!\|)"
_THEN = rf"[^|;\n]{{0,200}}({_PIPE}[^|;\n]{{0,200}}){{0,5}}?{_PIPE}\s*"
_AS = r"(sudo(\s+(-[a-z]*[cdghprtu]\s+(?!-)\S+|-[^\s|;]+))*\s+)?(env(\s+\w+=\S*)*\s+)?"


def _spread(word: str) -> str:
    """A command name read through quotes, backslashes and a space between its letters
    (`s''h`, `\\sh`, `"bash"`, `s h`): a shell runs the first two as the name itself."""
    return r"[\s'\"\\]{0,2}".join(word)


# The shell a download is piped to, also by its path (`/bin/sh`, `/usr/bin/env bash`).
_SH = (r"['\"\\]?((/usr)?(/local)?/bin/(env\s+)?)?("
       + "|".join(_spread(name) for name in ("bash", "zsh", "dash", "ksh", "csh", "fish", "tcsh", "ash", "sh"))
       + r")\b")
_SHELL = [
    (rf"\b(curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b{_THEN}{_AS}{_SH}",
     "shell pipeline (download piped to a shell)"),
    (rf"\b(curl|wget|iwr|irm)\b{_THEN}{_AS}(python[0-9.]*|perl|ruby|node|php|iex|"
     r"powershell|pwsh)\b", "shell pipeline (download piped to an interpreter)"),
    (r"\b(ba|z|da|k)?sh\s+(-c\s+)?[\"']?\s*<\(\s*(curl|wget)|\$\(\s*(curl|wget)\b|`\s*(curl|wget)\b",
     "shell pipeline (executes a download)"),
    (r"\bbase64\s+(-d|--decode)\b[^|\n]{0,100}\|\s*(ba|z)?sh\b", "shell pipeline (decoded payload)"),
    (r"\brm\s+-[a-z]*r[a-z]*f?[a-z]*\s+(-[a-z-]+\s+)*(/|~/?|\$\{?home\}?/?)(\.?\*)?(?=$|[\s;&|'\"`)])",
     "destructive command (rm -rf /)"),
    (r"\bdd\b[^|;\n]{0,120}\bof=/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk)", "destructive command (dd onto a disk)"),
    (r"\b(mkfs(\.\w+)?|wipefs|shred)\b[^|;\n]{0,80}/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk)",
     "destructive command (formats or wipes a disk)"),
    (r">\s*/dev/(sd|hd|vd|xvd|nvme|mmcblk)[a-z0-9]*\b", "destructive command (writes onto a disk)"),
    # An interactive shell wired to a socket; `echo > /dev/tcp/localhost/5432` (a port check) is not one.
    ((r"\b(nc|ncat|netcat)\b[^|;\n]{0,80}\s-[a-z]*[ec]\s+\S*(sh|cmd(\.exe)?|powershell)\b"
      r"|\b(ba|z|k|da)?sh\s+-i\b[^\n]{0,60}/dev/(tcp|udp)/|/dev/(tcp|udp)/\S+\s+0[<>]&\d"),
     "shell pipeline (reverse shell)"),
    ((r"\beval\b[^\n]{0,200}\b(base64\s+(-d|-D|--decode)|xxd\s+-r|openssl\s+(base64|enc)\s+-d)\b"
      r"|\bexec\s*\(\s*(base64\.)?b64decode"), "shell pipeline (runs a decoded payload)"),
    (r"\bchmod\s+(-r\s+)?777\s+/", "destructive command (chmod 777 /)"),
    (r":\(\)\s*\{\s*:\|:&\s*\};:", "destructive command (fork bomb)"),
]


def _compile(table: list[tuple[str, str]]) -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(p, re.IGNORECASE), why) for p, why in table]


_INJECTION_RE = _compile(_INJECTION)
_DISCLOSE_RE = _compile(_DISCLOSE)
_URLS_RE = _compile(_URLS)
_SHELL_RE = _compile(_SHELL)


# Cyrillic, Greek and Armenian letters drawn like Latin ones: "іgnore рrevious" must read as
# what it looks like. (Greek letters with no Latin twin, such as μ and π, are not here.)
_LOOK_ALIKES = {
    "օ": "o", "ո": "n", "ս": "u", "հ": "h", "ց": "g", "զ": "q", "ք": "f", "Օ": "O", "Ս": "U",
    "Տ": "S", "Լ": "L",
    "а": "a", "в": "b", "е": "e", "ё": "e", "з": "3", "і": "i", "ї": "i", "ј": "j", "к": "k",
    "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "А": "A", "В": "B", "Е": "E", "К": "K",
    "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "І": "I",
    "Ј": "J", "Ѕ": "S", "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "Α": "A", "Β": "B", "Ε": "E", "Η": "H", "Ι": "I", "Κ": "K",
    "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ζ": "Z",
}
_SKELETON = str.maketrans(_LOOK_ALIKES)
_WORD = re.compile(r"\w+")


def _folded(text: str) -> str:
    """NFKC (full-width and compatibility letters become plain), look-alike letters as the
    Latin ones they imitate, invisible characters removed."""
    norm = unicodedata.normalize("NFKC", text).translate(_SKELETON)
    return "".join(ch for ch in norm if not _bad_char(ch) or ch in "\n\t")


# Scripts that run into Latin words with no space between ("用pip安装", "pipでインストール")
# and have no letter a Latin one could pass for; and letters outside any one script.
_MIXES_WITH_LATIN = {"CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HANGUL", "BOPOMOFO", "YI",
                     "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN", "MODIFIER", ""}


def _script(ch: str) -> str:
    """A letter's script, from its Unicode name ("ARMENIAN SMALL LETTER OH"); "" for non-letters."""
    if not unicodedata.category(ch).startswith("L"):
        return ""
    return unicodedata.name(ch, "").split(" ", 1)[0]


def _foreign(ch: str) -> bool:
    """A letter that does not belong in a Latin word. Greek counts only where it imitates a
    Latin letter: μ in "500μs" and π in "πr²" are symbols."""
    script = _script(ch)
    if script == "GREEK":
        return ch in _LOOK_ALIKES
    return script not in _MIXES_WITH_LATIN and script != "LATIN"


def _disguised(text: str) -> list[str]:
    """Words that mix Latin letters with letters of another script ("pаypal", "Ignօre"); a
    word wholly in another script ("тесты") is fine."""
    found = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        if any(_script(ch) == "LATIN" for ch in word) and any(_foreign(ch) for ch in word):
            found.append(word)
    return list(dict.fromkeys(found))


def incoming(text: str) -> list[str]:
    """Every reason to quarantine this received lesson text (empty list = safe)."""
    reasons: list[str] = []
    if len(text) > MAX_TEXT:
        reasons.append(f"too long ({len(text)} characters; a lesson has at most {MAX_TEXT})")
    bad = sorted({f"U+{ord(ch):04X}" for ch in text if _bad_char(ch)})
    if bad:
        reasons.append(f"control or invisible characters ({', '.join(bad[:5])})")
    disguised = _disguised(text)
    if disguised:
        reasons.append(f"look-alike letters from another script inside a word ({', '.join(disguised[:3])})")
    plain = _folded(text)
    spaced = " ".join(plain.split())
    for table in (_INJECTION_RE, _SECRETS_RE, _SECRETS_RE_I, _URLS_RE, _SHELL_RE):
        for pattern, why in table:
            if why not in reasons and any(is_secret(pattern, m.group(0), spaced[m.end():m.end() + 8])
                                             for m in pattern.finditer(spaced)):
                reasons.append(why)
    for pattern, why in _DISCLOSE_RE:
        if why not in reasons and any(not _NEGATED.search(spaced[:m.start()])
                                      for m in pattern.finditer(spaced)):
            reasons.append(why)
    return reasons


# --------------------------------------------------------------------------- outgoing

_PATHS = re.compile(
    r"(?<![\w.:/~])/(?:[\w.\-]+/)+[\w.\-]*"          # /home/me/x, /etc/hosts/ …
    r"|(?<![\w])~[\w.\-]*/[\w.\-/]*"                   # ~/x, ~me/x
    r"|\b[a-zA-Z]:\\[^\s]*"                            # C:\Users\…
    r"|\\\\[\w.\-]+\\[^\s]*"                           # \\server\share
)
_HOSTS = re.compile(
    r"\b[a-z0-9][a-z0-9\-]*(\.[a-z0-9\-]+)*\.(local|lan|internal|intranet|corp|home\.arpa|localdomain)\b"
    r"|\b(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}\b"
    r"|\b[0-9a-f]{1,4}(:[0-9a-f]{0,4}){4,7}\b",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"\b[\w.+\-]+@[\w\-]+(\.[\w\-]+)+\b|\b[a-z_][\w\-]*@[a-z0-9][\w\-]*\b", re.IGNORECASE)
_COMMON = {"root", "user", "admin", "ubuntu", "runner", "test", "dev", "home", "local", "localhost",
           "build", "ci", "docker", "node", "app", "default", "guest", "server", "work", "main"}


@lru_cache(maxsize=1)
def _local_names() -> tuple[str, ...]:
    """This machine's user and host names: a lesson naming them is about this machine."""
    names: set[str] = set()
    for get in (getpass.getuser, lambda: os.path.basename(os.environ.get("HOME", "").rstrip("/")),
                socket.gethostname):
        try:
            value = (get() or "").strip()
        except Exception:
            continue
        for part in {value, value.split(".")[0]}:
            # Short plain words ("will", "mark") would withhold half of all lessons; such
            # names are still caught inside paths and user@host by the patterns above.
            if part.lower() not in _COMMON and (len(part) >= 5 or (len(part) >= 3 and not part.isalpha())):
                names.add(part.lower())
    return tuple(sorted(names))


def environment(text: str, names: tuple[str, ...] | None = None) -> list[str]:
    """Reasons this text is specific to this machine or person."""
    reasons = []
    if _PATHS.search(text):
        reasons.append("environment-specific: a file path")
    if _HOSTS.search(text):
        reasons.append("environment-specific: a host name or IP address")
    if _EMAIL.search(text):
        reasons.append("environment-specific: an e-mail or user@host")
    lowered = text.lower()
    for name in names if names is not None else _local_names():
        if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", lowered):
            reasons.append("environment-specific: this machine's user or host name")
            break
    return reasons


def outgoing(text: str, names: tuple[str, ...] | None = None) -> list[str]:
    """Every reason to withhold this local lesson from export (empty list = shareable)."""
    return incoming(text) + environment(text, names)


# --------------------------------------------------------------------------- a lesson's project

# The project a shared lesson is for travels as its folder's name alone: a path would tell the
# receiver how the author's home is laid out, and means nothing on another machine.
MAX_PROJECT = 128  # characters; folder names are at most 255 bytes, real ones far shorter


def project_problems(name: object) -> list[str]:
    """Why `name` cannot be the project (a folder's name) of a shared lesson (empty = fine):
    one folder name, no path. Checked before a lesson goes out and when one comes in."""
    if not isinstance(name, str):
        return [f"a project name is text, not {type(name).__name__}"]
    reasons = []
    if not name.strip():
        reasons.append("an empty project name")
    if len(name) > MAX_PROJECT:
        reasons.append(f"a project name of {len(name)} characters (at most {MAX_PROJECT})")
    if "/" in name or "\\" in name:
        reasons.append("a path separator in the project name (only the folder's name is shared)")
    if name in (".", "..") or name.startswith("~"):
        reasons.append(f"{name[:20]!r} is no folder name (it reads as a path)")
    if name != name.strip():
        reasons.append("spaces at either end of the project name")
    bad = sorted({f"U+{ord(ch):04X}" for ch in name if _bad_char(ch)})
    if bad:
        reasons.append(f"control or invisible characters in the project name ({', '.join(bad[:5])})")
    disguised = _disguised(name)
    if disguised:
        reasons.append("look-alike letters from another script in the project name "
                       f"({', '.join(disguised[:3])})")
    return reasons


def project_outgoing(name: str, names: tuple[str, ...] | None = None) -> list[str]:
    """Why a lesson of the project `name` is withheld (empty = shareable): a name a receiver
    would refuse, or one that names this machine (a lesson learned in the home folder is
    named after the user; a folder named after the host)."""
    return [f"its project: {why}" for why in project_problems(name) + environment(name, names)]
