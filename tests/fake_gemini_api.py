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
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_model_server import ScriptedModelAPI, ServerThread, pieces

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


def _sse(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


def _error(status: int, message: str, state: str) -> JSONResponse:
    return JSONResponse({"error": {"code": status, "message": message, "status": state}}, status)


class FakeGemini(ScriptedModelAPI):
    """The app; serve it with `ServerThread(fake.app)` and point the agent at its URL
    (`GOOGLE_GEMINI_BASE_URL`)."""

    def __init__(self, script: Script) -> None:
        super().__init__(script, [
            Route("/{version}/models/{call}", self.model_call, methods=["POST"]),
        ])

    def bodies(self, action: str) -> list[dict[str, Any]]:
        """The bodies of the requests for one action (streamGenerateContent…), in order."""
        return [r["body"] for r in self.requests if r["action"] == action]

    async def _keep(self, request: Request, model: str | None = None,
                    action: str | None = None) -> dict[str, Any]:
        """Each request is kept with its query, model and action too (None off models/*)."""
        return await super()._keep(request, query=request.url.query, model=model, action=action)

    def not_found(self, path: str) -> Response:
        return _error(404, f"no {path} here", "NOT_FOUND")

    async def model_call(self, request: Request) -> Response:
        model, _, action = request.path_params["call"].partition(":")
        body = await self._keep(request, model, action)
        if action == "countTokens":
            return JSONResponse({"totalTokens": max(1, len(json.dumps(body)) // 4)})
        if action not in ("generateContent", "streamGenerateContent"):
            return _error(404, f"no {action} here", "NOT_FOUND")
        parts, failed = self._reply(model, body)
        if failed is not None:
            return _error(500, failed, "INTERNAL")
        response_id = f"fake-{self._next_number():04d}"
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
                chunks.extend([{**part, "text": p}] for p in pieces(part["text"]))
            else:
                chunks.append([part])
        chunks = chunks or [[]]

        async def events():
            for i, chunk in enumerate(chunks):
                yield _sse(response(chunk, i == len(chunks) - 1))

        return StreamingResponse(events(), media_type="text/event-stream")
