/**
 * Completion, per-command roles and hidden commands: through the client, through the
 * wrapped executor and the served card, and the gateway's `commands/complete` JSON-RPC
 * method, end to end against the real sidecar.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { TaskState } from "@a2a-js/sdk";
import { COMMANDS_EXTENSION_URI, CommandsError, pb } from "a2a-commands";
import { COMPLETE_METHOD } from "a2a-commands/express";
import { rpc, send, startGateway, startSidecar, type Gateway, type Sidecar } from "./harness.js";

let sidecar: Sidecar;
let gateway: Gateway;

before(async () => {
  sidecar = await startSidecar({ args: ["--handler-secrets-dir", mkdtempSync(join(tmpdir(), "a2a-commands-secrets-"))] });
  gateway = await startGateway(sidecar.address);
  const { commands, sync } = gateway;
  await commands.register({ spec: { name: "deploy", description: "Deploy", argumentHint: "<env>" }, allowedRoles: ["admin"] });
  await commands.register({ spec: { name: "debug", description: "Debug the task" }, hidden: true });
  const { revision } = await commands.register({
    spec: { name: "docs", description: "Search the docs" },
    handler: { protocol: "mcp", url: "http://127.0.0.1:9/mcp", headers: [{ name: "authorization", valueFile: "docs-token" }] },
  });
  await sync.waitForRevision(revision);
});

after(async () => {
  await gateway.close();
  assert.equal(await sidecar.stop(), 0);
});

const texts = (values: ReadonlyArray<{ text: string }>) => values.map((v) => v.text);

test("client.complete: names by prefix, built-in values, hidden and disallowed left out", async () => {
  const { commands } = gateway;
  const assignee = { id: "u-1", role: "assignee" } as const;
  assert.deepEqual(texts((await commands.complete({ text: "/", sender: assignee })).values), ["/model ", "/effort ", "/sub-task ", "/status ", "/docs "]);
  const admin = await commands.complete({ text: "/d", sender: { id: "u-2", role: pb.ParticipantRole.ADMIN } });
  assert.deepEqual(admin.values.map((v) => [v.value, v.description]), [["deploy", "Deploy"], ["docs", "Search the docs"]]);
  assert.equal(admin.command, "");

  const model = await commands.complete({ text: "/model g", sender: assignee });
  assert.deepEqual(texts(model.values), ["/model gpt-x", "/model gpt-x-mini"]);
  assert.deepEqual([model.command, model.total, model.hasMore, typeof model.revision], ["model", 2, false, "bigint"]);
  assert.deepEqual(texts((await commands.complete({ text: "/effort h", sender: assignee })).values), ["/effort high"]);
  const limited = await commands.complete({ text: "/", sender: assignee, limit: 2 });
  assert.deepEqual([limited.values.length, limited.total, limited.hasMore], [2, 5, true]);

  await assert.rejects(commands.complete({ text: "/mo" }), (error: unknown) => {
    assert.ok(error instanceof CommandsError);
    assert.deepEqual([error.codeName, error.field], ["invalid_argument", "sender.role"]);
    return true;
  });
});

test("ListSpecs shows allowed roles, hidden, and an MCP handler with its headers", async () => {
  const { commands } = await gateway.commands.listSpecs();
  const byName = new Map(commands.map((c) => [c.spec?.name, c]));
  assert.deepEqual(byName.get("deploy")?.allowedRoles, [pb.ParticipantRole.ADMIN]);
  assert.equal(byName.get("deploy")?.hidden, false);
  assert.equal(byName.get("debug")?.hidden, true);
  const handler = byName.get("docs")?.handler;
  assert.deepEqual(handler?.endpoint, { case: "mcp", value: "http://127.0.0.1:9/mcp" });
  assert.deepEqual(handler?.headers.map((h) => [h.name, h.valueFile]), [["authorization", "docs-token"]]);
});

test("a command for admins only is refused to an assignee by the wrapped executor, and runs for an admin", async () => {
  const refused = await send(gateway, "/deploy prod", { stream: false });
  assert.equal(refused.replyText, "refused: an assignee may not run /deploy");
  assert.equal(refused.reply.metadata?.command, "deploy");
  assert.equal(refused.stored.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const watcher = await send(gateway, "/deploy prod", { taskId: refused.taskId, stream: true, role: "watcher" });
  assert.equal(watcher.replyText, "refused: a watcher may not run /deploy");
  const admin = await send(gateway, "/deploy prod", { taskId: refused.taskId, stream: false, role: "admin" });
  assert.equal(admin.replyText, "command /deploy has no handler");
  assert.ok(!gateway.echo.seen.some((text) => text.startsWith("/deploy")));
});

test("a hidden command is not on the served card, and runs", async () => {
  const card = await gateway.fetchCard();
  const entry = card.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXTENSION_URI);
  const names = (entry?.params?.commands as { name: string }[]).map((c) => c.name);
  assert.deepEqual(names, ["model", "effort", "sub-task", "status", "deploy", "docs"]);
  const turn = await send(gateway, "/debug now", { stream: false });
  assert.equal(turn.replyText, "command /debug has no handler");
  assert.equal(turn.reply.metadata?.command, "debug");
  assert.ok(!gateway.echo.seen.includes("/debug now"));
});

test(`the gateway's ${COMPLETE_METHOD} JSON-RPC method, end to end`, async () => {
  const { taskId } = await send(gateway, "/model gpt-x-mini", { stream: false });
  const answer = await rpc(gateway, COMPLETE_METHOD, { text: "/model g", taskId }, { "A2A-Extensions": COMMANDS_EXTENSION_URI });
  assert.deepEqual(answer.body, {
    jsonrpc: "2.0",
    id: 7,
    result: {
      values: [
        { value: "gpt-x", text: "/model gpt-x", description: "" },
        { value: "gpt-x-mini", text: "/model gpt-x-mini", description: "" },
      ],
      total: 2,
      hasMore: false,
      command: "model",
    },
  });
  assert.equal(answer.headers.get("A2A-Extensions"), COMMANDS_EXTENSION_URI, "the extension is marked activated");

  // The sender comes from the executor's resolver (here the x-role header).
  const names = async (role?: string) =>
    texts((await rpc(gateway, COMPLETE_METHOD, { text: "/de" }, role ? { "x-role": role } : {})).body.result?.values as { text: string }[]);
  assert.deepEqual(await names(), []);
  assert.deepEqual(await names("admin"), ["/deploy "]);
  assert.equal((await rpc(gateway, COMPLETE_METHOD, { text: "/" })).headers.get("A2A-Extensions"), null);
  const limited = (await rpc(gateway, COMPLETE_METHOD, { text: "/", limit: 1 })).body.result;
  assert.deepEqual([limited?.total, limited?.hasMore], [5, true]);

  const error = async (params: unknown) => (await rpc(gateway, COMPLETE_METHOD, params)).body.error;
  assert.equal((await error({ text: "/mo", taskId: "no-such-task" }))?.code, -32001);
  assert.equal((await error({ taskId }))?.code, -32602);
  assert.equal((await error({ text: "/", limit: -1 }))?.code, -32602);

  // Every other request still reaches the SDK's handler, errors included.
  const task = (await rpc(gateway, "GetTask", { id: taskId })).body.result;
  assert.equal(task?.id, taskId);
  assert.equal((await rpc(gateway, "NoSuchMethod", {})).body.error?.code, -32601);
  const garbled = await fetch(gateway.url, { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
  assert.equal(((await garbled.json()) as { error: { code: number } }).error.code, -32700);
});
