"""Completion for the gateway's A2A clients: the JSON-RPC method ``commands/complete``.

A2A lets an extension add RPC methods. :func:`with_completion` adds this one to
a2a-sdk's JSON-RPC endpoint (``create_jsonrpc_routes``), beside ``SendMessage`` and the
rest, on the same URL, with the same authentication::

    -> {"jsonrpc": "2.0", "id": 1, "method": "commands/complete",
        "params": {"text": "/model g", "taskId": "t-1", "limit": 10}}
    <- {"jsonrpc": "2.0", "id": 1, "result": {"values": [
           {"value": "gpt-x", "text": "/model gpt-x", "description": ""}, ...],
        "total": 2, "hasMore": false, "command": "model"}}

``taskId``, ``limit`` (0 or absent: 10; the sidecar gives at most 100) and ``tenant`` are
optional. The answer has MCP ``completion/complete``'s shape; each value also carries
the whole ``text`` with it applied and a ``description``, and ``command`` names the
command whose argument was completed (empty for names). A request that lists the
commands extension in ``A2A-Extensions`` gets it back, marked activated. The method is
the same in the TypeScript kit. Needs Starlette (``a2a-sdk[http-server]``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from a2a.extensions.common import HTTP_EXTENSION_HEADER
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes.common import DefaultServerCallContextBuilder, ServerCallContextBuilder
from a2a.utils.errors import A2AError, InternalError, InvalidParamsError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from . import EXTENSION_URI
from .errors import CommandsError, InvalidArgumentError
from .executor import CommandsExecutor

logger = logging.getLogger(__name__)

COMPLETE_METHOD = "commands/complete"
"""The JSON-RPC method that :func:`with_completion` adds."""

_MAX_LIMIT = 2**32 - 1  # a uint32; the sidecar answers at most 100 values


def with_completion(
    routes: Iterable[BaseRoute],
    executor: CommandsExecutor,
    *,
    context_builder: ServerCallContextBuilder | None = None,
) -> list[BaseRoute]:
    """a2a-sdk's JSON-RPC ``routes``, also answering :data:`COMPLETE_METHOD`.

    Every POST route's endpoint is wrapped: a request for ``commands/complete`` is
    answered by ``executor.complete`` (the task read from its store, the sender's role
    from its ``role`` callback), every other request reaches the SDK's endpoint
    untouched. Other routes are returned as they are.

    Args:
        routes: What ``create_jsonrpc_routes(handler, url)`` returned.
        executor: The gateway's :class:`CommandsExecutor`.
        context_builder: The one given to ``create_jsonrpc_routes``, if any, so that
            completion sees the caller as ``SendMessage`` does.

    Errors are JSON-RPC errors as the SDK maps them: ``-32602`` for a bad parameter,
    ``-32001`` for a task unknown (to this caller), ``-32603`` when the sidecar fails
    (logged).
    """
    builder = context_builder or DefaultServerCallContextBuilder()
    return [
        _wrap(route, executor, builder) if isinstance(route, Route) and "POST" in (route.methods or ()) else route
        for route in routes
    ]


def _wrap(route: Route, executor: CommandsExecutor, builder: ServerCallContextBuilder) -> Route:
    sdk_endpoint = route.endpoint

    async def endpoint(request: Request) -> Response:
        try:
            body = await request.json()  # cached on the request: the SDK reads it again
        except ValueError:
            body = None
        if not (isinstance(body, dict) and body.get("jsonrpc") == "2.0" and body.get("method") == COMPLETE_METHOD):
            response: Response = await sdk_endpoint(request)
            return response
        call_context = builder.build(request)
        asked = EXTENSION_URI in call_context.requested_extensions
        headers = {HTTP_EXTENSION_HEADER: EXTENSION_URI} if asked else None  # activated
        return JSONResponse(await _answer(body, call_context, executor), headers=headers)

    return Route(route.path, endpoint, methods=route.methods, name=route.name)


async def _answer(body: dict[str, Any], call_context: ServerCallContext, executor: CommandsExecutor) -> dict[str, Any]:
    """The JSON-RPC response to a ``commands/complete`` request."""
    request_id = body.get("id")
    try:
        text, task_id, limit, tenant = _params(body.get("params"))
        call_context.tenant = tenant  # as the SDK's dispatcher sets it
        answer = await executor.complete(call_context, text, task_id, limit=limit)
    except A2AError as error:
        return build_error_response(request_id, error)
    except InvalidArgumentError as error:
        return build_error_response(request_id, InvalidParamsError(message=str(error)))
    except CommandsError as error:
        logger.error("a2a-commands: Complete failed: %s", error)
        return build_error_response(request_id, InternalError(message="commands are unavailable right now"))
    result = {
        "values": [{"value": v.value, "text": v.text, "description": v.description} for v in answer.values],
        "total": answer.total,
        "hasMore": answer.has_more,
        "command": answer.command,
    }
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _params(params: object) -> tuple[str, str | None, int, str]:
    """``text``, ``taskId``, ``limit`` and ``tenant``, checked."""
    if not isinstance(params, dict):
        raise InvalidParamsError(message="params: must be an object")
    text, task_id, limit = params.get("text"), params.get("taskId"), params.get("limit", 0)
    tenant = params.get("tenant", "")
    if not isinstance(text, str):
        raise InvalidParamsError(message="params.text: must be a string")
    for name, value in (("taskId", task_id), ("tenant", tenant)):
        if value is not None and not isinstance(value, str):
            raise InvalidParamsError(message=f"params.{name}: must be a string")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= _MAX_LIMIT:
        raise InvalidParamsError(message="params.limit: must be a non-negative integer")
    return text, task_id or None, limit, tenant or ""
