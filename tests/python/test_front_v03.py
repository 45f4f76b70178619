"""A2A 0.3 through the front (issue 44, point 2): a plain a2a-sdk echo agent whose card
says 0.3 (the SDK's compatibility layer serving `message/send`, `tasks/get`, ...), a
0.3 client (raw JSON-RPC, and a2a-sdk's own client reading the 0.3 card), commands
answered by the front in 0.3's JSON only: `kind` on every object, lower-case states,
`final: false` on the reply's status update. Never a 1.0 name in a 0.3 answer."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import ROLE_USER, TASK_STATE_INPUT_REQUIRED, Message, Part, SendMessageRequest

from conftest import start_server_line
from front_agent import Agent

EXTENSION = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"


@pytest.fixture(scope="module")
def agent():
    running = Agent(versions=("0.3",))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def front(tmp_path_factory, agent):
    proc, serving = start_server_line(
        tmp_path_factory.mktemp("front03"),
        "--front-upstream", agent.url,
        "--front-listen", "127.0.0.1:0",
        "--front-default-role", "assignee",
    )
    yield f"http://{serving['front_addr']}"
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def message(text: str, task_id: str | None = None, context_id: str | None = None) -> dict:
    said = {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user",
            "parts": [{"kind": "text", "text": text}]}
    if task_id:
        said["taskId"] = task_id
    if context_id:
        said["contextId"] = context_id
    return said


def call(url: str, method: str, params: dict) -> dict:
    answer = httpx.post(url, json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert "TASK_STATE_" not in answer.text and "ROLE_" not in answer.text, answer.text
    return answer.json()


def stream(url: str, params: dict) -> list[dict]:
    body = {"jsonrpc": "2.0", "id": 8, "method": "message/stream", "params": params}
    events = []
    with httpx.stream("POST", url, json=body, timeout=30) as answer:
        for line in answer.iter_lines():
            if line.startswith("data:"):
                assert "TASK_STATE_" not in line, line
                events.append(json.loads(line[5:])["result"])
    return events


def test_the_card_keeps_0_3_and_lists_the_commands(front, agent):
    card = httpx.get(f"{front}/.well-known/agent-card.json", timeout=30).json()
    assert card["protocolVersion"] == "0.3" and card["url"].startswith(front)
    ours = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION]
    assert ours and any(c["name"] == "status" for c in ours[0]["params"]["commands"])


def test_a_command_as_a_first_message_is_answered_in_0_3(front):
    answer = call(front, "message/send", {"message": message("/status")})
    task = answer["result"]
    assert task["kind"] == "task" and task["id"].startswith("front-")
    assert task["status"]["state"] == "input-required"
    reply = task["status"]["message"]
    assert reply["kind"] == "message" and reply["role"] == "agent"
    assert reply["parts"][0]["kind"] == "text" and reply["parts"][0]["text"].startswith("Task front-")
    assert reply["metadata"] == {"command": "status"}
    # The front's task, read back and canceled in 0.3.
    read = call(front, "tasks/get", {"id": task["id"]})["result"]
    assert read["kind"] == "task" and read["id"] == task["id"]
    assert read["metadata"]["a2a-commands"]["subState"] == "awaiting-next-message"
    canceled = call(front, "tasks/cancel", {"id": task["id"]})["result"]
    assert canceled["status"]["state"] == "canceled"


def test_a_streamed_command_ends_with_a_status_update_that_is_not_final(front):
    events = stream(front, {"message": message("/status")})
    assert [e["kind"] for e in events] == ["task", "status-update"], events
    assert events[0]["status"]["state"] == "submitted"
    update = events[1]
    assert update["final"] is False and update["status"]["state"] == "input-required"
    assert update["status"]["message"]["metadata"] == {"command": "status"}
    assert update["taskId"] == events[0]["id"]


def test_a_follow_up_reaches_the_agent_under_the_front_s_id_with_the_settings(front, agent):
    made = call(front, "message/send", {"message": message("/model gpt-x-mini")})["result"]
    task_id, context_id = made["id"], made["contextId"]
    answer = call(front, "message/send", {"message": message("next in 0.3", task_id, context_id)})["result"]
    assert answer["kind"] == "task" and answer["id"] == task_id, answer
    assert answer["status"]["message"]["parts"][0]["text"].startswith("echo: next in 0.3")
    assert agent.echo.metadata[-1][EXTENSION] == {"settings": {"model": "gpt-x-mini"}}
    assert answer["metadata"]["a2a-commands"]["settings"] == {"model": "gpt-x-mini"}
    # A command on it now: the agent's task (read with tasks/get), the front's id.
    status = call(front, "message/send", {"message": message("/status", task_id, context_id)})["result"]
    assert status["id"] == task_id and status["status"]["state"] == "input-required"
    assert "gpt-x-mini" in status["status"]["message"]["parts"][0]["text"]


def test_a_command_on_the_agent_s_task_keeps_its_state(front):
    plain = call(front, "message/send", {"message": message("hello")})["result"]
    assert not plain["id"].startswith("front-") and plain["status"]["state"] == "input-required"
    events = stream(front, {"message": message("/effort high", plain["id"], plain["contextId"])})
    assert events[-1]["kind"] == "status-update" and events[-1]["final"] is False
    assert events[-1]["status"]["state"] == "input-required"
    assert events[-1]["status"]["message"]["parts"][0]["text"] == "Effort set to high."


def test_a_1_0_request_to_a_0_3_agent_goes_to_the_agent_as_it_came(front):
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "/status"}]}}}
    answer = httpx.post(front, json=body, headers={"A2A-Version": "1.0"}, timeout=30).json()
    # Not answered by the front in a version the agent does not serve: the agent's own
    # answer (this SDK agent still takes 1.0, and echoes the text as a plain message).
    assert "echo: /status" in json.dumps(answer), answer


def test_a2a_sdk_s_client_reads_the_0_3_card_and_gets_the_command_answered(front):
    async def go():
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(front, ClientConfig(streaming=False, httpx_client=http))
            try:
                said = Message(message_id=str(uuid.uuid4()), role=ROLE_USER, parts=[Part(text="/status")])
                events = [r async for r in client.send_message(SendMessageRequest(message=said))]
            finally:
                await client.close()
        task = events[-1].task
        assert task.id.startswith("front-") and task.status.state == TASK_STATE_INPUT_REQUIRED
        assert task.status.message.parts[0].text.startswith("Task front-")
    asyncio.run(go())


def test_an_agent_serving_both_versions_gets_each_client_answered_in_its_own(tmp_path):
    both = Agent(versions=("1.0", "0.3"))
    proc, serving = start_server_line(tmp_path, "--front-upstream", both.url, "--front-listen", "127.0.0.1:0")
    url = f"http://{serving['front_addr']}"
    try:
        v03 = call(url, "message/send", {"message": message("/status")})["result"]
        assert v03["kind"] == "task" and v03["status"]["state"] == "input-required"
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
            "messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "/status"}]}}}
        v10 = httpx.post(url, json=body, headers={"A2A-Version": "1.0"}, timeout=30).json()["result"]["task"]
        assert "kind" not in v10 and v10["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        # And a 0.3 read of the task a 1.0 client made: 0.3's shape.
        read = call(url, "tasks/get", {"id": v10["id"]})["result"]
        assert read["kind"] == "task" and read["status"]["state"] == "input-required"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        both.stop()
