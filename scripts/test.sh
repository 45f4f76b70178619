#!/usr/bin/env bash
# The whole test suite: the Rust tests (unit, gRPC integration, property), the
# cross-language Python tests against the real binary (the front's among them, in front
# of echo agents on a2a-sdk, @a2a-js/sdk and a2a-go), then the gateway kits' suites
# (clients/python, clients/typescript, clients/go) against the same binary. Installs the
# Python, npm and Go packages those need, so it works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

# The corruption matrix (tests/corruption.rs) damages a store at seeded places; the seed
# is chosen and printed here, so that any run can be replayed with the same variable.
export A2A_COMMANDS_CORRUPTION_SEED="${A2A_COMMANDS_CORRUPTION_SEED:-$(date +%s%N)}"
echo "corruption matrix seed: A2A_COMMANDS_CORRUPTION_SEED=$A2A_COMMANDS_CORRUPTION_SEED"

cargo test --locked --all-targets

export A2A_COMMANDS_BIN="$(pwd)/target/debug/a2a-commands"
python3 -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
# The front's tests stand it in front of plain echo agents on each official SDK: the
# TypeScript one needs its packages (pinned by its lock file), the Go one a build.
npm ci --prefix tests/agents/typescript --silent --no-audit --no-fund
(cd tests/agents/go && go build -o ../../../target/agents/go-echo-agent .)
python3 -m pytest -q tests/python

bash scripts/test-python-kit.sh
bash scripts/test-typescript-kit.sh
bash scripts/test-go-kit.sh
