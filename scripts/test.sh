#!/usr/bin/env bash
# The whole test suite: the Rust tests (unit, gRPC integration, property), then the
# cross-language Python tests against the real binary. Installs the Python packages
# the second part needs, so it works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --locked --all-targets

python3 -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
A2A_COMMANDS_BIN="$(pwd)/target/debug/a2a-commands" python3 -m pytest -q tests/python
