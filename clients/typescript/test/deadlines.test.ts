/**
 * The caller's deadline (a per-call `timeoutMs`, sent as grpc-timeout) reaches the
 * sidecar's Execute: a handler slower than what is left of it is called with what is left
 * and Execute answers a failure reply (not DEADLINE_EXCEEDED); with less than the
 * sidecar's `--handler-min-time-left-ms` left, the handler is not called at all.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { CommandsClient, pb } from "a2a-commands";
import { startSidecar, type Json } from "./harness.js";

/** A JSON-RPC handler on 127.0.0.1 that replies `late` after `delayMs`, and counts its calls. */
async function startSlowHandler(delayMs: number): Promise<{ url: string; calls(): number; close(): Promise<void> }> {
  let calls = 0;
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      calls += 1;
      const call = JSON.parse(body) as Json;
      const timer = setTimeout(() => {
        timers.delete(timer);
        const result = { context: { ...call.params.context, result: { reply: "late" } } };
        response.setHeader("content-type", "application/json");
        response.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, result }));
      }, delayMs);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    calls: () => calls,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const request: Parameters<CommandsClient["execute"]>[0] = {
  message: { messageId: "m-1", contextId: "c-1", taskId: "t-1", parts: [{ content: { case: "text", value: "/slow now" } }] },
  task: { id: "t-1", contextId: "c-1", state: pb.TaskState.WORKING },
  sender: { id: "u-1", role: pb.ParticipantRole.ASSIGNEE },
};

test("Execute calls a slow handler with what is left of the caller's deadline, and answers a failure reply", async () => {
  const handler = await startSlowHandler(5_000); // far longer than the caller waits, within its 10 s timeout
  const sidecar = await startSidecar();
  const client = new CommandsClient({ address: sidecar.address });
  try {
    await client.register({ spec: { name: "slow", description: "Slow" }, handler: { protocol: "jsonRpc", url: handler.url, timeoutMs: 10_000 } });
    const started = performance.now();
    const answer = await client.execute(request, { timeoutMs: 400 }); // a reply, not DEADLINE_EXCEEDED
    const elapsed = performance.now() - started;
    assert.equal(answer.result.case, "command");
    const outcome = answer.result.value;
    assert.equal(outcome.outcome, pb.Outcome.FAILED);
    assert.match(outcome.reply, /^\/slow failed: timed out after \d+ ms/);
    assert.ok(outcome.reply.includes("caller's deadline"), outcome.reply);
    assert.ok(elapsed < 3_000, `answered after ${elapsed} ms`); // loose: well before the handler's 5 s
    assert.equal(handler.calls(), 1, "the handler was called");
  } finally {
    client.close();
    await handler.close();
    assert.equal(await sidecar.stop(), 0);
  }
});

test("Execute with less than --handler-min-time-left-ms left does not call the handler", async () => {
  const handler = await startSlowHandler(0);
  const sidecar = await startSidecar({ args: ["--handler-min-time-left-ms", "200"] });
  const client = new CommandsClient({ address: sidecar.address });
  try {
    await client.register({ spec: { name: "slow", description: "Slow" }, handler: { protocol: "jsonRpc", url: handler.url, timeoutMs: 10_000 } });
    const answer = await client.execute(request, { timeoutMs: 150 });
    assert.equal(answer.result.case, "command");
    assert.equal(answer.result.value.outcome, pb.Outcome.FAILED);
    assert.match(answer.result.value.reply, /^\/slow failed: not called: \d+ ms left of the caller's deadline/);
    assert.ok(answer.result.value.reply.includes("the minimum is 200 ms"), answer.result.value.reply);
    assert.equal(handler.calls(), 0, "never called");
    // With enough time left the same command runs.
    const ran = await client.execute(request, { timeoutMs: 5_000 });
    assert.equal(ran.result.case === "command" && ran.result.value.reply, "late");
    assert.equal(handler.calls(), 1);
  } finally {
    client.close();
    await handler.close();
    assert.equal(await sidecar.stop(), 0);
  }
});
