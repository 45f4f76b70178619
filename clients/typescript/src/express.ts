/**
 * Command completion for a gateway's A2A clients: the JSON-RPC method
 * {@link COMPLETE_METHOD} on the gateway's own JSON-RPC endpoint, next to the SDK's
 * `jsonRpcHandler` (express). Imported from `a2a-commands/express`, so that gateways
 * without express never load it.
 *
 * @packageDocumentation
 */
import express, { type ErrorRequestHandler, type RequestHandler } from "express";
import { Extensions, HTTP_EXTENSION_HEADER } from "@a2a-js/sdk";
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import { defaultServerCallContextBuilder, JsonRpcTransportHandler, type ServerCallContextBuilder } from "@a2a-js/sdk/server";
import type { UserBuilder } from "@a2a-js/sdk/server/express";
import type { CommandsExecutor, CompletionParams } from "./executor.js";

/**
 * The extension's JSON-RPC method (named after MCP's `completion/complete`). Params:
 * `{"text": "/model g", "taskId"?: "t-1", "limit"?: 10}`; result: `{"values": [{"value",
 * "text", "description"}], "total", "hasMore", "command"}`.
 */
export const COMPLETE_METHOD = "commands/complete";

/** Options of {@link completionHandler}: the same objects the gateway gives the SDK. */
export interface CompletionHandlerOptions {
  /** The wrapped executor (`withCommands`): its client, task store and `sender` are used. */
  executor: CommandsExecutor;
  /** The `userBuilder` given to `jsonRpcHandler`. */
  userBuilder: UserBuilder;
  /** The `contextBuilder` given to `jsonRpcHandler`, if any. */
  contextBuilder?: ServerCallContextBuilder;
}

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value);

const isString = (value: unknown): value is string => typeof value === "string";
const isCount = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 0xffffffff;

/** The params of {@link COMPLETE_METHOD}, checked; a `RequestMalformedError` (-32602) otherwise. */
function completionParams(params: unknown): CompletionParams & { tenant?: string } {
  const check = <T>(value: unknown, is: (value: unknown) => value is T, what: string): T => {
    if (is(value)) return value;
    throw new RequestMalformedError(`Invalid params: ${what}`);
  };
  const optional = <T>(value: unknown, is: (value: unknown) => value is T, what: string): T | undefined =>
    value === undefined ? undefined : check(value, is, what);
  const { text, taskId, limit, tenant } = check(params, isObject, "expected an object");
  return {
    text: check(text, isString, "text must be a string"),
    taskId: optional(taskId, isString, "taskId must be a string"),
    limit: optional(limit, isCount, "limit must be a non-negative integer"),
    tenant: optional(tenant, isString, "tenant must be a string"),
  };
}

/** The SDK's answer to a body that is not JSON (its `jsonRpcHandler` gives the same). */
const parseError: ErrorRequestHandler = (error: unknown, _req, res, next) => {
  if (!(error instanceof SyntaxError && "body" in error)) return next(error);
  res.json({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Invalid JSON payload." } });
};

/**
 * Serves {@link COMPLETE_METHOD} on the gateway's JSON-RPC endpoint: mount it on the same
 * path, before the SDK's `jsonRpcHandler`, which gets every other request unchanged. The
 * call context is built as the SDK builds it (same `userBuilder`, headers, `A2A-Extensions`),
 * then {@link CommandsExecutor.complete} answers; errors are JSON-RPC errors as the SDK
 * maps them (-32001 unknown task, -32602 bad params, -32603 sidecar failure).
 *
 * @example
 * ```ts
 * app.use(completionHandler({ executor, userBuilder: UserBuilder.noAuthentication }));
 * app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
 * ```
 */
export function completionHandler(options: CompletionHandlerOptions): RequestHandler {
  const buildContext = options.contextBuilder ?? defaultServerCallContextBuilder;
  const complete: RequestHandler = async (req, res, next) => {
    const body: unknown = req.body;
    if (!isObject(body) || body.jsonrpc !== "2.0" || body.method !== COMPLETE_METHOD) return next();
    const id = typeof body.id === "string" || Number.isInteger(body.id) ? (body.id as string | number) : null;
    try {
      const { tenant, ...params } = completionParams(body.params);
      const context = buildContext({
        extensions: Extensions.parseServiceParameter(req.header(HTTP_EXTENSION_HEADER)),
        user: await options.userBuilder(req),
        headers: req.headers,
        ...(tenant && { tenant }),
      });
      const result = await options.executor.complete(params, context);
      if (context.activatedExtensions) res.setHeader(HTTP_EXTENSION_HEADER, [...context.activatedExtensions]);
      res.json({ jsonrpc: "2.0", id, result });
    } catch (error) {
      res.json({ jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(error) });
    }
  };
  return express.Router().post("/", express.json(), parseError, complete);
}
