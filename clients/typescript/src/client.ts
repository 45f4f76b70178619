/**
 * An async client for every RPC of the a2a-commands sidecar, over gRPC (HTTP/2) with
 * `@grpc/grpc-js`, the messages (de)serialized by `@bufbuild/protobuf`.
 *
 * @packageDocumentation
 */
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, isMessage, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import {
  ClassifyRequestSchema,
  ClassifyResponseSchema,
  CommandBody,
  CommandService,
  CompleteRequestSchema,
  CompleteResponseSchema,
  ExecuteRequestSchema,
  ExecuteResponseSchema,
  ListSpecsRequestSchema,
  ListSpecsResponseSchema,
  ParticipantRole,
  RegisterRequestSchema,
  RegisterResponseSchema,
  UnregisterRequestSchema,
  UnregisterResponseSchema,
  WatchSpecsRequestSchema,
  type ClassifyResponse,
  type CompleteResponse,
  type ExecuteResponse,
  type HandlerBindingSchema,
  type PromptBindingSchema,
  type ListSpecsResponse,
  type RegisterResponse,
  type TaskSnapshotSchema,
} from "./gen/a2a/commands/v1/commands_pb.js";
import { BadRequestSchema } from "./gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "./gen/google/rpc/status_pb.js";
import { addressFromEnv, parseAddress } from "./address.js";
import { traceApiLoaded, withTraceContext } from "./trace-context.js";

/** Milliseconds a unary call may take: more than the sidecar's default `--handler-max-timeout-ms` (30 s). */
export const DEFAULT_TIMEOUT_MS = 40_000;

/** Execute's deadline for a command whose body runs no handler (docs/kit-contract.md, section 5). */
export const NO_HANDLER_DEADLINE_MS = 5_000;

/** What Execute's deadline adds to a handler's (or an MCP prompt's) own timeout. */
export const HANDLER_DEADLINE_MARGIN_MS = 5_000;

/**
 * Execute's deadline for the command `name`, from the registry last seen (`registry`, a
 * ListSpecs or WatchSpecs answer): {@link NO_HANDLER_DEADLINE_MS} for a command whose
 * body runs no handler, a handler's or an MCP prompt's timeout plus
 * {@link HANDLER_DEADLINE_MARGIN_MS}, and {@link DEFAULT_TIMEOUT_MS} for a name not seen
 * (or none, or no registry yet). So a sidecar that stops answering gives the fallback
 * reply within seconds, while a slow handler still has all its time
 * (`docs/vectors/deadlines.json`).
 */
export function executeDeadlineMs(registry: ListSpecsResponse | undefined, name: string | undefined): number {
  return knownDeadlineMs(registry, name) ?? DEFAULT_TIMEOUT_MS;
}

/** {@link executeDeadlineMs} where the registry says; `undefined` for the default. */
function knownDeadlineMs(registry: ListSpecsResponse | undefined, name: string | undefined): number | undefined {
  const command = name === undefined ? undefined : registry?.commands.find((c) => c.spec?.name === name);
  if (!command) return undefined;
  const prompt = command.prompt?.source;
  if (command.body === CommandBody.BUILTIN || command.body === CommandBody.NONE) return NO_HANDLER_DEADLINE_MS;
  if (command.body === CommandBody.PROMPT && prompt?.case === "template") return NO_HANDLER_DEADLINE_MS;
  const timeoutMs =
    command.body === CommandBody.HANDLER ? command.handler?.timeoutMs
    : command.body === CommandBody.PROMPT && prompt?.case === "mcp" ? prompt.value.timeoutMs
    : undefined; // a body this kit does not know may run anywhere
  return timeoutMs ? timeoutMs + HANDLER_DEADLINE_MARGIN_MS : undefined;
}

/** TLS settings for a sidecar served with `--tls-cert` (and `--tls-client-ca` for mTLS). */
export interface TlsOptions {
  /** PEM CA certificate(s) to trust instead of the system's. */
  ca?: string | Buffer;
  /** PEM client certificate chain, for mTLS. */
  cert?: string | Buffer;
  /** PEM client private key, for mTLS. */
  key?: string | Buffer;
  /** Name to check the server certificate against, when it differs from the host. */
  servername?: string;
}

/** How to reach the sidecar. */
export interface CommandsClientOptions {
  /**
   * The sidecar: `http://host:port`, `https://host:port` (TLS) or `host:port` (plain
   * text unless `tls` is given). Default: `$A2A_COMMANDS_ADDR` in the same forms, else
   * `http://127.0.0.1:50051`. Anything else throws a `TypeError`.
   */
  address?: string;
  /**
   * The admin token sent as `authorization: Bearer <token>` on Register and Unregister
   * (needed when the sidecar runs with `--admin-token-file`). A function is called on
   * every such call, so a rotated token is picked up.
   */
  adminToken?: string | (() => string | Promise<string>);
  /** TLS settings; `true` for TLS with the system's trust store. */
  tls?: boolean | TlsOptions;
  /** Deadline of each unary call in milliseconds (default 40,000; 0 for none). */
  timeoutMs?: number;
}

/** A participant's role on a task, by name (A2A has no participants: the gateway decides). */
export type SenderRole = "assignee" | "reporter" | "watcher" | "admin" | "none";

const ROLES: Record<SenderRole, ParticipantRole> = {
  assignee: ParticipantRole.ASSIGNEE,
  reporter: ParticipantRole.REPORTER,
  watcher: ParticipantRole.WATCHER,
  admin: ParticipantRole.ADMIN,
  none: ParticipantRole.NONE,
};

/** A role by name (`"admin"`) or as the protobuf enum (`pb.ParticipantRole.ADMIN`). */
export type RoleLike = SenderRole | ParticipantRole;

/** The protobuf `ParticipantRole` of a {@link RoleLike}. */
export function participantRole(role: RoleLike): ParticipantRole {
  return typeof role === "number" ? role : ROLES[role];
}

/** What a handler's endpoint speaks. */
export type HandlerProtocol = "grpc" | "jsonRpc" | "mcp";

/** Where a command's body runs. */
export interface CommandHandler {
  /**
   * `grpc`: the `CommandHandler` gRPC service; `jsonRpc`: JSON-RPC 2.0 POSTs of
   * `command.invoked.in`, as the reference harness posts them; `mcp`: an MCP server
   * (streamable HTTP) with the tool `hooks.command.invoked.in`.
   */
  protocol: HandlerProtocol;
  /** The endpoint (`http://` or `https://`). */
  url: string;
  /** How long Execute waits for it; absent: the sidecar's default (5,000). */
  timeoutMs?: number;
  /** Headers sent with each call, each value read from a file under the sidecar's `--handler-secrets-dir`. */
  headers?: ReadonlyArray<{ name: string; valueFile: string }>;
}

/** Register's request, in plain objects: the command, its handler and its roles by name. */
export interface RegisterRequestInit {
  /** The command as the card shows it: `name`, `description`, `argumentHint`. */
  spec: { name: string; description: string; argumentHint?: string };
  /** Replace a command of the same name in its place (keeping its body unless `handler` is given). */
  override?: boolean;
  /** Where the body runs: `{ protocol: "grpc" | "jsonRpc" | "mcp", url, timeoutMs?, headers? }`. */
  handler?: CommandHandler;
  /**
   * The roles allowed to run the command (e.g. `["admin"]`); absent or empty: every role.
   * Others get `refused: a <role> may not run /<name>` before any body runs. Never on the card.
   */
  allowedRoles?: readonly RoleLike[];
  /** The command runs, but is left out of the card and of name completion. */
  hidden?: boolean;
  /**
   * Makes it a prompt command: a template (`$ARGUMENTS`, `$1`…`$9`, `{{args}}`) or an MCP
   * server's prompt (`{ mcp: url, name, timeoutMs? }`). Execute then answers the
   * expansion, which the executor sends to the agent. A handler or a prompt, never both.
   */
  prompt?: string | { mcp: string; name: string; timeoutMs?: number };
}

/** Complete's request: the protobuf `CompleteRequest`, with the sender's role also by name. */
export interface CompleteRequestInit {
  /** What the user has typed so far, from its first character: `/mo`, `/model g`, `/deploy st`. */
  text: string;
  /** The task typed into (optional; checked as Execute checks it), e.g. from `buildTaskSnapshot`. */
  task?: MessageInitShape<typeof TaskSnapshotSchema>;
  /** Who is typing; required when `text` starts with `/` (commands they may not run are left out). */
  sender?: { id?: string; role: RoleLike };
  /** The most values to return; absent or 0 means 10, at most 100. */
  limit?: number;
}

/** Per-call options: an abort signal and a deadline. */
export interface RpcOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** gRPC status codes, as `@grpc/grpc-js` numbers them (`GrpcStatus.UNAVAILABLE` is 14). */
export { status as GrpcStatus } from "@grpc/grpc-js";

/**
 * An error answered by the sidecar (or met reaching it), with the gRPC status code and,
 * for INVALID_ARGUMENT, the offending field.
 */
export class CommandsError extends Error {
  /** The gRPC status code (`GrpcStatus`, e.g. `GrpcStatus.NOT_FOUND`). */
  readonly code: grpc.status;
  /** The gRPC code's name, e.g. `invalid_argument`, `unavailable`. */
  readonly codeName: string;
  /** The offending request field, e.g. `spec.name`, when the sidecar named one. */
  readonly field: string | undefined;
  /** Why the field was refused (the message after `field: `). */
  readonly reason: string | undefined;
  /** Every violation of the `google.rpc.BadRequest` detail, in order. */
  readonly violations: ReadonlyArray<{ field: string; description: string }>;

  constructor(code: grpc.status, message: string, options: { cause?: unknown; details?: Uint8Array } = {}) {
    super(message, { cause: options.cause });
    this.name = "CommandsError";
    this.code = code;
    this.codeName = (grpc.status[code] ?? "UNKNOWN").toLowerCase();
    this.violations = badRequest(options.details);
    const first = this.violations[0];
    const parsed = /^([A-Za-z_][\w.[\]]*): (.*)$/s.exec(message);
    this.field = first?.field ?? (code === grpc.status.INVALID_ARGUMENT ? parsed?.[1] : undefined);
    this.reason = first?.description ?? (this.field !== undefined ? parsed?.[2] : undefined);
  }

  /** Whether the sidecar could not be reached or did not answer in time. */
  get unavailable(): boolean {
    return this.code === grpc.status.UNAVAILABLE || this.code === grpc.status.DEADLINE_EXCEEDED;
  }
}

/** The field violations of a `grpc-status-details-bin` trailer (a `google.rpc.Status`). */
function badRequest(details: Uint8Array | undefined): Array<{ field: string; description: string }> {
  if (!details) return [];
  try {
    return fromBinary(StatusSchema, details).details.flatMap((any) => {
      const detail = anyUnpack(any, BadRequestSchema);
      return detail ? detail.fieldViolations.map((v) => ({ field: v.field, description: v.description })) : [];
    });
  } catch {
    return []; // a detail we cannot read leaves the message, which says the same
  }
}

function isServiceError(error: unknown): error is grpc.ServiceError {
  return error instanceof Error && typeof (error as Partial<grpc.ServiceError>).code === "number" && "metadata" in error;
}

/** Turns whatever a call threw into a {@link CommandsError}. */
export function toCommandsError(error: unknown): CommandsError {
  if (error instanceof CommandsError) return error;
  if (isServiceError(error)) {
    const [details] = error.metadata.get("grpc-status-details-bin");
    return new CommandsError(error.code, error.details, { cause: error, details: details instanceof Buffer ? details : undefined });
  }
  return new CommandsError(grpc.status.UNKNOWN, error instanceof Error ? error.message : String(error), { cause: error });
}

/** The error of a call whose signal was aborted before it started (`cancelled`, as after). */
function aborted(signal: AbortSignal): CommandsError {
  return new CommandsError(grpc.status.CANCELLED, "the call was aborted", { cause: signal.reason });
}

/** How one method's messages go over the wire. */
interface Method<I extends DescMessage, O extends DescMessage> {
  path: string;
  serialize: (message: MessageShape<I>) => Buffer;
  deserialize: (bytes: Buffer) => MessageShape<O>;
  input: I;
}

function method<I extends DescMessage, O extends DescMessage>(name: string, input: I, output: O): Method<I, O> {
  return {
    path: `/${CommandService.typeName}/${name}`,
    serialize: (message) => {
      const bytes = toBinary(input, message);
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },
    deserialize: (bytes) => fromBinary(output, bytes),
    input,
  };
}

const METHODS = {
  register: method("Register", RegisterRequestSchema, RegisterResponseSchema),
  unregister: method("Unregister", UnregisterRequestSchema, UnregisterResponseSchema),
  listSpecs: method("ListSpecs", ListSpecsRequestSchema, ListSpecsResponseSchema),
  watchSpecs: method("WatchSpecs", WatchSpecsRequestSchema, ListSpecsResponseSchema),
  classify: method("Classify", ClassifyRequestSchema, ClassifyResponseSchema),
  execute: method("Execute", ExecuteRequestSchema, ExecuteResponseSchema),
  complete: method("Complete", CompleteRequestSchema, CompleteResponseSchema),
};

/** A message of `schema` from a message or its init shape. */
function message<I extends DescMessage>(schema: I, init: MessageInitShape<I> | MessageShape<I>): MessageShape<I> {
  return isMessage(init, schema) ? (init as MessageShape<I>) : create(schema, init as MessageInitShape<I>);
}

/**
 * The channel's settings: pings on a quiet connection, no limit on an answer's size, and
 * reconnecting every 0.2 to 2 s while the sidecar is away (as the Python and Go kits do):
 * a sidecar on loopback comes back within seconds, and grpc's default (up to 120 s between
 * attempts) would keep commands failing long after it has.
 */
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 200,
  "grpc.max_reconnect_backoff_ms": 2_000,
  "grpc.keepalive_time_ms": 10_000,
  "grpc.keepalive_timeout_ms": 5_000,
  "grpc.max_receive_message_length": -1,
};

/**
 * The sidecar's `CommandService`: register, unregister, listSpecs, watchSpecs, classify,
 * execute and complete. Requests and answers are the service's own protobuf messages (see
 * `pb`; roles may also be given by name); revisions are `bigint`. Every failure is a
 * {@link CommandsError}.
 *
 * @example
 * ```ts
 * const commands = new CommandsClient({ address: "http://127.0.0.1:50051" });
 * await commands.register({ spec: { name: "deploy", description: "Deploy" }, allowedRoles: ["admin"] });
 * const { values } = await commands.complete({ text: "/de", sender: { id: "u-1", role: "admin" } });
 * ```
 */
export class CommandsClient {
  readonly #target: string;
  readonly #credentials: grpc.ChannelCredentials;
  readonly #options: grpc.ChannelOptions;
  readonly #timeoutMs: number | undefined;
  /** The registry last seen, for Execute's deadlines. */
  #registry: ListSpecsResponse | undefined;
  readonly #token: CommandsClientOptions["adminToken"];
  #client: grpc.Client | undefined;

  constructor(options: CommandsClientOptions = {}) {
    const address = options.address ? parseAddress(options.address) : addressFromEnv();
    const tls = options.tls === true || (address.tls && !options.tls) ? {} : options.tls || undefined;
    this.#target = address.target;
    const pem = (value: string | Buffer | undefined) => (value === undefined ? null : Buffer.from(value));
    this.#credentials = tls
      ? grpc.credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert))
      : grpc.credentials.createInsecure();
    this.#options = tls?.servername
      ? { ...CHANNEL_OPTIONS, "grpc.ssl_target_name_override": tls.servername, "grpc.default_authority": tls.servername }
      : CHANNEL_OPTIONS;
    this.#timeoutMs = options.timeoutMs === 0 ? undefined : (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.#token = options.adminToken;
  }

  /** The channel, opened on first use and again after {@link close}. */
  #channel(): grpc.Client {
    this.#client ??= new grpc.Client(this.#target, this.#credentials, this.#options);
    return this.#client;
  }

  /**
   * Waits until the channel is connected (for example at start, or after a restart of the
   * sidecar); a {@link CommandsError} `unavailable` if it is not within `timeoutMs`.
   */
  waitReady(timeoutMs: number = DEFAULT_TIMEOUT_MS): Promise<void> {
    return new Promise((resolve, reject) =>
      this.#channel().waitForReady(Date.now() + timeoutMs, (error) =>
        error ? reject(new CommandsError(grpc.status.UNAVAILABLE, `${this.#target} not ready after ${timeoutMs} ms`, { cause: error })) : resolve(),
      ),
    );
  }

  /** The admin token's header, on Register and Unregister. */
  async #admin(): Promise<grpc.Metadata> {
    const metadata = new grpc.Metadata();
    const token = typeof this.#token === "function" ? await this.#token() : this.#token;
    if (token) metadata.set("authorization", `Bearer ${token}`);
    return metadata;
  }

  /** One unary call, `metadata` (if any) and the active span's trace context sent with it. */
  async #unary<I extends DescMessage, O extends DescMessage>(
    rpc: Method<I, O>,
    request: MessageInitShape<I> | MessageShape<I>,
    options: RpcOptions | undefined,
    metadata: grpc.Metadata = new grpc.Metadata(),
  ): Promise<MessageShape<O>> {
    await traceApiLoaded;
    withTraceContext(metadata);
    const timeoutMs = options?.timeoutMs ?? this.#timeoutMs;
    const callOptions: grpc.CallOptions = timeoutMs ? { deadline: Date.now() + timeoutMs } : {};
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(aborted(signal));
    const client = this.#channel();
    return new Promise<MessageShape<O>>((resolve, reject) => {
      const cancel = () => call.cancel();
      const call = client.makeUnaryRequest(rpc.path, rpc.serialize, rpc.deserialize, message(rpc.input, request), metadata, callOptions, (error, answer) => {
        signal?.removeEventListener("abort", cancel);
        if (error) reject(toCommandsError(error));
        else resolve(answer!);
      });
      signal?.addEventListener("abort", cancel, { once: true });
    });
  }

  /**
   * Adds a command (or replaces it with `override`), optionally limited to some roles
   * (`allowedRoles`) or left off the card (`hidden`); needs the admin token if one is set.
   */
  register(request: RegisterRequestInit, options?: RpcOptions): Promise<RegisterResponse> {
    const allowedRoles = request.allowedRoles?.map(participantRole);
    const { handler } = request;
    const binding: MessageInitShape<typeof HandlerBindingSchema> | undefined = handler && {
      endpoint: { case: handler.protocol, value: handler.url },
      timeoutMs: handler.timeoutMs,
      headers: handler.headers?.map(({ name, valueFile }) => ({ name, valueFile })),
    };
    const { prompt } = request;
    const promptBinding: MessageInitShape<typeof PromptBindingSchema> | undefined =
      prompt === undefined
        ? undefined
        : typeof prompt === "string"
          ? { source: { case: "template", value: prompt } }
          : { source: { case: "mcp", value: { url: prompt.mcp, name: prompt.name, timeoutMs: prompt.timeoutMs } } };
    const init = { ...request, handler: binding, allowedRoles, prompt: promptBinding };
    return this.#admin().then((metadata) => this.#unary(METHODS.register, init, options, metadata));
  }

  /** Removes a command; answers the registry revision after the removal. */
  async unregister(name: string, options?: RpcOptions): Promise<bigint> {
    return (await this.#unary(METHODS.unregister, { name }, options, await this.#admin())).revision;
  }

  /** Every command in order, the revision, and the card's extension entry as JSON. */
  async listSpecs(request: MessageInitShape<typeof ListSpecsRequestSchema> = {}, options?: RpcOptions): Promise<ListSpecsResponse> {
    return this.#seen(await this.#unary(METHODS.listSpecs, request, options));
  }

  /**
   * Execute's deadline for the command `name`, from the registry this client last saw
      * (through `listSpecs` or `watchSpecs`, as the card helper calls them): see
   * {@link executeDeadlineMs}, with this client's own `timeoutMs` where the registry does
   * not say. The executor asks it for every command.
   */
    executeDeadlineMs(name: string | undefined): number | undefined {
    return knownDeadlineMs(this.#registry, name) ?? this.#timeoutMs;
  }

  /** Keeps `state` as the registry last seen (an `unchanged` answer holds no commands). */
  #seen(state: ListSpecsResponse): ListSpecsResponse {
        // Never back to an older registry (a listing can arrive after a newer WatchSpecs state).
    if (!state.unchanged && (this.#registry === undefined || state.revision >= this.#registry.revision)) this.#registry = state;
    return state;
  }

  /**
   * Streams the registry: its current state, then the state after every change. Ends
   * with a {@link CommandsError} when the sidecar goes away; abort with `signal`.
   */
  async *watchSpecs(
    request: MessageInitShape<typeof WatchSpecsRequestSchema> = {},
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<ListSpecsResponse> {
    const { signal } = options;
    if (signal?.aborted) throw aborted(signal);
    const rpc = METHODS.watchSpecs;
    await traceApiLoaded;
    const metadata = withTraceContext(new grpc.Metadata());
    const stream = this.#channel().makeServerStreamRequest(rpc.path, rpc.serialize, rpc.deserialize, message(rpc.input, request), metadata, {});
    const cancel = () => stream.cancel();
    signal?.addEventListener("abort", cancel, { once: true });
    try {
      for await (const state of stream as AsyncIterable<ListSpecsResponse>) yield this.#seen(state);
    } catch (error) {
      throw toCommandsError(error);
    } finally {
      signal?.removeEventListener("abort", cancel);
      stream.cancel();
    }
  }

  /** Says whether a message (our protobuf `Message`) is a command. */
  classify(request: MessageInitShape<typeof ClassifyRequestSchema>, options?: RpcOptions): Promise<ClassifyResponse> {
    return this.#unary(METHODS.classify, request, options);
  }

    /**
   * Runs a message that is a command; an ordinary message comes back as such. Set
   * `acceptsPrompt` when the caller sends a prompt command's expansion to the agent (the
   * executor does); without it, a prompt command answers a failure, not `prompt`.
   */
  execute(request: MessageInitShape<typeof ExecuteRequestSchema>, options?: RpcOptions): Promise<ExecuteResponse> {
    return this.#unary(METHODS.execute, request, options);
  }

  /**
   * Suggests completions for what a user has typed so far, MCP `completion/complete`
   * style (`values`, `total`, `hasMore`): command names by prefix (`/mo`; hidden ones and
   * those the sender may not run left out), built-in values (`/model g`: the selectable
   * models; `/effort h`), and what a handler command's handler suggests. `command` names
   * the command whose argument was completed (empty for names).
   *
   * @example
   * ```ts
   * const { values } = await commands.complete({ text: "/model g", sender: { id: "u-1", role: "assignee" } });
   * values.map((v) => v.text); // ["/model gpt-x", "/model gpt-x-mini"]
   * ```
   */
  complete(request: CompleteRequestInit, options?: RpcOptions): Promise<CompleteResponse> {
    const { sender, ...rest } = request;
    return this.#unary(METHODS.complete, { ...rest, sender: sender && { ...sender, role: participantRole(sender.role) } }, options);
  }

  /** Closes the connection; calls made afterwards open a new one. */
  close(): void {
    this.#client?.close();
    this.#client = undefined;
  }
}
