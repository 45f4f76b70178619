// Command echo-agent is a plain a2a-go agent with no kit: an agent the front stands in
// front of in the tests. It answers every message with "echo: <text> <metadata as
// JSON>" and leaves its task waiting for the next message, as the Python and
// TypeScript echo agents do. JSON-RPC is served at "/", HTTP+JSON under "/rest"; the
// first line it prints is the URL it serves at.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log"
	"net"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

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
	handler := a2asrv.NewHandler(echo{})
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))
	mux.Handle("/", a2asrv.NewJSONRPCHandler(handler))
	fmt.Println(url)
	log.Fatal(http.Serve(listener, mux))
}
