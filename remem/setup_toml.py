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
        raise ValueError(str(exc)) from None


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


def _cut_table(text: str, header: str) -> str:
    """Remove a table (its header line to the next header or comment) and the blank before it."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == header:
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(("[", "#")):
                j += 1
            start = i - 1 if i > 0 and not lines[i - 1].strip() else i
            return "".join(lines[:start] + lines[j:])
    return text


_OURS = {"hooks": True}  # the [features] table setup appends
_LEGACY = {"codex_hooks": True}  # the one earlier releases appended


class TomlkitEditor:
    def has_server(self, text: str, name: str) -> bool:
        return name in (_parse(text).get("mcp_servers") or {})

    def add_server(self, text: str, name: str, server: dict[str, Any]) -> str:
        import tomlkit

        doc = _parse(text)
        servers = doc.get("mcp_servers")
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
        doc = _parse(text)
        servers = doc.get("mcp_servers")
        if servers is None or name not in servers:
            return text
        key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f'"{name}"'
        out = _cut_table(text, f"[mcp_servers.{key}]")
        try:
            if name not in (_parse(out).get("mcp_servers") or {}):
                return out
        except ValueError:
            pass
        del servers[name]
        return _as_string(doc, text)

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
        if added == "legacy":
            return text
        if features.get("hooks") is True:
            del features["hooks"]
            return _as_string(doc, text)
        return text


def _cut_features(text: str) -> str:
    """The text without a [features] table that holds only what remem writes there."""
    out = _cut_table(text, "[features]")
    return out if "features" not in _parse(out) else text
