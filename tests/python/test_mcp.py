"""MCP command bodies end to end: a real MCP server (the official `mcp` package, over
streamable HTTP on 127.0.0.1) with the tool `hooks.command.invoked.in`, called by the
real binary from Execute, as the harness that defined the extension calls it."""

import socket
from typing import Any

import grpc
import pytest
from mcp.server.mcpserver import MCPServer

from conftest import serving_asgi, start_server

CONTEXT_KEYS = {"task_id", "correlation_id", "attempt", "name", "arguments", "sender",
                "sender_role", "task", "result"}
TASK_KEYS = {"id", "name", "state", "sub_state", "settings", "steps_done", "steps_total",
             "children"}


def _hook_server(structured, seen):
    """An MCP server whose hook answers by the command's arguments; `structured` picks
    where the context comes back (structured content, or a JSON text block)."""
    server = MCPServer("hooks")

    @server.tool(name="hooks.command.invoked.in", structured_output=structured)
    def hook(context: dict[str, Any]) -> dict[str, Any]:
        seen.append(context)
        assert set(context) == CONTEXT_KEYS, sorted(context)
        assert set(context["task"]) == TASK_KEYS, sorted(context["task"])
        arguments = context["arguments"]
        if arguments == "abort":
            return {"abort": {"reason": "refused"}}
        if arguments == "fail":
            raise RuntimeError("the hook broke")
        return dict(context, result={"reply": f"shipped {context['task']['id']}",
                                      "settings": {"model": "gpt-x-mini"}})

    return server.streamable_http_app()


@pytest.fixture()
def hook(request):
    """Serves a hook on 127.0.0.1 (a port of its own); yields its URL and the contexts
    it saw."""
    seen = []
    with serving_asgi(_hook_server(request.param, seen)) as url:
        yield f"{url}/mcp", seen


def _execute(stubs, client, text):
    ours, commands, _ = stubs
    message = ours.Message(message_id="m-1", context_id="c-1", task_id="t-1")
    message.parts.add(text=text)
    task = commands.TaskSnapshot(id="t-1", context_id="c-1", name="Ship",
                                 state=ours.TASK_STATE_WORKING)
    request = commands.ExecuteRequest(
        message=message, task=task,
        sender=commands.Sender(id="u-1", role=commands.PARTICIPANT_ROLE_ASSIGNEE))
    return client.Execute(request, timeout=30).command


@pytest.mark.parametrize("hook", [True, False], indirect=True, ids=["structured", "text"])
def test_mcp_hooks_run_commands(stubs, tmp_path, hook):
    _, commands, commands_grpc = stubs
    url, seen = hook
    proc, addr = start_server(tmp_path / "data")
    try:
        with grpc.insecure_channel(addr) as channel:
            client = commands_grpc.CommandServiceStub(channel)
            spec = commands.CommandSpec(name="ship", description="Ship this task")
            client.Register(commands.RegisterRequest(
                spec=spec, handler=commands.HandlerBinding(mcp=url, timeout_ms=10000)), timeout=10)

            out = _execute(stubs, client, "/ship it")
            assert (out.outcome, out.reply) == (commands.OUTCOME_OK, "shipped t-1")
            assert out.changes.settings.model == "gpt-x-mini"
            assert seen[0]["name"] == "ship" and seen[0]["sender_role"] == "assignee"
            assert seen[0]["task"]["state"] == "WORKING" and seen[0]["result"] is None

            out = _execute(stubs, client, "/ship abort")
            assert (out.outcome, out.reply) == (commands.OUTCOME_REFUSED, "refused: refused")

            out = _execute(stubs, client, "/ship fail")
            assert out.outcome == commands.OUTCOME_FAILED
            assert out.reply.startswith("/ship failed: handler tool failed"), out.reply
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_unreachable_mcp_hook_is_a_failure(stubs, tmp_path, refused_port):
    _, commands, commands_grpc = stubs
    port = refused_port
    proc, addr = start_server(tmp_path / "data")
    try:
        with grpc.insecure_channel(addr) as channel:
            client = commands_grpc.CommandServiceStub(channel)
            spec = commands.CommandSpec(name="ship", description="Ship this task")
            client.Register(commands.RegisterRequest(
                spec=spec, handler=commands.HandlerBinding(mcp=f"http://127.0.0.1:{port}/mcp")),
                timeout=10)
            out = _execute(stubs, client, "/ship it")
            assert out.outcome == commands.OUTCOME_FAILED
            assert out.reply == "/ship failed: handler unreachable", out.reply
    finally:
        proc.terminate()
        proc.wait(timeout=30)
