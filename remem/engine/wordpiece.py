"""A pure-Python BERT WordPiece tokenizer, for the hook path.

Loading `tokenizer.json` through `tokenizers` costs 25-80 ms on these machines, most of a
hook's budget; the vocabulary alone, kept as one token per line in the cache folder, loads
in a few. This reproduces exactly what `tokenizers` does for the configuration the bundled
model uses (BertNormalizer + BertPreTokenizer + WordPiece; tests compare the two on many
texts) and declines (`load` returns None) any other configuration, which then goes through
`tokenizers` as before.
"""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path
from typing import Any

CACHE_VERSION = 2  # 2: the header counts the tokens and characters of the body
_CHINESE = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)
# Unicode White_Space (what Rust's char::is_whitespace tests).
_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_OTHER = frozenset(("Cc", "Cf", "Co", "Cs"))


def _categories_settled(text: str) -> bool:
    """False when the text holds a character whose category Unicode changed in a way the
    tokenizer would see (punctuation, control and format characters, combining marks).
    `tokenizers` classifies with older Unicode tables than this Python (U+061D, U+2E4F,
    U+166D …); a character whose category is the same in Unicode 3.2 and now is read the
    same by both, so only the changed ones send a text to `tokenizers`."""
    if text.isascii():
        return True
    old = unicodedata.ucd_3_2_0.category
    for ch in set(text):
        now = unicodedata.category(ch)
        then = old(ch)
        if now != then and (_sensitive(now) or _sensitive(then)):
            return False
    return True


def _sensitive(category: str) -> bool:
    return category[0] == "P" or category in _OTHER or category == "Mn"


def _log(message: str) -> None:
    try:
        from remem.log import log

        log("embed", message)
    except Exception:
        pass


def _is_chinese(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CHINESE)


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class WordPiece:
    def __init__(self, tokens: list[str], meta: dict[str, Any]) -> None:
        self.vocab = dict(zip(tokens, range(len(tokens))))
        self.unk = meta["unk"]
        self.unk_id = self.vocab.get(self.unk)
        self.prefix = meta["prefix"]
        self.max_chars = int(meta["max_chars"])
        self.lowercase = bool(meta["lowercase"])
        self.strip_accents = bool(meta["strip_accents"])
        self.chinese = bool(meta["chinese"])
        self.clean = bool(meta["clean"])
        self.added = {k: int(v) for k, v in meta["added"].items()}

    # -- loading -------------------------------------------------------------------------
    @classmethod
    def load(cls, tokenizer_json: Path, cache_dir: Path | None = None) -> "WordPiece | None":
        """From the cache when it is current and whole, else from tokenizer.json (and cache
        it again). A cache whose body is not the vocabulary its header counts (a truncated
        file, a full disk) is never used: every token past the cut would become unknown."""
        st = tokenizer_json.stat()
        key = f"wordpiece-v{CACHE_VERSION}-{st.st_size}-{st.st_mtime_ns}.txt"
        cached = cache_dir / key if cache_dir else None
        if cached is not None:
            try:
                head, _, body = cached.read_text(encoding="utf-8").partition("\n")
                meta = json.loads(head)
                if meta.get("source") == str(tokenizer_json):
                    if not meta.get("supported"):
                        return None
                    tokens = body.split("\n")
                    if len(body) == meta.get("chars") and len(tokens) == meta.get("count"):
                        return cls(tokens, meta)
                    _log(f"the tokenizer cache {cached} is incomplete ({len(tokens)} of "
                         f"{meta.get('count')} tokens); rebuilt it from {tokenizer_json}")
            except (OSError, ValueError):
                pass
        data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
        meta, tokens = cls._meta(data)
        meta["source"] = str(tokenizer_json)
        body = "\n".join(tokens)
        meta["count"], meta["chars"] = len(tokens), len(body)
        if cached is not None:
            tmp = cached.with_name(f".{cached.name}.{os.getpid()}")
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_text(json.dumps(meta) + "\n" + body, encoding="utf-8")
                os.replace(tmp, cached)
            except OSError:
                try:
                    tmp.unlink()
                except OSError:
                    pass
        return cls(tokens, meta) if meta["supported"] else None

    @staticmethod
    def _meta(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        norm = data.get("normalizer") or {}
        model = data.get("model") or {}
        vocab = model.get("vocab") or {}
        tokens = sorted(vocab, key=vocab.get)
        supported = (
            norm.get("type") == "BertNormalizer"
            and (data.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
            and model.get("type") == "WordPiece"
            and not data.get("post_processor")
            and [vocab[t] for t in tokens] == list(range(len(tokens)))
            and not any("\n" in t for t in tokens)
            and all(a.get("special") and not a.get("normalized") for a in data.get("added_tokens") or [])
        )
        lowercase = bool(norm.get("lowercase", True))
        strip = norm.get("strip_accents")
        meta = {
            "supported": bool(supported),
            "unk": model.get("unk_token", "[UNK]"),
            "prefix": model.get("continuing_subword_prefix", "##"),
            "max_chars": model.get("max_input_chars_per_word", 100),
            "lowercase": lowercase,
            "strip_accents": lowercase if strip is None else bool(strip),
            "chinese": bool(norm.get("handle_chinese_chars", True)),
            "clean": bool(norm.get("clean_text", True)),
            "added": {a["content"]: a["id"] for a in data.get("added_tokens") or []},
        }
        return meta, tokens

    # -- encoding ------------------------------------------------------------------------
    def _normalise(self, text: str) -> str:
        if self.clean:
            out = []
            for ch in text:
                cp = ord(ch)
                if cp == 0 or cp == 0xFFFD:
                    continue
                # As tokenizers: control characters go first (\t \n \r excepted; unassigned
                # code points are kept), then whitespace becomes a space.
                if ch not in "\t\n\r" and unicodedata.category(ch) in _OTHER:
                    continue
                out.append(" " if ch in _WHITESPACE else ch)
            text = "".join(out)
        if self.chinese and any(ord(c) >= 0x3400 for c in text):
            text = "".join(f" {c} " if _is_chinese(ord(c)) else c for c in text)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        if self.lowercase:
            # Character by character, as tokenizers does: str.lower() would apply the Greek
            # final-sigma rule (Σ -> ς at a word's end), its only context-dependent mapping.
            text = "".join(c.lower() for c in text) if "Σ" in text else text.lower()
        return text

    def _words(self, text: str) -> list[str]:
        words: list[str] = []
        current: list[str] = []
        for ch in text:
            if ch in _WHITESPACE:
                if current:
                    words.append("".join(current))
                    current = []
            elif _is_punct(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
        return words

    def _pieces(self, word: str, out: list[int]) -> None:
        vocab = self.vocab
        if len(word) > self.max_chars:
            out.append(self.unk_id)
            return
        start, n = 0, len(word)
        found: list[int] = []
        while start < n:
            end = n
            piece_id = None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                piece_id = vocab.get(piece)
                if piece_id is not None:
                    break
                end -= 1
            if piece_id is None:
                out.append(self.unk_id)
                return
            found.append(piece_id)
            start = end
        out.extend(found)

    def _encode_plain(self, text: str, out: list[int]) -> None:
        for word in self._words(self._normalise(text)):
            self._pieces(word, out)

    def agrees(self, text: str) -> bool:
        """Whether encode(text) is sure to give what `tokenizers` gives (see
        _categories_settled); the caller uses `tokenizers` when not."""
        return _categories_settled(text)

    def encode(self, text: str) -> list[int]:
        """Token ids, as tokenizers' encode(text, add_special_tokens=False).ids."""
        out: list[int] = []
        if self.added and "[" in text or any(a in text for a in self.added if not a.startswith("[")):
            # Added (special) tokens are matched in the raw text before normalisation.
            pos = 0
            while pos < len(text):
                hit = min(((text.find(a, pos), a) for a in self.added if text.find(a, pos) >= 0),
                          default=None)
                if hit is None:
                    break
                at, token = hit
                self._encode_plain(text[pos:at], out)
                out.append(self.added[token])
                pos = at + len(token)
            self._encode_plain(text[pos:], out)
            return out
        self._encode_plain(text, out)
        return out
