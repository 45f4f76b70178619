"""The pure parts: conversions, the task-data convention, command syntax, the card entry."""

from __future__ import annotations

import json

import pytest
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2 as sdk
from google.protobuf import json_format

from a2a_commands import (
    METADATA_KEY,
    CommandsCard,
    CommandsClient,
    Plan,
    TaskData,
    command_name,
    end_wait_for_next_message,
    pb,
    task_snapshot,
)
from a2a_commands.convert import (
    event_from_commands,
    event_to_commands,
    extension_from_commands,
    extension_from_json,
    message_from_commands,
    message_to_commands,
)


def test_messages_and_events_round_trip() -> None:
    message = sdk.Message(
        message_id="m-1", context_id="c-1", task_id="t-1", role=sdk.ROLE_USER,
        parts=[sdk.Part(text="/model", metadata={"k": "v"})], metadata={"a": [1, "b"]},
        extensions=["urn:x"], reference_task_ids=["t-0"],
    )
    ours = message_to_commands(message)
    assert isinstance(ours, pb.Message) and ours.parts[0].text == "/model" and ours.role == pb.ROLE_USER
    assert message_from_commands(ours) == message
    event = sdk.TaskStatusUpdateEvent(
        task_id="t-1", context_id="c-1", status=sdk.TaskStatus(state=sdk.TASK_STATE_WORKING, message=message)
    )
    assert event_from_commands(event_to_commands(event)) == event


def test_card_entry_from_json_and_protobuf() -> None:
    text = json.dumps({"uri": "urn:commands", "description": "d", "required": False,
                       "params": {"commands": [{"name": "model", "argument_hint": "[<model>]"}]}})
    entry = extension_from_json(text)
    assert entry.uri == "urn:commands"
    assert json_format.MessageToDict(entry.params)["commands"][0]["name"] == "model"
    ours = pb.AgentExtension(uri="urn:commands", description="d")
    ours.params.update({"commands": []})
    assert extension_from_commands(ours).uri == "urn:commands"


async def test_card_modifier_replaces_the_entry_and_keeps_the_rest() -> None:
    card = sdk.AgentCard(name="a")
    card.capabilities.extensions.add(uri="urn:other")
    card.capabilities.extensions.add(uri="urn:commands", description="stale")
    modifier = CommandsCard(CommandsClient("127.0.0.1:1"))
    assert modifier.apply(card) == card  # nothing known yet: served as is
    await modifier._update(pb.ListSpecsResponse(revision=3, card_extension_json='{"uri": "urn:commands"}'))
    served = modifier.apply(card)
    assert [(e.uri, e.description) for e in served.capabilities.extensions] == [("urn:other", ""), ("urn:commands", "")]
    assert len(card.capabilities.extensions) == 2 and card.capabilities.extensions[1].description == "stale"


def test_task_data_round_trips_through_task_metadata() -> None:
    data = TaskData(name="Docs", model="gpt-x", effort="high", plan=Plan(1, 3), sub_state="awaiting-answer",
                    sub_tasks=["t-1.1", "t-1.2"])
    task = sdk.Task(id="t-1", context_id="c-1", metadata={"other": 1, **data.metadata()})
    assert TaskData.from_task(task) == data
    assert TaskData.from_task(sdk.Task(id="t-2")) == TaskData()
    assert TaskData.from_task(None) == TaskData()
    assert TaskData(model="m").metadata() == {METADATA_KEY: {"settings": {"model": "m"}}}


def test_the_sdk_replaces_the_whole_key_when_an_event_carries_it() -> None:
    """What apply_changes relies on: a2a-sdk merges event metadata with MergeFrom."""
    task = sdk.Task(metadata={"keep": True, **TaskData(sub_tasks=["a"], model="m").metadata()})
    event = sdk.TaskStatusUpdateEvent(metadata=TaskData(sub_tasks=["a", "b"]).metadata())
    task.metadata.MergeFrom(event.metadata)
    assert TaskData.from_task(task) == TaskData(sub_tasks=["a", "b"])
    assert task.metadata["keep"] is True


async def test_the_next_message_ends_a_wait_for_it_and_no_other() -> None:
    """docs/kit-contract.md, section 4: the kit ends awaiting-next-message, never awaiting-answer."""
    store, call = InMemoryTaskStore(), ServerCallContext()
    old_data = {"name": "Docs", "sub_state": "awaiting-next-message", "x": 2}  # the old spelling
    waiting = sdk.Task(id="t-1", context_id="c-1", status=sdk.TaskStatus(state=sdk.TASK_STATE_INPUT_REQUIRED),
                       metadata={"other": 1, METADATA_KEY: old_data})
    assert await end_wait_for_next_message(waiting, store, call)
    # Cleared in the task the agent is handed, the old spelling too, the rest kept; and saved.
    assert json_format.MessageToDict(waiting.metadata) == {"other": 1, METADATA_KEY: {"name": "Docs", "x": 2}}
    assert await store.get("t-1", call) == waiting
    answering = sdk.Task(id="t-2", context_id="c-1", status=sdk.TaskStatus(state=sdk.TASK_STATE_INPUT_REQUIRED),
                         metadata=TaskData(sub_state="awaiting-answer").metadata())
    assert not await end_wait_for_next_message(answering, store, call)
    assert TaskData.from_task(answering).sub_state == "awaiting-answer"
    assert await store.get("t-2", call) is None  # nothing to end, nothing written


def test_snapshot_of_an_sdk_task() -> None:
    data = TaskData(name="Docs", model="gpt-x-mini", plan=Plan(2, 5), sub_state="awaiting-next-message",
                    sub_tasks=["t-1.1", "t-1.2"])
    task = sdk.Task(id="t-1", context_id="c-1", status=sdk.TaskStatus(state=sdk.TASK_STATE_INPUT_REQUIRED),
                    metadata=data.metadata())
    snapshot = task_snapshot(task, {"t-1.1": sdk.TASK_STATE_COMPLETED})
    assert snapshot == pb.TaskSnapshot(
        id="t-1", context_id="c-1", name="Docs", state=pb.TASK_STATE_INPUT_REQUIRED,
        sub_state=pb.SUB_STATE_AWAITING_NEXT_MESSAGE, settings=pb.TaskSettings(model="gpt-x-mini"),
        plan=pb.PlanProgress(steps_done=2, steps_total=5),
        sub_tasks=[pb.SubTaskSnapshot(id="t-1.1", state=pb.TASK_STATE_COMPLETED),
                   pb.SubTaskSnapshot(id="t-1.2", state=pb.TASK_STATE_SUBMITTED)],
    )
    bare = task_snapshot(sdk.Task(id="t-9"))
    assert bare.state == pb.TASK_STATE_SUBMITTED
    assert not bare.HasField("plan") and not bare.settings.HasField("model")


@pytest.mark.parametrize("text,name", [
    ("/model", "model"), ("/model gpt-x", "model"), ("/sub-task a\nb", "sub-task"), ("/model\t", "model"),
    ("/model\x1cx", "model"), ("/unknown-name args", "unknown-name"),
    (" /model", None), ("/Model", None), ("/model!", None), ("/", None), ("//model", None), ("/9lives", None),
    ("model", None),
])
def test_command_syntax(text: str, name: str | None) -> None:
    assert command_name(sdk.Message(parts=[sdk.Part(text=text)])) == name


def test_only_a_single_text_part_can_be_a_command() -> None:
    assert command_name(sdk.Message(parts=[sdk.Part(text="/model"), sdk.Part(text="x")])) is None
    assert command_name(sdk.Message(parts=[sdk.Part(url="https://x/model")])) is None
