#!/usr/bin/env bash
# Runs one test of tests/fleet.rs N times in a row and counts the passes: the loops that
# show a fleet scenario passes every time, outside CI (CI runs each test once).
#
#   scripts/fleet-loop.sh <test name> [runs, default 50]
#
# The test binary is built once, through the machine's build lock ($A2A_BUILD_LOCK,
# default /tmp/a2a-build.lock) and $CARGO_TARGET_DIR (default target/); the runs then
# start it directly, one at a time. CI=1 is set, so a missing etcd fails instead of
# skipping, and a run passes only if the test ran and passed. Each run's output is kept
# in $FLEET_LOOP_OUT (default <target>/fleet-loop/<test name>/<run>.log); a failure's is
# named at the end. Exits non-zero unless every run passed.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/fleet-loop.sh <test name> [runs]}
runs=${2:-50}
target=${CARGO_TARGET_DIR:-target}
lock=${A2A_BUILD_LOCK:-/tmp/a2a-build.lock}
out=${FLEET_LOOP_OUT:-$target/fleet-loop/$name}
mkdir -p "$out"

binary=$(
  CARGO_TARGET_DIR=$target flock "$lock" \
    cargo test --locked --test fleet --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "fleet" and m.get("executable"):
        print(m["executable"])
'
)
if [[ -z "$binary" ]]; then
  echo "fleet-loop: the fleet test binary did not build" >&2
  exit 1
fi

passed=0
failed=()
started=$SECONDS
for ((i = 1; i <= runs; i++)); do
  log="$out/$i.log"
  run_started=$SECONDS
  if CI=1 "$binary" --exact "$name" --test-threads 1 --nocapture >"$log" 2>&1 &&
    grep -q "test result: ok. 1 passed" "$log"; then
    passed=$((passed + 1))
    verdict=ok
  else
    failed+=("$log")
    verdict=FAILED
  fi
  echo "fleet-loop: $name run $i/$runs: $verdict ($((SECONDS - run_started)) s)"
done
echo "fleet-loop: $name: $passed of $runs passed in $((SECONDS - started)) s"
for log in "${failed[@]}"; do
  echo "fleet-loop: failed run's output: $log"
done
[[ $passed -eq $runs ]]
