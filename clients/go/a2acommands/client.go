package a2acommands

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"iter"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/a2a-commands/a2a-commands/clients/go/internal/commandspb"
)

// DefaultTimeout bounds a unary call whose context has no deadline: longer than the
// sidecar's default --handler-max-timeout-ms (30 s), since Execute may wait for a
// handler. WatchSpecs has none.
const DefaultTimeout = 40 * time.Second

// ExecuteOption configures one [Client.Execute].
type ExecuteOption func(*executeConfig)

type executeConfig struct{ acceptsPrompt bool }

// AcceptPrompt says the caller sends a prompt command's expansion to the agent (the
// executor does): only then does Execute answer a prompt command with its expansion;
// otherwise it answers a failure the caller understands.
func AcceptPrompt() ExecuteOption {
	return func(c *executeConfig) { c.acceptsPrompt = true }
}

// NoHandlerDeadline bounds Execute for a command whose body runs no handler
// (docs/kit-contract.md, section 5): a sidecar that stops answering gives the fallback
// reply within seconds.
const NoHandlerDeadline = 5 * time.Second

// HandlerDeadlineMargin is what Execute's deadline adds to a handler's (or an MCP
// prompt's) own timeout.
const HandlerDeadlineMargin = 5 * time.Second

// ExecuteDeadline is Execute's deadline for the command name, from the registry last seen
// (nil: none yet): [NoHandlerDeadline] for a command whose body runs no handler, a
// handler's or an MCP prompt's timeout plus [HandlerDeadlineMargin], and
// [DefaultTimeout] for a name not seen (or empty). So a sidecar that stops answering
// gives the fallback reply within seconds, while a slow handler still has all its time
// (docs/vectors/deadlines.json).
func ExecuteDeadline(registry *Registry, name string) time.Duration {
	if deadline, ok := knownDeadline(registry, name); ok {
		return deadline
	}
	return DefaultTimeout
}

// knownDeadline is [ExecuteDeadline] where the registry says; false for the default.
func knownDeadline(registry *Registry, name string) (time.Duration, bool) {
	if registry == nil || name == "" {
		return 0, false
	}
	for _, command := range registry.Commands {
		if command.Name != name {
			continue
		}
		var timeout time.Duration
		switch {
		case command.Body == BodyBuiltin || command.Body == BodyNone:
			return NoHandlerDeadline, true
		case command.Body == BodyPrompt && command.Prompt != nil && command.Prompt.MCP == nil:
			return NoHandlerDeadline, true
		case command.Body == BodyHandler && command.Handler != nil:
			timeout = command.Handler.Timeout
		case command.Body == BodyPrompt && command.Prompt != nil:
			timeout = command.Prompt.MCP.Timeout
		}
		// A handler with no timeout shown, or a body this kit does not know (it may run
		// anywhere): the default.
		if timeout <= 0 {
			return 0, false
		}
		return timeout + HandlerDeadlineMargin, true
	}
	return 0, false
}

// Client calls every RPC of the a2a-commands sidecar. It is safe for concurrent use; the
// connection is made lazily and comes back by itself after the sidecar restarts.
type Client struct {
	conn       *grpc.ClientConn
	stub       pb.CommandServiceClient
	timeout    time.Duration
	adminToken func() string
	// registry is the registry last seen (ListSpecs, WatchSpecs), for Execute's deadlines.
	registry atomic.Pointer[Registry]
	// Target is the host:port dialled.
	Target string
}

type clientConfig struct {
	tls         *tls.Config
	timeout     time.Duration
	adminToken  func() string
	dialOptions []grpc.DialOption
}

// ClientOption configures [NewClient].
type ClientOption func(*clientConfig)

// WithTLS connects over TLS with config (nil: the system's roots). An https:// address
// implies it.
func WithTLS(config *tls.Config) ClientOption {
	return func(c *clientConfig) {
		if config == nil {
			config = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c.tls = config
	}
}

// WithTimeout bounds each unary call whose context has no deadline (default
// [DefaultTimeout]; 0: no bound).
func WithTimeout(timeout time.Duration) ClientOption {
	return func(c *clientConfig) { c.timeout = timeout }
}

// WithAdminToken sends authorization: Bearer <token> with Register and Unregister (the
// sidecar's --admin-token-file). token is asked on every call, so a rotated secret takes
// effect at once.
func WithAdminToken(token func() string) ClientOption {
	return func(c *clientConfig) { c.adminToken = token }
}

// WithDialOptions adds gRPC dial options after the kit's own.
func WithDialOptions(options ...grpc.DialOption) ClientOption {
	return func(c *clientConfig) { c.dialOptions = append(c.dialOptions, options...) }
}

// NewClient makes a client of the sidecar at address: http://host:port, https://host:port
// or host:port; empty: $A2A_COMMANDS_ADDR, else http://127.0.0.1:50051. It fails only on
// a malformed address: nothing is dialled until the first call.
func NewClient(address string, options ...ClientOption) (*Client, error) {
	var parsed Address
	var err error
	if address == "" {
		parsed, err = AddressFromEnv()
	} else {
		parsed, err = ParseAddress(address)
	}
	if err != nil {
		return nil, err
	}
	config := clientConfig{timeout: DefaultTimeout}
	if parsed.TLS {
		WithTLS(nil)(&config)
	}
	for _, option := range options {
		option(&config)
	}
	transport := insecure.NewCredentials()
	if config.tls != nil {
		transport = credentials.NewTLS(config.tls)
	}
	// A sidecar on loopback comes back within seconds; gRPC's default backoff (up to
	// 120 s between attempts) would keep commands failing long after it has.
	reconnect := backoff.Config{BaseDelay: 200 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(transport),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnect, MinConnectTimeout: 5 * time.Second}),
		// A sidecar that stops answering (a frozen node) is noticed by a ping left
		// unanswered, and the connection is redialled rather than waited on.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second}),
		// The gateway's span goes with every call, so the sidecar's spans join its trace.
		grpc.WithChainUnaryInterceptor(traceUnary),
		grpc.WithChainStreamInterceptor(traceStream),
	}, config.dialOptions...)
	conn, err := grpc.NewClient(parsed.Target, dial...)
	if err != nil {
		return nil, fmt.Errorf("a2a-commands: %s: %w", parsed.Target, err)
	}
	return &Client{conn: conn, stub: pb.NewCommandServiceClient(conn), timeout: config.timeout, adminToken: config.adminToken, Target: parsed.Target}, nil
}

// WaitReady waits until the connection to the sidecar is up (at start, or after a
// restart), or ctx ends. Calls do not wait by themselves: while the sidecar is away they
// fail at once, which is what lets a gateway answer with the fallback reply.
func (c *Client) WaitReady(ctx context.Context) error {
	c.conn.Connect()
	for {
		state := c.conn.GetState()
		if state == connectivity.Ready {
			return nil
		}
		if !c.conn.WaitForStateChange(ctx, state) {
			return callError(status.FromContextError(ctx.Err()).Err())
		}
	}
}

// Close closes the connection; calls in flight fail.
func (c *Client) Close() error { return c.conn.Close() }

// unary bounds ctx by the client's timeout when it has no deadline of its own.
func (c *Client) unary(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

func (c *Client) admin(ctx context.Context) context.Context {
	if c.adminToken == nil {
		return ctx
	}
	if token := c.adminToken(); token != "" {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	return ctx
}

type registerConfig struct{ request *pb.RegisterRequest }

// RegisterOption refines a Register.
type RegisterOption func(*registerConfig)

// Override replaces a command of the same name, keeping its place in the order.
func Override() RegisterOption {
	return func(r *registerConfig) { r.request.Override = true }
}

// WithHandler runs the command's body at handler (none: a built-in's own body, else "no
// handler").
func WithHandler(handler Handler) RegisterOption {
	return func(r *registerConfig) { r.request.Handler = handler.proto() }
}

// AllowedRoles lets only these roles run the command (none: every role); others are
// refused before any body runs.
func AllowedRoles(roles ...Role) RegisterOption {
	return func(r *registerConfig) {
		for _, role := range roles {
			r.request.AllowedRoles = append(r.request.AllowedRoles, pb.ParticipantRole(role))
		}
	}
}

// WithPrompt makes it a prompt command: Execute answers prompt's expansion, which the
// Executor sends to the agent in place of the message's text. A command has a handler
// or a prompt, never both.
func WithPrompt(prompt Prompt) RegisterOption {
	return func(r *registerConfig) { r.request.Prompt = prompt.proto() }
}

// Hidden keeps the command off the card and out of completion; it still runs.
func Hidden() RegisterOption {
	return func(r *registerConfig) { r.request.Hidden = true }
}

// ReplaceAccess makes an override's roles and hidden exactly what this request says
// (without it an override only narrows access).
func ReplaceAccess() RegisterOption {
	return func(r *registerConfig) { r.request.ReplaceAccess = true }
}

// Register adds command at the end of the order (or replaces it in place with
// [Override]).
func (c *Client) Register(ctx context.Context, command Command, options ...RegisterOption) (Registered, error) {
	config := registerConfig{request: &pb.RegisterRequest{Spec: &pb.CommandSpec{
		Name: command.Name, Description: command.Description, ArgumentHint: command.ArgumentHint,
	}}}
	for _, option := range options {
		option(&config)
	}
	ctx, cancel := c.unary(c.admin(ctx))
	defer cancel()
	response, err := c.stub.Register(ctx, config.request)
	if err != nil {
		return Registered{}, callError(err)
	}
	return Registered{Outcome: RegisterOutcome(response.Outcome), Revision: response.Revision}, nil
}

// Unregister removes the command name; it answers the registry's revision after it.
func (c *Client) Unregister(ctx context.Context, name string) (uint64, error) {
	ctx, cancel := c.unary(c.admin(ctx))
	defer cancel()
	response, err := c.stub.Unregister(ctx, &pb.UnregisterRequest{Name: name})
	if err != nil {
		return 0, callError(err)
	}
	return response.Revision, nil
}

// ListSpecs is the registry as it is now.
func (c *Client) ListSpecs(ctx context.Context) (*Registry, error) {
	ctx, cancel := c.unary(ctx)
	defer cancel()
	response, err := c.stub.ListSpecs(ctx, &pb.ListSpecsRequest{})
	if err != nil {
		return nil, callError(err)
	}
	return c.seen(registryFromProto(response))
}

// ExecuteDeadline is Execute's deadline for the command name, from the registry this
// client last saw (through ListSpecs or WatchSpecs, as the card helper calls them): see
// the function [ExecuteDeadline]. The executor asks it for every command.
func (c *Client) ExecuteDeadline(name string) time.Duration {
	if deadline, ok := knownDeadline(c.registry.Load(), name); ok {
		return deadline
	}
	return c.timeout
}

// seen keeps registry as the one last seen, never going back to an older one (a listing
// can arrive after a newer WatchSpecs state).
func (c *Client) seen(registry *Registry, err error) (*Registry, error) {
	if err != nil || registry == nil {
		return registry, err
	}
	for {
		held := c.registry.Load()
		if held != nil && held.Revision > registry.Revision {
			return registry, err
		}
		if c.registry.CompareAndSwap(held, registry) {
			return registry, err
		}
	}
}

// WatchSpecs yields the registry as it is now, then after every change, until ctx ends
// or the stream fails (the error is yielded last). A slow reader skips to the latest.
func (c *Client) WatchSpecs(ctx context.Context) iter.Seq2[*Registry, error] {
	return func(yield func(*Registry, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := c.stub.WatchSpecs(ctx, &pb.WatchSpecsRequest{})
		if err != nil {
			yield(nil, callError(err))
			return
		}
		for {
			response, err := stream.Recv()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, callError(err))
				return
			}
			registry, err := c.seen(registryFromProto(response))
			if !yield(registry, err) || err != nil {
				return
			}
		}
	}
}

// Classify says whether message is a registered command, which, and with what arguments.
func (c *Client) Classify(ctx context.Context, message *a2a.Message) (Classification, error) {
	ours, err := messageToProto(message)
	if err != nil {
		return Classification{}, err
	}
	ctx, cancel := c.unary(ctx)
	defer cancel()
	response, err := c.stub.Classify(ctx, &pb.ClassifyRequest{Message: ours})
	if err != nil {
		return Classification{}, callError(err)
	}
	answer := Classification{Revision: response.Revision}
	if command := response.GetCommand(); command != nil {
		answer.Command, answer.Arguments = command.Name, command.Arguments
	} else if ordinary := response.GetOrdinary(); ordinary != nil {
		answer.Reason, answer.Name = OrdinaryReason(ordinary.Reason), ordinary.Name
	}
	return answer, nil
}

// Execute runs message on task for sender if it is a command: the reply to emit and what
// it changes, or a prompt command's expansion; neither for an ordinary message, which
// goes to the agent. The reply event carries no event metadata (the lean form kits use).
func (c *Client) Execute(ctx context.Context, message *a2a.Message, task TaskSnapshot, sender Sender, options ...ExecuteOption) (*Executed, error) {
	ours, err := messageToProto(message)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.unary(ctx)
	defer cancel()
	config := executeConfig{}
	for _, option := range options {
		option(&config)
	}
	response, err := c.stub.Execute(ctx, &pb.ExecuteRequest{Message: ours, Task: task.proto(), Sender: sender.proto(), AcceptsPrompt: config.acceptsPrompt})
	if err != nil {
		return nil, callError(err)
	}
	executed := &Executed{Revision: response.Revision}
	if prompt := response.GetPrompt(); prompt != nil {
		executed.Prompt = &PromptExpansion{
			Command: prompt.GetCommand().GetName(), Arguments: prompt.GetCommand().GetArguments(), Text: prompt.Text,
		}
	}
	if outcome := response.GetCommand(); outcome != nil {
		event, err := eventFromProto(outcome.Event)
		if err != nil {
			return nil, err
		}
		executed.Reply = &CommandReply{
			Command: outcome.GetCommand().GetName(), Arguments: outcome.GetCommand().GetArguments(),
			Outcome: Outcome(outcome.Outcome), Reply: outcome.Reply, Event: event,
			Changes: changesFromProto(outcome.Changes), Revision: response.Revision,
		}
	}
	return executed, nil
}

// Complete suggests what a user who typed text may mean: command names by prefix (hidden
// ones, and those sender may not run, left out), the built-ins' values, or what a
// handler suggests. task, if not nil, is the task typed into. limit 0 means 10 (at most
// 100).
func (c *Client) Complete(ctx context.Context, text string, sender Sender, task *TaskSnapshot, limit uint32) (*Completions, error) {
	request := &pb.CompleteRequest{Text: text, Sender: sender.proto(), Limit: limit}
	if task != nil {
		request.Task = task.proto()
	}
	ctx, cancel := c.unary(ctx)
	defer cancel()
	response, err := c.stub.Complete(ctx, request)
	if err != nil {
		return nil, callError(err)
	}
	answer := &Completions{Total: response.Total, HasMore: response.HasMore, Command: response.Command, Revision: response.Revision}
	for _, value := range response.Values {
		answer.Values = append(answer.Values, Completion{Value: value.Value, Text: value.Text, Description: value.Description})
	}
	return answer, nil
}
