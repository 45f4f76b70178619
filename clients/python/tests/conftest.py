"""Fixtures: the real a2a-commands binary, the gateway under test, and a2a-sdk clients."""

from __future__ import annotations

import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    ROLE_USER,
    GetTaskRequest,
    Message,
    Part,
    SendMessageRequest,
    Task,
)
from google.protobuf import json_format

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests" / "python"))

from gateway import Gateway, start_gateway
from ports import free_port

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _binary() -> str:
    path = os.environ.get("A2A_COMMANDS_BIN") or str(ROOT / "target" / "debug" / "a2a-commands")
    assert os.path.exists(path), f"{path} is missing: build it, or point A2A_COMMANDS_BIN at it"
    return path


def free_address() -> str:
    """A free 127.0.0.1 address for a sidecar started there later or again (see
    tests/python/ports.py: below the ephemeral range, so nothing takes it between)."""
    return f"127.0.0.1:{free_port()}"


class Sidecar:
    """The real `a2a-commands serve`, on `addr` (127.0.0.1:0 unless given; a sidecar
    started again needs `free_address()`) first and on the same address after."""

    def __init__(self, data_dir: pathlib.Path, *args: str, addr: str = "127.0.0.1:0") -> None:
        self.data_dir = data_dir
        self.args = args
        self.addr = addr
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> Sidecar:
        """Starts the binary and waits for its "serving" log line (which gives the address)."""
        self.proc = subprocess.Popen(
            [_binary(), "serve", "--listen", self.addr, "--health-listen", "off", "--log-format", "json",
             "--data-dir", str(self.data_dir), *self.args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def pump(stream: Any) -> None:
            with stream:
                for line in stream:
                    lines.put(line)
            lines.put(None)

        self._pump = threading.Thread(target=pump, args=(self.proc.stderr,), daemon=True)
        self._pump.start()
        seen = []
        while True:
            line = lines.get(timeout=60)  # a bound against a hang; readiness is the line itself
            if line is None:
                raise RuntimeError(f"a2a-commands exited before serving: {seen}")
            seen.append(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("message") == "serving":
                self.addr = event["addr"]
                return self

    def pause(self) -> None:
        """SIGSTOP, and waits until every thread has stopped (Linux's /proc says `T` for
        each): kill(2) queues the signal, and each thread stops as it next runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        tasks = pathlib.Path(f"/proc/{self.proc.pid}/task")

        def all_stopped() -> bool:
            for task in tasks.iterdir() if tasks.exists() else []:
                try:
                    if (task / "stat").read_text().split(") ")[1][0] != "T":
                        return False
                except (OSError, IndexError):
                    pass  # the thread is gone
            return True

        deadline = time.monotonic() + 10  # a bound against a hang
        while not all_stopped():
            assert time.monotonic() < deadline, f"the sidecar (pid {self.proc.pid}) did not stop"
            time.sleep(0.005)

    def resume(self) -> None:
        """SIGCONT."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """SIGTERM; the service drains and exits 0."""
        assert self.proc is not None
        self.proc.terminate()
        assert self.proc.wait(timeout=30) == 0
        self._pump.join(timeout=30)  # it closes stderr at its end
        self.proc = None


@pytest.fixture(scope="session")
def sidecar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    server = Sidecar(tmp_path_factory.mktemp("data")).start()
    yield server
    server.stop()


@pytest.fixture()
async def gateway(sidecar: Sidecar) -> AsyncIterator[Gateway]:
    running = await start_gateway(sidecar.addr)
    yield running
    await running.stop()


@dataclass
class Reply:
    """What a client saw for one message: the last status (or the task) and its message."""

    task_id: str
    context_id: str
    state: int
    text: str
    metadata: dict[str, Any]
    kinds: list[str] = field(default_factory=list)


class User:
    """An a2a-sdk client of the gateway, as one user (``None``: anonymous)."""

    def __init__(self, client: Client, http: httpx.AsyncClient, streaming: bool) -> None:
        self.client = client
        self.http = http
        self.streaming = streaming

    async def send(self, text: str, task: Reply | None = None) -> Reply:
        message = Message(message_id=str(uuid.uuid4()), role=ROLE_USER, parts=[Part(text=text)])
        if task is not None:
            message.task_id, message.context_id = task.task_id, task.context_id
        kinds, last = [], None
        async for response in self.client.send_message(SendMessageRequest(message=message)):
            kind = response.WhichOneof("payload")
            kinds.append(kind)
            last = getattr(response, kind)
        if isinstance(last, Task):
            task_id, context_id, status = last.id, last.context_id, last.status
        else:
            task_id, context_id, status = last.task_id, last.context_id, last.status
        reply = status.message
        return Reply(
            task_id, context_id, status.state, "\n".join(p.text for p in reply.parts),
            json_format.MessageToDict(reply.metadata), kinds,
        )

    async def task(self, task_id: str) -> Task:
        return await self.client.get_task(GetTaskRequest(id=task_id))

    async def close(self) -> None:
        await self.client.close()
        await self.http.aclose()


async def connect_user(gateway: Gateway, name: str | None, streaming: bool) -> User:
    headers = {"authorization": f"Bearer {name}"} if name else {}
    http = httpx.AsyncClient(headers=headers, timeout=60)
    return User(await create_client(gateway.url, ClientConfig(streaming=streaming, httpx_client=http)), http, streaming)


@pytest.fixture(params=[True, False], ids=["streaming", "non-streaming"])
async def alice(request: pytest.FixtureRequest, gateway: Gateway) -> AsyncIterator[User]:
    """An authenticated user (assignee of her tasks by default), both send modes."""
    user = await connect_user(gateway, "alice", request.param)
    yield user
    await user.close()


@pytest.fixture(params=[True, False], ids=["streaming", "non-streaming"])
async def anonymous(request: pytest.FixtureRequest, gateway: Gateway) -> AsyncIterator[User]:
    """An unauthenticated user (a watcher by default), both send modes."""
    user = await connect_user(gateway, None, request.param)
    yield user
    await user.close()
