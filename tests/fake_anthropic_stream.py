"""A local Anthropic Messages API whose every reply a test scripts, for driving a real agent.

It stands in for the model only: the agent (its hooks, tools and transcript) is real. A test
gives a `script`, a function from one request body to the content blocks of the reply (text
and tool_use blocks); the server answers streamed (the SSE events message_start,
content_block_start, content_block_delta, content_block_stop, message_delta, message_stop) or
as one JSON message, as the request asks, and answers count_tokens. Every request is kept in
`requests` (method, path, headers, body), in the order it arrived.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_llm_api import ServerThread

Block = dict[str, Any]
Script = Callable[[dict[str, Any]], list[Block]]

__all__ = ["FakeAnthropic", "ServerThread", "text_block", "tool_use_block"]


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def tool_use_block(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> Block:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def _pieces(text: str, size: int = 16) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class FakeAnthropic:
    """The app; serve it with `ServerThread(fake.app)` and point the agent at its URL."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []  # a script that raised: the test should fail on these
        self._lock = threading.Lock()
        self._count = 0
        self.app = Starlette(routes=[
            Route("/v1/messages", self.messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self.count_tokens, methods=["POST"]),
            Route("/{path:path}", self.other, methods=["GET", "HEAD", "POST", "PUT", "DELETE"]),
        ])

    @property
    def message_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the /v1/messages requests, in order."""
        return [r["body"] for r in self.requests if r["path"] == "/v1/messages"]

    async def _keep(self, request: Request) -> dict[str, Any]:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", errors="replace")}
        with self._lock:
            self.requests.append({"method": request.method, "path": request.url.path,
                                  "headers": dict(request.headers), "body": body})
        return body

    async def other(self, request: Request) -> Response:
        await self._keep(request)
        if request.method in ("GET", "HEAD") and request.url.path in ("/", ""):
            return Response(status_code=200)  # a reachability probe
        return JSONResponse({"type": "error", "error": {"type": "not_found_error",
                                                        "message": f"no {request.url.path} here"}}, 404)

    async def count_tokens(self, request: Request) -> Response:
        body = await self._keep(request)
        return JSONResponse({"input_tokens": max(1, len(json.dumps(body)) // 4)})

    async def messages(self, request: Request) -> Response:
        body = await self._keep(request)
        try:
            blocks = self.script(body)
        except Exception as exc:  # reported to the test, and to the agent as a server error
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return JSONResponse({"type": "error", "error": {"type": "api_error", "message": str(exc)}}, 500)
        with self._lock:
            self._count += 1
            msg_id = f"msg_fake_{self._count:04d}"
        model = str(body.get("model") or "fake-model")
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 10}
        if not body.get("stream"):
            return JSONResponse({"id": msg_id, "type": "message", "role": "assistant", "model": model,
                                 "content": blocks, "stop_reason": stop_reason, "stop_sequence": None,
                                 "usage": usage})

        async def events():
            yield _sse("message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1}}})
            for index, block in enumerate(blocks):
                if block["type"] == "tool_use":
                    start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                    deltas = [{"type": "input_json_delta", "partial_json": p}
                              for p in _pieces(json.dumps(block["input"]))]
                else:
                    start = {"type": "text", "text": ""}
                    deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
                yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": start})
                for delta in deltas:
                    yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": delta})
                yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
            yield _sse("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                         "usage": {"output_tokens": usage["output_tokens"]}})
            yield _sse("message_stop", {"type": "message_stop"})

        return StreamingResponse(events(), media_type="text/event-stream")
