package a2acommands

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2a-commands/a2a-commands/clients/go/internal/echoagent"
)

// BenchmarkExecuteStatus is the kit's own cost of a /status as a new task's first
// message: the Executor's whole path against the real sidecar, events drained (go test
// -bench ExecuteStatus -cpuprofile cpu.out to see where it goes).
func BenchmarkExecuteStatus(b *testing.B) {
	client := sidecarClient(b)
	executor := NewExecutor(&echoagent.Agent{}, client, taskstore.NewInMemory(nil))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		message := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("/status"))
		execCtx := &a2asrv.ExecutorContext{Message: message, TaskID: a2a.NewTaskID(), ContextID: a2a.NewContextID()}
		for _, err := range executor.Execute(ctx, execCtx) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
