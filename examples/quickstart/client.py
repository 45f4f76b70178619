"""Quick start client: sends messages to the quick start gateway with a2a-sdk's client.

    .venv/bin/python examples/quickstart/client.py               # hello, then /status
    .venv/bin/python examples/quickstart/client.py hi /model     # any messages, in order

Every message goes to the same task (the first one creates it); each is printed after
``> ``, followed by the reply. The gateway is http://127.0.0.1:$PORT (default 8080).
README.md, "Quick start".
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers import get_message_text
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

URL = f"http://127.0.0.1:{os.environ.get('PORT', '8080')}"


async def send(client: Client, text: str, task: tuple[str, str] | None) -> tuple[str, tuple[str, str]]:
    """Sends ``text`` (on ``task``, a (task id, context id) pair, when given); returns the
    reply's text and the task it went to."""
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task is not None:
        message.task_id, message.context_id = task
    reply = ""
    # Not streaming (see main), so the answer is one response: the task, whose status
    # message is the reply (a gateway may also answer with a bare message).
    async for response in client.send_message(SendMessageRequest(message=message)):
        if response.HasField("task"):
            task = (response.task.id, response.task.context_id)
            reply = get_message_text(response.task.status.message)
        elif response.HasField("message"):
            reply = get_message_text(response.message)
    assert task is not None, f"the gateway answered {text!r} without a task"
    return reply, task


async def main(texts: list[str]) -> None:
    """Sends each text in turn on one task and prints it with its reply."""
    async with httpx.AsyncClient(timeout=30) as http:
        # The URL is the card's: create_client reads /.well-known/agent-card.json there.
        client = await create_client(URL, ClientConfig(streaming=False, httpx_client=http))
        try:
            task = None
            for text in texts:
                reply, task = await send(client, text, task)
                print(f"> {text}\n{reply}", flush=True)
        finally:
            await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or ["hello", "/status"]))
