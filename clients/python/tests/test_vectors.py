"""The shared vectors (docs/vectors/*.json): the rules docs/kit-contract.md writes down,
the same files the TypeScript kit and the Rust tests run."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import jsonschema
import pytest
from a2a.types import a2a_pb2 as sdk
from conftest import ROOT, Sidecar
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from a2a_commands import (
    Command,
    CommandsClient,
    InvalidArgumentError,
    TaskData,
    command_name,
    execute_deadline,
    fallback_reply,
    may_be_command,
    new_sub_task,
    parse_address,
    pb,
    task_snapshot,
)

DOCS = ROOT / "docs"


def vectors(name: str) -> Any:
    return json.loads((DOCS / "vectors" / f"{name}.json").read_text())


def cases(name: str) -> list[Any]:
    return [pytest.param(c, id=f"{i}") for i, c in enumerate(vectors(name)["cases"])]


def message(parts: list[Any]) -> sdk.Message:
    return json_format.ParseDict({"messageId": "m-1", "role": "ROLE_USER", "parts": parts}, sdk.Message())


def as_dict(proto: ProtoMessage) -> dict[str, Any]:
    return json_format.MessageToDict(proto)


def normal(proto: ProtoMessage, expected: dict[str, Any]) -> dict[str, Any]:
    """``expected`` read into ``proto``'s type and written back, as the kit's would be."""
    return as_dict(json_format.ParseDict(expected, type(proto)()))


@pytest.mark.parametrize("case", cases("messages"))
def test_messages_pre_check_and_syntax(case: dict[str, Any]) -> None:
    sent = message(case["parts"])
    assert may_be_command(sent) is case["mayBeCommand"]
    assert command_name(sent) == (case["syntax"] or {}).get("name")


async def test_messages_as_the_service_classifies_them(sidecar: Sidecar) -> None:
    async with CommandsClient(sidecar.addr) as client:
        for case in vectors("messages")["cases"]:
            answer = await client.classify(message(case["parts"]))
            answer.ClearField("revision")
            assert as_dict(answer) == normal(answer, case["service"]), case


@pytest.mark.parametrize("case", cases("task-data"))
def test_task_data_read_and_snapshot(case: dict[str, Any]) -> None:
    task = json_format.ParseDict(case["task"], sdk.Task())
    assert TaskData.from_task(task).to_dict() == case["data"]
    states = {k: sdk.TaskState.Value(v) for k, v in case["subTaskStates"].items()}
    snapshot = task_snapshot(task, states)
    assert as_dict(snapshot) == normal(snapshot, case["snapshot"])


@pytest.mark.parametrize("case", cases("changes"))
def test_changes_to_task_data(case: dict[str, Any]) -> None:
    task = json_format.ParseDict(case["task"], sdk.Task())
    changes = json_format.ParseDict(case["changes"], pb.Changes())
    assert TaskData.from_task(task).changed(changes).to_dict() == case["data"]
    if "subTask" in case:
        created = new_sub_task(task, changes.sub_task)
        created.status.ClearField("timestamp")
        assert as_dict(created) == normal(created, case["subTask"])
    else:
        assert not changes.HasField("sub_task")


@pytest.mark.parametrize("case", cases("fallback"))
def test_fallback_reply(case: dict[str, Any]) -> None:
    task = json_format.ParseDict(case["task"], sdk.Task())
    reply = fallback_reply(task, json_format.ParseDict(case["message"], sdk.Message()))
    if case["reply"] is None:
        assert reply is None
    else:
        assert reply is not None
        reply.status.ClearField("timestamp")
        assert as_dict(reply) == normal(reply, case["reply"])


@pytest.mark.parametrize("case", cases("addresses"))
def test_addresses(case: dict[str, Any]) -> None:
    value = case["value"] or vectors("addresses")["default"]
    if case.get("error"):
        with pytest.raises(ValueError):
            parse_address(value)
    else:
        address = parse_address(value)
        assert (address.target, address.tls) == (case["target"], case["tls"])


@pytest.mark.parametrize("case", cases("deadlines"))
def test_execute_deadlines(case: dict[str, Any]) -> None:
    vector = vectors("deadlines")
    registry = None if case.get("no_registry") else json_format.ParseDict(vector["registry"], pb.ListSpecsResponse())
    assert execute_deadline(registry, case["command"]) * 1000 == case["deadline_ms"]


def test_the_schema_accepts_what_kits_write() -> None:
    schema = json.loads((DOCS / "kit-task-data.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    written = [c["data"] for c in vectors("task-data")["cases"] + vectors("changes")["cases"]]
    for data in written:
        validator.validate(data)
    assert not validator.is_valid({"sub_tasks": ["t-1.1"]})


async def test_prompt_templates_expand_as_the_vectors_say(sidecar: Sidecar) -> None:
    """docs/vectors/prompts.json's templates, registered and executed on the real sidecar."""
    task = pb.TaskSnapshot(id="t-1", context_id="c-1", state=pb.TASK_STATE_WORKING)
    sender = pb.Sender(id="u", role=pb.PARTICIPANT_ROLE_ASSIGNEE)
    async with CommandsClient(sidecar.addr) as client:
        for case in vectors("prompts")["templates"]:
            spec = Command("p", "A prompt")
            if "error" in case:
                with pytest.raises(InvalidArgumentError) as refused:
                    await client.register(spec, override=True, prompt=case["template"])
                assert refused.value.field == "prompt.template", case["note"]
                assert case["error"] in refused.value.reason, case["note"]
                continue
            await client.register(spec, override=True, prompt=case["template"])
            text = f"/p {case['arguments']}" if case["arguments"] else "/p"
            answer = await client.execute(message([{"text": text}]), task, sender, accepts_prompt=True)
            if "failure" in case:
                assert answer.WhichOneof("result") == "command", case["note"]
                assert answer.command.outcome == pb.OUTCOME_FAILED, case["note"]
                assert answer.command.reply == f"/p failed: {case['failure']}", case["note"]
                continue
            assert answer.WhichOneof("result") == "prompt", case["note"]
            assert answer.prompt.text == case["expansion"], case["note"]
            assert (answer.prompt.command.name, answer.prompt.command.arguments) == ("p", case["arguments"])
