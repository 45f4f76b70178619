"""Talks to an A2A agent through the front, with a2a-sdk's own client.

    .venv/bin/python examples/front/client.py             # the quick start's four messages
    .venv/bin/python examples/front/client.py hi /effort  # any messages, in order

The messages go to one task (the first one makes it); each is printed after ``> ``,
followed by the reply. The front is http://$FRONT_ADDR (default 127.0.0.1:8080): the
client reads the agent card there and follows it. README.md, "Quick start: the front".
"""

import asyncio
import os
import sys
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_message_text
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

FRONT = f"http://{os.environ.get('FRONT_ADDR', '127.0.0.1:8080')}"
MESSAGES = ["hello", "/status", "/model gpt-x-mini", "hello again"]


async def main(texts: list[str]) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(FRONT, ClientConfig(streaming=False, httpx_client=http))
        task_id = context_id = ""
        for text in texts:
            message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)],
                              task_id=task_id, context_id=context_id)
            # Not streaming: one answer, the task (its status message is the reply), or a
            # bare message from an agent that makes no task.
            async for answer in client.send_message(SendMessageRequest(message=message)):
                if answer.HasField("task"):
                    task_id, context_id = answer.task.id, answer.task.context_id
                    reply = answer.task.status.message
                else:
                    reply = answer.message
                print(f"> {text}\n{get_message_text(reply)}", flush=True)
        await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or MESSAGES))
