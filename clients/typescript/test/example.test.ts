/** The README's smallest gateway (examples/echo-gateway.ts), run as its own process. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { Message, TaskState } from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import { COMMANDS_EXTENSION_URI } from "a2a-commands";
import { startSidecar, type Sidecar } from "./harness.js";

let sidecar: Sidecar;
const example = fileURLToPath(new URL("../examples/echo-gateway.js", import.meta.url));
const gateway = { url: "", stop: async () => {} };

before(async () => {
  sidecar = await startSidecar();
  const child = spawn(process.execPath, [example], {
    env: { ...process.env, PORT: "0", A2A_COMMANDS_ADDR: sidecar.address },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit");
  gateway.url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const event = JSON.parse(line) as { message?: string; url?: string };
      if (event.message === "listening" && event.url) resolve(event.url);
    });
    void exited.then(() => reject(new Error("the example exited before listening")));
  });
  gateway.stop = async () => {
    child.kill("SIGTERM");
    await exited;
  };
});

after(async () => {
  await gateway.stop();
  assert.equal(await sidecar.stop(), 0);
});

test("the smallest gateway answers commands, echoes the rest, and lists the commands", async () => {
  const card = await new DefaultAgentCardResolver().resolve(gateway.url);
  const entry = card.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXTENSION_URI);
  assert.deepEqual((entry?.params?.commands as { name: string }[]).map((c) => c.name), ["model", "effort", "sub-task", "status"]);

  const client = await new ClientFactory().createFromUrl(gateway.url);
  const ask = async (text: string, taskId?: string) => {
    const message = Message.fromJSON({ messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }], taskId });
    const result = await client.sendMessage({ tenant: "", message, configuration: undefined, metadata: undefined });
    assert.ok("id" in result);
    const part = result.status?.message?.parts[0]?.content;
    return { task: result, text: part?.$case === "text" ? part.value : "" };
  };
  const first = await ask("/model gpt-x-mini");
  assert.equal(first.text, "Model set to gpt-x-mini.");
  assert.equal(first.task.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const echo = await ask("hi", first.task.id);
  assert.equal(echo.text, "echo: hi");
  const status = await ask("/status", first.task.id);
  // "hi" was the message the task awaited: the echo leaves it input-required, no longer awaiting it.
  assert.match(status.text, /\nState: INPUT_REQUIRED\nModel: gpt-x-mini\n/);
});
