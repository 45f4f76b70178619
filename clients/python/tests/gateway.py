"""The gateway under test: a tiny a2a-sdk echo agent with the kit added, as in README.md.

Only the test plumbing is extra: a socket bound beforehand (port 0), and Starlette's
authentication middleware reading ``authorization: Bearer <user name>`` so that tests
can be an authenticated user (the default role: assignee) or anonymous (watcher).
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_status_update_event
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2 as sdk
from a2a.types.a2a_pb2 import (
    TASK_STATE_CANCELED,
    TASK_STATE_INPUT_REQUIRED,
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection

from a2a_commands import CommandsCard, CommandsClient, CommandsExecutor, RoleResolver
from a2a_commands.completion import with_completion


class EchoExecutor(AgentExecutor):
    """The gateway's own agent: answers ``echo: <text>`` and waits for the next message."""

    def __init__(self) -> None:
        self.seen: list[str] = []  # the texts that reached it
        self.last: sdk.Message | None = None  # the last message that reached it, as it was

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        self.seen.append(context.get_user_input())
        self.last = sdk.Message()
        self.last.CopyFrom(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await event_queue.enqueue_event(new_text_status_update_event(
            context.task_id, context.context_id, TASK_STATE_INPUT_REQUIRED,
            f"echo: {context.get_user_input()}",
        ))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await event_queue.enqueue_event(new_text_status_update_event(
            context.task_id, context.context_id, TASK_STATE_CANCELED, "canceled"
        ))


class BearerNames(AuthenticationBackend):
    """``authorization: Bearer <name>`` authenticates as ``<name>`` (tests only)."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser] | None:
        scheme, _, name = conn.headers.get("authorization", "").partition(" ")
        return (AuthCredentials(["authenticated"]), SimpleUser(name)) if scheme == "Bearer" and name else None


@dataclass
class Gateway:
    """A running gateway and the kit objects inside it."""

    url: str
    commands: CommandsClient
    card: CommandsCard
    store: InMemoryTaskStore
    echo: EchoExecutor
    handler: DefaultRequestHandler
    server: uvicorn.Server
    serving: asyncio.Task[None]

    async def stop(self) -> None:
        self.server.should_exit = True
        await self.serving
        await self.handler.aclose()
        await self.card.aclose()
        await self.commands.close()


async def start_gateway(sidecar_addr: str, role: RoleResolver | None = None) -> Gateway:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name="echo", description="Echoes what it is sent", version="1.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes the text", tags=["echo"])],
    )
    store = InMemoryTaskStore()
    # The kit, as in README.md:
    commands = CommandsClient(sidecar_addr)
    card_modifier = CommandsCard(commands)
    echo = EchoExecutor()
    executor = CommandsExecutor(echo, commands, store) if role is None else CommandsExecutor(echo, commands, store, role=role)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=store, agent_card=card)
    app = Starlette(
        routes=[
            *create_agent_card_routes(card, card_modifier=card_modifier),
            *with_completion(create_jsonrpc_routes(handler, "/"), executor),  # README: "Completion"
        ],
        middleware=[Middleware(AuthenticationMiddleware, backend=BearerNames())],
    )
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    return Gateway(url, commands, card_modifier, store, echo, handler, server, serving)
