/**
 * README.md as written: the kit packed into an archive and installed by the README's
 * install line into an empty project, loaded with `require` as well as `import`, and the
 * README's gateway block run there, verbatim, against the real sidecar.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { TaskState } from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import { COMMANDS_EXTENSION_URI } from "a2a-commands";
import { cardWithCommands, ask, freeAddress, spawnGateway, startSidecar, type GatewayProcess, type Sidecar } from "./harness.js";

const KIT = fileURLToPath(new URL("../../", import.meta.url));
const ROOT = join(KIT, "..", "..");
const README = readFileSync(join(KIT, "README.md"), "utf8");

/** The first fenced block of `language` after `heading`. */
function block(heading: string, language: string): string {
  const section = README.split(heading)[1] ?? "";
  const match = new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(section);
  assert.ok(match, `README.md: no ${language} block under ${heading}`);
  return match[1]!;
}

/** The gateway's own agent, as a user of the README would have it: echoes, input-required. */
const MY_AGENT = `
import { AgentCard, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { AgentEvent } from "@a2a-js/sdk/server";
export const agentCard = AgentCard.fromJSON({
  name: "Echo", description: "Echoes", version: "1.0.0", capabilities: { streaming: true },
  supportedInterfaces: [{ url: "http://127.0.0.1/", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
  defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
});
export const myExecutor = {
  async execute({ taskId, contextId, task, userMessage }, eventBus) {
    eventBus.publish(AgentEvent.task(task ?? Task.fromJSON({ id: taskId, contextId, status: { state: "TASK_STATE_SUBMITTED" } })));
    const part = userMessage.parts[0]?.content;
    const text = "echo: " + (part?.$case === "text" ? part.value : "");
    const message = { messageId: taskId + ":" + Date.now(), taskId, contextId, role: "ROLE_AGENT", parts: [{ text }] };
    eventBus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ taskId, contextId, status: { state: "TASK_STATE_INPUT_REQUIRED", message } })));
  },
  async cancelTask() {},
};
`;

let sidecar: Sidecar;
let project: string;
let gateway: GatewayProcess;

before(async () => {
  sidecar = await startSidecar();
  project = mkdtempSync(join(tmpdir(), "a2a-commands-readme-"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "my-gateway", private: true, type: "module" }));
  const npm = (args: string[], cwd: string) => execFileSync("npm", [...args, "--no-audit", "--no-fund", "--prefer-offline"], { cwd, stdio: "pipe" });
  // "npm pack" as the README says; `npm run build` has just built it, so not again.
  npm(["pack", "--ignore-scripts"], KIT);
  const install = block("## Install", "sh").split("\n").find((line) => line.startsWith("npm install --prefix"));
  assert.ok(install, "README.md: no install line");
  const [, , ...args] = install.replace(/ *#.*$/, "").trim().split(/\s+/);
  // The README's line only: it must bring everything the gateway imports.
  npm(["install", ...args.map((a) => (a === "path/to/your-gateway" ? project : a))], ROOT);
  writeFileSync(join(project, "my-agent.js"), MY_AGENT);
  writeFileSync(join(project, "gateway.mjs"), block("## Slash commands in an existing agent", "ts"));

  gateway = await spawnReadmeGateway(sidecar.address);
});

after(async () => {
  await gateway.stop();
  assert.equal(await sidecar.stop(), 0);
});

/** The README gateway, run in the project against the sidecar at `address`. */
function spawnReadmeGateway(address: string): Promise<GatewayProcess> {
  return spawnGateway(["gateway.mjs"], {
    cwd: project,
    env: { ...process.env, PORT: "0", A2A_COMMANDS_ADDR: `http://${address}` },
    listening: (line) => {
      const port = /^listening .*port: (\d+)/.exec(line)?.[1];
      return port === undefined ? undefined : `http://127.0.0.1:${port}/`;
    },
  });
}

test("the installed kit loads with require and with import", () => {
  const check = (args: string[]) => execFileSync(process.execPath, args, { cwd: project, encoding: "utf8" }).trim();
  const probe = "typeof k.CommandsClient + ' ' + typeof k.withCommands + ' ' + typeof e.completionHandler";
  assert.equal(check(["-e", `const k = require("a2a-commands"); const e = require("a2a-commands/express"); console.log(${probe})`]), "function function function");
  const esm = `import * as k from "a2a-commands"; import * as e from "a2a-commands/express"; console.log(${probe})`;
  assert.equal(check(["--input-type=module", "-e", esm]), "function function function");
});

test("the README gateway answers commands, passes the rest on, and lists the commands", async () => {
  const card = await cardWithCommands(gateway.url);
  const entry = card.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXTENSION_URI);
  assert.deepEqual((entry?.params?.commands as { name: string }[]).map((c) => c.name), ["model", "effort", "sub-task", "status"]);
  card.supportedInterfaces[0]!.url = gateway.url;
  const client = await new ClientFactory().createFromAgentCard(card);

  const first = await ask(client, "/model");
  assert.match(first.text, /^Model: gpt-x \(default\)\n/);
  assert.equal(first.task.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  // Anonymous callers are watchers by default: they may read, not change.
  assert.equal((await ask(client, "/effort high", first.task.id)).text, "refused: a watcher may not change the task with /effort");
  assert.equal((await ask(client, "hello", first.task.id)).text, "echo: hello");
});

test("the README gateway serves from its first second, with no sidecar yet", async () => {
  // An address nobody serves yet; the sidecar is started there later.
  const address = await freeAddress();
  const early = await spawnReadmeGateway(address);
  let later: Sidecar | undefined;
  try {
    const card = await new DefaultAgentCardResolver().resolve(early.url);
    assert.equal(card.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXTENSION_URI), undefined);
    card.supportedInterfaces[0]!.url = early.url;
    const client = await new ClientFactory().createFromAgentCard(card);
    const plain = await ask(client, "hello");
    assert.equal(plain.text, "echo: hello");
    assert.equal((await ask(client, "/status", plain.task.id)).text, "/status failed: commands are unavailable right now");

    later = await startSidecar({ listen: address });
    // The card watcher reconnects with backoff (at most 5 s between tries).
    let entry;
    for (let i = 0; i < 300 && !entry; i++) {
      const now = await new DefaultAgentCardResolver().resolve(early.url);
      entry = now.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXTENSION_URI);
      if (!entry) await sleep(100);
    }
    assert.ok(entry, "the card never gained the commands");
    assert.match((await ask(client, "/status", plain.task.id)).text, /^Task /);
  } finally {
    await early.stop();
    if (later) assert.equal(await later.stop(), 0);
  }
});
