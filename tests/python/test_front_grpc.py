"""A2A's gRPC binding through the front (issue 44, point 1): the a2a-go and @a2a-js/sdk
echo agents serving `lf.a2a.v1.A2AService` on a port of their own, the front in front
of each (gRPC on the front's own port, named by the card it serves), and a2a-sdk's own
gRPC client.
Commands are answered by the front in the same shapes as on the other bindings; plain
calls reach the agent; the agent's status codes come back unchanged.

scripts/test.sh builds the Go agent and installs the TypeScript one's packages; with CI
set, a missing one fails rather than skips."""

from __future__ import annotations

import asyncio
import uuid

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    ROLE_USER,
    TASK_STATE_CANCELED,
    TASK_STATE_INPUT_REQUIRED,
    TASK_STATE_SUBMITTED,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    SendMessageRequest,
    SubscribeToTaskRequest,
)
from google.protobuf import json_format

from conftest import start_server_line
from test_front import EXTENSION
from test_front_sdks import AGENTS, start_agent


@pytest.fixture(scope="module", params=sorted(AGENTS))
def agent(request):
    proc, (url, grpc_address) = start_agent(request.param, 2, ECHO_AGENT_GRPC="1")
    yield url, grpc_address
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def front(tmp_path_factory, agent):
    url, _ = agent
    proc, serving = start_server_line(
        tmp_path_factory.mktemp("front-grpc"),
        "--front-upstream", url,
        "--front-listen", "127.0.0.1:0",
        "--front-default-role", "assignee",
    )
    yield serving["front_addr"]
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def said(text: str, task_id: str = "", context_id: str = "") -> Message:
    return Message(message_id=str(uuid.uuid4()), role=ROLE_USER, parts=[Part(text=text)],
                   task_id=task_id, context_id=context_id)


# A 1.0 client says so (without it @a2a-js/sdk's server takes a call for 0.3).
V1 = [("a2a-version", "1.0")]


class Stub:
    """A2AService over one channel, every call sent as A2A 1.0 with a deadline."""

    def __init__(self, address: str):
        self.channel = grpc.insecure_channel(address)
        self.stub = a2a_pb2_grpc.A2AServiceStub(self.channel)

    def __getattr__(self, method):
        call = getattr(self.stub, method)
        return lambda request: call(request, timeout=30, metadata=V1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.channel.close()


def stub(address: str):
    client = Stub(address)
    return client, client


def test_the_card_names_the_front_for_grpc(front, agent):
    card = httpx.get(f"http://{front}/.well-known/agent-card.json").json()
    urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert urls["GRPC"] == front, urls
    assert any(e["uri"] == EXTENSION for e in card["capabilities"]["extensions"])


def test_a_command_is_answered_and_a_plain_message_reaches_the_agent(front):
    channel, a2a = stub(front)
    with channel:
        made = a2a.SendMessage(SendMessageRequest(message=said("/model gpt-x-mini"))).task
        assert made.id.startswith("front-") and made.status.state == TASK_STATE_INPUT_REQUIRED
        assert made.status.message.parts[0].text == "Model set to gpt-x-mini."
        assert json_format.MessageToDict(made.status.message.metadata) == {"command": "model"}
        # The front's own task, read over gRPC.
        read = a2a.GetTask(GetTaskRequest(id=made.id))
        assert read.id == made.id
        assert json_format.MessageToDict(read.metadata)["a2a-commands"]["settings"] == {"model": "gpt-x-mini"}
        # Listed first (the agent does not hold it yet); an agent that lists only for
        # authenticated callers (a2a-go) refuses, and its refusal comes back as it gave it.
        try:
            listed = a2a.ListTasks(ListTasksRequest(context_id=made.context_id))
            assert [t.id for t in listed.tasks] == [made.id]
        except grpc.RpcError as refused:
            assert refused.code() == grpc.StatusCode.UNAUTHENTICATED
        # A plain message on it reaches the agent, under the front's id, with the settings.
        answer = a2a.SendMessage(SendMessageRequest(message=said("next over grpc", made.id, made.context_id)))
        task_id = answer.task.id if answer.HasField("task") else answer.message.task_id
        assert task_id == made.id, answer
        text = (answer.task.status.message if answer.HasField("task") else answer.message).parts[0].text
        assert text.startswith("echo: next over grpc") and "gpt-x-mini" in text, text
        # A command on it now reads the agent's task (GetTask over gRPC).
        status = a2a.SendMessage(SendMessageRequest(message=said("/status", made.id, made.context_id))).task
        assert status.id == made.id and "gpt-x-mini" in status.status.message.parts[0].text


def test_a_streamed_command_is_the_task_then_its_status_update(front):
    channel, a2a = stub(front)
    with channel:
        events = list(a2a.SendStreamingMessage(SendMessageRequest(message=said("/status"))))
        assert [e.WhichOneof("payload") for e in events] == ["task", "status_update"]
        assert events[0].task.status.state == TASK_STATE_SUBMITTED
        update = events[1].status_update
        assert update.task_id == events[0].task.id and update.status.state == TASK_STATE_INPUT_REQUIRED
        # Subscribed to and canceled at the front.
        seen = list(a2a.SubscribeToTask(SubscribeToTaskRequest(id=update.task_id)))
        assert [e.WhichOneof("payload") for e in seen] == ["task"]
        canceled = a2a.CancelTask(CancelTaskRequest(id=update.task_id))
        assert canceled.status.state == TASK_STATE_CANCELED


def test_a_plain_stream_passes_message_by_message(front):
    channel, a2a = stub(front)
    with channel:
        events = list(a2a.SendStreamingMessage(SendMessageRequest(message=said("hello stream"))))
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds[-1] == "status_update", kinds
        assert events[-1].status_update.status.message.parts[0].text.startswith("echo: hello stream")


def test_the_agent_s_status_comes_back_unchanged(front, agent):
    _, direct = agent
    for address in (direct, front):
        channel, a2a = stub(address)
        with channel:
            with pytest.raises(grpc.RpcError) as failed:
                a2a.GetTask(GetTaskRequest(id="no-such-task"))
            # Compared between the agent and the front below.
            if address == direct:
                expected = (failed.value.code(), failed.value.details())
            else:
                assert (failed.value.code(), failed.value.details()) == expected


def test_a2a_sdk_s_grpc_client_gets_commands_through_the_front(front):
    async def go():
        config = ClientConfig(streaming=True, supported_protocol_bindings=["GRPC"],
                              grpc_channel_factory=grpc.aio.insecure_channel)
        client = await create_client(f"http://{front}", config)
        try:
            events = [r async for r in client.send_message(SendMessageRequest(message=said("/status")))]
        finally:
            await client.close()
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds == ["task", "status_update"], kinds
        assert events[-1].status_update.status.message.parts[0].text.startswith("Task front-")
    asyncio.run(go())
