"""Deterministic detectors over a Session: what went wrong, what was learned, who waited.

- corrections: the person pushes back after a hand-back, interrupts and then pushes back or
  redirects, or refuses a tool call (detect_corrections.py);
- offers: an assistant reply that offered to act, how the person answered and how many
  replies in a row waited on the person (detect_corrections.py);
- errors: failed tool results, classified (detect_errors.py);
- surprises: stated surprises ("unexpectedly", "turns out", "that's odd", "I assumed … but");
- environment: facts about the machine (a tool or module missing, a version, the OS, a path).

Every pattern errs towards silence: a missed finding costs little, a false one teaches a
wrong lesson. Each detector returns plain dataclasses (detect_common.Finding); ingest turns
them into episodes. This module is what ingest calls: every detector over one session.
"""

from __future__ import annotations

from typing import Any

from remem.engine.detect_corrections import corrections, offers
from remem.engine.detect_errors import environment, errors, surprises
from remem.engine.session import Session

__all__ = ["corrections", "detect_all", "environment", "errors", "offers", "surprises"]


def detect_all(session: Session) -> dict[str, Any]:
    """Every finding of a session, by kind, plus its offers."""
    return {
        "correction": corrections(session),
        "error": errors(session),
        "surprise": surprises(session),
        "environment": environment(session),
        "offers": offers(session),
    }
