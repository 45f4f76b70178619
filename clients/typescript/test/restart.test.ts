/**
 * The sidecar stopped and restarted under a running gateway: while it is down, a message
 * that looks like a command gets a failure reply and never reaches the model, any other
 * message still does, and completion is an error; once it is back, commands work again and the card catches up.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { TaskState } from "@a2a-js/sdk";
import { COMMANDS_EXTENSION_URI, CommandsError, readTaskData } from "a2a-commands";
import { COMPLETE_METHOD } from "a2a-commands/express";
import { freeAddress, rpc, runScenario, send, startGateway, startSidecar, type Gateway, type Scenario, type Sidecar, vectors } from "./harness.js";

let sidecar: Sidecar;
let gateway: Gateway;

before(async () => {
  sidecar = await startSidecar({ listen: await freeAddress() });
  gateway = await startGateway(sidecar.address);
});

after(async () => {
  await gateway.close();
  assert.equal(await sidecar.stop(), 0);
});

test("the sidecar stopped and restarted mid-run", async (t) => {
  const taskIds = new Map<boolean, string>();
  for (const stream of [false, true]) {
    const turn = await send(gateway, "hello", { stream });
    taskIds.set(stream, turn.taskId);
    assert.equal((await send(gateway, "/model", { taskId: turn.taskId, stream })).reply.metadata?.command, "model");
  }

  assert.equal(await sidecar.stop(), 0);

  for (const stream of [false, true]) {
    await t.test(`while it is down (${stream ? "streaming" : "non-streaming"})`, async () => {
      const taskId = taskIds.get(stream)!;
      const errorsBefore = gateway.errors.length;
      const command = await send(gateway, "/model gpt-x-mini", { taskId, stream });
      assert.equal(command.replyText, "/model failed: commands are unavailable right now");
      assert.equal(command.reply.metadata?.command, "model");
      assert.equal(command.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(command.stored.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(readTaskData(command.stored).settings, undefined);
      assert.ok(gateway.errors.length > errorsBefore, "the failure is reported to onError");
      const error = gateway.errors.at(-1);
      assert.ok(error instanceof CommandsError && error.unavailable, String(error));

      // Unknown while the registry cannot be asked: still never reaches the model.
      const unknown = await send(gateway, "/unknown x", { taskId, stream });
      assert.equal(unknown.replyText, "/unknown failed: commands are unavailable right now");

      const down = (vectors("lifecycle").sidecarDown as Scenario[])[0]!;
      await runScenario(gateway, down, stream);

      const plain = await send(gateway, "still there?", { taskId, stream });
      assert.equal(plain.replyText, "echo: still there?");
    });
  }
  await t.test("while it is down, waitReady gives up as unavailable", async () => {
    await assert.rejects(gateway.commands.waitReady(300), (e: unknown) => e instanceof CommandsError && e.unavailable && e.codeName === "unavailable");
  });
  await t.test("while it is down, completion fails as a JSON-RPC internal error", async () => {
    const { error } = (await rpc(gateway, COMPLETE_METHOD, { text: "/mo" })).body;
    assert.deepEqual(error && [error.code, error.message], [-32603, "commands are unavailable right now"]);
  });
  assert.deepEqual(
    gateway.echo.seen.filter((text) => text.startsWith("/")),
    [],
    "no command-like message reached the echo executor",
  );

  // Back on the same address, with the same registry.
  sidecar = await startSidecar({ dataDir: sidecar.dataDir, listen: sidecar.address });

  await t.test("once it is back, commands work and the card catches up", async () => {
    await gateway.commands.waitReady(30_000);
    const { revision } = await gateway.commands.register({ spec: { name: "after-restart", description: "Registered after the restart" } });
    await gateway.sync.waitForRevision(revision);
    const card = await gateway.fetchCard();
    const entry = card.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXTENSION_URI);
    assert.ok((entry?.params?.commands as { name: string }[]).some((c) => c.name === "after-restart"));

    for (const stream of [false, true]) {
      const turn = await send(gateway, "/model gpt-x-mini", { taskId: taskIds.get(stream)!, stream });
      assert.equal(turn.replyText, "Model set to gpt-x-mini.");
      assert.equal(readTaskData(turn.stored).settings?.model, "gpt-x-mini");
    }
  });
});
