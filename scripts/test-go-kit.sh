#!/usr/bin/env bash
# The Go gateway kit (clients/go): its generated code checked against proto/, `go vet`,
# then `go test -race` against the real binary (A2A_COMMANDS_BIN, else
# target/debug/a2a-commands; build it first): the shared vectors (docs/vectors), a2a-go
# gateways driven by a2a-go's client, and the README's gateway built in an empty module.
set -euo pipefail
cd "$(dirname "$0")/.."
export A2A_COMMANDS_BIN="${A2A_COMMANDS_BIN:-$(pwd)/target/debug/a2a-commands}"
bash scripts/generate-go-kit.sh --check
cd clients/go
go vet ./...
go test -race -count=1 ./...
