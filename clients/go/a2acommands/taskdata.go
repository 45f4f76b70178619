package a2acommands

import (
	"context"
	"errors"
	"maps"
	"math"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	pb "github.com/a2a-commands/a2a-commands/clients/go/internal/commandspb"
)

// TaskDataKey is the key of Task.Metadata under which the kit keeps a task's data.
const TaskDataKey = "a2a-commands"

// SubState says what an input-required task waits for.
type SubState string

// The sub-states a task's data may hold.
const (
	// SubStateAwaitingNextMessage: the task waits for the user's next message (a task
	// a command created; the next plain message ends it).
	SubStateAwaitingNextMessage SubState = "awaiting-next-message"
	// SubStateAwaitingAnswer: the agent asked a question (the agent's to set and clear).
	SubStateAwaitingAnswer SubState = "awaiting-answer"
)

var subStates = map[SubState]pb.SubState{
	SubStateAwaitingNextMessage: pb.SubState_SUB_STATE_AWAITING_NEXT_MESSAGE,
	SubStateAwaitingAnswer:      pb.SubState_SUB_STATE_AWAITING_ANSWER,
}

// Plan is how far a task's plan has got.
type Plan struct {
	StepsDone  uint32
	StepsTotal uint32
}

// TaskData is the kit's data of one task, kept in Task.Metadata["a2a-commands"]
// (docs/kit-contract.md, section 3): an A2A Task has no name, settings, plan or
// sub-tasks, which /status, /model, /effort and /sub-task need, so the SDK's task store
// is the only store. A nil pointer is a key with no value, left out when written.
type TaskData struct {
	Name     *string
	Model    *string
	Effort   *string
	Plan     *Plan
	SubState SubState // empty: none
	SubTasks []a2a.TaskID
	ParentID *string
	Goal     *string
	// Other holds the keys the kit does not know, written back as they were.
	Other map[string]any
}

// The keys the kit reads and writes, each with the spelling earlier kits wrote.
var knownKeys = map[string]bool{
	"name": true, "settings": true, "plan": true, "subState": true, "sub_state": true,
	"subTasks": true, "sub_tasks": true, "parentId": true, "parent": true, "goal": true,
}

// ReadTaskData reads the data of task; empty when it has none (or task is nil). What does
// not fit the contract is ignored, never an error: a client can write task metadata.
func ReadTaskData(task *a2a.Task) TaskData {
	if task == nil {
		return TaskData{}
	}
	return TaskDataFromValue(task.Metadata[TaskDataKey])
}

// TaskDataFromValue reads the JSON value stored under [TaskDataKey].
func TaskDataFromValue(value any) TaskData {
	raw, ok := value.(map[string]any)
	if !ok {
		return TaskData{}
	}
	data := TaskData{
		Name:     text(raw["name"]),
		ParentID: text(either(raw, "parentId", "parent")),
		Goal:     text(raw["goal"]),
	}
	if settings, ok := raw["settings"].(map[string]any); ok {
		data.Model, data.Effort = text(settings["model"]), text(settings["effort"])
	}
	if plan, ok := raw["plan"].(map[string]any); ok {
		data.Plan = &Plan{count(either(plan, "stepsDone", "steps_done")), count(either(plan, "stepsTotal", "steps_total"))}
	}
	if state, ok := either(raw, "subState", "sub_state").(string); ok {
		if _, known := subStates[SubState(state)]; known {
			data.SubState = SubState(state)
		}
	}
	if items, ok := either(raw, "subTasks", "sub_tasks").([]any); ok {
		for _, item := range items {
			if id, ok := item.(string); ok {
				data.SubTasks = append(data.SubTasks, a2a.TaskID(id))
			}
		}
	}
	for key, value := range raw {
		if !knownKeys[key] {
			if data.Other == nil {
				data.Other = map[string]any{}
			}
			data.Other[key] = value
		}
	}
	return data
}

// Value is the JSON object stored under [TaskDataKey]: camelCase only, keys with no
// value left out, unknown keys kept.
func (d TaskData) Value() map[string]any {
	value := maps.Clone(d.Other)
	if value == nil {
		value = map[string]any{}
	}
	put := func(key string, v *string) {
		if v != nil {
			value[key] = *v
		} else {
			delete(value, key)
		}
	}
	put("name", d.Name)
	put("parentId", d.ParentID)
	put("goal", d.Goal)
	settings := map[string]any{}
	if d.Model != nil {
		settings["model"] = *d.Model
	}
	if d.Effort != nil {
		settings["effort"] = *d.Effort
	}
	if len(settings) > 0 {
		value["settings"] = settings
	}
	if d.Plan != nil {
		value["plan"] = map[string]any{"stepsDone": d.Plan.StepsDone, "stepsTotal": d.Plan.StepsTotal}
	}
	if d.SubState != "" {
		value["subState"] = string(d.SubState)
	}
	if len(d.SubTasks) > 0 {
		ids := make([]any, len(d.SubTasks))
		for i, id := range d.SubTasks {
			ids[i] = string(id)
		}
		value["subTasks"] = ids
	}
	return value
}

// Metadata is {"a2a-commands": d.Value()}: event (or task) metadata that stores this
// data. a2a-go's task manager copies an event's metadata into the stored task key by
// key, so a status update carrying it updates the data with that event.
func (d TaskData) Metadata() map[string]any {
	return map[string]any{TaskDataKey: d.Value()}
}

// WithChanges is this data with Execute's changes applied (a new sub-task's id appended).
func (d TaskData) WithChanges(changes Changes) TaskData {
	changed := d
	changed.SubTasks = append([]a2a.TaskID(nil), d.SubTasks...)
	changed.Other = maps.Clone(d.Other)
	if changes.Model != nil {
		changed.Model = changes.Model
	}
	if changes.Effort != nil {
		changed.Effort = changes.Effort
	}
	if changes.SubTask != nil {
		changed.SubTasks = append(changed.SubTasks, changes.SubTask.ID)
	}
	return changed
}

// SubTaskState is a sub-task's id and its current state.
type SubTaskState struct {
	ID    a2a.TaskID
	State a2a.TaskState
}

// TaskSnapshot is what Execute and Complete are told of a task (section 3's table).
type TaskSnapshot struct {
	ID        a2a.TaskID
	ContextID string
	Name      string
	// State is the task's; unspecified counts as submitted.
	State a2a.TaskState
	// SubState is sent only while the task is input-required.
	SubState SubState
	Model    *string
	Effort   *string
	Plan     *Plan
	SubTasks []SubTaskState
}

// NewTaskSnapshot is the snapshot of task under the kit's convention. states holds the
// current state of each sub-task found (see [SubTaskStates]); a sub-task missing from it
// counts as submitted.
func NewTaskSnapshot(task *a2a.Task, states map[a2a.TaskID]a2a.TaskState) TaskSnapshot {
	data := ReadTaskData(task)
	snapshot := TaskSnapshot{
		ID: task.ID, ContextID: task.ContextID, State: submittedIfUnspecified(task.Status.State),
		Model: data.Model, Effort: data.Effort, Plan: data.Plan,
	}
	if data.Name != nil {
		snapshot.Name = *data.Name
	}
	if snapshot.State == a2a.TaskStateInputRequired {
		snapshot.SubState = data.SubState
	}
	for _, id := range data.SubTasks {
		snapshot.SubTasks = append(snapshot.SubTasks, SubTaskState{ID: id, State: submittedIfUnspecified(states[id])})
	}
	return snapshot
}

func (s TaskSnapshot) proto() *pb.TaskSnapshot {
	snapshot := &pb.TaskSnapshot{
		Id: string(s.ID), ContextId: s.ContextID, Name: s.Name, State: stateToProto(s.State),
		SubState: subStates[s.SubState], Settings: &pb.TaskSettings{Model: s.Model, Effort: s.Effort},
	}
	if s.Plan != nil {
		snapshot.Plan = &pb.PlanProgress{StepsDone: s.Plan.StepsDone, StepsTotal: s.Plan.StepsTotal}
	}
	for _, sub := range s.SubTasks {
		snapshot.SubTasks = append(snapshot.SubTasks, &pb.SubTaskSnapshot{Id: string(sub.ID), State: stateToProto(sub.State)})
	}
	return snapshot
}

// SubTaskStates reads the current state of each of task's sub-tasks from store (under
// the caller's scope, as ctx carries it); one not found is left out.
func SubTaskStates(ctx context.Context, task *a2a.Task, store taskstore.Store) (map[a2a.TaskID]a2a.TaskState, error) {
	states := map[a2a.TaskID]a2a.TaskState{}
	for _, id := range ReadTaskData(task).SubTasks {
		stored, err := store.Get(ctx, id)
		if errors.Is(err, a2a.ErrTaskNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if stored != nil && stored.Task != nil {
			states[id] = stored.Task.Status.State
		}
	}
	return states, nil
}

// NewSubTask is the Task a /sub-task creates: submitted, in the parent's context, its
// goal as its one history message, its data naming its parent.
func NewSubTask(parent *a2a.Task, sub SubTaskToCreate) *a2a.Task {
	goal := &a2a.Message{
		ID: string(sub.ID) + ":goal", ContextID: parent.ContextID, TaskID: sub.ID, Role: a2a.MessageRoleUser,
		Parts: a2a.ContentParts{a2a.NewTextPart(sub.Goal)}, ReferenceTasks: []a2a.TaskID{parent.ID},
	}
	parentID := string(parent.ID)
	data := TaskData{Name: &sub.Name, Goal: &sub.Goal, ParentID: &parentID}
	now := time.Now().UTC()
	return &a2a.Task{
		ID: sub.ID, ContextID: parent.ContextID, History: []*a2a.Message{goal}, Metadata: data.Metadata(),
		Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: &now},
	}
}

// stateToProto is an a2a-go state as ours (the same names), unspecified as submitted.
func stateToProto(state a2a.TaskState) pb.TaskState {
	if value, ok := pb.TaskState_value[string(state)]; ok && value != 0 {
		return pb.TaskState(value)
	}
	return pb.TaskState_TASK_STATE_SUBMITTED
}

func submittedIfUnspecified(state a2a.TaskState) a2a.TaskState {
	if _, ok := pb.TaskState_value[string(state)]; !ok || state == a2a.TaskStateUnspecified || state == "TASK_STATE_UNSPECIFIED" {
		return a2a.TaskStateSubmitted
	}
	return state
}

// either is raw[key], else the old spelling's value.
func either(raw map[string]any, key, oldKey string) any {
	if value, ok := raw[key]; ok {
		return value
	}
	return raw[oldKey]
}

func text(value any) *string {
	if s, ok := value.(string); ok {
		return &s
	}
	return nil
}

// count is a step count: a number's integer part in 0..2^32-1; anything else is 0.
func count(value any) uint32 {
	var number float64
	switch v := value.(type) {
	case float64:
		number = v
	case float32:
		number = float64(v)
	case int:
		number = float64(v)
	case int64:
		number = float64(v)
	case int32:
		number = float64(v)
	case uint32:
		return v
	case uint64:
		number = float64(v)
	default:
		return 0
	}
	if math.IsNaN(number) || math.IsInf(number, 0) {
		return 0
	}
	return uint32(math.Min(math.Max(math.Trunc(number), 0), math.MaxUint32))
}
