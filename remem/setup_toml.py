"""Codex's config.toml for `remem setup`, edited so every comment and the person's
formatting survive. New tables are appended as text at the end of the file (tomlkit writes
their values, and the result is parsed back to check it); values already there are changed
in place with tomlkit. Lives outside the engine (the engine never imports tomlkit):
`remem.engine.setup.plan(toml_editor=TomlkitEditor())` calls it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any


def _parse(text: str) -> Any:
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise ValueError(f"is not valid TOML ({exc}); fix it by hand, then run `remem setup` again") from None


def _append(text: str, block: str) -> str:
    """The block at the end, after a blank line, in the file's own line ends (CRLF stays CRLF)."""
    nl = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += nl
    return text + (nl if text.strip() else "") + block.replace("\r\n", "\n").replace("\n", nl)


_LONE_LF = re.compile(r"(?<!\r)\n")


def _as_string(doc: Any, like: str) -> str:
    """The edited document as text, in the line ends of the file it came from (tomlkit writes
    a new key with LF, also into a CRLF file)."""
    out = doc.as_string()
    if "\r\n" in like and not _LONE_LF.search(like):
        out = _LONE_LF.sub("\r\n", out)
    return out


_PART = r"""[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*'"""  # a bare key, or a quoted one
_HEADER = re.compile(rf"""\s*\[\[?\s*((?:{_PART})(?:\s*\.\s*(?:{_PART}))*)\s*\]\]?\s*(?:#.*)?""")


def _unquote(part: str) -> str:
    if part.startswith("'"):
        return part[1:-1]
    if part.startswith('"'):
        try:
            return json.loads(part)  # TOML's basic-string escapes, but for \U and \e
        except ValueError:
            return part[1:-1]
    return part


def _header(line: str) -> tuple[str, ...] | None:
    """A table header line's key, each part unquoted (`[mcp_servers."remem"]` is
    ("mcp_servers", "remem")), or None for any other line."""
    m = _HEADER.fullmatch(line.rstrip("\r\n"))
    return tuple(_unquote(p) for p in re.findall(_PART, m.group(1))) if m else None


def _is_note(line: str) -> bool:
    """A blank line or a comment: no part of a value."""
    return not line.strip() or line.lstrip().startswith("#")


def _cut_table(text: str, key: tuple[str, ...]) -> str:
    """Remove a table (its header line, its keys and its sub-tables) and the blank line before
    it. The comments and blank lines after its last key stay: remem writes no comment, so they
    are the person's (a note at the end of the file, or a block about the next table)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if _header(line) != key:
            continue
        j = i + 1
        while j < len(lines) and ((head := _header(lines[j])) is None
                                  or len(head) > len(key) and head[:len(key)] == key):
            j += 1
        while j > i + 1 and _is_note(lines[j - 1]):
            j -= 1
        start = i - 1 if i > 0 and not lines[i - 1].strip() else i
        return "".join(lines[:start] + lines[j:])
    return text


def _comments(text: str) -> Counter[str]:
    """Every comment in a TOML text (a line of its own, or after a value), as written: `#`
    outside a string, to the end of its line."""
    found: list[str] = []
    i, n = 0, len(text)
    while i < n:
        quote = next((q for q in ('"""', "'''", '"', "'") if text.startswith(q, i)), None)
        if quote is not None:
            i = _string_end(text, i, quote)
        elif text[i] == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            found.append(text[i:end].rstrip("\r"))
            i = end
        else:
            i += 1
    return Counter(found)


def _string_end(text: str, i: int, quote: str) -> int:
    """Just past the string that starts with `quote` at i (a multi-line one may end with up to
    two quote marks of its own before its closing three)."""
    j = i + len(quote)
    while j < len(text):
        if quote[0] == '"' and text[j] == "\\":
            j += 2
        elif text.startswith(quote, j):
            j += len(quote)
            extra = 0
            while len(quote) == 3 and extra < 2 and text.startswith(quote[0], j):
                j, extra = j + 1, extra + 1
            return j
        elif len(quote) == 1 and text[j] == "\n":  # an unclosed one-line string ends with its line
            return j
        else:
            j += 1
    return j


def _keeps_comments(text: str, out: str) -> bool:
    """Whether every comment of text is still in out."""
    return not (_comments(text) - _comments(out))


def _without(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The parsed document without data[keys[0]][keys[1]]…, a table emptied by that dropped too."""
    import copy

    out = copy.deepcopy(data)
    node, parents = out, []
    for k in keys[:-1]:
        if not isinstance(node.get(k), dict):
            return out
        parents.append((node, k))
        node = node[k]
    node.pop(keys[-1], None)
    for parent, k in reversed(parents):
        if parent[k] == {}:
            del parent[k]
    return out


def _same(text: str, wanted: dict[str, Any]) -> bool:
    """Whether text is TOML that reads as exactly `wanted` (an emptied table counts as gone)."""
    import tomllib

    try:
        got = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return {k: v for k, v in got.items() if v != {}} == {k: v for k, v in wanted.items() if v != {}}


_OURS = {"hooks": True}  # the [features] table setup appends
_LEGACY = {"codex_hooks": True}  # the one earlier releases appended


class TomlkitEditor:
    def has_server(self, text: str, name: str) -> bool:
        return name in (_parse(text).get("mcp_servers") or {})

    def add_server(self, text: str, name: str, server: dict[str, Any]) -> str:
        import tomlkit
        from tomlkit.items import InlineTable

        doc = _parse(text)
        servers = doc.get("mcp_servers")
        if isinstance(servers, InlineTable) and name not in servers:
            # `[mcp_servers.remem]` appended after it would define the table twice.
            raise ValueError("mcp_servers is an inline table; write it as [mcp_servers.NAME] tables, "
                             "then run `remem setup` again")
        current = servers.get(name) if servers is not None else None
        if current is not None:
            if current.unwrap() == server:
                return text
            for key, value in server.items():
                current[key] = value
            return _as_string(doc, text)
        block = tomlkit.dumps({"mcp_servers": {name: server}})
        out = _append(text, block)
        if _parse(out).get("mcp_servers", {}).get(name) is None:  # pragma: no cover - defensive
            raise ValueError("could not add the server table")
        return out

    def remove_server(self, text: str, name: str) -> str:
        import tomllib

        doc = _parse(text)
        servers = doc.get("mcp_servers")
        if servers is None or name not in servers:
            return text
        key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f'"{name}"'
        # Cut as text, so every comment stays; kept only when it reads as the file without the
        # server and nothing else changed (a header the cut misjudged moves keys between tables).
        wanted = _without(tomllib.loads(text), "mcp_servers", name)
        out = _cut_table(text, ("mcp_servers", name))
        if out != text and _same(out, wanted):
            return out
        # Through tomlkit (a server written as dotted keys, say), which may drop a comment
        # beside the table: then the person takes it out, as only they know where it ends.
        del servers[name]
        out = _as_string(doc, text)
        if not _same(out, wanted):  # pragma: no cover - defensive
            raise ValueError(f"cannot take [mcp_servers.{key}] out as TOML; take it out by hand")
        if not _keeps_comments(text, out):
            raise ValueError(f"cannot take [mcp_servers.{key}] out without losing a comment beside it; "
                             "delete that table by hand, then run `remem setup --remove` again")
        return out

    def enable_hooks(self, text: str, legacy_ours: bool = True) -> str:
        """Codex runs hooks.json with features.hooks (on by default in current releases; the
        flag was `codex_hooks` before, now deprecated). A value the person set stays; the
        table an earlier remem wrote (`codex_hooks = true` alone) becomes `hooks = true` when
        `legacy_ours` (setup.json says an earlier setup wrote it); otherwise it is the
        person's, and stays as it is."""
        doc = _parse(text)
        features = doc.get("features")
        if legacy_ours and features is not None and features.unwrap() == _LEGACY:
            cut = _cut_features(text)
            if cut == text:  # written as a dotted key or inline table: left as the person has it
                return text
            text, doc, features = cut, _parse(cut), None
        if features is not None and ("hooks" in features or "codex_hooks" in features):
            return text
        if features is None:
            return _append(text, "[features]\nhooks = true\n")
        features["hooks"] = True
        return _as_string(doc, text)

    def disable_hooks(self, text: str, added: str | None = "table") -> str:
        """Take out only what setup added (the manifest says which): "table", the [features]
        table it appended (cut whole while it holds nothing else, else just its `hooks`);
        "key", the `hooks = true` it put in the person's own table; "legacy" (a manifest from
        before the record), the table only while it holds nothing else; None or "none", nothing."""
        if not added or added == "none":
            return text
        doc = _parse(text)
        features = doc.get("features")
        if features is None:
            return text
        if added in ("table", "legacy") and features.unwrap() in (_OURS, _LEGACY):
            cut = _cut_features(text)
            if cut != text:
                return cut
            if added == "table":  # not as text (a dotted key, say): through tomlkit, checked
                import tomllib

                wanted = _without(tomllib.loads(text), "features")
                del doc["features"]
                out = _as_string(doc, text)
                return out if _same(out, wanted) and _keeps_comments(text, out) else text
        if added == "legacy":
            return text
        if features.get("hooks") is True:
            del features["hooks"]
            return _as_string(doc, text)
        return text


def _cut_features(text: str) -> str:
    """The text without a [features] table that holds only what remem writes there; the text
    as it was when the cut would change anything else."""
    import tomllib

    out = _cut_table(text, ("features",))
    return out if out != text and _same(out, _without(tomllib.loads(text), "features")) else text
