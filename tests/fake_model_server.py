"""What the scripted model APIs (tests/fake_anthropic_stream.py, fake_openai_responses.py,
fake_gemini_api.py) share: the script, every request kept in arrival order, a script that
raised kept in `errors`, numbered replies, and an answer to any other path.

A subclass gives its API's routes and its `not_found` answer; serve `fake.app` with
`ServerThread(fake.app)` (re-exported here from tests/fake_llm_api.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from tests.fake_llm_api import ServerThread

__all__ = ["ScriptedModelAPI", "ServerThread", "pieces"]


def pieces(text: str, size: int = 16) -> list[str]:
    """text in the small pieces a streamed answer sends it in (one empty piece for "")."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


class ScriptedModelAPI:
    """The app of one model API whose replies `script` gives; kept requests in `requests`."""

    def __init__(self, script: Callable[..., Any], routes: list[BaseRoute]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []  # a script that raised: the test should fail on these
        self._lock = threading.Lock()
        self._count = 0
        self.app = Starlette(routes=[
            *routes,
            Route("/{path:path}", self.other, methods=["GET", "HEAD", "POST", "PUT", "DELETE"]),
        ])

    async def _keep(self, request: Request, **extra: Any) -> dict[str, Any]:
        """The request's JSON body, after keeping the request (with `extra` fields) in `requests`."""
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", errors="replace")}
        with self._lock:
            self.requests.append({"method": request.method, "path": request.url.path, **extra,
                                  "headers": dict(request.headers), "body": body})
        return body

    def _reply(self, *request: Any) -> tuple[Any, str | None]:
        """What the script answers the request, or (None, its error) if it raised."""
        try:
            return self.script(*request), None
        except Exception as exc:  # noqa: BLE001  reported to the test, and to the agent as a server error
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return None, str(exc)

    def _next_number(self) -> int:
        """1 for the first reply, 2 for the next…: for the reply's id."""
        with self._lock:
            self._count += 1
            return self._count

    def not_found(self, path: str) -> Response:
        """The API's own answer for a path it does not have."""
        raise NotImplementedError

    async def other(self, request: Request) -> Response:
        await self._keep(request)
        if request.method in ("GET", "HEAD") and request.url.path in ("/", ""):
            return Response(status_code=200)  # a reachability probe
        return self.not_found(request.url.path)
