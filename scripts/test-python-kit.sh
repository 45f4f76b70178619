#!/usr/bin/env bash
# The Python gateway kit's tests (clients/python):
# 1. README.md's install line, run as written in a fresh virtual environment: the
#    README gateway's imports (and uvicorn, which it says to run) must resolve there.
# 2. The kit installed from its path with its pinned test packages, then its pytest suite
#    against the real a2a-commands binary (A2A_COMMANDS_BIN, else
#    target/debug/a2a-commands; build it first), the shared vectors (docs/vectors) included.
set -euo pipefail
cd "$(dirname "$0")/.."

install_line=$(grep -m1 -E '^python3 -m pip install "\./clients/python\[server\]"' clients/python/README.md | sed 's/ *#.*//')
[ -n "$install_line" ] || { echo "clients/python/README.md has no install line" >&2; exit 1; }
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
(PATH="$venv/bin:$PATH"; eval "${install_line/python3/python} --quiet --disable-pip-version-check" && python clients/python/tests/readme_install.py)

python3 -m pip install --quiet --disable-pip-version-check \
  -r clients/python/tests/requirements.txt ./clients/python
export A2A_COMMANDS_BIN="${A2A_COMMANDS_BIN:-$(pwd)/target/debug/a2a-commands}"
cd clients/python
python3 -m pytest -q
