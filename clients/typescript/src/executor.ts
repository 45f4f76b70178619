/**
 * An `AgentExecutor` that answers slash commands from the sidecar and hands everything
 * else to the gateway's own executor.
 *
 * @packageDocumentation
 */
import { randomUUID } from "node:crypto";
import {
  Message as SdkMessageCodec,
  SendMessageRequest,
  Task as SdkTaskCodec,
  TaskStatusUpdateEvent as SdkStatusUpdateCodec,
  type Message as SdkMessage,
  type Task,
  TaskState,
  type TaskStatusUpdateEvent as SdkStatusUpdate,
} from "@a2a-js/sdk";
import { RequestMalformedError, TaskNotFoundError } from "@a2a-js/sdk/errors";
import {
  AgentEvent,
  RequestContext,
  type AgentExecutor,
  type ExecutionEventBus,
  type ServerCallContext,
  type TaskStore,
} from "@a2a-js/sdk/server";
import { participantRole, toCommandsError, type CommandsClient, type SenderRole } from "./client.js";
import { COMMANDS_EXTENSION_URI } from "./card.js";
import { fromSdkMessage, toSdkStatusUpdate } from "./convert.js";
import { Outcome, type CompleteResponse, type ExecuteResponse, type PromptExpansion } from "./gen/a2a/commands/v1/commands_pb.js";
import { commandName, mayBeCommand } from "./syntax.js";
import { TASK_DATA_KEY, applyChanges, buildTaskSnapshot, endWaitForNextMessage, type TaskData } from "./task-data.js";

/** The reply to a command when the sidecar cannot answer (docs/kit-contract.md, section 5). */
export const FALLBACK_REPLY = "/{name} failed: commands are unavailable right now";

/** Who sent a message, as Execute needs it. */
export interface CommandSender {
  /** The sender's id, as the gateway knows it. */
  id: string;
  /** The sender's role on the task; `"none"` refuses every command. */
  role: SenderRole;
}

/** Decides who sent a message; may read the user, headers (`context.state`), or the task. */
export type SenderResolver = (request: RequestContext) => CommandSender | Promise<CommandSender>;

/**
 * The default {@link SenderResolver}: an authenticated user (the SDK's `UserBuilder`
 * said so) is the task's `assignee` and may run every command; anyone else is a
 * `watcher`, who may read (`/model`, `/effort`, `/status`) but not change the task.
 */
export const defaultSender: SenderResolver = ({ context }) => ({
  id: context.user?.userName ?? "",
  role: context.user?.isAuthenticated ? "assignee" : "watcher",
});

/** Options of {@link CommandsExecutor}. */
export interface CommandsExecutorOptions {
  /** The sidecar. */
  client: CommandsClient;
  /** The store given to `DefaultRequestHandler`: task data and sub-tasks live there. */
  taskStore: TaskStore;
  /** Who sent each message (default {@link defaultSender}). */
  sender?: SenderResolver;
  /** Called when the sidecar fails or cannot be reached (default: `console.warn`). */
  onError?: (error: unknown) => void;
}

/** What a gateway's client asks {@link CommandsExecutor.complete} (the `commands/complete` params). */
export interface CompletionParams {
  /** What the user has typed so far, from its first character: `/mo`, `/model g`. */
  text: string;
  /** The task the text is typed into, if any: its snapshot is sent to the sidecar. */
  taskId?: string;
  /** The most values to return; absent or 0 means 10, at most 100. */
  limit?: number;
}

/** One suggestion of a {@link CompletionResult}. */
export interface CompletionValue {
  /** The completed word: a command name or an argument value. */
  value: string;
  /** The whole text with the completion applied, for the input box (`/model `, `/model gpt-x-mini`). */
  text: string;
  /** A short description; may be empty. */
  description: string;
}

/** Completions, in the shape of MCP's `completion/complete` result, ready to send as JSON. */
export interface CompletionResult {
  /** The suggestions, best first. */
  values: CompletionValue[];
  /** How many suggestions there are in all. */
  total: number;
  /** More suggestions exist than `values` holds. */
  hasMore: boolean;
  /** The command whose argument was completed; empty when names were. */
  command: string;
}

/**
 * Wraps the gateway's `AgentExecutor`, as docs/kit-contract.md says. A message that cannot
 * be a command ({@link mayBeCommand}: not one text part starting with `/` and a letter)
 * reaches the wrapped executor at once, without a call to the sidecar. Any other message
 * goes through the sidecar's Execute: an ordinary one reaches the wrapped executor
 * untouched; a command is answered there. Its changes are applied to the task in the
 * store (see `applyChanges`); the Task is published, then the reply status update, with
 * the task's state unchanged and the command's metadata on the reply message only. A
 * command that is a task's first message creates the task, as the reference harness
 * does: input-required, awaiting the next message. The next message that is not a
 * command ends that wait: the sub-state `awaiting-next-message` is cleared from the task
 * data before the wrapped executor runs (`awaiting-answer`, the agent's own, is left to
 * the agent).
 *
 * A prompt command (Execute answers `prompt`) reaches the wrapped executor with the
 * message's text replaced by the expansion ({@link promptMessage}); the task then moves as
 * the agent moves it.
 *
 * When the sidecar cannot answer, a message with command syntax ({@link commandName})
 * gets the reply {@link FALLBACK_REPLY} with the task's state unchanged, and never
 * reaches the model; any other message reaches the wrapped executor. Either way
 * `onError` hears of it.
 */
export class CommandsExecutor implements AgentExecutor {
  readonly #options: CommandsExecutorOptions;

  constructor(
    readonly inner: AgentExecutor,
    options: CommandsExecutorOptions,
  ) {
    this.#options = options;
  }

  async execute(request: RequestContext, eventBus: ExecutionEventBus): Promise<void> {
    const { client, taskStore, sender = defaultSender, onError = warn } = this.#options;
    const { context, userMessage: message } = request;
    if (!mayBeCommand(message)) return this.#toAgent(request, eventBus);
    // A new task is parked input-required, awaiting the next message: Execute sees it so.
    const task = request.task ?? parkedTask(request);
    let reply: SdkStatusUpdate | undefined; // stays undefined for a message for the model
    let prompt: PromptExpansion | undefined; // a prompt command's expansion, for the model
    // The gateway's own failures (its sender resolver, its task store) fail the message,
    // as the SDK fails any: only the sidecar's give the fallback reply (section 5).
    const who = await sender(request);
    const snapshot = await buildTaskSnapshot(task, (id) => taskStore.load(id, context));
    let response: ExecuteResponse | undefined;
    try {
      response = await client.execute(
                // The executor sends a prompt command's expansion to the agent (section 9).
        { message: fromSdkMessage(message), task: snapshot, sender: { id: who.id, role: participantRole(who.role) }, acceptsPrompt: true },
        // A sidecar that stops answering gives the fallback within seconds; a handler
        // keeps all its time (section 5).
        { timeoutMs: client.executeDeadlineMs(commandName(message)) },
      );
    } catch (error) {
      onError(error);
      reply = fallbackReply(task, message);
    }
    if (response?.result.case === "command") {
      const outcome = response.result.value;
      if (outcome.outcome === Outcome.OK && outcome.changes) {
        await applyChanges(task, outcome.changes, { taskStore, context });
        if (request.task) await taskStore.save(task, context);
      }
      reply = toSdkStatusUpdate(outcome.event!);
    } else if (response?.result.case === "prompt") {
      prompt = response.result.value;
    }
    if (prompt) {
      const json = SendMessageRequest.toJSON(request.request) as Record<string, unknown>;
      const changed = SendMessageRequest.fromJSON({ ...json, message: SdkMessageCodec.toJSON(promptMessage(message, prompt)) });
      return this.#toAgent(new RequestContext(changed, request.taskId, request.contextId, request.context, request.task, request.referenceTasks), eventBus);
    }
    if (!reply) return this.#toAgent(request, eventBus);
    // The SDK wants every stream to open with the Task; a new one is first sent submitted
    // (as input-required it would end a non-streaming answer before the reply).
    eventBus.publish(AgentEvent.task(request.task ? task : { ...task, status: { ...task.status!, state: TaskState.TASK_STATE_SUBMITTED } }));
    eventBus.publish(AgentEvent.statusUpdate(reply));
  }

  /**
   * Runs the wrapped executor on a message that is not a command. That message is the one
   * a task parked `awaiting-next-message` waited for: the wait ends before the agent runs,
   * so an agent that leaves the task input-required again does not keep a stale sub-state
   * (docs/kit-contract.md, section 4).
   */
  async #toAgent(request: RequestContext, eventBus: ExecutionEventBus): Promise<void> {
    const { taskStore } = this.#options;
    if (request.task) await endWaitForNextMessage(request.task, { taskStore, context: request.context });
    return this.inner.execute(request, eventBus);
  }

  /**
   * Suggests completions for what one of the gateway's clients has typed (see
   * `CommandsClient.complete`): the task's snapshot is built from the store, and the
   * sender comes from the same `sender` resolver as for messages (its `RequestContext`
   * holds the task and the typed text as the message). Marks the commands extension
   * activated when the client asked for it. `completionHandler` (`a2a-commands/express`)
   * serves it as the JSON-RPC method `commands/complete`.
   *
   * @throws the SDK's `TaskNotFoundError` for an unknown task, `RequestMalformedError`
   * for what the sidecar refuses (INVALID_ARGUMENT), and otherwise an `Error` (`commands
   * are unavailable right now`, as in the Python kit), which `onError` hears of too.
   */
  async complete(params: CompletionParams, context: ServerCallContext): Promise<CompletionResult> {
    const { client, taskStore, sender = defaultSender, onError = warn } = this.#options;
    const { text, taskId, limit } = params;
    const task = taskId === undefined ? undefined : await taskStore.load(taskId, context);
    if (taskId !== undefined && !task) throw new TaskNotFoundError(`Task not found: ${taskId}`);
    const message = { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }], taskId, contextId: task?.contextId };
    const request = SendMessageRequest.fromJSON({ tenant: context.tenant ?? "", message });
    let response: CompleteResponse;
    try {
      const who = await sender(new RequestContext(request, taskId ?? "", task?.contextId ?? "", context, task));
      const snapshot = task && (await buildTaskSnapshot(task, (id) => taskStore.load(id, context)));
      response = await client.complete({ text, task: snapshot, sender: who, limit });
    } catch (error) {
      const failure = toCommandsError(error);
      if (failure.codeName === "invalid_argument") throw new RequestMalformedError(failure.message);
      onError(error);
      throw new Error("commands are unavailable right now", { cause: error });
    }
    if (context.requestedExtensions?.includes(COMMANDS_EXTENSION_URI)) {
      context.addActivatedExtension(COMMANDS_EXTENSION_URI);
    }
    const values = response.values.map(({ value, text, description }) => ({ value, text, description }));
    return { values, total: response.total, hasMore: response.hasMore, command: response.command };
  }

  cancelTask(taskId: string, eventBus: ExecutionEventBus): Promise<void> {
    return this.inner.cancelTask(taskId, eventBus);
  }
}

function warn(error: unknown): void {
  console.warn(`a2a-commands: the sidecar failed: ${toCommandsError(error).message}`);
}

/** The task a command creates as its first message: input-required, awaiting the next one, holding it. */
function parkedTask(request: RequestContext): Task {
  const data: TaskData = { subState: "awaiting-next-message" };
  const task = SdkTaskCodec.fromJSON({
    id: request.taskId,
    contextId: request.contextId,
    status: { state: "TASK_STATE_INPUT_REQUIRED", timestamp: new Date().toISOString() },
    metadata: { [TASK_DATA_KEY]: data },
  });
  task.history = [request.userMessage];
  return task;
}

/**
 * The reply when the sidecar cannot answer: for a message with command syntax
 * ({@link commandName}), {@link FALLBACK_REPLY} shaped like the sidecar's replies
 * (`<message id>:reply`, the task's state unchanged, `{"command": name}` on the reply
 * message); `undefined` for any other message, which goes to the model.
 */
export function fallbackReply(task: Task, message: SdkMessage): SdkStatusUpdate | undefined {
  const name = commandName(message);
  if (name === undefined) return undefined;
  return SdkStatusUpdateCodec.fromJSON({
    taskId: task.id,
    contextId: task.contextId,
    status: {
      state: task.status?.state,
      timestamp: new Date().toISOString(),
      message: {
        messageId: `${message.messageId}:reply`,
        contextId: task.contextId,
        taskId: task.id,
        role: "ROLE_AGENT",
        parts: [{ text: FALLBACK_REPLY.replace("{name}", name) }],
        metadata: { command: name },
      },
    },
  });
}

/**
 * `message` as the agent reads it for a prompt command (docs/kit-contract.md, section 9):
 * one text part, the expansion; its metadata what it had, plus `command` (the command's
 * name) and `originalText` (the text as typed).
 */
export function promptMessage(message: SdkMessage, expansion: PromptExpansion): SdkMessage {
  const json = SdkMessageCodec.toJSON(message) as Record<string, unknown>;
  const part = message.parts[0]?.content;
  const originalText = message.parts.length === 1 && part?.$case === "text" ? part.value : "";
  const metadata = { ...((json.metadata as Record<string, unknown> | undefined) ?? {}), command: expansion.command?.name ?? "", originalText };
  return SdkMessageCodec.fromJSON({ ...json, parts: [{ text: expansion.text }], metadata });
}

/**
 * A task's history without its commands: drops every command reply (an agent message
 * with `metadata.command`, id `<command id>:reply`) and the message it answered. The SDK
 * keeps both in `Task.history`; use this before handing history to a model.
 */
export function withoutCommands(history: readonly SdkMessage[]): SdkMessage[] {
  const replies = history.filter((m) => typeof m.metadata?.command === "string" && m.messageId.endsWith(":reply"));
  const hidden = new Set(replies.flatMap((m) => [m.messageId, m.messageId.slice(0, -":reply".length)]));
  return history.filter((m) => !hidden.has(m.messageId));
}

/**
 * Wraps `executor` with slash commands (see {@link CommandsExecutor}).
 *
 * @example
 * ```ts
 * const executor = withCommands(new MyExecutor(), { client: commands, taskStore });
 * ```
 */
export function withCommands(executor: AgentExecutor, options: CommandsExecutorOptions): CommandsExecutor {
  return new CommandsExecutor(executor, options);
}
