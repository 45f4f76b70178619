"""The example handlers in examples/, run end to end through the real server."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture()
def example():
    procs = []

    def start(relative):
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / relative), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        procs.append(proc)
        line = proc.stdout.readline()  # readiness: the handler prints its address
        assert line.startswith("listening on "), line
        return line.split()[-1]

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def _execute(commands, client, text, role):
    ours = sys.modules["a2a.commands.v1.a2a_pb2"]
    message = ours.Message(message_id="m-1", context_id="c-1", task_id="t-1")
    message.parts.add(text=text)
    task = commands.TaskSnapshot(id="t-1", context_id="c-1", name="Docs", state=ours.TASK_STATE_WORKING)
    request = commands.ExecuteRequest(
        message=message, task=task, sender=commands.Sender(id="u-1", role=role)
    )
    return client.Execute(request, timeout=20).command


def test_grpc_example(stubs, client, example):
    _, commands, _ = stubs
    url = example("examples/grpc-handler/handler.py")
    spec = commands.CommandSpec(name="deploy", description="Deploy this task", argument_hint="<env>")
    client.Register(
        commands.RegisterRequest(spec=spec, handler=commands.HandlerBinding(grpc=url, timeout_ms=10000)),
        timeout=10,
    )
    out = _execute(commands, client, "/deploy staging", commands.PARTICIPANT_ROLE_ASSIGNEE)
    assert out.outcome == commands.OUTCOME_OK
    assert out.reply == "Deploying task t-1 to staging."
    assert out.changes.sub_task.id == "t-1.1"
    assert out.changes.sub_task.goal == "Deploy to staging"
    assert dict(out.event.status.message.metadata) == {"command": "deploy", "task_ref": "t-1.1"}

    out = _execute(commands, client, "/deploy mars", commands.PARTICIPANT_ROLE_ASSIGNEE)
    assert out.outcome == commands.OUTCOME_REFUSED
    assert out.reply == "refused: unknown environment; use one of staging, production"


def test_json_rpc_example(stubs, client, example):
    _, commands, _ = stubs
    url = example("examples/jsonrpc-handler/handler.py")
    spec = commands.CommandSpec(name="summarize", description="Summarize this task")
    client.Register(
        commands.RegisterRequest(spec=spec, handler=commands.HandlerBinding(json_rpc=url)), timeout=10
    )
    out = _execute(commands, client, "/summarize", commands.PARTICIPANT_ROLE_REPORTER)
    assert out.outcome == commands.OUTCOME_OK
    assert out.reply == "Docs: WORKING, no plan, 0 sub-task(s)."
    assert dict(out.event.status.message.metadata) == {"command": "summarize"}
