package a2acommands

// Real parts for the tests: the a2a-commands binary, and an a2a-go JSON-RPC gateway
// wrapping an echo agent with the kit, driven by a2a-go's own client.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2a-commands/a2a-commands/clients/go/internal/echoagent"
)

// repoRoot is the checkout's root (docs/vectors, target/).
func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// vectors reads docs/vectors/<name>.json, shared with the other kits and the Rust tests.
func vectors(t testing.TB, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "vectors", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// nextPort is where freeAddress looks next, a start that differs by process.
var nextPort = struct {
	sync.Mutex
	n int
}{n: os.Getpid() * 97}

// freeAddress is a free 127.0.0.1 address for a sidecar started there later or again,
// its port below the kernel's ephemeral range: the kernel hands out no port there by
// itself, so no outgoing connection (a gateway retrying the stopped sidecar) or port-0
// listener takes it in between.
func freeAddress(t testing.TB) string {
	t.Helper()
	ephemeralLow := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if fields := strings.Fields(string(raw)); len(fields) > 0 {
			if n, err := strconv.Atoi(fields[0]); err == nil {
				ephemeralLow = n
			}
		}
	}
	const low = 10000
	span := 0
	if ephemeralLow > low+1000 {
		span = ephemeralLow - low
	} else {
		t.Logf("*** the ephemeral port range starts at %d: ports are the kernel's choice ***", ephemeralLow)
	}
	for tries := 0; tries < max(span, 1); tries++ {
		port := 0
		if span > 0 {
			nextPort.Lock()
			port = low + nextPort.n%span
			nextPort.n++
			nextPort.Unlock()
		}
		listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		address := listener.Addr().String()
		_ = listener.Close()
		return address
	}
	t.Fatalf("no free port below %d", ephemeralLow)
	return ""
}

// sidecar is a running `a2a-commands serve`.
type sidecar struct {
	address string
	dataDir string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// startSidecar starts the real binary (A2A_COMMANDS_BIN, else target/debug/a2a-commands)
// on listen (empty: 127.0.0.1:0; a sidecar that will be started again takes
// freeAddress) and waits for its JSON "serving" line, which carries the bound address.
// It is stopped when the test ends.
func startSidecar(t testing.TB, dataDir, listen string, args ...string) *sidecar {
	t.Helper()
	binary := os.Getenv("A2A_COMMANDS_BIN")
	if binary == "" {
		binary = filepath.Join(repoRoot(t), "target", "debug", "a2a-commands")
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("%s is missing: build it or set A2A_COMMANDS_BIN", binary)
	}
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	cmd := exec.Command(binary, append([]string{"serve", "--listen", listen, "--health-listen", "off", "--log-format", "json", "--data-dir", dataDir}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &sidecar{dataDir: dataDir, cmd: cmd, exited: make(chan struct{})}
	found := make(chan string, 1)
	var seen []string
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			seen = append(seen, lines.Text())
			var event struct{ Message, Addr string }
			if json.Unmarshal(lines.Bytes(), &event) == nil && event.Message == "serving" && event.Addr != "" {
				found <- event.Addr
			}
		}
		_ = cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.address = <-found:
	case <-s.exited:
		t.Fatalf("a2a-commands exited before serving:\n%s", strings.Join(seen, "\n"))
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// sidecarClient starts a sidecar and a kit client of it, closed when the test ends.
func sidecarClient(t testing.TB) *Client {
	t.Helper()
	sidecar := startSidecar(t, "", "")
	client, err := NewClient("http://" + sidecar.address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// pause sends SIGSTOP and waits until every thread has stopped (Linux's /proc says T
// for each): kill(2) queues the signal, and each thread stops as it next runs. SIGCONT
// is sent when the test ends.
func (s *sidecar) pause(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Signal(syscall.SIGCONT) })
	tasks := fmt.Sprintf("/proc/%d/task", s.cmd.Process.Pid)
	allStopped := func() bool {
		entries, _ := os.ReadDir(tasks)
		for _, entry := range entries {
			stat, err := os.ReadFile(filepath.Join(tasks, entry.Name(), "stat"))
			if err != nil {
				continue // the thread is gone
			}
			_, after, found := strings.Cut(string(stat), ") ")
			if found && !strings.HasPrefix(after, "T") {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second) // a bound against a hang
	for !allStopped() {
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar (pid %d) did not stop", s.cmd.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the exit, which must be clean.
func (s *sidecar) stop(t testing.TB) {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.exited
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("a2a-commands exited with %d", code)
	}
}

// roleFromHeader is the sender's role from the x-role header, else the assignee: a
// stand-in for the gateway's own participants.
func roleFromHeader(_ context.Context, execCtx *a2asrv.ExecutorContext) (Role, error) {
	if execCtx.ServiceParams != nil {
		if values, ok := execCtx.ServiceParams.Get("x-role"); ok && len(values) > 0 {
			for role, name := range roleNames {
				if name == values[0] {
					return role, nil
				}
			}
		}
	}
	return RoleAssignee, nil
}

// gateway is a running a2a-go gateway and the SDK client driving it.
type gateway struct {
	url      string
	store    *taskstore.InMemory
	echo     *echoagent.Agent
	card     *Card
	commands *Client
	client   *a2aclient.Client
	logs     *logBuffer
}

// logBuffer keeps what the kit logged, for tests that check a failure is reported.
type logBuffer struct {
	mu    sync.Mutex
	lines strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lines.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lines.String()
}

// startGateway serves an a2a-go JSON-RPC gateway on 127.0.0.1:0 wrapping echoAgent with
// the kit, with the card handler and completion, as the README's gateway does.
func startGateway(t testing.TB, sidecarAddress string, options ...ExecutorOption) *gateway {
	t.Helper()
	commands, err := NewClient("http://"+sidecarAddress, WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	store := taskstore.NewInMemory(nil)
	echo := &echoagent.Agent{}
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	executor := NewExecutor(echo, commands, store, append([]ExecutorOption{WithRole(roleFromHeader), WithLogger(logger)}, options...)...)
	card := NewCard(commands, WithCardLogger(logger))
	ctx, cancel := context.WithCancel(context.Background())
	go card.Run(ctx)
	base := &a2a.AgentCard{
		Name: "Echo", Description: "Echoes what it is told", Version: "1.0.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
	}
	mux := http.NewServeMux()
	server := httptest.NewServer(mux)
	base.SupportedInterfaces = []*a2a.AgentInterface{a2a.NewAgentInterface(server.URL, a2a.TransportProtocolJSONRPC)}
	handler := a2asrv.NewHandler(executor, a2asrv.WithTaskStore(store))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(card.Producer(base)))
	mux.Handle("/", CompletionHandler(a2asrv.NewJSONRPCHandler(handler), executor, nil))
	client, err := a2aclient.NewFromCard(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = client.Destroy()
		server.Close()
		_ = commands.Close()
	})
	return &gateway{url: server.URL, store: store, echo: echo, card: card, commands: commands, client: client, logs: logs}
}

// turn is what one send produced, the same for streaming and non-streaming sends.
type turn struct {
	taskID a2a.TaskID
	state  a2a.TaskState
	reply  *a2a.Message
	text   string
	kinds  []string
	stored *a2a.Task
}

// send sends text (on taskID, or to a new task) through the SDK's client.
func (g *gateway) send(t testing.TB, text string, taskID a2a.TaskID, stream bool) turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	message := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	message.TaskID = taskID
	request := &a2a.SendMessageRequest{Message: message}
	var out turn
	var status *a2a.TaskStatus
	if stream {
		for event, err := range g.client.SendStreamingMessage(ctx, request) {
			if err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			switch e := event.(type) {
			case *a2a.Task:
				out.kinds, out.taskID, status = append(out.kinds, "task"), e.ID, &e.Status
			case *a2a.TaskStatusUpdateEvent:
				out.kinds, out.taskID, status = append(out.kinds, "statusUpdate"), e.TaskID, &e.Status
			default:
				out.kinds = append(out.kinds, fmt.Sprintf("%T", e))
			}
		}
	} else {
		result, err := g.client.SendMessage(ctx, request)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		task, ok := result.(*a2a.Task)
		if !ok {
			t.Fatalf("%s: expected a Task, got %T", text, result)
		}
		out.kinds, out.taskID, status = []string{"task"}, task.ID, &task.Status
	}
	if status == nil || status.Message == nil {
		t.Fatalf("%s: no reply message", text)
	}
	out.state, out.reply = status.State, status.Message
	out.text, _ = singleText(status.Message)
	stored, err := g.client.GetTask(ctx, &a2a.GetTaskRequest{ID: out.taskID})
	if err != nil {
		t.Fatalf("%s: tasks/get: %v", text, err)
	}
	out.stored = stored
	return out
}

// rpc POSTs one JSON-RPC request to the gateway, as any HTTP client would: the response's
// headers and its body.
func (g *gateway) rpc(t testing.TB, method string, params any, headers map[string]string) (http.Header, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	request, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(string(body)))
	request.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		request.Header.Set(k, v)
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	var answer map[string]any
	if err := json.NewDecoder(response.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	return response.Header, answer
}

// withRole makes the SDK client's calls on ctx send x-role: role.
func withRole(ctx context.Context, role string) context.Context {
	return a2aclient.AttachServiceParams(ctx, a2aclient.ServiceParams{"x-role": {role}})
}
