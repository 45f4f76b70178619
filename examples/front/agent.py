"""A plain A2A agent, as you may already have one: a2a-sdk 1.3, no a2a-commands code.

It answers every message with ``echo: <text>`` and leaves its task waiting for the next
message. It serves A2A's JSON-RPC binding and its agent card on http://127.0.0.1:$PORT
(default 9999). README.md, "Quick start: the front", puts the sidecar in front of it.
"""

import os

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_status_update_event
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import (
    TASK_STATE_INPUT_REQUIRED,
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)
from starlette.applications import Starlette

PORT = int(os.environ.get("PORT", "9999"))
URL = f"http://127.0.0.1:{PORT}"


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:  # a task's first message makes the task
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await event_queue.enqueue_event(new_text_status_update_event(
            context.task_id, context.context_id, TASK_STATE_INPUT_REQUIRED,
            f"echo: {context.get_user_input()}",
        ))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


card = AgentCard(
    name="echo",
    description="Echoes what it is sent",
    version="1.0",
    supported_interfaces=[AgentInterface(url=URL, protocol_binding="JSONRPC", protocol_version="1.0")],
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="echo", name="Echo", description="Echoes the text it is sent", tags=["echo"])],
)
handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT)
