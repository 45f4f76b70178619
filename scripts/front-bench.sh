#!/usr/bin/env bash
# The front's cost, side by side in one run (BENCHMARKS.md, "The front"): a plain
# SendMessage (JSON-RPC) straight to an agent and through the front to the same agent,
# and /status answered by the front itself. The agent is tests/python/front_agent.py (a
# plain a2a-sdk 1.3 echo agent); the client is wrk, with keep-alive connections.
# Rounds alternate direct and front, FRONT_BENCH_ROUNDS times (3); each row's median is
# reported, with the ratio to the direct run of the same round.
#
#   cargo build --release --bin a2a-commands
#   bash scripts/front-bench.sh            # needs wrk (apt-get install wrk) and the
#                                          # Python packages of tests/python/requirements.txt
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${FRONT_BENCH_ROUNDS:-3}"
seconds="${FRONT_BENCH_SECONDS:-5}"
connections="${FRONT_BENCH_CONNECTIONS:-8}"
bin="${FRONT_BENCH_SERVER:-target/release/a2a-commands}"
command -v wrk >/dev/null || { echo "front-bench: wrk is missing (apt-get install wrk)" >&2; exit 1; }
[[ -x $bin ]] || { echo "front-bench: $bin is missing (cargo build --release --bin a2a-commands)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# The agent, in a process of its own; it writes its URL when it listens.
python3 - "$work/agent-url" <<'PY' &
import sys, threading
sys.path.insert(0, "tests/python")
from front_agent import Agent
agent = Agent()
with open(sys.argv[1] + ".new", "w") as f:
    f.write(agent.url)
import os
os.rename(sys.argv[1] + ".new", sys.argv[1])
threading.Event().wait()
PY
pids+=($!)
for _ in $(seq 300); do [[ -f $work/agent-url ]] && break; sleep 0.1; done
agent=$(cat "$work/agent-url")

"$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --log-format json \
  --front-upstream "$agent" --front-listen 127.0.0.1:0 --front-default-role assignee \
  --call-log-sample 1000000 2>"$work/serve.log" &
pids+=($!)
for _ in $(seq 300); do grep -q '"serving"' "$work/serve.log" 2>/dev/null && break; sleep 0.1; done
front="http://$(grep -m1 '"serving"' "$work/serve.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["front_addr"])')"

lua() { # $1: the message text
  cat <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":"m-%d-%d","role":"ROLE_USER","parts":[{"text":"$1"}]}}}', n, math.random(1, 1000000000), n)
  return wrk.format(nil, "/", nil, body)
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.1f %.3f %.3f %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.timeout))
end
LUA
}
lua "hello" >"$work/plain.lua"
lua "/status" >"$work/status.lua"

run() { # $1: URL, $2: script -> "rps p50_ms p99_ms errors"
  wrk -t 2 -c "$connections" -d "${seconds}s" -s "$2" "$1" | awk '/^RESULT/ {print $2, $3, $4, $5}'
}

# Warm both paths.
run "$agent" "$work/plain.lua" >/dev/null
run "$front" "$work/plain.lua" >/dev/null

printf "%-5s %-28s %10s %9s %9s %7s %8s\n" round row "req/s" "p50 ms" "p99 ms" errors ratio
for r in $(seq "$rounds"); do
  read -r d_rps d_p50 d_p99 d_err < <(run "$agent" "$work/plain.lua")
  read -r f_rps f_p50 f_p99 f_err < <(run "$front" "$work/plain.lua")
  read -r s_rps s_p50 s_p99 s_err < <(run "$front" "$work/status.lua")
  printf "%-5s %-28s %10s %9s %9s %7s %8s\n" "$r" "SendMessage, direct" "$d_rps" "$d_p50" "$d_p99" "$d_err" "1.000"
  printf "%-5s %-28s %10s %9s %9s %7s %8.3f\n" "$r" "SendMessage, through front" "$f_rps" "$f_p50" "$f_p99" "$f_err" \
    "$(python3 -c "print($f_rps / $d_rps)")"
  printf "%-5s %-28s %10s %9s %9s %7s %8.3f\n" "$r" "/status, answered by front" "$s_rps" "$s_p50" "$s_p99" "$s_err" \
    "$(python3 -c "print($s_rps / $d_rps)")"
  echo "$(python3 -c "print($f_rps / $d_rps)") $(python3 -c "print($f_p50 - $d_p50)")" >>"$work/ratios"
done
sort -n "$work/ratios" | awk '{a[NR]=$0} END {split(a[int((NR+1)/2)], m, " "); printf "median: through the front %.3f of direct, p50 %+.3f ms\n", m[1], m[2]}'
