"""A sidecar that hangs instead of dying (paused with SIGSTOP, as a frozen node leaves it):
a command that runs no handler gets the fallback reply within its Execute deadline
(docs/kit-contract.md, section 5), well before an A2A client's usual 30 s timeout, and
never reaches the agent."""

from __future__ import annotations

import asyncio
import pathlib
import signal

import httpx
from a2a.client import A2ACardResolver
from conftest import Sidecar, connect_user
from gateway import start_gateway

from a2a_commands import EXTENSION_URI, NO_HANDLER_DEADLINE

CLIENT_PATIENCE = 20.0
"""What a client waits at the most, here: less than the usual 30 s."""


async def test_a_paused_sidecar_gives_the_fallback_within_the_deadline(tmp_path: pathlib.Path) -> None:
    sidecar = Sidecar(tmp_path / "data", "--drain-seconds", "2").start()
    gateway = await start_gateway(sidecar.addr)
    alice = await connect_user(gateway, "alice", False)
    http = httpx.AsyncClient()
    assert sidecar.proc is not None
    try:
        # The card helper lists the registry, which gives each command its deadline.
        await A2ACardResolver(http, gateway.url).get_agent_card()
        assert gateway.commands.execute_deadline("status") == NO_HANDLER_DEADLINE
        task = await alice.send("hello")
        assert (await alice.send("/status", task)).text.startswith("Task ")

        sidecar.pause()
        hung = await asyncio.wait_for(alice.send("/status", task), CLIENT_PATIENCE)
        assert hung.text == "/status failed: commands are unavailable right now"
        assert not [t for t in gateway.echo.seen if t.startswith("/")]

        sidecar.proc.send_signal(signal.SIGCONT)
        assert (await alice.send("/status", task)).text.startswith("Task ")
    finally:
        sidecar.proc.send_signal(signal.SIGCONT)
        await http.aclose()
        await gateway.stop()
        sidecar.stop()


async def test_a_card_is_served_while_the_sidecar_hangs_at_start(tmp_path: pathlib.Path) -> None:
    """The first card request lists the registry; a sidecar that hangs from the start makes
    it serve the card without the commands within the card's short bound, not 40 s."""
    sidecar = Sidecar(tmp_path / "data", "--drain-seconds", "2").start()
    assert sidecar.proc is not None
    sidecar.pause()
    gateway = await start_gateway(sidecar.addr)
    http = httpx.AsyncClient()
    try:
        card = await asyncio.wait_for(A2ACardResolver(http, gateway.url).get_agent_card(), CLIENT_PATIENCE)
        assert [e for e in card.capabilities.extensions if e.uri == EXTENSION_URI] == []
    finally:
        sidecar.proc.send_signal(signal.SIGCONT)
        await http.aclose()
        await gateway.stop()
        sidecar.stop()
