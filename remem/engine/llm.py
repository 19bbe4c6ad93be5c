"""An optional local model over an OpenAI-compatible chat API (Ollama, llama.cpp, LM Studio).

Standard library only (urllib). Every call fails soft: no URL configured, a refused
connection, a timeout, a bad status or an odd body all return None, and the caller keeps its
deterministic path. Nothing is sent anywhere unless the person set `llm.url`.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from remem import config as config_mod

# After a call fails (down, too slow, an odd answer), the model counts as away for this long:
# a sleep making a thousand lessons must not wait out the timeout a thousand times.
AWAY_S = 300.0
_away_until: dict[str, float] = {}  # endpoint -> until when it counts as away


def _endpoint(url: str) -> str:
    url = url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if url.endswith("/v1"):
        return url + "/chat/completions"
    return url + "/v1/chat/completions"


def enabled(cfg: dict[str, Any] | None = None) -> bool:
    """Whether a model is configured (llm.url set). A malformed config raises its ConfigError,
    which names the fix: it is not the same as no model."""
    cfg = cfg or config_mod.load()
    llm = cfg.get("llm")
    return isinstance(llm, dict) and bool(str(llm.get("url") or "").strip())


def _post(request: urllib.request.Request, timeout: float) -> bytes:
    """The body of the reply, within `timeout` seconds for the whole call. urllib's timeout
    bounds each read, so a server sending a byte a second would hold a sleep for ever; the
    call runs on a daemon thread instead, abandoned when the time is up."""
    box: dict[str, Any] = {}

    def fetch() -> None:
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                box["body"] = resp.read(2_000_000)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=fetch, name="remem-llm", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"no whole answer within llm.timeout_s ({timeout:g} s)")
    if "error" in box:
        raise box["error"]
    return box["body"]


def complete(prompt: str, system: str | None = None, *, cfg: dict[str, Any] | None = None,
             max_tokens: int = 300) -> str | None:
    """The model's reply to one prompt, or None on any failure or when no model is set."""
    url = ""
    try:
        cfg = cfg or config_mod.load()
        llm = cfg.get("llm", {})
        url = str(llm.get("url") or "").strip()
        if not url or time.monotonic() < _away_until.get(url, 0.0):
            return None
        messages = ([{"role": "system", "content": system}] if system else []) + \
                   [{"role": "user", "content": prompt}]
        body = json.dumps({
            "model": llm.get("model") or "default", "messages": messages,
            "max_tokens": max_tokens, "temperature": 0, "stream": False,
        }).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if llm.get("api_key"):
            headers["Authorization"] = f"Bearer {llm['api_key']}"
        request = urllib.request.Request(_endpoint(url), data=body, headers=headers, method="POST")
        data = json.loads(_post(request, float(llm.get("timeout_s") or 20.0)).decode("utf-8", "replace"))
        text = data["choices"][0]["message"]["content"]
        if not isinstance(text, str) or not text.strip():
            return None  # no words for this prompt (a 5-token verdict, say): the model is there
        return text.strip()
    except Exception as exc:  # every failure means "no model": fall back to the deterministic path
        if url:
            _away_until[url] = time.monotonic() + AWAY_S
        try:
            from remem.log import log

            log("llm", f"no completion ({type(exc).__name__}: {exc})")
        except Exception:
            pass
        return None
