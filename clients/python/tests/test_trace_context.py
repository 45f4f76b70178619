"""The gateway's OpenTelemetry span goes with every call to the sidecar (docs/kit-contract.md,
section 11): the vectors, then end to end through the real sidecar to a real handler."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from a2a.types import a2a_pb2 as sdk
from conftest import Sidecar
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState
from test_vectors import cases, vectors

from a2a_commands import Command, CommandsClient, Handler, HandlerProtocol
from a2a_commands._pb import commands_pb2 as pb
from a2a_commands._trace import trace_metadata


def _span(span: dict[str, Any] | None) -> trace.Span:
    if span is None:
        return trace.INVALID_SPAN
    state = TraceState.from_header([span["traceState"]]) if span["traceState"] else TraceState()
    return NonRecordingSpan(SpanContext(
        trace_id=int(span["traceId"], 16), span_id=int(span["spanId"], 16), is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED if span["sampled"] else TraceFlags.DEFAULT), trace_state=state,
    ))


@pytest.mark.parametrize("case", cases("trace-context"))
def test_trace_context_vectors(case: dict[str, Any]) -> None:
    with trace.use_span(_span(case["span"])):
        assert dict(trace_metadata()) == case["metadata"]


@pytest.fixture()
def handler() -> Iterator[tuple[str, list[str]]]:
    """A JSON-RPC handler on 127.0.0.1 that replies and keeps each call's ``traceparent``."""
    seen: list[str] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            request = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append(self.headers.get("traceparent", ""))
            context = dict(request["params"]["context"], result={"reply": "deployed"})
            body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"context": context}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", seen
    server.shutdown()
    thread.join()


@pytest.mark.parametrize("traced", [False, True], ids=["sidecar-traces-off", "sidecar-traces-on"])
async def test_the_gateways_trace_reaches_the_handler(
    tmp_path: Any, handler: tuple[str, list[str]], traced: bool
) -> None:
    """Traces off, the handler sees the gateway's ``traceparent`` as sent; on, a span of the
    sidecar's in the gateway's trace (a collector that is not there: spans drop, calls work)."""
    url, seen = handler
    args = ("--otlp-traces-endpoint", "http://127.0.0.1:9") if traced else ()
    sidecar = Sidecar(tmp_path, *args).start()
    gateway_span = vectors("trace-context")["cases"][0]
    try:
        async with CommandsClient(sidecar.addr) as client:
            await client.register(
                Command("deploy", "Deploy"), handler=Handler(url, protocol=HandlerProtocol.JSON_RPC, timeout=5)
            )
            message = sdk.Message(message_id="m-1", role=sdk.ROLE_USER, parts=[sdk.Part(text="/deploy now")])
            task = pb.TaskSnapshot(id="t-1", context_id="c-1", state=sdk.TASK_STATE_WORKING)
            sender = pb.Sender(id="u-1", role=pb.PARTICIPANT_ROLE_ASSIGNEE)
            with trace.use_span(_span(gateway_span["span"])):
                answer = await client.execute(message, task, sender)
        assert answer.command.reply == "deployed"
    finally:
        sidecar.stop()
    assert len(seen) == 1
    if not traced:
        assert seen[0] == gateway_span["metadata"]["traceparent"]
    else:
        version, trace_id, span_id, flags = seen[0].split("-")
        assert (version, trace_id, flags) == ("00", gateway_span["span"]["traceId"], "01")
        assert span_id != gateway_span["span"]["spanId"], "the sidecar's own span, under the gateway's"
