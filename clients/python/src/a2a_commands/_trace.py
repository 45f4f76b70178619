"""The gateway's current OpenTelemetry span as W3C trace context (docs/kit-contract.md, section 11).

``opentelemetry-api`` is imported only if it is installed: a gateway that traces has it,
and one that does not needs nothing more.
"""

from __future__ import annotations

try:
    from opentelemetry import trace as _trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _W3C: TraceContextTextMapPropagator | None = TraceContextTextMapPropagator()
except ImportError:  # pragma: no cover - the gateway does not trace
    _W3C = None


def trace_metadata() -> tuple[tuple[str, str], ...]:
    """``traceparent`` (and ``tracestate``) naming the current span; empty without a valid one.

    W3C whatever propagator the gateway set: the sidecar reads W3C only.
    """
    # The propagator skips only the one invalid context it knows (unsampled): it would
    # send all-zero ids for a sampled one, which the sidecar drops (the vectors' last case).
    if _W3C is None or not _trace.get_current_span().get_span_context().is_valid:
        return ()
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    return tuple((key, carrier[key]) for key in ("traceparent", "tracestate") if carrier.get(key))
