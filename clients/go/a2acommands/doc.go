// Package a2acommands gives an a2a-go (github.com/a2aproject/a2a-go/v2) agent slash
// commands, answered by the a2a-commands sidecar (the A2A Commands extension v1).
//
// A gateway wraps its a2asrv.AgentExecutor with [NewExecutor]: a message that may be a
// command goes to the sidecar's Execute, a command's reply is emitted as a status update
// that leaves the task's state as it was, and everything else reaches the wrapped
// executor untouched. [Card] keeps the agent card's extension entry current from
// WatchSpecs, and [CompletionHandler] adds the JSON-RPC method commands/complete to the
// gateway's endpoint. [Client] calls every RPC of the sidecar with plain Go types.
//
// Every rule here is docs/kit-contract.md's, the same in the Python, TypeScript and Java
// kits, and pinned by the shared vectors in docs/vectors, which this package's tests run.
package a2acommands

// ExtensionURI is the Commands extension v1's URI: clients list it in A2A-Extensions,
// and the card entry carries it.
const ExtensionURI = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
