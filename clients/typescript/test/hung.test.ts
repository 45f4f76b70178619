/**
 * A sidecar that hangs instead of dying (paused with SIGSTOP, as a frozen node leaves
 * it): a command that runs no handler gets the fallback reply within its Execute
 * deadline (docs/kit-contract.md, section 5), well before an A2A client's usual 30 s
 * timeout, and never reaches the model.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { NO_HANDLER_DEADLINE_MS } from "a2a-commands";
import { send, startGateway, startSidecar, type Gateway, type Sidecar } from "./harness.js";

/** What a client waits at the most, here: less than the usual 30 s. */
const CLIENT_PATIENCE_MS = 20_000;

/**
 * Waits until every thread of `pid` is stopped (Linux's /proc says `T` for each): kill(2)
 * queues the signal, and each thread stops as it next runs, not at once.
 */
async function stopped(pid: number): Promise<void> {
  const tasks = `/proc/${pid}/task`;
  if (!existsSync(tasks)) return;
  const allStopped = () =>
    readdirSync(tasks).every((tid) => {
      try {
        return readFileSync(`${tasks}/${tid}/stat`, "utf8").split(") ")[1]?.[0] === "T";
      } catch {
        return true; // the thread is gone
      }
    });
  for (let i = 0; i < 1000 && !allStopped(); i++) await sleep(5);
  assert.ok(allStopped(), `the sidecar (pid ${pid}) did not stop`);
}

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
  await stopped(sidecar.process.pid!);
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
