package a2acommands

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// spanContext is a vector's current span, in ctx.
func spanContext(t testing.TB, ctx context.Context, span map[string]any) context.Context {
	t.Helper()
	if span == nil {
		return ctx
	}
	traceID, _ := trace.TraceIDFromHex(span["traceId"].(string))
	spanID, _ := trace.SpanIDFromHex(span["spanId"].(string))
	state, err := trace.ParseTraceState(span["traceState"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var flags trace.TraceFlags
	if span["sampled"] == true {
		flags = trace.FlagsSampled
	}
	config := trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: flags, TraceState: state}
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(config))
}

func TestVectorsTraceContext(t *testing.T) {
	for i, c := range cases(t, "trace-context") {
		span, _ := c["span"].(map[string]any)
		ctx := withTraceContext(spanContext(t, context.Background(), span))
		sent, _ := metadata.FromOutgoingContext(ctx)
		got := map[string]any{}
		for key, values := range sent {
			got[key] = strings.Join(values, ",")
		}
		equal(t, got, c["metadata"], label(i, c))
	}
}

// traceHandler is a JSON-RPC handler that replies and keeps each call's traceparent.
func traceHandler(t testing.TB) (string, func() []string) {
	var mu sync.Mutex
	var seen []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var request struct {
			ID     any `json:"id"`
			Params struct {
				Context map[string]any `json:"context"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&request); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, r.Header.Get("traceparent"))
		mu.Unlock()
		context := request.Params.Context
		context["result"] = map[string]any{"reply": "deployed"}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": request.ID, "result": map[string]any{"context": context}})
	}))
	t.Cleanup(server.Close)
	return server.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// The gateway's span reaches the handler through the real sidecar: as it came with the
// sidecar's traces off, and as the parent of the sidecar's own spans with them on (the
// handler then sees the gateway's trace id under a span of the sidecar's).
func TestTheGatewaysTraceReachesTheHandler(t *testing.T) {
	gatewaySpan := cases(t, "trace-context")[0]
	span := gatewaySpan["span"].(map[string]any)
	want := gatewaySpan["metadata"].(map[string]any)["traceparent"].(string)
	for _, traced := range []bool{false, true} {
		var args []string
		if traced {
			// A collector that is not there: spans drop, calls are unaffected.
			args = []string{"--otlp-traces-endpoint", "http://127.0.0.1:9"}
		}
		sidecar := startSidecar(t, "", "", args...)
		client, err := NewClient("http://" + sidecar.address)
		if err != nil {
			t.Fatal(err)
		}
		url, seen := traceHandler(t)
		ctx := context.Background()
		handler := Handler{URL: url, Protocol: HandlerJSONRPC, Timeout: 5 * time.Second}
		if _, err := client.Register(ctx, Command{Name: "deploy", Description: "Deploy"}, WithHandler(handler)); err != nil {
			t.Fatal(err)
		}
		message := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("/deploy now"))
		task := TaskSnapshot{ID: "t-1", ContextID: "c-1", State: a2a.TaskStateWorking}
		executed, err := client.Execute(spanContext(t, ctx, span), message, task, Sender{ID: "u", Role: RoleAssignee})
		if err != nil {
			t.Fatal(err)
		}
		if executed.Reply == nil || executed.Reply.Reply != "deployed" {
			t.Fatalf("traced=%v: %+v", traced, executed)
		}
		got := seen()
		if len(got) != 1 {
			t.Fatalf("traced=%v: the handler saw %v", traced, got)
		}
		parts := strings.Split(got[0], "-")
		switch {
		case !traced && got[0] != want:
			t.Errorf("traces off: the handler saw %q, the gateway sent %q", got[0], want)
		case traced && (len(parts) != 4 || parts[1] != span["traceId"] || parts[2] == span["spanId"] || parts[3] != "01"):
			t.Errorf("traces on: the handler saw %q, not a span of the gateway's trace %s under the sidecar's", got[0], span["traceId"])
		}
		_ = client.Close()
	}
}
