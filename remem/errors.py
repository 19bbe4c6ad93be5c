"""Expected failures: each carries a one-line message that names the fix."""

from __future__ import annotations


class RememError(Exception):
    """An expected failure. The CLI prints `remem: <message>` on stderr and exits 1."""


class ConfigError(RememError):
    pass


class StoreError(RememError):
    pass


class NotFound(RememError):
    pass
