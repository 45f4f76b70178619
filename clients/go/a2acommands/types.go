package a2acommands

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	pb "github.com/a2a-commands/a2a-commands/clients/go/internal/commandspb"
)

// Role is a sender's role on a task: what the role rules and a command's allowed roles
// judge (A2A has no participants, so the gateway says who is who).
type Role int32

// The roles, as a2a.commands.v1.ParticipantRole numbers them.
const (
	RoleUnspecified Role = Role(pb.ParticipantRole_PARTICIPANT_ROLE_UNSPECIFIED)
	RoleAssignee    Role = Role(pb.ParticipantRole_PARTICIPANT_ROLE_ASSIGNEE)
	RoleReporter    Role = Role(pb.ParticipantRole_PARTICIPANT_ROLE_REPORTER)
	RoleWatcher     Role = Role(pb.ParticipantRole_PARTICIPANT_ROLE_WATCHER)
	RoleAdmin       Role = Role(pb.ParticipantRole_PARTICIPANT_ROLE_ADMIN)
	RoleNone        Role = Role(pb.ParticipantRole_PARTICIPANT_ROLE_NONE)
)

var roleNames = map[Role]string{
	RoleUnspecified: "unspecified", RoleAssignee: "assignee", RoleReporter: "reporter",
	RoleWatcher: "watcher", RoleAdmin: "admin", RoleNone: "none",
}

// String is the role's name as replies spell it (assignee, watcher, ...).
func (r Role) String() string {
	if name, ok := roleNames[r]; ok {
		return name
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// Sender is who sent a message: an id the gateway chooses and a role.
type Sender struct {
	ID   string
	Role Role
}

func (s Sender) proto() *pb.Sender {
	return &pb.Sender{Id: s.ID, Role: pb.ParticipantRole(s.Role)}
}

// Command is a command as the agent card shows it: /<Name> <ArgumentHint>, Description.
type Command struct {
	Name         string
	Description  string
	ArgumentHint string
}

// HandlerProtocol is what a handler's endpoint speaks.
type HandlerProtocol int

// The protocols a handler may speak.
const (
	// HandlerGRPC is the CommandHandler gRPC service (an http:// or https:// base URL).
	HandlerGRPC HandlerProtocol = iota
	// HandlerJSONRPC is JSON-RPC 2.0 POSTs of command.invoked.in, as the reference
	// harness posts them.
	HandlerJSONRPC
	// HandlerMCP is an MCP server (streamable HTTP) with the tool hooks.command.invoked.in.
	HandlerMCP
)

// Handler is where a command's body runs.
type Handler struct {
	// URL is the endpoint.
	URL string
	// Protocol is what it speaks (default gRPC).
	Protocol HandlerProtocol
	// Timeout is how long Execute waits for it; 0: the sidecar's default (5 s).
	Timeout time.Duration
	// Headers maps a header name to the file, under the sidecar's
	// --handler-secrets-dir, that holds its value (read at each call, never listed).
	Headers map[string]string
}

func (h Handler) proto() *pb.HandlerBinding {
	binding := &pb.HandlerBinding{TimeoutMs: uint32(h.Timeout / time.Millisecond)}
	switch h.Protocol {
	case HandlerJSONRPC:
		binding.Endpoint = &pb.HandlerBinding_JsonRpc{JsonRpc: h.URL}
	case HandlerMCP:
		binding.Endpoint = &pb.HandlerBinding_Mcp{Mcp: h.URL}
	default:
		binding.Endpoint = &pb.HandlerBinding_Grpc{Grpc: h.URL}
	}
	for _, name := range slices.Sorted(maps.Keys(h.Headers)) {
		binding.Headers = append(binding.Headers, &pb.HandlerHeader{Name: name, ValueFile: h.Headers[name]})
	}
	return binding
}

func handlerFromProto(binding *pb.HandlerBinding) *Handler {
	if binding == nil || binding.Endpoint == nil {
		return nil
	}
	handler := &Handler{Timeout: time.Duration(binding.TimeoutMs) * time.Millisecond}
	switch endpoint := binding.Endpoint.(type) {
	case *pb.HandlerBinding_Grpc:
		handler.URL, handler.Protocol = endpoint.Grpc, HandlerGRPC
	case *pb.HandlerBinding_JsonRpc:
		handler.URL, handler.Protocol = endpoint.JsonRpc, HandlerJSONRPC
	case *pb.HandlerBinding_Mcp:
		handler.URL, handler.Protocol = endpoint.Mcp, HandlerMCP
	}
	if len(binding.Headers) > 0 {
		handler.Headers = make(map[string]string, len(binding.Headers))
		for _, header := range binding.Headers {
			handler.Headers[header.Name] = header.ValueFile
		}
	}
	return handler
}

// Body is what runs a registered command.
type Body int

// The bodies a command may have.
const (
	BodyUnspecified Body = Body(pb.CommandBody_COMMAND_BODY_UNSPECIFIED)
	// BodyBuiltin is one of the sidecar's built-ins (model, effort, sub-task, status).
	BodyBuiltin Body = Body(pb.CommandBody_COMMAND_BODY_BUILTIN)
	// BodyNone answers "command /<name> has no handler".
	BodyNone Body = Body(pb.CommandBody_COMMAND_BODY_NONE)
	// BodyHandler calls the command's Handler.
	BodyHandler Body = Body(pb.CommandBody_COMMAND_BODY_HANDLER)
	// BodyPrompt expands the command's Prompt for the model.
	BodyPrompt Body = Body(pb.CommandBody_COMMAND_BODY_PROMPT)
)

// McpPrompt is a prompt command's prompt from an MCP server (prompts/get at each
// Execute).
type McpPrompt struct {
	// URL is the MCP server (streamable HTTP).
	URL string
	// Name is the prompt's name there.
	Name string
	// Timeout is how long Execute waits for it; 0: the sidecar's default (5 s).
	Timeout time.Duration
}

// Prompt is a prompt command's body: a Template ($ARGUMENTS, $1..$9, {{args}}), or an
// MCP server's prompt. Exactly one is set.
type Prompt struct {
	Template string
	MCP      *McpPrompt
}

func (p Prompt) proto() *pb.PromptBinding {
	if p.MCP != nil {
		return &pb.PromptBinding{Source: &pb.PromptBinding_Mcp{Mcp: &pb.McpPrompt{
			Url: p.MCP.URL, Name: p.MCP.Name, TimeoutMs: uint32(p.MCP.Timeout / time.Millisecond),
		}}}
	}
	return &pb.PromptBinding{Source: &pb.PromptBinding_Template{Template: p.Template}}
}

func promptFromProto(binding *pb.PromptBinding) *Prompt {
	switch source := binding.GetSource().(type) {
	case *pb.PromptBinding_Template:
		return &Prompt{Template: source.Template}
	case *pb.PromptBinding_Mcp:
		return &Prompt{MCP: &McpPrompt{
			URL: source.Mcp.Url, Name: source.Mcp.Name, Timeout: time.Duration(source.Mcp.TimeoutMs) * time.Millisecond,
		}}
	}
	return nil
}

// Source is who put a command in the registry.
type Source int

// The sources of a registered command.
const (
	SourceUnspecified Source = Source(pb.CommandSource_COMMAND_SOURCE_UNSPECIFIED)
	SourceAPI         Source = Source(pb.CommandSource_COMMAND_SOURCE_API)
	SourceBuiltin     Source = Source(pb.CommandSource_COMMAND_SOURCE_BUILTIN)
	SourceFile        Source = Source(pb.CommandSource_COMMAND_SOURCE_FILE)
)

// RegisteredCommand is one command of the registry, as ListSpecs shows it.
type RegisteredCommand struct {
	Command
	Body         Body
	Handler      *Handler
	Prompt       *Prompt
	Source       Source
	AllowedRoles []Role
	Hidden       bool
}

// Registry is the registry at one revision: the commands in order, and the card entry
// rendered from them.
type Registry struct {
	Commands []RegisteredCommand
	Revision uint64
	// CardExtension is the agent card's extension entry (URI, params listing the
	// commands that are not hidden, in order).
	CardExtension *a2a.AgentExtension
}

func registryFromProto(response *pb.ListSpecsResponse) (*Registry, error) {
	registry := &Registry{Revision: response.Revision}
	for _, command := range response.Commands {
		spec := command.GetSpec()
		roles := make([]Role, 0, len(command.AllowedRoles))
		for _, role := range command.AllowedRoles {
			roles = append(roles, Role(role))
		}
		registry.Commands = append(registry.Commands, RegisteredCommand{
			Command:      Command{Name: spec.GetName(), Description: spec.GetDescription(), ArgumentHint: spec.GetArgumentHint()},
			Body:         Body(command.Body),
			Handler:      handlerFromProto(command.Handler),
			Prompt:       promptFromProto(command.Prompt),
			Source:       Source(command.Source),
			AllowedRoles: roles,
			Hidden:       command.Hidden,
		})
	}
	if response.CardExtensionJson != "" {
		extension, err := extensionFromJSON(response.CardExtensionJson)
		if err != nil {
			return nil, err
		}
		registry.CardExtension = extension
	}
	return registry, nil
}

// RegisterOutcome is what a Register did.
type RegisterOutcome int

// The outcomes of Register.
const (
	RegisterUnspecified RegisterOutcome = RegisterOutcome(pb.RegisterOutcome_REGISTER_OUTCOME_UNSPECIFIED)
	RegisterCreated     RegisterOutcome = RegisterOutcome(pb.RegisterOutcome_REGISTER_OUTCOME_CREATED)
	RegisterReplaced    RegisterOutcome = RegisterOutcome(pb.RegisterOutcome_REGISTER_OUTCOME_REPLACED)
	RegisterUnchanged   RegisterOutcome = RegisterOutcome(pb.RegisterOutcome_REGISTER_OUTCOME_UNCHANGED)
)

// Registered is Register's answer: what it did, and the registry's revision after it.
type Registered struct {
	Outcome  RegisterOutcome
	Revision uint64
}

// OrdinaryReason says why a message is not a command.
type OrdinaryReason int

// The reasons a message is ordinary.
const (
	OrdinaryUnspecified       OrdinaryReason = OrdinaryReason(pb.OrdinaryReason_ORDINARY_REASON_UNSPECIFIED)
	OrdinaryNotSingleTextPart OrdinaryReason = OrdinaryReason(pb.OrdinaryReason_ORDINARY_REASON_NOT_SINGLE_TEXT_PART)
	OrdinaryNotCommandSyntax  OrdinaryReason = OrdinaryReason(pb.OrdinaryReason_ORDINARY_REASON_NOT_COMMAND_SYNTAX)
	OrdinaryNotRegistered     OrdinaryReason = OrdinaryReason(pb.OrdinaryReason_ORDINARY_REASON_NOT_REGISTERED)
)

// Classification is Classify's answer. For a command, Command names it and Arguments
// holds the rest of the text; otherwise Command is empty and Reason says why (with Name,
// for an unregistered /<name>).
type Classification struct {
	Command   string
	Arguments string
	Reason    OrdinaryReason
	Name      string
	Revision  uint64
}

// IsCommand reports whether the message is a registered command.
func (c Classification) IsCommand() bool { return c.Command != "" }

// Outcome is how a command ended.
type Outcome int

// The outcomes of a command.
const (
	OutcomeUnspecified Outcome = Outcome(pb.Outcome_OUTCOME_UNSPECIFIED)
	OutcomeOK          Outcome = Outcome(pb.Outcome_OUTCOME_OK)
	OutcomeRefused     Outcome = Outcome(pb.Outcome_OUTCOME_REFUSED)
	OutcomeFailed      Outcome = Outcome(pb.Outcome_OUTCOME_FAILED)
	OutcomeNoHandler   Outcome = Outcome(pb.Outcome_OUTCOME_NO_HANDLER)
)

// SubTaskToCreate is a sub-task a command asks for (/sub-task, or a handler's spawn).
type SubTaskToCreate struct {
	ID   a2a.TaskID
	Name string
	Goal string
}

// Changes are what an OK command changes: settings that are set replace the task's,
// and a sub-task is created.
type Changes struct {
	Model   *string
	Effort  *string
	SubTask *SubTaskToCreate
}

func (c Changes) empty() bool { return c.Model == nil && c.Effort == nil && c.SubTask == nil }

func changesFromProto(changes *pb.Changes) Changes {
	var out Changes
	if settings := changes.GetSettings(); settings != nil {
		out.Model, out.Effort = settings.Model, settings.Effort
	}
	if sub := changes.GetSubTask(); sub != nil {
		out.SubTask = &SubTaskToCreate{ID: a2a.TaskID(sub.Id), Name: sub.Name, Goal: sub.Goal}
	}
	return out
}

// CommandReply is Execute's answer for a command: its outcome, the reply text, the
// status update to emit, and what it changes (only when Outcome is OutcomeOK).
type CommandReply struct {
	Command   string
	Arguments string
	Outcome   Outcome
	Reply     string
	// Event is the reply as the status update to emit: the task's state unchanged, the
	// reply message carrying {"command": name} (and "task_ref" for a sub-task).
	Event    *a2a.TaskStatusUpdateEvent
	Changes  Changes
	Revision uint64
}

// PromptExpansion is Execute's answer for a prompt command: the text to send to the
// model in place of the message's text.
type PromptExpansion struct {
	Command   string
	Arguments string
	Text      string
}

// Executed is Execute's answer: Reply for a command, Prompt for a prompt command,
// neither for an ordinary message (it goes to the agent as it is).
type Executed struct {
	Reply    *CommandReply
	Prompt   *PromptExpansion
	Revision uint64
}

// Completion is one suggestion: the Value completed, the whole Text with it applied,
// and a Description.
type Completion struct {
	Value       string
	Text        string
	Description string
}

// Completions is Complete's answer, MCP completion/complete's shape: at most the limit
// of Values, the Total known, whether there are more, and the Command whose argument was
// completed (empty for command names).
type Completions struct {
	Values   []Completion
	Total    uint32
	HasMore  bool
	Command  string
	Revision uint64
}
