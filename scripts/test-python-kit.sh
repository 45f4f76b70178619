#!/usr/bin/env bash
# The Python gateway kit's tests (clients/python): installs the kit from its path with
# its pinned test packages, then runs its pytest suite against the real a2a-commands
# binary (A2A_COMMANDS_BIN, else target/debug/a2a-commands; build it first).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check \
  -r clients/python/tests/requirements.txt ./clients/python
export A2A_COMMANDS_BIN="${A2A_COMMANDS_BIN:-$(pwd)/target/debug/a2a-commands}"
cd clients/python
python3 -m pytest -q
