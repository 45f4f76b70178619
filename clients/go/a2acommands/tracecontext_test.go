package a2acommands

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
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

// receiver is the test OTLP receiver (a2a-commands-otlp-receiver, beside the binary),
// which prints each span it is sent as a JSON line.
type receiver struct {
	endpoint string
	mu       sync.Mutex
	spans    []map[string]any
	arrived  chan struct{}
}

func startReceiver(t testing.TB) *receiver {
	t.Helper()
	binary := os.Getenv("A2A_COMMANDS_BIN")
	if binary == "" {
		binary = filepath.Join(repoRoot(t), "target", "debug", "a2a-commands")
	}
	cmd := exec.Command(filepath.Join(filepath.Dir(binary), "a2a-commands-otlp-receiver"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatal("the receiver printed no address")
	}
	var first struct{ Listening string }
	if err := json.Unmarshal(lines.Bytes(), &first); err != nil {
		t.Fatal(err)
	}
	r := &receiver{endpoint: "http://" + first.Listening, arrived: make(chan struct{}, 1)}
	go func() {
		for lines.Scan() {
			var span map[string]any
			if json.Unmarshal(lines.Bytes(), &span) == nil {
				r.mu.Lock()
				r.spans = append(r.spans, span)
				r.mu.Unlock()
				select {
				case r.arrived <- struct{}{}:
				default:
				}
			}
		}
	}()
	return r
}

// waitFor returns the spans once done holds for them, waiting on arrivals (at most 30 s).
func (r *receiver) waitFor(t testing.TB, done func([]map[string]any) bool) []map[string]any {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		spans := append([]map[string]any(nil), r.spans...)
		r.mu.Unlock()
		if done(spans) {
			return spans
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("spans not received; got %v", spans)
		}
	}
}

func named(spans []map[string]any, traceID, name string) map[string]any {
	for _, s := range spans {
		if s["traceId"] == traceID && s["name"] == name {
			return s
		}
	}
	return nil
}

// The gateway's span reaches the handler through the real sidecar: as it came with the
// sidecar's traces off; with them on, one trace runs from the gateway's span through the
// sidecar's server span and handler span (received by a real OTLP receiver) to the
// handler, which is sent the latter.
func TestTheGatewaysTraceReachesTheHandler(t *testing.T) {
	gatewaySpan := cases(t, "trace-context")[0]
	span := gatewaySpan["span"].(map[string]any)
	traceID := span["traceId"].(string)
	want := gatewaySpan["metadata"].(map[string]any)["traceparent"].(string)
	for _, traced := range []bool{false, true} {
		var args []string
		var spans *receiver
		if traced {
			spans = startReceiver(t)
			args = []string{"--otlp-traces-endpoint", spans.endpoint}
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
		_ = client.Close()
		got := seen()
		if len(got) != 1 {
			t.Fatalf("traced=%v: the handler saw %v", traced, got)
		}
		if !traced {
			if got[0] != want {
				t.Errorf("traces off: the handler saw %q, the gateway sent %q", got[0], want)
			}
			continue
		}
		sidecar.stop(t) // the drain sends the sidecar's spans
		received := spans.waitFor(t, func(s []map[string]any) bool {
			return named(s, traceID, "a2a.commands.v1.CommandService/Execute") != nil && named(s, traceID, "command.invoked.in") != nil
		})
		execute := named(received, traceID, "a2a.commands.v1.CommandService/Execute")
		call := named(received, traceID, "command.invoked.in")
		if execute["parentSpanId"] != span["spanId"] || call["parentSpanId"] != execute["spanId"] {
			t.Errorf("not one trace: gateway %s → Execute %v (parent %v) → handler call %v (parent %v)",
				span["spanId"], execute["spanId"], execute["parentSpanId"], call["spanId"], call["parentSpanId"])
		}
		if sent := "00-" + traceID + "-" + call["spanId"].(string) + "-01"; got[0] != sent {
			t.Errorf("the handler saw %q, not its client span %q", got[0], sent)
		}
	}
}
