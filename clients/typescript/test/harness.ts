/**
 * Real parts for the tests: the a2a-commands binary, and an @a2a-js/sdk JSON-RPC gateway
 * (express) wrapping an echo executor with the kit, driven by the SDK's own client.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import express from "express";
import {
  AGENT_CARD_PATH,
  AgentCard,
  Message,
  Task,
  TaskState as TaskStateEnum,
  TaskStatusUpdateEvent,
  type TaskState,
} from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { ClientFactory, DefaultAgentCardResolver, type Client } from "@a2a-js/sdk/client";
import {
  COMMANDS_EXTENSION_URI,
  CommandsClient,
  TASK_DATA_KEY,
  keepCardCurrent,
  withCommands,
  type CommandsCardSync,
  type SenderResolver,
  type SenderRole,
} from "a2a-commands";
import { completionHandler } from "a2a-commands/express";

export const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

/** A vector file's JSON (docs/vectors/<name>.json), as parsed. */
export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
/** Reads docs/vectors/<name>.json, the vectors shared with the Python kit and the Rust tests. */
export const vectors = (name: string): Json => JSON.parse(readFileSync(join(ROOT, "docs", "vectors", `${name}.json`), "utf8")) as Json;

/** A running `a2a-commands serve`. */
export interface Sidecar {
  address: string;
  dataDir: string;
  process: ChildProcess;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

let nextPort = process.pid * 97;

/**
 * A free 127.0.0.1 address for a sidecar started there later or again, its port below
 * the kernel's ephemeral range: the kernel hands out no port there by itself, so no
 * outgoing connection (a gateway retrying the stopped sidecar) or port-0 listener takes
 * it in between.
 */
export async function freeAddress(): Promise<string> {
  let ephemeralLow = 32768;
  try {
    ephemeralLow = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32768;
  } catch {
    // not Linux: the usual range
  }
  const low = 10_000;
  const span = ephemeralLow > low + 1_000 ? ephemeralLow - low : 0;
  if (!span) console.error(`*** the ephemeral port range starts at ${ephemeralLow}: ports are the kernel's choice ***`);
  for (let tries = 0; tries < Math.max(span, 1); tries++) {
    const port = span ? low + (nextPort++ % span) : 0;
    const probe = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      probe.once("error", () => resolve(false));
      probe.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (!bound) continue;
    const chosen = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    return `127.0.0.1:${chosen}`;
  }
  throw new Error(`no free port below ${ephemeralLow}`);
}

/**
 * Starts the real binary (A2A_COMMANDS_BIN, else target/debug/a2a-commands) and waits for
 * its JSON "serving" line, which carries the bound address. `listen` defaults to
 * 127.0.0.1:0; a sidecar that will be started again takes `freeAddress()`, and its
 * restart passes that address.
 */
export async function startSidecar(options: { dataDir?: string; listen?: string; args?: string[] } = {}): Promise<Sidecar> {
  const binary = process.env.A2A_COMMANDS_BIN || join(ROOT, "target", "debug", "a2a-commands");
  if (!existsSync(binary)) throw new Error(`${binary} is missing: build it or set A2A_COMMANDS_BIN`);
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "a2a-commands-ts-"));
  const child = spawn(
    binary,
    [
      ...["serve", "--listen", options.listen ?? "127.0.0.1:0", "--health-listen", "off"],
      ...["--log-format", "json", "--data-dir", dataDir, ...(options.args ?? [])],
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const exited = once(child, "exit");
  const seen: string[] = [];
  const address = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      seen.push(line);
      try {
        const event = JSON.parse(line) as { message?: string; addr?: string };
        if (event.message === "serving" && event.addr) resolve(event.addr);
      } catch {
        // not a JSON line
      }
    });
    void exited.then(() => reject(new Error(`a2a-commands exited before serving:\n${seen.join("\n")}`)));
  });
  return {
    address,
    dataDir,
    process: child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
      return child.exitCode;
    },
  };
}

/** The wrapped executor: answers every message it gets with `echo: <text>`, input-required. */
export class EchoExecutor implements AgentExecutor {
  /** Texts that reached the "model". */
  readonly seen: string[] = [];
  /** The last message that reached it, as it was. */
  last: Message | undefined;

  async execute(request: RequestContext, eventBus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId, userMessage } = request;
    const part = userMessage.parts[0]?.content;
    const text = part?.$case === "text" ? part.value : "";
    this.seen.push(text);
    this.last = userMessage;
    eventBus.publish(
      AgentEvent.task(
        request.task ??
          Task.fromJSON({ id: taskId, contextId, status: { state: "TASK_STATE_SUBMITTED" }, history: [Message.toJSON(userMessage)] }),
      ),
    );
    eventBus.publish(
      AgentEvent.statusUpdate(
        TaskStatusUpdateEvent.fromJSON({
          taskId,
          contextId,
          status: {
            state: "TASK_STATE_INPUT_REQUIRED",
            timestamp: new Date().toISOString(),
            message: { messageId: randomUUID(), taskId, contextId, role: "ROLE_AGENT", parts: [{ text: `echo: ${text}` }] },
          },
        }),
      ),
    );
  }

  async cancelTask(): Promise<void> {}
}

const ROLE_NAMES: readonly string[] = ["assignee", "reporter", "watcher", "admin", "none"] satisfies SenderRole[];

/** Sender from the `x-role` header, else the assignee (a stand-in for the gateway's own participants). */
export const senderFromHeader: SenderResolver = ({ context }) => {
  const headers = context.state.get("headers") as Record<string, string | undefined> | undefined;
  const header = headers?.["x-role"] ?? "";
  const role = (ROLE_NAMES.includes(header) ? header : "assignee") as SenderRole;
  return { id: `user-${role}`, role };
};

/** A running gateway and the SDK client driving it. */
export interface Gateway {
  url: string;
  card: AgentCard;
  taskStore: InMemoryTaskStore;
  echo: EchoExecutor;
  sync: CommandsCardSync;
  client: Client;
  commands: CommandsClient;
  errors: unknown[];
  /** The card as served now (fetched, not cached). */
  fetchCard(): Promise<AgentCard>;
  close(): Promise<void>;
}

/** Starts an SDK gateway on 127.0.0.1:0 wrapping {@link EchoExecutor} with the kit. */
export async function startGateway(sidecarAddress: string, options: { sender?: SenderResolver } = {}): Promise<Gateway> {
  const card = AgentCard.fromJSON({
    name: "Echo",
    description: "Echoes what it is told",
    version: "1.0.0",
    supportedInterfaces: [{ url: "http://127.0.0.1/", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: true },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
  });
  const taskStore = new InMemoryTaskStore();
  const echo = new EchoExecutor();
  const errors: unknown[] = [];
  const commands = new CommandsClient({ address: sidecarAddress, timeoutMs: 10_000 });
  const sync = keepCardCurrent(card, commands, { onError: (e) => errors.push(e) });
  await sync.ready;
  const sender = options.sender ?? senderFromHeader;
  const executor = withCommands(echo, { client: commands, taskStore, sender, onError: (e) => errors.push(e) });
  const requestHandler = new DefaultRequestHandler(card, taskStore, executor);

  const app = express();
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, cache: { maxAge: 0 } }));
  app.use(completionHandler({ executor, userBuilder: UserBuilder.noAuthentication }));
  app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  card.supportedInterfaces[0]!.url = url;
  const client = await new ClientFactory().createFromUrl(url);
  return {
    url,
    card,
    taskStore,
    echo,
    sync,
    client,
    commands,
    errors,
    fetchCard: () => new DefaultAgentCardResolver().resolve(url),
    async close() {
      sync.stop();
      commands.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A JSON-RPC answer from the gateway, with the HTTP response's headers. */
export interface RpcAnswer {
  headers: Headers;
  body: { jsonrpc: string; id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };
}

/** POSTs one JSON-RPC request to the gateway's endpoint, as any HTTP client would. */
export async function rpc(gateway: Gateway, method: string, params: unknown, headers: Record<string, string> = {}): Promise<RpcAnswer> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 7, method, params });
  const response = await fetch(gateway.url, { method: "POST", headers: { "content-type": "application/json", "A2A-Version": "1.0", ...headers }, body });
  assert.equal(response.status, 200);
  return { headers: response.headers, body: (await response.json()) as RpcAnswer["body"] };
}

/** What one send produced, the same for streaming and non-streaming sends. */
export interface Turn {
  taskId: string;
  /** The state the answer carried. */
  state: TaskState | undefined;
  /** The answer's status message (the reply). */
  reply: Message;
  replyText: string;
  /** Kinds of the events received (`task`, `statusUpdate`...); `["task"]` when not streaming. */
  kinds: string[];
  /** The last status update received (streaming only). */
  statusUpdate: TaskStatusUpdateEvent | undefined;
  /** The task as the gateway's store has it afterwards (over `tasks/get`). */
  stored: Task;
}

/** Sends `text` (to `taskId`, or a new task) through the SDK client. */
export async function send(
  gateway: Gateway,
  text: string,
  options: { taskId?: string; stream: boolean; role?: SenderRole },
): Promise<Turn> {
  const message = Message.fromJSON({ messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }], taskId: options.taskId });
  const params = { tenant: "", message, configuration: undefined, metadata: undefined };
  const serviceParameters: Record<string, string> = options.role ? { "x-role": options.role } : {};
  const call = { serviceParameters };
  let task: Task | undefined;
  let statusUpdate: TaskStatusUpdateEvent | undefined;
  const kinds: string[] = [];
  if (options.stream) {
    for await (const event of gateway.client.sendMessageStream(params, call)) {
      const payload = event.payload;
      if (!payload) continue;
      kinds.push(payload.$case);
      if (payload.$case === "task") task = payload.value;
      if (payload.$case === "statusUpdate") statusUpdate = payload.value;
    }
  } else {
    const result = await gateway.client.sendMessage(params, call);
    if (!("id" in result)) throw new Error(`expected a Task, got a Message: ${JSON.stringify(result)}`);
    task = result;
    kinds.push("task");
  }
  const taskId = statusUpdate?.taskId ?? task?.id;
  if (!taskId) throw new Error("no task in the answer");
  const status = statusUpdate?.status ?? task?.status;
  const reply = status?.message;
  if (!reply) throw new Error("no reply message");
  const part = reply.parts[0]?.content;
  const stored = await gateway.client.getTask({ tenant: "", id: taskId, historyLength: undefined });
  return { taskId, state: status.state, reply, replyText: part?.$case === "text" ? part.value : "", kinds, statusUpdate, stored };
}

/** One step of a scenario of docs/vectors/lifecycle.json. */
export interface ScenarioStep {
  send: string;
  task: "new" | "same";
  reply: string;
  state: keyof typeof TaskStateCodes;
  events?: { streaming: string[]; nonStreaming: string[] };
  reachesAgent: boolean;
  agentSaw?: string;
  agentMetadata?: Record<string, unknown>;
  taskData?: Record<string, unknown>;
}

/** A scenario of docs/vectors/lifecycle.json. */
export interface Scenario {
  name: string;
  /** Commands registered first: a spec and a prompt template. */
  register?: { name: string; description: string; argumentHint?: string; prompt: string }[];
  steps: ScenarioStep[];
}

const TaskStateCodes = TaskStateEnum;

/** Runs a lifecycle scenario through the SDK's client, streaming or not. */
export async function runScenario(gateway: Gateway, scenario: Scenario, stream: boolean): Promise<void> {
  for (const { name, description, argumentHint, prompt } of scenario.register ?? []) {
    await gateway.commands.register({ spec: { name, description, argumentHint }, override: true, prompt });
  }
  try {
    await runSteps(gateway, scenario, stream);
  } finally {
    // The gateway and its sidecar are shared between tests: leave the registry as found.
    for (const { name } of scenario.register ?? []) await gateway.commands.unregister(name);
  }
}

async function runSteps(gateway: Gateway, scenario: Scenario, stream: boolean): Promise<void> {
  let taskId: string | undefined;
  for (const step of scenario.steps) {
    const seen = gateway.echo.seen.length;
    const turn = await send(gateway, step.send, { taskId: step.task === "same" ? taskId : undefined, stream });
    if (step.task === "same") assert.equal(turn.taskId, taskId);
    taskId = turn.taskId;
    const where = `${scenario.name}: ${step.send}`;
    assert.equal(turn.replyText, step.reply.replaceAll("{taskId}", turn.taskId), where);
    assert.equal(turn.state, TaskStateCodes[step.state], where);
    if (step.events) {
      // @a2a-js/sdk opens every stream with the Task, an existing task's too.
      const events = stream ? step.events.streaming : step.events.nonStreaming;
      assert.deepEqual(turn.kinds, stream && step.task === "same" ? ["task", ...events] : events, where);
    }
    assert.equal(gateway.echo.seen.length > seen, step.reachesAgent, where);
    if (step.agentSaw !== undefined) assert.equal(gateway.echo.seen.at(-1), step.agentSaw, where);
    for (const [key, value] of Object.entries(step.agentMetadata ?? {})) assert.deepEqual(gateway.echo.last?.metadata?.[key], value, where);
    if (step.taskData) assert.deepEqual(turn.stored.metadata?.[TASK_DATA_KEY] ?? {}, step.taskData, where);
  }
}

/** A gateway running as its own process (an example, or the README's as installed). */
export interface GatewayProcess {
  /** Its JSON-RPC URL. */
  url: string;
  /** Stops it and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * Starts `node <args>` and waits, on readiness rather than time, for the stdout line from
 * which `listening` reads the gateway's URL; fails if the process exits first.
 */
export async function spawnGateway(
  args: string[],
  options: { cwd?: string; env: NodeJS.ProcessEnv; listening: (line: string) => string | undefined },
): Promise<GatewayProcess> {
  const child = spawn(process.execPath, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "inherit"] });
  const exited = once(child, "exit");
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const found = options.listening(line);
      if (found) resolve(found);
    });
    void exited.then(() => reject(new Error(`${args.join(" ")} exited before listening`)));
  });
  return {
    url,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Sends `text` (on `taskId`, if given) with the SDK's client: the task, and its reply's text. */
export async function ask(client: Client, text: string, taskId?: string): Promise<{ task: Task; text: string }> {
  const message = Message.fromJSON({ messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }], taskId });
  const result = await client.sendMessage({ tenant: "", message, configuration: undefined, metadata: undefined });
  assert.ok("id" in result, "a task, not a message");
  const part = result.status?.message?.parts[0]?.content;
  return { task: result, text: part?.$case === "text" ? part.value : "" };
}

/**
 * The gateway's card once it lists the commands: a gateway serves from its first second,
 * and its card gains the commands extension once the card watcher has reached the
 * sidecar (at most 30 s here).
 */
export async function cardWithCommands(url: string): Promise<AgentCard> {
  for (let i = 0; ; i++) {
    const card = await new DefaultAgentCardResolver().resolve(url);
    if (card.capabilities?.extensions.some((e) => e.uri === COMMANDS_EXTENSION_URI) || i >= 300) return card;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
