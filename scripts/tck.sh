#!/usr/bin/env bash
# The A2A conformance suite (the TCK, a2aproject/a2a-tck, its 1.0 line) against an agent
# alone and against the same agent behind the front: what the front changes in it.
#
# The agent is the front's test agent (tests/python/front_agent.py, a2a-sdk 1.3: JSON-RPC
# at /, HTTP+JSON under /rest, gRPC on a port of its own), started by scripts/tck_agent.py,
# in each of two modes (TCK_AGENTS, "echo scenarios"): "echo", the plain echo agent,
# which leaves every task waiting for input; "scenarios", which answers as the TCK's
# scenarios ask (completed tasks, artifacts, a message answer; see tck_agent.py), so that
# the TCK's tests that need them reach the front too. For each, the TCK runs straight to
# the agent, then through `a2a-commands serve --front-upstream` on it, on every binding
# the card names (the front's card names the same ones, at its own address).
#
# Printed at the end, per agent mode and binding: tests passed, failed (xfails, a SHOULD
# missed, included) and skipped, direct and through the front; then each test that fails
# through the front but not direct, with its message, and each that passes direct but is
# skipped through the front. Exit status 1 if any test fails through the front only.
#
#   cargo build --release --bin a2a-commands
#   git clone -b 1.0-dev https://github.com/a2aproject/a2a-tck /tmp/a2a-tck
#   bash scripts/tck.sh /tmp/a2a-tck
#
# The TCK runs from a virtualenv, TCK_VENV (/tmp/a2a-tck-venv), made and filled with the
# checkout's dependencies (pip install -e) when it lacks them. The agent runs on python3
# with tests/python/requirements.txt installed. TCK_SERVER: the binary
# (target/release/a2a-commands); TCK_OUT: a folder to keep each run's results, logs and
# the TCK's own reports in (otherwise they go with the temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD

tck="${1:-}"
[[ -n $tck && -f $tck/tests/compatibility/conftest.py ]] || {
  echo "usage: bash scripts/tck.sh /path/to/a2a-tck (a checkout of its 1.0 line)" >&2; exit 2; }
tck=$(cd "$tck" && pwd)
bin="${TCK_SERVER:-target/release/a2a-commands}"
agents="${TCK_AGENTS:-echo scenarios}"
venv="${TCK_VENV:-/tmp/a2a-tck-venv}"
# A run that hangs (a stream that never ends) is cut here rather than stall the script.
run_timeout="${TCK_RUN_TIMEOUT:-900}"
[[ -x $bin ]] || { echo "tck: $bin is missing (cargo build --release --bin a2a-commands)" >&2; exit 1; }
python3 -c 'import a2a.server, uvicorn' 2>/dev/null ||
  { echo "tck: python3 lacks a2a-sdk (pip install -r tests/python/requirements.txt)" >&2; exit 1; }
# The interpreter itself: a wrapper (pyenv's shim) may not pass a kill on to the agent.
py=$(python3 -c 'import sys; print(sys.executable)')

work=$(mktemp -d)
out="${TCK_OUT:-$work/out}"
mkdir -p "$out"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

if ! "$venv/bin/python" -c 'import pytest_asyncio, pytest_html, httpx, grpc, jsonschema, gherkin' 2>/dev/null; then
  echo "tck: installing the TCK's dependencies into $venv" >&2
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q -e "$tck"
fi

# Waits for a line matching $2 in file $1, written by process $3; prints it.
wait_line() {
  for _ in $(seq 600); do
    grep -m1 -e "$2" "$1" 2>/dev/null && return
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  echo "tck: no line matching '$2' in $1:" >&2; cat "$1" >&2; exit 1
}

# Runs the TCK against the card at $3, recording into $out/$1.$2.*.
run_tck() {
  local started=$SECONDS rc=0
  echo "tck: $1, $2: $3" >&2
  # From the checkout: its pyproject.toml sets pytest's options (asyncio mode) and its
  # folder holds the tck package the tests import.
  (cd "$tck" && PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$here/scripts${PYTHONPATH:+:$PYTHONPATH}" \
    timeout "$run_timeout" "$venv/bin/python" -m pytest tests/compatibility/ -q --tb=short \
    -p no:cacheprovider -p tck_results --tck-results="$out/$1.$2.json" \
    --sut-host="$3" --compatibility-report="$out/$1.$2.compat" >"$out/$1.$2.log" 2>&1) || rc=$?
  # pytest: 0 all passed, 1 some failed; anything else (a timeout, a crash) is the run's.
  if ((rc > 1)); then echo "tck: the $1 $2 run ended with status $rc; its end:" >&2; tail -20 "$out/$1.$2.log" >&2; fi
  echo "tck: $1, $2: $((SECONDS - started)) s" >&2
}

for agent_mode in $agents; do
  case $agent_mode in
    echo) flags=() ;;
    scenarios) flags=(--scenarios) ;;
    *) echo "tck: unknown agent mode $agent_mode (TCK_AGENTS: echo, scenarios)" >&2; exit 2 ;;
  esac
  "$py" scripts/tck_agent.py "${flags[@]}" >"$out/$agent_mode.agent.log" 2>&1 &
  agent_pid=$!
  pids+=("$agent_pid")
  agent=$(wait_line "$out/$agent_mode.agent.log" '^http://' "$agent_pid")

  run_tck "$agent_mode" direct "$agent"

  "$bin" serve --listen 127.0.0.1:0 --health-listen 127.0.0.1:0 --data-dir "$work/data-$agent_mode" \
    --log-format json --front-upstream "$agent" --front-listen 127.0.0.1:0 \
    --front-default-role assignee 2>"$out/$agent_mode.front.serve.log" &
  front_pid=$!
  pids+=("$front_pid")
  serving=$(wait_line "$out/$agent_mode.front.serve.log" '"message":"serving"' "$front_pid")
  front="http://$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["front_addr"])' "$serving")"

  run_tck "$agent_mode" front "$front"

  kill "$front_pid" "$agent_pid"
  wait "$front_pid" "$agent_pid" 2>/dev/null || true
  pids=()
done

echo
status=0
python3 scripts/tck_results.py "$out" || status=$?
[[ -n ${TCK_OUT:-} ]] && echo "tck: results, logs and the TCK's reports in $out" >&2
exit "$status"
