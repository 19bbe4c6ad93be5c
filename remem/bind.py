"""Who may reach what remem serves over HTTP: the rules `remem serve --http` and `remem proxy`
share. Nothing beyond this machine without a bearer token; a token compared in constant time;
and on loopback, no request whose Host or Origin names another machine (a web page that
rebinds its DNS name to 127.0.0.1 cannot reach the memory through the person's browser).

Light on purpose (no mcp, starlette or uvicorn): each edge imports it before its slow start.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from typing import Any

from remem.errors import RememError

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
NOT_LOCAL = "requests must come from this machine (Host/Origin not local)"


def is_loopback(host: str) -> bool:
    """Whether a host name or address is this machine. A name is matched in any case and with
    one trailing dot (`LOCALHOST`, `localhost.`: the same name to DNS and to a browser)."""
    host = host.lower()
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_token(cfg: dict[str, Any] | None = None) -> str:
    """The bearer token: env REMEM_TOKEN, else config server.token; empty means none."""
    from remem import config

    return os.environ.get("REMEM_TOKEN") or str(config.get("server.token", cfg) or "")


def check_bind(host: str, token: str) -> None:
    """Refuse to listen beyond this machine without a bearer token, and with a token no request
    could send (only whitespace: a header's value is trimmed, so every request would be 401)."""
    if token and not token.strip():
        raise RememError(
            "the token (REMEM_TOKEN or server.token) is only whitespace, which no request can send; "
            "set one with visible characters, e.g. REMEM_TOKEN=$(openssl rand -hex 16)"
        )
    if not is_loopback(host) and not token:
        raise RememError(
            f"binding to {host} exposes your memory to the network; set a token first "
            "(REMEM_TOKEN=… or `remem config set server.token …`) or keep --host 127.0.0.1"
        )


def bearer_matches(header: bytes | str, token: str) -> bool:
    """Whether an `Authorization`-style value is "Bearer <token>". The scheme is
    case-insensitive (RFC 9110: "bearer" is "Bearer"); the token is not, and is compared in
    constant time, as bytes: the header's bytes as they came (pass them raw; a str is taken as
    UTF-8) against the token's UTF-8, so a token that is not ASCII matches too. Whitespace
    around the token is no part of it (a header's value is trimmed before it arrives)."""
    raw = header if isinstance(header, bytes) else header.encode("utf-8", "surrogateescape")
    scheme, _, given = raw.strip().partition(b" ")
    # surrogateescape: a token read from an environment that is not UTF-8 is its own bytes again.
    expected = token.encode("utf-8", "surrogateescape").strip()
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), expected)


def header_bytes(scope: dict[str, Any], name: bytes) -> bytes:
    """An ASGI request's header `name` (lower case) as the bytes it came in; b"" when absent."""
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value)
    return b""


def hostname(authority: str) -> str:
    """The host of a Host header or an origin's authority: "[::1]:4599" and "[::1]" -> "::1",
    "localhost:4599" -> "localhost"."""
    authority = authority.split("/", 1)[0].strip()
    if authority.startswith("["):
        return authority[1:].split("]", 1)[0]
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def from_this_machine(host: str, origin: str) -> bool:
    """Whether a request's Host and Origin headers (each "" when absent) both name this
    machine. A server listening on loopback refuses the request otherwise."""
    host_name = hostname(host)
    origin_host = hostname(origin.split("://", 1)[-1]) if origin else ""
    return not ((host_name and not is_loopback(host_name)) or (origin_host and not is_loopback(origin_host)))
