"""A memory's Ed25519 identity, the canonical encoding that is signed, and sign/verify.

Every document in a share folder is a JSON object; its signature covers the canonical
encoding of the object without its "signature" field (docs/PROTOCOL.md, Sharing).
Signing and verification are `cryptography`'s Ed25519; nothing here is hand-rolled.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import stat
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from remem import paths
from remem.errors import RememError

PRIVATE_KEY_FILE = "ed25519.key"
PUBLIC_KEY_FILE = "ed25519.pub"
KEY_PREFIX = "remem-ed25519"


class ShareError(RememError):
    """A share folder or document problem, with the fix in the message."""


# --------------------------------------------------------------------------- canonical form

def _check(value: Any) -> None:
    """Only what encodes the same in every language: no floats, string keys only."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError("canonical documents have string keys only")
            _check(item)
    elif isinstance(value, list):
        for item in value:
            _check(item)
    elif isinstance(value, float):
        raise TypeError("canonical documents carry no floats (write numbers as strings)")
    elif not (value is None or isinstance(value, (str, bool, int))):
        raise TypeError(f"cannot encode {type(value).__name__} canonically")


def canonical(doc: dict[str, Any]) -> bytes:
    """Sorted keys, no whitespace, UTF-8, non-ASCII written as itself, no "signature" key."""
    body = {k: v for k, v in doc.items() if k != "signature"}
    _check(body)
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def file_bytes(doc: dict[str, Any]) -> bytes:
    """What is written to disk: the whole document (signature included), canonical, plus LF."""
    _check(doc)
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8") + b"\n"


# --------------------------------------------------------------------------- keys

def origin_of(public_raw: bytes) -> str:
    """The origin id: the first 16 hex digits of sha256 of the raw 32-byte public key."""
    return sha256(public_raw).hexdigest()[:16]


def public_line(public_raw: bytes) -> str:
    return f"{KEY_PREFIX} {base64.b64encode(public_raw).decode('ascii')}\n"


def parse_public_line(data: bytes) -> bytes:
    """The raw key from a key.pub file's bytes; ShareError when it is not one."""
    try:
        text = data.decode("ascii").strip()
        prefix, b64 = text.split(" ")
        if prefix != KEY_PREFIX:
            raise ValueError(prefix)
        raw = base64.b64decode(b64, validate=True)
    except (UnicodeDecodeError, ValueError, binascii.Error):
        raise ShareError("key.pub is not a remem-ed25519 public key line") from None
    if len(raw) != 32:
        raise ShareError("key.pub holds a key of the wrong length")
    return raw


@dataclass(frozen=True)
class Identity:
    origin: str
    public_raw: bytes
    _private: Ed25519PrivateKey
    directory: Path

    @property
    def public_key(self) -> str:
        return base64.b64encode(self.public_raw).decode("ascii")

    def sign(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The document with its signature (base64 of the 64-byte Ed25519 signature)."""
        signed = {k: v for k, v in doc.items() if k != "signature"}
        signed["signature"] = base64.b64encode(self._private.sign(canonical(signed))).decode("ascii")
        return signed


def verify(doc: dict[str, Any], public_raw: bytes) -> bool:
    """True when doc["signature"] is a valid signature of canonical(doc) by this key."""
    sig = doc.get("signature")
    if not isinstance(sig, str):
        return False
    try:
        raw_sig = base64.b64decode(sig, validate=True)
        message = canonical(doc)
    except (binascii.Error, ValueError, TypeError, UnicodeEncodeError, RecursionError):
        return False
    if len(raw_sig) != 64 or base64.b64encode(raw_sig).decode("ascii") != sig:
        return False  # one spelling per signature: no stray padding bits
    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(raw_sig, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def _write_new(path: Path, data: bytes, mode: int) -> bool:
    """Create path with data and mode, never clobbering: False when it already exists."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    try:
        os.link(tmp, path)  # atomic and refuses to replace: two first runs cannot race
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def identity(identity_dir: Path | str | None = None, *, create: bool = True) -> Identity:
    """This memory's key pair, made on first use (private key file mode 0600)."""
    directory = Path(identity_dir) if identity_dir else paths.identity_dir()
    key_path = directory / PRIVATE_KEY_FILE
    if not key_path.exists():
        if not create:
            raise ShareError(f"no identity in {directory}; `remem share keys` makes one")
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        _write_new(key_path, pem, 0o600)
    mode = stat.S_IMODE(key_path.stat().st_mode)
    if mode & 0o077:
        os.chmod(key_path, 0o600)  # a copied key may arrive world-readable
    try:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (ValueError, TypeError, OSError) as exc:
        raise ShareError(f"cannot read {key_path} ({exc}); move it aside to make a new identity") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ShareError(f"{key_path} is not an Ed25519 key; move it aside to make a new identity")
    public_raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    pub_path = directory / PUBLIC_KEY_FILE
    if not pub_path.exists():
        _write_new(pub_path, public_line(public_raw).encode("ascii"), 0o644)
    return Identity(origin_of(public_raw), public_raw, key, directory)


def own_origin(identity_dir: Path | str | None = None) -> str | None:
    """This memory's origin when it has a sharing identity (it may have shared), else None;
    none is made here."""
    try:
        return identity(identity_dir, create=False).origin
    except RememError:
        return None
