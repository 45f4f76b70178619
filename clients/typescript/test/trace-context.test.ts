/**
 * The gateway's OpenTelemetry span goes with every call to the sidecar (docs/kit-contract.md,
 * section 11): the vectors, then end to end through the real sidecar to a real handler.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { context, trace, createTraceState, ROOT_CONTEXT, TraceFlags, type Context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { CommandsClient, pb, traceContext } from "a2a-commands";
import { startSidecar, vectors, type Json } from "./harness.js";

const cases = vectors("trace-context").cases as Json[];

/** A vector's current span, as the gateway's active context. */
function active(span: Json | null): Context {
  if (!span) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: span.traceId,
    spanId: span.spanId,
    traceFlags: span.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    traceState: span.traceState ? createTraceState(span.traceState) : undefined,
  });
}

/** A JSON-RPC handler on 127.0.0.1 that replies and keeps each call's traceparent. */
async function startHandler(): Promise<{ url: string; seen: string[]; close(): void }> {
  const seen: string[] = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      const call = JSON.parse(body) as Json;
      seen.push(String(request.headers.traceparent ?? ""));
      const result = { context: { ...call.params.context, result: { reply: "deployed" } } };
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, seen, close: () => server.close() };
}

describe("trace context", () => {
  const manager = new AsyncLocalStorageContextManager();
  before(() => context.setGlobalContextManager(manager.enable()));
  after(() => context.disable());

  cases.forEach((c, i) =>
    test(`vector ${i}: ${c.name}`, () => {
      assert.deepEqual(context.with(active(c.span), traceContext), c.metadata);
    }),
  );

  for (const traced of [false, true]) {
    test(`the gateway's trace reaches the handler (sidecar traces ${traced ? "on" : "off"})`, async () => {
      const gateway = cases[0]!;
      // Traces on, to a collector that is not there: spans drop, calls are unaffected.
      const sidecar = await startSidecar({ args: traced ? ["--otlp-traces-endpoint", "http://127.0.0.1:9"] : [] });
      const handler = await startHandler();
      const client = new CommandsClient({ address: sidecar.address });
      try {
        await client.register({
          spec: { name: "deploy", description: "Deploy" },
          handler: { protocol: "jsonRpc", url: handler.url, timeoutMs: 5000 },
        });
        const answer = await context.with(active(gateway.span), () =>
          client.execute({
            message: { messageId: "m-1", contextId: "c-1", taskId: "t-1", parts: [{ content: { case: "text", value: "/deploy now" } }] },
            task: { id: "t-1", contextId: "c-1", state: pb.TaskState.WORKING },
            sender: { id: "u-1", role: pb.ParticipantRole.ASSIGNEE },
          }),
        );
        assert.equal(answer.result.case, "command");
        assert.equal(handler.seen.length, 1);
        const [version, traceId, spanId, flags] = handler.seen[0]!.split("-");
        if (!traced) assert.equal(handler.seen[0], gateway.metadata.traceparent);
        else {
          assert.deepEqual([version, traceId, flags], ["00", gateway.span.traceId, "01"]);
          assert.notEqual(spanId, gateway.span.spanId, "the sidecar's own span, under the gateway's");
        }
      } finally {
        client.close();
        handler.close();
        await sidecar.stop();
      }
    });
  }
});
