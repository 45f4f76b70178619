package a2acommands

// README.md as written: its checkout install block run in an empty module, the gateway
// block built there verbatim around an echo agent, and driven by a2a-go's own client,
// with the sidecar stopped and restarted underneath.

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
)

// readmeBlock is the fenced block right after the marker <!-- name --> in the README.
func readmeBlock(t testing.TB, readme, name string) string {
	t.Helper()
	match := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(name) + " -->\n```[a-z]*\n(.*?)```").FindStringSubmatch(readme)
	if match == nil {
		t.Fatalf("README.md has no block marked %s", name)
	}
	return match[1]
}

// myAgentGo is the gateway's own agent, as a user of the README would have it.
const myAgentGo = `package main

import (
	"context"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

func agentCard(url string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name: "Echo", Description: "Echoes", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
	}
}

type echo struct{}

func myAgent() a2asrv.AgentExecutor { return echo{} }

func (echo) Execute(_ context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if execCtx.StoredTask == nil && !yield(a2a.NewSubmittedTask(execCtx, execCtx.Message), nil) {
			return
		}
		text := "echo: " + execCtx.Message.Parts[0].Text()
		reply := a2a.NewMessageForTask(a2a.MessageRoleAgent, execCtx, a2a.NewTextPart(text))
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateInputRequired, reply), nil)
	}
}

func (echo) Cancel(_ context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCanceled, nil), nil)
	}
}
`

func run(t testing.TB, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func TestReadmeGatewayAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a gateway module")
	}
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "clients", "go", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)

	// An empty module; then the README's steps in its order, exactly as written: the
	// install block, the gateway written as main.go (beside the user's own agent), the
	// build block.
	project := t.TempDir()
	run(t, project, "go", "mod", "init", "example.com/gateway")
	install := strings.ReplaceAll(readmeBlock(t, readme, "install:checkout"), "../a2a-commands", root)
	run(t, project, "bash", "-euc", install)
	gatewayGo := readmeBlock(t, readme, "gateway")
	if err := os.WriteFile(filepath.Join(project, "main.go"), []byte(gatewayGo), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "my_agent.go"), []byte(myAgentGo), 0o644); err != nil {
		t.Fatal(err)
	}
	gofmt := exec.Command("gofmt", "-l", "main.go")
	gofmt.Dir = project
	if out, err := gofmt.Output(); err != nil || len(out) > 0 {
		t.Errorf("the README's gateway block is not as gofmt prints it (%v): %s", err, out)
	}
	run(t, project, "bash", "-euc", readmeBlock(t, readme, "build"))

	// No sidecar yet: the gateway must serve from its first second.
	sidecarAddress := freeAddress(t)
	gatewayCmd := exec.Command(filepath.Join(project, "gateway"))
	gatewayCmd.Env = append(os.Environ(), "A2A_COMMANDS_ADDR=http://"+sidecarAddress, "PORT=")
	stdout, _ := gatewayCmd.StdoutPipe()
	gatewayCmd.Stderr = os.Stderr
	if err := gatewayCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = gatewayCmd.Process.Signal(syscall.SIGTERM)
		_ = gatewayCmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	var url string
	for lines.Scan() {
		if after, ok := strings.CutPrefix(lines.Text(), "listening on "); ok {
			url = after
			break
		}
	}
	if url == "" {
		t.Fatal("the gateway exited before listening")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	card, err := agentcard.DefaultResolver.Resolve(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(text string, taskID a2a.TaskID) (*a2a.Task, string) {
		t.Helper()
		message := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		message.TaskID = taskID
		result, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: message})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		task := result.(*a2a.Task)
		reply, _ := singleText(task.Status.Message)
		return task, reply
	}
	early, reply := ask("before the sidecar", "")
	equal(t, reply, "echo: before the sidecar", "a plain message with no sidecar yet")
	_, reply = ask("/status", early.ID)
	equal(t, reply, "/status failed: commands are unavailable right now", "a command with no sidecar yet")

	first := startSidecar(t, "", sidecarAddress)
	// The card gains the commands once the card helper reaches the sidecar (its watch
	// reconnects with backoff).
	for {
		card, err = agentcard.DefaultResolver.Resolve(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if len(cardCommands(t, card)) > 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if names := cardCommands(t, card); strings.Join(names, " ") != "model effort sub-task status" {
		t.Errorf("the served card lists %v", names)
	}
	task, reply := ask("hello", "")
	equal(t, reply, "echo: hello", "a plain message reaches the agent")
	_, reply = ask("/status", task.ID)
	equal(t, reply, "Task "+string(task.ID)+" · \nState: INPUT_REQUIRED\nModel: gpt-x (default)\nEffort: provider default\nPlan: none\nSub-tasks: none", "/status from the sidecar")
	_, reply = ask("/model gpt-x-mini", task.ID)
	equal(t, reply, "refused: a watcher may not change the task with /model", "anonymous callers are watchers")

	first.stop(t)
	_, reply = ask("/status", task.ID)
	equal(t, reply, "/status failed: commands are unavailable right now", "the fallback while the sidecar is down")
	_, reply = ask("still there?", task.ID)
	equal(t, reply, "echo: still there?", "plain messages while it is down")

	second := startSidecar(t, first.dataDir, first.address)
	// The sidecar is serving; the gateway's own channel comes back on its reconnect
	// backoff (at most 2 s), which only asking the gateway can show.
	probe, err := NewClient("http://" + second.address)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := probe.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		if _, reply = ask("/model", task.ID); reply == "Model: gpt-x (default)\nSelectable: gpt-x, gpt-x-mini" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("commands did not come back after the restart: %q", reply)
		}
	}
}
