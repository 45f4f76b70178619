#!/usr/bin/env bash
# Issue 23's gateway benchmark: each kit's README gateway against the same gateway
# without the kit, driven by an outside load generator (wrk) in the same run.
#
# For each kit (Python: clients/python/tools/bench_gateway.py, a2a-sdk + uvicorn;
# TypeScript: clients/typescript/tools/bench-gateway.mjs, @a2a-js/sdk + express; Go:
# clients/go/tools/benchgateway, a2a-go + net/http, built here first), around
# the same echo agent, it starts the release sidecar (target/release/a2a-commands, not
# built here) and, for each row (a plain message `hello`; `/status`), runs ROUNDS rounds.
# A round starts the kit gateway fresh, warms it up, measures it with wrk, stops it, then
# does the same for the gateway without the kit (the order alternates from round to
# round, so a drift of the machine does not favour one side). The body is a JSON-RPC
# `SendMessage` with no taskId, so every request makes a new task, as a first message
# does; wrk's Lua checks every answer and the script fails if any was wrong.
#
# Why fresh gateways every round: both SDKs keep every task in their in-memory store, and
# a2a-sdk also keeps a live ActiveTask (queues, locks, a consumer task) for each task
# parked input-required (the echo agent's state and a command's, by the kit contract)
# unless the handler is given `interrupted_task_timeout`, which the README gateway does
# not. Python's collector walks all of those, so the rate falls as they pile up (about
# 140 -> 90 req/s over 40 s in one process). A fresh process per measurement gives both
# sides the same empty store and the same number of seconds to fill it.
#
# The machine's other work skews a round: before each round it waits while a build runs
# (`rustc` or `cargo`), and redoes a round during which one started. Nothing is pinned.
#
#   apt-get install -y wrk
#   python3 -m pip install "./clients/python[server]"   # the Python gateway's packages
#   (cd clients/typescript && npm ci && npm run build)  # the TypeScript kit's dist/
#   bash scripts/bench-kits.sh          # BENCH_KITS ("python typescript go"), BENCH_ROUNDS (5),
#                                       # BENCH_SECONDS (10), BENCH_WARMUP (3),
#                                       # BENCH_CONNECTIONS (8, one wrk thread)
#
# Prints each round (with the CPU microseconds per request the gateway and the sidecar
# spent, from /proc), then one table per kit: per row the median of the rounds' ratios
# (kit ÷ plain), their range, each side's median req/s, and the target.
set -euo pipefail
cd "$(dirname "$0")/.."
kits=${BENCH_KITS:-python typescript go}
rounds=${BENCH_ROUNDS:-5}
seconds=${BENCH_SECONDS:-10}
warmup=${BENCH_WARMUP:-3}
connections=${BENCH_CONNECTIONS:-8}
sidecar_bin=target/release/a2a-commands

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is missing: apt-get install -y curl" >&2; exit 1; }
[ -x "$sidecar_bin" ] || { echo "$sidecar_bin is missing: cargo build --release --bins" >&2; exit 1; }
for kit in $kits; do
  case $kit in
    python)
      # The kit from the working tree (PYTHONPATH below), its SDK and server installed.
      python3 -c 'import a2a.server, uvicorn, grpc' 2>/dev/null \
        || { echo 'a2a-sdk or uvicorn is missing: python3 -m pip install "./clients/python[server]"' >&2; exit 1; } ;;
    typescript)
      # dist/ must be built from the current src/, or the figures are an older kit's.
      if [ ! -f clients/typescript/dist/index.js ] \
        || [ -n "$(find clients/typescript/src -newer clients/typescript/dist/index.js -name '*.ts' | head -1)" ]; then
        echo "clients/typescript/dist is missing or older than src: (cd clients/typescript && npm ci && npm run build)" >&2
        exit 1
      fi ;;
    go) command -v go >/dev/null || { echo "go is missing (Go 1.25 or newer)" >&2; exit 1; } ;;
    *) echo "unknown kit $kit (python, typescript, go)" >&2; exit 1 ;;
  esac
done

dir=$(mktemp -d)
case " $kits " in
  *" go "*) (cd clients/go && go build -o "$dir/go-gateway" ./tools/benchgateway) ;;
esac
# The processes this script has running (at most one of each); each is cleared when it
# is stopped, so the trap never signals a process id that may since have been reused.
gateway_pid="" sidecar="" watcher=""
stop() { # variable name: ends that process and clears it
  local pid=${!1}
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  printf -v "$1" ''
}
cleanup() {
  stop watcher; stop gateway_pid; stop sidecar
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A build: rustc running, or a cargo process whose tree (cargo, test binaries) is using
# CPU. A cargo left idle (a test run waiting on something for minutes) does not count:
# it takes no CPU, and waiting on it would stall the benchmark for nothing.
cargo_ticks() { # CPU ticks (user + system) used so far by every cargo process and its children
  local pid t=0
  for pid in $(pgrep cargo) $(for c in $(pgrep cargo); do pgrep -P "$c"; done); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
building() {
  pgrep -x rustc >/dev/null && return 0
  pgrep cargo >/dev/null || return 1
  local before
  before=$(cargo_ticks); sleep 0.5
  [ $(($(cargo_ticks) - before)) -gt 5 ] # more than a tenth of a core over the half second
}
wait_quiet() {
  local said=""
  while building; do
    [ -n "$said" ] || { echo "  (a build is running; waiting)" >&2; said=1; }
    sleep 2
  done
}

# The request of each row and what each side's answer must hold: without the kit,
# `/status` is a plain message for the echo agent too.
text_of() { case $1 in plain) echo hello ;; status) echo /status ;; esac; }
expect_of() { # row side
  case $1/$2 in
    plain/*) echo '"echo: hello"' ;;
    status/kit) echo '"metadata":{"command":"status"}' ;;
    status/plain) echo '"echo: /status"' ;;
  esac
}
target_of() { case $1 in plain) echo 0.97 ;; status) echo 0.85 ;; esac; }
label_of() { case $1 in plain) echo "plain message \`hello\`" ;; status) echo '`/status`' ;; esac; }

# wrk's script: the SendMessage body (no taskId: a new task each time), and a check of
# every answer (HTTP 200 and the expected text; JSON-RPC errors come back as 200), summed
# over wrk's threads and printed as `bad <n>`.
for row in plain status; do
  cat > "$dir/$row.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"bench-1","role":"ROLE_USER","parts":[{"text":"$(text_of $row)"}]}}}'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) expect = args[1]; bad = 0 end
function response(status, headers, body)
  if status ~= 200 or not body:find(expect, 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local n = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  for _, t in ipairs(threads) do n = n + t:get("bad") end
  io.write(string.format("bad %d\n", n))
end
EOF
done

# Starts one gateway (kit: python|typescript|go, side: kit|plain); sets `port` once its
# agent card is served (with the commands extension, for the kit side). Runs in this
# shell, not in $(...), so that the trap knows its process.
start_gateway() {
  local kit=$1 side=$2 out="$dir/gateway.out" i
  port=""
  : > "$out"
  case $kit in
    python) A2A_COMMANDS_ADDR=$addr PYTHONPATH=clients/python/src \
              python3 clients/python/tools/bench_gateway.py "$side" > "$out" 2> "$dir/gateway.err" & ;;
    typescript) A2A_COMMANDS_ADDR=$addr node clients/typescript/tools/bench-gateway.mjs "$side" > "$out" 2> "$dir/gateway.err" & ;;
    go) A2A_COMMANDS_ADDR=$addr "$dir/go-gateway" "$side" > "$out" 2> "$dir/gateway.err" & ;;
  esac
  gateway_pid=$!
  for i in $(seq 1 600); do # readiness is the card; the count only bounds the wait (60 s)
    [ -n "$port" ] || port=$(awk '/^listening/ {print $2}' "$out")
    if [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/.well-known/agent-card.json" > "$dir/card.json" \
      && { [ "$side" = plain ] || grep -q 'commands/v1' "$dir/card.json"; }; then
      return 0
    fi
    kill -0 "$gateway_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "the $kit $side gateway did not start:" >&2
  cat "$dir/gateway.err" >&2
  return 1
}

# req/s of one wrk run; fails on any wrong answer.
drive() { # port row side secs
  local out="$dir/wrk.out"
  wrk -t1 -c"$connections" -d"$4s" -s "$dir/$2.lua" "http://127.0.0.1:$1/" -- "$(expect_of "$2" "$3")" > "$out"
  if ! grep -q '^bad 0$' "$out" || grep -q 'Non-2xx' "$out"; then
    echo "wrong answers from the $3 gateway ($2):" >&2
    cat "$out" >&2
    return 1
  fi
  awk '/^Requests\/sec/ {print $2}' "$out"
}

ticks() { # CPU ticks (user + system) a process has used so far
  awk '{print $14 + $15}' "/proc/$1/stat"
}

# kit row side: a fresh gateway, warmed up, then measured; sets `rate`, and `cpu`: the
# CPU microseconds per request the gateway and the sidecar each spent while measured
# (the sidecar's is 0 for the plain gateway, which never calls it).
measure() {
  start_gateway "$1" "$3"
  drive "$port" "$2" "$3" "$warmup" >/dev/null
  local g0 s0 g1 s1
  g0=$(ticks "$gateway_pid"); s0=$(ticks "$sidecar")
  rate=$(drive "$port" "$2" "$3" "$seconds")
  g1=$(ticks "$gateway_pid"); s1=$(ticks "$sidecar")
  cpu=$(awk -v g=$((g1 - g0)) -v s=$((s1 - s0)) -v r="$rate" -v t="$seconds" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {n = r * t; printf "gateway %.0f µs, sidecar %.0f µs", g / hz * 1e6 / n, s / hz * 1e6 / n}')
  stop gateway_pid
}

. scripts/serving.sh
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for kit in $kits; do
  # The sidecar: release build, fresh data directory, its own free port.
  mkdir -p "$dir/$kit"
  "$sidecar_bin" serve --listen 127.0.0.1:0 --health-listen off --data-dir "$dir/$kit/data" \
    --log-format json 2> "$dir/$kit/sidecar.log" &
  sidecar=$!
  addr=$(serving_addr "$dir/$kit/sidecar.log" "$sidecar" 150)
  echo "== $kit kit (sidecar $addr, $rounds rounds of ${seconds} s per side, ${warmup} s warm-up, wrk 1 thread, $connections connections)" >&2
  : > "$dir/$kit/rows"
  for row in plain status; do
    r=1
    while [ "$r" -le "$rounds" ]; do
      wait_quiet
      # Watches for a build starting during the round; the round is then redone.
      rm -f "$dir/dirty"
      ( while :; do if building; then touch "$dir/dirty"; fi; sleep 0.5; done ) &
      watcher=$!
      if [ $((r % 2)) -eq 1 ]; then
        measure "$kit" "$row" kit; kit_rate=$rate; kit_cpu=$cpu; measure "$kit" "$row" plain; plain_rate=$rate; plain_cpu=$cpu
      else
        measure "$kit" "$row" plain; plain_rate=$rate; plain_cpu=$cpu; measure "$kit" "$row" kit; kit_rate=$rate; kit_cpu=$cpu
      fi
      stop watcher
      if [ -e "$dir/dirty" ]; then
        echo "  $row round $r: a build ran during it; redoing it" >&2
        continue
      fi
      ratio=$(awk -v k="$kit_rate" -v p="$plain_rate" 'BEGIN {printf "%.3f", k / p}')
      echo "  $row round $r: kit $kit_rate req/s, plain $plain_rate req/s, ratio $ratio (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      echo "    CPU per request: kit: $kit_cpu; plain: ${plain_cpu%%,*}" >&2
      echo "$row $kit_rate $plain_rate $ratio" >> "$dir/$kit/rows"
      r=$((r + 1))
    done
  done
  stop sidecar

  echo
  echo "$kit kit, $rounds rounds of ${seconds} s per side:"
  echo
  echo "| row | plain gateway req/s (median) | with the kit req/s (median) | ratio, median | ratio, range | target | verdict |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
  for row in plain status; do
    plain_med=$(awk -v r=$row '$1 == r {print $3}' "$dir/$kit/rows" | median)
    kit_med=$(awk -v r=$row '$1 == r {print $2}' "$dir/$kit/rows" | median)
    ratio_med=$(awk -v r=$row '$1 == r {print $4}' "$dir/$kit/rows" | median)
    low=$(awk -v r=$row '$1 == r {print $4}' "$dir/$kit/rows" | sort -g | head -1)
    high=$(awk -v r=$row '$1 == r {print $4}' "$dir/$kit/rows" | sort -g | tail -1)
    target=$(target_of $row)
    verdict=$(awk -v m="$ratio_med" -v t="$target" 'BEGIN {print (m + 0 >= t + 0) ? "met" : "not met"}')
    printf '| %s | %.1f | %.1f | %.2f | %.2f–%.2f | ≥ %s | %s |\n' \
      "$(label_of $row)" "$plain_med" "$kit_med" "$ratio_med" "$low" "$high" "$target" "$verdict"
  done
done
