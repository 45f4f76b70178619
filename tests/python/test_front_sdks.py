"""The front in front of plain echo agents on the other official SDKs: @a2a-js/sdk
(TypeScript, on express) and a2a-go, each with no kit and no change, on both bindings
they serve (JSON-RPC at ``/``, HTTP+JSON under ``/rest``), driven by a2a-sdk's own
client. The agents answer ``echo: <text> <the metadata they were sent, as JSON>``, so
what reached them is read from their answers. (test_front.py does the same, and more,
with an a2a-sdk agent.)

scripts/test.sh installs the TypeScript agent's packages and builds the Go agent; with
CI set, a missing one fails rather than skips."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading

import httpx
import pytest
from a2a.types.a2a_pb2 import TASK_STATE_INPUT_REQUIRED, GetTaskRequest

from conftest import ROOT, start_server_line
from test_front import BINDINGS, EXTENSION, Session, last_status, run

AGENTS = {
    "typescript": (["node", str(ROOT / "tests/agents/typescript/echo-agent.mjs")],
                   ROOT / "tests/agents/typescript/node_modules"),
    "go": ([os.environ.get("A2A_COMMANDS_GO_ECHO_AGENT", str(ROOT / "target/agents/go-echo-agent"))],
           None),
}


def _missing(kind: str) -> str | None:
    command, needs = AGENTS[kind]
    if kind == "go" and not os.path.exists(command[0]):
        return f"{command[0]} is not built (scripts/test.sh builds it)"
    if needs is not None and not needs.exists():
        return f"{needs} is missing (npm ci --prefix tests/agents/typescript)"
    return None


def start_agent(kind: str, lines_wanted: int, **env: str):
    """Starts the `kind` echo agent (skipped, or failed with CI set, when it is not
    built) and returns it with the first `lines_wanted` lines it prints (its URL, and
    with gRPC on its gRPC address): readiness is the lines themselves."""
    why = _missing(kind)
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    command, _ = AGENTS[kind]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, env={**os.environ, **env})
    lines: "queue.Queue[str | None]" = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    printed = [lines.get(timeout=60) for _ in range(lines_wanted)]  # a bound against a hang
    if not all(printed):
        raise RuntimeError(f"the {kind} echo agent exited: {proc.stderr.read()}")
    return proc, printed


@pytest.fixture(scope="module", params=sorted(AGENTS))
def sdk_agent(request):
    proc, (url,) = start_agent(request.param, 1)
    yield request.param, url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def sdk_front(tmp_path_factory, sdk_agent):
    kind, url = sdk_agent
    proc, serving = start_server_line(
        tmp_path_factory.mktemp(f"front-{kind}"),
        "--front-upstream", url,
        "--front-listen", "127.0.0.1:0",
        "--front-default-role", "assignee",
    )
    yield kind, f"http://{serving['front_addr']}"
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def sent_metadata(text: str) -> dict:
    """The metadata an echo agent says it was sent (the JSON after its echo)."""
    return json.loads(text[text.index(" {"):]) if " {" in text else {}


def test_the_card_is_the_agent_s_with_the_commands_and_the_front_s_urls(sdk_front):
    _, url = sdk_front
    card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=30).json()
    assert card["name"] == "echo"
    entry = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION]
    assert len(entry) == 1 and entry[0]["required"] is False
    assert [c["name"] for c in entry[0]["params"]["commands"]][:4] == ["model", "effort", "sub-task", "status"]
    urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert urls == {"JSONRPC": url, "HTTP+JSON": f"{url}/rest"}


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_plain_messages_pass_and_commands_are_answered_by_the_front(sdk_front, binding, streaming):
    kind, url = sdk_front

    async def go():
        async with Session(url, binding, streaming) as session:
            events = await session.send(f"hello {kind}")
            agent_task, context_id, state, text, _ = last_status(events)
            assert state == TASK_STATE_INPUT_REQUIRED
            assert text.startswith(f"echo: hello {kind}"), text

            # A command as a new task's first message: the front's task.
            events = await session.send("/status")
            task_id, _, state, text, metadata = last_status(events)
            assert task_id.startswith("front-") and state == TASK_STATE_INPUT_REQUIRED
            assert "awaiting-next-message" in text and metadata == {"command": "status"}

            # A command on the agent's task: its state as the agent keeps it, settings kept.
            events = await session.send("/model gpt-x-mini", agent_task, context_id)
            got, _, state, _, metadata = last_status(events)
            assert got == agent_task and state == TASK_STATE_INPUT_REQUIRED
            assert metadata == {"command": "model"}
            # The next plain message reaches the agent with the settings chosen.
            events = await session.send("after model", agent_task, context_id)
            got, _, _, text, _ = last_status(events)
            assert got == agent_task and text.startswith("echo: after model"), text
            assert sent_metadata(text)[EXTENSION] == {"settings": {"model": "gpt-x-mini"}}
    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_a_task_the_front_made_goes_on_under_its_id_at_the_agent(sdk_front, binding, streaming):
    kind, url = sdk_front

    async def go():
        async with Session(url, binding, streaming) as session:
            events = await session.send("/effort high")
            task_id, context_id, _, _, _ = last_status(events)
            assert task_id.startswith("front-")
            events = await session.send(f"next {kind}", task_id, context_id)
            for _, event in events:
                assert getattr(event, "id", None) == task_id or getattr(event, "task_id", None) == task_id, events
            got, _, state, text, _ = last_status(events)
            assert got == task_id and state == TASK_STATE_INPUT_REQUIRED
            assert text.startswith(f"echo: next {kind}"), text
            assert sent_metadata(text)[EXTENSION] == {"settings": {"effort": "high"}}
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            assert task.id == task_id
            assert f"next {kind}" in [m.parts[0].text for m in task.history]
            events = await session.send("/status", task_id, context_id)
            got, _, _, text, _ = last_status(events)
            assert got == task_id and "high" in text, text
    run(go())
