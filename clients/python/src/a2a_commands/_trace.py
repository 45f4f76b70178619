"""The gateway's current OpenTelemetry span as W3C trace context (docs/kit-contract.md, section 11).

``opentelemetry-api`` is imported only if it is installed: a gateway that traces has it,
and one that does not needs nothing more.
"""

from __future__ import annotations

try:
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - the gateway does not trace
    _trace = None  # type: ignore[assignment]


def trace_metadata() -> tuple[tuple[str, str], ...]:
    """``traceparent`` (and ``tracestate``) naming the current span; empty without a valid one.

    W3C whatever propagator the gateway set: the sidecar reads W3C only.
    """
    if _trace is None:
        return ()
    context = _trace.get_current_span().get_span_context()
    if not context.is_valid:
        return ()
    metadata = [("traceparent", f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}")]
    state = context.trace_state.to_header()
    if state:
        metadata.append(("tracestate", state))
    return tuple(metadata)
