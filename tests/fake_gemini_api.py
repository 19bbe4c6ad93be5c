"""A local Gemini API (generativelanguage, v1beta) whose every reply a test scripts, for
driving a real agent.

It stands in for the model only: the agent (its hooks, tools and chat record) is real. A test
gives a `script`, a function from one request (its model and body) to the parts of the reply
(text and functionCall parts); the server answers `models/MODEL:streamGenerateContent?alt=sse`
as server-sent events (one GenerateContentResponse per event, the text in pieces, the last
with finishReason and usageMetadata), `models/MODEL:generateContent` as one response, and
`models/MODEL:countTokens`. Every request is kept in `requests` (method, path, model, action,
headers, body), in the order it arrived.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_llm_api import ServerThread

Part = dict[str, Any]
Script = Callable[[str, dict[str, Any]], list[Part]]

__all__ = ["FakeGemini", "ServerThread", "function_call_part", "text_part"]


def text_part(text: str) -> Part:
    return {"text": text}


def function_call_part(name: str, args: dict[str, Any], call_id: str | None = None) -> Part:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        call["id"] = call_id
    return {"functionCall": call}


def _pieces(text: str, size: int = 16) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _sse(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


def _error(status: int, message: str, state: str) -> JSONResponse:
    return JSONResponse({"error": {"code": status, "message": message, "status": state}}, status)


class FakeGemini:
    """The app; serve it with `ServerThread(fake.app)` and point the agent at its URL
    (`GOOGLE_GEMINI_BASE_URL`)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []  # a script that raised: the test should fail on these
        self._lock = threading.Lock()
        self._count = 0
        self.app = Starlette(routes=[
            Route("/{version}/models/{call}", self.model_call, methods=["POST"]),
            Route("/{path:path}", self.other, methods=["GET", "HEAD", "POST", "PUT", "DELETE"]),
        ])

    def bodies(self, action: str) -> list[dict[str, Any]]:
        """The bodies of the requests for one action (streamGenerateContent…), in order."""
        return [r["body"] for r in self.requests if r["action"] == action]

    async def _keep(self, request: Request, model: str | None = None,
                    action: str | None = None) -> dict[str, Any]:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", errors="replace")}
        with self._lock:
            self.requests.append({"method": request.method, "path": request.url.path,
                                  "query": request.url.query, "model": model, "action": action,
                                  "headers": dict(request.headers), "body": body})
        return body

    async def other(self, request: Request) -> Response:
        await self._keep(request)
        if request.method in ("GET", "HEAD") and request.url.path in ("/", ""):
            return Response(status_code=200)  # a reachability probe
        return _error(404, f"no {request.url.path} here", "NOT_FOUND")

    async def model_call(self, request: Request) -> Response:
        model, _, action = request.path_params["call"].partition(":")
        body = await self._keep(request, model, action)
        if action == "countTokens":
            return JSONResponse({"totalTokens": max(1, len(json.dumps(body)) // 4)})
        if action not in ("generateContent", "streamGenerateContent"):
            return _error(404, f"no {action} here", "NOT_FOUND")
        try:
            parts = self.script(model, body)
        except Exception as exc:  # noqa: BLE001  reported to the test, and to the agent as a server error
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return _error(500, str(exc), "INTERNAL")
        with self._lock:
            self._count += 1
            response_id = f"fake-{self._count:04d}"
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20}
        finish = {"finishReason": "STOP", "index": 0}

        def response(chunk: list[Part], last: bool) -> dict[str, Any]:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": chunk}, "index": 0}
            out: dict[str, Any] = {"candidates": [candidate], "modelVersion": model,
                                   "responseId": response_id}
            if last:
                candidate.update(finish)
                out["usageMetadata"] = usage
            return out

        if action == "generateContent":
            return JSONResponse(response(parts, True))
        # Streamed: each text in pieces, each function call whole (as the API sends them).
        chunks: list[list[Part]] = []
        for part in parts:
            if "text" in part:
                chunks.extend([{**part, "text": p}] for p in _pieces(part["text"]))
            else:
                chunks.append([part])
        chunks = chunks or [[]]

        async def events():
            for i, chunk in enumerate(chunks):
                yield _sse(response(chunk, i == len(chunks) - 1))

        return StreamingResponse(events(), media_type="text/event-stream")
