"""Static embeddings: the bundled model2vec model, read directly, with a hashed fallback.

The bundled model is a tokenizer plus one embedding matrix. Encoding a text is: tokenize
(no special tokens), drop unknown tokens, look up each token's row, average, L2-normalise.
Reading `tokenizer.json` with `tokenizers` and memory-mapping the matrix avoids model2vec's
import cost, so the same vectors are available on the hook path. Two ways to encode:

- `encode(texts)`: numpy, for batches (ingest, sleep, recall).
- `encode_py(text)`: pure Python over the memory-mapped matrix, for the hook path, where
  importing numpy would eat most of the latency budget.

Every vector is tagged with the `space` of the model that made it; vectors of different
spaces are never compared (sleep re-embeds what is not in the current space).
"""

from __future__ import annotations

import json
import math
import mmap
import operator
import re
import struct
import sys
import zlib
from array import array
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol, Sequence

from remem.engine.store import clean_text
from remem.errors import RememError

if TYPE_CHECKING:
    import numpy as np

MODEL_DIR = Path(__file__).parent / "model"
HASHED_DIM = 256
HASHED_SPACE = f"hashed-{HASHED_DIM}"
_WORD = re.compile(r"[\w']+", re.UNICODE)


class Embedder(Protocol):
    space: str
    dim: int

    def encode(self, texts: Sequence[str]) -> "np.ndarray": ...

    def encode_py(self, text: str) -> array: ...


# --------------------------------------------------------------------------- helpers

def to_blob(vector: Any) -> bytes:
    """Little-endian float32 bytes, from a numpy row or an array('f')/list."""
    if not isinstance(vector, array):
        import numpy as np

        return np.asarray(vector, dtype="<f4").tobytes()
    out = array("f", vector)
    if sys.byteorder == "big":
        out.byteswap()
    return out.tobytes()


def from_blob_py(blob: bytes) -> array:
    """A stored vector as array('f'), without numpy."""
    out = array("f")
    out.frombytes(blob)
    if sys.byteorder == "big":
        out.byteswap()
    return out


def from_blob(blob: bytes) -> "np.ndarray":
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


def dot_py(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(map(operator.mul, a, b))


def cosine(a: Any, b: Any) -> float:
    """Cosine of two vectors (numpy or sequences); 0 when either is zero (serves tests and tools)."""
    import numpy as np

    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    if a.shape != b.shape:
        return 0.0
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(a @ b) / (na * nb) if na and nb else 0.0


def normalise_rows(matrix: "np.ndarray") -> "np.ndarray":
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


# --------------------------------------------------------------------------- hashed

def _hash_token(token: str) -> tuple[int, float]:
    h = zlib.crc32(token.encode("utf-8"))
    return h % HASHED_DIM, (1.0 if (h >> 16) & 1 else -1.0)


class HashedEmbedder:
    """256-dimension hashed word + bigram vectors: no model, no files, always available."""

    space = HASHED_SPACE
    dim = HASHED_DIM

    def encode_py(self, text: str) -> array:
        vec = array("f", bytes(4 * HASHED_DIM))
        words = [w.lower() for w in _WORD.findall(clean_text(text or ""))]
        grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
        for gram in grams:
            idx, sign = _hash_token(gram)
            vec[idx] += sign
        norm = math.sqrt(dot_py(vec, vec))
        if norm:
            for i in range(HASHED_DIM):
                vec[i] /= norm
        return vec

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        out = np.zeros((len(texts), HASHED_DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = np.frombuffer(self.encode_py(text).tobytes(), dtype=np.float32)
        return out


# --------------------------------------------------------------------------- static model

_DTYPES = {"F16": ("e", 2, "<f2"), "F32": ("f", 4, "<f4"), "F64": ("d", 8, "<f8")}


class StaticEmbedder:
    """A model2vec static model read straight from its folder (tokenizer.json + safetensors)."""

    def __init__(self, model_dir: Path, name: str | None = None) -> None:
        self.dir = Path(model_dir)
        self.bundled = name == "bundled"
        tensors = self.dir / "model.safetensors"
        if not tensors.exists() or not (self.dir / "tokenizer.json").exists():
            missing = "model.safetensors" if not tensors.exists() else "tokenizer.json"
            raise FileNotFoundError(f"{missing} is missing from {self.dir}")
        # The tokenizer is loaded on first use: the hook path (encode_py) reads the vocabulary
        # with the pure-Python WordPiece instead, which loads in a fraction of the time.
        self._tokenizer: Any = None
        self._wordpiece: Any = False
        self._unk: Any = False
        cfg_path = self.dir / "config.json"
        self.config: dict[str, Any] = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
        self.normalize = bool(self.config.get("normalize", True))
        max_length = self.config.get("max_length", 512)
        self.max_length: int | None = int(max_length) if max_length else None
        self._fh = tensors.open("rb")
        size = tensors.stat().st_size
        if size < 8:
            raise ValueError(f"model.safetensors is truncated ({size} bytes)")
        self._mm = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
        header_len = struct.unpack_from("<Q", self._mm, 0)[0]
        if header_len > size - 8:
            raise ValueError(f"model.safetensors is truncated or damaged ({size} bytes, its header "
                             f"alone claims {header_len})")
        header = json.loads(self._mm[8:8 + header_len])
        base = 8 + header_len
        self._tensors = {k: v for k, v in header.items() if k != "__metadata__"}
        for tname, meta in self._tensors.items():
            # Every tensor must lie inside the file: a truncated copy would otherwise fail
            # later, in the middle of a command ("buffer is smaller than requested size").
            end = base + int(meta["data_offsets"][1])
            if end > size:
                raise ValueError(f"model.safetensors is truncated ({size} bytes; tensor {tname!r} "
                                 f"ends at byte {end})")
        emb = self._tensors.get("embeddings") or next(iter(self._tensors.values()))
        self.rows, self.dim = emb["shape"]
        self._fmt, self._width, self._np_dtype = _DTYPES[emb["dtype"]]
        start, end = emb["data_offsets"]
        if end - start != self.rows * self.dim * self._width:
            raise ValueError(f"model.safetensors is damaged (the embeddings tensor holds {end - start} "
                             f"bytes, its shape needs {self.rows * self.dim * self._width})")
        self._offset = base + emb["data_offsets"][0]
        self._row_bytes = self._width * self.dim
        self._base = base
        self.weights = self._vector_py("weights")
        self.mapping = self._int_vector("token_mapping") or self._int_vector("mapping")
        self.space = f"m2v:{name or self.dir.name}-{self.dim}-{size}"
        self._matrix: "np.ndarray | None" = None
        self._cut: int | None = None

    def broken(self, reason: str) -> "EmbedModelError":
        """The error that says this model's files cannot be used (logged once)."""
        error: EmbedModelError = (BundledModelError(reason) if self.bundled
                                  else EmbedModelError(str(self.dir), reason))
        _log_once(error)
        return error

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            try:
                tok = Tokenizer.from_file(str(self.dir / "tokenizer.json"))
            except Exception as exc:  # tokenizers raises a bare Exception for a damaged file
                raise self.broken(f"tokenizer.json cannot be read: {_short(exc)}") from None
            tok.no_padding()
            if self.max_length:
                tok.enable_truncation(self.max_length)
            else:
                tok.no_truncation()
            self._tokenizer = tok
        return self._tokenizer

    def wordpiece(self) -> Any:
        """The pure-Python tokenizer when the model's tokenizer is one it reproduces, else None."""
        if self._wordpiece is False:
            from remem import paths
            from remem.engine.wordpiece import WordPiece

            try:
                self._wordpiece = WordPiece.load(self.dir / "tokenizer.json", paths.vectors_dir())
            except (OSError, ValueError, KeyError, TypeError):
                self._wordpiece = None
        return self._wordpiece

    @property
    def unk_id(self) -> int | None:
        if self._unk is False:
            wp = self.wordpiece()
            self._unk = wp.unk_id if wp is not None else self._unk_id()
        return self._unk

    def _unk_id(self) -> int | None:
        # Read the unknown token from the file's text: serialising the loaded tokenizer back
        # to JSON to find it costs ~10 ms, a tenth of the hook's budget.
        try:
            raw = (self.dir / "tokenizer.json").read_text(encoding="utf-8")
            found = re.search(r'"unk_token"\s*:\s*("(?:[^"\\]|\\.)*")', raw)
            if found:
                return self.tokenizer.token_to_id(json.loads(found.group(1)))
            model = json.loads(raw)["model"]
        except (OSError, ValueError, KeyError):
            return None
        unk = model.get("unk_token")
        if unk is None:
            return None
        return self.tokenizer.token_to_id(unk)

    def _vector_py(self, name: str) -> array | None:
        meta = self._tensors.get(name)
        if not meta:
            return None
        fmt, width, _ = _DTYPES[meta["dtype"]]
        start, end = meta["data_offsets"]
        count = (end - start) // width
        return array("f", struct.unpack_from(f"<{count}{fmt}", self._mm, self._base + start))

    def _int_vector(self, name: str) -> array | None:
        meta = self._tensors.get(name)
        if not meta:
            return None
        fmt = {"I64": "q", "I32": "i", "U32": "I", "I16": "h"}[meta["dtype"]]
        start, end = meta["data_offsets"]
        count = (end - start) // struct.calcsize(fmt)
        return array("q", struct.unpack_from(f"<{count}{fmt}", self._mm, self._base + start))

    def _ids(self, text: str) -> list[int]:
        wp = self.wordpiece()
        if wp is not None and wp.agrees(text or ""):
            ids = wp.encode(text or "")
            if self.max_length:
                ids = ids[: self.max_length]
        else:
            ids = self.tokenizer.encode(text or "", add_special_tokens=False).ids
        if self.unk_id is not None:
            ids = [i for i in ids if i != self.unk_id]
        return ids

    @property
    def _char_cut(self) -> int:
        # As model2vec does: max_length × the median vocabulary token length, in characters.
        if self._cut is None:
            wp = self.wordpiece()
            if wp is not None:
                median = wp.median_chars()  # kept in the tokenizer cache: no pass over the vocabulary
            else:
                lengths = sorted(len(t) for t in self.tokenizer.get_vocab())
                median = lengths[len(lengths) // 2] if lengths else 1
            self._cut = (self.max_length or 0) * median
        return self._cut

    def _truncate_chars(self, text: str) -> str:
        if self.max_length and len(text) > self.max_length and len(text) > self._char_cut:
            return text[: self._char_cut]
        return text

    # -- pure Python (hook path) ---------------------------------------------------------
    def encode_py(self, text: str) -> array:
        ids = self._ids(self._truncate_chars(clean_text(text or "")))
        acc = [0.0] * self.dim
        total = 0.0
        for tid in ids:
            row = self.mapping[tid] if self.mapping is not None else tid
            values = struct.unpack_from(f"<{self.dim}{self._fmt}", self._mm, self._offset + row * self._row_bytes)
            w = float(self.weights[tid]) if self.weights is not None else 1.0
            total += w
            acc = [a + w * v for a, v in zip(acc, values)] if w != 1.0 else list(map(operator.add, acc, values))
        vec = array("f", (a / total for a in acc)) if total else array("f", acc)
        if self.normalize:
            norm = math.sqrt(dot_py(vec, vec))
            if norm:
                vec = array("f", (v / norm for v in vec))
        return vec

    # -- numpy (batches) ---------------------------------------------------------------
    def matrix(self) -> "np.ndarray":
        import numpy as np

        if self._matrix is None:
            self._matrix = np.frombuffer(
                self._mm, dtype=self._np_dtype, count=self.rows * self.dim, offset=self._offset
            ).reshape(self.rows, self.dim)
        return self._matrix

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        matrix = self.matrix()
        weights = None
        if self.weights is not None:
            weights = np.frombuffer(self.weights.tobytes(), dtype=np.float32)
        mapping = np.asarray(self.mapping, dtype=np.int64) if self.mapping is not None else None
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(
            [self._truncate_chars(clean_text(t or "")) for t in texts], add_special_tokens=False
        )
        for row, enc in enumerate(encodings):
            ids = np.asarray(enc.ids, dtype=np.int64)
            if self.unk_id is not None and ids.size:
                ids = ids[ids != self.unk_id]
            if not ids.size:
                continue
            rows = matrix[mapping[ids] if mapping is not None else ids].astype(np.float32)
            if weights is not None:
                w = weights[ids][:, None]
                out[row] = (rows * w).sum(axis=0) / float(w.sum())
            else:
                out[row] = rows.mean(axis=0)
        return normalise_rows(out) if self.normalize else out


class Model2VecEmbedder:
    """Any model2vec model by path or hub id, through model2vec itself (config `embed.model`).

    `folder`: where the model's files are (a hub id's snapshot in the local Hugging Face
    cache). model2vec is only ever handed a folder that exists, so it never goes online."""

    def __init__(self, ref: str, folder: str | Path | None = None) -> None:
        from model2vec import StaticModel

        with _quiet():
            self.model = StaticModel.from_pretrained(str(folder or ref))
        self.dim = int(self.model.dim)
        self.space = f"m2v:{ref}-{self.dim}"

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        vecs = np.asarray(self.model.encode([clean_text(t or "") for t in texts]), dtype=np.float32)
        return normalise_rows(vecs)

    def encode_py(self, text: str) -> array:
        return array("f", self.encode([text])[0].tolist())


MODEL_FIX = ('point it at a model2vec folder, or go back to the bundled model with '
             '`remem config set embed.model ""`')
REINSTALL_FIX = "reinstall remem (for example `pip install --force-reinstall remem`)"


class EmbedModelError(RememError):
    """`embed.model` names a model that cannot be loaded: one line, the reason and the fix."""

    def __init__(self, ref: str, reason: str) -> None:
        self.ref, self.reason, self.fix = ref, reason, MODEL_FIX
        self.problem = f"embed.model {ref!r} cannot be loaded ({reason})"
        super().__init__(f"{self.problem}; {self.fix}")


class BundledModelError(EmbedModelError):
    """The model shipped inside remem is missing or damaged: a broken install. Every command
    that embeds stops with this one line, hooks show nothing (and log it), and nothing is
    re-embedded into the hashed fallback space, which would lose what the model's vectors
    find."""

    def __init__(self, reason: str) -> None:
        self.ref, self.reason, self.fix = "", reason, REINSTALL_FIX
        self.problem = f"the bundled embedding model in {MODEL_DIR} cannot be loaded ({reason})"
        RememError.__init__(self, f"{self.problem}; {self.fix}")


_logged: set[str] = set()


def _log_once(error: BaseException) -> None:
    """A model that cannot be loaded goes to remem's log once per process."""
    line = str(error)
    if line in _logged:
        return
    _logged.add(line)
    try:
        from remem.log import log

        log("embed", line)
    except Exception:
        pass


@contextmanager
def _quiet() -> Iterator[None]:
    """No warnings and no log lines from model2vec, huggingface_hub and friends: a failure
    becomes one EmbedModelError, and a hook's stderr stays one line."""
    import logging
    import warnings

    loggers = [logging.getLogger(name) for name in ("model2vec", "huggingface_hub", "safetensors",
                                                    "tokenizers", "transformers")]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lg in loggers:
            lg.setLevel(logging.CRITICAL + 1)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels):
                lg.setLevel(level)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _looks_like_path(ref: str) -> bool:
    return (ref.startswith(("/", "~", ".", "\\")) or Path(ref).is_absolute()
            or (len(ref) > 1 and ref[1] == ":"))


def _cached_hub_folder(ref: str) -> Path:
    """The snapshot of hub id `ref` in the local Hugging Face cache; never the network."""
    from huggingface_hub import snapshot_download

    try:
        with _quiet():
            return Path(snapshot_download(ref, repo_type="model", local_files_only=True))
    except ValueError:  # HFValidationError: not of the form name or namespace/name
        raise EmbedModelError(ref, "no such folder, and not a Hugging Face model id") from None
    except OSError:  # LocalEntryNotFoundError: never downloaded
        raise EmbedModelError(
            ref, "no such folder, and not in the local Hugging Face cache; remem never downloads "
            f"a model: fetch it once with `hf download {ref}`") from None


def _load_configured(ref: str) -> Embedder:
    """`embed.model` as a folder, or a hub id already in the local cache. Raises EmbedModelError."""
    path = Path(ref).expanduser()
    if path.is_dir():
        if (path / "model.safetensors").exists() and (path / "tokenizer.json").exists():
            try:
                return StaticEmbedder(path)
            except (KeyError, ValueError, struct.error):
                pass  # a layout the direct reader does not know: model2vec reads it
        if next(path.glob("*.safetensors"), None) is None and next(path.glob("*/*.safetensors"), None) is None:
            raise EmbedModelError(ref, "no model2vec model in that folder: no model.safetensors")
        return Model2VecEmbedder(str(path))
    if path.exists():
        raise EmbedModelError(ref, "a file, not a model2vec folder")
    if _looks_like_path(ref):
        raise EmbedModelError(ref, "no such folder")
    return Model2VecEmbedder(ref, folder=_cached_hub_folder(ref))


@lru_cache(maxsize=4)
def _load(ref: str) -> Embedder:
    if not ref:
        try:
            return StaticEmbedder(MODEL_DIR, name="bundled")
        except Exception as exc:
            # Never the hashed space in its place: every vector made by the model would stop
            # matching, and a sleep would re-embed the whole memory into it.
            error = BundledModelError(_short(exc))
            _log_once(error)
            raise error from None
    if ref == "hashed":
        return HashedEmbedder()
    try:
        return _load_configured(ref)
    except EmbedModelError:
        raise
    except ImportError as exc:
        raise EmbedModelError(ref, f"model2vec is not installed: {_short(exc)}") from None
    except Exception as exc:  # whatever model2vec or the files raise: one line, never a traceback
        raise EmbedModelError(ref, _short(exc)) from None


def get_embedder(model: str | None = None) -> Embedder:
    """The configured embedder (cached per process). `model`: override config embed.model.
    Raises EmbedModelError (a RememError, one line naming the fix) when it cannot be loaded."""
    if model is None:
        from remem import config

        model = str(config.load()["embed"]["model"] or "")
    return _load(model)


def model_problem(model: str | None = None) -> dict[str, str] | None:
    """`remem doctor`: the configured model loaded once and used on a text, both ways (the
    hook's and the batch one); its problem and fix, or None."""
    try:
        embedder = get_embedder(model)
        embedder.encode_py("remem doctor checks the model")
        embedder.encode(["remem doctor checks the model"])
    except BundledModelError as exc:
        return {"problem": exc.problem, "fix": "pip install --force-reinstall remem   (reinstall "
                "remem: its bundled model is missing or damaged)"}
    except EmbedModelError as exc:
        return {"problem": exc.problem, "fix": 'remem config set embed.model ""   (the bundled '
                "model), or point embed.model at a model2vec folder"}
    except Exception as exc:  # doctor reports, never fails
        return {"problem": f"the embedding model fails on a text ({_short(exc)})",
                "fix": "pip install --force-reinstall remem   (or point embed.model at another model)"}
    return None


def space_is_model(space: str | None) -> bool:
    return bool(space) and not str(space).startswith("hashed")
