#!/usr/bin/env bash
# The Go kit's generated code (clients/go/internal/commandspb) from proto/, with buf (pinned
# in tools/buf) and protoc-gen-go/protoc-gen-go-grpc (pinned here, built into target/).
# With --check, generates into a temporary folder and fails if the committed code differs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
PROTOC_GEN_GO=v1.36.11
PROTOC_GEN_GO_GRPC=v1.6.1

bin="$root/target/go-tools"
if [ ! -x "$bin/protoc-gen-go" ] || ! "$bin/protoc-gen-go" --version | grep -q "$PROTOC_GEN_GO"; then
    GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO"
fi
if [ ! -x "$bin/protoc-gen-go-grpc" ] || ! "$bin/protoc-gen-go-grpc" --version | grep -q "${PROTOC_GEN_GO_GRPC#v}"; then
    GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"
fi
[ -x tools/buf/node_modules/.bin/buf ] || npm ci --prefix tools/buf --silent --no-audit --no-fund
buf="$root/tools/buf/node_modules/.bin/buf"

cd clients/go
if [ "${1:-}" = "--check" ]; then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
    PATH="$bin:$PATH" "$buf" generate -o "$out"
    if ! diff -r "$out/internal/commandspb" internal/commandspb; then
        echo "clients/go/internal/commandspb is not what proto/ generates: run scripts/generate-go-kit.sh and commit" >&2
        exit 1
    fi
else
    rm -rf internal/commandspb
    PATH="$bin:$PATH" "$buf" generate
fi
