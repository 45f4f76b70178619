// Command echo-agent is a plain a2a-go agent with no kit: an agent the front stands in
// front of in the tests. It answers every message with "echo: <text> <metadata as
// JSON>" and leaves its task waiting for the next message, as the Python and
// TypeScript echo agents do. JSON-RPC is served at "/", HTTP+JSON under "/rest"; the
// first line it prints is the URL it serves at. With ECHO_AGENT_KEEP_TASKS=N (the
// benchmarks) it keeps only about the last N to 2N tasks, so that its cost per message
// does not grow over a long run. With ECHO_AGENT_GRPC=1 it serves A2A's gRPC binding
// too, on a port of its own named by its card (the second line it prints).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"google.golang.org/grpc"
)

// generations is a task store that forgets: tasks live in the current generation of
// an in-memory store; once it holds keep of them it becomes the previous one and the
// one before is dropped. Lists cover the current generation only.
type generations struct {
	mu                sync.Mutex
	keep, made        int
	current, previous *taskstore.InMemory
}

func newGenerations(keep int) *generations {
	return &generations{keep: keep, current: taskstore.NewInMemory(nil), previous: taskstore.NewInMemory(nil)}
}

func (g *generations) stores() (*taskstore.InMemory, *taskstore.InMemory) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.current, g.previous
}

func (g *generations) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	g.mu.Lock()
	if g.made++; g.made > g.keep {
		g.previous, g.current, g.made = g.current, taskstore.NewInMemory(nil), 1
	}
	current := g.current
	g.mu.Unlock()
	return current.Create(ctx, task)
}

// holding is the generation that holds task id, the current one if neither does.
func (g *generations) holding(ctx context.Context, id a2a.TaskID) *taskstore.InMemory {
	current, previous := g.stores()
	if _, err := current.Get(ctx, id); err != nil {
		if _, err := previous.Get(ctx, id); err == nil {
			return previous
		}
	}
	return current
}

func (g *generations) Update(ctx context.Context, update *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	return g.holding(ctx, update.Task.ID).Update(ctx, update)
}

func (g *generations) Get(ctx context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	return g.holding(ctx, id).Get(ctx, id)
}

func (g *generations) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	current, _ := g.stores()
	return current.List(ctx, req)
}

type echo struct{}

func (echo) Execute(_ context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	var text string
	if parts := execCtx.Message.Parts; len(parts) > 0 {
		text = parts[0].Text()
	}
	metadata := execCtx.Message.Metadata
	if metadata == nil {
		metadata = map[string]any{}
	}
	seen, _ := json.Marshal(metadata) // map keys come out sorted
	return func(yield func(a2a.Event, error) bool) {
		if execCtx.StoredTask == nil && !yield(a2a.NewSubmittedTask(execCtx, execCtx.Message), nil) {
			return
		}
		reply := a2a.NewMessageForTask(a2a.MessageRoleAgent, execCtx, a2a.NewTextPart(fmt.Sprintf("echo: %s %s", text, seen)))
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateInputRequired, reply), nil)
	}
}

func (echo) Cancel(_ context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCanceled, nil), nil)
	}
}

func main() {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	url := "http://" + listener.Addr().String()
	card := &a2a.AgentCard{
		Name:        "echo",
		Description: "Echoes what it is sent",
		Version:     "1.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: url + "/rest", ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2a.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "Echoes the text", Tags: []string{"echo"}}},
	}
	var options []a2asrv.RequestHandlerOption
	if keep, err := strconv.Atoi(os.Getenv("ECHO_AGENT_KEEP_TASKS")); err == nil && keep > 0 {
		options = append(options, a2asrv.WithTaskStore(newGenerations(keep)))
	}
	handler := a2asrv.NewHandler(echo{}, options...)
	var grpcListener net.Listener
	if os.Getenv("ECHO_AGENT_GRPC") == "1" {
		grpcListener, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			&a2a.AgentInterface{URL: grpcListener.Addr().String(), ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: a2a.Version})
		server := grpc.NewServer()
		a2agrpc.NewHandler(handler).RegisterWith(server)
		go func() { log.Fatal(server.Serve(grpcListener)) }()
	}
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))
	mux.Handle("/", a2asrv.NewJSONRPCHandler(handler))
	fmt.Println(url)
	if grpcListener != nil {
		fmt.Println(grpcListener.Addr().String())
	}
	log.Fatal(http.Serve(listener, mux))
}
