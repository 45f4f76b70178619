// Package echoagent is the agent the kit's tests and benchmark wrap: it answers every
// message with "echo: <text>" and leaves the task input-required, as
// docs/vectors/lifecycle.json's agent does.
package echoagent

import (
	"context"
	"iter"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Agent is the echo agent; it remembers the messages that reached it.
type Agent struct {
	mu       sync.Mutex
	seen     []string
	messages []*a2a.Message
}

var _ a2asrv.AgentExecutor = (*Agent)(nil)

// Execute echoes the message's first text part (creating the task first when it is new).
func (e *Agent) Execute(_ context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	var text string
	if parts := execCtx.Message.Parts; len(parts) > 0 {
		text = parts[0].Text()
	}
	e.mu.Lock()
	e.seen = append(e.seen, text)
	e.messages = append(e.messages, execCtx.Message)
	e.mu.Unlock()
	return func(yield func(a2a.Event, error) bool) {
		if execCtx.StoredTask == nil && !yield(a2a.NewSubmittedTask(execCtx, execCtx.Message), nil) {
			return
		}
		reply := a2a.NewMessageForTask(a2a.MessageRoleAgent, execCtx, a2a.NewTextPart("echo: "+text))
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateInputRequired, reply), nil)
	}
}

// Cancel cancels the task.
func (e *Agent) Cancel(_ context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCanceled, nil), nil)
	}
}

// Last is the last message that reached the agent (nil before any).
func (e *Agent) Last() *a2a.Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.messages) == 0 {
		return nil
	}
	return e.messages[len(e.messages)-1]
}

// Seen is the texts that reached the agent, in order.
func (e *Agent) Seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}
