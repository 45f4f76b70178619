/** The README's smallest gateway (examples/echo-gateway.ts), run as its own process. */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { TaskState } from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import { COMMANDS_EXTENSION_URI } from "a2a-commands";
import { cardWithCommands, ask, spawnGateway, startSidecar, type GatewayProcess, type Sidecar } from "./harness.js";

let sidecar: Sidecar;
const example = fileURLToPath(new URL("../examples/echo-gateway.js", import.meta.url));
let gateway: GatewayProcess;

before(async () => {
  sidecar = await startSidecar();
  gateway = await spawnGateway([example], {
    env: { ...process.env, PORT: "0", A2A_COMMANDS_ADDR: sidecar.address },
    listening: (line) => {
      const event = JSON.parse(line) as { message?: string; url?: string };
      return event.message === "listening" ? event.url : undefined;
    },
  });
});

after(async () => {
  await gateway.stop();
  assert.equal(await sidecar.stop(), 0);
});

test("the smallest gateway answers commands, echoes the rest, and lists the commands", async () => {
  const card = await cardWithCommands(gateway.url);
  const entry = card.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXTENSION_URI);
  assert.deepEqual((entry?.params?.commands as { name: string }[]).map((c) => c.name), ["model", "effort", "sub-task", "status"]);

  const client = await new ClientFactory().createFromUrl(gateway.url);

  const first = await ask(client, "/model gpt-x-mini");
  assert.equal(first.text, "Model set to gpt-x-mini.");
  assert.equal(first.task.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const echo = await ask(client, "hi", first.task.id);
  assert.equal(echo.text, "echo: hi");
  const status = await ask(client, "/status", first.task.id);
  // "hi" was the message the task awaited: the echo leaves it input-required, no longer awaiting it.
  assert.match(status.text, /\nState: INPUT_REQUIRED\nModel: gpt-x-mini\n/);
});
