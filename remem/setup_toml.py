"""Codex's config.toml for `remem setup`, edited so every comment and the person's
formatting survive. New tables are appended as text at the end of the file (tomlkit writes
their values, and the result is parsed back to check it); values already there are changed
in place with tomlkit. Lives outside the engine (the engine never imports tomlkit):
`remem.engine.setup.plan(toml_editor=TomlkitEditor())` calls it.
"""

from __future__ import annotations

import re
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


_HEADER = re.compile(r"""\s*\[\[?\s*((?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
                     r"""(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*'))*)\s*\]\]?\s*(?:#.*)?""")


def _header(line: str) -> str | None:
    """A table header line's key as written (`mcp_servers.remem`), or None for any other line."""
    m = _HEADER.fullmatch(line.rstrip("\r\n"))
    return re.sub(r"\s*\.\s*", ".", m.group(1)) if m else None


def _cut_table(text: str, key: str) -> str:
    """Remove a table (its header line, the lines after it, and its sub-tables) up to the next
    header, and the blank line before it. A comment block directly above that next header is
    that table's, and stays; so do blank lines ending the cut table."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if _header(line) != key:
            continue
        j = i + 1
        while j < len(lines) and (_header(lines[j]) is None or _header(lines[j]).startswith(key + ".")):
            j += 1
        if j < len(lines):
            while j > i + 1 and lines[j - 1].lstrip().startswith("#"):
                j -= 1
        while j > i + 1 and not lines[j - 1].strip():
            j -= 1
        start = i - 1 if i > 0 and not lines[i - 1].strip() else i
        return "".join(lines[:start] + lines[j:])
    return text


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
        out = _cut_table(text, f"mcp_servers.{key}")
        if out != text and _same(out, wanted):
            return out
        del servers[name]
        out = _as_string(doc, text)
        if not _same(out, wanted):  # pragma: no cover - defensive
            raise ValueError(f"cannot take [mcp_servers.{key}] out as TOML; take it out by hand")
        return out

    def enable_hooks(self, text: str) -> str:
        """Codex runs hooks.json with features.hooks (on by default in current releases; the
        flag was `codex_hooks` before, now deprecated). A value the person set stays; the
        table an earlier remem wrote (`codex_hooks = true` alone) becomes `hooks = true`."""
        doc = _parse(text)
        features = doc.get("features")
        if features is not None and features.unwrap() == _LEGACY:
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
                return out if _same(out, wanted) else text
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

    out = _cut_table(text, "features")
    return out if out != text and _same(out, _without(tomllib.loads(text), "features")) else text
