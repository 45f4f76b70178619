package a2acommands

// The caller's deadline (the context's, sent as grpc-timeout) reaches the sidecar's
// Execute: a handler slower than what is left of it is called with what is left and
// Execute answers a failure reply (not DEADLINE_EXCEEDED); with less than the sidecar's
// --handler-min-time-left-ms left, the handler is not called at all.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// slowHandler is a JSON-RPC handler that replies "late" after delay (or gives up when
// its caller goes away), and counts its calls.
func slowHandler(t testing.TB, delay time.Duration) (string, *atomic.Int32) {
	var calls atomic.Int32
	done := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
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
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		case <-done:
			return
		}
		context := request.Params.Context
		context["result"] = map[string]any{"reply": "late"}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": request.ID, "result": map[string]any{"context": context}})
	}))
	t.Cleanup(server.Close)
	t.Cleanup(func() { close(done) }) // first: no call is left waiting
	return server.URL, &calls
}

// executeSlow runs "/slow now" with ctx's deadline timeout.
func executeSlow(t testing.TB, client *Client, timeout time.Duration) *CommandReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	message := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("/slow now"))
	task := TaskSnapshot{ID: "t-1", ContextID: "c-1", State: a2a.TaskStateWorking}
	executed, err := client.Execute(ctx, message, task, Sender{ID: "u-1", Role: RoleAssignee})
	if err != nil {
		t.Fatalf("a reply, not an error: %v", err)
	}
	if executed.Reply == nil {
		t.Fatalf("no command reply: %+v", executed)
	}
	return executed.Reply
}

// A handler that takes 5 s (within its 10 s timeout) and a caller whose context allows
// 400 ms: the handler is called with what is left, and Execute answers the failure reply
// in time.
func TestExecuteShortensASlowHandlerToTheCallersDeadline(t *testing.T) {
	url, calls := slowHandler(t, 5*time.Second)
	client := sidecarClient(t)
	handler := Handler{URL: url, Protocol: HandlerJSONRPC, Timeout: 10 * time.Second}
	if _, err := client.Register(context.Background(), Command{Name: "slow", Description: "Slow"}, WithHandler(handler)); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	reply := executeSlow(t, client, 400*time.Millisecond)
	elapsed := time.Since(started)
	equal(t, reply.Outcome, OutcomeFailed, "the outcome")
	if !strings.HasPrefix(reply.Reply, "/slow failed: timed out after") || !strings.Contains(reply.Reply, "caller's deadline") {
		t.Errorf("the reply: %q", reply.Reply)
	}
	if elapsed > 3*time.Second { // loose: well before the handler's 5 s
		t.Errorf("answered after %v", elapsed)
	}
	equal(t, calls.Load(), int32(1), "the handler was called")
}

// Less than the sidecar's --handler-min-time-left-ms left: the failure reply at once,
// the handler never called; with enough time left the same command runs.
func TestExecuteWithLessThanTheMinimumLeftDoesNotCallTheHandler(t *testing.T) {
	url, calls := slowHandler(t, 0)
	sidecar := startSidecar(t, "", "", "--handler-min-time-left-ms", "200")
	client, err := NewClient("http://" + sidecar.address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	handler := Handler{URL: url, Protocol: HandlerJSONRPC, Timeout: 10 * time.Second}
	if _, err := client.Register(context.Background(), Command{Name: "slow", Description: "Slow"}, WithHandler(handler)); err != nil {
		t.Fatal(err)
	}
	reply := executeSlow(t, client, 150*time.Millisecond)
	equal(t, reply.Outcome, OutcomeFailed, "the outcome")
	if !strings.HasPrefix(reply.Reply, "/slow failed: not called:") || !strings.Contains(reply.Reply, "the minimum is 200 ms") {
		t.Errorf("the reply: %q", reply.Reply)
	}
	equal(t, calls.Load(), int32(0), "never called")
	ran := executeSlow(t, client, 5*time.Second)
	equal(t, ran.Reply, "late", "with enough time left")
	equal(t, calls.Load(), int32(1), "called once")
}
