/**
 * The shared vectors (docs/vectors/*.json): the rules docs/kit-contract.md writes down,
 * the same files the Python kit and the Rust tests run.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { fromJson, toJson, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { Message, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import {
  CommandsClient,
  CommandsError,
  TASK_DATA_KEY,
  buildTaskSnapshot,
  changedTaskData,
  commandName,
  executeDeadlineMs,
  fallbackReply,
  fromSdkMessage,
  mayBeCommand,
  newSubTask,
  parseAddress,
  pb,
  readTaskData,
} from "a2a-commands";
import { startSidecar, vectors, type Json, type Sidecar } from "./harness.js";

const cases = (name: string): Json[] => vectors(name).cases as Json[];
const label = (c: Json, i: number): string => `${i}${c.note ? `: ${c.note}` : ""}`;

const message = (parts: unknown): Message => Message.fromJSON({ messageId: "m-1", role: "ROLE_USER", parts });
/** `expected` read as `schema`'s message and written back, as the kit's own would be. */
const normal = <D extends DescMessage>(schema: D, expected: unknown): JsonValue => toJson(schema, fromJson(schema, expected as JsonValue));
/** An SDK object's JSON without its status timestamp (the vectors leave it out). */
function untimed(json: unknown): unknown {
  const copy = structuredClone(json) as { status?: { timestamp?: unknown } };
  delete copy.status?.timestamp;
  return copy;
}

describe("messages: pre-check and command syntax", () => {
  cases("messages").forEach((c, i) =>
    test(label(c, i), () => {
      assert.equal(mayBeCommand(message(c.parts)), c.mayBeCommand);
      assert.equal(commandName(message(c.parts)), c.syntax?.name);
    }),
  );
});

describe("messages: as the service classifies them", () => {
  let sidecar: Sidecar;
  let client: CommandsClient;
  before(async () => {
    sidecar = await startSidecar();
    client = new CommandsClient({ address: `http://${sidecar.address}` });
  });
  after(async () => {
    client.close();
    assert.equal(await sidecar.stop(), 0);
  });
  test("every case", async () => {
    for (const c of cases("messages")) {
      const answer = await client.classify({ message: fromSdkMessage(message(c.parts)) });
      answer.revision = 0n;
      assert.deepEqual(toJson(pb.ClassifyResponseSchema, answer), normal(pb.ClassifyResponseSchema, c.service), JSON.stringify(c));
    }
  });
});

describe("task data: read, and the snapshot", () => {
  cases("task-data").forEach((c, i) =>
    test(label(c, i), async () => {
      const task = Task.fromJSON(c.task);
      assert.deepEqual(readTaskData(task), c.data);
      const states = c.subTaskStates as Record<string, string>;
      const load = async (id: string) => (id in states ? Task.fromJSON({ id, status: { state: states[id] } }) : undefined);
      const snapshot = await buildTaskSnapshot(task, load);
      assert.deepEqual(toJson(pb.TaskSnapshotSchema, snapshot), normal(pb.TaskSnapshotSchema, c.snapshot));
    }),
  );
});

describe("changes: to task data and a sub-task", () => {
  cases("changes").forEach((c, i) =>
    test(label(c, i), () => {
      const task = Task.fromJSON(c.task);
      const changes: MessageShape<typeof pb.ChangesSchema> = fromJson(pb.ChangesSchema, c.changes as JsonValue);
      assert.deepEqual(changedTaskData(readTaskData(task), changes), c.data);
      if (c.subTask) {
        const created = newSubTask(task, changes.subTask!);
        assert.deepEqual(untimed(Task.toJSON(created)), Task.toJSON(Task.fromJSON(c.subTask)));
        assert.deepEqual(created.metadata?.[TASK_DATA_KEY], c.subTask.metadata[TASK_DATA_KEY]);
      } else {
        assert.equal(changes.subTask, undefined);
      }
    }),
  );
});

describe("Execute's deadlines", () => {
  const deadlines = vectors("deadlines");
  const registry = fromJson(pb.ListSpecsResponseSchema, deadlines.registry as JsonValue);
  (deadlines.cases as Json[]).forEach((c, i) =>
    test(`${i}: ${String(c.command)}`, () => {
      const seen = c.no_registry ? undefined : registry;
      assert.equal(executeDeadlineMs(seen, (c.command as string | null) ?? undefined), c.deadline_ms);
    }),
  );
});

describe("fallback replies", () => {
  cases("fallback").forEach((c, i) =>
    test(label(c, i), () => {
      const reply = fallbackReply(Task.fromJSON(c.task), Message.fromJSON(c.message));
      if (c.reply === null) assert.equal(reply, undefined);
      else assert.deepEqual(untimed(TaskStatusUpdateEvent.toJSON(reply!)), TaskStatusUpdateEvent.toJSON(TaskStatusUpdateEvent.fromJSON(c.reply)));
    }),
  );
});

describe("prompt templates, as the service expands them", () => {
  let sidecar: Sidecar;
  let client: CommandsClient;
  before(async () => {
    sidecar = await startSidecar();
    client = new CommandsClient({ address: `http://${sidecar.address}` });
  });
  after(async () => {
    client.close();
    assert.equal(await sidecar.stop(), 0);
  });
  test("every template", async () => {
    const task = { id: "t-1", contextId: "c-1", state: pb.TaskState.WORKING };
    const sender = { id: "u", role: pb.ParticipantRole.ASSIGNEE };
    for (const c of vectors("prompts").templates as Json[]) {
      const spec = { name: "p", description: "A prompt" };
      if (c.error !== undefined) {
        await assert.rejects(client.register({ spec, override: true, prompt: c.template }), (error: CommandsError) => {
          assert.equal(error.field, "prompt.template", c.note);
          assert.ok(error.reason?.includes(c.error), `${c.note}: ${error.reason}`);
          return true;
        });
        continue;
      }
      await client.register({ spec, override: true, prompt: c.template });
      const text = c.arguments ? `/p ${c.arguments}` : "/p";
            const answer = await client.execute({ message: fromSdkMessage(message([{ text }])), task, sender, acceptsPrompt: true });
      if (c.failure !== undefined) {
        assert.equal(answer.result.case, "command", c.note);
        assert.equal(answer.result.value?.reply, `/p failed: ${c.failure}`, c.note);
        continue;
      }
      assert.equal(answer.result.case, "prompt", c.note);
      assert.equal(answer.result.value?.text, c.expansion, c.note);
      assert.deepEqual([answer.result.value?.command?.name, answer.result.value?.command?.arguments], ["p", c.arguments], c.note);
    }
  });
});

describe("addresses", () => {
  const fallback = vectors("addresses").default as string;
  cases("addresses").forEach((c, i) =>
    test(`${i}: ${JSON.stringify(c.value)}`, () => {
      if (c.error) assert.throws(() => parseAddress(c.value || fallback), TypeError);
      else assert.deepEqual(parseAddress(c.value || fallback), { target: c.target, tls: c.tls });
    }),
  );
});
