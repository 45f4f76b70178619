"""The README's gateway around an echo agent, with the kit (`kit`) or without it (`plain`),
for scripts/bench-kits.sh: serves on 127.0.0.1, port 0, and prints `listening <port>`."""

import asyncio
import socket
import sys

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_status_update_event
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import TASK_STATE_INPUT_REQUIRED, AgentCapabilities, AgentCard, AgentInterface
from starlette.applications import Starlette

from a2a_commands import CommandsCard, CommandsClient, CommandsExecutor


class MyExecutor(AgentExecutor):
    """The task, then the echo, leaving it input-required (as the TypeScript kit's
    examples/echo-gateway.ts and clients/typescript/tools/bench-gateway.mjs do)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await event_queue.enqueue_event(new_text_status_update_event(
            context.task_id, context.context_id, TASK_STATE_INPUT_REQUIRED, f"echo: {context.get_user_input()}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


card = AgentCard(name="echo", description="echo", version="1", capabilities=AgentCapabilities(streaming=True),
                 default_input_modes=["text/plain"], default_output_modes=["text/plain"],
                 supported_interfaces=[AgentInterface(url="http://127.0.0.1/", protocol_binding="JSONRPC",
                                                      protocol_version="1.0")])


async def main(kit: bool) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    # From here on, the README's gateway line for line (the default role included);
    # `kit` decides whether its four kit lines run, else what each replaced.
    store = InMemoryTaskStore()
    executor: AgentExecutor = MyExecutor()
    card_routes = create_agent_card_routes(card)
    if kit:
        commands = CommandsClient()  # the sidecar at $A2A_COMMANDS_ADDR
        executor = CommandsExecutor(MyExecutor(), commands, store)
        card_routes = create_agent_card_routes(card, card_modifier=CommandsCard(commands))
    handler = DefaultRequestHandler(agent_executor=executor, task_store=store, agent_card=card)
    app = Starlette(routes=[*card_routes, *create_jsonrpc_routes(handler, "/")])
    print("listening", sock.getsockname()[1], flush=True)
    await uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False)).serve(sockets=[sock])


asyncio.run(main(sys.argv[1] == "kit"))
