"""The gateway shown in README.md, run as written (with `my_agent` being the echo agent)."""

from __future__ import annotations

import asyncio
import pathlib
import re
import socket
import sys
import types

import httpx
import pytest
import uvicorn
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from conftest import Sidecar, User, free_address
from gateway import EchoExecutor
from test_gateway import _card_commands

from a2a_commands import EXTENSION_URI

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def readme_gateway() -> str:
    """The first Python block of README.md's "Slash commands in an existing gateway"."""
    section = README.read_text().split("## Slash commands in an existing gateway", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match
    return match.group(1)


def test_the_readme_gateway_is_small() -> None:
    lines = [line for line in readme_gateway().splitlines() if line.strip()]
    assert len(lines) <= 16
    assert len([line for line in lines if "# +" in line]) == 4  # the lines the kit adds


def _readme_app(monkeypatch: pytest.MonkeyPatch, url: str, sidecar_addr: str) -> dict:
    """The README's gateway block, run as written with `my_agent` the echo agent."""
    my_agent = types.ModuleType("my_agent")
    my_agent.MyExecutor = EchoExecutor  # type: ignore[attr-defined]
    my_agent.card = AgentCard(  # type: ignore[attr-defined]
        name="echo", description="Echoes what it is sent", version="1.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echo", tags=["x"])],
    )
    monkeypatch.setitem(sys.modules, "my_agent", my_agent)
    monkeypatch.setenv("A2A_COMMANDS_ADDR", f"http://{sidecar_addr}")  # the canonical form
    gateway: dict = {}
    exec(compile(readme_gateway(), str(README), "exec"), gateway)
    return gateway


async def test_the_readme_gateway_serves_from_its_first_second(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No sidecar at start: plain messages reach the agent and commands get the fallback
    at once; the sidecar started later brings the card's commands and the commands."""
    sidecar_addr = free_address()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    gateway = _readme_app(monkeypatch, url, sidecar_addr)
    server = uvicorn.Server(uvicorn.Config(gateway["app"], lifespan="off", log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    http = httpx.AsyncClient(timeout=60)
    user = User(await create_client(url, ClientConfig(httpx_client=http)), http, False)
    sidecar = Sidecar(tmp_path / "data", addr=sidecar_addr)
    try:
        card = await A2ACardResolver(http, url).get_agent_card()
        assert [e for e in card.capabilities.extensions if e.uri == EXTENSION_URI] == []
        task = await user.send("hello")
        assert task.text == "echo: hello"
        assert (await user.send("/status", task)).text == "/status failed: commands are unavailable right now"

        sidecar.start()
        await gateway["commands"].wait_ready(timeout=30)
        # The card watcher reconnects with backoff (at most 5 s between tries).
        for _ in range(300):
            card = await A2ACardResolver(http, url).get_agent_card()
            if any(e.uri == EXTENSION_URI for e in card.capabilities.extensions):
                break
            await asyncio.sleep(0.1)
        assert "status" in _card_commands(card)
        assert (await user.send("/status", task)).text.startswith("Task ")
    finally:
        await user.close()
        server.should_exit = True
        await serving
        await gateway["handler"].aclose()
        await gateway["commands"].close()
        if sidecar.proc is not None:
            sidecar.stop()


async def test_the_readme_gateway_runs(sidecar: Sidecar, monkeypatch: pytest.MonkeyPatch) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    gateway = _readme_app(monkeypatch, url, sidecar.addr)

    server = uvicorn.Server(uvicorn.Config(gateway["app"], lifespan="off", log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    http = httpx.AsyncClient(timeout=60)
    user = User(await create_client(url, ClientConfig(httpx_client=http)), http, True)
    try:
        assert "sub-task" in _card_commands(await A2ACardResolver(http, url).get_agent_card())
        task = await user.send("hello")
        assert task.text == "echo: hello"
        assert (await user.send("/model", task)).text.startswith("Model: gpt-x (default)")
        refused = await user.send("/effort high", task)  # anonymous: a watcher by default
        assert refused.text == "refused: a watcher may not change the task with /effort"
    finally:
        await user.close()
        server.should_exit = True
        await serving
        await gateway["handler"].aclose()
        await gateway["commands"].close()
