"""A local test server that answers like the OpenAI and Anthropic APIs (streamed and not).

It stands in for the remote model APIs the test machine cannot reach. The `model` field picks
a behaviour: "fail-429", "fail-500", "slow" (sleeps), anything else answers normally.
Every request body it receives is kept in `received`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

REPLY = "Use uv: run `uv pip install requests`."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _chunks(text: str, size: int = 7) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


class FakeAPI:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/messages", self.messages, methods=["POST"]),
            Route("/v1/responses", self.responses, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ])

    async def _take(self, request: Request) -> tuple[dict[str, Any], Response | None]:
        body = json.loads(await request.body())
        self.received.append(body)
        self.headers.append(dict(request.headers))
        model = body.get("model", "")
        if model == "fail-429":
            return body, JSONResponse({"error": {"type": "rate_limit_error", "message": "slow down"}}, 429,
                                      headers={"retry-after": "0"})
        if model == "fail-500":
            return body, JSONResponse({"error": {"type": "server_error", "message": "boom"}}, 500)
        if model == "slow":
            await asyncio.sleep(5)
        return body, None

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "m", "object": "model", "created": 0, "owned_by": "x"}]})

    async def chat(self, request: Request) -> Response:
        body, failure = await self._take(request)
        if failure:
            return failure
        if body.get("stream"):
            async def gen():
                for piece in _chunks(REPLY):
                    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                             "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                    yield f"data: {json.dumps(chunk)}\n\n".encode()
                done = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                yield f"data: {json.dumps(done)}\n\n".encode()
                yield b"data: [DONE]\n\n"
            return StreamingResponse(gen(), media_type="text/event-stream")
        return JSONResponse({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
        })

    async def messages(self, request: Request) -> Response:
        body, failure = await self._take(request)
        if failure:
            return failure
        if body.get("stream"):
            def ev(name: str, data: dict[str, Any]) -> bytes:
                return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

            async def gen():
                yield ev("message_start", {"type": "message_start", "message": {
                    "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
                    "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 0}}})
                yield ev("content_block_start", {"type": "content_block_start", "index": 0,
                                                 "content_block": {"type": "text", "text": ""}})
                for piece in _chunks(REPLY):
                    yield ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                     "delta": {"type": "text_delta", "text": piece}})
                yield ev("content_block_stop", {"type": "content_block_stop", "index": 0})
                yield ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                              "stop_sequence": None},
                                           "usage": {"output_tokens": 5}})
                yield ev("message_stop", {"type": "message_stop"})
            return StreamingResponse(gen(), media_type="text/event-stream")
        return JSONResponse({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 5},
        })

    async def responses(self, request: Request) -> Response:
        body, failure = await self._take(request)
        if failure:
            return failure
        return JSONResponse({
            "id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
            "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}],
        })


class ServerThread:
    """Run an ASGI app with uvicorn on a free loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "ServerThread":
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
