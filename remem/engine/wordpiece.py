"""A pure-Python BERT WordPiece tokenizer, for the hook path.

Loading `tokenizer.json` through `tokenizers` costs 25-80 ms on these machines, most of a
hook's budget. The cache folder keeps the vocabulary with a hash index of it (`_Index`), so a
hook looks up the few dozen pieces a text needs without building a dict of every token (which
cost ~4 ms of CPU, a tenth of the hook's own work). This reproduces exactly what `tokenizers`
does for the configuration the bundled model uses (BertNormalizer + BertPreTokenizer +
WordPiece; tests compare the two on many texts) and declines (`load` returns None) any other
configuration, which then goes through
`tokenizers` as before.
"""

from __future__ import annotations

import json
import os
import unicodedata
import zlib
from array import array
from binascii import a2b_base64, b2a_base64
from pathlib import Path
from typing import Any

# 2: the header counts the tokens and characters of the body.
# 3: a hash index of the tokens follows the header (see `_Index`).
CACHE_VERSION = 3
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
    def __init__(self, tokens: list[str] | None, meta: dict[str, Any],
                 index: _Index | None = None) -> None:
        """From the tokens in id order (the vocabulary becomes a dict), or from the cache's
        index (`_Index`: pieces are looked up in it, and the dict is made only if asked for)."""
        self._index = index
        self._vocab = dict(zip(tokens, range(len(tokens)))) if tokens is not None else None
        self.unk = meta["unk"]
        self.unk_id = self.lookup(self.unk)
        self.prefix = meta["prefix"]
        self.max_chars = int(meta["max_chars"])
        self.lowercase = bool(meta["lowercase"])
        self.strip_accents = bool(meta["strip_accents"])
        self.chinese = bool(meta["chinese"])
        self.clean = bool(meta["clean"])
        self.added = {k: int(v) for k, v in meta["added"].items()}
        self._median_chars = meta.get("median_chars")

    @property
    def vocab(self) -> dict[str, int]:
        """Every token and its id."""
        if self._vocab is None:
            assert self._index is not None
            self._vocab = self._index.vocab()
        return self._vocab

    def lookup(self, piece: str) -> int | None:
        """The id of this token, or None."""
        if self._vocab is not None:
            return self._vocab.get(piece)
        assert self._index is not None
        return self._index.get(piece)

    def median_chars(self) -> int:
        """The median length of the vocabulary's tokens, in characters (1 when it has none)."""
        if self._median_chars is None:
            self._median_chars = _median_chars(self.vocab)
        return int(self._median_chars)

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
                raw = cached.read_bytes()
                end = raw.find(b"\n")
                meta = json.loads(raw[:end]) if end >= 0 else {}
                if meta.get("source") == str(tokenizer_json):
                    if not meta.get("supported"):
                        return None
                    index = _Index.read(raw, end + 1, meta)
                    if isinstance(index, list):
                        return cls(index, meta)
                    if index is not None:
                        return cls(None, meta, index)
                    _log(f"the tokenizer cache {cached} is incomplete or damaged; rebuilt it "
                         f"from {tokenizer_json}")
            except (OSError, ValueError, KeyError, TypeError):
                pass
        data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
        meta, tokens = cls._meta(data)
        meta["source"] = str(tokenizer_json)
        if cached is not None:
            # A declined tokenizer is cached too (its header alone), so later loads skip the JSON.
            content = _Index.build(tokens, meta) if meta["supported"] else json.dumps(meta).encode("utf-8") + b"\n"
            tmp = cached.with_name(f".{cached.name}.{os.getpid()}")
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_bytes(content)
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
        lookup = self.lookup
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
                piece_id = lookup(piece)
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


def _median_chars(tokens: Any) -> int:
    """Its tokens' median length in characters, as model2vec reads a vocabulary (1 for none)."""
    lengths = sorted(len(t) for t in tokens)
    return lengths[len(lengths) // 2] if lengths else 1


class _Index:
    """The cached vocabulary with a hash index: after the JSON header, one base64 line of
    bucket offsets (unsigned 32-bit, little-endian), then the entries, "TOKEN<tab>ID" a line,
    grouped by bucket (the CRC-32 of the token's UTF-8 bytes, modulo the bucket count). Loading
    it reads one file and decodes a short line; a lookup hashes the piece and finds it among
    the dozen or so entries of its bucket. A vocabulary with a tab in a token is kept as the
    tokens alone, one a line in id order, and read into a dict (`indexed` false)."""

    __slots__ = ("buckets", "data", "first")

    def __init__(self, data: bytes, first: array) -> None:
        self.data, self.first = data, first
        self.buckets = len(first) - 1

    def get(self, piece: str) -> int | None:
        if "\t" in piece or "\n" in piece:  # no token holds either (a tab: not indexed)
            return None
        key = b"\n" + piece.encode("utf-8") + b"\t"
        bucket = zlib.crc32(key[1:-1]) % self.buckets
        data = self.data
        # Each bucket's entries start right after a newline, which `key` begins with.
        at = data.find(key, self.first[bucket] - 1, self.first[bucket + 1])
        if at < 0:
            return None
        at += len(key)
        return int(data[at:data.index(b"\n", at)])

    def vocab(self) -> dict[str, int]:
        pairs = (line.rpartition("\t") for line in self.data[1:-1].decode("utf-8").split("\n"))
        return {token: int(i) for token, _, i in pairs} if self.buckets and len(self.data) > 1 else {}

    @staticmethod
    def build(tokens: list[str], meta: dict[str, Any]) -> bytes:
        """The cache file: the JSON header (`meta`, with the counts and checksums that prove
        the rest whole), the offsets line, then the entries."""
        encoded = [t.encode("utf-8") for t in tokens]
        header = dict(meta, count=len(tokens), median_chars=_median_chars(tokens))
        if any(b"\t" in t for t in encoded):
            data = b"".join(t + b"\n" for t in encoded)
            header.update(indexed=False, buckets=0, data_bytes=len(data), data_crc=zlib.crc32(data))
            return json.dumps(header).encode("utf-8") + b"\n\n" + data
        buckets = 1 << max(0, (len(encoded) // 8).bit_length())  # about a dozen tokens a bucket
        members: list[list[bytes]] = [[] for _ in range(buckets)]
        for i, token in enumerate(encoded):
            members[zlib.crc32(token) % buckets].append(token + b"\t" + str(i).encode("ascii") + b"\n")
        parts, first, size = [b"\n"], array("I"), 1
        for entries in members:
            first.append(size)
            chunk = b"".join(entries)
            parts.append(chunk)
            size += len(chunk)
        first.append(size)
        data = b"".join(parts)
        packed = (_swapped(first) if _BIG_ENDIAN else first).tobytes()
        header.update(indexed=True, buckets=buckets, data_bytes=len(data), data_crc=zlib.crc32(data),
                      first_crc=zlib.crc32(packed))
        return json.dumps(header).encode("utf-8") + b"\n" + b2a_base64(packed, newline=False) + b"\n" + data

    @classmethod
    def read(cls, raw: bytes, at: int, meta: dict[str, Any]) -> _Index | list[str] | None:
        """What follows the header in `raw` (from offset `at`): the index, or the tokens of a
        vocabulary kept without one; None unless the header's counts and checksums hold (a cut
        or damaged file)."""
        end = raw.find(b"\n", at)
        if end < 0:
            return None
        data = raw[end + 1:]
        if len(data) != meta["data_bytes"] or zlib.crc32(data) != meta["data_crc"]:
            return None
        if not meta["indexed"]:
            tokens = data[:-1].decode("utf-8").split("\n") if data else []
            return tokens if len(tokens) == meta["count"] else None
        packed = a2b_base64(raw[at:end])
        if len(packed) != 4 * (int(meta["buckets"]) + 1) or zlib.crc32(packed) != meta["first_crc"]:
            return None
        first = array("I")
        first.frombytes(packed)
        return cls(data, _swapped(first) if _BIG_ENDIAN else first)


_BIG_ENDIAN = array("I", [1]).tobytes()[0] == 0
assert array("I").itemsize == 4, "the tokenizer cache's index is of 32-bit unsigned integers"


def _swapped(values: array) -> array:
    out = array(values.typecode, values)
    out.byteswap()
    return out
