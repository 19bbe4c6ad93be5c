"""A local OpenAI Responses API whose every reply a test scripts, for driving a real agent.

It stands in for the model only: the agent (its hooks, tools and rollout) is real. A test gives
a `script`, a function from one request body to the output items of the reply (assistant
messages and function calls); the server answers streamed, with the SSE events a Responses
client reads (response.created, response.in_progress, response.output_item.added,
response.content_part.added, response.output_text.delta/.done, response.content_part.done,
response.function_call_arguments.delta/.done, response.output_item.done, response.completed),
or as one JSON response object, as the request asks. Every request is kept in `requests`
(method, path, headers, body), in the order it arrived.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_model_server import ScriptedModelAPI, ServerThread, pieces

Item = dict[str, Any]
Script = Callable[[dict[str, Any]], list[Item]]

__all__ = ["FakeResponses", "ServerThread", "function_call_item", "message_item"]


def message_item(text: str) -> Item:
    """An assistant message, as the script gives it (ids are the server's to add)."""
    return {"type": "message", "role": "assistant", "text": text}


def function_call_item(call_id: str, name: str, arguments: dict[str, Any]) -> Item:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": json.dumps(arguments)}


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _output(item: Item, item_id: str, status: str) -> Item:
    """One output item as the API shows it, in progress (empty) or completed (whole)."""
    done = status == "completed"
    if item["type"] == "function_call":
        return {"id": item_id, "type": "function_call", "status": status, "call_id": item["call_id"],
                "name": item["name"], "arguments": item["arguments"] if done else ""}
    content = [{"type": "output_text", "text": item["text"], "annotations": []}] if done else []
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": content}


class FakeResponses(ScriptedModelAPI):
    """The app; serve it with `ServerThread(fake.app)` and point the agent at `{url}/v1`."""

    def __init__(self, script: Script) -> None:
        super().__init__(script, [
            Route("/v1/responses", self.responses, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ])

    @property
    def response_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the /v1/responses requests, in order."""
        return [r["body"] for r in self.requests if r["path"] == "/v1/responses"]

    def not_found(self, path: str) -> Response:
        return JSONResponse({"error": {"type": "invalid_request_error", "code": "not_found",
                                       "message": f"no {path} here"}}, 404)

    async def models(self, request: Request) -> Response:
        await self._keep(request)
        return JSONResponse({"object": "list", "data": []})

    async def responses(self, request: Request) -> Response:
        body = await self._keep(request)
        items, failed = self._reply(body)
        if failed is not None:
            return JSONResponse({"error": {"type": "server_error", "code": "server_error",
                                           "message": failed}}, 500)
        count = self._next_number()
        resp_id = f"resp_fake_{count:04d}"
        ids = [f"{'fc' if i['type'] == 'function_call' else 'msg'}_fake_{count:04d}_{n}"
               for n, i in enumerate(items)]
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 20}

        def response(status: str, output: list[Item]) -> dict[str, Any]:
            return {"id": resp_id, "object": "response", "created_at": int(time.time()), "status": status,
                    "model": str(body.get("model") or "fake-model"), "output": output,
                    "parallel_tool_calls": False, "tool_choice": "auto", "tools": [],
                    "usage": usage if status == "completed" else None, "error": None,
                    "incomplete_details": None}

        finished = [_output(item, item_id, "completed") for item, item_id in zip(items, ids)]
        if not body.get("stream"):
            return JSONResponse(response("completed", finished))

        def events():
            seq = iter(range(1_000_000))

            def event(data: dict[str, Any]) -> bytes:
                return _sse({**data, "sequence_number": next(seq)})

            yield event({"type": "response.created", "response": response("in_progress", [])})
            yield event({"type": "response.in_progress", "response": response("in_progress", [])})
            for index, (item, item_id) in enumerate(zip(items, ids)):
                at = {"item_id": item_id, "output_index": index}
                yield event({"type": "response.output_item.added", "output_index": index,
                             "item": _output(item, item_id, "in_progress")})
                if item["type"] == "function_call":
                    for piece in pieces(item["arguments"]):
                        yield event({"type": "response.function_call_arguments.delta", **at, "delta": piece})
                    yield event({"type": "response.function_call_arguments.done", **at,
                                 "arguments": item["arguments"]})
                else:
                    part = {**at, "content_index": 0}
                    yield event({"type": "response.content_part.added", **part,
                                 "part": {"type": "output_text", "text": "", "annotations": []}})
                    for piece in pieces(item["text"]):
                        yield event({"type": "response.output_text.delta", **part, "delta": piece,
                                     "logprobs": []})
                    yield event({"type": "response.output_text.done", **part, "text": item["text"],
                                 "logprobs": []})
                    yield event({"type": "response.content_part.done", **part,
                                 "part": {"type": "output_text", "text": item["text"], "annotations": []}})
                yield event({"type": "response.output_item.done", "output_index": index,
                             "item": finished[index]})
            yield event({"type": "response.completed", "response": response("completed", finished)})

        return StreamingResponse(events(), media_type="text/event-stream")
