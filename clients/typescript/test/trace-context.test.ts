/**
 * The gateway's OpenTelemetry span goes with every call to the sidecar (docs/kit-contract.md,
 * section 11): the vectors, then end to end through the real sidecar to a real handler.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { context, trace, createTraceState, ROOT_CONTEXT, TraceFlags, type Context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { CommandsClient, pb, traceContext } from "a2a-commands";
import { ROOT, startSidecar, vectors, type Json } from "./harness.js";

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

/** The test OTLP receiver (a2a-commands-otlp-receiver, beside the binary): each span it is sent, as a JSON line. */
async function startReceiver(): Promise<{ endpoint: string; waitFor(done: (spans: Json[]) => boolean): Promise<Json[]>; stop(): void }> {
  const binary = process.env.A2A_COMMANDS_BIN || join(ROOT, "target", "debug", "a2a-commands");
  const child = spawn(join(dirname(binary), "a2a-commands-otlp-receiver"), [], { stdio: ["ignore", "pipe", "inherit"] });
  const spans: Json[] = [];
  const waiting = new Set<() => void>();
  const lines = createInterface({ input: child.stdout! });
  const endpoint = await new Promise<string>((resolve) => {
    lines.on("line", (line) => {
      const event = JSON.parse(line) as Json;
      if (event.listening) return resolve(`http://${event.listening}`);
      spans.push(event);
      for (const wake of waiting) wake();
    });
  });
  return {
    endpoint,
    waitFor: (done) =>
      new Promise<Json[]>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`spans not received; got ${JSON.stringify(spans.map((s) => s.name))}`)), 30_000);
        const check = () => {
          if (!done(spans)) return;
          clearTimeout(timer);
          waiting.delete(check);
          resolve([...spans]);
        };
        waiting.add(check);
        check();
      }),
    stop: () => void child.kill(),
  };
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
      const traceId = gateway.span.traceId as string;
      const receiver = traced ? await startReceiver() : undefined;
      const sidecar = await startSidecar({ args: receiver ? ["--otlp-traces-endpoint", receiver.endpoint] : [] });
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
        client.close();
        await sidecar.stop(); // the drain sends the sidecar's spans
        assert.equal(handler.seen.length, 1);
        if (!receiver) {
          assert.equal(handler.seen[0], gateway.metadata.traceparent);
          return;
        }
        // One trace: the gateway's span → the sidecar's Execute → its handler call → the handler.
        const spans = await receiver.waitFor(
          (all) => all.some((s) => s.traceId === traceId && s.name === "command.invoked.in") && all.some((s) => s.traceId === traceId && s.name === "a2a.commands.v1.CommandService/Execute"),
        );
        const execute = spans.find((s) => s.traceId === traceId && s.name === "a2a.commands.v1.CommandService/Execute")!;
        const call = spans.find((s) => s.traceId === traceId && s.name === "command.invoked.in")!;
        assert.equal(execute.parentSpanId, gateway.span.spanId);
        assert.equal(call.parentSpanId, execute.spanId);
        assert.equal(handler.seen[0], `00-${traceId}-${call.spanId}-01`);
      } finally {
        client.close();
        handler.close();
        await sidecar.stop();
        receiver?.stop();
      }
    });
  }
});
