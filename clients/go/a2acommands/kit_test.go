package a2acommands

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// fetchCard is the card as the gateway serves it now.
func (g *gateway) fetchCard(t testing.TB) *a2a.AgentCard {
	t.Helper()
	response, err := http.Get(g.url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	var card a2a.AgentCard
	if err := json.NewDecoder(response.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	return &card
}

// cardCommands is the names the served card lists in the extension's params.
func cardCommands(t testing.TB, card *a2a.AgentCard) []string {
	var names []string
	for _, extension := range card.Capabilities.Extensions {
		if extension.URI != ExtensionURI {
			continue
		}
		for _, command := range extension.Params["commands"].([]any) {
			names = append(names, command.(map[string]any)["name"].(string))
		}
	}
	return names
}

func TestClientRegisterListAndErrors(t *testing.T) {
	client := sidecarClient(t)
	ctx := context.Background()
	deploy := Command{Name: "deploy", Description: "Deploy this task", ArgumentHint: "<env>"}
	handler := Handler{URL: "http://127.0.0.1:7000", Protocol: HandlerJSONRPC, Timeout: 3 * time.Second}
	registered, err := client.Register(ctx, deploy, WithHandler(handler), AllowedRoles(RoleAdmin))
	if err != nil || registered.Outcome != RegisterCreated {
		t.Fatalf("register: %+v, %v", registered, err)
	}
	registry, err := client.ListSpecs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := registry.Commands[len(registry.Commands)-1]
	equal(t, last.Command, deploy, "the command as registered")
	equal(t, *last.Handler, handler, "its handler")
	equal(t, last.AllowedRoles, []Role{RoleAdmin}, "its roles")
	equal(t, last.Body, BodyHandler, "its body")
	equal(t, registry.Revision, registered.Revision, "the revision")
	equal(t, registry.CardExtension.URI, ExtensionURI, "the card entry")

	_, err = client.Register(ctx, Command{Name: "deploy", Description: "Something else"})
	var typed *Error
	if !errors.Is(err, ErrAlreadyExists) || !errors.As(err, &typed) || typed.Message == "" {
		t.Errorf("a different spec under the same name: %v", err)
	}
	_, err = client.Register(ctx, Command{Name: "Bad Name", Description: "x"})
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &typed) || typed.Field != "spec.name" {
		t.Errorf("a bad name names its field: %#v", err)
	}
	if _, err := client.Unregister(ctx, "nothing-here"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unregistering what is not there: %v", err)
	}
	if revision, err := client.Unregister(ctx, "deploy"); err != nil || revision <= registered.Revision {
		t.Errorf("unregister: %d, %v", revision, err)
	}
}

func TestCompletionOverJSONRPC(t *testing.T) {
	sidecar := startSidecar(t, "", "")
	g := startGateway(t, sidecar.address)

	headers, answer := g.rpc(t, CompleteMethod, map[string]any{"text": "/model g"}, map[string]string{a2a.SvcParamExtensions: ExtensionURI})
	result := answer["result"].(map[string]any)
	equal(t, result["command"], "model", "the command completed")
	var values []string
	for _, v := range result["values"].([]any) {
		values = append(values, v.(map[string]any)["text"].(string))
	}
	equal(t, values, []string{"/model gpt-x", "/model gpt-x-mini"}, "the models, as whole texts")
	equal(t, headers.Get(a2a.SvcParamExtensions), ExtensionURI, "activated when asked for")

	headers, answer = g.rpc(t, CompleteMethod, map[string]any{"text": "/", "limit": 2}, nil)
	result = answer["result"].(map[string]any)
	equal(t, len(result["values"].([]any)), 2, "the limit")
	equal(t, result["hasMore"], true, "more than the limit")
	equal(t, headers.Get(a2a.SvcParamExtensions), "", "not activated unless asked for")

	turn := g.send(t, "hello", "", false)
	_, answer = g.rpc(t, CompleteMethod, map[string]any{"text": "/st", "taskId": string(turn.taskID)}, map[string]string{"x-role": "watcher"})
	equal(t, answer["result"].(map[string]any)["values"].([]any)[0].(map[string]any)["value"], "status", "names on a task")

	for _, bad := range []map[string]any{{"text": 5}, {"text": "/m", "limit": -1}, {"text": "/m", "limit": 1.5}, {"text": "/m", "taskId": 3}} {
		_, answer = g.rpc(t, CompleteMethod, bad, nil)
		equal(t, answer["error"].(map[string]any)["code"], float64(codeInvalidParams), "bad params")
	}
	_, answer = g.rpc(t, CompleteMethod, map[string]any{"text": "/m", "taskId": "no-such-task"}, nil)
	equal(t, answer["error"].(map[string]any)["code"], float64(codeTaskNotFound), "an unknown task")

	// Every other method still reaches the SDK, its body intact.
	_, answer = g.rpc(t, "GetTask", map[string]any{"id": string(turn.taskID)}, map[string]string{"A2A-Version": "1.0"})
	equal(t, answer["result"].(map[string]any)["id"], string(turn.taskID), "GetTask through the handler")
}

func TestSubTaskIsCreatedInTheStore(t *testing.T) {
	sidecar := startSidecar(t, "", "")
	g := startGateway(t, sidecar.address)
	for _, stream := range []bool{false, true} {
		parent := g.send(t, "hello", "", stream)
		reply := g.send(t, "/sub-task Write the tests", parent.taskID, stream)
		ref, _ := reply.reply.Metadata["task_ref"].(string)
		if ref == "" || reply.reply.Metadata["command"] != "sub-task" {
			t.Fatalf("no task_ref in %v", reply.reply.Metadata)
		}
		equal(t, ReadTaskData(reply.stored).SubTasks, []a2a.TaskID{a2a.TaskID(ref)}, "the parent lists it")
		sub, err := g.store.Get(context.Background(), a2a.TaskID(ref))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, sub.Task.Status.State, a2a.TaskStateSubmitted, "the sub-task's state")
		equal(t, *ReadTaskData(sub.Task).ParentID, string(parent.taskID), "its parent")
		status := g.send(t, "/status", parent.taskID, stream)
		if !strings.Contains(status.text, "- "+ref+" · SUBMITTED") {
			t.Errorf("/status lists the sub-task: %q", status.text)
		}
	}
	// A watcher may not make one: refused, nothing created.
	parent := g.send(t, "hello", "", false)
	ctx := context.Background()
	message := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("/sub-task Nope"))
	message.TaskID = parent.taskID
	before := ReadTaskData(parent.stored).SubTasks
	result, err := g.client.SendMessage(withRole(ctx, "watcher"), &a2a.SendMessageRequest{Message: message})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := singleText(result.(*a2a.Task).Status.Message)
	if !strings.HasPrefix(text, "refused:") {
		t.Errorf("a watcher's /sub-task: %q", text)
	}
	stored, _ := g.store.Get(ctx, parent.taskID)
	equal(t, ReadTaskData(stored.Task).SubTasks, before, "nothing created")
}

func TestCardFollowsTheRegistry(t *testing.T) {
	sidecar := startSidecar(t, "", "")
	g := startGateway(t, sidecar.address)
	equal(t, cardCommands(t, g.fetchCard(t)), []string{"model", "effort", "sub-task", "status"}, "the built-ins, in order")
	registered, err := g.commands.Register(context.Background(), Command{Name: "deploy", Description: "Deploy"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.card.WaitForRevision(ctx, registered.Revision); err != nil {
		t.Fatal(err)
	}
	names := cardCommands(t, g.fetchCard(t))
	if !slices.Equal(names, []string{"model", "effort", "sub-task", "status", "deploy"}) {
		t.Errorf("after Register: %v", names)
	}
}

func TestSidecarStoppedAndRestartedUnderneath(t *testing.T) {
	first := startSidecar(t, "", freeAddress(t))
	g := startGateway(t, first.address)
	taskIDs := map[bool]a2a.TaskID{}
	for _, stream := range []bool{false, true} {
		taskIDs[stream] = g.send(t, "hello", "", stream).taskID
		equal(t, g.send(t, "/model", taskIDs[stream], stream).reply.Metadata["command"], "model", "a command answered")
	}
	first.stop(t)

	for _, stream := range []bool{false, true} {
		taskID := taskIDs[stream]
		command := g.send(t, "/model gpt-x-mini", taskID, stream)
		equal(t, command.text, "/model failed: commands are unavailable right now", "the fallback reply")
		equal(t, command.reply.Metadata["command"], "model", "its metadata")
		equal(t, command.state, a2a.TaskStateInputRequired, "the state unchanged")
		equal(t, ReadTaskData(command.stored).Model, (*string)(nil), "nothing changed")
		equal(t, g.send(t, "/unknown x", taskID, stream).text, "/unknown failed: commands are unavailable right now", "an unknown name too")
		for _, s := range scenarios(t, "sidecarDown") {
			runScenario(t, g, s, stream)
		}
		equal(t, g.send(t, "still there?", taskID, stream).text, "echo: still there?", "plain messages still reach the agent")
	}
	if logs := g.logs.String(); !strings.Contains(logs, "Execute failed, command not run") || !strings.Contains(logs, "Unavailable") {
		t.Errorf("the failure is logged with its cause:\n%s", logs)
	}
	_, answer := g.rpc(t, CompleteMethod, map[string]any{"text": "/mo"}, nil)
	equal(t, answer["error"], map[string]any{"code": float64(codeInternal), "message": "commands are unavailable right now"}, "completion while down")
	for _, text := range g.echo.Seen() {
		if strings.HasPrefix(text, "/") {
			t.Errorf("%q reached the agent", text)
		}
	}

	// Back on the same address, with the same registry.
	startSidecar(t, first.dataDir, first.address)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.commands.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	registered, err := g.commands.Register(ctx, Command{Name: "after-restart", Description: "Registered after the restart"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.card.WaitForRevision(ctx, registered.Revision); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cardCommands(t, g.fetchCard(t)), "after-restart") {
		t.Error("the card caught up")
	}
	for _, stream := range []bool{false, true} {
		equal(t, g.send(t, "/model gpt-x-mini", taskIDs[stream], stream).text, "Model set to gpt-x-mini.", "commands work again")
	}
}

// A sidecar that hangs instead of dying (paused with SIGSTOP, as a frozen node leaves it):
// a command that runs no handler gets the fallback reply within its Execute deadline
// (docs/kit-contract.md, section 5), well before a client's usual 30 s, and never
// reaches the agent.
func TestPausedSidecarGivesTheFallbackWithinTheDeadline(t *testing.T) {
	sidecar := startSidecar(t, "", "")
	g := startGateway(t, sidecar.address)
	// The card helper's WatchSpecs gives each command its deadline.
	waitUntil := time.Now().Add(30 * time.Second)
	for g.commands.ExecuteDeadline("status") != NoHandlerDeadline {
		if time.Now().After(waitUntil) {
			t.Fatal("the client never saw the registry")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first := g.send(t, "/status", "", false)
	if !strings.HasPrefix(first.text, "Task ") {
		t.Fatalf("/status: %q", first.text)
	}

	sidecar.pause(t)
	// What a client waits at the most, here: less than the usual 30 s.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	message := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("/status"))
	message.TaskID = first.taskID
	result, err := g.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: message})
	if err != nil {
		t.Fatalf("no answer within 20 s: the kit waited on the paused sidecar: %v", err)
	}
	task, ok := result.(*a2a.Task)
	if !ok || task.Status.Message == nil {
		t.Fatalf("expected a Task with the reply, got %T", result)
	}
	if text, _ := singleText(task.Status.Message); text != "/status failed: commands are unavailable right now" {
		t.Errorf("reply %q", text)
	}
	if slices.ContainsFunc(g.echo.Seen(), func(s string) bool { return strings.HasPrefix(s, "/") }) {
		t.Errorf("a command reached the agent: %v", g.echo.Seen())
	}

	if err := sidecar.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if again := g.send(t, "/status", first.taskID, false); !strings.HasPrefix(again.text, "Task ") {
		t.Errorf("after SIGCONT: %q", again.text)
	}
}

// A card request to a gateway whose sidecar hangs from the start is served, without the
// commands, within the card's short listing bound rather than the client's 40 s.
func TestCardServedWhileTheSidecarHangsAtStart(t *testing.T) {
	sidecar := startSidecar(t, "", "")
	sidecar.pause(t)
	g := startGateway(t, sidecar.address)
	client := &http.Client{Timeout: 20 * time.Second} // less than a client's usual 30 s
	response, err := client.Get(g.url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatalf("the card was not served within 20 s: %v", err)
	}
	defer response.Body.Close()
	var card a2a.AgentCard
	if err := json.NewDecoder(response.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	if names := cardCommands(t, &card); len(names) != 0 {
		t.Errorf("commands from a sidecar that never answered: %v", names)
	}
}
