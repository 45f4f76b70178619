"""The front: the sidecar in front of a plain a2a-sdk echo agent (no kit, no change),
driven by a2a-sdk's own client over JSON-RPC and HTTP+JSON, streaming and not.
Commands are answered by the front; everything else reaches the agent untouched."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    ROLE_USER,
    TASK_STATE_INPUT_REQUIRED,
    GetTaskRequest,
    Message,
    Part,
    SendMessageRequest,
    Task,
)
from google.protobuf import json_format

from conftest import start_server_line
from front_agent import Agent

EXTENSION = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
BINDINGS = ["JSONRPC", "HTTP+JSON"]


@pytest.fixture(scope="module")
def agent():
    running = Agent()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def front(tmp_path_factory, agent):
    proc, serving = start_server_line(
        tmp_path_factory.mktemp("front"),
        "--front-upstream", agent.url,
        "--front-listen", "127.0.0.1:0",
        "--front-default-role", "assignee",
    )
    yield proc, serving
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def front_url(front) -> str:
    return f"http://{front[1]['front_addr']}"


class Session:
    """One a2a-sdk client of the front, on one binding, streaming or not."""

    def __init__(self, url: str, binding: str, streaming: bool):
        self.url, self.binding, self.streaming = url, binding, streaming

    async def __aenter__(self):
        self.http = httpx.AsyncClient(timeout=30)
        config = ClientConfig(streaming=self.streaming, httpx_client=self.http,
                              supported_protocol_bindings=[self.binding])
        self.client = await create_client(self.url, config)
        return self

    async def __aexit__(self, *exc):
        await self.client.close()
        await self.http.aclose()

    async def send(self, text: str, task_id: str = "", context_id: str = ""):
        message = Message(message_id=str(uuid.uuid4()), role=ROLE_USER, parts=[Part(text=text)],
                          task_id=task_id, context_id=context_id)
        events = []
        async for response in self.client.send_message(SendMessageRequest(message=message)):
            kind = response.WhichOneof("payload")
            events.append((kind, getattr(response, kind)))
        return events


def last_status(events):
    kind, last = events[-1]
    status = last.status
    task_id = last.id if isinstance(last, Task) else last.task_id
    text = "\n".join(p.text for p in status.message.parts)
    return task_id, last.context_id, status.state, text, json_format.MessageToDict(status.message.metadata)


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_card_is_the_agent_s_with_the_commands_and_the_front_s_urls(front, agent):
    url = front_url(front)
    card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=30).json()
    assert card["name"] == "echo"
    entry = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION]
    assert len(entry) == 1 and entry[0]["required"] is False
    names = [c["name"] for c in entry[0]["params"]["commands"]]
    assert names[:4] == ["model", "effort", "sub-task", "status"]
    urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert urls == {"JSONRPC": url, "HTTP+JSON": f"{url}/rest"}


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_a_plain_message_reaches_the_agent_untouched(front, agent, binding, streaming):
    async def go():
        async with Session(front_url(front), binding, streaming) as session:
            events = await session.send(f"hello {binding} {streaming}")
            _, _, state, text, _ = last_status(events)
            assert state == TASK_STATE_INPUT_REQUIRED
            assert text.startswith(f"echo: hello {binding} {streaming}")
    run(go())
    assert f"hello {binding} {streaming}" in agent.echo.seen


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_status_as_a_first_message_is_answered_by_the_front(front, agent, binding, streaming):
    seen_before = list(agent.echo.seen)

    async def go():
        async with Session(front_url(front), binding, streaming) as session:
            events = await session.send("/status")
            task_id, context_id, state, text, metadata = last_status(events)
            assert state == TASK_STATE_INPUT_REQUIRED
            assert "State: INPUT_REQUIRED · awaiting-next-message" in text, text
            assert metadata == {"command": "status"}
            # The task the front made is there to read.
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            assert task.id == task_id and task.context_id == context_id
            assert task.status.state == TASK_STATE_INPUT_REQUIRED
    run(go())
    assert agent.echo.seen == seen_before, "the command never reached the agent"


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_command_on_the_agent_s_task_keeps_its_state_and_settings_stick(front, agent, binding):
    async def go():
        async with Session(front_url(front), binding, False) as session:
            events = await session.send("start")
            task_id, context_id, state, _, _ = last_status(events)
            events = await session.send("/model gpt-x-mini", task_id, context_id)
            got_id, _, state, text, metadata = last_status(events)
            assert got_id == task_id and state == TASK_STATE_INPUT_REQUIRED
            assert metadata == {"command": "model"}
            events = await session.send("/status", task_id, context_id)
            _, _, _, text, _ = last_status(events)
            assert "gpt-x-mini" in text, text
    run(go())


def test_an_unregistered_command_is_an_ordinary_message(front, agent):
    async def go():
        async with Session(front_url(front), "JSONRPC", False) as session:
            events = await session.send("/nonsense here")
            _, _, _, text, _ = last_status(events)
            assert text.startswith("echo: /nonsense here")
    run(go())


def test_a_prompt_command_reaches_the_agent_as_its_expansion(front, agent, stubs):
    import grpc
    _, commands_pb2, commands_pb2_grpc = stubs
    channel = grpc.insecure_channel(front[1]["addr"])
    api = commands_pb2_grpc.CommandServiceStub(channel)
    api.Register(commands_pb2.RegisterRequest(
        spec=commands_pb2.CommandSpec(name="review", description="Review", argument_hint="<file>"),
        prompt=commands_pb2.PromptBinding(template="Please review $ARGUMENTS carefully."),
    ))
    channel.close()

    async def go():
        async with Session(front_url(front), "JSONRPC", False) as session:
            events = await session.send("/review main.rs")
            _, _, _, text, _ = last_status(events)
            assert text.startswith("echo: Please review main.rs carefully."), text
            sent = agent.echo.metadata[-1]
            assert sent["command"] == "review" and sent["originalText"] == "/review main.rs"
    run(go())


def test_the_extension_is_echoed_when_a_client_activates_it(front):
    url = front_url(front)
    answer = httpx.get(f"{url}/.well-known/agent-card.json", headers={"A2A-Extensions": EXTENSION}, timeout=30)
    assert EXTENSION in answer.headers.get("a2a-extensions", "")
    plain = httpx.get(f"{url}/.well-known/agent-card.json", timeout=30)
    assert "a2a-extensions" not in plain.headers


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_a_task_the_front_made_goes_on_under_its_id_at_the_agent(front, agent, binding, streaming):
    async def go():
        async with Session(front_url(front), binding, streaming) as session:
            events = await session.send("/model gpt-x-mini")
            task_id, context_id, _, _, _ = last_status(events)
            assert task_id.startswith("front-")
            # The next plain message reaches the agent, which makes its own task; the
            # client goes on seeing the front's id, in every answer and event.
            events = await session.send(f"next {binding} {streaming}", task_id, context_id)
            for kind, event in events:
                assert (event.id if isinstance(event, Task) else event.task_id) == task_id, events
            got_id, _, state, text, _ = last_status(events)
            assert got_id == task_id and state == TASK_STATE_INPUT_REQUIRED
            assert text.startswith(f"echo: next {binding} {streaming}")
            # The agent was sent the task's chosen settings under the extension's URI.
            assert agent.echo.metadata[-1][EXTENSION] == {"settings": {"model": "gpt-x-mini"}}
            # And again: the same task at the agent.
            events = await session.send("again", task_id, context_id)
            assert last_status(events)[0] == task_id
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            assert task.id == task_id
            data = json_format.MessageToDict(task.metadata)["a2a-commands"]
            assert data["settings"] == {"model": "gpt-x-mini"}
            assert "subState" not in data, "the awaited message ended the wait"
            history = [m.parts[0].text for m in task.history]
            assert f"next {binding} {streaming}" in history and "again" in history
            # A command on it now reads the agent's task, and keeps its id.
            events = await session.send("/status", task_id, context_id)
            got_id, _, _, text, _ = last_status(events)
            assert got_id == task_id and "gpt-x-mini" in text, text
    run(go())
