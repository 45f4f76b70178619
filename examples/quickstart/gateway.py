"""Quick start gateway: an echo agent served by a2a-sdk over JSON-RPC, with slash commands.

The agent answers every message with ``echo: <text>``. The kit (a2a_commands) sits in
front of it: ``/status``, ``/model``, ``/effort``, ``/sub-task`` and every command
registered with the a2a-commands sidecar are answered by the sidecar and never reach
the agent. Run it from the repository's root, with the sidecar running:

    .venv/bin/python examples/quickstart/gateway.py

It serves http://127.0.0.1:$PORT (default 8080) and finds the sidecar at
$A2A_COMMANDS_ADDR (default http://127.0.0.1:50051). README.md, "Quick start".
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator

import uvicorn
from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette

from a2a_commands import CommandsCard, CommandsClient, CommandsExecutor, TaskData

PORT = int(os.environ.get("PORT", "8080"))
URL = f"http://127.0.0.1:{PORT}"


class EchoExecutor(AgentExecutor):
    """The agent itself: echoes the user's text, then waits for the next message."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Answers ``echo: <text>``; the first message of a task creates the task."""
        assert context.message is not None and context.task_id and context.context_id
        if context.current_task is None:
            task = new_task_from_user_message(context.message)
            # /status shows a task's name; the kit keeps it in the task's metadata.
            task.metadata.update(TaskData(name="echo").metadata())
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        # Input-required rather than completed: a completed task takes no more messages,
        # and the client sends /status on the same task next.
        reply = updater.new_agent_message([Part(text=f"echo: {context.get_user_input()}")])
        await updater.requires_input(reply)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancels the task: the echo has no work in flight to stop."""
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


card = AgentCard(
    name="echo",
    description="Echoes what it is sent; slash commands by a2a-commands",
    version="1.0",
    supported_interfaces=[AgentInterface(url=URL, protocol_binding="JSONRPC", protocol_version="1.0")],
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="echo", name="Echo", description="Echoes the text it is sent", tags=["echo"])],
)

store = InMemoryTaskStore()
commands = CommandsClient()  # the sidecar at $A2A_COMMANDS_ADDR, else http://127.0.0.1:50051
card_modifier = CommandsCard(commands)  # adds the commands extension entry to the card
executor = CommandsExecutor(EchoExecutor(), commands, store)  # commands to the sidecar, the rest to the echo
handler = DefaultRequestHandler(agent_executor=executor, task_store=store, agent_card=card)


@contextlib.asynccontextmanager
async def lifespan(_app: Starlette) -> AsyncIterator[None]:
    """Closes the kit's card watcher and gRPC channel at shutdown (Ctrl-C), inside the
    event loop that opened them, so nothing is left pending."""
    yield
    await handler.aclose()
    await card_modifier.aclose()
    await commands.close()


app = Starlette(
    routes=[
        *create_agent_card_routes(card, card_modifier=card_modifier),
        *create_jsonrpc_routes(handler, "/"),
    ],
    lifespan=lifespan,
)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT)
