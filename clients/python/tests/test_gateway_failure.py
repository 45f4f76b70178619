"""The gateway's own failure before Execute (docs/vectors/gateway-failure.json): with a
role resolver that raises, a message that may be a command fails as a2a-sdk fails any,
never reaching the agent and never answered with the fallback reply; a message that
cannot be a command never asks the resolver."""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.types.a2a_pb2 import TASK_STATE_FAILED
from conftest import ROOT, Sidecar, connect_user
from gateway import start_gateway

CASES = json.loads((ROOT / "docs" / "vectors" / "gateway-failure.json").read_text())["cases"]


def failing_role(_context: Any) -> int:
    raise RuntimeError("the gateway's role store is down")


@pytest.mark.parametrize("case", CASES, ids=[c["send"] for c in CASES])
async def test_the_gateways_own_failure_fails_the_message(sidecar: Sidecar, case: dict[str, Any]) -> None:
    gateway = await start_gateway(sidecar.addr, role=failing_role)
    user = await connect_user(gateway, "alice", False)
    try:
        seen = len(gateway.echo.seen)
        try:
            reply = await user.send(case["send"])
            failed, text = reply.state == TASK_STATE_FAILED, reply.text
        except Exception as error:  # the SDK's client raising is how a failed send shows
            failed, text = True, str(error)
        assert failed is case["fails"], text
        assert "commands are unavailable" not in text
        if "reply" in case:
            assert text == case["reply"]
        assert (len(gateway.echo.seen) > seen) is case["reachesAgent"]
    finally:
        await gateway.stop()
