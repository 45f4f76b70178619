"""Tenants through the front (issue 63): A2A 1.0's optional `tenant` (JSON-RPC params,
HTTP+JSON's `/{tenant}/…` paths, gRPC's request field) reaches the agent on every call
the front makes for a request, and what the front keeps is its tenant's alone. The agent
keeps tasks per tenant (a2a-sdk's store owned by the request's tenant); each check that
can be made straight against it is made there too, so that the front is held to what
the agent does."""

from __future__ import annotations

import uuid

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    ROLE_USER,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    SendMessageRequest,
)

from conftest import start_server_line
from front_agent import Agent

BINDINGS = ["jsonrpc", "rest"]
HEADERS = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def agent():
    agent = Agent(per_tenant=True, serve_grpc=True)
    yield agent
    agent.stop()


@pytest.fixture(scope="module")
def front(tmp_path_factory, agent):
    proc, serving = start_server_line(
        tmp_path_factory.mktemp("front"),
        "--front-upstream", agent.url,
        "--front-listen", "127.0.0.1:0",
        "--front-default-role", "assignee",
    )
    yield f"http://{serving['front_addr']}"
    proc.terminate()
    assert proc.wait(timeout=30) == 0


class Tenant:
    """One tenant's calls on one binding of one server (the front, or the agent)."""

    def __init__(self, base: str, binding: str, tenant: str):
        self.base, self.binding, self.tenant = base, binding, tenant

    def _rpc(self, method: str, params: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "tenant": self.tenant}}
        answer = httpx.post(f"{self.base}/", json=body, headers=HEADERS, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def send(self, text: str, task_id: str | None = None) -> dict:
        """The task the answer carries (or the error)."""
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
        if task_id:
            message["taskId"] = task_id
        if self.binding == "jsonrpc":
            answer = self._rpc("SendMessage", {"message": message})
            assert "result" in answer, answer
            return answer["result"]["task"]
        answer = httpx.post(f"{self.base}/rest/{self.tenant}/message:send", json={"message": message},
                            headers=HEADERS, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()["task"]

    def get(self, task_id: str) -> dict | None:
        """The task, or None when it is an unknown id."""
        if self.binding == "jsonrpc":
            answer = self._rpc("GetTask", {"id": task_id})
            if "error" in answer:
                assert answer["error"]["code"] == -32001, answer
                return None
            return answer["result"]
        answer = httpx.get(f"{self.base}/rest/{self.tenant}/tasks/{task_id}", headers=HEADERS, timeout=30)
        if answer.status_code == 404:
            return None
        assert answer.status_code == 200, answer.text
        return answer.json()

    def listed(self) -> list[str]:
        if self.binding == "jsonrpc":
            answer = self._rpc("ListTasks", {})
            assert "result" in answer, answer
            tasks = answer["result"].get("tasks", [])
        else:
            answer = httpx.get(f"{self.base}/rest/{self.tenant}/tasks", headers=HEADERS, timeout=30)
            assert answer.status_code == 200, answer.text
            tasks = answer.json().get("tasks", [])
        return [t["id"] for t in tasks]


def reply(task: dict) -> tuple[str, dict]:
    message = task["status"]["message"]
    return "".join(p.get("text", "") for p in message["parts"]), message.get("metadata", {})


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_agent_keeps_each_tenant_s_tasks_apart(agent, binding):
    """What the front is held to: straight at the agent, a task is its tenant's alone."""
    acme, globex = Tenant(agent.url, binding, "acme"), Tenant(agent.url, binding, "globex")
    task = acme.send("hello")
    assert acme.get(task["id"])["id"] == task["id"]
    assert globex.get(task["id"]) is None
    assert task["id"] in acme.listed() and task["id"] not in globex.listed()


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_command_on_a_tenant_s_task_is_answered_in_that_tenant(front, agent, binding):
    """/status and /model on the agent's task of a tenant: the front reads the task from
    the agent in the request's tenant (before, it asked in none: "task not found")."""
    acme = Tenant(front, binding, "acme")
    task = acme.send("start")
    text, metadata = reply(acme.send("/model gpt-x-mini", task["id"]))
    assert metadata == {"command": "model"}, (text, metadata)
    text, metadata = reply(acme.send("/status", task["id"]))
    assert metadata == {"command": "status"} and "gpt-x-mini" in text, (text, metadata)
    assert task["id"] in acme.listed()
    # Another tenant does not see the agent's task, through the front as straight at it.
    assert Tenant(front, binding, "globex").get(task["id"]) is None
    assert Tenant(agent.url, binding, "globex").get(task["id"]) is None


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_task_the_front_made_is_its_tenant_s_alone(front, binding):
    """A task made by a command under `acme` is not read nor listed under `globex` (nor
    under no tenant), as the agent keeps its own."""
    acme, globex = Tenant(front, binding, "acme"), Tenant(front, binding, "globex")
    made = acme.send("/model gpt-x")
    assert made["id"].startswith("front-"), made
    assert acme.get(made["id"])["id"] == made["id"]
    assert made["id"] in acme.listed()
    assert globex.get(made["id"]) is None
    assert made["id"] not in globex.listed()
    # Nor under no tenant at all.
    none = Tenant(front, binding, "")
    assert none.get(made["id"]) is None
    # Once a message takes it to the agent, it is still acme's alone.
    acme.send("now at the agent", made["id"])
    assert acme.get(made["id"])["id"] == made["id"]
    assert globex.get(made["id"]) is None and made["id"] not in globex.listed()


def test_over_grpc_the_tenant_field_is_kept_as_on_the_other_bindings(front, agent):
    """gRPC's `tenant` request field: the front's own GetTask carries it, and the tasks
    it makes are that tenant's alone."""
    channel = grpc.insecure_channel(front.removeprefix("http://"))
    a2a = a2a_pb2_grpc.A2AServiceStub(channel)
    meta = [("a2a-version", "1.0")]

    def send(text: str, tenant: str, task_id: str = ""):
        message = Message(message_id=str(uuid.uuid4()), role=ROLE_USER, parts=[Part(text=text)], task_id=task_id)
        return a2a.SendMessage(SendMessageRequest(message=message, tenant=tenant), timeout=30, metadata=meta).task

    def found(task_id: str, tenant: str) -> bool:
        try:
            return a2a.GetTask(GetTaskRequest(id=task_id, tenant=tenant), timeout=30, metadata=meta).id == task_id
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.NOT_FOUND, error
            return False

    def listed(tenant: str) -> list[str]:
        return [t.id for t in a2a.ListTasks(ListTasksRequest(tenant=tenant), timeout=30, metadata=meta).tasks]

    with channel:
        task = send("start", "acme")
        status = send("/status", "acme", task.id)
        assert status.id == task.id and "State:" in status.status.message.parts[0].text, status
        assert found(task.id, "acme") and not found(task.id, "globex")
        made = send("/model gpt-x", "acme")
        assert made.id.startswith("front-")
        assert found(made.id, "acme") and made.id in listed("acme")
        assert not found(made.id, "globex") and made.id not in listed("globex")


def test_a_version_the_front_does_not_serve_is_refused_in_each_binding_s_shape(front):
    """A call the front answers itself, named in a version it does not serve, is not
    guessed at (before, a task the front made was read back whatever the version): A2A's
    VersionNotSupported, in each binding's shape."""
    made = Tenant(front, "jsonrpc", "").send("/model gpt-x")["id"]
    body = {"jsonrpc": "2.0", "id": "v-1", "method": "GetTask", "params": {"id": made}}
    answer = httpx.post(f"{front}/", json=body, headers={"A2A-Version": "2.0"}, timeout=30)
    assert answer.status_code == 200
    assert answer.json()["id"] == "v-1" and answer.json()["error"]["code"] == -32009, answer.text
    answer = httpx.get(f"{front}/rest/tasks/{made}", headers={"A2A-Version": "0.2"}, timeout=30)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["status"] == "FAILED_PRECONDITION"
    assert error["details"][0]["reason"] == "VERSION_NOT_SUPPORTED", error
    # The versions it serves are served, and the card is any version's.
    for version in ["1.0", "1", "1.1"]:
        answer = httpx.get(f"{front}/rest/tasks/{made}", headers={"A2A-Version": version}, timeout=30)
        assert answer.status_code == 200 and answer.json()["id"] == made, answer.text
    assert httpx.get(f"{front}/.well-known/agent-card.json", headers={"A2A-Version": "2.0"},
                     timeout=30).status_code == 200
