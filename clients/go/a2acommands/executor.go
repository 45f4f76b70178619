package a2acommands

import (
	"context"
	"iter"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// FallbackReply is the reply to a command when the sidecar cannot answer
// (docs/kit-contract.md, section 5); {name} stands for the command's name.
const FallbackReply = "/{name} failed: commands are unavailable right now"

// RoleResolver gives the sender's role on the task a message (or a completion request)
// was sent to.
type RoleResolver func(ctx context.Context, execCtx *a2asrv.ExecutorContext) (Role, error)

// DefaultRole makes an authenticated caller the task's assignee and anyone else a
// watcher: a task store scoped by user (a2asrv.NewTaskStoreAuthenticator) lets an
// authenticated caller reach only the tasks it created, while anonymous callers share
// one scope, so they may read (/status, /model) but change nothing. A gateway whose
// store is not scoped that way, or that trusts anonymous callers, passes its own
// resolver with [WithRole].
func DefaultRole(_ context.Context, execCtx *a2asrv.ExecutorContext) (Role, error) {
	if execCtx.User != nil && execCtx.User.Authenticated {
		return RoleAssignee, nil
	}
	return RoleWatcher, nil
}

// Executor wraps a gateway's a2asrv.AgentExecutor so that slash commands never reach
// its model (docs/kit-contract.md).
//
// A message that cannot be a command ([MayBeCommand]) goes to the wrapped executor at
// once, without a call to the sidecar. Any other goes through Execute: an ordinary one
// reaches the wrapped executor untouched; a command is answered here: its changes are
// applied, then the reply status update is emitted with the task's state unchanged. A
// command that is a task's first message creates the task (the Task is emitted first),
// input-required and awaiting the next message, as the reference harness does; the next
// message that is not a command ends that wait.
//
// A prompt command reaches the wrapped executor with the message's text replaced by its
// expansion ([PromptMessage]); the task then moves as the agent moves it.
//
// When Execute fails (the sidecar is stopped, restarting, unreachable or refuses the
// request), a message with command syntax gets [FallbackReply] and never reaches the
// model; any other reaches the wrapped executor. The error is logged.
type Executor struct {
	agent  a2asrv.AgentExecutor
	client *Client
	store  taskstore.Store
	role   RoleResolver
	logger *slog.Logger
}

var _ a2asrv.AgentExecutor = (*Executor)(nil)

// ExecutorOption configures [NewExecutor].
type ExecutorOption func(*Executor)

// WithRole sets how the sender's role is found (default [DefaultRole]).
func WithRole(role RoleResolver) ExecutorOption {
	return func(e *Executor) { e.role = role }
}

// WithLogger sets where failures are reported (default slog.Default()).
func WithLogger(logger *slog.Logger) ExecutorOption {
	return func(e *Executor) { e.logger = logger }
}

// NewExecutor wraps agent. store is the task store given to a2asrv.NewHandler
// (a2asrv.WithTaskStore): sub-tasks are created in it and their states read from it.
func NewExecutor(agent a2asrv.AgentExecutor, client *Client, store taskstore.Store, options ...ExecutorOption) *Executor {
	executor := &Executor{agent: agent, client: client, store: store, role: DefaultRole, logger: slog.Default()}
	for _, option := range options {
		option(executor)
	}
	return executor
}

// Execute answers a command, or runs the wrapped executor.
func (e *Executor) Execute(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	message := execCtx.Message
	if message == nil || !MayBeCommand(message) {
		return e.toAgent(ctx, execCtx)
	}
	task := execCtx.StoredTask
	var created *a2a.Task
	if task == nil {
		// A new task is parked input-required, awaiting the next message: Execute sees it so.
		created = newTask(execCtx)
		task = parked(created)
	}
	reply, prompt, err := e.commandReply(ctx, execCtx, message, task)
	if err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	if prompt != nil {
		execCtx.Message = PromptMessage(message, prompt)
	}
	if reply == nil {
		return e.toAgent(ctx, execCtx)
	}
	return func(yield func(a2a.Event, error) bool) {
		if created != nil && !yield(created, nil) {
			return
		}
		yield(reply, nil)
	}
}

// Cancel cancels through the wrapped executor.
func (e *Executor) Cancel(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return e.agent.Cancel(ctx, execCtx)
}

// toAgent runs the wrapped executor on a message that is not a command. That message is
// the one a task parked awaiting-next-message waited for: the wait ends before the agent
// runs (section 4). a2a-go's task manager holds the stored task's version from the start
// of the execution and refuses a save in between, so the kit changes the task it holds
// (execCtx.StoredTask, the manager's own): the agent reads the data as it now is, and the
// change is stored with the agent's first event.
func (e *Executor) toAgent(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	if execCtx.Message != nil && execCtx.StoredTask != nil {
		EndWaitForNextMessage(execCtx.StoredTask)
	}
	return e.agent.Execute(ctx, execCtx)
}

// sender is who sent execCtx's request: the SDK user's name and the resolver's role.
func (e *Executor) sender(ctx context.Context, execCtx *a2asrv.ExecutorContext) (Sender, error) {
	role, err := e.role(ctx, execCtx)
	if err != nil {
		return Sender{}, err
	}
	sender := Sender{Role: role}
	if execCtx.User != nil {
		sender.ID = execCtx.User.Name
	}
	return sender, nil
}

// commandReply is the reply event of a command (changes applied), a prompt command's
// expansion, or neither for an ordinary message.
func (e *Executor) commandReply(ctx context.Context, execCtx *a2asrv.ExecutorContext, message *a2a.Message, task *a2a.Task) (*a2a.TaskStatusUpdateEvent, *PromptExpansion, error) {
	sender, err := e.sender(ctx, execCtx)
	if err != nil {
		return nil, nil, err
	}
	states, err := SubTaskStates(ctx, task, e.store)
	if err != nil {
		return nil, nil, err
	}
	// A sidecar that stops answering gives the fallback within seconds; a handler keeps
	// all its time (docs/kit-contract.md, section 5).
	name, _ := CommandName(message)
	executeCtx, cancel := ctx, context.CancelFunc(func() {})
	if deadline := e.client.ExecuteDeadline(name); deadline > 0 {
		executeCtx, cancel = context.WithTimeout(ctx, deadline)
	}
	defer cancel()
	executed, err := e.client.Execute(executeCtx, message, NewTaskSnapshot(task, states), sender, AcceptPrompt())
	if err != nil {
		reply := NewFallbackReply(task, message)
		if reply == nil {
			e.logger.WarnContext(ctx, "a2a-commands: Execute failed, passing the message on", "error", err)
		} else {
			e.logger.ErrorContext(ctx, "a2a-commands: Execute failed, command not run", "command", name, "error", err)
		}
		return reply, nil, nil
	}
	answer := executed.Reply
	if answer == nil {
		return nil, executed.Prompt, nil
	}
	if answer.Outcome == OutcomeOK {
		if err := e.applyChanges(ctx, answer.Changes, task, answer.Event); err != nil {
			return nil, nil, err
		}
	}
	return answer.Event, nil, nil
}

// PromptMessage is message as the agent reads it for a prompt command (section 9): one
// text part, the expansion; its metadata what it had, plus "command" (the command's
// name) and "originalText" (the text as typed).
func PromptMessage(message *a2a.Message, prompt *PromptExpansion) *a2a.Message {
	original, _ := singleText(message)
	changed := *message
	changed.Parts = a2a.ContentParts{a2a.NewTextPart(prompt.Text)}
	changed.Metadata = maps.Clone(message.Metadata)
	if changed.Metadata == nil {
		changed.Metadata = map[string]any{}
	}
	changed.Metadata["command"] = prompt.Command
	changed.Metadata["originalText"] = original
	return &changed
}

// applyChanges applies an OK command's changes: a sub-task is created in the store at
// once; the task's new data goes on the reply event's metadata, which a2a-go's task
// manager copies into the stored task with the event.
func (e *Executor) applyChanges(ctx context.Context, changes Changes, task *a2a.Task, event *a2a.TaskStatusUpdateEvent) error {
	if changes.empty() {
		return nil
	}
	if changes.SubTask != nil {
		if _, err := e.store.Create(ctx, NewSubTask(task, *changes.SubTask)); err != nil {
			return err
		}
	}
	if event.Metadata == nil {
		event.Metadata = map[string]any{}
	}
	maps.Copy(event.Metadata, ReadTaskData(task).WithChanges(changes).Metadata())
	return nil
}

// EndWaitForNextMessage clears task's sub-state awaiting-next-message, in task itself:
// the message it waited for is here (section 4). awaiting-answer is left alone: the
// agent set it, and only the agent knows whether a message answers it. It reports
// whether there was such a wait to end.
func EndWaitForNextMessage(task *a2a.Task) bool {
	data := ReadTaskData(task)
	if data.SubState != SubStateAwaitingNextMessage {
		return false
	}
	data.SubState = ""
	if task.Metadata == nil {
		task.Metadata = map[string]any{}
	}
	task.Metadata[TaskDataKey] = data.Value()
	return true
}

// newTask is the task a command creates as its first message, as first sent: submitted,
// holding it, its data already awaiting the next message. The reply moves it to
// input-required.
func newTask(execCtx *a2asrv.ExecutorContext) *a2a.Task {
	now := time.Now().UTC()
	return &a2a.Task{
		ID: execCtx.TaskID, ContextID: execCtx.ContextID,
		Status:   a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: &now},
		History:  []*a2a.Message{execCtx.Message},
		Metadata: TaskData{SubState: SubStateAwaitingNextMessage}.Metadata(),
	}
}

// parked is task as the reply leaves it: input-required.
func parked(task *a2a.Task) *a2a.Task {
	copied := *task
	copied.Status.State = a2a.TaskStateInputRequired
	return &copied
}

// NewFallbackReply is the reply when the sidecar cannot answer, for a message with
// command syntax; nil for any other message. It is shaped like the sidecar's replies:
// "<message id>:reply", the task's state unchanged, {"command": name} on the message.
func NewFallbackReply(task *a2a.Task, message *a2a.Message) *a2a.TaskStatusUpdateEvent {
	name, ok := CommandName(message)
	if !ok {
		return nil
	}
	reply := &a2a.Message{
		ID: message.ID + ":reply", ContextID: task.ContextID, TaskID: task.ID, Role: a2a.MessageRoleAgent,
		Parts:    a2a.ContentParts{a2a.NewTextPart(strings.ReplaceAll(FallbackReply, "{name}", name))},
		Metadata: map[string]any{"command": name},
	}
	now := time.Now().UTC()
	return &a2a.TaskStatusUpdateEvent{
		TaskID: task.ID, ContextID: task.ContextID,
		Status: a2a.TaskStatus{State: task.Status.State, Message: reply, Timestamp: &now},
	}
}
