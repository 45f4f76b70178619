/**
 * The kit end to end: the real sidecar, a real @a2a-js/sdk JSON-RPC gateway wrapping an
 * echo executor with the kit, driven by the SDK's own client, streaming and not.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Message, Task, TaskState } from "@a2a-js/sdk";
import { InMemoryTaskStore, RequestContext, ServerCallContext, UnauthenticatedUser, type User } from "@a2a-js/sdk/server";
import {
  COMMANDS_EXTENSION_URI,
  CommandsError,
  TASK_DATA_KEY,
  defaultSender,
  endWaitForNextMessage,
  readTaskData,
  withoutCommands,
  type TaskData,
} from "a2a-commands";
import { runScenario, send, startGateway, startSidecar, type Gateway, type Scenario, type Sidecar, vectors, type Turn } from "./harness.js";

let sidecar: Sidecar;
let gateway: Gateway;

before(async () => {
  sidecar = await startSidecar();
  gateway = await startGateway(sidecar.address);
});

after(async () => {
  await gateway.close();
  assert.equal(await sidecar.stop(), 0);
});

/** Asserts a command's reply: the text, metadata on the reply only, the state kept. */
function assertCommandReply(turn: Turn, command: string, text: string | RegExp, state: TaskState): void {
  if (typeof text === "string") assert.equal(turn.replyText, text);
  else assert.match(turn.replyText, text);
  assert.equal(turn.reply.metadata?.command, command);
  assert.equal(turn.state, state, "the reply carries the task's state");
  assert.equal(turn.stored.status?.state, state, "the stored task's state is unchanged");
  assert.equal(turn.stored.metadata?.command, undefined, "no command metadata on the Task");
  assert.equal(turn.stored.metadata?.task_ref, undefined, "no task_ref on the Task");
  if (turn.statusUpdate) assert.deepEqual(turn.statusUpdate.metadata ?? {}, {}, "event metadata stays empty");
}

const data = (task: Task): TaskData => readTaskData(task);

for (const stream of [false, true]) {
  describe(stream ? "streaming sends" : "non-streaming sends", () => {
    /** A task that the echo executor started (input-required). */
    async function echoTask(): Promise<string> {
      const turn = await send(gateway, "hello", { stream });
      assert.equal(turn.replyText, "echo: hello");
      assert.equal(turn.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      return turn.taskId;
    }

    test("plain text reaches the echo executor", async () => {
      const turn = await send(gateway, "what is the plan?", { stream });
      assert.equal(turn.replyText, "echo: what is the plan?");
      assert.ok(gateway.echo.seen.includes("what is the plan?"));
    });

    test("/model shows the default and the selectable models", async () => {
      const taskId = await echoTask();
      const turn = await send(gateway, "/model", { taskId, stream });
      assertCommandReply(turn, "model", "Model: gpt-x (default)\nSelectable: gpt-x, gpt-x-mini", TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.deepEqual(turn.kinds, stream ? ["task", "statusUpdate"] : ["task"]);
    });

    test("/model <selectable> sets it, then /status shows it", async () => {
      const taskId = await echoTask();
      const set = await send(gateway, "/model gpt-x-mini", { taskId, stream });
      assertCommandReply(set, "model", "Model set to gpt-x-mini.", TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(data(set.stored).settings?.model, "gpt-x-mini");
      const texts = (task: Task) => task.history.map((m) => (m.parts[0]?.content?.$case === "text" ? m.parts[0].content.value : ""));
      assert.deepEqual(texts(set.stored).slice(-2), ["/model gpt-x-mini", "Model set to gpt-x-mini."]);
      assert.deepEqual(texts({ ...set.stored, history: withoutCommands(set.stored.history) }), ["hello", "echo: hello"]);
      const status = await send(gateway, "/status", { taskId, stream });
      assertCommandReply(status, "status", /^Task .*\nState: INPUT_REQUIRED\nModel: gpt-x-mini\n/, TaskState.TASK_STATE_INPUT_REQUIRED);
    });

    test("/effort high sets the effort", async () => {
      const taskId = await echoTask();
      const turn = await send(gateway, "/effort high", { taskId, stream });
      assertCommandReply(turn, "effort", "Effort set to high.", TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(data(turn.stored).settings?.effort, "high");
      const status = await send(gateway, "/status", { taskId, stream });
      assert.match(status.replyText, /\nEffort: high\n/);
    });

    test("/sub-task creates a linked task in the store, with task_ref on the reply", async () => {
      const taskId = await echoTask();
      const turn = await send(gateway, "/sub-task Draft the API section", { taskId, stream });
      const subId = `${taskId}.1`;
      assertCommandReply(turn, "sub-task", `Starting a sub-task.\nCreated sub-task ${subId}.`, TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(turn.reply.metadata?.task_ref, subId);
      assert.deepEqual(data(turn.stored).subTasks, [subId]);

      const sub = await gateway.client.getTask({ tenant: "", id: subId, historyLength: undefined });
      assert.equal(sub.contextId, turn.stored.contextId);
      assert.equal(sub.status?.state, TaskState.TASK_STATE_SUBMITTED);
      assert.deepEqual(data(sub), { name: "Draft the API section", goal: "Draft the API section", parentId: taskId });
      assert.deepEqual(sub.history[0]?.referenceTaskIds, [taskId]);

      const status = await send(gateway, "/status", { taskId, stream });
      assert.match(status.replyText, new RegExp(`\\nSub-tasks:\\n- ${subId.replace(/[.-]/g, "\\$&")} · SUBMITTED$`));
      const second = await send(gateway, "/sub-task Review it", { taskId, stream });
      assert.equal(second.reply.metadata?.task_ref, `${taskId}.2`);
    });

    test("a watcher is refused a change, and may read", async () => {
      const taskId = await echoTask();
      const turn = await send(gateway, "/model gpt-x-mini", { taskId, stream, role: "watcher" });
      assertCommandReply(turn, "model", "refused: a watcher may not change the task with /model", TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(data(turn.stored).settings, undefined);
      const read = await send(gateway, "/model", { taskId, stream, role: "watcher" });
      assert.match(read.replyText, /^Model: gpt-x \(default\)/);
    });

    test("/unknown x reaches the echo executor", async () => {
      const taskId = await echoTask();
      const turn = await send(gateway, "/unknown x", { taskId, stream });
      assert.equal(turn.replyText, "echo: /unknown x");
      assert.ok(gateway.echo.seen.includes("/unknown x"));
    });

    test("a command as a task's first message parks it input-required, awaiting the next message", async () => {
      const first = await send(gateway, "/model gpt-x-mini", { stream });
      assertCommandReply(first, "model", "Model set to gpt-x-mini.", TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.deepEqual(first.kinds, stream ? ["task", "statusUpdate"] : ["task"]);
      assert.deepEqual(data(first.stored), { settings: { model: "gpt-x-mini" }, subState: "awaiting-next-message" });
      assert.equal(first.stored.history[0]?.parts[0]?.content?.$case, "text");
    });

    for (const scenario of vectors("lifecycle").scenarios as Scenario[]) {
      test(`lifecycle: ${scenario.name}`, () => runScenario(gateway, scenario, stream));
    }
  });
}

test("commands never reach the echo executor", () => {
  const leaked = gateway.echo.seen.filter((text) => /^\/(model|effort|sub-task|status)\b/.test(text));
  assert.deepEqual(leaked, []);
});

test("the served card lists a command registered while the gateway runs", async () => {
  const names = (card: Awaited<ReturnType<Gateway["fetchCard"]>>): string[] => {
    const entry = card.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXTENSION_URI);
    assert.ok(entry, "the card carries the commands extension");
    assert.equal(entry.required, false);
    return (entry.params?.commands as { name: string }[]).map((c) => c.name);
  };
  assert.deepEqual(names(await gateway.fetchCard()), ["model", "effort", "sub-task", "status"]);

  const { revision } = await gateway.commands.register({
    spec: { name: "deploy", description: "Deploy the current branch", argumentHint: "<env>" },
  });
  await gateway.sync.waitForRevision(revision);
  assert.deepEqual(names(await gateway.fetchCard()), ["model", "effort", "sub-task", "status", "deploy"]);

  const turn = await send(gateway, "/deploy staging", { stream: false });
  assertCommandReply(turn, "deploy", "command /deploy has no handler", TaskState.TASK_STATE_INPUT_REQUIRED);
});

test("sidecar errors are CommandsError with the code and the field", async () => {
  await assert.rejects(gateway.commands.register({ spec: { name: "Deploy", description: "x" } }), (error: unknown) => {
    assert.ok(error instanceof CommandsError);
    assert.equal(error.codeName, "invalid_argument");
    assert.equal(error.field, "spec.name");
    assert.match(error.reason ?? "", /^must match/);
    assert.equal(error.violations[0]?.field, "spec.name");
    return true;
  });
  await assert.rejects(gateway.commands.unregister("nope"), (error: unknown) => error instanceof CommandsError && error.codeName === "not_found");
  assert.equal(TASK_DATA_KEY, "a2a-commands");
});

test("the default sender: an authenticated user is the assignee, anyone else a watcher", async () => {
  const alice: User = { isAuthenticated: true, userName: "alice" };
  const message = Message.fromJSON({ messageId: "m-1", role: "ROLE_USER", parts: [{ text: "/model" }] });
  const request = { tenant: "", message, configuration: undefined, metadata: undefined };
  const from = (user: User) => defaultSender(new RequestContext(request, "t", "c", new ServerCallContext({ user })));
  assert.deepEqual(await from(alice), { id: "alice", role: "assignee" });
  assert.deepEqual(await from(new UnauthenticatedUser()), { id: "", role: "watcher" });
});

test("the next message ends a wait for it, and no other wait (docs/kit-contract.md, section 4)", async () => {
  const taskStore = new InMemoryTaskStore();
  const context = new ServerCallContext({ user: new UnauthenticatedUser() });
  const waiting = Task.fromJSON({
    id: "t-1",
    contextId: "c-1",
    status: { state: "TASK_STATE_INPUT_REQUIRED" },
    metadata: { other: 1, [TASK_DATA_KEY]: { name: "Docs", sub_state: "awaiting-next-message", x: 2 } },
  });
  assert.equal(await endWaitForNextMessage(waiting, { taskStore, context }), true);
  // Cleared in the task the agent is handed, the old spelling too, the rest kept; and saved.
  assert.deepEqual(waiting.metadata, { other: 1, [TASK_DATA_KEY]: { name: "Docs", x: 2 } });
  assert.deepEqual((await taskStore.load("t-1", context))?.metadata, waiting.metadata);
  const answering = Task.fromJSON({
    id: "t-2",
    contextId: "c-1",
    status: { state: "TASK_STATE_INPUT_REQUIRED" },
    metadata: { [TASK_DATA_KEY]: { subState: "awaiting-answer" } },
  });
  assert.equal(await endWaitForNextMessage(answering, { taskStore, context }), false);
  assert.equal(readTaskData(answering).subState, "awaiting-answer");
  assert.equal(await taskStore.load("t-2", context), undefined, "nothing to end, nothing written");
});
