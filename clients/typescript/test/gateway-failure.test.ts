/**
 * The gateway's own failure before Execute (docs/vectors/gateway-failure.json): with a
 * sender resolver that throws, a message that may be a command fails as the SDK fails
 * any, never reaching the agent and never answered with the fallback reply; a message
 * that cannot be a command never asks the resolver.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { TaskState } from "@a2a-js/sdk";
import { send, startGateway, startSidecar, vectors, type Gateway, type Json, type Sidecar } from "./harness.js";

let sidecar: Sidecar;
let gateway: Gateway;

before(async () => {
  sidecar = await startSidecar();
  gateway = await startGateway(sidecar.address, {
    sender: () => {
      throw new Error("the gateway's role store is down");
    },
  });
});

after(async () => {
  await gateway.close();
  assert.equal(await sidecar.stop(), 0);
});

(vectors("gateway-failure").cases as Json[]).forEach((c, i) =>
  test(`${i}: ${c.send as string}`, async () => {
    const seen = gateway.echo.seen.length;
    let outcome: { failed: boolean; text?: string };
    try {
      const turn = await send(gateway, c.send as string, { stream: false });
      outcome = { failed: turn.state === TaskState.TASK_STATE_FAILED, text: turn.replyText };
    } catch (error) {
      outcome = { failed: true, text: String(error) };
    }
    assert.equal(outcome.failed, c.fails, JSON.stringify(outcome));
    assert.doesNotMatch(outcome.text ?? "", /commands are unavailable/);
    if (c.reply !== undefined) assert.equal(outcome.text, c.reply);
    assert.equal(gateway.echo.seen.length > seen, c.reachesAgent);
  }),
);
