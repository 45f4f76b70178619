"""A plain a2a-sdk 1.3 echo agent with no kit: the agent the front stands in front of.

It answers ``echo: <text>`` (and the metadata it was sent, for the prompt-command test)
and leaves its task waiting for the next message. It serves the JSON-RPC binding at
``/`` and the HTTP+JSON binding under ``/rest``, both on its card (and, if asked, the
gRPC binding on a port of its own), and runs in a thread of its own so that synchronous
tests can use it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import grpc
import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_status_update_event
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.grpc_handler import GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    TASK_STATE_INPUT_REQUIRED,
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.routing import Mount


class Echo(AgentExecutor):
    """Echoes the text it gets; records what reached it."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.metadata: list[dict] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        text = context.get_user_input()
        self.seen.append(text)
        self.metadata.append(json_format.MessageToDict(context.message.metadata))
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await event_queue.enqueue_event(new_text_status_update_event(
            context.task_id, context.context_id, TASK_STATE_INPUT_REQUIRED,
            f"echo: {text} {json.dumps(self.metadata[-1], sort_keys=True)}",
        ))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


class Agent:
    """The echo agent on 127.0.0.1 (a free port), in a thread. `versions` are the A2A
    versions its card names; with "0.3" among them it serves 0.3's JSON-RPC too (the
    SDK's compatibility layer). `executor` stands in for the echo (scripts/tck_agent.py
    gives the conformance suite's scenarios). With `serve_grpc` it serves the gRPC
    binding too, on a free port of its own, named on its card. With `per_tenant` it keeps
    tasks per A2A tenant (the SDK's task store, owned by the request's tenant): another
    tenant's task is an unknown id."""

    def __init__(self, versions: tuple[str, ...] = ("1.0",), executor: AgentExecutor | None = None,
                 serve_grpc: bool = False, gzip: bool = False, per_tenant: bool = False) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.loop = asyncio.new_event_loop()
        self.grpc_server: grpc.aio.Server | None = None
        if serve_grpc:
            # A grpc.aio server belongs to the loop it is made on: this one, which the
            # thread below runs. Its port is bound now, for the card; it serves from start().
            self.grpc_server, grpc_port = self.loop.run_until_complete(_grpc_server())
        self.echo = executor or Echo()
        card = AgentCard(
            name="echo", description="Echoes what it is sent", version="1.0",
            supported_interfaces=[
                *([AgentInterface(url=self.url, protocol_binding="JSONRPC", protocol_version="1.0"),
                   AgentInterface(url=f"{self.url}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0")]
                  if "1.0" in versions else []),
                *([AgentInterface(url=self.url, protocol_binding="JSONRPC", protocol_version="0.3")]
                  if "0.3" in versions else []),
                # gRPC's interface URL is a bare host:port (a channel target), no scheme.
                *([AgentInterface(url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0")]
                  if self.grpc_server else []),
            ],
            capabilities=AgentCapabilities(streaming=True, extended_agent_card=True),
            default_input_modes=["text/plain"], default_output_modes=["text/plain"],
            skills=[AgentSkill(id="echo", name="Echo", description="Echoes the text", tags=["echo"])],
        )
        # The extended card (for authenticated callers): one more skill.
        extended = AgentCard()
        extended.CopyFrom(card)
        extended.skills.append(AgentSkill(id="secret", name="Secret", description="For callers it knows", tags=["x"]))
        store = InMemoryTaskStore(owner_resolver=lambda context: context.tenant) if per_tenant else InMemoryTaskStore()
        handler = DefaultRequestHandler(agent_executor=self.echo, task_store=store, agent_card=card,
                                        extended_agent_card=extended)
        self.handler = handler
        if self.grpc_server:
            # The SDK's own gRPC servicer, over the same handler as the HTTP routes.
            a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), self.grpc_server)
        app = Starlette(routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/", enable_v0_3_compat="0.3" in versions),
            # Mounted rather than given as a prefix: the SDK's server puts a tenant before
            # its prefix (`/{tenant}/rest/...`), its client after (`/rest/{tenant}/...`),
            # as A2A's `/{tenant}/` under the interface's URL says.
            Mount("/rest", routes=create_rest_routes(handler)),
        ])
        if gzip:
            from starlette.middleware.gzip import GZipMiddleware
            app.add_middleware(GZipMiddleware, minimum_size=1)
        self.server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            if self.grpc_server:
                self.loop.run_until_complete(self.grpc_server.start())
            self.loop.call_soon(started.set)
            self.loop.run_until_complete(self.server.serve(sockets=[sock]))
            if self.grpc_server:
                # No grace: an open stream (a subscription) would hold the stop up.
                self.loop.run_until_complete(self.grpc_server.stop(None))
            # Every task of the SDK ends on this loop, before it closes: a task left
            # pending would run its cleanup later, from the garbage collector, on no
            # loop at all, and hang the interpreter's exit.
            self.loop.run_until_complete(self.handler.aclose())
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        started.wait(30)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


async def _grpc_server() -> tuple[grpc.aio.Server, int]:
    """A gRPC server made on the running loop, bound to a free port on 127.0.0.1."""
    server = grpc.aio.server()
    return server, server.add_insecure_port("127.0.0.1:0")
