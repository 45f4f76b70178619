package a2acommands

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// withTraceContext adds the current OpenTelemetry span of ctx to the call's metadata as
// W3C trace context (docs/kit-contract.md, section 11): W3C whatever propagator the
// gateway set, since the sidecar reads W3C only; nothing without a valid span.
func withTraceContext(ctx context.Context) context.Context {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	pairs := make([]string, 0, 4)
	for _, key := range []string{"traceparent", "tracestate"} {
		if value := carrier.Get(key); value != "" {
			pairs = append(pairs, key, value)
		}
	}
	if len(pairs) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, pairs...)
}

// traceUnary and traceStream send the trace context with every call to the sidecar.
func traceUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(withTraceContext(ctx), method, req, reply, cc, opts...)
}

func traceStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(withTraceContext(ctx), desc, cc, method, opts...)
}
