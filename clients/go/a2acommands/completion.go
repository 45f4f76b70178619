package a2acommands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// CompleteMethod is the JSON-RPC method [CompletionHandler] adds to the gateway's A2A
// endpoint.
const CompleteMethod = "commands/complete"

// JSON-RPC error codes, as A2A maps them.
const (
	codeInvalidParams = -32602
	codeInternal      = -32603
	codeTaskNotFound  = -32001
)

// Complete gives completions for text, typed by the caller into task taskID (empty: no
// task). The task is read from the store (a2a.ErrTaskNotFound if it is not there for
// this caller) and sent as for Execute; the sender's role comes from the executor's
// resolver, given an ExecutorContext with the task and no message.
func (e *Executor) Complete(ctx context.Context, user *a2asrv.User, text string, taskID a2a.TaskID, limit uint32) (*Completions, error) {
	execCtx := &a2asrv.ExecutorContext{TaskID: taskID, User: user}
	var snapshot *TaskSnapshot
	if taskID != "" {
		stored, err := e.store.Get(ctx, taskID)
		if err != nil {
			return nil, err
		}
		execCtx.StoredTask, execCtx.ContextID = stored.Task, stored.Task.ContextID
		states, err := SubTaskStates(ctx, stored.Task, e.store)
		if err != nil {
			return nil, err
		}
		built := NewTaskSnapshot(stored.Task, states)
		snapshot = &built
	}
	sender, err := e.sender(ctx, execCtx)
	if err != nil {
		return nil, err
	}
	return e.client.Complete(ctx, text, sender, snapshot, limit)
}

// CompletionHandler is next (the gateway's a2asrv.NewJSONRPCHandler) also answering the
// JSON-RPC method commands/complete, on the same URL; every other request reaches next
// with its body untouched. a2a-go has no way to add a method to its JSON-RPC handler, so
// the kit answers this one in front of it:
//
//	-> {"jsonrpc": "2.0", "id": 1, "method": "commands/complete",
//	    "params": {"text": "/model g", "taskId": "t-1", "limit": 10}}
//	<- {"jsonrpc": "2.0", "id": 1, "result": {"values": [
//	       {"value": "gpt-x", "text": "/model gpt-x", "description": ""}, ...],
//	    "total": 2, "hasMore": false, "command": "model"}}
//
// taskId and limit (0 or absent: 10; the sidecar gives at most 100) are optional. A
// request that lists the extension in A2A-Extensions gets it back, marked activated.
// Errors: -32602 for a bad parameter, -32001 for a task unknown (to this caller), -32603
// when the sidecar fails (logged). user, if not nil, says who the caller is, as the
// gateway's own authentication does for its other methods; nil: anonymous.
func CompletionHandler(next http.Handler, executor *Executor, user func(*http.Request) *a2asrv.User) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		var request struct {
			JSONRPC string          `json:"jsonrpc"`
			Method  string          `json:"method"`
			ID      json.RawMessage `json:"id"`
			Params  json.RawMessage `json:"params"`
		}
		if err != nil || json.Unmarshal(body, &request) != nil || request.JSONRPC != "2.0" || request.Method != CompleteMethod {
			next.ServeHTTP(w, r)
			return
		}
		ctx, callCtx := a2asrv.NewCallContext(r.Context(), a2asrv.NewServiceParams(r.Header))
		if user != nil {
			if u := user(r); u != nil {
				callCtx.User = u
			}
		}
		if slices.Contains(callCtx.Extensions().RequestedURIs(), ExtensionURI) {
			w.Header().Set(a2a.SvcParamExtensions, ExtensionURI) // activated
		}
		answer := completionAnswer(ctx, executor, callCtx.User, request.Params)
		answer["jsonrpc"], answer["id"] = "2.0", request.ID
		if request.ID == nil {
			answer["id"] = nil
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	})
}

// completionAnswer is the result or error member of the JSON-RPC response.
func completionAnswer(ctx context.Context, executor *Executor, user *a2asrv.User, raw json.RawMessage) map[string]any {
	text, taskID, limit, err := completionParams(raw)
	if err != nil {
		return rpcError(codeInvalidParams, err.Error())
	}
	answer, err := executor.Complete(ctx, user, text, taskID, limit)
	switch {
	case errors.Is(err, a2a.ErrTaskNotFound):
		return rpcError(codeTaskNotFound, "task not found")
	case err != nil:
		executor.logger.ErrorContext(ctx, "a2a-commands: Complete failed", "error", err)
		return rpcError(codeInternal, "commands are unavailable right now")
	}
	values := make([]map[string]any, 0, len(answer.Values))
	for _, v := range answer.Values {
		values = append(values, map[string]any{"value": v.Value, "text": v.Text, "description": v.Description})
	}
	return map[string]any{"result": map[string]any{
		"values": values, "total": answer.Total, "hasMore": answer.HasMore, "command": answer.Command,
	}}
}

func rpcError(code int, message string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": message}}
}

// completionParams checks text, taskId and limit (and that tenant, if given, is a string).
func completionParams(raw json.RawMessage) (string, a2a.TaskID, uint32, error) {
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil || params == nil {
		return "", "", 0, errors.New("params: must be an object")
	}
	text, ok := params["text"].(string)
	if !ok {
		return "", "", 0, errors.New("params.text: must be a string")
	}
	var taskID string
	for _, name := range []string{"taskId", "tenant"} {
		value, present := params[name]
		if !present || value == nil {
			continue
		}
		s, ok := value.(string)
		if !ok {
			return "", "", 0, errors.New("params." + name + ": must be a string")
		}
		if name == "taskId" {
			taskID = s
		}
	}
	var limit uint32
	if value, present := params["limit"]; present {
		number, ok := value.(float64)
		if !ok || number < 0 || number > math.MaxUint32 || number != math.Trunc(number) {
			return "", "", 0, errors.New("params.limit: must be a non-negative integer")
		}
		limit = uint32(number)
	}
	return text, a2a.TaskID(taskID), limit, nil
}
