"""A2A's gRPC binding through the front (issue 44, point 1): the a2a-go echo agent
serving `lf.a2a.v1.A2AService` on a port of its own, the front in front of it (gRPC
on the front's own port, named by the card it serves), and a2a-sdk's own gRPC client.
Commands are answered by the front in the same shapes as on the other bindings; plain
calls reach the agent; the agent's status codes come back unchanged.

scripts/test.sh builds the Go agent; with CI set, a missing one fails rather than
skips."""

from __future__ import annotations

import asyncio
import os
import queue
import subprocess
import threading
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

from conftest import ROOT, start_server_line
from test_front import EXTENSION

AGENT = os.environ.get("A2A_COMMANDS_GO_ECHO_AGENT", str(ROOT / "target/agents/go-echo-agent"))


@pytest.fixture(scope="module")
def agent():
    if not os.path.exists(AGENT):
        why = f"{AGENT} is not built (scripts/test.sh builds it)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    proc = subprocess.Popen([AGENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, env={**os.environ, "ECHO_AGENT_GRPC": "1"})
    lines: "queue.Queue[str | None]" = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    url, grpc_address = lines.get(timeout=60), lines.get(timeout=60)  # readiness: the lines
    if not url or not grpc_address:
        raise RuntimeError(f"the Go echo agent exited: {proc.stderr.read()}")
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


def stub(address: str):
    channel = grpc.insecure_channel(address)
    return channel, a2a_pb2_grpc.A2AServiceStub(channel)


def test_the_card_names_the_front_for_grpc(front, agent):
    card = httpx.get(f"http://{front}/.well-known/agent-card.json", timeout=30).json()
    urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert urls["GRPC"] == front, urls
    assert any(e["uri"] == EXTENSION for e in card["capabilities"]["extensions"])


def test_a_command_is_answered_and_a_plain_message_reaches_the_agent(front):
    channel, a2a = stub(front)
    with channel:
        made = a2a.SendMessage(SendMessageRequest(message=said("/model gpt-x-mini")), timeout=30).task
        assert made.id.startswith("front-") and made.status.state == TASK_STATE_INPUT_REQUIRED
        assert made.status.message.parts[0].text == "Model set to gpt-x-mini."
        assert json_format.MessageToDict(made.status.message.metadata) == {"command": "model"}
        # The front's own task, read over gRPC.
        read = a2a.GetTask(GetTaskRequest(id=made.id), timeout=30)
        assert read.id == made.id
        assert json_format.MessageToDict(read.metadata)["a2a-commands"]["settings"] == {"model": "gpt-x-mini"}
        # a2a-go lists tasks for authenticated callers only: its refusal comes back as
        # the agent gave it, not replaced by the front's listing.
        with pytest.raises(grpc.RpcError) as refused:
            a2a.ListTasks(ListTasksRequest(context_id=made.context_id), timeout=30)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # A plain message on it reaches the agent, under the front's id, with the settings.
        answer = a2a.SendMessage(SendMessageRequest(message=said("next over grpc", made.id, made.context_id)),
                                 timeout=30)
        task_id = answer.task.id if answer.HasField("task") else answer.message.task_id
        assert task_id == made.id, answer
        text = (answer.task.status.message if answer.HasField("task") else answer.message).parts[0].text
        assert text.startswith("echo: next over grpc") and "gpt-x-mini" in text, text
        # A command on it now reads the agent's task (GetTask over gRPC).
        status = a2a.SendMessage(SendMessageRequest(message=said("/status", made.id, made.context_id)),
                                 timeout=30).task
        assert status.id == made.id and "gpt-x-mini" in status.status.message.parts[0].text


def test_a_streamed_command_is_the_task_then_its_status_update(front):
    channel, a2a = stub(front)
    with channel:
        events = list(a2a.SendStreamingMessage(SendMessageRequest(message=said("/status")), timeout=30))
        assert [e.WhichOneof("payload") for e in events] == ["task", "status_update"]
        assert events[0].task.status.state == TASK_STATE_SUBMITTED
        update = events[1].status_update
        assert update.task_id == events[0].task.id and update.status.state == TASK_STATE_INPUT_REQUIRED
        # Subscribed to and canceled at the front.
        seen = list(a2a.SubscribeToTask(SubscribeToTaskRequest(id=update.task_id), timeout=30))
        assert [e.WhichOneof("payload") for e in seen] == ["task"]
        canceled = a2a.CancelTask(CancelTaskRequest(id=update.task_id), timeout=30)
        assert canceled.status.state == TASK_STATE_CANCELED


def test_a_plain_stream_passes_message_by_message(front):
    channel, a2a = stub(front)
    with channel:
        events = list(a2a.SendStreamingMessage(SendMessageRequest(message=said("hello stream")), timeout=30))
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds[-1] == "status_update", kinds
        assert events[-1].status_update.status.message.parts[0].text.startswith("echo: hello stream")


def test_the_agent_s_status_comes_back_unchanged(front, agent):
    _, direct = agent
    for address in (direct, front):
        channel, a2a = stub(address)
        with channel:
            with pytest.raises(grpc.RpcError) as failed:
                a2a.GetTask(GetTaskRequest(id="no-such-task"), timeout=30)
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
