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
from typing import Any, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_model_server import ScriptedModelAPI, ServerThread, pieces

Block = dict[str, Any]
Script = Callable[[dict[str, Any]], list[Block]]

__all__ = ["FakeAnthropic", "ServerThread", "text_block", "tool_use_block"]


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def tool_use_block(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> Block:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class FakeAnthropic(ScriptedModelAPI):
    """The app; serve it with `ServerThread(fake.app)` and point the agent at its URL."""

    def __init__(self, script: Script) -> None:
        super().__init__(script, [
            Route("/v1/messages", self.messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self.count_tokens, methods=["POST"]),
        ])

    @property
    def message_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the /v1/messages requests, in order."""
        return [r["body"] for r in self.requests if r["path"] == "/v1/messages"]

    def not_found(self, path: str) -> Response:
        return JSONResponse({"type": "error", "error": {"type": "not_found_error",
                                                        "message": f"no {path} here"}}, 404)

    async def count_tokens(self, request: Request) -> Response:
        body = await self._keep(request)
        return JSONResponse({"input_tokens": max(1, len(json.dumps(body)) // 4)})

    async def messages(self, request: Request) -> Response:
        body = await self._keep(request)
        blocks, failed = self._reply(body)
        if failed is not None:
            return JSONResponse({"type": "error", "error": {"type": "api_error", "message": failed}}, 500)
        msg_id = f"msg_fake_{self._next_number():04d}"
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
                              for p in pieces(json.dumps(block["input"]))]
                else:
                    start = {"type": "text", "text": ""}
                    deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
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
