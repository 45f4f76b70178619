"""Cross-language checks: a Python gateway using the official A2A types (a2a-sdk's
`lf.a2a.v1` protobuf) talks to the real server over gRPC."""

import json

import pytest
from a2a.types import a2a_pb2 as official
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor

MIRRORED = ["Message", "Part", "TaskStatus", "TaskStatusUpdateEvent", "AgentExtension"]
ENUMS = ["Role", "TaskState"]


def _field_shape(field):
    kind = field.message_type.full_name if field.type == FieldDescriptor.TYPE_MESSAGE else None
    if kind and kind.startswith("lf.a2a.v1.") or kind and kind.startswith("a2a.commands.v1."):
        kind = kind.rsplit(".", 1)[1]
    enum = field.enum_type.name if field.type == FieldDescriptor.TYPE_ENUM else None
    oneof = field.containing_oneof.name if field.containing_oneof else None
    return (field.name, field.number, field.type, field.is_repeated, kind, enum, oneof)


def test_mirrored_types_have_the_official_field_numbers_and_types(stubs):
    ours, _, _ = stubs
    for name in MIRRORED:
        mine = {f.number: _field_shape(f) for f in getattr(ours, name).DESCRIPTOR.fields}
        theirs = {f.number: _field_shape(f) for f in getattr(official, name).DESCRIPTOR.fields}
        for number, shape in mine.items():
            assert theirs.get(number) == shape, f"{name}.{shape[0]}"
    for name in ENUMS:
        mine = {v.name: v.number for v in getattr(ours, name).DESCRIPTOR.values}
        theirs = {v.name: v.number for v in getattr(official, name).DESCRIPTOR.values}
        assert mine == theirs, name


def _official_message(text, message_id="m-7"):
    message = official.Message(
        message_id=message_id, context_id="c-1", task_id="t-1", role=official.ROLE_USER
    )
    message.parts.add(text=text)
    message.extensions.append("https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1")
    return message


def _execute(stubs, client, text, state="TASK_STATE_INPUT_REQUIRED", sub_tasks=0, **options):
    ours, commands, _ = stubs
    # The gateway holds an official message: its bytes are our Message's bytes.
    message = ours.Message.FromString(_official_message(text).SerializeToString())
    task = commands.TaskSnapshot(
        id="t-1", context_id="c-1", name="Docs", state=ours.TaskState.Value(state)
    )
    for i in range(sub_tasks):
        task.sub_tasks.add(id=f"t-1.{i + 1}", state=ours.TASK_STATE_WORKING)
    request = commands.ExecuteRequest(
        message=message,
        task=task,
        sender=commands.Sender(id="u-1", role=commands.PARTICIPANT_ROLE_ASSIGNEE),
        **options,
    )
    response = client.Execute(request, timeout=10)
    assert response.WhichOneof("result") == "command", response
    return response.command


@pytest.mark.parametrize(
    "text,state,reply,task_ref",
    [
        ("/model gpt-x-mini", "TASK_STATE_INPUT_REQUIRED", "Model set to gpt-x-mini.", None),
        ("/sub-task write it", "TASK_STATE_WORKING", "Starting a sub-task.\nCreated sub-task t-1.3.", "t-1.3"),
        ("/effort nope", "TASK_STATE_AUTH_REQUIRED", "refused: not an accepted effort. Accepted: low, medium, high", None),
        ("/status", "TASK_STATE_COMPLETED", None, None),
    ],
)
def test_event_bytes_and_json_are_official_a2a(stubs, client, text, state, reply, task_ref):
    _, commands, _ = stubs
    forms = [commands.EVENT_FORM_PROTOBUF, commands.EVENT_FORM_A2A_1_0_JSON]
    outcome = _execute(
        stubs, client, text, state=state, sub_tasks=2, event_forms=forms, event_metadata=True
    )

    from_bytes = official.TaskStatusUpdateEvent.FromString(outcome.event.SerializeToString())
    from_json = official.TaskStatusUpdateEvent()
    json_format.Parse(outcome.event_json, from_json, ignore_unknown_fields=False)
    assert from_json == from_bytes

    assert from_bytes.task_id == "t-1" and from_bytes.context_id == "c-1"
    assert from_bytes.status.state == official.TaskState.Value(state)
    message = from_bytes.status.message
    assert message.role == official.ROLE_AGENT
    assert message.message_id == "m-7:reply"
    assert (message.task_id, message.context_id) == ("t-1", "c-1")
    assert len(message.parts) == 1 and message.parts[0].WhichOneof("content") == "text"
    assert message.parts[0].text == outcome.reply
    if reply is not None:
        assert outcome.reply == reply
    want = {"command": text.split()[0][1:]}
    if task_ref:
        want["task_ref"] = task_ref
    assert json_format.MessageToDict(from_bytes.metadata) == want
    assert json_format.MessageToDict(message.metadata) == want
    assert from_bytes.status.HasField("timestamp")


def test_a2a_0_3_json_validates_as_the_sdk_0_3_model(stubs, client):
    from a2a.compat.v0_3 import types as v03

    _, commands, _ = stubs
    outcome = _execute(
        stubs,
        client,
        "/sub-task write it",
        event_forms=[commands.EVENT_FORM_A2A_0_3_JSON],
        event_metadata=True,
    )
    assert not outcome.HasField("event")
    event = v03.TaskStatusUpdateEvent.model_validate_json(outcome.event_json)
    assert event.kind == "status-update"
    assert event.final is False
    assert event.status.state.value == "input-required"
    assert event.status.message.role.value == "agent"
    assert event.status.message.parts[0].root.text == outcome.reply
    assert event.metadata == {"command": "sub-task", "task_ref": "t-1.1"}
    raw = json.loads(outcome.event_json)
    assert raw["status"]["message"]["kind"] == "message"


def test_the_default_answer_is_lean_and_the_old_format_field_still_works(stubs, client):
    _, commands, _ = stubs
    lean = _execute(stubs, client, "/sub-task write it")
    assert lean.event_json == ""
    event = official.TaskStatusUpdateEvent.FromString(lean.event.SerializeToString())
    # The reference puts the metadata on the reply message only.
    assert not event.HasField("metadata")
    want = {"command": "sub-task", "task_ref": "t-1.1"}
    assert json_format.MessageToDict(event.status.message.metadata) == want

    legacy = _execute(
        stubs, client, "/sub-task write it", event_json_format=commands.EVENT_JSON_FORMAT_A2A_0_3
    )
    assert legacy.HasField("event")
    assert json.loads(legacy.event_json)["kind"] == "status-update"


def test_classify_reads_official_message_bytes(stubs, client):
    ours, commands, _ = stubs
    message = ours.Message.FromString(_official_message("/model   gpt-x  ").SerializeToString())
    response = client.Classify(commands.ClassifyRequest(message=message), timeout=10)
    assert response.command.name == "model"
    assert response.command.arguments == "gpt-x  "


def test_card_extension_parses_as_official_agent_extension(stubs, client):
    _, commands, _ = stubs
    listed = client.ListSpecs(commands.ListSpecsRequest(include_card_extension=True), timeout=10)
    extension = official.AgentExtension()
    json_format.Parse(listed.card_extension_json, extension, ignore_unknown_fields=False)
    assert extension.uri == "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
    assert extension.required is False
    from_proto = official.AgentExtension.FromString(listed.card_extension.SerializeToString())
    assert from_proto == extension
    names = [c["name"] for c in json_format.MessageToDict(extension.params)["commands"]]
    assert names[:4] == ["model", "effort", "sub-task", "status"]
