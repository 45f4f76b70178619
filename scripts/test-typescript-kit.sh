#!/usr/bin/env bash
# The TypeScript gateway kit (clients/typescript): installs its packages from the
# committed lock file, builds it (code generated from proto/ by buf), and runs its tests
# with node's test runner against the real binary: A2A_COMMANDS_BIN, else
# target/debug/a2a-commands. Needs Node 20 or newer and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
export A2A_COMMANDS_BIN="${A2A_COMMANDS_BIN:-$(pwd)/target/debug/a2a-commands}"
cd clients/typescript
npm ci --no-audit --no-fund
npm run build
npm test
