package a2acommands

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// AddressEnv is the environment variable that names the sidecar.
const AddressEnv = "A2A_COMMANDS_ADDR"

// DefaultAddress is the sidecar's address when none is given: its default --listen.
const DefaultAddress = "http://127.0.0.1:50051"

// Address is where the sidecar is: Target (host:port) and whether to use TLS.
type Address struct {
	Target string
	TLS    bool
}

// A URL (http://host:port, https://host:port, one optional trailing slash) or host:port.
// The host's excluded characters are written out, since Go's \s is ASCII only.
var addressPattern = regexp.MustCompile(`^(?:([A-Za-z]+)://)?(\[[0-9A-Fa-f:.]+\]|[^\t-\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}:/?#@\[\]]+):([0-9]+)(/?)$`)

// ParseAddress reads an address in either form (docs/kit-contract.md, section 7); the
// error says what is wrong.
func ParseAddress(value string) (Address, error) {
	match := addressPattern.FindStringSubmatch(value)
	if match == nil {
		return Address{}, fmt.Errorf("%q is not host:port, http://host:port or https://host:port", value)
	}
	scheme := strings.ToLower(match[1])
	if (scheme != "" && scheme != "http" && scheme != "https") || (match[4] != "" && scheme == "") {
		return Address{}, fmt.Errorf("%q is not host:port, http://host:port or https://host:port", value)
	}
	port, err := strconv.Atoi(match[3])
	if err != nil || port < 1 || port > 65535 {
		return Address{}, fmt.Errorf("%q: the port must be 1 to 65535", value)
	}
	return Address{Target: match[2] + ":" + strconv.Itoa(port), TLS: scheme == "https"}, nil
}

// AddressFromEnv reads $A2A_COMMANDS_ADDR, else [DefaultAddress].
func AddressFromEnv() (Address, error) {
	value := os.Getenv(AddressEnv)
	if value == "" {
		value = DefaultAddress
	}
	address, err := ParseAddress(value)
	if err != nil {
		return Address{}, fmt.Errorf("%s: %w", AddressEnv, err)
	}
	return address, nil
}
