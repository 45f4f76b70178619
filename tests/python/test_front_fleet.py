"""The front in fleet mode through an etcd outage (issue 49, point 0): two sidecars'
fronts before one a2a-sdk echo agent, their records in a real etcd. With every etcd
member killed, the agent's traffic goes on: plain messages on the agent's tasks reach
it (with the settings a sidecar's copy holds), a front task a sidecar knows is
followed up and read; only a command that must write a record is refused, naming
etcd, and never reaches the agent as text. When etcd returns, commands work again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid

import httpx
import pytest

from conftest import free_port, health_status, start_server_line
from front_agent import Agent

EXTENSION = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
V1 = {"A2A-Version": "1.0"}


class Etcd:
    """One etcd member on loopback (so killing it kills every member), its data kept
    in `data` so that it can come back with what it had."""

    def __init__(self, data) -> None:
        if shutil.which("etcd") is None:
            if os.environ.get("CI"):
                pytest.fail("etcd is missing (.ci/run installs etcd-server)")
            pytest.skip("etcd is not installed")
        self.data = data
        self.client, self.peer = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.client}"
        self.proc = None
        self.start()

    def start(self) -> None:
        peer = f"http://127.0.0.1:{self.peer}"
        self.proc = subprocess.Popen(
            ["etcd", "--name", "m1", "--data-dir", str(self.data),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"m1={peer}", "--initial-cluster-state", "new"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 60  # a bound against a hang; readiness is /health
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).json().get("health") == "true":
                    return
            except (httpx.HTTPError, ValueError):
                pass
            assert self.proc.poll() is None, "etcd exited"
            assert time.monotonic() < deadline, "etcd did not become healthy"
            time.sleep(0.05)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


def send(url: str, text: str, task_id: str = "", context_id: str = "") -> dict:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id:
        message["taskId"] = task_id
    if context_id:
        message["contextId"] = context_id
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    answer = httpx.post(url, json=body, headers=V1, timeout=30).json()
    if "error" in answer:
        return answer
    return answer["result"].get("task") or answer["result"].get("message")


def get_task(url: str, task_id: str) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    return httpx.post(url, json=body, headers=V1, timeout=30).json()


def text_of(task: dict) -> str:
    return task["status"]["message"]["parts"][0]["text"]


@pytest.fixture
def fleet(tmp_path):
    etcd = Etcd(tmp_path / "etcd")
    agent = Agent()
    sidecars = []
    for name in ("a", "b"):
        proc, serving = start_server_line(
            tmp_path / name, "--front-upstream", agent.url, "--front-listen", "127.0.0.1:0",
            "--front-default-role", "assignee", "--fleet-etcd-endpoints", etcd.url,
            "--fleet-timeout-ms", "2000", "--fleet-member-name", name)
        sidecars.append((proc, f"http://{serving['front_addr']}"))
        # Serving is said before the fleet's registry is first read: ready (SERVING
        # overall, as the kubelet asks) once it is, and the front once it has a card.
        deadline = time.monotonic() + 30
        while (health_status(serving["health_addr"], "") != 1
               or health_status(serving["health_addr"], "a2a.commands.v1.Front") != 1):
            assert time.monotonic() < deadline, f"sidecar {name} never turned SERVING"
            time.sleep(0.05)
    yield etcd, agent, [url for _, url in sidecars]
    for proc, _ in sidecars:
        proc.terminate()
        proc.wait(timeout=30)
    agent.stop()
    if etcd.proc.poll() is None:
        etcd.kill()


def test_the_agent_s_traffic_flows_through_an_etcd_outage(fleet):
    etcd, agent, (a, b) = fleet
    # Before: a task at the agent with settings chosen through A, a front task made
    # through A and followed up through B (which joins it to the agent's task).
    start = send(a, "start")
    assert text_of(send(a, "/effort low", start["id"], start["contextId"])).startswith("Effort")
    made = send(a, "/model gpt-x-mini")
    joined = send(b, "next", made["id"], made["contextId"])
    assert joined["id"] == made["id"], joined

    etcd.kill()

    # Concurrent traffic through both fronts while every member is down.
    results: dict[str, object] = {}

    def plain_on_agent_task(url: str, n: int) -> None:
        results[f"plain-{url}-{n}"] = send(url, f"during {n}", start["id"], start["contextId"])

    def follow_up(n: int) -> None:
        results[f"follow-{n}"] = send(b, f"follow {n}", made["id"], made["contextId"])

    threads = [threading.Thread(target=plain_on_agent_task, args=(url, n)) for url in (a, b) for n in range(3)]
    threads += [threading.Thread(target=follow_up, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for key, answer in results.items():
        assert "error" not in answer, (key, answer)
        assert text_of(answer).startswith("echo: "), (key, answer)
    # Through A, whose copy holds the settings it chose, the agent was sent them.
    sent = [m for t, m in zip(agent.echo.seen, agent.echo.metadata) if t.startswith("during")]
    assert any(m.get(EXTENSION) == {"settings": {"effort": "low"}} for m in sent), sent
    # A front task B knows is read, under the front's id.
    task = get_task(b, made["id"])
    assert task["result"]["id"] == made["id"], task
    # The agent's own task is read from the agent.
    assert get_task(b, start["id"])["result"]["id"] == start["id"]
    # A command that changes nothing runs; one that must write is refused, naming etcd,
    # and never reaches the agent as text.
    status = send(a, "/status", start["id"], start["contextId"])
    assert text_of(status).startswith("Task "), status
    seen = len(agent.echo.seen)
    refused = send(a, "/model gpt-y")
    assert "error" in refused and "etcd" in refused["error"]["message"], refused
    refused = send(b, "/effort high", start["id"], start["contextId"])
    assert "error" in refused and "etcd" in refused["error"]["message"], refused
    assert len(agent.echo.seen) == seen, "a refused command reached the agent"

    # etcd back, with what it had: commands write again, through either sidecar.
    etcd.start()
    deadline = time.monotonic() + 60  # a bound against a hang; the condition is the answer
    while True:
        again = send(a, "/model gpt-y")
        if "error" not in again:
            break
        assert time.monotonic() < deadline, again
        time.sleep(0.2)
    assert get_task(b, again["id"])["result"]["id"] == again["id"]
