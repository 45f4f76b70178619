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
  type ClassifyRequestSchema,
  type ClassifyResponse,
  type ExecuteRequestSchema,
  type ExecuteResponse,
  type ListSpecsRequestSchema,
  type ListSpecsResponse,
  type RegisterRequestSchema,
  type RegisterResponse,
  type WatchSpecsRequestSchema,
} from "./gen/a2a/commands/v1/commands_pb.js";
import { BadRequestSchema } from "./gen/google/rpc/error_details_pb.js";

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
   * The sidecar's address: `host:port` (plain text, or TLS when `tls` is given) or a URL
   * (`http://host:port`, `https://host:port`).
   */
  address: string;
  /**
   * The admin token sent as `authorization: Bearer <token>` on Register and Unregister
   * (needed when the sidecar runs with `--admin-token-file`). A function is called on
   * every such call, so a rotated token is picked up.
   */
  adminToken?: string | (() => string | Promise<string>);
  /** TLS settings; `true` for TLS with the system's trust store. */
  tls?: boolean | TlsOptions;
  /** Deadline of each unary call in milliseconds (default 30,000; 0 for none). */
  timeoutMs?: number;
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
 * The sidecar's `CommandService`: register, unregister, listSpecs, watchSpecs, classify
 * and execute. Requests and answers are the service's own protobuf messages (see `pb`);
 * revisions are `bigint`. Every failure is a {@link CommandsError}.
 *
 * @example
 * ```ts
 * const commands = new CommandsClient({ address: "127.0.0.1:50051" });
 * await commands.register({ spec: { name: "deploy", description: "Deploy" } });
 * ```
 */
export class CommandsClient {
  readonly #rpc: Client<typeof CommandService>;
  readonly #session: Http2SessionManager;
  readonly #token: CommandsClientOptions["adminToken"];

  constructor(options: CommandsClientOptions) {
    const tls = options.tls === true ? {} : options.tls || undefined;
    let url = options.address.includes("://") ? options.address : `${tls ? "https" : "http"}://${options.address}`;
    url = url.replace(/\/+$/, "");
    const nodeOptions: SecureClientSessionOptions = tls ? { ...tls } : {};
    this.#session = new Http2SessionManager(url, { pingIntervalMs: 10_000, pingTimeoutMs: 5_000 }, nodeOptions);
    this.#token = options.adminToken;
    const transport = createGrpcTransport({
      baseUrl: url,
      sessionManager: this.#session,
      defaultTimeoutMs: options.timeoutMs === 0 ? undefined : (options.timeoutMs ?? 30_000),
    });
    this.#rpc = createClient(CommandService, transport);
  }

  async #admin(options?: RpcOptions): Promise<CallOptions> {
    const token = typeof this.#token === "function" ? await this.#token() : this.#token;
    return token ? { ...options, headers: { authorization: `Bearer ${token}` } } : { ...options };
  }

  /** Adds a command (or replaces it with `override`); needs the admin token if one is set. */
  register(request: MessageInitShape<typeof RegisterRequestSchema>, options?: RpcOptions): Promise<RegisterResponse> {
    return call(async () => this.#rpc.register(request, await this.#admin(options)));
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

  /** Closes the HTTP/2 connection; calls made afterwards open a new one. */
  close(): void {
    this.#session.abort();
  }
}
