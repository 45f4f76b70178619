/**
 * The gateway's current OpenTelemetry span as W3C trace context, sent with every call to
 * the sidecar (docs/kit-contract.md, section 11). `@opentelemetry/api` is an optional peer
 * dependency: loaded if the gateway has it, and nothing is sent otherwise.
 */
import type * as OpenTelemetry from "@opentelemetry/api";
import * as grpc from "@grpc/grpc-js";

let api: typeof OpenTelemetry | undefined;

/** Settles once `@opentelemetry/api` is loaded, or found missing. */
export const traceApiLoaded: Promise<void> = import("@opentelemetry/api").then(
  (loaded) => {
    api = loaded;
  },
  () => undefined,
);

/**
 * `traceparent` (and `tracestate`) naming the active span; empty without a valid one. W3C
 * whatever propagator the gateway set: the sidecar reads W3C only.
 */
export function traceContext(): Record<string, string> {
  if (!api) return {};
  const span = api.trace.getSpanContext(api.context.active());
  if (!span || !api.isSpanContextValid(span)) return {};
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, "0");
  const headers: Record<string, string> = { traceparent: `00-${span.traceId}-${span.spanId}-${flags}` };
  const state = span.traceState?.serialize();
  if (state) headers.tracestate = state;
  return headers;
}

/** `metadata` with the active span's trace context added. */
export function withTraceContext(metadata: grpc.Metadata): grpc.Metadata {
  for (const [key, value] of Object.entries(traceContext())) metadata.set(key, value);
  return metadata;
}
