/**
 * A sidecar that hangs instead of dying (paused with SIGSTOP, as a frozen node leaves
 * it): a command that runs no handler gets the fallback reply within its Execute
 * deadline (docs/kit-contract.md, section 5), well before an A2A client's usual 30 s
 * timeout, and never reaches the model.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { NO_HANDLER_DEADLINE_MS } from "a2a-commands";
import { send, startGateway, startSidecar, type Gateway, type Sidecar } from "./harness.js";

/** What a client waits at the most, here: less than the usual 30 s. */
const CLIENT_PATIENCE_MS = 20_000;

let sidecar: Sidecar;
let gateway: Gateway;

before(async () => {
  sidecar = await startSidecar();
  gateway = await startGateway(sidecar.address);
});

after(async () => {
  sidecar.process.kill("SIGCONT");
  await gateway.close();
  assert.equal(await sidecar.stop(), 0);
});

test("a paused sidecar gives the fallback reply within the deadline of a command without a handler", async () => {
  const first = await send(gateway, "/status", { stream: false });
  assert.match(first.replyText, /^Task /);
  assert.equal(gateway.commands.executeDeadlineMs("status"), NO_HANDLER_DEADLINE_MS);

  sidecar.process.kill("SIGSTOP");
  const timer = new AbortController();
  const patience = sleep(CLIENT_PATIENCE_MS, undefined, { signal: timer.signal }).then(() => {
    throw new Error(`no answer within ${CLIENT_PATIENCE_MS} ms: the kit waited on the paused sidecar`);
  });
  const answered = await Promise.race([send(gateway, "/status", { taskId: first.taskId, stream: false }), patience]).finally(() => timer.abort());
  assert.equal(answered.replyText, "/status failed: commands are unavailable right now");
  assert.deepEqual(gateway.echo.seen.filter((t) => t.startsWith("/")), []);

  sidecar.process.kill("SIGCONT");
  const again = await send(gateway, "/status", { taskId: first.taskId, stream: false });
  assert.match(again.replyText, /^Task /);
});
