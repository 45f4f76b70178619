package a2acommands

// The shared vectors (docs/vectors/*.json): the rules docs/kit-contract.md writes down,
// the same files the other kits and the Rust tests run.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/a2a-commands/a2a-commands/clients/go/internal/commandspb"
)

func cases(t testing.TB, name string) []map[string]any {
	var out []map[string]any
	for _, c := range vectors(t, name)["cases"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

func label(i int, c map[string]any) string {
	if note, ok := c["note"].(string); ok {
		return fmt.Sprintf("%d: %s", i, note)
	}
	return fmt.Sprint(i)
}

// into re-reads a vector's JSON value as T (an a2a-go type), as a client's JSON would be.
func into[T any](t testing.TB, value any) *T {
	t.Helper()
	raw, _ := json.Marshal(value)
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return &out
}

// plain is value as generic JSON (maps, slices, float64s), for comparison.
func plain(t testing.TB, value any) any {
	t.Helper()
	raw, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// untimed is an event or task's JSON without its status timestamp (the vectors leave it out).
func untimed(t testing.TB, value any) any {
	out := plain(t, value).(map[string]any)
	if status, ok := out["status"].(map[string]any); ok {
		delete(status, "timestamp")
	}
	return out
}

// protoJSON is a protobuf message's JSON as generic JSON.
func protoJSON(t testing.TB, message proto.Message) any {
	t.Helper()
	raw, err := protojson.Marshal(message)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

// normal is expected read as message's type and written back, as the kit's own would be.
func normal(t testing.TB, expected any, message proto.Message) any {
	t.Helper()
	raw, _ := json.Marshal(expected)
	if err := protojson.Unmarshal(raw, message); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return protoJSON(t, message)
}

func equal(t testing.TB, got, want any, where string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s:\n got  %s\n want %s", where, g, w)
	}
}

func vectorMessage(t testing.TB, parts any) *a2a.Message {
	return into[a2a.Message](t, map[string]any{"messageId": "m-1", "role": "ROLE_USER", "parts": parts})
}

func TestVectorsMessages(t *testing.T) {
	for i, c := range cases(t, "messages") {
		message := vectorMessage(t, c["parts"])
		equal(t, MayBeCommand(message), c["mayBeCommand"], label(i, c)+": mayBeCommand")
		name, ok := CommandName(message)
		var want any
		if syntax, has := c["syntax"].(map[string]any); has {
			want = syntax["name"]
		}
		var got any
		if ok {
			got = name
		}
		equal(t, got, want, label(i, c)+": syntax")
	}
}

func TestVectorsMessagesAsTheServiceClassifiesThem(t *testing.T) {
	client := sidecarClient(t)
	for i, c := range cases(t, "messages") {
		answer, err := client.Classify(context.Background(), vectorMessage(t, c["parts"]))
		if err != nil {
			t.Fatalf("%s: %v", label(i, c), err)
		}
		want := normal(t, c["service"], &pb.ClassifyResponse{}).(map[string]any)
		got := map[string]any{}
		if answer.IsCommand() {
			got["command"] = protoJSON(t, &pb.Command{Name: answer.Command, Arguments: answer.Arguments})
		} else {
			got["ordinary"] = protoJSON(t, &pb.Ordinary{Reason: pb.OrdinaryReason(answer.Reason), Name: answer.Name})
		}
		equal(t, got, want, label(i, c))
	}
}

func TestVectorsTaskData(t *testing.T) {
	for i, c := range cases(t, "task-data") {
		task := into[a2a.Task](t, c["task"])
		equal(t, plain(t, ReadTaskData(task).Value()), c["data"], label(i, c)+": data")
		states := map[a2a.TaskID]a2a.TaskState{}
		for id, state := range c["subTaskStates"].(map[string]any) {
			states[a2a.TaskID(id)] = a2a.TaskState(state.(string))
		}
		snapshot := NewTaskSnapshot(task, states)
		equal(t, protoJSON(t, snapshot.proto()), normal(t, c["snapshot"], &pb.TaskSnapshot{}), label(i, c)+": snapshot")
	}
}

func TestVectorsChanges(t *testing.T) {
	for i, c := range cases(t, "changes") {
		task := into[a2a.Task](t, c["task"])
		message := &pb.Changes{}
		normal(t, c["changes"], message)
		changes := changesFromProto(message)
		equal(t, plain(t, ReadTaskData(task).WithChanges(changes).Value()), c["data"], label(i, c)+": data")
		if expected, ok := c["subTask"]; ok {
			if changes.SubTask == nil {
				t.Fatalf("%s: no sub-task in the changes", label(i, c))
			}
			created := NewSubTask(task, *changes.SubTask)
			equal(t, untimed(t, created), plain(t, into[a2a.Task](t, expected)), label(i, c)+": sub-task")
		} else if changes.SubTask != nil {
			t.Errorf("%s: a sub-task where none is expected", label(i, c))
		}
	}
}

func TestVectorsFallback(t *testing.T) {
	for i, c := range cases(t, "fallback") {
		reply := NewFallbackReply(into[a2a.Task](t, c["task"]), into[a2a.Message](t, c["message"]))
		if c["reply"] == nil {
			if reply != nil {
				t.Errorf("%s: a reply where none is expected", label(i, c))
			}
			continue
		}
		equal(t, untimed(t, reply), plain(t, into[a2a.TaskStatusUpdateEvent](t, c["reply"])), label(i, c))
	}
	if text := vectors(t, "fallback")["text"]; text != FallbackReply {
		t.Errorf("FallbackReply %q, the vectors say %q", FallbackReply, text)
	}
}

func TestVectorsDeadlines(t *testing.T) {
	file := vectors(t, "deadlines")
	raw, _ := json.Marshal(file["registry"])
	var listed pb.ListSpecsResponse
	if err := protojson.Unmarshal(raw, &listed); err != nil {
		t.Fatal(err)
	}
	registry, err := registryFromProto(&listed)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases(t, "deadlines") {
		seen := registry
		if c["no_registry"] == true {
			seen = nil
		}
		name, _ := c["command"].(string)
		want := time.Duration(c["deadline_ms"].(float64)) * time.Millisecond
		if got := ExecuteDeadline(seen, name); got != want {
			t.Errorf("%d (%v): %v, the vectors say %v", i, c["command"], got, want)
		}
	}
}

func TestVectorsAddresses(t *testing.T) {
	file := vectors(t, "addresses")
	for i, c := range cases(t, "addresses") {
		value := c["value"].(string)
		if value == "" {
			value = file["default"].(string)
		}
		address, err := ParseAddress(value)
		where := fmt.Sprintf("%d: %q", i, c["value"])
		if c["error"] == true {
			if err == nil {
				t.Errorf("%s: accepted as %+v", where, address)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		equal(t, address, Address{Target: c["target"].(string), TLS: c["tls"].(bool)}, where)
	}
	t.Setenv(AddressEnv, "")
	if address, err := AddressFromEnv(); err != nil || address.Target != "127.0.0.1:50051" {
		t.Errorf("unset: %+v, %v", address, err)
	}
	t.Setenv(AddressEnv, "127.0.0.1")
	if _, err := AddressFromEnv(); err == nil || !strings.Contains(err.Error(), AddressEnv) {
		t.Errorf("a bad variable is an error naming it: %v", err)
	}
}

// scenarioStep is one step of docs/vectors/lifecycle.json.
type scenarioStep struct {
	Send          string         `json:"send"`
	Task          string         `json:"task"`
	Reply         string         `json:"reply"`
	State         a2a.TaskState  `json:"state"`
	Events        *stepEvents    `json:"events"`
	ReachesAgent  bool           `json:"reachesAgent"`
	AgentSaw      *string        `json:"agentSaw"`
	AgentMetadata map[string]any `json:"agentMetadata"`
	TaskData      map[string]any `json:"taskData"`
}

type stepEvents struct {
	Streaming    []string `json:"streaming"`
	NonStreaming []string `json:"nonStreaming"`
}

type scenario struct {
	Name     string         `json:"name"`
	Register []registered   `json:"register"`
	Steps    []scenarioStep `json:"steps"`
}

// registered is a command a scenario registers first.
type registered struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint"`
	Prompt       string `json:"prompt"`
}

func scenarios(t testing.TB, key string) []scenario {
	return *into[[]scenario](t, vectors(t, "lifecycle")[key])
}

// runScenario runs a lifecycle scenario through the SDK's client, streaming or not.
func runScenario(t *testing.T, g *gateway, s scenario, stream bool) {
	t.Helper()
	for _, command := range s.Register {
		spec := Command{Name: command.Name, Description: command.Description, ArgumentHint: command.ArgumentHint}
		if _, err := g.commands.Register(context.Background(), spec, Override(), WithPrompt(Prompt{Template: command.Prompt})); err != nil {
			t.Fatalf("%s: register %s: %v", s.Name, command.Name, err)
		}
	}
	var taskID a2a.TaskID
	for _, step := range s.Steps {
		seen := len(g.echo.Seen())
		on := a2a.TaskID("")
		if step.Task == "same" {
			on = taskID
		}
		turn := g.send(t, step.Send, on, stream)
		where := s.Name + ": " + step.Send
		if step.Task == "same" && turn.taskID != taskID {
			t.Fatalf("%s: answered on task %s, not %s", where, turn.taskID, taskID)
		}
		taskID = turn.taskID
		equal(t, turn.text, strings.ReplaceAll(step.Reply, "{taskId}", string(turn.taskID)), where+": reply")
		equal(t, turn.state, step.State, where+": state")
		if step.Events != nil {
			want := step.Events.NonStreaming
			if stream {
				want = step.Events.Streaming
			}
			equal(t, turn.kinds, want, where+": events")
		}
		equal(t, len(g.echo.Seen()) > seen, step.ReachesAgent, where+": reaches the agent")
		if step.AgentSaw != nil {
			text, _ := singleText(g.echo.Last())
			equal(t, text, *step.AgentSaw, where+": what the agent saw")
		}
		for key, want := range step.AgentMetadata {
			equal(t, g.echo.Last().Metadata[key], want, where+": the agent's message's "+key)
		}
		if step.TaskData != nil {
			stored := turn.stored.Metadata[TaskDataKey]
			if stored == nil {
				stored = map[string]any{}
			}
			equal(t, plain(t, stored), plain(t, step.TaskData), where+": task data")
		}
	}
}

func TestVectorsPrompts(t *testing.T) {
	client := sidecarClient(t)
	ctx := context.Background()
	task := TaskSnapshot{ID: "t-1", ContextID: "c-1", State: a2a.TaskStateWorking}
	sender := Sender{ID: "u", Role: RoleAssignee}
	for i, c := range vectors(t, "prompts")["templates"].([]any) {
		c := c.(map[string]any)
		where := label(i, c)
		_, err := client.Register(ctx, Command{Name: "p", Description: "A prompt"}, Override(), WithPrompt(Prompt{Template: c["template"].(string)}))
		if want, ok := c["error"].(string); ok {
			var typed *Error
			if !errors.As(err, &typed) || typed.Code != codes.InvalidArgument || typed.Field != "prompt.template" || !strings.Contains(typed.Reason, want) {
				t.Errorf("%s: Register answered %v", where, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		arguments := c["arguments"].(string)
		text := "/p"
		if arguments != "" {
			text += " " + arguments
		}
		message := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		executed, err := client.Execute(ctx, message, task, sender, AcceptPrompt())
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if failure, ok := c["failure"].(string); ok {
			if executed.Reply == nil || executed.Reply.Outcome != OutcomeFailed || executed.Reply.Reply != "/p failed: "+failure {
				t.Errorf("%s: %+v", where, executed)
			}
			continue
		}
		if executed.Prompt == nil {
			t.Fatalf("%s: no prompt in %+v", where, executed)
		}
		equal(t, *executed.Prompt, PromptExpansion{Command: "p", Arguments: arguments, Text: c["expansion"].(string)}, where)
	}
}

func TestVectorsLifecycle(t *testing.T) {
	sidecar := startSidecar(t, "", "")
	g := startGateway(t, sidecar.address)
	for _, stream := range []bool{false, true} {
		for _, s := range scenarios(t, "scenarios") {
			t.Run(fmt.Sprintf("%s (streaming: %v)", s.Name, stream), func(t *testing.T) { runScenario(t, g, s, stream) })
		}
	}
}

// The gateway's own failure before Execute (docs/vectors/gateway-failure.json): with a
// role resolver that fails, a message that may be a command fails as a2a-go fails any,
// never reaching the agent and never answered with the fallback reply.
func TestVectorsGatewayFailure(t *testing.T) {
	sidecar := startSidecar(t, "", "")
	failing := func(context.Context, *a2asrv.ExecutorContext) (Role, error) {
		return 0, errors.New("the gateway's role store is down")
	}
	g := startGateway(t, sidecar.address, WithRole(failing))
	for i, c := range cases(t, "gateway-failure") {
		text := c["send"].(string)
		seen := len(g.echo.Seen())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		result, err := g.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
		cancel()
		failed, got := err != nil, fmt.Sprint(err)
		if task, ok := result.(*a2a.Task); ok && err == nil {
			failed = task.Status.State == a2a.TaskStateFailed
			if task.Status.Message != nil {
				got, _ = singleText(task.Status.Message)
			}
		}
		if failed != c["fails"].(bool) {
			t.Errorf("%d (%s): failed %v (%s), the vectors say %v", i, text, failed, got, c["fails"])
		}
		if strings.Contains(got, "commands are unavailable") {
			t.Errorf("%d (%s): the fallback reply for the gateway's own failure", i, text)
		}
		if want, ok := c["reply"].(string); ok && got != want {
			t.Errorf("%d (%s): reply %q, the vectors say %q", i, text, got, want)
		}
		if reached := len(g.echo.Seen()) > seen; reached != c["reachesAgent"].(bool) {
			t.Errorf("%d (%s): reached the agent %v", i, text, reached)
		}
	}
}
