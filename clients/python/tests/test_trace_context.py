"""The gateway's OpenTelemetry span goes with every call to the sidecar (docs/kit-contract.md,
section 11): the vectors, then end to end through the real sidecar to a real handler."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from a2a.types import a2a_pb2 as sdk
from conftest import Sidecar, _binary
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


class Receiver:
    """The test OTLP receiver (``a2a-commands-otlp-receiver``, beside the binary), which
    prints each span it is sent as a JSON line."""

    def __init__(self) -> None:
        path = os.path.join(os.path.dirname(_binary()), "a2a-commands-otlp-receiver")
        self.proc = subprocess.Popen([path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.endpoint = "http://" + json.loads(self.proc.stdout.readline())["listening"]
        self.spans: list[dict[str, Any]] = []
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._arrived:
                self.spans.append(json.loads(line))
                self._arrived.notify_all()

    def wait_for(self, done: Any, timeout: float = 30) -> list[dict[str, Any]]:
        with self._arrived:
            assert self._arrived.wait_for(lambda: done(self.spans), timeout=timeout), self.spans
            return list(self.spans)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.mark.parametrize("traced", [False, True], ids=["sidecar-traces-off", "sidecar-traces-on"])
async def test_the_gateways_trace_reaches_the_handler(
    tmp_path: Any, handler: tuple[str, list[str]], traced: bool
) -> None:
    """Traces off, the handler sees the gateway's ``traceparent`` as sent. On, one trace
    runs from the gateway's span through the sidecar's server span and its handler span
    (both received by a real OTLP receiver) to the handler, which is sent the latter."""
    url, seen = handler
    receiver = Receiver() if traced else None
    args = ("--otlp-traces-endpoint", receiver.endpoint) if receiver else ()
    sidecar = Sidecar(tmp_path, *args).start()
    gateway_span = vectors("trace-context")["cases"][0]
    trace_id, gateway_span_id = gateway_span["span"]["traceId"], gateway_span["span"]["spanId"]
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
        sidecar.stop()  # the drain sends the sidecar's spans
    assert len(seen) == 1
    if receiver is None:
        assert seen[0] == gateway_span["metadata"]["traceparent"]
        return
    try:
        spans = receiver.wait_for(lambda spans: {"a2a.commands.v1.CommandService/Execute", "command.invoked.in"}
                                  <= {s["name"] for s in spans if s["traceId"] == trace_id})
    finally:
        receiver.stop()
    execute = next(s for s in spans if s["name"] == "a2a.commands.v1.CommandService/Execute")
    call = next(s for s in spans if s["name"] == "command.invoked.in")
    assert execute["traceId"] == call["traceId"] == trace_id
    assert execute["parentSpanId"] == gateway_span_id
    assert call["parentSpanId"] == execute["spanId"]
    assert seen[0] == f"00-{trace_id}-{call['spanId']}-01"
