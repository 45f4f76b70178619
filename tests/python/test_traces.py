"""Traces of MCP bodies, end to end: the binary exporting to the test OTLP receiver, a
real MCP server (the official `mcp` package) behind it. The Rust tests cover gRPC and
JSON-RPC handlers the same way (tests/traces.rs)."""

from mcp.server.mcpserver import MCPServer

from conftest import serving_asgi, start_server
from test_mcp import _execute as execute_tool
from test_prompts import _execute as execute_prompt

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


def _recording(app, seen):
    """`app`, keeping the `traceparent` of every request it is sent."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            seen.append(headers.get(b"traceparent", b"").decode())
        await app(scope, receive, send)

    return wrapped


def _mcp_server():
    server = MCPServer("hooks")

    @server.tool(name="hooks.command.invoked.in")
    def hook(context: dict) -> dict:
        return dict(context, result={"reply": "shipped"})

    @server.prompt(name="explain", description="Explain some code")
    def explain(code: str) -> str:
        return f"Explain this code:\n{code}"

    return server.streamable_http_app()


def test_mcp_tool_and_prompt_calls_are_client_spans_under_execute(stubs, tmp_path, receiver):
    ours, commands, commands_grpc = stubs
    seen = []
    import grpc

    with serving_asgi(_recording(_mcp_server(), seen)) as url:
        proc, addr = start_server(tmp_path / "data", "--otlp-traces-endpoint", receiver.endpoint)
        try:
            with grpc.insecure_channel(addr) as channel:
                client = commands_grpc.CommandServiceStub(channel)
                client.Register(commands.RegisterRequest(
                    spec=commands.CommandSpec(name="ship", description="Ship"),
                    handler=commands.HandlerBinding(mcp=f"{url}/mcp", timeout_ms=10000)), timeout=10)
                client.Register(commands.RegisterRequest(
                    spec=commands.CommandSpec(name="explain", description="Explain"),
                    prompt=commands.PromptBinding(mcp=commands.McpPrompt(url=f"{url}/mcp", name="explain"))),
                    timeout=10)
                traced = [("traceparent", f"00-{TRACE}-{PARENT}-01")]
                stub = _Traced(client, traced)
                out = execute_tool(stubs, stub, "/ship it")
                assert out.reply == "shipped", out
                answer = execute_prompt(stubs, stub, "/explain fn main() {}")
                assert answer.WhichOneof("result") == "prompt", answer
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0

    def names(spans):
        return [s["name"] for s in spans if s["traceId"] == TRACE]

    spans = receiver.wait_for("the MCP calls", lambda spans: {
        "tools/call hooks.command.invoked.in", "prompts/get explain"} <= set(names(spans))
        and names(spans).count("a2a.commands.v1.CommandService/Execute") == 2)
    ours_ = [s for s in spans if s["traceId"] == TRACE]
    executes = {s["attributes"]["a2a.command.name"]: s for s in ours_
                if s["name"] == "a2a.commands.v1.CommandService/Execute"}
    for name, client_span, command, outcome in [
        ("tools/call hooks.command.invoked.in", "tools/call", "ship", "ok"),
        ("prompts/get explain", "prompts/get", "explain", "prompt"),
    ]:
        span = next(s for s in ours_ if s["name"] == name)
        server = executes[command]
        assert server["parentSpanId"] == PARENT and server["kind"] == 2  # SPAN_KIND_SERVER
        assert server["attributes"]["a2a.command.outcome"] == outcome
        assert span["parentSpanId"] == server["spanId"] and span["kind"] == 3  # SPAN_KIND_CLIENT
        assert span["attributes"]["mcp.method.name"] == client_span
        assert span["attributes"]["a2a.command.name"] == command
        # Every request of the MCP session names the client span.
        assert f"00-{TRACE}-{span['spanId']}-01" in seen, seen
    assert "fn main" not in str(spans), "a prompt's arguments are never in a span"


class _Traced:
    """A stub whose Execute sends `metadata`."""

    def __init__(self, stub, metadata):
        self._stub, self._metadata = stub, metadata

    def Execute(self, request, timeout):  # noqa: N802 (the gRPC method's name)
        return self._stub.Execute(request, timeout=timeout, metadata=self._metadata)
