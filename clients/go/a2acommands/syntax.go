package a2acommands

import (
	"regexp"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// `/`, a name, then the end or a whitespace character. Whitespace is written out: it is
// exactly Python's str.isspace() (the reference's \s), in every kit's language alike.
var commandSyntax = regexp.MustCompile(`^/([a-z][a-z0-9-]*)(?:[\t-\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]|$)`)

// singleText is the text of a message with exactly one part, a text part.
func singleText(message *a2a.Message) (string, bool) {
	if message == nil || len(message.Parts) != 1 || message.Parts[0] == nil {
		return "", false
	}
	text, ok := message.Parts[0].Content.(a2a.Text)
	return string(text), ok
}

// MayBeCommand reports whether message may be a command: one text part, `/` then a
// letter a-z (docs/kit-contract.md, section 1). A message for which it is false can never
// be a command, whatever is registered, so it reaches the agent without a call to the
// sidecar.
func MayBeCommand(message *a2a.Message) bool {
	text, ok := singleText(message)
	return ok && len(text) >= 2 && text[0] == '/' && 'a' <= text[1] && text[1] <= 'z'
}

// CommandName is the name of a message with command syntax (registered or not), and
// whether it has that syntax (section 2): what the fallback reply names.
func CommandName(message *a2a.Message) (string, bool) {
	text, ok := singleText(message)
	if !ok {
		return "", false
	}
	match := commandSyntax.FindStringSubmatch(text)
	if match == nil {
		return "", false
	}
	return match[1], true
}
