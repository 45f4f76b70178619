/**
 * An async client for every RPC of the a2a-commands sidecar, over gRPC (HTTP/2).
 *
 * @packageDocumentation
 */
import { Code, ConnectError, createClient, type CallOptions, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SecureClientSessionOptions } from "node:http2";
import {
  CommandService,
  ParticipantRole,
  type ClassifyRequestSchema,
  type ClassifyResponse,
  type CompleteResponse,
  type ExecuteRequestSchema,
  type ExecuteResponse,
  type ListSpecsRequestSchema,
  type HandlerBindingSchema,
  type PromptBindingSchema,
  type ListSpecsResponse,
  type RegisterResponse,
  type TaskSnapshotSchema,
  type WatchSpecsRequestSchema,
} from "./gen/a2a/commands/v1/commands_pb.js";
import { BadRequestSchema } from "./gen/google/rpc/error_details_pb.js";
import { addressFromEnv, parseAddress } from "./address.js";

/** Milliseconds a unary call may take: more than the sidecar's default `--handler-max-timeout-ms` (30 s). */
export const DEFAULT_TIMEOUT_MS = 40_000;

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

/**
 * An error answered by the sidecar (or met reaching it), with the gRPC status code and,
 * for INVALID_ARGUMENT, the offending field.
 */
export class CommandsError extends Error {
  /** The gRPC status code (Connect's `Code` has the same numbers). */
  readonly code: Code;
  /** The gRPC code's name, e.g. `invalid_argument`, `unavailable`. */
  readonly codeName: string;
  /** The offending request field, e.g. `spec.name`, when the sidecar named one. */
  readonly field: string | undefined;
  /** Why the field was refused (the message after `field: `). */
  readonly reason: string | undefined;
  /** Every violation of the `google.rpc.BadRequest` detail, in order. */
  readonly violations: ReadonlyArray<{ field: string; description: string }>;

  constructor(cause: ConnectError) {
    super(cause.rawMessage, { cause });
    this.name = "CommandsError";
    this.code = cause.code;
    this.codeName = codeName(cause.code);
    this.violations = cause
      .findDetails(BadRequestSchema)
      .flatMap((d) => d.fieldViolations.map((v) => ({ field: v.field, description: v.description })));
    const first = this.violations[0];
    const parsed = /^([A-Za-z_][\w.[\]]*): (.*)$/s.exec(cause.rawMessage);
    this.field = first?.field ?? (cause.code === Code.InvalidArgument ? parsed?.[1] : undefined);
    this.reason = first?.description ?? (this.field !== undefined ? parsed?.[2] : undefined);
  }

  /** Whether the sidecar could not be reached or did not answer in time. */
  get unavailable(): boolean {
    return this.code === Code.Unavailable || this.code === Code.DeadlineExceeded;
  }
}

function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/** Turns whatever a call threw into a {@link CommandsError} (an abort becomes `canceled`). */
export function toCommandsError(error: unknown): CommandsError {
  return error instanceof CommandsError ? error : new CommandsError(ConnectError.from(error));
}

async function call<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toCommandsError(error);
  }
}

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
  readonly #rpc: Client<typeof CommandService>;
  readonly #session: Http2SessionManager;
  readonly #token: CommandsClientOptions["adminToken"];

  constructor(options: CommandsClientOptions = {}) {
    const address = options.address ? parseAddress(options.address) : addressFromEnv();
    const tls = options.tls === true || (address.tls && !options.tls) ? {} : options.tls || undefined;
    const url = `${tls ? "https" : "http"}://${address.target}`;
    const nodeOptions: SecureClientSessionOptions = tls ? { ...tls } : {};
    this.#session = new Http2SessionManager(url, { pingIntervalMs: 10_000, pingTimeoutMs: 5_000 }, nodeOptions);
    this.#token = options.adminToken;
    const transport = createGrpcTransport({
      baseUrl: url,
      sessionManager: this.#session,
      defaultTimeoutMs: options.timeoutMs === 0 ? undefined : (options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
    this.#rpc = createClient(CommandService, transport);
  }

  async #admin(options?: RpcOptions): Promise<CallOptions> {
    const token = typeof this.#token === "function" ? await this.#token() : this.#token;
    return token ? { ...options, headers: { authorization: `Bearer ${token}` } } : { ...options };
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
    return call(async () =>
      this.#rpc.register({ ...request, handler: binding, allowedRoles, prompt: promptBinding }, await this.#admin(options)),
    );
  }

  /** Removes a command; answers the registry revision after the removal. */
  unregister(name: string, options?: RpcOptions): Promise<bigint> {
    return call(async () => (await this.#rpc.unregister({ name }, await this.#admin(options))).revision);
  }

  /** Every command in order, the revision, and the card's extension entry as JSON. */
  listSpecs(request: MessageInitShape<typeof ListSpecsRequestSchema> = {}, options?: RpcOptions): Promise<ListSpecsResponse> {
    return call(() => this.#rpc.listSpecs(request, options));
  }

  /**
   * Streams the registry: its current state, then the state after every change. Ends
   * with a {@link CommandsError} when the sidecar goes away; abort with `signal`.
   */
  async *watchSpecs(
    request: MessageInitShape<typeof WatchSpecsRequestSchema> = {},
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<ListSpecsResponse> {
    try {
      yield* this.#rpc.watchSpecs(request, { signal: options.signal, timeoutMs: 0 });
    } catch (error) {
      throw toCommandsError(error);
    }
  }

  /** Says whether a message (our protobuf `Message`) is a command. */
  classify(request: MessageInitShape<typeof ClassifyRequestSchema>, options?: RpcOptions): Promise<ClassifyResponse> {
    return call(() => this.#rpc.classify(request, options));
  }

  /** Runs a message that is a command; an ordinary message comes back as such. */
  execute(request: MessageInitShape<typeof ExecuteRequestSchema>, options?: RpcOptions): Promise<ExecuteResponse> {
    return call(() => this.#rpc.execute(request, options));
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
    return call(() => this.#rpc.complete({ ...rest, sender: sender && { ...sender, role: participantRole(sender.role) } }, options));
  }

  /** Closes the HTTP/2 connection; calls made afterwards open a new one. */
  close(): void {
    this.#session.abort();
  }
}
