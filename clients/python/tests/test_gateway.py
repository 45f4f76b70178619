"""An a2a-sdk gateway with the kit, driven by a2a-sdk's own client (streaming and not)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.types import a2a_pb2 as sdk
from a2a.types.a2a_pb2 import TASK_STATE_INPUT_REQUIRED, TASK_STATE_SUBMITTED
from conftest import ROOT, Reply, User
from gateway import EchoExecutor, Gateway
from google.protobuf import json_format

from a2a_commands import EXTENSION_URI, METADATA_KEY, Command, ParticipantRole

SELECTABLE = "Selectable: gpt-x, gpt-x-mini"
ACCEPTED = "Accepted: low, medium, high"


async def _started(user: User) -> Reply:
    """A task the echo agent started, waiting for input."""
    reply = await user.send("hello")
    assert (reply.text, reply.state) == ("echo: hello", TASK_STATE_INPUT_REQUIRED)
    return reply


def _data(task: object) -> dict:
    return json_format.MessageToDict(task.metadata).get(METADATA_KEY, {})  # type: ignore[attr-defined]


async def test_model_shows_the_catalogue_and_leaves_the_task_alone(alice: User) -> None:
    task = await _started(alice)
    reply = await alice.send("/model", task)
    assert reply.text == f"Model: gpt-x (default)\n{SELECTABLE}"
    assert reply.metadata == {"command": "model"}
    assert (reply.task_id, reply.state) == (task.task_id, TASK_STATE_INPUT_REQUIRED)
    assert reply.kinds == (["status_update"] if alice.streaming else ["task"])
    stored = await alice.task(task.task_id)
    assert stored.status.state == TASK_STATE_INPUT_REQUIRED
    assert stored.status.message.parts[0].text == reply.text
    assert "command" not in stored.metadata and "task_ref" not in stored.metadata
    assert [m.parts[0].text for m in stored.history] == ["hello", "echo: hello", "/model"]


async def test_model_set_then_status_shows_it(alice: User) -> None:
    task = await _started(alice)
    assert (await alice.send("/model gpt-x-mini", task)).text == "Model set to gpt-x-mini."
    status = await alice.send("/status", task)
    assert status.text.splitlines()[1:4] == [
        "State: INPUT_REQUIRED", "Model: gpt-x-mini", "Effort: provider default"
    ]
    assert _data(await alice.task(task.task_id)) == {"settings": {"model": "gpt-x-mini"}}
    refused = await alice.send("/model gpt-y", task)
    assert refused.text == f"refused: not a selectable model. {SELECTABLE}"


async def test_effort_high(alice: User) -> None:
    task = await _started(alice)
    assert (await alice.send("/effort high", task)).text == "Effort set to high."
    assert (await alice.send("/effort", task)).text == f"Effort: high\n{ACCEPTED}"
    assert (await alice.send("/model gpt-x", task)).text == "Model set to gpt-x."
    assert _data(await alice.task(task.task_id))["settings"] == {"model": "gpt-x", "effort": "high"}


async def test_sub_task_is_created_in_the_sdk_store(alice: User) -> None:
    task = await _started(alice)
    reply = await alice.send("/sub-task Draft the API section", task)
    child = f"{task.task_id}.1"
    assert reply.text == f"Starting a sub-task.\nCreated sub-task {child}."
    assert reply.metadata == {"command": "sub-task", "task_ref": child}
    created = await alice.task(child)
    assert created.context_id == task.context_id
    assert created.status.state == TASK_STATE_SUBMITTED
    assert _data(created) == {"name": "Draft the API section", "parentId": task.task_id, "goal": "Draft the API section"}
    assert [m.parts[0].text for m in created.history] == ["Draft the API section"]
    assert list(created.history[0].reference_task_ids) == [task.task_id]
    parent = await alice.task(task.task_id)
    assert _data(parent) == {"subTasks": [child]}
    assert parent.status.state == TASK_STATE_INPUT_REQUIRED
    assert "task_ref" not in parent.metadata
    second = await alice.send("/sub-task Write the tests", task)
    assert second.metadata["task_ref"] == f"{task.task_id}.2"
    status = await alice.send("/status", task)
    assert status.text.splitlines()[-3:] == [
        "Sub-tasks:", f"- {child} · SUBMITTED", f"- {task.task_id}.2 · SUBMITTED"
    ]


async def test_an_anonymous_watcher_may_read_but_not_change(anonymous: User) -> None:
    task = await _started(anonymous)
    refused = await anonymous.send("/model gpt-x-mini", task)
    assert refused.text == "refused: a watcher may not change the task with /model"
    assert refused.metadata == {"command": "model"}
    assert (await anonymous.send("/sub-task x", task)).text.startswith("refused: a watcher")
    assert (await anonymous.send("/model", task)).text.startswith("Model: gpt-x (default)")
    assert _data(await anonymous.task(task.task_id)) == {}


async def test_unknown_commands_and_plain_text_reach_the_agent(alice: User) -> None:
    task = await _started(alice)
    assert (await alice.send("/unknown x", task)).text == "echo: /unknown x"
    assert (await alice.send("plain text", task)).text == "echo: plain text"
    assert (await alice.send(" /model", task)).text == "echo:  /model"


async def test_a_command_as_the_first_message(alice: User) -> None:
    """The reference's lifecycle: the task is parked input-required, awaiting the next message."""
    reply = await alice.send("/model gpt-x-mini")
    assert reply.text == "Model set to gpt-x-mini."
    assert reply.state == TASK_STATE_INPUT_REQUIRED
    assert reply.kinds == (["task", "status_update"] if alice.streaming else ["task"])
    stored = await alice.task(reply.task_id)
    assert stored.status.state == TASK_STATE_INPUT_REQUIRED
    assert stored.status.message.parts[0].text == "Model set to gpt-x-mini."
    assert [m.parts[0].text for m in stored.history] == ["/model gpt-x-mini"]
    assert _data(stored) == {"settings": {"model": "gpt-x-mini"}, "subState": "awaiting-next-message"}
    assert "command" not in stored.metadata


async def test_the_card_lists_a_command_registered_while_running(gateway: Gateway, alice: User) -> None:
    async with httpx.AsyncClient() as http:
        resolver = A2ACardResolver(http, gateway.url)
        names = _card_commands(await resolver.get_agent_card())
        assert names[:4] == ["model", "effort", "sub-task", "status"]
        name = f"deploy-{alice.streaming}".lower()
        registered = await gateway.commands.register(
            Command(name=name, description="Deploy this task", argument_hint="<env>"), override=True
        )
        try:
            await asyncio.wait_for(gateway.card.wait_for_revision(registered.revision), 30)
            assert name in _card_commands(await resolver.get_agent_card())
            task = await _started(alice)
            assert (await alice.send(f"/{name} staging", task)).text == f"command /{name} has no handler"
        finally:
            await gateway.commands.unregister(name)


async def test_a_command_for_other_roles_is_refused_before_the_agent(gateway: Gateway, alice: User) -> None:
    name = f"admin-only-{alice.streaming}".lower()
    await gateway.commands.register(
        Command(name=name, description="Admins only"), allowed_roles=[ParticipantRole.ADMIN], override=True
    )
    try:
        task = await _started(alice)
        refused = await alice.send(f"/{name} now", task)
        assert (refused.text, refused.metadata) == (f"refused: an assignee may not run /{name}", {"command": name})
        assert refused.state == TASK_STATE_INPUT_REQUIRED
    finally:
        await gateway.commands.unregister(name)


async def test_a_hidden_command_runs_but_is_not_on_the_card(gateway: Gateway, alice: User) -> None:
    name = f"hidden-{alice.streaming}".lower()
    registered = await gateway.commands.register(
        Command(name=name, description="Not listed"), hidden=True, override=True
    )
    try:
        await asyncio.wait_for(gateway.card.wait_for_revision(registered.revision), 30)
        async with httpx.AsyncClient() as http:
            assert name not in _card_commands(await A2ACardResolver(http, gateway.url).get_agent_card())
        task = await _started(alice)
        assert (await alice.send(f"/{name} x", task)).text == f"command /{name} has no handler"
    finally:
        await gateway.commands.unregister(name)


def _card_commands(card: object) -> list[str]:
    entries = [e for e in card.capabilities.extensions if e.uri == EXTENSION_URI]  # type: ignore[attr-defined]
    assert len(entries) == 1
    params = json_format.MessageToDict(entries[0].params)
    return [c["name"] for c in params["commands"]]


LIFECYCLE = json.loads((ROOT / "docs" / "vectors" / "lifecycle.json").read_text())
KINDS = {"task": "task", "status_update": "statusUpdate", "message": "message", "artifact_update": "artifactUpdate"}


async def run_scenario(user: User, echo: EchoExecutor, steps: list[dict[str, Any]]) -> None:
    """Runs one scenario's steps of docs/vectors/lifecycle.json with a2a-sdk's client."""
    echo_seen = echo.seen
    task: Reply | None = None
    for step in steps:
        seen = len(echo_seen)
        reply = await user.send(step["send"], task if step["task"] == "same" else None)
        if step["task"] == "same":
            assert task is not None and reply.task_id == task.task_id
        task = reply
        assert reply.text == step["reply"].replace("{taskId}", reply.task_id), step
        assert reply.state == sdk.TaskState.Value(step["state"]), step
        if "events" in step:
            wanted = step["events"]["streaming" if user.streaming else "nonStreaming"]
            assert [KINDS[k] for k in reply.kinds] == wanted, step
        assert (len(echo_seen) > seen) is step["reachesAgent"], step
        if "agentSaw" in step:
            assert echo_seen[-1] == step["agentSaw"], step
        for key, value in step.get("agentMetadata", {}).items():
            assert echo.last is not None
            assert json_format.MessageToDict(echo.last.metadata)[key] == value, step
        if "taskData" in step:
            assert _data(await user.task(reply.task_id)) == step["taskData"], step


@pytest.mark.parametrize("scenario", LIFECYCLE["scenarios"], ids=lambda s: s["name"])
async def test_lifecycle(gateway: Gateway, alice: User, scenario: dict[str, Any]) -> None:
    for command in scenario.get("register", []):
        spec = Command(command["name"], command["description"], command.get("argumentHint", ""))
        await gateway.commands.register(spec, override=True, prompt=command["prompt"])
    await run_scenario(alice, gateway.echo, scenario["steps"])
