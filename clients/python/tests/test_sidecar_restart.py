"""The sidecar stopped and restarted while the gateway runs (README: "When the sidecar is away")."""

from __future__ import annotations

import asyncio
import pathlib

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.types.a2a_pb2 import TASK_STATE_INPUT_REQUIRED
from conftest import Sidecar, connect_user, free_address
from gateway import start_gateway
from test_completion import _complete
from test_gateway import LIFECYCLE, _card_commands, run_scenario

from a2a_commands import Command

FAILED = "failed: commands are unavailable right now"


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "non-streaming"])
async def test_sidecar_stopped_and_restarted(tmp_path: pathlib.Path, streaming: bool) -> None:
    # An open WatchSpecs stream holds SIGTERM's drain to its end (--drain-seconds, 10 s by
    # default): keep it short so the stop is quick.
    sidecar = Sidecar(tmp_path / "data", "--drain-seconds", "2", addr=free_address()).start()
    gateway = await start_gateway(sidecar.addr)
    alice = await connect_user(gateway, "alice", streaming)
    http = httpx.AsyncClient()
    try:
        card = A2ACardResolver(http, gateway.url)
        assert "status" in _card_commands(await card.get_agent_card())
        task = await alice.send("hello")
        assert (await alice.send("/model gpt-x-mini", task)).text == "Model set to gpt-x-mini."

        sidecar.stop()
        # A command (registered or not) is answered with a failure and never reaches the agent.
        down = await alice.send("/model", task)
        assert (down.text, down.metadata) == (f"/model {FAILED}", {"command": "model"})
        assert down.state == TASK_STATE_INPUT_REQUIRED
        assert (await alice.send("/unknown x", task)).text == f"/unknown {FAILED}"
        # An ordinary message still reaches the agent.
        assert (await alice.send("still there?", task)).text == "echo: still there?"
        # A command as a task's first message too: the task is created, awaiting the next message.
        first = await alice.send("/status")
        assert (first.text, first.state) == (f"/status {FAILED}", TASK_STATE_INPUT_REQUIRED)
        assert (await alice.task(first.task_id)).status.state == TASK_STATE_INPUT_REQUIRED
        # The shared vector of the same (docs/vectors/lifecycle.json, sidecarDown).
        for scenario in LIFECYCLE["sidecarDown"]:
            await run_scenario(alice, gateway.echo, scenario["steps"])
        # Completion is an internal error, said plainly.
        error = (await _complete(alice, gateway.url, {"text": "/mo"}))["error"]
        assert (error["code"], error["message"]) == (-32603, "commands are unavailable right now")
        # The card keeps the last commands it saw.
        assert "status" in _card_commands(await card.get_agent_card())

        sidecar.start()  # on the same address, with the same registry
        await gateway.commands.wait_ready(timeout=30)
        back = await alice.send("/model", task)
        assert back.text == "Model: gpt-x-mini\nSelectable: gpt-x, gpt-x-mini"
        # The card watcher reconnects by itself and follows new registrations.
        registered = await gateway.commands.register(Command(name="after-restart", description="x"))
        await asyncio.wait_for(gateway.card.wait_for_revision(registered.revision), 30)
        assert "after-restart" in _card_commands(await card.get_agent_card())
    finally:
        await http.aclose()
        await alice.close()
        await gateway.stop()
        if sidecar.proc is not None:
            sidecar.stop()
